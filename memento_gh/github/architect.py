"""The architect in a workflow run: ``/memento revise`` on a blocked task's issue runs it
and posts its proposal as a comment; ``/memento approve`` lands the latest proposal on that
issue, checked again against the plan as it is then. The trust gate has let the comment's
author through before either is called."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from memento_gh import files
from memento_gh.architect import flows
from memento_gh.architect.run import AgentSettings
from memento_gh.controls.model import SOURCE_TRAILER, Control
from memento_gh.errors import UserError
from memento_gh.github import render
from memento_gh.github.failures import SyncError
from memento_gh.github.revision import latest_proposal, proposal_comment
from memento_gh.layout import Layout
from memento_gh.plan.meta import Settings
from memento_gh.plan.model import BLOCKED, Plan
from memento_gh.plan.risks import risks_added
from memento_gh.plan.scanner import parse
from memento_gh.redact import hidden_repr

if TYPE_CHECKING:
    from memento_gh.github.answers import Comment
    from memento_gh.github.sync import GitHub

#: Rounds the architect gets in a workflow run.
ROUNDS = 3


class Context(NamedTuple):
    """What the architect needs of the run."""

    layout: Layout
    github: GitHub
    env: Mapping[str, str]
    clock: Callable[[], datetime]
    dry_run: bool
    #: The agent the action's inputs choose, checked (UserError when none can run).
    agent: Callable[[], tuple[str, str | None]]

    def __repr__(self) -> str:
        return hidden_repr(self, ("env",))


def carry_out(control: Control, context: Context) -> str:
    """``/memento revise`` or ``/memento approve`` on the issue of ``control.task``."""
    from memento_gh.github import reconcile

    found = reconcile.find_issues(context.github.memento_issues()).tasks.get(control.task or "")
    if found is None:
        raise UserError(f"{control.task} has no memento issue to hold the proposal")
    if control.action == "approve":
        return approve(
            control,
            layout=context.layout,
            github=context.github,
            issue=found.number,
            env=context.env,
            clock=context.clock,
        )
    return propose(
        control,
        layout=context.layout,
        github=context.github,
        issue=found.number,
        agent=context.agent(),
        env=context.env,
        clock=context.clock,
        dry_run=context.dry_run,
    )


def propose(
    control: Control,
    *,
    layout: Layout,
    github: GitHub,
    issue: int,
    agent: tuple[str, str | None],
    env: Mapping[str, str],
    clock: Callable[[], datetime],
    dry_run: bool,
) -> str:
    """Run the architect on ``control.task`` and post its proposal on issue ``issue``."""
    text = files.read_optional(layout.plan) or ""
    timeout = (parse(text).settings if text else Settings()).agent_timeout
    settings = AgentSettings(agent[0], agent[1], timeout, dict(env))
    revision = flows.propose_revision(
        layout, settings, task=control.task, why=control.text or None, rounds=ROUNDS, now=clock()
    )
    flows.discard_revision(layout)  # the comment holds it from now on
    if not revision.diff:
        return f"the architect proposed no change for {control.task}"
    redact = github.redact
    warnings = [
        redact(problem.message) for problem in risks_added(parse(text), parse(revision.text))
    ]
    try:
        # The plan rides in the comment packed, where redacting the comment's text can't
        # see it: redact what is packed, and the diff with it.
        body = proposal_comment(
            control.task or "", redact(revision.diff), redact(revision.text), warnings
        )
    except ValueError as error:
        raise UserError(str(error)) from None
    if not dry_run:
        github.comment(issue, body)
    said = f"the architect proposed a revision of {control.task} on #{issue}"
    if warnings:
        said += f"; it waits for a person's approval, for it has {len(warnings)} warning" + (
            f"s, first: {warnings[0]}" if len(warnings) > 1 else f": {warnings[0]}"
        )
    return said


def approve(
    control: Control,
    *,
    layout: Layout,
    github: GitHub,
    issue: int,
    env: Mapping[str, str],
    clock: Callable[[], datetime],
) -> str:
    """Land the newest proposal memento posted on issue ``issue``."""
    plan = latest_proposal(memento_wrote(github.issue_comments(issue), github.own_login()))
    if plan is None:
        raise UserError(
            f"there is no proposal on #{issue} to approve; comment `/memento revise` first"
        )
    revision = flows.Revision(plan, "", control.task)
    trailers = (
        f"Memento-Control: approve\n{SOURCE_TRAILER}: {' '.join((control.source or '').split())}\n"
    )
    sha = flows.apply_revision(layout, revision, clock(), dict(env), trailers)
    return f"revised the plan ({control.task}) (committed {sha[:7]})"


def memento_wrote(comments: Sequence[Comment], own_login: str) -> list[str]:
    """The bodies of the comments memento itself posted, oldest first.

    A proposal is trusted by its author alone: any bot or GitHub App that may comment can
    copy memento's markers (and show one diff while carrying another plan), so only
    comments by the login memento writes as (``GitHub.own_login``, its token's user) count."""
    return [
        comment.body
        for comment in comments
        if comment.login == own_login and render.is_generated(comment.body)
    ]


def auto_propose(plan: Plan, context: Context) -> str | None:
    """Meta ``architect: auto``: a proposal for the first blocked task whose issue has none
    yet; it waits there for approval like any other. One per run: each costs an agent run.
    What happened, in a sentence (None: nothing to do)."""
    from memento_gh.github import reconcile

    try:
        issues = reconcile.find_issues(context.github.memento_issues()).tasks
        for task in plan.tasks:
            if task.marker != BLOCKED or task.id not in issues:
                continue
            number = issues[task.id].number
            comments = context.github.issue_comments(number)
            if latest_proposal(memento_wrote(comments, context.github.own_login())) is not None:
                continue
            return carry_out(Control("revise", task.id, f"{task.id} is blocked"), context)
    except (UserError, SyncError) as error:
        return f"no revision proposed: {error}"
    return None
