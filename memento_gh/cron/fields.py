"""When a cron schedule fires next: the five fields of crontab(5), as cron and GitHub read them.

Pure: the expression and a time in, a time out. GitHub's scheduled workflows use the same
fields, in UTC; ``workflow_crons`` reads them from a workflow file's text.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any, NamedTuple

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_NAMES = {
    3: {
        m: i + 1
        for i, m in enumerate(
            ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        )
    },
    4: {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])},
}
#: (name, lowest, highest) of each field; 7 is Sunday as well as 0.
_FIELDS: tuple[tuple[str, int, int], ...] = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
#: Far enough for any date that exists (29 February on a given weekday repeats within 28 years).
_SEARCH_DAYS = 366 * 29


class Cron(NamedTuple):
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday (7 is read as 0)
    #: cron's rule: when both day fields are restricted, a day matching either one fires
    either_day: bool


def parse_cron(expression: str) -> Cron:
    """Read ``*/30 * * * *``; ValueError with a sentence on anything else."""
    text = MACROS.get(expression.strip().lower(), expression)
    parts = text.split()
    if len(parts) != 5:
        raise ValueError(
            f"{expression!r}: a cron line has 5 fields (minute hour day month weekday)"
        )
    sets = [_field(part, index) for index, part in enumerate(parts)]
    weekdays = frozenset(day % 7 for day in sets[4])
    either = not parts[2].startswith("*") and not parts[4].startswith("*")
    return Cron(sets[0], sets[1], sets[2], sets[3], weekdays, either)


def _field(text: str, index: int) -> frozenset[int]:
    name, low, high = _FIELDS[index]
    chosen: set[int] = set()
    for item in text.lower().split(","):
        span, _, step_text = item.partition("/")
        step = _number(step_text, name, 1, high) if step_text else 1
        if span == "*":
            first, last = low, high
        elif "-" in span:
            start, _, end = span.partition("-")
            first, last = _value(start, index), _value(end, index)
        else:
            first = _value(span, index)
            last = high if step_text else first
        if first > last:
            raise ValueError(f"{name} {item!r}: the range runs backwards")
        chosen.update(range(first, last + 1, step))
    return frozenset(chosen)


def _value(text: str, index: int) -> int:
    name, low, high = _FIELDS[index]
    named = _NAMES.get(index, {}).get(text)
    return named if named is not None else _number(text, name, low, high)


def _number(text: str, name: str, low: int, high: int) -> int:
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(f"{name} {text!r} is not a number from {low} to {high}")
    return int(text)


def next_fire(cron: Cron, after: datetime) -> datetime | None:
    """The first minute strictly after ``after`` (aware; answered in UTC) that the schedule
    fires, or None when it never does (``0 0 30 2 *``)."""
    start = after.astimezone(timezone.utc).replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    hours, minutes = sorted(cron.hours), sorted(cron.minutes)
    for offset in range(_SEARCH_DAYS):
        date = day + timedelta(days=offset)
        if not _day_matches(cron, date):
            continue
        for hour in hours:
            for minute in minutes:
                moment = date.replace(hour=hour, minute=minute)
                if moment >= start:
                    return moment
    return None


def next_fire_in(cron: Cron, after: datetime, zone: tzinfo) -> datetime | None:
    """``next_fire`` for a schedule kept in ``zone``'s wall-clock time, as a local crontab
    is kept in the machine's; the answer is in UTC."""
    wall = after.astimezone(zone).replace(tzinfo=timezone.utc)
    moment = next_fire(cron, wall)
    return None if moment is None else moment.replace(tzinfo=zone).astimezone(timezone.utc)


def _day_matches(cron: Cron, date: datetime) -> bool:
    if date.month not in cron.months:
        return False
    by_date = date.day in cron.days
    by_weekday = (date.weekday() + 1) % 7 in cron.weekdays
    return (by_date or by_weekday) if cron.either_day else (by_date and by_weekday)


def workflow_crons(workflow: Any) -> list[str]:
    """The ``on.schedule[].cron`` lines of a loaded workflow (YAML 1.1 reads ``on`` as True)."""
    if not isinstance(workflow, dict):
        return []
    triggers = workflow.get("on", workflow.get(True))
    schedule = triggers.get("schedule") if isinstance(triggers, dict) else None
    if not isinstance(schedule, list):
        return []
    return [
        item["cron"]
        for item in schedule
        if isinstance(item, dict) and isinstance(item.get("cron"), str)
    ]
