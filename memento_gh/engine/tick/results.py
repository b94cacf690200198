"""A task's result, recorded: on success the agent's change is committed with the
bookkeeping; on failure, or a deferral (the agent's provider refused more work), the change
is rolled back and the bookkeeping alone is committed."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from memento_gh.engine.agents import presets
from memento_gh.engine.books import bookkeeping, lessons
from memento_gh.engine.records import Attempt, Claim, TaskOutcome
from memento_gh.engine.tick import pipeline
from memento_gh.engine.tick.session import Session
from memento_gh.engine.wall import fingerprint
from memento_gh.formats import status_log
from memento_gh.plan import editor
from memento_gh.plan.model import Plan
from memento_gh.workspace import RollbackReport


def record_success(
    session: Session, claim: Claim, attempt: Attempt, worker: str | None, *, staged: bool = False
) -> str:
    """Commit the agent's change with ``[x]``, the counters, the status entry and the notes
    read; the commit's sha. ``staged``: the change is in git's index already (applied as
    a patch there), new files too, so none needs adding first."""
    _hold_to_verified_bytes(session, attempt)  # before any bookkeeping is written
    task = claim.task
    plan_file, ledger = session.plan_file, session.ledger
    message = bookkeeping.success_message(claim, worker)
    # The edits go on the plan as it was before a local claim: they undo the claim (its line
    # goes, the marker is set again), so the bytes are the same, and the plan they leave is
    # derived from the one in hand.
    before = plan_file.before_claim
    plan_file.write(
        before,
        bookkeeping.success_edits(before, task.id, claim.tick)
        + _spend_edits(session, claim, attempt, before),
    )
    session.checkpoint("plan-written")
    lessons.learn_from_success(ledger, claim, attempt, session.clock())
    entry = _entry(session, claim, attempt, bookkeeping.SUCCESS, task.retries)
    ledger.append_entry(entry._replace(commit=("", message.split("\n", 1)[0])))
    session.checkpoint("status-written")
    ledger.mark_notes_read(task.id)
    pipeline.announce_completion(session)  # the last task's commit says the plan is complete
    changes = attempt.changes
    work = fingerprint.paths_of(changes)
    added = [] if staged else [change.path for change in changes if change.kind == "untracked"]
    sha = ledger.commit_with_state(message, work, added, tick=claim.tick)
    session.checkpoint("committed")
    return sha


def succeed(
    session: Session, claim: Claim, attempt: Attempt, worker: str | None, *, staged: bool = False
) -> TaskOutcome:
    try:
        sha = record_success(session, claim, attempt, worker, staged=staged)
    except ChangedSinceVerify as changed:
        return fail(session, claim, attempt._replace(violations=(str(changed),)), worker)
    return TaskOutcome(
        claim.task.id, bookkeeping.SUCCESS, sha, f"verify passed, committed {sha[:7]}"
    )


class ChangedSinceVerify(Exception):
    """The agent's files are not the bytes verify checked: the commit must not take them."""


def _hold_to_verified_bytes(session: Session, attempt: Attempt) -> None:
    """Before the success is recorded and committed (the commit reads the agent's files
    from the work tree again): they must be the bytes verify saw. Nothing the agent or
    verify started runs by now (``process.py``), so none can change them after this look;
    it catches verify's own run rewriting them, and anything else that did."""
    if attempt.seen_by_verify is None:
        return
    changed = fingerprint.changed_since(session.root, attempt.seen_by_verify)
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if changed[5:] else "")
        raise ChangedSinceVerify(
            f"{shown} changed after verify started (verify's run or a process still "
            "running rewrote it): the commit would hold bytes verify did not check"
        )


def fail(session: Session, claim: Claim, attempt: Attempt, worker: str | None) -> TaskOutcome:
    """Roll the agent's change back, count the retry (``[!]`` when none is left, or when the
    task's spend reached ``budget_per_task``) and commit the bookkeeping."""
    task = claim.task
    report = _roll_back(session, claim)
    plan_file = session.plan_file
    failure = bookkeeping.failure_of(plan_file.reread(), task, _cost(attempt), plan_file.shown_as)
    sha = _record_rollback(
        session,
        claim,
        attempt,
        report,
        lambda plan: bookkeeping.failure_edits(
            plan, task.id, failure, claim.tick, first_of_tick=claim.position == 0
        ),
        (failure.outcome, failure.retries),
        bookkeeping.failure_message(claim, failure, worker),
        first_reason=failure.over_budget,
    )
    analysis = bookkeeping.analysis(attempt) or failure.outcome
    if failure.over_budget:
        analysis = f"{failure.over_budget}; {analysis}"
    output = attempt.verify.output[-20_000:] if attempt.verify else ""
    return TaskOutcome(task.id, failure.outcome, sha, analysis, verify_output=output)


def defer(session: Session, claim: Claim, attempt: Attempt, worker: str | None) -> TaskOutcome:
    """The agent's provider refused more work: roll the change back and release the claim,
    counting no retry and no failed tick, and commit the bookkeeping. The task waits for a
    later tick; nothing pauses. The provider's calls were made: their spend counts."""
    task = claim.task
    report = _roll_back(session, claim)
    retries = (session.plan_file.reread().task(task.id) or task).retries
    sha = _record_rollback(
        session,
        claim,
        attempt,
        report,
        lambda plan: bookkeeping.deferral_edits(plan, task.id, claim.tick),
        (bookkeeping.DEFERRED, retries),
        bookkeeping.deferral_message(claim, worker),
    )
    when = attempt.limit.when if attempt.limit else None
    return TaskOutcome(task.id, bookkeeping.DEFERRED, sha, bookkeeping.deferral_text(attempt), when)


def _roll_back(session: Session, claim: Claim) -> RollbackReport:
    label = f"tick-{claim.tick}-{claim.task.id}"
    return session.workspace.rollback(session.keep, label=label)


def _record_rollback(
    session: Session,
    claim: Claim,
    attempt: Attempt,
    report: RollbackReport,
    edits: Callable[[Plan], list[editor.Edit]],
    outcome: tuple[str, int],
    message: str,
    first_reason: str | None = None,
) -> str:
    """The bookkeeping of a run whose change was rolled back: the plan's ``edits`` and the
    run's spend, the status entry (``outcome``: its name and the task's retries; its
    analysis led by ``first_reason``), committed; the sha. A rollback that left files
    behind pauses the plan."""
    ledger = session.ledger
    session.plan_file.edit(lambda plan: edits(plan) + _spend_edits(session, claim, attempt, plan))
    session.checkpoint("failure-plan-written")
    entry = _entry(session, claim, attempt, *outcome)
    if first_reason:
        # First: the issue shows the analysis cut to a length, and this is why it blocks.
        told = "; ".join(filter(None, (first_reason, entry.error_analysis)))
        entry = entry._replace(error_analysis=told)
    ledger.append_entry(entry)
    if report.stash:
        ledger.append_event(status_log.emergency_stash(report.stash))
    sha = ledger.commit_with_state(message, tick=claim.tick)
    if report.left:
        pipeline.trip_breaker(
            session,
            f"the rollback of {claim.task.id} could not restore {', '.join(report.left)}; "
            "clean the working tree by hand, then `memento resume`",
        )
    return sha


def _cost(attempt: Attempt) -> Mapping[str, object] | None:
    return attempt.agent.cost if attempt.agent else None


def _spend_edits(session: Session, claim: Claim, attempt: Attempt, plan: Plan) -> list[editor.Edit]:
    first = claim.position == 0
    clock = session.clock()
    return bookkeeping.spend_edits(plan, claim.task.id, _cost(attempt), clock, first_of_tick=first)


def _entry(
    session: Session, claim: Claim, attempt: Attempt, outcome: str, retries: int
) -> status_log.TickEntry:
    return bookkeeping.status_entry(
        claim,
        attempt,
        outcome,
        plan=session.plan_file.current,
        retries=retries,
        ended=session.clock(),
        log=claim.log or session.log_name,
        agent_said=presets.last_words(attempt.agent.process.output) if attempt.agent else None,
    )
