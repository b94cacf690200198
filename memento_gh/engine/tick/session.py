"""What every step of one tick shares: the repository and its files, the clock, the
environment and the output. Made once when the tick starts; its parts are never replaced."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

from memento_gh import files
from memento_gh.engine import context
from memento_gh.engine.agents import presets
from memento_gh.engine.books.ledger import Ledger
from memento_gh.engine.books.plan_file import PlanFile
from memento_gh.layout import PROPOSAL_NAME, Layout
from memento_gh.plan.values import format_time
from memento_gh.redact import RedactingWriter, Redactor
from memento_gh.workspace import Workspace

Clock = Callable[[], datetime]
#: Files the engine itself writes; never the agent's change, never committed. The architect's
#: proposal file among them: a copy left by an architect run that was killed (or planted by a
#: worker) is nobody's change and never lands; the next architect run clears it first.
WORKING_FILES = ("logs/", ".memento.lock", ".memento_alert", PROPOSAL_NAME)
#: Set in the environment of the agent and verify to a value of this tick's own (their
#: children inherit it), so that the next tick can stop what a killed tick left running.
RUN_TAG = "MEMENTO_RUN"


class Session:
    def __init__(
        self,
        layout: Layout,
        workspace: Workspace,
        *,
        agent: str,
        agent_cmd: str | None,
        worker_id: str,
        model: str | None = None,
        agent_args: tuple[str, ...] = (),
        clock: Clock,
        environ: Mapping[str, str],
        say: Callable[[str], None],
    ) -> None:
        self.layout = layout
        self.workspace = workspace
        self.root = workspace.root
        self.agent = agent
        self.agent_cmd = agent_cmd
        self.model = model
        self.agent_args = agent_args
        self.worker_id = worker_id
        self.clock = clock
        self.environ = environ
        self.say = say
        self.started = clock()
        self.run_tag = os.urandom(16).hex()
        self.scratch = workspace.git_dir / "memento"
        self.log_path = new_log_path(layout.logs, self.started)
        # The folder resolved, not the file: a link in the plan's place is refused when it
        # is read, not followed out of the repository here.
        plan_path = (layout.plan.parent.resolve() / layout.plan.name).relative_to(
            self.root.resolve()
        )
        self._log: BinaryIO | None = None
        self.plan_file = PlanFile(layout.plan, plan_path.as_posix())
        #: Credentials out of what leaves the tick: its commits, and its log (redact_logs).
        self.redactor = Redactor.from_environ(environ)
        self.ledger = Ledger(layout, workspace, self.plan_file, clock, self.redactor)

    @cached_property
    def keep(self) -> list[str]:
        """What a rollback spares: the lines of ``clean_ignore``, and memento's working files."""
        keep_file = self.root / self.plan_file.current.settings.clean_ignore
        patterns = context.read_ignore_file(keep_file) if keep_file.exists() else []
        return [*patterns, *WORKING_FILES]

    @cached_property
    def child_env(self) -> Mapping[str, str]:
        """The environment of the agent and verify: no credentials, and this tick's tag."""
        return {**presets.agent_env(self.environ), RUN_TAG: self.run_tag}

    @property
    def log_name(self) -> str:
        return self.ledger.relative(self.log_path)

    def tick_log(self) -> BinaryIO:
        """This tick's log (``log_path``), opened at its first use and kept open until
        ``close``: the agent may delete or replace the file, but not make memento write
        through a link or wait on a FIFO in its place."""
        if self._log is None:
            log = files.open_append(self.log_path)
            if self.plan_file.current.settings.redact_logs:
                log = io.BufferedWriter(RedactingWriter(log, self.redactor))
            self._log = log
        return self._log

    def keep_prompt(self, task_id: str, text: str) -> None:
        """A copy of the prompt beside the tick log (``tick_<time>.prompt-<task>.md``), for
        the person reading what the agent was told; redacted as the log is."""
        if self.plan_file.current.settings.redact_logs:
            text = self.redactor.redact(text)
        name = f"{self.log_path.stem}.prompt-{task_id}.md"
        files.write_atomic(self.log_path.with_name(name), text, durable=False)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def checkpoint(self, name: str) -> None:
        """Die here when MEMENTO_CRASH_AT names this point: the recovery tests kill a real
        tick (SIGKILL, no clean-up) between two of its steps and check the next one recovers."""
        if self.environ.get("MEMENTO_CRASH_AT") == name:
            os.kill(os.getpid(), signal.SIGKILL)

    def log_line(self, text: str) -> None:
        """Ticks that change nothing leave a line in logs/memento.log, not a commit."""
        log_line(self.layout, self.clock(), text)


def log_line(layout: Layout, moment: datetime, text: str) -> None:
    with files.open_append(layout.logs / "memento.log") as stream:
        stream.write(f"[{format_time(moment)}] {text}\n".encode())


def new_log_path(folder: Path, started: datetime) -> Path:
    """The tick's own log file, which no earlier tick wrote: named by when the tick started,
    to the millisecond, and numbered on when that name is taken (a clock that stands still).
    Ticks hold the repository lock, so none takes the name meanwhile."""
    stamp = f"{started:%Y%m%dT%H%M%S}.{started.microsecond // 1000:03d}Z"
    path = folder / f"tick_{stamp}.log"
    number = 1
    while path.exists():
        number += 1
        path = folder / f"tick_{stamp}-{number}.log"
    return path


def is_working_file(path: str) -> bool:
    return any(path == name or path.startswith(name) for name in WORKING_FILES)
