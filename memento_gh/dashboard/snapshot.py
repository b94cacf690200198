"""Everything the page shows, as one JSON-ready value built from the files' texts.

Pure: the parsed plan, the status log's and the notes' texts, the known schedules and the
time go in; a dict comes out. It extends ``memento status --json`` (the same keys, same
meanings) with what the page needs beyond it: each task's last run, the timeline, the
notes, the ETA and the next scheduled tick. Markdown arrives here as text and leaves as
escaped HTML (``markup``); every other string is text the page escapes itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, timezone, tzinfo
from typing import Any, NamedTuple

from memento_gh.cron import fields as cron
from memento_gh.dashboard import markup
from memento_gh.durations import format_duration
from memento_gh.formats import pull_record, runner_output
from memento_gh.formats.notes import parse_notes
from memento_gh.formats.status_log import (
    SUCCESS,
    Event,
    ParsedEntry,
    parse_status,
    spend_per_model,
)
from memento_gh.plan import budgets
from memento_gh.plan.model import Plan
from memento_gh.plan.progress import summary
from memento_gh.plan.values import format_time

#: The timeline shows the newest records only (the engine rotates the log at 50 by default).
TIMELINE_LIMIT = 200
_UTC = timezone.utc  # named before Schedule, whose ``timezone`` field hides the module


class Schedule(NamedTuple):
    """A cron line that runs ticks, and where it was found."""

    source: str  # ".github/workflows/memento.yml"
    expression: str  # "*/30 * * * *"
    timezone: str = "UTC"
    #: The clock the fields are read on: GitHub's is UTC, a local crontab's the machine's.
    zone: tzinfo = _UTC


def build(
    plan: Plan,
    plan_path: str,
    *,
    errors: int,
    status_text: str,
    notes_text: str,
    schedules: Sequence[Schedule],
    alert: str | None,
    now: datetime,
) -> dict[str, Any]:
    data = summary(plan, plan_path, errors)
    records = parse_status(status_text)
    entries = [record for record in records if isinstance(record, ParsedEntry)]
    last_runs = {entry.task_id: entry for entry in entries if entry.task_id}
    for task in data["tasks"]:
        task["html"] = markup.inline(task["description"])
        last = last_runs.get(task["id"])
        task["last"] = None if last is None else _entry(last)
    data["last_tick"] = _entry(entries[-1]) if entries else None
    data["eta"] = eta(entries, data["total"] - data["completed"] - data["skipped"])
    data["eta_line"] = eta_line(data["eta"])
    today = now.astimezone(_UTC).date()
    data["spend"] = budgets.summary(plan, today)
    data["spend"]["models"] = spend_per_model(records)
    data["spend_line"] = spend_line(plan, data["spend"], today)
    data["timeline"] = [_record(record) for record in reversed(records[-TIMELINE_LIMIT:])]
    data["notes"] = notes(notes_text)
    data["schedule"] = next_tick(schedules, now)
    data["alert"] = alert
    seen = pull_record.latest(records)
    data["pull_request"] = seen.as_json() if seen else None
    data["now"] = format_time(now)
    return data


def spend_line(plan: Plan, spend: dict[str, Any], today: date) -> str:
    """What the page says of the spend: today, in total, and the forecast to finish."""
    line = f"Spend: {budgets.spend_line(plan, today)}"
    forecast = spend["forecast"]
    if forecast:
        usd = forecast["usd"]
        tokens = forecast["tokens_in"] + forecast["tokens_out"]
        cost = f"${usd:.2f}, {tokens:,} tokens" if usd is not None else f"{tokens:,} tokens"
        line += (
            f" · to finish about {cost} ({forecast['remaining_tasks']} tasks at the average "
            f"of {forecast['sample']} done)"
        )
    return line + (f" · {spend['over_budget']}" if spend["over_budget"] else "")


def eta(entries: Iterable[ParsedEntry], remaining: int) -> dict[str, Any]:
    """The time left: the average duration of the finished tasks times the tasks left."""
    durations = [e.duration for e in entries if e.outcome == SUCCESS and e.duration is not None]
    average = sum(durations) / len(durations) if durations else None
    return {
        "seconds": None if average is None else round(average * remaining),
        "average": None if average is None else round(average, 1),
        "samples": len(durations),
        "remaining": remaining,
    }


def eta_line(eta: dict[str, Any]) -> str:
    """What the page says of ``eta``."""
    if not eta["remaining"]:
        return "Nothing left to do"
    if eta["seconds"] is None:
        return "Est. remaining: unknown (no task has finished yet)"
    return (
        f"Est. remaining: ~{format_duration(eta['seconds'])} of work "
        f"({format_duration(round(eta['average']))} a task × {eta['remaining']})"
    )


def next_tick(schedules: Sequence[Schedule], now: datetime) -> dict[str, Any] | None:
    """The soonest run of the known schedules; a cron line that cannot be read is reported."""
    runs: list[tuple[datetime, Schedule]] = []
    unreadable: list[dict[str, Any]] = []
    for schedule in schedules:
        try:
            moment = cron.next_fire_in(cron.parse_cron(schedule.expression), now, schedule.zone)
        except ValueError as error:
            unreadable.append({**_schedule(schedule), "at": None, "error": str(error)})
            continue
        if moment is not None:
            runs.append((moment, schedule))
    if not runs:
        return unreadable[0] if unreadable else None
    moment, schedule = min(runs, key=lambda run: run[0])
    return {**_schedule(schedule), "at": format_time(moment), "error": None}


def _schedule(schedule: Schedule) -> dict[str, Any]:
    return {"source": schedule.source, "cron": schedule.expression, "tz": schedule.timezone}


def notes(text: str) -> list[dict[str, Any]]:
    """Every note, newest first, its Markdown as safe HTML."""
    parsed = parse_notes(text).notes
    return [
        {
            "line": note.line + 1,
            "time": note.time,
            "target": note.target,
            "read": note.read,
            "archived": note.archived,
            "source": note.source,
            "html": markup.block(note.text),
        }
        for note in reversed(parsed)
    ]


def _record(record: ParsedEntry | Event) -> dict[str, Any]:
    if isinstance(record, Event):
        return {"kind": "event", "time": format_time(record.time), "text": record.text}
    return {"kind": "tick", **_entry(record)}


def _summary(entry: ParsedEntry) -> str:
    """The one line a run is told by: why it failed or was deferred, else its runner's
    result line."""
    if entry.error_analysis:
        return entry.error_analysis
    limit = entry.fields.get("Provider Limit")
    if limit:
        when = entry.fields.get("Try Again")
        return f"provider limit: {limit}" + (f"; try again {when}" if when else "")
    return runner_output.summary(entry.verify_head or "", entry.exit_code)


def _entry(entry: ParsedEntry) -> dict[str, Any]:
    fields = entry.fields
    log = fields.get("Log") or None
    return {
        "tick": entry.tick,
        "time": format_time(entry.time),
        "task": entry.task_id,
        "title": entry.task,
        "outcome": entry.outcome,
        "retry": entry.retry,
        "max_retries": entry.max_retries,
        "duration": entry.duration,
        "duration_text": None if entry.duration is None else format_duration(entry.duration),
        "verify": entry.verify_head,
        "exit_code": entry.exit_code,
        "analysis": entry.error_analysis,
        "summary": _summary(entry),
        "violations": fields.get("Guard Violations"),
        "agent_failure": fields.get("Agent Failure"),
        "agent_said": fields.get("Agent Said"),
        "tick_died": fields.get("Tick Died"),
        "conflict": fields.get("Conflict"),
        "files": fields.get("Files Modified"),
        "escalation": entry.escalation,
        "continuation": list(entry.continuation) if entry.continuation else None,
        "log": log if log and not log.startswith(("http://", "https://")) else None,
        "log_url": log if log and log.startswith(("http://", "https://")) else None,
    }
