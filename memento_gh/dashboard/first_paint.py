"""The page's first state drawn on the server: ``index.html`` with the snapshot the script
fetches (``snapshot.build``) already in its elements, so that the page shows the plan at
load, before any script runs, or with scripts off. Snapshot in, HTML out (no I/O).

The markup is the script's own (``static/app.js``: ``taskRow``, ``tickRow``, ``noteItem``),
so that its first render only refreshes what the server drew. Times are shown in UTC here;
the script shows them in the reader's time zone. Bar widths need the script (the page's
Content-Security-Policy refuses style attributes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from memento_gh.plan.values import parse_time

ICONS = {"done": "✓", "pending": "○", "blocked": "✗", "running": "◔", "skipped": "−"}
GROUPS = {"done": "completed", "skipped": "skipped", "blocked": "blocked"}
OUTCOMES = {
    "success": "✓ SUCCESS",
    "failed": "✗ FAILED",
    "blocked": "⊘ BLOCKED",
    "deferred": "⏳ DEFERRED",
}
MODES = {"auto": "● AUTO", "paused": "❚❚ PAUSED", "stopped": "■ STOPPED"}
#: The marks in ``index.html`` this module fills: ``@FIRST:name@``.
_MARK = re.compile(r"@FIRST:(?P<name>[a-z-]+)@")
#: Shown where the plan could not be read (the script says why in its banner).
PLACEHOLDER = "…"

State = Mapping[str, Any]


def fill(template: str, state: State | None) -> str:
    """``template`` with each ``@FIRST:name@`` mark replaced by what ``state`` shows there
    (the placeholder without a state: the plan could not be read, the script will say why)."""
    if state is None:
        return _MARK.sub(lambda found: _WITHOUT_STATE.get(found["name"], ""), template)
    parts = {name: draw(state) for name, draw in _PARTS.items()}
    return _MARK.sub(lambda found: parts[found["name"]], template)


def esc(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


# -- the header -----------------------------------------------------------------------------


def _title(state: State) -> str:
    return esc(re.sub(r"^MASTER_PLAN:\s*", "", state.get("title") or state.get("plan") or ""))


def _mode(state: State) -> str:
    if state.get("running") and state["mode"] == "auto":
        return "● RUNNING"
    return esc(MODES.get(state["mode"], state["mode"]))


def _last_tick(state: State) -> str:
    last = state.get("last_tick")
    if not last:
        return "Last tick: none yet"
    outcome = OUTCOMES.get(last["outcome"]) or esc(last["outcome"])
    return (
        f'Last tick: #{esc(last["tick"])} · <span title="{esc(last["time"])}">'
        f"{_ago(last['time'], state['now'])}</span> · {outcome} {esc(last.get('task') or '')}"
    )


def _next_tick(state: State) -> str:
    plan = state.get("schedule")
    if plan and plan.get("at"):
        return (
            f'Next tick: <span title="{esc(plan["at"])}">{_until(plan["at"], state["now"])}'
            f'</span> <span class="hint">(cron <code>{esc(plan["cron"])}</code> '
            f"{esc(plan['tz'])}, {esc(plan['source'])})</span>"
        )
    if plan and plan.get("error"):
        return esc(f"Next tick: unknown ({plan['source']}: {plan['error']})")
    return "Next tick: no schedule known"


def _running(state: State) -> str:
    shown = []
    for task in state["tasks"]:
        if task["status"] != "running":
            continue
        claimed = task.get("claimed")
        since = (
            f" since {_ago(claimed['at'], state['now'])} ({esc(claimed['worker'])})"
            if claimed
            else ""
        )
        shown.append(f"Running: <code>{esc(task['id'])}</code>{since}")
    return " · ".join(shown)


def _alert(state: State) -> str:
    return esc(state.get("alert") or "")


def _alert_hidden(state: State) -> str:
    return "" if state.get("alert") else " hidden"


def _mode_hint(state: State) -> str:
    return esc(state["next"]["message"] if state.get("next") else "")


# -- progress -------------------------------------------------------------------------------


def _percent(done: int, total: int) -> int:
    return round(100 * done / total) if total else 0


def _counted(done: int, skipped: int, total: int) -> str:
    return f"{done}/{total}" + (f", {skipped} skipped" if skipped else "")


def _overall(state: State) -> str:
    percent = _percent(state["completed"] + state["skipped"], state["total"])
    return f"{_counted(state['completed'], state['skipped'], state['total'])} ({percent}%)"


def _phases(state: State) -> str:
    rows = []
    for phase in state["phases"]:
        blocked = f" · {phase['blocked']} blocked" if phase["blocked"] else ""
        counts = _counted(phase["done"] - phase["skipped"], phase["skipped"], phase["total"])
        rows.append(
            f'<li><span class="name" title="{esc(phase["title"])}">{esc(phase["name"])}: '
            f'{esc(phase["title"])}</span><div class="bar" role="progressbar" '
            f'aria-label="{esc(phase["name"])}" '
            f'aria-valuenow="{_percent(phase["done"], phase["total"])}"><span></span></div>'
            f"<span>{esc(counts)}{blocked}</span></li>"
        )
    return "".join(rows)


def _blocked(state: State) -> str:
    return f"Blocked: {state['blocked']}{' ⚠' if state['blocked'] else ''}"


def _eta(state: State) -> str:
    return esc(state.get("eta_line") or "")


def _spend(state: State) -> str:
    return esc(state.get("spend_line") or "")


def _plan_errors(state: State) -> str:
    errors = state.get("errors")
    return f"The plan has {errors} validation error(s): run memento validate." if errors else ""


def _plan_errors_hidden(state: State) -> str:
    return "" if state.get("errors") else " hidden"


def _pull_request(state: State) -> str:
    """memento's pull request as the runs last saw it (the status log's record)."""
    pull = state.get("pull_request")
    if not pull:
        return ""
    checks = f", checks {pull['checks']}" if pull.get("checks") else ""
    return esc(f"Pull request #{pull['number']} ({pull['state']}{checks})")


def _pull_request_url(state: State) -> str:
    pull = state.get("pull_request")
    url = str(pull["url"]) if pull else ""
    return esc(url if url.startswith(("https://", "http://")) else "#")


# -- tasks ----------------------------------------------------------------------------------


def _group(task: State) -> str:
    return GROUPS.get(task["status"], "pending")


def _task_state(task: State, most: int) -> str:
    status = task["status"]
    if status == "blocked":
        return f"BLOCKED · retries {task['retries']}/{most}"
    if status in ("running", "skipped"):
        return str(status)
    if status == "done":
        last = task.get("last")
        return str(last["duration_text"]) if last and last.get("duration_text") else "done"
    return f"retry {task['retries']}/{most}" if task["retries"] else str(task["phase"])


def _task_row(task: State, most: int) -> str:
    module = f'<span class="module">[{esc(task["module"])}]</span>' if task.get("module") else ""
    return (
        f'<div class="task" data-id="{esc(task["id"])}" data-status="{esc(task["status"])}" '
        f'data-group="{_group(task)}"><div class="summary" role="button" tabindex="0" '
        f'aria-expanded="false"><span class="icon" aria-hidden="true">'
        f'{ICONS.get(task["status"], "•")}</span><code class="id">{esc(task["id"])}</code>'
        f'{module}<span class="desc">{task["html"]}</span>'
        f'<span class="state">{esc(_task_state(task, most))}</span></div></div>'
    )


def _tasks(state: State) -> str:
    if not state["tasks"]:
        return '<p class="hint">The plan has no tasks yet.</p>'
    return "".join(_task_row(task, state["max_retries"]) for task in state["tasks"])


def _count(group: str) -> Callable[[State], str]:
    def count(state: State) -> str:
        tasks = state["tasks"]
        return str(len(tasks) if group == "all" else sum(_group(t) == group for t in tasks))

    return count


# -- the timeline and the notes -------------------------------------------------------------


def _tick_row(record: State) -> str:
    when = f'<span class="when" title="{esc(record["time"])}">{_clock(record["time"])}</span>'
    if record["kind"] == "event":
        return f'<li>{when}<span class="event">{esc(record["text"])}</span></li>'
    outcome = record.get("outcome")
    retry = (
        f" (retry {record['retry']}/{record['max_retries']})"
        if record.get("retry") is not None and outcome != "success"
        else ""
    )
    part = record.get("continuation")
    part_text = f" ({part[0]}/{part[1]})" if part else ""
    duration = f" · {esc(record['duration_text'])}" if record.get("duration_text") else ""
    detail = record.get("summary")
    return (
        f'<li class="tick" data-outcome="{esc(outcome or "")}"><div>{when}'
        f"<strong>Tick #{esc(str(record['tick']).zfill(3))}{esc(part_text)}</strong> · "
        f"<code>{esc(record.get('task') or '?')}</code> · "
        f"{OUTCOMES.get(outcome or '') or esc(outcome or '?')}{esc(retry)}{duration}</div>"
        f'<div class="detail">{esc(record.get("title"))}</div>'
        + (f'<div class="detail"><code>{esc(detail)}</code></div>' if detail else "")
        + "</li>"
    )


def _timeline(state: State) -> str:
    if not state["timeline"]:
        return '<p class="hint">No tick has run yet.</p>'
    return "".join(_tick_row(record) for record in state["timeline"])


def _note_item(note: State) -> str:
    badge = "✓ read" if note["read"] else "○ pending"
    source = f" · from {esc(note['source'])}" if note.get("source") else ""
    return (
        f'<li data-line="{esc(note["line"])}"><div class="head">{_clock(note["time"])} → '
        f"<strong>{esc(note['target'])}</strong> · {badge}{source}</div>"
        f'<div class="body">{note["html"]}</div></li>'
    )


def _notes_of(kind: str, state: State) -> Sequence[State]:
    notes = state["notes"]
    if kind == "pending":
        return [note for note in notes if not note["read"] and not note["archived"]]
    if kind == "read":
        return [note for note in notes if note["read"] and not note["archived"]]
    return [note for note in notes if note["archived"]]


def _notes(kind: str) -> Callable[[State], str]:
    def draw(state: State) -> str:
        return "".join(map(_note_item, _notes_of(kind, state))) or '<li class="hint">none</li>'

    return draw


def _notes_count(kind: str) -> Callable[[State], str]:
    return lambda state: str(len(_notes_of(kind, state)))


def _note_targets(state: State) -> str:
    ids = [task["id"] for task in state["tasks"] if _group(task) not in ("completed", "skipped")]
    return "".join(f'<option value="{esc(task_id)}">{esc(task_id)}</option>' for task_id in ids)


# -- times ----------------------------------------------------------------------------------


def _seconds_between(earlier: str, later: str) -> float | None:
    try:
        return (parse_time(later) - parse_time(earlier)).total_seconds()
    except ValueError:
        return None


def _roughly(seconds: float) -> str:
    """A time ago or ahead, to the minute, as the script spells it (``roughly``)."""
    minutes = int(max(60.0, seconds) // 60)
    if minutes < 60:
        return f"{minutes}m"
    hours = minutes // 60
    if hours >= 48:
        return f"{round(hours / 24)}d"
    return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"


def _ago(moment: str, now: str) -> str:
    seconds = _seconds_between(moment, now)
    if seconds is None:
        return esc(moment)
    return "just now" if seconds < 45 else f"{_roughly(seconds)} ago"


def _until(moment: str, now: str) -> str:
    seconds = _seconds_between(now, moment)
    if seconds is None:
        return esc(moment)
    return "due now" if seconds <= 30 else f"in {_roughly(seconds)}"


def _clock(moment: str) -> str:
    try:
        shown: datetime = parse_time(moment)
    except ValueError:
        return esc(moment)
    return f"{shown:%b} {shown.day} {shown:%H:%M} UTC"


_PARTS: dict[str, Callable[[State], str]] = {
    "title": _title,
    "mode": _mode,
    "mode-value": lambda state: esc(state["mode"]),
    "last-tick": _last_tick,
    "next-tick": _next_tick,
    "running": _running,
    "alert": _alert,
    "alert-hidden": _alert_hidden,
    "mode-hint": _mode_hint,
    "overall-count": _overall,
    "overall-percent": lambda s: str(_percent(s["completed"] + s["skipped"], s["total"])),
    "phases": _phases,
    "blocked-count": _blocked,
    "eta": _eta,
    "spend": _spend,
    "plan-errors": _plan_errors,
    "plan-errors-hidden": _plan_errors_hidden,
    "pull-request": _pull_request,
    "pull-request-url": _pull_request_url,
    "pull-request-hidden": lambda s: "" if s.get("pull_request") else " hidden",
    "tasks": _tasks,
    **{f"count-{group}": _count(group) for group in GROUPS.values()},
    "count-all": _count("all"),
    "count-pending": _count("pending"),
    "timeline": _timeline,
    **{f"notes-{kind}": _notes(kind) for kind in ("pending", "read", "archived")},
    **{f"count-notes-{kind}": _notes_count(kind) for kind in ("pending", "read", "archived")},
    "note-targets": _note_targets,
}
#: What a mark shows without a state (the rest are left empty).
_WITHOUT_STATE = {
    "title": PLACEHOLDER,
    "mode": PLACEHOLDER,
    "mode-value": "unknown",
    "last-tick": "Last tick: —",
    "next-tick": "Next tick: —",
    "alert-hidden": " hidden",
    "plan-errors-hidden": " hidden",
    "overall-percent": "0",
}
