"""The issues that say a repository setting stands in memento's way, decided purely: one
issue per kind of refusal, opened once (found by its marker, like every memento issue),
brought up to date while it lasts, closed with a comment once it is resolved. So a refusal
is said in one place, not as a warning on every run.

- ``setup-workflows``: the base branch changed files under ``.github/workflows/``, which
  GitHub refuses the workflow's token to push, so memento goes on without the base's changes.
- ``setup-pull-requests``: GitHub refuses memento's token the pull request (the repository's
  Actions setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from memento_gh.github import guidance, reconcile, render

WORKFLOWS_KIND = "setup-workflows"
PULLS_KIND = "setup-pull-requests"


class WorkflowHold(NamedTuple):
    """The base's changes held out of the branch: GitHub refused to let them be pushed."""

    base: str
    branch: str
    files: tuple[str, ...]  # the workflow files the merge changed
    said: str  # GitHub's words


class PullRefusal(NamedTuple):
    """GitHub refused to open memento's pull request."""

    base: str
    branch: str
    said: str  # GitHub's words
    compare_url: str  # where a person opens it by hand


def workflows_text(hold: WorkflowHold) -> render.IssueText:
    files = ", ".join(render.code_span(name) for name in hold.files)
    body = [
        render.marker(WORKFLOWS_KIND),
        f"`{hold.base}` changed {files}, and GitHub refused memento's push of that change "
        f"to `{hold.branch}`:",
        "",
        _quote(hold.said),
        "",
        "GitHub lets no token push a change under `.github/workflows/` unless it has the "
        "`workflows` permission, which the workflow's `GITHUB_TOKEN` never has. So memento "
        f"goes on ticking on `{hold.branch}` without `{hold.base}`'s new commits (its pull "
        "request can still be merged).",
        "",
        f"**To let them in,** {guidance.PUSH_TOKEN_ADVICE}.",
        "",
        f"The first run that can push the merge brings `{hold.base}` in and closes this issue.",
    ]
    title = f"memento: {hold.base}'s workflow changes cannot reach {hold.branch}"
    return render.IssueText(title, "\n".join(body) + "\n", (render.LABEL,))


def pulls_text(refusal: PullRefusal) -> render.IssueText:
    body = [
        render.marker(PULLS_KIND),
        f"GitHub refused to open memento's pull request from `{refusal.branch}` to "
        f"`{refusal.base}`:",
        "",
        _quote(refusal.said),
        "",
        "memento opens it with the workflow's `GITHUB_TOKEN`, and GitHub lets that token "
        f"open pull requests only when the repository allows it: {guidance.PULLS_SETTING_ADVICE}.",
        f"Or set the action's `pull-request: off` and [open it yourself]({refusal.compare_url}).",
        "",
        "memento goes on ticking; the first run after the change opens the pull request and "
        "closes this issue.",
    ]
    title = "memento: GitHub refuses memento's pull request"
    return render.IssueText(title, "\n".join(body) + "\n", (render.LABEL,))


def operations(
    kind: str,
    text: render.IssueText | None,
    issues: Sequence[reconcile.IssueLike],
    *,
    resolved: bool,
) -> list[reconcile.Operation]:
    """The one issue of ``kind``: opened (or reopened, or brought up to date) while
    ``text`` says there is a refusal; closed with a comment once ``resolved``."""
    current = _current(kind, issues)
    if text is not None:
        if current is None:
            return [reconcile.Create(text)]
        if current.state != "open":
            return [reconcile.Edit(current.number, text.body, "open", "reopened")]
        if current.body.rstrip("\n") != text.body.rstrip("\n"):
            return [reconcile.Edit(current.number, text.body)]
        return []
    if resolved and current is not None and current.state == "open":
        generated = render.marker(render.GENERATED_KIND)
        closing = f"{generated}\n\nResolved: memento got past this refusal. Closing.\n"
        return [
            reconcile.Reply(current.number, closing),
            reconcile.Edit(current.number, state="closed", state_reason="completed"),
        ]
    return []


def is_open(kind: str, issues: Sequence[reconcile.IssueLike]) -> bool:
    current = _current(kind, issues)
    return current is not None and current.state == "open"


def _current(kind: str, issues: Sequence[reconcile.IssueLike]) -> reconcile.IssueLike | None:
    """The issue of ``kind``: an open one first, else the newest."""
    mark = render.marker(kind)
    found = [issue for issue in issues if (issue.body or "").startswith(mark)]
    found.sort(key=lambda issue: (issue.state == "open", issue.number))
    return found[-1] if found else None


def _quote(said: str) -> str:
    """GitHub's words as a quote, as text: nothing in them becomes markup or a mention."""
    return f"> {render.escape(' '.join(said.split()))}"
