"""The texts of memento's issues and of its comments on them: a blocked task's issue (what
failed last, how to steer it) and the comment of the run that blocked it, the circuit
breaker's issue, and the comments that close them. Pure: values in, text out; text from
people and programs is neutralised as ``render.py`` says.
"""

from __future__ import annotations

from collections.abc import Sequence

from memento_gh.formats import status_log
from memento_gh.github import render
from memento_gh.plan import values
from memento_gh.plan.model import DONE, PENDING, RUNNING, SKIPPED, Task


def blocked_issue(
    task: Task,
    last: status_log.ParsedEntry | None,
    *,
    max_retries: int,
    plan_path: str,
) -> render.IssueText:
    """The issue of a task that ended ``[!]``: what failed last, and how to steer it."""
    title = f"{task.id} BLOCKED: {render.shorten(task.description, render.TITLE_DESCRIPTION_CHARS)}"
    lines = [
        render.marker(render.TASK_KIND, task.id),
        f"**{render.escape(task.id)}** is blocked: {render.escape(task.description)}",
        "",
        f"- Retries: {task.retries}/{max_retries}",
        f"- Plan: {render.code_span(plan_path)} line {task.line + 1}",
        f"- Module: {render.escape(task.module) if task.module else '(none)'}",
        f"- Files it may change: {_code_list(task.context_files)}",
        *_last_run(last),
        *_steering(task.id),
    ]
    return render.IssueText(title, render.join_lines(lines), (render.LABEL, render.BLOCKED_LABEL))


def _code_list(items: Sequence[str], limit: int = 20) -> str:
    shown = [render.code_span(item) for item in items[:limit]]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return (", ".join(shown) or "(none)") + more


def _last_run(last: status_log.ParsedEntry | None) -> list[str]:
    if last is None:
        return ["", "### Last run", "", "No run of this task is in the status log."]
    exit_text = (
        "timed out or did not run" if last.exit_code is None else f"exit code {last.exit_code}"
    )
    lines = [
        "",
        "### Last run",
        "",
        f"Tick #{last.tick:03d} at {values.format_time(last.time)}: "
        f"{render.outcome_text(last.outcome)}, verify {exit_text}.",
    ]
    if last.verify_head:
        lines += ["", *render.fenced(last.verify_head)]
    if last.error_analysis:
        lines += [
            "",
            "**Error analysis:** " + render.escape(last.error_analysis, render.ANALYSIS_CHARS),
        ]
    said = last.fields.get("Agent Said")
    if said:
        lines += ["", "**The agent's last words:** " + render.escape(said, render.ANALYSIS_CHARS)]
    modified = last.fields.get("Files Modified")
    if modified:
        lines += ["", "**Files modified:** " + render.escape(modified, render.ANALYSIS_CHARS)]
    return lines


def _steering(task_id: str) -> list[str]:
    shown = render.escape(task_id)
    return [
        "",
        "### How to steer",
        "",
        "Comment on this issue:",
        "",
        f"- plain text becomes a note for {shown}: the worker reads it the next time the task "
        "runs (tell it the fact it was missing);",
        "- `/memento retry` resets the retries and puts the task back in the queue "
        "(lines below the command become a note);",
        "- `/memento skip why` marks the task skipped `[-]` so the plan moves on;",
        "- `/memento pause`, `/memento resume`, `/memento stop` set the whole plan's mode;",
        "- `/memento tick` runs a tick now.",
        "",
        "Only comments by the repository's owners, members and collaborators (or people with "
        "write access) count; memento answers each with a reaction. This issue closes by "
        "itself when the task is no longer blocked.",
    ]


def blocked_run_comment(
    task_id: str, verify_tail: str, artifact_name: str | None, artifact_url: str | None
) -> str:
    """The comment of the run that blocked a task: where its logs are, and the end of the
    verify output, folded."""
    lines = [f"The run that blocked {render.escape(task_id)}:"]
    if artifact_name and artifact_url:
        what = "the tick log, the prompt, the agent's and verify's output"
        lines += ["", f"- Logs ({what}): {render.link(artifact_name, artifact_url)}"]
    if verify_tail.strip():
        lines += [
            "",
            "<details><summary>The last lines of the verify output</summary>",
            "",
            *render.fenced(verify_tail),
            "",
            "</details>",
        ]
    return render.join_lines(lines)


def task_unblocked_comment(task_id: str, new_marker: str | None) -> str:
    """The comment that closes a task's issue once the task has left ``[!]``."""
    state = {
        DONE: "done ✅",
        PENDING: "back in the queue (pending)",
        RUNNING: "running again",
        SKIPPED: "skipped",
    }.get(new_marker or "", "no longer in the plan")
    return render.join_lines(
        [
            render.marker(render.GENERATED_KIND),
            f"{render.escape(task_id)} is no longer blocked: it is {state}. Closing.",
        ]
    )


def breaker_issue(reason: str, when: str) -> render.IssueText:
    """The issue of a circuit-breaker trip: why ticking paused, and how to resume."""
    lines = [
        render.marker(render.BREAKER_KIND),
        f"The circuit breaker paused the plan at {render.escape(when, 40)}: "
        f"{render.escape(reason, render.ANALYSIS_CHARS)}",
        "",
        "No tick runs until someone resumes. Look at the blocked tasks and the last ticks in "
        "the status log, fix the cause, then resume in any of these ways:",
        "",
        "- comment `/memento resume` on this issue;",
        "- tick **Resume** on the dashboard issue;",
        "- run the workflow by hand with command `resume`;",
        "- run `memento resume` in a checkout of the memento branch and push.",
        "",
        "Plain comments here become notes for every task (global). This issue closes by "
        "itself when ticking resumes.",
    ]
    return render.IssueText(
        "memento: circuit breaker tripped",
        render.join_lines(lines),
        (render.LABEL, render.BREAKER_LABEL),
    )


def duplicate_comment(kept: int) -> str:
    """The comment that closes a second issue for one purpose (two runs made one each)."""
    return render.join_lines(
        [
            render.marker(render.GENERATED_KIND),
            f"memento keeps #{kept} for this; this issue was made a second time (two runs "
            "created it at once). Closing.",
        ]
    )


def breaker_resolved_comment() -> str:
    return render.join_lines(
        [
            render.marker(render.GENERATED_KIND),
            "The circuit breaker no longer holds the plan. Closing.",
        ]
    )
