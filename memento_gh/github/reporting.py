"""What a run of the action reports: its lines, the step's outputs and the job summary
(redacted: GitHub masks registered secrets in the job's log only)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memento_gh import files
from memento_gh.engine.records import TickResult
from memento_gh.github import artifact, job_text
from memento_gh.plan import spend
from memento_gh.plan.model import BLOCKED, DONE, Plan

if TYPE_CHECKING:
    from memento_gh.github.settings import Settings


class Report(NamedTuple):
    """What the run did, for the job summary and the step outputs."""

    outcome: str
    lines: tuple[str, ...] = ()
    tick: TickResult | None = None
    commit: str | None = None
    blocked_issues: Mapping[str, str] | None = None
    dashboard_url: str | None = None
    logs: artifact.Place | None = None


def finish(
    settings: Settings,
    plan: Plan | None,
    report: Report,
    say: Callable[[str], None],
    redact: Callable[[str], str],
) -> int:
    outputs = _outputs(plan, report)
    for line in report.lines:
        say(line)
    if settings.output_path is not None:
        _append(settings.output_path, "".join(f"{key}={value}\n" for key, value in outputs.items()))
    if settings.summary_path is not None:
        summary = job_text.job_summary(
            plan,
            outcome=report.outcome,
            lines=report.lines,
            tasks=report.tick.tasks if report.tick else (),
            blocked_issues=report.blocked_issues,
            dashboard_url=report.dashboard_url,
            run_url=settings.run_url,
            worker=settings.worker_id,
            run_spend=report.tick.spend if report.tick else spend.Spend(),
            logs=(report.logs.name, report.logs.url) if report.logs and report.logs.url else None,
        )
        _append(settings.summary_path, redact(summary))
    return 1 if report.outcome == "invalid-plan" else 0


def _outputs(plan: Plan | None, report: Report) -> dict[str, str]:
    tasks = plan.tasks if plan is not None else ()
    first = report.tick.tasks[0] if report.tick and report.tick.tasks else None
    spent = report.tick.spend if report.tick else spend.Spend()
    return {
        "outcome": report.outcome,
        "task-id": first.task_id if first else "",
        "completed": str(sum(1 for task in tasks if task.marker == DONE)),
        "total": str(len(tasks)),
        "blocked": str(sum(1 for task in tasks if task.marker == BLOCKED)),
        "commit": report.commit or "",
        "cost": "" if spent.usd is None else spend.format_usd(spent.usd),
        "tokens": str(spent.tokens),
        **artifact.outputs(report.logs),
    }


def _append(path: Path, text: str) -> None:
    # The runner's own files, which the agent may have found: never through a link.
    with files.open_append(path) as stream:
        stream.write(text.encode("utf-8"))
