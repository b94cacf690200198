"""The plan's spend read back: today's and the total, per phase, the average completed task
and a forecast to finish (``memento status --json``'s ``spend``), and whether the day's
budget is reached. Pure: the day is passed in."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from memento_gh.plan.model import DONE, RESOLVED, Plan, Task
from memento_gh.plan.spend import DaySpend, Spend, format_usd

#: The share of a day's budget at which the dashboard issue warns, once a day.
WARN_AT = Decimal("0.8")


def today_of(plan: Plan, today: date) -> DaySpend:
    """The Meta's day counter as of ``today`` (zero when it is an older day's)."""
    return plan.settings.spend_day.on(today)


def summary(plan: Plan, today: date) -> dict[str, Any]:
    """The ``spend`` object: what was spent, on what, and what finishing may cost."""
    day = today_of(plan, today)
    done = [task.spend for task in plan.tasks if task.marker == DONE and not task.spend.empty]
    remaining = sum(1 for task in plan.tasks if task.marker not in RESOLVED)
    average = _average(done)
    settings = plan.settings
    return {
        "today": {"date": today.isoformat(), **day.spend.as_json(), "ticks": day.ticks},
        "total": settings.spend_total.as_json(),
        "phases": [
            {"name": phase.name, **_sum(plan.tasks_in(phase)).as_json()} for phase in plan.phases
        ],
        "per_completed_task": None
        if average is None
        else {**average.as_json(), "sample": len(done)},
        "forecast": None
        if average is None
        else {
            **_times(average, remaining).as_json(),
            "remaining_tasks": remaining,
            "sample": len(done),
        },
        "budgets": {
            "budget_per_day": _money(settings.budget_per_day),
            "tokens_per_day": settings.tokens_per_day,
            "budget_per_task": _money(settings.budget_per_task),
            "max_ticks_per_day": settings.max_ticks_per_day,
        },
        "over_budget": over_budget(plan, today),
    }


def _sum(tasks: tuple[Task, ...]) -> Spend:
    total = Spend()
    for task in tasks:
        total += task.spend
    return total


def _average(spends: list[Spend]) -> Spend | None:
    if not spends:
        return None
    total = Spend()
    for one in spends:
        total += one
    count = len(spends)
    usd = None if total.usd is None else total.usd / count
    return Spend(usd, round(total.tokens_in / count), round(total.tokens_out / count))


def _times(spend: Spend, count: int) -> Spend:
    usd = None if spend.usd is None else spend.usd * count
    return Spend(usd, spend.tokens_in * count, spend.tokens_out * count)


def _money(amount: Decimal | None) -> float | None:
    return None if amount is None else float(amount)


PLAN = "docs/MASTER_PLAN.md"


def over_budget(plan: Plan, today: date, where: str = PLAN) -> str | None:
    """Why no task may start today, or None: the day's spend, tokens or ticks reached the
    budget the Meta sets. The reason says when the day resets and which key to raise."""
    settings = plan.settings
    day = today_of(plan, today)
    usd = day.spend.usd or Decimal(0)
    if settings.budget_per_day is not None and usd >= settings.budget_per_day:
        return _reached(plan, today, where, "budget_per_day", f"${format_usd(usd)} spent")
    tokens = day.spend.tokens
    if settings.tokens_per_day is not None and tokens >= settings.tokens_per_day:
        return _reached(plan, today, where, "tokens_per_day", f"{tokens} tokens used")
    if settings.max_ticks_per_day is not None and day.ticks >= settings.max_ticks_per_day:
        return _reached(plan, today, where, "max_ticks_per_day", f"{day.ticks} ticks run")
    return None


def _reached(plan: Plan, today: date, where: str, key: str, what: str) -> str:
    entry = plan.meta[key]
    resets = (today + timedelta(days=1)).isoformat()
    return (
        f"over budget: {what} today, {key} is {entry.value.strip()}; no task starts until "
        f"the UTC day resets at {resets}T00:00:00Z, or raise {key} ({where}:{entry.line + 1})"
    )


def near_budget(plan: Plan, today: date) -> str | None:
    """A warning once the day's spend passed ``WARN_AT`` of a daily budget (not yet all of
    it), or None."""
    settings = plan.settings
    day = today_of(plan, today)
    usd = day.spend.usd or Decimal(0)
    limits = (
        ("budget_per_day", usd, settings.budget_per_day, f"${format_usd(usd)}"),
        ("tokens_per_day", day.spend.tokens, settings.tokens_per_day, f"{day.spend.tokens} tokens"),
        ("max_ticks_per_day", day.ticks, settings.max_ticks_per_day, f"{day.ticks} ticks"),
    )
    for key, used, limit, shown in limits:
        if limit is not None and WARN_AT * limit <= used < limit:
            share = round(100 * used / limit)
            value = plan.meta[key].value.strip()
            return (
                f"{today.isoformat()}: {shown} is {share}% of {key} ({value})"
                "; the day's ticks stop at 100% until midnight UTC"
            )
    return None


def task_over_budget(plan: Plan, task: Task, spent: Spend, where: str = PLAN) -> str | None:
    """Why ``task`` may not run again: its own spend (``spent``) reached ``budget_per_task``."""
    limit = plan.settings.budget_per_task
    usd = spent.usd
    if limit is None or usd is None or usd < limit:
        return None
    return (
        f"over budget: {task.id} has cost ${format_usd(usd)}, budget_per_task is "
        f"${format_usd(limit)}; raise budget_per_task ({where}:"
        f"{plan.meta['budget_per_task'].line + 1}) and `memento retry {task.id}` to run it again"
    )


def left_usd(plan: Plan, task: Task, today: date) -> Decimal | None:
    """What is left of the day's and the task's USD budgets, the smaller one (None: no
    budget in USD)."""
    settings = plan.settings
    left = []
    if settings.budget_per_day is not None:
        left.append(settings.budget_per_day - (today_of(plan, today).spend.usd or Decimal(0)))
    if settings.budget_per_task is not None:
        left.append(settings.budget_per_task - (task.spend.usd or Decimal(0)))
    return max(min(left), Decimal(0)) if left else None


def spend_line(plan: Plan, today: date) -> str:
    """One line for people: ``today $0.25, 3,710 tokens (2 ticks) · total $1.20, 15,000
    tokens``."""
    day = today_of(plan, today)
    ticks = f" ({day.ticks} tick{'' if day.ticks == 1 else 's'})"
    return f"today {_short(day.spend)}{ticks} · total {_short(plan.settings.spend_total)}"


def _short(spend: Spend) -> str:
    tokens = f"{spend.tokens:,} tokens"
    return tokens if spend.usd is None else f"${format_usd(spend.usd)}, {tokens}"
