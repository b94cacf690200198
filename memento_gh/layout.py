"""Where memento's files live in a repository."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

PLAN_NAME = "MASTER_PLAN.md"
MAP_NAME = "PROJECT_MAP.md"
NOTES_NAME = "HUMAN_NOTES.md"
STATUS_NAME = "TICK_STATUS.md"
STATE_NAME = "STATE.md"
#: The lesson files (formats/memory.py reads them, formats/memory_learning.py writes them),
#: under the plan folder.
MEMORY_FOLDER = "memory"
MEMORY_FILE_NAMES = ("known-issues.md", "decisions.md", "preferences.md")
#: The architect's proposal file (``memento plan``), at the top of the work tree: inside it,
#: where every agent's own file tool may write (claude's and gemini's refuse ``.git/``,
#: codex's sandbox keeps ``.git`` read-only), and in no folder of its own, so that no folder
#: on its path can be swapped for a link. Beside ``.memento.lock`` and ``.memento_alert``;
#: not in ``.memento/``, which holds the user's committed files. Kept out of git by a line
#: memento writes into ``.git/info/exclude``, and removed after each run.
PROPOSAL_NAME = ".memento_proposal.md"


class Layout(NamedTuple):
    """The repository root and the folder (relative to it) that holds the plan files."""

    root: Path
    plan_dir: str = "docs"

    @property
    def docs(self) -> Path:
        return self.root / self.plan_dir

    @property
    def plan(self) -> Path:
        return self.docs / PLAN_NAME

    @property
    def project_map(self) -> Path:
        return self.docs / MAP_NAME

    @property
    def notes(self) -> Path:
        return self.docs / NOTES_NAME

    @property
    def status(self) -> Path:
        return self.docs / STATUS_NAME

    @property
    def state(self) -> Path:
        return self.docs / STATE_NAME

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def worker_prompt(self) -> Path:
        return self.root / ".memento" / "worker_prompt.md"

    @property
    def lock(self) -> Path:
        return self.root / ".memento.lock"

    @property
    def alert(self) -> Path:
        return self.root / ".memento_alert"


def find_root(start: Path, plan_dir: str) -> Path:
    """The folder a command works in when started in ``start``: ``start`` itself when it
    holds a plan or is a repository's top, else the top of the git repository around it (a
    ``.git`` folder or file, looked for upwards as git does), else ``start``. So ``memento
    status`` in ``src/`` reads the plan at the repository's root."""
    try:
        if (start / plan_dir / PLAN_NAME).exists() or (start / ".git").exists():
            return start
    except OSError:  # a name too long for the file system: the command says so
        return start
    top = repository_top(start)
    return start if top is None else top


def repository_top(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``.git``; None outside any."""
    try:
        folder = start.resolve()
    except OSError:
        return None
    return next((each for each in (folder, *folder.parents) if (each / ".git").exists()), None)


def display(path: Path) -> str:
    """A path as messages show it: relative to the current directory when it is inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative
