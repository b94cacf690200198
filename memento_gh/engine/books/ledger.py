"""The tick's own files and their commits: the status log, the notes, the lessons, STATE.md
and ``.memento_alert``, next to the plan (``plan_file.py``).

Every bookkeeping commit goes through ``commit_with_state``, which first writes STATE.md,
the snapshot to resume from, so that it always matches the commit it is in, and takes the
credentials out of every bookkeeping file and the message: whatever a verify or an agent
printed (a status entry's excerpt, a lesson learned from it) reaches no commit with a key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path

from memento_gh import files
from memento_gh.engine.books import bookkeeping
from memento_gh.engine.books.plan_file import PlanFile
from memento_gh.formats import status_log
from memento_gh.formats.notes import mark_read
from memento_gh.formats.state import render_state
from memento_gh.layout import MEMORY_FOLDER, Layout
from memento_gh.plan.model import Plan
from memento_gh.redact import Redactor
from memento_gh.workspace import Workspace

STATUS_HEADER = "# TICK STATUS LOG\n\n"
#: One tick in this many lets git's automatic maintenance follow its commits: often enough
#: to pack what the ticks leave loose, without a process of its own after every commit.
MAINTENANCE_EVERY = 20


class Ledger:
    def __init__(
        self,
        layout: Layout,
        workspace: Workspace,
        plan_file: PlanFile,
        clock: Callable[[], datetime],
        redactor: Redactor | None = None,
    ) -> None:
        self.layout = layout
        self.redactor = redactor or Redactor()
        self.workspace = workspace
        self.plan_file = plan_file
        self.clock = clock
        self._root = workspace.root.resolve()
        #: The bookkeeping files git tracks already: a commit stages only the others first.
        self._known: set[str] = set()
        #: Whether the status log's writes reach the disk before they replace the file.
        self.durable = True

    # -- paths ------------------------------------------------------------------------------

    def relative(self, path: Path) -> str:
        """``path`` as git names it."""
        return (path.parent.resolve() / path.name).relative_to(self._root).as_posix()

    def bookkeeping_paths(self) -> list[str]:
        """The plan, the status log, the notes, STATE.md and the lessons, those that exist."""
        layout = self.layout
        paths = [layout.plan, layout.status, layout.notes, layout.state]
        if self.memory_folder.is_dir():
            paths += sorted(self.memory_folder.glob("*.md"))
        return [self.relative(path) for path in paths if path.exists()]

    @property
    def memory_folder(self) -> Path:
        return self.layout.docs / MEMORY_FOLDER

    def know_tracked(self, untracked: Iterable[str] = ()) -> None:
        """Every bookkeeping file that exists is tracked, but ``untracked``: what a clean tree
        says at the start, or a branch just reset to the remote's tip."""
        left_out = set(untracked)
        self._known = {path for path in self.bookkeeping_paths() if path not in left_out}

    # -- the status log ---------------------------------------------------------------------

    def status_text(self) -> str:
        path = self.layout.status
        return files.read_text(path) if path.exists() else STATUS_HEADER

    def append_entry(self, entry: status_log.TickEntry) -> None:
        self._append(status_log.render_entry(entry))

    def append_event(self, line: str) -> None:
        self._append(status_log.render_event(self.clock(), line))

    def _append(self, block: str) -> None:
        text = status_log.append(self.status_text(), block)
        files.write_atomic(self.layout.status, text, durable=self.durable)

    # -- notes, the alert, STATE.md -----------------------------------------------------------

    def mark_notes_read(self, task_id: str) -> None:
        """The notes for ``task_id`` were given to a worker that succeeded: ``[NOTE:READ]``."""
        path = self.layout.notes
        if not path.exists():
            return
        text = files.read_text(path)
        marked = mark_read(text, task_id)
        if marked != text:
            files.write_atomic(path, marked)

    def write_alert(self) -> None:
        """``.memento_alert`` while a person is needed, removed when none is."""
        write_alert(self.layout, self.plan_file.current, self.status_text(), self.clock())

    def write_state(self, last_action: str) -> None:
        plan = self.plan_file.current
        text = render_state(
            plan,
            now=self.clock(),
            last_action=last_action,
            plan_dir=self.layout.plan_dir,
            alerts=bookkeeping.state_alerts(plan, self.status_text()),
        )
        # Written whole from the plan with every commit: a copy lost to a power cut is
        # written again by the next one.
        files.write_atomic(self.layout.state, text, durable=False)

    # -- commits ----------------------------------------------------------------------------

    def commit_with_state(
        self,
        message: str,
        work: Sequence[str] = (),
        added: Sequence[str] = (),
        *,
        tick: int | None = None,
    ) -> str:
        """Write STATE.md for ``message``'s subject, then commit every bookkeeping file with
        the paths of the agent's work (``work``; ``added``: those git does not know yet).
        ``tick`` is the number the commit belongs to (default: the next tick's)."""
        message = self.redactor.redact(message)
        self.write_state(message.split("\n", 1)[0])
        bookkeeping_paths = self.bookkeeping_paths()
        self._redact_files(bookkeeping_paths)
        paths = [*work, *(path for path in bookkeeping_paths if path not in work)]
        new = [*added, *(path for path in bookkeeping_paths if path not in self._known)]
        number = tick if tick is not None else self.plan_file.current.settings.total_ticks + 1
        sha = self.workspace.commit(
            message, paths, new=new, maintenance=number % MAINTENANCE_EVERY == 0
        )
        self._known.update(bookkeeping_paths)
        return sha

    def _redact_files(self, paths: Sequence[str]) -> None:
        """The credentials out of the bookkeeping files but the plan (a person's, edited
        only surgically), before they are committed."""
        plan = self.relative(self.layout.plan)
        for path in paths:
            if path == plan:
                continue
            text = files.read_text(self._root / path)
            redacted = self.redactor.redact(text)
            if redacted != text:
                files.write_atomic(self._root / path, redacted)


def write_alert(layout: Layout, plan: Plan, status_text: str, now: datetime) -> None:
    """``.memento_alert`` as ``bookkeeping.alert_text`` rules for this plan and status log:
    written while a person is needed, removed when none is (by a tick, or by a control)."""
    text = bookkeeping.alert_text(plan, status_text, now)
    if text is None:
        layout.alert.unlink(missing_ok=True)
    else:
        # Replaced, not written into: whatever stands there (a link, a FIFO) goes.
        files.write_atomic(layout.alert, text, durable=False)
