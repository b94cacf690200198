"""The controls step of a run: the boxes ticked in the dashboard, each decided by who ticked
it (``boxes.py``); the event's own controls; then the comments a dropped run never saw (the
workflow's concurrency group keeps one pending run, so a burst of events loses some). Also
the controls other steps ask for: the approve of a merged review gate, ci-verify's reopen.

Each function returns what it applied and what the report says about it (``Applied``).
With other workers on the branch, the controls are pushed as soon as they are applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from memento_gh import remote
from memento_gh.controls.apply import apply_control, record_refused
from memento_gh.controls.model import SOURCE_TRAILER, Control
from memento_gh.errors import UserError
from memento_gh.github import boxes, events, job_text, reconcile, render
from memento_gh.github.failures import SyncError
from memento_gh.github.run_context import RunContext, read_plan
from memento_gh.workspace import Workspace

if TYPE_CHECKING:
    from memento_gh.github.answers import Comment

#: How far back a run looks for comments it may have missed: longer than the gap between
#: two scheduled runs, short enough to keep the listing to one page.
CATCH_UP = timedelta(hours=24)


class Applied(NamedTuple):
    """What controls did: a sentence for each one applied, what the report says about each
    (applied, refused, not applied), whether a trusted person ticked the "Run a tick now"
    box, and whether they could not be pushed to the shared branch (the run stops there)."""

    messages: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    tick_now: bool = False
    unpublished: bool = False

    def then(self, other: Applied) -> Applied:
        return Applied(
            self.messages + other.messages,
            self.lines + other.lines,
            self.tick_now or other.tick_now,
            self.unpublished or other.unpublished,
        )


class DashboardTicks(NamedTuple):
    """The boxes ticked in the dashboard when the run read it, with who ticked each."""

    url: str
    ticks: tuple[boxes.Tick, ...]


class ReadTicks(NamedTuple):
    """The dashboard's ticked boxes (None: none, or not known who ticked them)."""

    ticks: DashboardTicks | None = None
    lines: tuple[str, ...] = ()

    def decided(self) -> frozenset[render.Box]:
        """The boxes this run applies or refuses, which it may untick."""
        return frozenset(tick.box for tick in self.ticks.ticks) if self.ticks else frozenset()


def read_ticks(run: RunContext) -> ReadTicks:
    """The boxes ticked in the dashboard, each with who ticked it; none when GitHub cannot
    say who ticked them (the dashboard is then left as it is, for a later run to decide
    them). The history costs a request only when a box is ticked."""
    if run.settings.dry_run:
        return ReadTicks()
    try:
        dashboard = reconcile.find_issues(run.listing().issues).dashboard
        if dashboard is None or not render.ticked_boxes(dashboard.body):
            return ReadTicks()
        history = run.github.body_history(dashboard.number)
    except SyncError as error:
        run.say(job_text.annotation("warning", f"dashboard boxes not read: {error}"))
        line = f"Dashboard boxes not read ({error}); a later run decides them."
        return ReadTicks(lines=(line,))
    return ReadTicks(DashboardTicks(dashboard.url, tuple(boxes.ticks(history))))


def apply_request(
    run: RunContext,
    request: events.Request,
    ticks: DashboardTicks | None,
    shared: remote.SharedBranch | None,
) -> Applied:
    """Apply the dashboard's boxes, the event's controls, then any missed comment. With
    other workers on the branch, they are published before anything else."""
    if shared is None:
        return _apply_all(run, request, ticks)
    return _publish(run, request, ticks, shared)


def _publish(
    run: RunContext,
    request: events.Request,
    ticks: DashboardTicks | None,
    shared: remote.SharedBranch,
) -> Applied:
    """Apply the controls on the shared branch's tip and push them at once, before the
    tick. Rebasing a plan edit onto a plan another worker has changed since could undo
    its claim or revive a task it finished; so when the push is rejected, the local
    commits are dropped for the new tip and the controls applied again there (what the
    dropped attempt said is dropped with it). Nothing is applied twice: the dropped
    commits never landed, a mode already set changes nothing, and a comment another run
    applied meanwhile is in the new tip's history (which the catch-up reads) and its notes
    (which record each note's source)."""
    run.say(shared.sync())
    for attempt in range(1, shared.attempts + 1):
        if attempt > 1:
            shared.wait(attempt - 1)
            shared.refresh()
        applied = _apply_all(run, request, ticks)
        if shared.publish():
            return applied
    shared.refresh()  # leave nothing for the final push to rebase
    reason = (
        f"the {run.settings.branch} branch moved {shared.attempts} times while this run "
        "pushed its controls"
    )
    run.say(job_text.annotation("warning", f"memento could not push: {reason}"))
    line = (
        f"Not applied: {reason}; nothing was pushed. A comment is caught up by the next "
        "run; run a command or tick a box again."
    )
    return Applied(lines=(line,), unpublished=True)


def _apply_all(run: RunContext, request: events.Request, ticks: DashboardTicks | None) -> Applied:
    # The boxes first: a box still ticked was ticked before this run's event, or the
    # event's own run would have been the one to find it.
    applied = _apply_boxes(run, ticks).then(apply_controls(run, request.controls))
    if request.comment_id is None and not run.settings.dry_run:
        applied = applied.then(_catch_up(run))
    return applied


def _apply_boxes(run: RunContext, ticks: DashboardTicks | None) -> Applied:
    """Apply each box a trusted person ticked; refuse, with a record, each box anybody
    else may have ticked. A box a run decided already (its source is in the branch's
    history) is only unticked."""
    applied = Applied()
    if ticks is None:
        return applied
    seen = Workspace(run.root).trailer_values(SOURCE_TRAILER, since=CATCH_UP * 2)
    for tick in ticks.ticks:
        if boxes.decided(seen, ticks.url, tick):
            continue
        source = boxes.source(ticks.url, tick)
        control = (tick.box.control or Control("tick"))._replace(source=source)
        strangers = [who for who in tick.tickers if who is None or not run.trusts(who)]
        if strangers:
            applied = applied.then(_refuse(run, control, boxes.refusal(tick, strangers)))
        elif tick.box.is_tick:
            line = f"Applied: {boxes.describe(tick.box)}"
            applied = applied.then(Applied(lines=(line,), tick_now=True))
        else:
            applied = applied.then(apply_one(run, control))
    return applied


def apply_controls(run: RunContext, controls: Iterable[Control]) -> Applied:
    applied = Applied()
    for control in controls:
        applied = applied.then(apply_one(run, control))
    return applied


def apply_one(run: RunContext, control: Control) -> Applied:
    if control.action in events.ARCHITECT_COMMANDS and control.task is not None:
        return _architect(run, control)  # an approve without a task: the review gate
    before = Workspace(run.root).head() if control.source else None
    try:
        message = apply_control(run.layout, control, clock=run.clock, redact=run.github.redact)
    except UserError as error:
        _record_refused(run, control, str(error))
        return Applied(lines=(f"Not applied: {control.action} — {error}",))
    if before is not None and Workspace(run.root).head() == before:
        # It changed nothing (a pause while paused), so no commit carries its source:
        # record that it was read, or a later run would apply it again (after a resume).
        _record_refused(run, control, "it changed nothing")
    return Applied((message,), (f"Applied: {message}",))


def _refuse(run: RunContext, control: Control, reason: str) -> Applied:
    _record_refused(run, control, reason)
    return Applied(lines=(f"Refused: {reason}",))


def _record_refused(run: RunContext, control: Control, reason: str) -> None:
    record_refused(run.layout, control, reason, clock=run.clock, redact=run.github.redact)


def _architect(run: RunContext, control: Control) -> Applied:
    """``/memento revise`` or ``/memento approve`` (``github/architect.py``)."""
    from memento_gh.github import architect

    try:
        message = architect.carry_out(control, _architect_context(run))
    except UserError as error:
        _record_refused(run, control, str(error))
        return Applied(lines=(f"Not applied: {control.action} — {error}",))
    if control.action == "revise":  # the comment is the proposal; the record says it ran
        _record_refused(run, control, f"{message}; approve it there")
    return Applied((message,), (f"Applied: {message}",))


def architect_auto(run: RunContext) -> tuple[str, ...]:
    """Meta ``architect: auto``: propose a revision for a blocked task, never apply it."""
    from memento_gh.github import architect

    plan = read_plan(run.layout)
    if plan is None or plan.settings.architect != "auto":
        return ()
    said = architect.auto_propose(plan, _architect_context(run))
    return (f"Architect: {said}",) if said else ()


def _architect_context(run: RunContext) -> Any:
    from memento_gh.github import architect

    return architect.Context(
        run.layout,
        run.github,
        run.env,
        run.clock,
        run.settings.dry_run,
        lambda: (run.tick_agent(), run.settings.agent_cmd),
    )


def _catch_up(run: RunContext) -> Applied:
    """Comments on memento issues that no run has applied yet (their runs were dropped
    by the concurrency group): apply them now, oldest first."""
    found = reconcile.find_issues(run.listing().issues)
    targets = {issue.number: task for task, issue in found.tasks.items()}
    globals_ = {issue.number for issue in (found.dashboard, found.breaker) if issue}
    seen = Workspace(run.root).trailer_values(SOURCE_TRAILER, since=CATCH_UP * 2)
    applied = Applied()
    since = run.clock() - CATCH_UP
    comments = sorted(run.github.recent_comments(since), key=lambda c: c.created)
    for comment in comments:
        if comment.issue_number not in targets and comment.issue_number not in globals_:
            continue
        if comment.created < since:
            # Listed because it was edited lately: an old comment's own run read it,
            # and the record of that (further back than ``seen`` reaches) is no
            # reason to apply it again with its new text.
            continue
        if any(source.startswith(comment.url + " ") for source in seen):
            continue
        applied = applied.then(_apply_comment(run, comment, targets.get(comment.issue_number)))
    return applied


def _apply_comment(run: RunContext, comment: Comment, task: str | None) -> Applied:
    """Catch up on one comment: its controls, and the tick it asks for, answered with a
    reaction as its own run would have. A bare `/memento tick` records nothing in the
    branch, so memento's reaction is what says it was answered."""
    actor = events.Actor(comment.login, comment.association, comment.is_bot)
    if not run.trusts(actor):
        return Applied()
    source = events.comment_source(comment.url, comment.login, comment.association)
    try:
        controls, tick_after = events.parse_comment(comment.body, task=task, source=source)
    except UserError as error:
        # Its own run answered it with a "confused" reaction, or was dropped: the
        # comment names no command memento knows, so there is nothing to catch up on.
        return Applied(lines=(f"Skipped a comment ({comment.url}): {error}",))
    if not controls and (not tick_after or run.github.reacted(comment.id)):
        return Applied()
    applied = apply_controls(run, controls)
    if tick_after:
        line = f"Applied: a tick, asked for in {comment.url}"
        applied = applied.then(Applied(lines=(line,), tick_now=True))
    try:
        run.github.react(comment.id, "+1" if applied.messages or tick_after else "confused")
    except SyncError as error:
        run.say(job_text.annotation("warning", f"could not react to the comment: {error}"))
    return applied
