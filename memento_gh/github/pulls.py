"""Delivery through one pull request, decided purely: its body, whether to create or edit
it, the merged pull request a run has still to follow, and the issue of a base branch that
conflicts with the memento branch.

memento's pull request carries the ``memento`` label, so the issue listing every run makes
already holds it (its body, state and whether it was merged): finding it costs nothing,
and a run edits it only when the body it would write differs. The body is deterministic
(no clock inside) for that comparison.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol

from memento_gh.github import reconcile, render
from memento_gh.plan.model import BLOCKED, DONE, Plan

PULL_KIND = "pull-request"
CONFLICT_KIND = "base-conflict"
PULL_MARKER = render.marker(PULL_KIND)
CONFLICT_MARKER = render.marker(CONFLICT_KIND)
#: Below this marker, a pull request's body is people's own text, which memento keeps as it
#: is: what was there when memento took over a pull request someone opened by hand.
TEXT_KIND = "pull-request-text"
TEXT_MARKER = render.marker(TEXT_KIND)
MODES = ("draft", "ready", "off")
#: The wait a base conflict puts on ticking (the run's outcome is ``waiting``).
BASE_CONFLICT = "base_conflict"
_COMPLETE = re.compile(r"memento: complete (?P<task>T-\d+)\b")
MERGING = (
    "Merge it whichever way you like (a merge commit, a squash or a rebase): memento "
    "carries on from the merged head, and the next pull request holds only the work after it."
)


class PullLike(Protocol):
    """A pull request as the issue listing shows it (sync.PullRequest has these fields)."""

    @property
    def number(self) -> int: ...
    @property
    def url(self) -> str: ...
    @property
    def draft(self) -> bool: ...
    @property
    def body(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def merged(self) -> bool: ...


class PullView(NamedTuple):
    """Everything the pull request's body shows, gathered by the caller."""

    plan: Plan
    branch: str
    base: str
    #: (commit SHA, subject) of the commits on the branch the base lacks, oldest first.
    commits: Sequence[tuple[str, str]]
    blocked_issues: Mapping[str, str]  # task id -> the task's issue URL
    dashboard_url: str | None
    #: One line on what the work cost, when the status log records it (None: left out).
    spend: str | None = None
    #: The phase whose review gate holds the plan ("Phase 2"), or None.
    review: str | None = None


class CreatePull(NamedTuple):
    title: str
    body: str
    draft: bool


class EditPull(NamedTuple):
    number: int
    body: str


class AdoptPull(NamedTuple):
    """Take over the open pull request someone opened by hand from the branch to the base
    (GitHub allows one per pair, so memento cannot open its own): marker and label added,
    memento's part on top, their text kept below it."""

    number: int
    url: str
    body: str


PullOperation = CreatePull | EditPull


def pull_title(branch: str) -> str:
    return f"memento: the work on {branch}"


def completed_in(commits: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(task id, commit SHA) of each task a commit completed, in commit order; a task
    completed twice (retried after a failed check) is named at its last commit."""
    found: dict[str, str] = {}
    for sha, subject in commits:
        match = _COMPLETE.match(subject)
        if match:
            found.pop(match["task"], None)
            found[match["task"]] = sha
    return list(found.items())


def spend_of(plan: Plan) -> str | None:
    """What every run cost so far, from the ledger in the plan (None: nothing recorded)."""
    total = plan.settings.spend_total
    return None if total.empty else f"{render.spend_of_run(total)} so far"


def pull_body(view: PullView) -> str:
    plan = view.plan
    tasks = plan.tasks
    done = sum(1 for task in tasks if task.marker == DONE)
    blocked = [task for task in tasks if task.marker == BLOCKED]
    lines = [
        PULL_MARKER,
        f"memento's work on `{view.branch}`, to merge into `{view.base}`.",
        "",
        f"**Progress:** {done} of {len(tasks)} tasks done"
        + (f", {len(blocked)} blocked" if blocked else ""),
    ]
    if view.spend:
        lines.append(f"**Spend:** {render.escape(view.spend)}")
    if view.review:
        lines.append(review_line(view.review))
    completed = completed_in(view.commits)
    lines += ["", "### Completed in this pull request", ""]
    if not completed:
        lines.append("None yet: the commits so far are memento's own bookkeeping.")
    for task_id, sha in completed:
        task = plan.task(task_id)
        what = render.escape(task.description) if task else "(no longer in the plan)"
        lines.append(f"- {task_id} {what} — {sha}")
    if blocked:
        lines += ["", "### Blocked", ""]
        for task in blocked:
            link = view.blocked_issues.get(task.id)
            where = f" — [its issue]({link})" if link else ""
            lines.append(f"- {task.id} {render.escape(task.description)}{where}")
    lines.append("")
    if view.dashboard_url:
        lines.append(f"Progress and controls: [the dashboard]({view.dashboard_url}).")
    lines.append(MERGING)
    return "\n".join(lines) + "\n"


def shown(pull: PullLike) -> tuple[int, str, str]:
    """(number, URL, state) for the dashboards: draft, open, merged or closed."""
    if pull.merged:
        state = "merged"
    elif pull.state != "open":
        state = "closed"
    else:
        state = "draft" if pull.draft else "open"
    return pull.number, pull.url, state


def review_line(phase: str) -> str:
    return (
        f"**Review:** {phase} is done and waits for your review: merge this pull request, "
        "or comment `/memento approve` on the dashboard, to let the next phase start."
    )


def asks_review(pulls_listed: Sequence[PullLike], view: PullView) -> bool:
    """The body about to be written asks for a review the open pull request's does not:
    the run marks it ready and requests the reviewers (once per gate)."""
    if view.review is None:
        return False
    current = open_pull(pulls_listed)
    return current is None or review_line(view.review) not in current.body


def is_memento_pull(body: str | None) -> bool:
    """memento writes its marker on the first line; one further down is quoted text."""
    return (body or "").split("\n", 1)[0].strip() == PULL_MARKER


def open_pull(pulls: Sequence[PullLike]) -> PullLike | None:
    """memento's open pull request: the oldest open one with the marker."""
    found = [pull for pull in pulls if pull.state == "open" and is_memento_pull(pull.body)]
    return min(found, key=lambda pull: pull.number) if found else None


def last_merged(pulls: Sequence[PullLike]) -> PullLike | None:
    """memento's most recently made pull request that was merged, if any."""
    found = [pull for pull in pulls if pull.merged and is_memento_pull(pull.body)]
    return max(found, key=lambda pull: pull.number) if found else None


def pull_operation(pulls: Sequence[PullLike], view: PullView, mode: str) -> PullOperation | None:
    """Create the pull request, edit its body, or nothing (``mode`` off, or no change)."""
    if mode == "off":
        return None
    current = open_pull(pulls)
    if current is None:
        return CreatePull(pull_title(view.branch), pull_body(view), draft=mode == "draft")
    body = with_their_text(pull_body(view), current.body)
    if current.body.rstrip("\n") == body.rstrip("\n"):
        return None
    return EditPull(current.number, body)


def adoption(found: PullLike, create: CreatePull) -> AdoptPull:
    """What taking over ``found`` writes instead of ``create`` (same head and base)."""
    if is_memento_pull(found.body):  # memento's own, which a failed label left unlisted
        return AdoptPull(found.number, found.url, with_their_text(create.body, found.body))
    theirs = (found.body or "").strip("\n")
    if not theirs:
        return AdoptPull(found.number, found.url, create.body)
    return AdoptPull(found.number, found.url, f"{create.body}\n{TEXT_MARKER}\n{theirs}\n")


def with_their_text(body: str, current: str | None) -> str:
    """memento's ``body`` followed by the text people own in ``current``, if any."""
    at = (current or "").find("\n" + TEXT_MARKER + "\n")
    return body if at < 0 else body + (current or "")[at:]


class Conflict(NamedTuple):
    """The base branch cannot be merged into the branch: these files conflict."""

    branch: str
    base: str
    files: tuple[str, ...]


def conflict_text(conflict: Conflict) -> render.IssueText:
    files = ", ".join(render.code_span(name) for name in conflict.files) or "(git named none)"
    branch, base = conflict.branch, conflict.base
    body = "\n".join(
        [
            CONFLICT_MARKER,
            f"`{base}` moved, and it no longer merges cleanly into `{branch}`: memento "
            "stopped ticking until it does.",
            "",
            f"Conflicting files: {files}.",
            "",
            f"Resolve it on `{branch}` (memento commits nothing until then):",
            "",
            "```sh",
            f"git fetch origin && git switch {branch} && git pull --ff-only",
            f"git merge origin/{base}       # fix the files named above, then:",
            f"git add -A && git commit && git push origin {branch}",
            "```",
            "",
            "The next run finds the branch merging cleanly, closes this issue and ticks again.",
        ]
    )
    title = f"memento: {base} conflicts with {branch}"
    return render.IssueText(title, body + "\n", (render.LABEL,))


def conflict_issue(issues: Sequence[reconcile.IssueLike]) -> reconcile.IssueLike | None:
    """The base-conflict issue: an open one first, else the newest."""
    found = [issue for issue in issues if (issue.body or "").startswith(CONFLICT_MARKER)]
    found.sort(key=lambda issue: (issue.state == "open", issue.number))
    return found[-1] if found else None


def conflict_operations(
    conflict: Conflict | None, issues: Sequence[reconcile.IssueLike]
) -> list[reconcile.Operation]:
    """The one base-conflict issue: opened (or reopened, or brought up to date) while the
    base conflicts; closed with a comment once the branch merges cleanly."""
    current = conflict_issue(issues)
    if conflict is not None:
        text = conflict_text(conflict)
        if current is None:
            return [reconcile.Create(text)]
        if current.state != "open":
            return [reconcile.Edit(current.number, text.body, "open", "reopened")]
        if current.body.rstrip("\n") != text.body.rstrip("\n"):
            return [reconcile.Edit(current.number, text.body)]
        return []
    if current is not None and current.state == "open":
        generated = render.marker(render.GENERATED_KIND)
        closing = f"{generated}\n\nThe branch merges cleanly again; memento ticks on. Closing.\n"
        return [
            reconcile.Reply(current.number, closing),
            reconcile.Edit(current.number, state="closed", state_reason="completed"),
        ]
    return []
