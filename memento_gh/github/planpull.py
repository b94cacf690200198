"""``/memento plan`` on an issue, decided purely: the branch the draft goes on, the pull
request that carries it (one per issue, found by its marker), the commit status that shows
the plan validates, and the comments when no pull request opens.

Everything the issue or the architect wrote is shown as text (escaped, or in a fence that
nothing inside can close): it never becomes markup, a mention or a marker of ours.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memento_gh.github import guidance, render
from memento_gh.github.pulls import PullLike
from memento_gh.plan.model import Plan
from memento_gh.plan.risks import risk_problems

DRAFT_KIND = "plan-draft"
#: The commit status memento posts on the branch's head (pushes made with GITHUB_TOKEN start
#: no workflow, so no other check would run on it).
STATUS_CONTEXT = "memento/plan"
#: GitHub refuses a status description longer than this.
STATUS_DESCRIPTION_CHARS = 140
#: Problems a comment lists at most (the rest are counted).
PROBLEM_LINES = 40
_BACKTICKS = re.compile(r"`+")


def branch_for(issue: int) -> str:
    return f"memento-plan/issue-{issue}"


def subject_for(issue: int) -> str:
    """The draft's commit subject."""
    return f"memento: draft plan (#{issue})"


def spec_of(title: str, body: str) -> str:
    """The architect's spec: the issue's title as a heading, then its body."""
    return f"# {' '.join(title.split())}\n\n{body.strip()}\n"


def pull_marker(issue: int) -> str:
    return render.marker(DRAFT_KIND, str(issue))


def is_draft_pull(body: str | None, issue: int) -> bool:
    """memento writes the marker on the first line; one further down is quoted text."""
    return (body or "").split("\n", 1)[0].strip() == pull_marker(issue)


def open_draft_pull(pulls: Sequence[PullLike], issue: int) -> PullLike | None:
    """The open pull request that carries the draft for ``issue`` (the oldest, if several)."""
    found = [pull for pull in pulls if pull.state == "open" and is_draft_pull(pull.body, issue)]
    return min(found, key=lambda pull: pull.number) if found else None


def pull_title(issue: int, title: str) -> str:
    return f"memento: a plan for #{issue} ({render.shorten(' '.join(title.split()), 60)})"


def counts(plan: Plan) -> str:
    phases, tasks = len(plan.phases), len(plan.tasks)
    return f"{phases} phase{'s' * (phases != 1)}, {tasks} task{'s' * (tasks != 1)}"


def pull_body(plan: Plan, *, issue: int, plan_path: str, base: str) -> str:
    """What the pull request says: where the draft comes from, its phases, how to apply it
    and how to ask again. Deterministic, so a run edits it only when it changed."""
    lines = [
        pull_marker(issue),
        f"Drafted from #{issue} by memento's architect: the issue's body is the spec.",
        "",
        f"`{plan_path}`: {counts(plan)}. It validates: see the `{STATUS_CONTEXT}` check.",
        "",
        "| Phase | Title | Parallel | Depends on | Tasks |",
        "|---|---|---|---|---|",
    ]
    for phase in plan.phases:
        parallel = "yes" if phase.parallel else "no"
        depends = ", ".join(f"Phase {number}" for number in phase.depends or ()) or "—"
        title = render.escape(phase.title) or "—"
        lines.append(f"| {phase.name} | {title} | {parallel} | {depends} | {len(phase.task_ids)} |")
    warnings = risk_problems(plan)
    if warnings:
        lines += ["", "> [!WARNING]", "> Read this before you merge (the plan runs as it says):"]
        lines += [f"> - {render.escape(problem.message, 400)}" for problem in warnings]
    lines += [
        "",
        f"**To apply it,** merge this pull request into `{base}`: memento's next run starts "
        "on the plan.",
        "",
        f"**To ask again,** change #{issue}'s body and comment `/memento plan` there once more: "
        "the architect drafts anew onto this branch and this pull request follows. Once the "
        "plan is merged, `/memento revise` on a blocked task's issue (or `memento plan "
        "revise`) changes it.",
    ]
    return "\n".join(lines) + "\n"


def status_description(plan: Plan) -> str:
    return f"The plan validates: {counts(plan)}"[:STATUS_DESCRIPTION_CHARS]


def refusal_comment(plan_path: str, branch: str) -> str:
    """A plan is there already: a draft never replaces one."""
    return _comment(
        f"memento drafted nothing: `{plan_path}` is already on `{branch}`, and a draft never "
        "replaces a plan. To change it, comment `/memento revise` on a blocked task's issue, "
        f"or run `memento plan revise`; to start over, remove the plan from `{branch}` first."
    )


def empty_spec_comment(issue: int) -> str:
    return _comment(
        f"memento drafted nothing: #{issue} has no body, and the body is the architect's spec. "
        "Write there what the project should do, then comment `/memento plan` again."
    )


def problems_comment(problems: Sequence[str], rounds: int, run_url: str | None) -> str:
    """The draft still had problems after the rounds: nothing was pushed, no pull request."""
    shown = list(problems[:PROBLEM_LINES])
    if len(problems) > PROBLEM_LINES:
        shown.append(f"… and {len(problems) - PROBLEM_LINES} more")
    text = "\n".join(shown)
    fence = "`" * max(3, _longest_backticks(text) + 1)
    where = f" ([the run]({run_url}) has the architect's log)" if run_url else ""
    return _comment(
        f"The architect's draft still had problems after {rounds} round"
        f"{'s' * (rounds != 1)}, so memento opened no pull request{where}:",
        "",
        f"{fence}text",
        text,
        fence,
        "",
        "Say more in this issue's body (what the tests are, how to run them), then comment "
        "`/memento plan` again.",
    )


def pull_refused_comment(branch: str, said: str, compare_url: str) -> str:
    """The draft is on its branch, but GitHub refused the workflow's token its pull request
    (a repository setting): the one thing to change, and the way to open it meanwhile."""
    return _comment(
        f"memento drafted the plan and pushed it to `{branch}`, but GitHub refused to open "
        "its pull request:",
        "",
        f"> {render.escape(said)}",
        "",
        f"To let memento open it, {guidance.PULLS_SETTING_ADVICE}, then comment "
        f"`/memento plan` again. Or [open the pull request yourself]({compare_url}).",
    )


def failure_comment(reason: str, run_url: str | None) -> str:
    """The architect's run failed (or broke the rules): nothing was pushed."""
    where = f" See [the run]({run_url})." if run_url else ""
    fence = "`" * max(3, _longest_backticks(reason) + 1)
    return _comment(
        f"memento drafted nothing: the architect's run did not finish.{where}",
        "",
        f"{fence}text",
        reason,
        fence,
    )


def _comment(*lines: str) -> str:
    return "\n".join([render.marker(render.GENERATED_KIND), *lines]) + "\n"


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)
