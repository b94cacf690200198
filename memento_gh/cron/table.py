"""The user's crontab, read and written: through ``crontab -l`` / ``crontab -`` or, when
``--crontab FILE`` or ``$MEMENTO_CRONTAB`` names one, a plain file (for tests, and for people
who keep their crontab in a file)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

from memento_gh import files
from memento_gh.cron import line
from memento_gh.errors import UserError
from memento_gh.layout import Layout, display

CRONTAB_VARIABLE = "MEMENTO_CRONTAB"
NO_CRON = (
    "the `crontab` command is not installed; install cron (e.g. `sudo apt install cron`), "
    "or keep `memento run --every 5m` running in the foreground instead"
)
CRONTAB_TIMEOUT = 30


class Crontab(Protocol):
    @property
    def name(self) -> str: ...

    def read(self) -> str: ...
    def write(self, text: str) -> None: ...


class CrontabFile(NamedTuple):
    path: Path

    @property
    def name(self) -> str:
        return display(self.path)

    def read(self) -> str:
        return files.read_optional(self.path, follow_links=True) or ""

    def write(self, text: str) -> None:
        files.write_atomic(self.path, text)


class UserCrontab(NamedTuple):
    name: str = "your crontab"

    def read(self) -> str:
        done = _crontab("-l")
        if done.returncode != 0:
            if "no crontab" in done.stderr.lower():
                return ""  # a user who never had one: as good as empty
            raise UserError(f"`crontab -l` failed: {_said(done)}; check that cron works for you")
        return done.stdout

    def write(self, text: str) -> None:
        done = _crontab("-", text=text)
        if done.returncode != 0:
            raise UserError(f"`crontab -` refused the new crontab: {_said(done)}")


def _crontab(*args: str, text: str = "") -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["crontab", *args],
            input=text,
            capture_output=True,
            text=True,
            check=False,
            timeout=CRONTAB_TIMEOUT,
        )
    except FileNotFoundError:
        raise UserError(NO_CRON) from None
    except subprocess.TimeoutExpired:
        raise UserError(
            f"`crontab {' '.join(args)}` did not answer in {CRONTAB_TIMEOUT}s"
        ) from None


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join(done.stderr.split()) or f"exit status {done.returncode}"


#: The names cron daemons run under: Debian's cron, cronie's, busybox's and dcron's crond,
#: fcron.
CRON_DAEMONS = frozenset({"cron", "crond", "fcron"})


def cron_daemon_running(proc: Path = Path("/proc")) -> bool | None:
    """Whether a process of this machine runs a cron daemon (by the name in
    ``/proc/<pid>/comm``); None when the process table cannot be read (no /proc, as on
    macOS, where launchd starts cron when a crontab is there)."""
    try:
        entries = [entry for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return None
    for entry in entries:
        try:
            name = (entry / "comm").read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if name in CRON_DAEMONS:
            return True
    return False


def crontab_for(chosen: str | None, environ: Mapping[str, str] = os.environ) -> Crontab:
    """The file ``--crontab`` or ``$MEMENTO_CRONTAB`` names, else the user's crontab."""
    path = chosen or environ.get(CRONTAB_VARIABLE)
    return CrontabFile(Path(path)) if path else UserCrontab()


def repo_marker(layout: Layout) -> str:
    return line.marker(str(layout.root.resolve()))
