"""``memento status`` and ``memento next``: where the plan stands and what runs next."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memento_gh import files
from memento_gh.checks import check_plan_text
from memento_gh.errors import UserError
from memento_gh.formats import pull_record, status_log
from memento_gh.layout import Layout, display
from memento_gh.output import paint, wants_color
from memento_gh.plan import budgets
from memento_gh.plan.model import ERROR
from memento_gh.plan.progress import done_text, summary

BAR_WIDTH = 20


def run(args: argparse.Namespace, layout: Layout) -> int:
    if not _exists(layout.plan):
        raise UserError(
            f"{display(layout.plan)}: no plan here; run `memento init` to create one, "
            "or pass -C/--plan-dir to point at it"
        )
    plan, problems = check_plan_text(
        files.read_text(layout.plan), files.read_optional(layout.project_map)
    )
    errors = sum(1 for problem in problems if problem.severity == ERROR)
    data = summary(plan, display(layout.plan), errors)
    status_text = files.read_optional(layout.status) or ""
    records = status_log.parse_status(status_text)
    seen = pull_record.latest(records)
    data["pull_request"] = seen.as_json() if seen else None
    today = datetime.now(timezone.utc).date()
    data["spend"] = budgets.summary(plan, today)
    data["spend"]["models"] = status_log.spend_per_model(records)
    spent = budgets.spend_line(plan, today)
    if args.command == "next":
        data = data["next"]
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif args.command == "next":
        print(data["message"] if data["task"] else f"nothing to run: {data['message']}")
    else:
        print(render_status(data, wants_color(sys.stdout), spent))
    return 0


def _exists(path: Path) -> bool:
    """Like ``Path.exists``, but a path the system cannot even look up (a name too long for
    the file system) does not exist either, instead of raising."""
    try:
        return path.exists()
    except OSError:
        return False


def render_status(data: dict[str, Any], color: bool, spent: str = "") -> str:
    done, skipped, total = data["completed"], data["skipped"], data["total"]
    counted = f"{done}/{total} done" + (f", {skipped} skipped" if skipped else "")
    lines = [
        paint(data["title"] or data["plan"], "bold", color),
        f"mode {data['mode']} · {counted} ({_percent(done + skipped, total)}) · "
        f"{data['blocked']} blocked · {data['running']} running · {data['ticks']} ticks",
    ]
    spend = data.get("spend") or {}
    if spent:
        lines.append(f"spend {spent}{_forecast(spend)}")
    if spend.get("over_budget"):
        lines.append(paint(spend["over_budget"], "warning", color))
    errors = data["errors"]
    if errors:
        noun = "error" if errors == 1 else "errors"
        lines.append(paint(f"the plan has {errors} {noun}; run `memento validate`", "error", color))
    lines.append("")
    for phase in data["phases"]:
        bar = _bar(phase["done"], phase["total"])
        counts = done_text(phase["done"] - phase["skipped"], phase["skipped"], phase["total"])
        lines.append(
            f"{phase['name']}: {phase['title']}  {bar} {counts}"
            + (f"  ({phase['blocked']} blocked)" if phase["blocked"] else "")
        )
    lines += _task_group(data, "blocked", "Blocked", color)
    lines += _task_group(data, "running", "Running", color)
    nxt = data["next"]
    lines += ["", f"Next: {nxt['message'] if nxt['task'] else 'nothing — ' + nxt['message']}"]
    return "\n".join(lines)


def _forecast(spend: dict[str, Any]) -> str:
    forecast = spend.get("forecast")
    if not forecast:
        return ""
    usd = forecast["usd"]
    tokens = forecast["tokens_in"] + forecast["tokens_out"]
    cost = f"${usd:.2f}, {tokens:,} tokens" if usd is not None else f"{tokens:,} tokens"
    return (
        f" · to finish about {cost} ({forecast['remaining_tasks']} tasks at the average of "
        f"{forecast['sample']} done)"
    )


def _task_group(data: dict[str, Any], status: str, title: str, color: bool) -> list[str]:
    tasks = [task for task in data["tasks"] if task["status"] == status]
    if not tasks:
        return []
    lines = ["", paint(f"{title}:", "warning" if status == "blocked" else "bold", color)]
    for task in tasks:
        if status == "blocked":
            extra = f"retries {task['retries']}/{data['max_retries']}"
        else:
            claim = task["claimed"] or {}
            extra = f"claimed {claim.get('at', '?')} by {claim.get('worker', '?')}"
        lines.append(f"  {task['id']} ({extra}) {task['description']}")
    return lines


def _bar(done: int, total: int) -> str:
    filled = round(BAR_WIDTH * done / total) if total else 0
    return "█" * filled + "░" * (BAR_WIDTH - filled)


def _percent(done: int, total: int) -> str:
    return f"{round(100 * done / total)}%" if total else "0%"
