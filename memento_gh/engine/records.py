"""The values a tick's steps hand each other: a claimed task, an attempt at it, its outcome
and the tick's result."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from memento_gh.changes import FileChange
from memento_gh.engine.agents import AgentResult
from memento_gh.engine.verify import VerifyResult
from memento_gh.plan.model import Task


class Claim(NamedTuple):
    """A task this tick claimed: the task as the claimed plan reads, that plan's text, the
    task's lines in it (for the prompt), the tick's number, the task's place among the
    tick's tasks (0: the first), and the claim's commit on a shared branch."""

    task: Task
    text: str
    block: str
    tick: int
    position: int = 0
    commit: str | None = None


class Attempt(NamedTuple):
    """What happened to a claimed task before the bookkeeping: the guard violations, the
    verify run (None when it did not run), the agent run, and the agent's change."""

    violations: tuple[str, ...]
    verify: VerifyResult | None
    agent: AgentResult | None
    changes: tuple[FileChange, ...]
    started: datetime

    @property
    def passed(self) -> bool:
        return not self.violations and self.verify is not None and self.verify.exit_code == 0


class TaskOutcome(NamedTuple):
    task_id: str
    outcome: str  # "success" | "failed" | "blocked" | "lost" | "unpublished"
    commit: str | None
    message: str


class TickResult(NamedTuple):
    status: str  # "ran" | "idle" | "skipped"
    tick: int | None
    tasks: tuple[TaskOutcome, ...]
    message: str
