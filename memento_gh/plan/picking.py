"""Which task runs next: a pure function of the plan.

The next task is the first pending one, in plan order, with retries left, whose phase's
``depends`` phases and whose own ``depends`` tasks are all done or skipped; a phase that is
not ``parallel`` runs one task at a time.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from memento_gh.plan.model import BLOCKED, PENDING, RESOLVED, RUNNING, Phase, Plan, Task

READY = "ready"
PAUSED = "paused"
STOPPED = "stopped"
NO_TASKS = "no_tasks"
ALL_COMPLETE = "all_complete"
PIPELINE_BLOCKED = "pipeline_blocked"
RUNNING_ONLY = "running"
RETRIES_EXHAUSTED = "retries_exhausted"
WAITING = "waiting"

ALL_COMPLETE_LINE = "🎉 ALL TASKS COMPLETE"


class Decision(NamedTuple):
    """The task to run, or None with the reason (a stable code) and a sentence for people."""

    task: Task | None
    reason: str
    message: str


def pick(plan: Plan, skip: Collection[str] = ()) -> Decision:
    """The first runnable task in phase order; ``skip`` names tasks to pass over (already
    tried this tick, or claimed by another worker)."""
    settings = plan.settings
    if settings.tick_mode != "auto":
        reason = PAUSED if settings.tick_mode == "paused" else STOPPED
        return Decision(
            None, reason, f"tick_mode is {settings.tick_mode}; `memento resume` sets it to auto"
        )
    resolved = _resolved_phases(plan)
    gate = review_gate(plan)
    for phase in plan.phases:
        if gate is not None and phase.line > gate.line:
            break  # no later phase starts before the review
        if not _phase_open(phase, resolved) or _phase_busy(plan, phase):
            continue
        for task in plan.tasks_in(phase):
            if task.id not in skip and _runnable(plan, task, settings.max_retries):
                return Decision(task, READY, f"{task.id} is next ({phase.name}: {phase.title})")
    return _why_nothing(plan, resolved, skip)


def review_gate(plan: Plan) -> Phase | None:
    """The first phase that ends in a review gate (``<!-- review: true -->``) and has
    finished: every later phase waits until its pull request is merged or a person
    approves (which makes the comment ``review: approved``)."""
    for phase in plan.phases:
        tasks = plan.tasks_in(phase)
        if phase.review == "true" and tasks and all(task.marker in RESOLVED for task in tasks):
            return phase
    return None


def _resolved_phases(plan: Plan) -> dict[int, bool]:
    return {
        phase.number: all(task.marker in RESOLVED for task in plan.tasks_in(phase))
        for phase in plan.phases
    }


def _phase_open(phase: Phase, resolved: dict[int, bool]) -> bool:
    """All phases it depends on are done or skipped (a missing phase is a validation error)."""
    return all(resolved.get(number, True) for number in phase.depends or ())


def _phase_busy(plan: Plan, phase: Phase) -> bool:
    """A sequential phase runs one task at a time, across all workers."""
    return not phase.parallel and any(task.marker == RUNNING for task in plan.tasks_in(phase))


def _runnable(plan: Plan, task: Task, max_retries: int) -> bool:
    if task.marker != PENDING or task.retries >= max_retries:
        return False
    return all(_done(plan, needed) for needed in task.depends)


def _done(plan: Plan, task_id: str) -> bool:
    needed = plan.task(task_id)
    return needed is not None and needed.marker in RESOLVED


def _why_nothing(plan: Plan, resolved: dict[int, bool], skip: Collection[str]) -> Decision:
    tasks = plan.tasks
    if not tasks:
        return Decision(None, NO_TASKS, "the plan has no tasks yet; add some under a phase")
    if all(task.marker in RESOLVED for task in tasks):
        return Decision(None, ALL_COMPLETE, ALL_COMPLETE_LINE)
    running = [task.id for task in tasks if task.marker == RUNNING]
    if running:
        return Decision(
            None, RUNNING_ONLY, f"{', '.join(running)} running; nothing else can start now"
        )
    skipped_now = [task.id for task in tasks if task.id in skip and task.marker == PENDING]
    if skipped_now:
        return Decision(None, WAITING, f"{', '.join(skipped_now)} already tried this tick")
    blocked = [task for task in tasks if task.marker == BLOCKED]
    if blocked:
        return Decision(None, PIPELINE_BLOCKED, _blocked_message(plan, blocked))
    max_retries = plan.settings.max_retries
    exhausted = [t.id for t in tasks if t.marker == PENDING and t.retries >= max_retries]
    if exhausted:
        return Decision(
            None,
            RETRIES_EXHAUSTED,
            f"{', '.join(exhausted)} used all {max_retries} retries; "
            f"`memento retry {exhausted[0]}` lets it run again",
        )
    gate = review_gate(plan)
    if gate is not None:
        return Decision(None, WAITING, f"waiting for review of {gate.name}")
    return Decision(None, WAITING, _waiting_message(plan, resolved))


def _blocked_message(plan: Plan, blocked: list[Task]) -> str:
    """The line that says the pipeline is blocked; each phase named with its own [!] tasks."""
    by_phase: dict[str, list[str]] = {}
    for task in blocked:
        by_phase.setdefault(plan.phase_of(task).name, []).append(task.id)
    return "⚠️ PIPELINE BLOCKED — " + "; ".join(
        f"{name} has unresolved [!] tasks ({', '.join(ids)})" for name, ids in by_phase.items()
    )


def _waiting_message(plan: Plan, resolved: dict[int, bool]) -> str:
    """The root of the wait: a task in an open phase waiting on another task (a phase waiting
    on that phase is only a consequence), else a phase waiting on a phase."""
    for task in plan.tasks:
        missing = [needed for needed in task.depends if not _done(plan, needed)]
        if task.marker == PENDING and missing and _phase_open(plan.phase_of(task), resolved):
            return f"{task.id} is waiting on {missing[0]}"
    for phase in plan.phases:
        unmet = [number for number in phase.depends or () if not resolved.get(number, True)]
        if unmet and not resolved[phase.number]:
            return f"{phase.name} is waiting on Phase {unmet[0]}"
    return "no task can start now"
