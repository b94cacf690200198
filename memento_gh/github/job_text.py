"""What a run writes on its runner: the job summary (``$GITHUB_STEP_SUMMARY``) and the
workflow commands that annotate the job's log. Pure: values in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from memento_gh.github import render
from memento_gh.plan.model import Plan
from memento_gh.plan.spend import Spend
from memento_gh.runner_text import WorkflowCommand

_ANNOTATION_LEVELS = ("debug", "notice", "warning", "error")


# -- the job summary -----------------------------------------------------------------------


class TaskResultLike(Protocol):
    """One task's result in a tick (memento_gh.engine.tick.steps.TaskOutcome has these)."""

    @property
    def task_id(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def commit(self) -> str | None: ...
    @property
    def message(self) -> str: ...
    @property
    def pushes(self) -> int: ...


def job_summary(
    plan: Plan | None,
    *,
    outcome: str,
    lines: Sequence[str] = (),
    tasks: Sequence[TaskResultLike] = (),
    blocked_issues: Mapping[str, str] | None = None,
    dashboard_url: str | None = None,
    run_url: str | None = None,
    worker: str | None = None,
    run_spend: Spend | None = None,
    logs: tuple[str, str] | None = None,
) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: this run's outcome, the worker that ran it and
    the tasks it ran, what it did (``lines``, one sentence each: the tick, each control
    applied or refused, why the event was ignored), each task the tick ran, then the plan's
    progress, and the tasks running and blocked."""
    body = [f"## memento: {render.escape(outcome, 60)}", ""]
    if worker:
        body += [_worker_line(worker, tasks), ""]
    body += [f"- {render.escape(line, 500)}" for line in lines]
    if tasks:
        # A worker of a pool says how many pushes each result took to land on the branch.
        pushed = any(task.pushes for task in tasks)
        header = (
            "| Task | Outcome | Commit | Pushes | |" if pushed else "| Task | Outcome | Commit | |"
        )
        body += ["", header, "|---" * header.count(" |") + "|"]
        body += [_task_result_row(task, pushed) for task in tasks]
        if run_spend is not None:
            body += ["", f"**This run's agent:** {render.escape(render.spend_of_run(run_spend))}"]
    if plan is not None:
        body += ["", "### Progress", "", *render.progress_lines(plan), *render.spend_lines(plan)]
        body += render.task_section("Running", render.running_tasks(plan), 50, {}, plan)
        body += render.task_section(
            "Blocked", render.blocked_tasks(plan), 50, blocked_issues or {}, plan
        )
    links = [
        render.link(name, url)
        for name, url in (("dashboard", dashboard_url), ("run", run_url))
        if url
    ]
    if logs:  # (the artifact's name, its URL)
        links.append(f"logs: {render.link(logs[0], logs[1])}")
    if links:
        body += ["", " · ".join(links)]
    return render.join_lines(body) + "\n"


def _worker_line(worker: str, tasks: Sequence[TaskResultLike]) -> str:
    """Which worker this job was, and what it ran: with several workers on one branch, each
    job's summary tells its own part."""
    ran = ", ".join(render.escape(task.task_id, 40) for task in tasks) if tasks else "no task"
    return f"**Worker:** {render.code_span(worker)} · ran {ran}"


def _task_result_row(task: TaskResultLike, pushed: bool) -> str:
    commit = render.code_span(task.commit[:7]) if task.commit else ""
    pushes = f"| {task.pushes} " if pushed else ""
    return (
        f"| {render.escape(task.task_id, 40)} | {render.outcome_text(task.outcome)} | {commit} "
        f"{pushes}| {render.escape(task.message, 200)} |"
    )


# -- annotations ---------------------------------------------------------------------------


def annotation(
    level: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
) -> WorkflowCommand:
    """A workflow command such as ``::error file=docs/MASTER_PLAN.md,line=3::message``,
    escaped so that no value can end the command or start another: memento's own, printed
    as it is on a runner (``output.WorkflowCommand``)."""
    if level not in _ANNOTATION_LEVELS:
        raise ValueError(
            f"annotation level {level!r} is not one of {', '.join(_ANNOTATION_LEVELS)}"
        )
    properties = [
        f"{key}={_escape_property(str(value))}"
        for key, value in (("file", file), ("line", line), ("title", title))
        if value is not None
    ]
    head = f"::{level} {','.join(properties)}" if properties else f"::{level}"
    return WorkflowCommand(f"{head}::{_escape_data(message)}")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
