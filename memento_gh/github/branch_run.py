"""A workflow run on the ``memento`` branch, as steps that return values: checkout → kept in
step with the base (and what that made pushed, when GitHub may refuse it) → plan checked →
controls applied → held or not → tick result → pushed → synced → report. ``steps`` below
is that order, in one screen; each step returns its own lines for the report, and what a
later step needs of it. A new step is a function here and a line there.

Issue writes come after the push, so a failing API never loses a tick: the next run
converges. With several workers on the branch (the ``workers`` input above 1, one job of a
matrix each), the controls are pushed as soon as they are applied and the tick pushes each
claim before its agent starts, both through ``remote.SharedBranch``; the final push then
finds nothing left to push.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from memento_gh import files, remote
from memento_gh.controls.model import Control
from memento_gh.engine.records import TickResult
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.errors import UserError
from memento_gh.github import (
    applying,
    artifact,
    events,
    first_run,
    guidance,
    job_text,
    setup_checks,
    setup_issues,
)
from memento_gh.github.applying import Applied
from memento_gh.github.delivery import CiHold, Delivery, Kept
from memento_gh.github.failures import SyncError
from memento_gh.github.issue_sync import Synced, sync
from memento_gh.github.reporting import Report, finish
from memento_gh.github.run_context import RunContext, read_plan
from memento_gh.github.settings import Settings
from memento_gh.plan.model import ERROR
from memento_gh.workspace import Workspace

#: Makes the branch a run shares with the other workers, from the checkout and the settings.
ShareBranch = Callable[[Path, Settings], remote.SharedBranch]


def share_branch(root: Path, settings: Settings) -> remote.SharedBranch:
    token = settings.delivery.push_token or settings.token
    return remote.SharedBranch(root, branch=settings.branch, token=token)


class Said(Protocol):
    """A step's result: what it says in the report, in the order said."""

    @property
    def lines(self) -> tuple[str, ...]: ...


class Lines(NamedTuple):
    """A step that only says something."""

    lines: tuple[str, ...] = ()


class Checkout(NamedTuple):
    """The memento branch checked out, and how it reaches its remote."""

    delivery: Delivery
    #: Set when other workers share the branch (workers > 1, not a dry run).
    shared: remote.SharedBranch | None


class Setup(NamedTuple):
    """The first run's set-up checklist (none on later runs)."""

    checks: tuple[setup_checks.Check, ...] = ()
    lines: tuple[str, ...] = ()


class Checked(NamedTuple):
    valid: bool
    lines: tuple[str, ...] = ()


class Held(NamedTuple):
    """Whether the tick must wait (a base conflict, checks still running)."""

    held: bool
    lines: tuple[str, ...] = ()


class Ticked(NamedTuple):
    result: TickResult | None = None
    lines: tuple[str, ...] = ()


#: A run that stopped before the sync, or did not sync (a dry run, a failed push).
NOT_SYNCED = Synced()


class Pushed(NamedTuple):
    pushed: bool
    lines: tuple[str, ...] = ()


def steps(
    run: RunContext, request: events.Request, share: ShareBranch, *, sender_trusted: bool
) -> int:
    """The run's steps, in order. ``sender_trusted``: False for an untrusted edit of the
    dashboard, which still runs so that the boxes it ticked are refused, and unticked, by
    this run rather than left for a later one to find."""
    checkout = check_out(run, share)
    setup = first_run_checks(run)
    kept = can_push(run, checkout, keep_in_step(run, checkout))  # before any agent runs
    checked = check_plan(run)
    if not checked.valid:
        return report(run, "invalid-plan", None, (setup, kept, checked))
    # Read once: with other workers the controls may be applied more than once.
    ticks = applying.read_ticks(run)
    applied = applying.apply_request(run, request, ticks.ticks, checkout.shared)
    if applied.unpublished:
        return report(run, "push-conflict", None, (setup, kept, ticks, applied))
    ticking = request.kind == "tick" or request.tick_after or applied.tick_now
    held = before_tick(run, checkout, kept, ticking=ticking)
    ticked = tick(run, checkout) if ticking and not held.held else Ticked()
    outcome = "waiting" if held.held and ticking else _outcome(ticked.result, applied)
    untrusted = Lines() if sender_trusted else untrusted_edit(request, outcome)
    outcome = "untrusted" if untrusted.lines else outcome
    pushed = push(run, checkout)
    synced, proposed = NOT_SYNCED, Lines()
    if not pushed.pushed:
        outcome = "push-conflict"
    elif not run.settings.dry_run:
        tasks = ticked.result.tasks if ticked.result else ()
        synced = sync(run, checkout.delivery, kept, ticks.decided(), tasks, setup.checks)
        proposed = Lines(applying.architect_auto(run))
    if request.comment_id is not None and not run.settings.dry_run:
        acknowledge(run, request.comment_id, bool(applied.messages) or request.tick_after)
    said = (setup, kept, checked, ticks, applied, held, ticked, untrusted, pushed, synced, proposed)
    return report(run, outcome, ticked.result, said, synced)


# -- the steps --------------------------------------------------------------------------------


def check_out(run: RunContext, share: ShareBranch) -> Checkout:
    remote.use_bot_identity(run.root)
    # Where the token may go is read now, before any agent runs: the final push goes
    # there, whatever the agent writes into git's configuration.
    endpoint = remote.read_endpoint(run.root, token=run.settings.token)
    run.say(
        remote.prepare_branch(
            run.root, branch=run.settings.branch, base=run.settings.base, endpoint=endpoint
        )
    )
    shared = None
    if run.settings.workers > 1 and not run.settings.dry_run:
        shared = share(run.root, run.settings)
    return Checkout(Delivery(run.root, run.github, endpoint, run.settings), shared)


def first_run_checks(run: RunContext) -> Setup:
    """On the first run (no dashboard yet), everything memento can read of its set-up: it
    goes into the job summary, and the dashboard this run creates."""
    if run.settings.dry_run or not first_run.is_first_run(run.listing().issues):
        return Setup()
    try:
        checks = first_run.all_checks(run.settings, run.env, run.github, run.listing())
    except SyncError as error:
        return Setup(lines=(f"Set-up not checked ({error}).",))
    return Setup(checks, setup_checks.summary_lines(checks))


def keep_in_step(run: RunContext, checkout: Checkout) -> Kept:
    """The base merged in when it moved, a merged pull request followed; the merge of a
    pull request that a review gate held approves that gate."""
    kept = checkout.delivery.keep_in_step(lambda: run.listing().pulls)
    if kept.merged_gate is None:
        return kept
    approved = applying.apply_one(run, Control("approve"))
    return kept._replace(lines=kept.lines + approved.lines)


def can_push(run: RunContext, checkout: Checkout, kept: Kept) -> Kept:
    """Can this run's work be pushed? Asked before any agent runs, so that none is spent
    on a tick that cannot land: a merge of the base that changes workflow files is pushed
    now, and when GitHub refuses it, the run goes on without the base's changes (the
    returned ``held`` makes one issue say so)."""
    held = checkout.delivery.push_workflow_changes()
    if held is None:
        return kept
    if not run.settings.dry_run and setup_issues.is_open(
        setup_issues.WORKFLOWS_KIND, run.listing().issues
    ):
        line = (
            f"That merge was undone again: see the open issue about {held.base}'s workflow changes."
        )
        return kept._replace(lines=(*kept.lines, line), held=held)
    line = (
        f"That merge was undone: GitHub refused to push it (“{held.said}”), so this run goes "
        f"on without {held.base}'s new commits. To let them in, {guidance.PUSH_TOKEN_ADVICE}."
    )
    return kept._replace(lines=(*kept.lines, line), held=held)


def check_plan(run: RunContext) -> Checked:
    """A plan with errors is never ticked: each error becomes an annotation on its line."""
    from memento_gh.checks import check_plan_text

    layout, settings = run.layout, run.settings
    if not layout.plan.exists():
        raise UserError(
            f"{settings.plan_path} is missing on the {settings.branch} branch; run "
            "`memento init` and commit the plan"
        )
    _, problems = check_plan_text(
        files.read_text(layout.plan), files.read_optional(layout.project_map)
    )
    for problem in problems:
        level = "error" if problem.severity == ERROR else "warning"
        line = problem.line + 1
        run.say(job_text.annotation(level, problem.message, file=settings.plan_path, line=line))
    errors = sum(1 for problem in problems if problem.severity == ERROR)
    if errors:
        said = f"The plan has {errors} error(s); no tick ran. See the annotations."
        return Checked(False, (said,))
    return Checked(True)


def before_tick(run: RunContext, checkout: Checkout, kept: Kept, *, ticking: bool) -> Held:
    """Whether the tick must not run: the base conflicts, or ci-verify waits for checks
    (a failed check reopens its task instead). Records the pull request as the run sees
    it either way."""
    hold = CiHold(held=kept.conflict is not None)
    if ticking and not hold.held and run.settings.delivery.ci_verify:
        hold = checkout.delivery.hold_for_ci(read_plan(run.layout))
    reopened = applying.apply_controls(run, hold.controls)
    if not run.settings.dry_run:
        checkout.delivery.record(run.layout, run.listing().pulls, run.clock(), hold.checks)
    return Held(hold.held, hold.lines + reopened.lines)


def tick(run: RunContext, checkout: Checkout) -> Ticked:
    config = TickConfig(
        agent=run.tick_agent(),
        agent_cmd=run.settings.agent_cmd,
        worker_id=run.settings.worker_id,
        max_tasks=run.settings.max_tasks,
        shared=checkout.shared,
        model=run.settings.model,
        agent_args=run.settings.agent_args,
    )
    result = run_tick(run.layout, config, environ=run.env, say=run.say)
    return Ticked(result, (result.line[:1].upper() + result.line[1:],))


def untrusted_edit(request: events.Request, outcome: str) -> Lines:
    """An untrusted sender's edit that changed nothing says so (its boxes were refused)."""
    if outcome != "nothing":
        return Lines()
    who = f"@{request.actor.login}" if request.actor else "the sender"
    return Lines((f"{who} may not steer memento: their edit changed nothing.",))


def push(run: RunContext, checkout: Checkout) -> Pushed:
    """The push (with push-token when given): the token is handed to git only here."""
    if run.settings.dry_run:
        return Pushed(True, ("Dry run: nothing pushed, no issue written.",))
    branch = run.settings.branch
    try:
        pushed = remote.push(run.root, branch=branch, endpoint=checkout.delivery.pusher)
    except remote.PushRefused as refused:
        if "`workflows` permission" not in refused.said:
            raise
        # The tick changed a workflow file itself (can_push took care of the base's).
        raise UserError(
            f"GitHub refused the push to {branch} (“{refused.said}”): to push changes of "
            f".github/workflows/, {guidance.PUSH_TOKEN_ADVICE}"
        ) from None
    if pushed.pushed:
        return Pushed(True)
    run.say(job_text.annotation("warning", f"memento could not push: {pushed.reason}"))
    said = f"Not pushed: {pushed.reason}. The next run starts again from the remote branch."
    return Pushed(False, (said,))


def acknowledge(run: RunContext, comment_id: int, applied: bool) -> None:
    try:
        run.github.react(comment_id, "+1" if applied else "confused")
    except SyncError as error:
        run.say(job_text.annotation("warning", f"could not react to the comment: {error}"))


def report(
    run: RunContext,
    outcome: str,
    result: TickResult | None,
    said: Sequence[Said],
    synced: Synced = NOT_SYNCED,
) -> int:
    """The report: the steps' lines in order, the step outputs and the job summary."""
    report = Report(
        outcome,
        tuple(line for step in said for line in step.lines),
        result,
        Workspace(run.root).head(),
        synced.blocked_links,
        synced.dashboard_url,
        artifact.stage_run(run.layout.logs, run.logs, run.github.redact),
    )
    return finish(run.settings, read_plan(run.layout), report, run.say, run.github.redact)


def _outcome(result: TickResult | None, applied: Applied) -> str:
    if result is None:
        return "controls" if applied.messages else "nothing"
    if result.tasks:
        return result.tasks[0].outcome
    return result.status
