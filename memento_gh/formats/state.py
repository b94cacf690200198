"""``docs/STATE.md``: where the work stands and how to pick it up, for a worker or a person
who remembers nothing of the ticks before.

memento rewrites the whole file after every tick and every control, from the plan and what
just happened; nobody edits it. A person or an agent arriving cold reads it first::

    # Current State

    ## Snapshot
    - Time: 2025-01-15T14:35:00Z
    - Plan: docs/MASTER_PLAN.md (MASTER_PLAN: Shop)
    - Mode: auto
    - Phase: Phase 1: Foundation (1/2 done)
    - Progress: 1/3 tasks done, 0 skipped, 0 blocked, 0 running; 4 ticks
    - Current: none running
    - Next: T-102 [MODULE:auth] JWT tokens

    ## Context
    - Last action: Tick #004: T-101 success
    - Next action: the next tick runs T-102 [MODULE:auth] JWT tokens
    - Blockers: none

    ## Resume
    1. ...

The next task is the scheduler's own pick, so the file and the next tick never disagree.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memento_gh.layout import NOTES_NAME, PLAN_NAME, STATUS_NAME
from memento_gh.plan import budgets, picking, values
from memento_gh.plan.model import BLOCKED, DONE, RESOLVED, RUNNING, SKIPPED, Plan, Task

if TYPE_CHECKING:
    from datetime import date, datetime

HEADER = "# Current State"
_ITEM = re.compile(r"-[ \t]+(?P<key>[^:]+?):[ \t]*(?P<value>.*?)[ \t]*$")


def render_state(
    plan: Plan,
    *,
    now: datetime,
    last_action: str,
    plan_dir: str = "docs",
    alerts: Sequence[str] = (),
) -> str:
    """The whole of ``STATE.md`` for ``plan`` at ``now``.

    ``last_action`` is one sentence on what just happened (a tick's outcome, a control);
    ``alerts`` are blockers the plan does not show, such as the circuit breaker's line.
    """
    decision = picking.pick(plan)
    paths = _Paths(plan_dir)
    blocking = (*alerts, *_budget(plan, now))
    lines = [
        HEADER,
        "",
        "<!-- Written by memento after every tick and every control; edits are overwritten. -->",
        "",
        "## Snapshot",
        f"- Time: {values.format_time(now)}",
        f"- Plan: {paths.plan}" + (f" ({_flat(plan.title)})" if plan.title else ""),
        f"- Mode: {plan.settings.tick_mode}",
        f"- Phase: {_phase(plan, decision)}",
        f"- Progress: {_progress(plan)}",
        f"- Spend: {budgets.spend_line(plan, _utc_day(now))}",
        f"- Current: {_current(plan)}",
        f"- Next: {decision.task.title if decision.task else 'none — ' + _flat(decision.message)}",
        "",
        "## Context",
        f"- Last action: {_flat(last_action) or 'none recorded'}",
        f"- Next action: {_next_action(plan, decision)}",
        f"- Blockers: {'; '.join(_blockers(plan, decision, blocking)) or 'none'}",
        "",
        "## Resume",
        *(f"{number}. {step}" for number, step in enumerate(_resume(decision, paths), start=1)),
    ]
    return "\n".join(lines) + "\n"


def _utc_day(now: datetime) -> date:
    from datetime import timezone

    return now.astimezone(timezone.utc).date()


def _budget(plan: Plan, now: datetime) -> tuple[str, ...]:
    reason = budgets.over_budget(plan, _utc_day(now))
    return (reason,) if reason else ()


def parse_state(text: str) -> dict[str, str]:
    """The ``- Key: value`` lines of the Snapshot and Context sections, by key."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _ITEM.fullmatch(line)
        if match:
            found.setdefault(match.group("key").strip(), match.group("value"))
    return found


class _Paths:
    def __init__(self, plan_dir: str) -> None:
        folder = PurePosixPath(plan_dir.replace("\\", "/").strip("/") or ".")
        self.plan = (folder / PLAN_NAME).as_posix()
        self.status = (folder / STATUS_NAME).as_posix()
        self.notes = (folder / NOTES_NAME).as_posix()
        self.memory = f"{(folder / 'memory').as_posix()}/"
        words = ["memento"] if folder.as_posix() == "docs" else ["memento", "--plan-dir", plan_dir]
        self.command = shlex.join(words)


def _flat(text: str | None) -> str:
    return " ".join((text or "").split())


def _phase(plan: Plan, decision: picking.Decision) -> str:
    """The phase being worked on: a running task's, else the next task's, else the first
    phase that is not resolved (or the last one when all are)."""
    running = next((task for task in plan.tasks if task.marker == RUNNING), None)
    task = running or decision.task
    if task is not None:
        phase = plan.phase_of(task)
    else:
        open_phases = [
            phase
            for phase in plan.phases
            if any(task.marker not in RESOLVED for task in plan.tasks_in(phase))
        ]
        if not open_phases and not plan.phases:
            return "none"
        phase = open_phases[0] if open_phases else plan.phases[-1]
    tasks = plan.tasks_in(phase)
    done = sum(1 for task in tasks if task.marker == DONE)
    skipped = sum(1 for task in tasks if task.marker == SKIPPED)
    counted = f"{done}/{len(tasks)} done" + (f", {skipped} skipped" if skipped else "")
    return f"{phase.name}: {_flat(phase.title)} ({counted})"


def _progress(plan: Plan) -> str:
    count = dict.fromkeys((DONE, SKIPPED, BLOCKED, RUNNING), 0)
    for task in plan.tasks:
        if task.marker in count:
            count[task.marker] += 1
    return (
        f"{count[DONE]}/{len(plan.tasks)} tasks done, {count[SKIPPED]} skipped, "
        f"{count[BLOCKED]} blocked, {count[RUNNING]} running; {plan.settings.total_ticks} ticks"
    )


def _current(plan: Plan) -> str:
    running = [task for task in plan.tasks if task.marker == RUNNING]
    if not running:
        return "none running"
    return "; ".join(_claim(task) for task in running)


def _claim(task: Task) -> str:
    claim = task.claimed
    if claim is None:
        return f"{task.title} (running)"
    return f"{task.title} (claimed {values.format_time(claim.at)} by {claim.worker})"


def _blocked(plan: Plan) -> list[Task]:
    return [task for task in plan.tasks if task.marker == BLOCKED]


def _next_action(plan: Plan, decision: picking.Decision) -> str:
    reason, task = decision.reason, decision.task
    if task is not None:
        return f"the next tick runs {task.title}"
    if reason in (picking.PAUSED, picking.STOPPED):
        return f"none: tick_mode is {plan.settings.tick_mode} until someone resumes the plan"
    if reason == picking.ALL_COMPLETE:
        return "none: every task is done or skipped"
    if reason == picking.NO_TASKS:
        return "a person adds tasks to the plan"
    if reason == picking.PIPELINE_BLOCKED:
        ids = ", ".join(task.id for task in _blocked(plan))
        return f"a person unblocks {ids}: a note and a retry, or a skip"
    if reason == picking.RUNNING_ONLY:
        return "wait for the running task's tick to end"
    return _flat(decision.message)


def _blockers(plan: Plan, decision: picking.Decision, alerts: Sequence[str]) -> list[str]:
    found = [_flat(alert) for alert in alerts if alert.strip()]
    mode = plan.settings.tick_mode
    if mode != "auto":
        found.append(f"tick_mode is {mode}")
    most = plan.settings.max_retries
    found += [
        f"{task.id} is blocked [!] after {task.retries}/{most} retries" for task in _blocked(plan)
    ]
    if decision.task is None and decision.reason in (picking.RETRIES_EXHAUSTED, picking.WAITING):
        found.append(_flat(decision.message))
    return found


def _resume(decision: picking.Decision, paths: _Paths) -> list[str]:
    """Steps that are true for this repository in this state."""
    command = paths.command
    steps = [
        f"Read this file, then run `{command} status` for every phase and task "
        f"(`{command} next` says what the next tick would run).",
        f"The plan is {paths.plan}; the tick log, newest entry last, is {paths.status}; "
        f"notes to the worker are in {paths.notes}; lessons are in {paths.memory}.",
    ]
    task = decision.task
    reason = decision.reason
    if task is not None:
        steps.append(
            f"Continue with {task.id}: `{command} tick` runs it here (or the scheduled "
            "workflow does, on GitHub)."
        )
    elif reason in (picking.PAUSED, picking.STOPPED):
        steps.append(
            f"Find why the plan stopped in {paths.status} (a circuit breaker line says why), "
            f"fix that, then `{command} resume`."
        )
    elif reason in (picking.PIPELINE_BLOCKED, picking.RETRIES_EXHAUSTED):
        steps.append(
            f"For each blocked task, read its last entry in {paths.status}, answer with "
            f'`{command} note --task T-ID "…"`, then `{command} retry T-ID`; or '
            f'`{command} skip T-ID --why "…"`.'
        )
    elif reason in (picking.ALL_COMPLETE, picking.NO_TASKS):
        steps.append(f"Nothing to resume: add tasks to {paths.plan} to go on.")
    else:
        steps.append(f"Nothing can start now ({_flat(decision.message)}); `{command} tick` later.")
    return steps
