"""The values a tick's steps hand each other: how a process, the agent and verify ended,
a claimed task, an attempt at it, its outcome and the tick's result. Pure records."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

from memento_gh.changes import FileChange
from memento_gh.engine.agents.limits import Limit
from memento_gh.plan.model import Task
from memento_gh.plan.spend import Spend, of_costs


class ProcessResult(NamedTuple):
    """How a command ended.

    ``exit_code`` is None when the timeout stopped it; a negative code means the command died
    from that signal (Python's convention), which only happens when something else sent it.
    ``output`` is stdout and stderr interleaved as written: all of it, or when it is longer
    than ``KEEP_HEAD`` + ``keep`` bytes, its first ``KEEP_HEAD`` and last ``keep`` bytes
    around a line saying how much was left out (the log file has everything).
    """

    exit_code: int | None
    timed_out: bool
    duration: float
    output: str


class AgentResult(NamedTuple):
    process: ProcessResult
    cost: dict[str, Any] | None


class VerifyResult(NamedTuple):
    """``exit_code`` None means the timeout stopped it; success is ``exit_code == 0``.

    ``head`` is the first lines of output that say something, for a status entry or an issue.
    """

    exit_code: int | None
    timed_out: bool
    duration: float
    output: str
    head: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


class Claim(NamedTuple):
    """A task this tick claimed: the task as the claimed plan reads, that plan's text, the
    task's lines in it (for the prompt), the tick's number, the task's place among the
    tick's tasks (0: the first), the claim's commit on a shared branch, and the tick log of
    the run when another worker records its result (None: this tick's own)."""

    task: Task
    text: str
    block: str
    tick: int
    position: int = 0
    commit: str | None = None
    log: str | None = None


class Attempt(NamedTuple):
    """What happened to a claimed task before the bookkeeping: the guard violations, the
    verify run (None when it did not run), the agent run, and the agent's change.

    Each other reason a run fails has a field of its own, as in its status entry:
    ``agent_failure``, the agent's exit or timeout with its last words; ``tick_died``, the
    tick running the task died (a later tick records it); ``conflict``, on a shared branch,
    the change no longer applies to files another task changed since the claim.
    ``limit``: the agent stopped at its provider's limit and broke no rule: the attempt is
    deferred, not failed. ``unproven``: the run could not prove the task done, however verify
    ended (``proof.py``).
    ``seen_by_verify`` is the fingerprint of the agent's files when verify started
    (``fingerprint.py``; None: not taken, or nothing to hold the commit to)."""

    violations: tuple[str, ...]
    verify: VerifyResult | None
    agent: AgentResult | None
    changes: tuple[FileChange, ...]
    started: datetime
    agent_failure: str | None = None
    tick_died: str | None = None
    conflict: str | None = None
    seen_by_verify: Mapping[str, bytes] | None = None
    limit: Limit | None = None
    unproven: str | None = None

    @property
    def passed(self) -> bool:
        return not self.failures and self.verify is not None and self.verify.exit_code == 0

    @property
    def deferred(self) -> bool:
        return self.limit is not None and not self.failures

    @property
    def failures(self) -> tuple[str, ...]:
        """Every reason besides verify, one sentence each: how the tick or the agent ended
        first, then the rules the change broke."""
        ended = (self.tick_died, self.agent_failure, self.conflict, self.unproven)
        return tuple(reason for reason in ended if reason) + self.violations


class TaskOutcome(NamedTuple):
    task_id: str
    outcome: str  # "success" | "failed" | "blocked" | "deferred" | "lost" | "unpublished"
    commit: str | None
    message: str
    #: deferred: when the agent said to try again (None: it did not say)
    try_again: str | None = None
    #: the agent's cost report of this run (``cost_reports.parse_cost``), whatever the outcome
    cost: Mapping[str, Any] | None = None
    #: How many pushes the result took on a shared branch (0: no branch shared).
    pushes: int = 0
    #: The end of the verify output of a run that failed it (for the blocked task's issue).
    verify_output: str = ""

    @property
    def summary(self) -> str:
        """The task's part of the tick's line: ``T-101 deferred (try again …)``."""
        when = f" (try again {self.try_again})" if self.try_again else ""
        return f"{self.task_id} {self.outcome}{when}"


class TickResult(NamedTuple):
    status: str  # "ran" | "idle" | "skipped" | "over_budget"
    tick: int | None
    tasks: tuple[TaskOutcome, ...]
    message: str

    @property
    def spend(self) -> Spend:
        """What the agent's runs of this tick cost, as their reports say."""
        return of_costs(task.cost for task in self.tasks)

    @property
    def line(self) -> str:
        """The tick's line for a person: ``tick: ran — T-101 success``. A skip's message
        says it all already (``Tick skipped: mode=paused; …``)."""
        if self.status in ("skipped", "over_budget"):
            return self.message
        return f"tick: {self.status} — {self.message}"
