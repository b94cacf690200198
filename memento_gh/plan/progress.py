"""Progress of a plan as plain data: the documented JSON of ``memento status --json``."""

from __future__ import annotations

from typing import Any

from memento_gh.plan.model import (
    BLOCKED,
    DONE,
    MARKERS,
    PENDING,
    RESOLVED,
    RUNNING,
    SKIPPED,
    Plan,
    Task,
)
from memento_gh.plan.picking import Decision, pick
from memento_gh.plan.values import format_time

SCHEMA_VERSION = 1


def summary(plan: Plan, plan_path: str, errors: int = 0) -> dict[str, Any]:
    """Everything ``memento status`` shows, in the stable shape docs/commands.md documents."""
    tasks = plan.tasks
    decision = pick(plan)
    return {
        "schema": SCHEMA_VERSION,
        "plan": plan_path,
        "title": plan.title,
        "mode": plan.settings.tick_mode,
        "total": len(tasks),
        "completed": _count(tasks, DONE),
        "skipped": _count(tasks, SKIPPED),
        "blocked": _count(tasks, BLOCKED),
        "running": _count(tasks, RUNNING),
        "pending": _count(tasks, PENDING),
        "ticks": plan.settings.total_ticks,
        "max_retries": plan.settings.max_retries,
        "errors": errors,
        "phases": [_phase(plan, index) for index in range(len(plan.phases))],
        "tasks": [_task(plan, task) for task in tasks],
        "next": next_summary(decision),
    }


def next_summary(decision: Decision) -> dict[str, Any]:
    task = decision.task
    return {
        "task": None if task is None else task.id,
        "reason": decision.reason,
        "message": decision.message,
    }


def _count(tasks: tuple[Task, ...], marker: str) -> int:
    return sum(1 for task in tasks if task.marker == marker)


def _phase(plan: Plan, index: int) -> dict[str, Any]:
    phase = plan.phases[index]
    tasks = plan.tasks_in(phase)
    return {
        "name": phase.name,
        "number": phase.number,
        "title": phase.title,
        "done": sum(1 for task in tasks if task.marker in RESOLVED),
        "skipped": _count(tasks, SKIPPED),
        "total": len(tasks),
        "blocked": _count(tasks, BLOCKED),
        "running": _count(tasks, RUNNING),
        "parallel": bool(phase.parallel),
        "depends": [f"Phase {number}" for number in phase.depends or ()],
    }


def _task(plan: Plan, task: Task) -> dict[str, Any]:
    claim = task.claimed
    return {
        "id": task.id,
        "status": MARKERS.get(task.marker, "unknown"),
        "retries": task.retries,
        "phase": plan.phase_of(task).name,
        "module": task.module,
        "description": task.description,
        "depends": list(task.depends),
        "claimed": None if claim is None else {"at": format_time(claim.at), "worker": claim.worker},
        "line": task.line + 1,
    }


def done_text(done: int, skipped: int, total: int) -> str:
    """``3/4`` done, and ``, 1 skipped`` when a task was skipped: a skipped task is not
    done, though its dependants go on as if it were (a phase's ``done`` counts both)."""
    return f"{done}/{total}" + (f", {skipped} skipped" if skipped else "")
