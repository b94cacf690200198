"""The circuit breaker: when to stop ticking and wait for a person. Pure rules.

Too many ticks failed in a row, too many task runs deferred in a row on a provider limit,
too large a share of blocked tasks, or too little free disk pause the pipeline
(``tick_mode: paused``) until a person resumes it.
"""

from __future__ import annotations

from memento_gh.plan.meta import Settings
from memento_gh.plan.model import BLOCKED, Plan


def breaker_reason(plan: Plan, free_disk: int | None) -> str | None:
    """Why the pipeline must pause now, or None. ``free_disk`` in bytes (None: unknown)."""
    settings: Settings = plan.settings
    failed = settings.consecutive_failed_ticks
    if failed >= settings.circuit_breaker_threshold:
        return (
            f"{failed} ticks in a row failed (circuit_breaker_threshold is "
            f"{settings.circuit_breaker_threshold})"
        )
    deferred = settings.consecutive_deferrals
    if deferred >= settings.max_deferrals:
        return (
            f"{deferred} task runs in a row were deferred on a provider limit (max_deferrals "
            f"is {settings.max_deferrals}): the agent's provider takes no work, or the agent "
            "only says so; read the last entries' Provider Limit, then `memento resume`"
        )
    total = len(plan.tasks)
    blocked = sum(1 for task in plan.tasks if task.marker == BLOCKED)
    if total and blocked / total > settings.blocked_ratio_limit:
        return (
            f"{blocked} of {total} tasks are blocked, more than blocked_ratio_limit "
            f"{settings.blocked_ratio_limit:.0%}"
        )
    return disk_reason(settings, free_disk)


def disk_reason(settings: Settings, free_disk: int | None) -> str | None:
    if free_disk is not None and free_disk < settings.min_free_disk:
        return (
            f"only {free_disk // 1_000_000} MB of disk free, less than min_free_disk "
            f"{settings.min_free_disk // 1_000_000} MB"
        )
    return None
