"""What a tick writes about its work, as pure functions: plan edits, status entries, commit
messages and the alert, from the plan and the outcome. No clock, disk or git here: the
caller passes the time in and writes the result (``ledger.py``, ``outcomes.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import NamedTuple

from memento_gh.engine.records import Attempt, Claim
from memento_gh.formats import runner_output, status_log
from memento_gh.plan import budgets, editor, spend
from memento_gh.plan.model import BLOCKED, DONE, PENDING, RUNNING, Plan, Task
from memento_gh.plan.values import format_time

SUCCESS = "success"
FAILED = "failed"
BLOCKED_OUTCOME = "blocked"
#: The agent's provider refused more work: no retry counted, the task waits for the next tick.
DEFERRED = "deferred"
#: Why a task a dead tick was running counts as a failed attempt.
DIED = "the previous tick died while running this task"


class Failure(NamedTuple):
    """How a failed attempt leaves its task: a retry used, and blocked when none is left."""

    retries: int
    max_retries: int
    #: Why the task's own spend blocks it (``budget_per_task``), whatever retries are left.
    over_budget: str | None = None

    @property
    def blocked(self) -> bool:
        return self.retries >= self.max_retries or self.over_budget is not None

    @property
    def outcome(self) -> str:
        return BLOCKED_OUTCOME if self.blocked else FAILED


def failure_of(
    plan: Plan,
    task: Task,
    cost: Mapping[str, object] | None = None,
    where: str = budgets.PLAN,
) -> Failure:
    """The failure of ``task`` as the plan stands (its retries and spend as written there
    now), after a run that cost ``cost``."""
    current = plan.task(task.id) or task
    spent = current.spend + spend.of_cost(cost)
    over = budgets.task_over_budget(plan, current, spent, where)
    return Failure(current.retries + 1, plan.settings.max_retries, over)


def claim_edits(
    plan: Plan, task_id: str, claimed: str, tick: int | None = None
) -> list[editor.Edit]:
    """Mark the task ``[~]`` with ``claimed`` (when and by whom). ``tick`` is the number a
    claim on a shared branch writes into the Meta, so that the next claim takes the next."""
    edits = [
        editor.set_status(plan, task_id, RUNNING),
        editor.set_field(plan, task_id, "claimed", claimed),
    ]
    if tick is not None and plan.settings.total_ticks < tick:
        edits.append(editor.set_meta(plan, "total_ticks", str(tick)))
    return edits


def pause_edit(plan: Plan) -> editor.Edit:
    return editor.set_meta(plan, "tick_mode", "paused")


def success_edits(plan: Plan, task_id: str, tick: int) -> list[editor.Edit]:
    """``[x]``, the claim gone, the counters up to date."""
    edits = [editor.set_status(plan, task_id, DONE), *_unclaim(plan, task_id)]
    done = sum(1 for task in plan.tasks if task.marker == DONE or task.id == task_id)
    return edits + counter_edits(plan, tick, completed=done, failed_ticks=0) + _deferrals(plan, 0)


def failure_edits(
    plan: Plan, task_id: str, failure: Failure, tick: int, *, first_of_tick: bool
) -> list[editor.Edit]:
    """``[ ]`` with one retry more, or ``[!]`` when none is left; the claim gone. The
    circuit breaker counts failed ticks, so only a tick's first task moves that count (a
    later one finds it raised already, or reset by a success)."""
    edits = [
        editor.set_status(plan, task_id, BLOCKED if failure.blocked else PENDING),
        editor.set_field(plan, task_id, "retries", str(failure.retries)),
        *_unclaim(plan, task_id),
    ]
    failed_ticks = plan.settings.consecutive_failed_ticks + (1 if first_of_tick else 0)
    return edits + counter_edits(plan, tick, failed_ticks=failed_ticks) + _deferrals(plan, 0)


def spend_edits(
    plan: Plan,
    task_id: str,
    cost: Mapping[str, object] | None,
    ended: datetime,
    *,
    first_of_tick: bool,
) -> list[editor.Edit]:
    """The ledger after one agent run: the run's spend added to the task's ``spend``, to
    the Meta's ``spend_total`` and to ``spend_day`` (a new UTC day starts at zero), whose
    ticks count the tick's first task. Added to the plan as it stands, so a result made
    again on another worker's tip counts once."""
    run = spend.of_cost(cost)
    settings = plan.settings
    today = ended.astimezone(timezone.utc).date()
    day = settings.spend_day.on(today)
    day = day._replace(spend=day.spend + run, ticks=day.ticks + (1 if first_of_tick else 0))
    edits = [editor.set_meta(plan, "spend_day", day.render())]
    if run.empty:
        return edits
    task = plan.task(task_id)
    held = task.spend if task is not None else spend.Spend()
    return [
        *edits,
        editor.set_meta(plan, "spend_total", (settings.spend_total + run).render()),
        editor.set_field(plan, task_id, "spend", (held + run).render()),
    ]


def deferral_edits(plan: Plan, task_id: str, tick: int) -> list[editor.Edit]:
    """``[ ]`` again, the claim gone, the tick counted; no retry and no failed tick: the
    provider's limit is not the task's doing. The deferrals in a row are counted, for the
    circuit breaker: an agent that says a limit every time (or a provider that never takes
    work again) would otherwise defer its task forever, and no person would hear of it."""
    edits = [editor.set_status(plan, task_id, PENDING), *_unclaim(plan, task_id)]
    in_a_row = plan.settings.consecutive_deferrals + 1
    return edits + counter_edits(plan, tick) + _deferrals(plan, in_a_row)


def _deferrals(plan: Plan, count: int) -> list[editor.Edit]:
    """``consecutive_deferrals`` set to ``count``: a plan that never deferred keeps no
    such line."""
    if count == plan.settings.consecutive_deferrals:
        return []
    return [editor.set_meta(plan, "consecutive_deferrals", str(count))]


def counter_edits(
    plan: Plan, tick: int, *, completed: int | None = None, failed_ticks: int | None = None
) -> list[editor.Edit]:
    # Another worker's claim may have numbered a later tick meanwhile: never go back.
    values = {
        "total_tasks": str(len(plan.tasks)),
        "total_ticks": str(max(tick, plan.settings.total_ticks)),
    }
    if completed is not None:
        values["completed_tasks"] = str(completed)
    if failed_ticks is not None:
        values["consecutive_failed_ticks"] = str(failed_ticks)
    return [editor.set_meta(plan, key, value) for key, value in values.items()]


def stale_claims(plan: Plan, now: datetime) -> list[Task]:
    """Tasks claimed ``[~]`` longer ago than ``stale_lock_timeout`` (or with no claim line):
    their worker died, or lost the lock without a trace."""
    timeout = plan.settings.stale_lock_timeout
    return [
        task
        for task in plan.tasks
        if task.marker == RUNNING
        and (task.claimed is None or (now - task.claimed.at).total_seconds() > timeout)
    ]


def reset_edits(plan: Plan, stale: list[Task]) -> list[editor.Edit]:
    """Stale claims back to ``[ ]``."""
    edits: list[editor.Edit] = []
    for task in stale:
        edits += [editor.set_status(plan, task.id, PENDING), *_unclaim(plan, task.id)]
    return edits


def _unclaim(plan: Plan, task_id: str) -> list[editor.Edit]:
    removed = editor.remove_field(plan, task_id, "claimed")
    return [] if removed is None else [removed]


# -- commits --------------------------------------------------------------------------------


def trailers(task_id: str, tick: int, worker: str | None) -> str:
    """The trailers of a task's commits; a worker sharing a branch names itself."""
    lines = [f"Memento-Task: {task_id}", f"Memento-Tick: {tick}"]
    if worker is not None:
        lines.append(f"Memento-Worker: {worker}")
    return "".join(line + "\n" for line in lines)


def claim_message(claim: Claim, worker: str | None) -> str:
    task = claim.task
    subject = f"memento: claim {task.id} {task.description}".rstrip()
    return f"{subject}\n\n{trailers(task.id, claim.tick, worker)}"


def success_message(claim: Claim, worker: str | None) -> str:
    task = claim.task
    subject = f"memento: complete {task.id} {task.description}".rstrip()
    return f"{subject}\n\n{trailers(task.id, claim.tick, worker)}"


def failure_message(claim: Claim, failure: Failure, worker: str | None) -> str:
    subject = (
        f"memento: {claim.task.id} {failure.outcome} "
        f"(retry {failure.retries}/{failure.max_retries})"
    )
    return f"{subject}\n\n{trailers(claim.task.id, claim.tick, worker)}"


def deferral_message(claim: Claim, worker: str | None) -> str:
    subject = f"memento: {claim.task.id} deferred (provider limit)"
    return f"{subject}\n\n{trailers(claim.task.id, claim.tick, worker)}"


def deferral_text(attempt: Attempt) -> str:
    """What a deferred run says on the tick's output and in the job summary."""
    limit = attempt.limit
    words = limit.words if limit else "the agent's provider refused more work"
    return f"provider limit, no retry counted: {words}"


# -- the status log -------------------------------------------------------------------------


def analysis(attempt: Attempt) -> str | None:
    """Why the attempt failed, in one line (None: it did not)."""
    if attempt.failures:
        return "; ".join(attempt.failures)
    check = attempt.verify
    if check is None:
        return None
    if check.timed_out:
        return f"verify ran past its timeout ({check.duration:.0f}s) and was killed"
    told = runner_output.summary(check.output or check.head, check.exit_code)
    return f"verify exited with code {check.exit_code}: {told or 'no output'}"


def status_entry(
    claim: Claim,
    attempt: Attempt,
    outcome: str,
    *,
    plan: Plan,
    retries: int,
    ended: datetime,
    log: str,
    agent_said: str | None = None,
) -> status_log.TickEntry:
    """The status log's entry for one task run; ``agent_said``: the agent's last words,
    kept for a run that failed for another reason than the agent's own exit."""
    check = attempt.verify
    success = outcome == SUCCESS
    deferred = outcome == DEFERRED
    limit = attempt.limit if deferred else None
    settings = plan.settings
    return status_log.TickEntry(
        time=attempt.started,
        tick=claim.tick,
        continuation=(claim.position + 1, settings.max_tasks_per_tick) if claim.position else None,
        task=claim.task.title,
        outcome=outcome,
        retry=retries,
        max_retries=settings.max_retries,
        verify_head=check.head if check else "",
        exit_code=check.exit_code if check else None,
        verify_timed_out=check.timed_out if check else False,
        duration=(ended - attempt.started).total_seconds(),
        error_analysis=None if success or deferred else analysis(attempt),
        files=tuple((c.path, c.added, c.removed) for c in attempt.changes) if success else None,
        diff_size=sum(c.added + c.removed for c in attempt.changes),
        commit=None,
        outputs=None,
        violations=attempt.violations,
        agent_failure=attempt.agent_failure,
        agent_said=None if success or deferred or attempt.agent_failure else agent_said,
        tick_died=attempt.tick_died,
        conflict=attempt.conflict,
        provider_limit=limit.words if limit else None,
        try_again=limit.when if limit else None,
        cost=attempt.agent.cost if attempt.agent else None,
        log=log,
        escalation=outcome == BLOCKED_OUTCOME,
    )


def breaker_tripped(status_text: str) -> bool:
    """The log's last event is the circuit breaker's."""
    return status_log.mentions_breaker(status_log.last_event(status_text) or "")


def alert_text(plan: Plan, status_text: str, now: datetime) -> str | None:
    """``.memento_alert`` while something needs a person (blocked tasks, a tripped breaker);
    None when nothing does. The breaker holds only while the plan it paused stays paused:
    ``memento resume`` is the person's answer to it."""
    blocked = sum(1 for task in plan.tasks if task.marker == BLOCKED)
    tripped = plan.settings.tick_mode == "paused" and breaker_tripped(status_text)
    if not blocked and not tripped:
        return None
    return (
        f"timestamp: {format_time(now)}\n"
        f"blocked_tasks: {blocked}\n"
        f"circuit_breaker: {'TRIGGERED' if tripped else 'OK'}\n"
        f"message: Pipeline needs attention. {blocked} task(s) blocked.\n"
    )


def state_alerts(plan: Plan, status_text: str) -> tuple[str, ...]:
    """What STATE.md lists as blocking beyond the plan: the breaker's line while paused."""
    if plan.settings.tick_mode != "paused":
        return ()
    last = status_log.last_event(status_text) or ""
    return (last,) if status_log.mentions_breaker(last) else ()
