"""The set-up checklist, decided purely: what memento could read of its set-up (its token,
the agent's key, issues, the pull-request setting, the workflow-file changes it may push,
the protection of its branch), each as what works, what does not, and where to click.

The first run (no dashboard yet) and ``memento github --check`` read all of it
(``first_run.py``); it goes into the job summary and the dashboard. Later runs read only
what costs no request (the pull request, the set-up issues, the inputs), and each line
they did not read again is carried from the dashboard as it is, by its marker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from memento_gh.github import guidance, render

KIND = "setup"
AGENT_KEY, ISSUES, TOKEN, PULLS, WORKFLOWS, PROTECTION = (
    "agent-key",
    "issues",
    "token",
    "pull-request",
    "workflow-files",
    "protection",
)
ORDER = (AGENT_KEY, ISSUES, TOKEN, PULLS, WORKFLOWS, PROTECTION)
#: The variables each preset reads its key from (docs/github.md, "the agent on the runner").
AGENT_KEYS: Mapping[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("CODEX_API_KEY", "OPENAI_API_KEY"),
    "gemini": ("GEMINI_API_KEY",),
    "aider": ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"),
}
MARKS = {True: "✅", False: "❌", None: "❔"}


class Check(NamedTuple):
    kind: str
    ok: bool | None  # None: memento cannot tell yet
    said: str  # what works or what does not, and where to click


def agent_key(agent: str | None, present: Iterable[str]) -> Check | None:
    """Whether the step's env holds the preset's key (None: a command agent, or a preset
    whose provider memento cannot name)."""
    keys = AGENT_KEYS.get((agent or "").strip().lower())
    if keys is None:
        return None
    if set(keys) & set(present):
        return Check(AGENT_KEY, True, f"The agent's key is in the step's env ({keys[0]}).")
    return Check(
        AGENT_KEY,
        False,
        f"No {' or '.join(keys)} in the step's env: add it as a repository secret "
        f"({guidance.SECRETS}) and pass it in the memento step's `env:`.",
    )


def issues(has_issues: bool) -> Check:
    if has_issues:
        return Check(ISSUES, True, "Issues are on: the dashboard and blocked tasks live there.")
    return Check(ISSUES, False, f"Issues are off: turn them on in {guidance.ISSUES_SETTING}.")


def token(login: str, can_push: bool | None) -> Check:
    """Whose token memento uses, and whether GitHub says it may push (None: the workflow's
    token, whose permissions are the job's ``permissions:`` block, not readable)."""
    who = render.escape(login)
    if can_push is False:
        return Check(TOKEN, False, f"The token ({who}) may not push: it needs contents: write.")
    where = "the job's `permissions:` say what it may do" if can_push is None else "it may push"
    return Check(TOKEN, can_push, f"memento writes as {who}: {where}.")


def pulls(mode: str, open_pull: bool, refused: bool) -> Check:
    if mode == "off":
        return Check(PULLS, True, "`pull-request: off`: memento opens no pull request.")
    if refused:
        return Check(
            PULLS,
            False,
            f"GitHub refuses memento's pull request: {guidance.PULLS_SETTING_ADVICE} "
            "(the memento issue about it says more).",
        )
    if open_pull:
        return Check(PULLS, True, "memento's pull request is open.")
    return Check(
        PULLS,
        None,
        "memento opens its pull request after its first pushed work, which needs "
        f"{guidance.WORKFLOW_PERMISSIONS} → “{guidance.PULLS_SETTING}” ticked.",
    )


def workflows(push_token: bool, held: bool) -> Check:
    if held:
        return Check(
            WORKFLOWS,
            False,
            f"The base's workflow changes cannot reach the branch: {guidance.PUSH_TOKEN_ADVICE}.",
        )
    if push_token:
        return Check(
            WORKFLOWS,
            True,
            f"A push-token pushes (it needs {guidance.WORKFLOWS_PERMISSION} to bring in "
            "workflow changes); your CI runs on memento's commits.",
        )
    return Check(
        WORKFLOWS,
        None,
        "No push-token: your CI does not run on memento's pushes, and a change of "
        ".github/workflows/ on the base cannot be merged into the branch (memento says so "
        f"in an issue when it happens); to have both, {guidance.PUSH_TOKEN_ADVICE}.",
    )


def protection(branch: str, force_blocked: bool) -> Check:
    if force_blocked:
        return Check(
            PROTECTION,
            False,
            f"{render.code_span(branch)} refuses force pushes: after a merged pull request "
            "memento merges the base in instead of restarting the branch; to restart it, "
            f"{guidance.FORCE_PUSH_ADVICE}.",
        )
    shown = render.code_span(branch)
    return Check(PROTECTION, True, f"{shown} takes memento's pushes, force pushes included.")


def lines(checks: Sequence[Check]) -> tuple[str, ...]:
    """The checklist as Markdown lines, one a check, each with its marker (what later runs
    carry), in the checklist's order."""
    ordered = sorted(checks, key=lambda check: ORDER.index(check.kind))
    return tuple(
        f"- {MARKS[check.ok]} {check.said} {render.marker(KIND, check.kind)}" for check in ordered
    )


def summary_lines(checks: Sequence[Check]) -> tuple[str, ...]:
    """The checklist for the job summary and the log, one sentence a check."""
    ordered = sorted(checks, key=lambda check: ORDER.index(check.kind))
    return tuple(f"Set-up {MARKS[check.ok]} {check.said}" for check in ordered)


def carried(body: str | None, fresh: Sequence[str]) -> tuple[str, ...]:
    """The checklist lines of ``body`` (a dashboard), with ``fresh`` lines in place of
    those of their kinds, in the checklist's order."""
    found: dict[str, str] = {}
    for line in [*(body or "").splitlines(), *fresh]:
        for kind in ORDER:
            if line.startswith("- ") and line.rstrip().endswith(render.marker(KIND, kind)):
                found[kind] = line.rstrip()
    return tuple(found[kind] for kind in ORDER if kind in found)
