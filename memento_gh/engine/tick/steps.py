"""One tick: the step order.

The tick takes the repository lock, recovers from a tick that died, reads and validates the
plan, takes a task (picks and claims it), gives the agent only that task, checks the
agent's change against the guards, runs ``verify``, then commits the change with the
bookkeeping or rolls it back and commits the bookkeeping alone, and publishes the result.
The agent is a subprocess that only edits files; everything else happens here, in this
order, whether the tick is alone in its clone or one of a pool of workers sharing a branch
(``branch.py``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from contextlib import closing
from datetime import datetime, timezone
from typing import NamedTuple, Protocol

from memento_gh import files
from memento_gh.engine.agents import check as agent_check
from memento_gh.engine.books import bookkeeping, breaker
from memento_gh.engine.globs import is_ignored
from memento_gh.engine.pool.branch import LocalBranch, PoolBranch, Remote, refuse_dirty_tree
from memento_gh.engine.records import Attempt, Claim, TaskOutcome, TickResult
from memento_gh.engine.tick import attempt, pipeline
from memento_gh.engine.tick.recovery import RunningMarker, recover_dead_tick
from memento_gh.engine.tick.results import defer, fail, succeed
from memento_gh.engine.tick.session import Clock, Session, is_working_file, log_line
from memento_gh.formats import status_log
from memento_gh.gitrun import GitError, NetworkError
from memento_gh.layout import Layout
from memento_gh.lock import Busy, repo_lock
from memento_gh.plan import budgets
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import no_cyclic_gc
from memento_gh.workspace import RollbackReport, TreeStatus, Workspace, start_status


class TickConfig(NamedTuple):
    agent: str = "command"
    agent_cmd: str | None = None
    worker_id: str = ""
    max_tasks: int | None = None
    #: Set when other workers share the branch: claims and results are pushed through it.
    shared: Remote | None = None
    #: The model every task runs on, unless the task or a retry names another.
    model: str | None = None
    #: The user's own arguments, after the preset's.
    agent_args: tuple[str, ...] = ()


def default_worker_id() -> str:
    return f"{os.uname().nodename}-{os.getpid()}"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def run_tick(
    layout: Layout,
    config: TickConfig,
    *,
    clock: Clock = utc_now,
    environ: Mapping[str, str] = os.environ,
    say: Callable[[str], None] = print,
) -> TickResult:
    """Run one tick; a tick already running on this repository makes this one a no-op.
    An agent that cannot run is refused first, before anything is claimed."""
    agent_check.check_agent(config.agent, config.agent_cmd, repo=layout.root, environ=environ)
    try:
        # The cyclic collector stays off: a large plan is hundreds of thousands of small
        # objects, none in a cycle, that each collection would walk again for nothing.
        with repo_lock(layout.lock), no_cyclic_gc():
            return _tick(layout, config, clock, environ, say)
    except Busy:
        message = status_log.tick_skipped("another tick holds the lock on this repository")
        log_line(layout, clock(), message)
        return TickResult("skipped", None, (), message)  # its caller prints it


def _tick(
    layout: Layout,
    config: TickConfig,
    clock: Clock,
    environ: Mapping[str, str],
    say: Callable[[str], None],
) -> TickResult:
    # git looks at the work tree while it is asked where the repository is.
    pending = start_status(layout.root)
    try:
        session = Session(
            layout,
            Workspace(layout.root),
            agent=config.agent,
            agent_cmd=config.agent_cmd,
            model=config.model,
            agent_args=config.agent_args,
            worker_id=config.worker_id or default_worker_id(),
            clock=clock,
            environ=environ,
            say=say,
        )
        marker = RunningMarker(session.scratch / "running.json", session.worker_id, session.run_tag)
        branch: Branch = (
            LocalBranch(session, marker)
            if config.shared is None
            else PoolBranch(session, marker, config.shared)
        )
        if recover_dead_tick(session, marker, branch):
            pending.close()  # the tree changed: look again
            pending = session.workspace.start_status()
        plan = _ready_plan(session, branch, pending.result)
    finally:
        pending.close()
    if plan is None:
        branch.release_carried()
        branch.finish()
        return _skip(session, _mode_reason(session.plan_file.current.settings.tick_mode))
    over = _over_budget(session, plan)
    if over:
        branch.release_carried()
        branch.finish()
        session.log_line(over)  # the mode stays auto: the next UTC day runs again
        return TickResult("over_budget", None, (), over)
    # From here until the tick ends, whatever differs from HEAD is this tick's unfinished
    # work: the marker tells the next tick to roll it back if this one dies.
    marker.write(None, None, branch.marker_fields(None))
    reason = breaker.disk_reason(plan.settings, _free_disk(session))
    if reason:
        pipeline.trip_breaker(session, reason)
        branch.publish(lambda: pipeline.trip_breaker(session, reason))
        branch.release_carried()
        branch.finish()
        return TickResult("ran", None, (), f"circuit breaker: {reason}")
    limit = config.max_tasks or plan.settings.max_tasks_per_tick
    try:
        outcomes, tick = _run_tasks(session, marker, branch, limit)
    except NetworkError:
        raise  # the remote is out of reach, the repository is fine: nothing to pause
    except GitError as error:
        _git_failed(session, branch, error)
        raise
    if outcomes:
        pipeline.after_tasks(session)
        branch.publish(lambda: pipeline.after_tasks(session))
    branch.finish()
    return _result(outcomes, tick)


def _ready_plan(session: Session, branch: Branch, status: Callable[[], TreeStatus]) -> Plan | None:
    """The validated plan to tick on, from a clean tree; None when the mode says not to."""
    branch.begin(lambda: _dirty_paths(session, status()))
    plan = session.plan_file.read_validated(files.read_optional(session.layout.project_map))
    if plan.settings.tick_mode != "auto":
        return None
    snapshot = status()
    refuse_dirty_tree(_dirty_paths(session, snapshot))
    session.ledger.know_tracked(snapshot.untracked)
    return plan


def _run_tasks(
    session: Session, marker: RunningMarker, branch: Branch, limit: int
) -> tuple[list[TaskOutcome], int | None]:
    """Take, run and record tasks while the limit and the claims' time allow, and the
    agent's provider takes more work; the outcomes, and the tick's number (None: no task
    ran)."""
    outcomes: list[TaskOutcome] = []
    tried: set[str] = set()
    tick: int | None = None
    with closing(session):  # the tick log: open from the first agent to the last verify
        while len(outcomes) < limit:
            claim = branch.take(tried, tick, len(outcomes))
            if claim is None:
                break
            tried.add(claim.task.id)
            tick = claim.tick
            outcomes.append(_run_task(session, marker, branch, claim))
            current = session.plan_file.current
            if current.settings.tick_mode != "auto" or _over_budget(session, current):
                break
            if outcomes[-1].outcome == bookkeeping.DEFERRED:
                break  # the provider is limited: the next task would meet the same limit
    return outcomes, tick


def _run_task(session: Session, marker: RunningMarker, branch: Branch, claim: Claim) -> TaskOutcome:
    session.checkpoint("claimed")
    tried = attempt.attempt(session, claim)
    session.checkpoint("attempted")
    record = succeed if tried.passed else defer if tried.deferred else fail
    outcome = branch.publish_result(claim, tried, record(session, claim, tried, branch.worker))
    outcome = outcome._replace(cost=tried.agent.cost if tried.agent else None)
    # Not flushed: lost to a power cut, the marker left names a task that is committed by
    # now, and the next tick's recovery finds nothing of it to undo.
    marker.write(None, claim.tick, branch.marker_fields(None), durable=False)
    pushed = f" ({_pushes(outcome.pushes)})" if outcome.pushes else ""
    session.say(f"  {outcome.outcome}: {outcome.message}{pushed}")
    return outcome


def _over_budget(session: Session, plan: Plan) -> str | None:
    """Why the day's budget lets no task start, or None."""
    today = session.clock().astimezone(timezone.utc).date()
    return budgets.over_budget(plan, today, session.plan_file.shown_as)


def _pushes(count: int) -> str:
    return "1 push" if count == 1 else f"{count} pushes"


def _git_failed(session: Session, branch: Branch, error: GitError) -> None:
    """Git broke in the middle of a task: pause the plan (and try to record why), so that
    no further tick runs on a repository in an unknown state. The running marker stays:
    once git works again, the next tick rolls the half-done task back and counts the
    attempt, as for a tick that died."""
    try:
        pipeline.trip_breaker(session, f"git failed: {error}")
        branch.publish()  # once: the next tick drops it if not pushed
    except (GitError, OSError):
        session.say("could not record the circuit breaker trip; the plan file says paused")


def _dirty_paths(session: Session, snapshot: TreeStatus) -> list[str]:
    """What differs from HEAD besides memento's working files and the untracked files
    ``.memento_cleanignore`` keeps: a tick starts only without any."""
    keep = session.keep

    def counts(path: str) -> bool:
        return not is_working_file(path) and (
            path in snapshot.tracked or not is_ignored(keep, path)
        )

    if not any(counts(path) for path in snapshot.paths):
        return []
    # Something is dirty: name it as the full list of changes does.
    return [
        change.path
        for change in session.workspace.changes()
        if not is_working_file(change.path)
        and not (change.kind == "untracked" and is_ignored(keep, change.path))
    ]


def _free_disk(session: Session) -> int | None:
    try:
        return shutil.disk_usage(session.root).free
    except OSError:
        return None


def _mode_reason(mode: str) -> str:
    return f"mode={mode}; `memento resume` sets tick_mode to auto again"


def _skip(session: Session, reason: str) -> TickResult:
    """Log the skip; the caller prints the result, so the line is said once."""
    message = status_log.tick_skipped(reason)
    session.log_line(message)
    return TickResult("skipped", None, (), message)


def _result(outcomes: list[TaskOutcome], tick: int | None) -> TickResult:
    if not outcomes:
        return TickResult("idle", tick, (), "no task ran")
    summary = "; ".join(outcome.summary for outcome in outcomes)
    return TickResult("ran", tick, tuple(outcomes), summary)


class Branch(Protocol):
    """What the step order asks of a branch (``branch.LocalBranch``, ``branch.PoolBranch``)."""

    worker: str | None

    def begin(self, dirty: Callable[[], list[str]]) -> None: ...
    def marker_fields(self, task_id: str | None) -> Mapping[str, str | None]: ...
    def adopts(self, found: Mapping[str, object]) -> bool: ...
    def release_carried(self) -> None: ...
    def finish(self) -> None: ...
    def take(self, tried: set[str], tick: int | None, index: int) -> Claim | None: ...
    def publish(
        self, redo: Callable[[], object] | None = None, *, due: Callable[[], bool] | None = None
    ) -> bool: ...
    def publish_result(
        self, claim: Claim, attempt: Attempt, outcome: TaskOutcome
    ) -> TaskOutcome: ...
    def recover(self, found: Mapping[str, object], report: RollbackReport) -> None: ...
