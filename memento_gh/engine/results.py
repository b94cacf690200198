"""A task's result, recorded: on success the agent's change is committed with the
bookkeeping; on failure the change is rolled back and the bookkeeping alone is committed."""

from __future__ import annotations

from memento_gh.engine import bookkeeping, fingerprint, lessons, pipeline
from memento_gh.engine.records import Attempt, Claim, TaskOutcome
from memento_gh.engine.session import Session
from memento_gh.formats import status_log


def record_success(session: Session, claim: Claim, attempt: Attempt, worker: str | None) -> str:
    """Commit the agent's change with ``[x]``, the counters, the status entry and the notes
    read; the commit's sha."""
    _hold_to_verified_bytes(session, attempt)  # before any bookkeeping is written
    task = claim.task
    plan_file, ledger = session.plan_file, session.ledger
    message = bookkeeping.success_message(claim, worker)
    # The edits go on the plan as it was before a local claim: they undo the claim (its line
    # goes, the marker is set again), so the bytes are the same, and the plan they leave is
    # derived from the one in hand.
    before = plan_file.before_claim
    plan_file.write(before, bookkeeping.success_edits(before, task.id, claim.tick))
    session.checkpoint("plan-written")
    lessons.learn_from_success(ledger, claim, attempt, session.clock())
    entry = _entry(session, claim, attempt, bookkeeping.SUCCESS, task.retries)
    ledger.append_entry(entry._replace(commit=("", message.split("\n", 1)[0])))
    session.checkpoint("status-written")
    ledger.mark_notes_read(task.id)
    pipeline.announce_completion(session)  # the last task's commit says the plan is complete
    changes = attempt.changes
    work = fingerprint.paths_of(changes)
    added = [change.path for change in changes if change.kind == "untracked"]
    sha = ledger.commit_with_state(message, work, added, tick=claim.tick)
    session.checkpoint("committed")
    return sha


def succeed(session: Session, claim: Claim, attempt: Attempt, worker: str | None) -> TaskOutcome:
    try:
        sha = record_success(session, claim, attempt, worker)
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
    """Roll the agent's change back, count the retry (``[!]`` when none is left) and commit
    the bookkeeping."""
    task = claim.task
    plan_file, ledger = session.plan_file, session.ledger
    report = session.workspace.rollback(session.keep, label=f"tick-{claim.tick}-{task.id}")
    failure = bookkeeping.failure_of(plan_file.reread(), task)
    plan_file.edit(
        lambda plan: bookkeeping.failure_edits(
            plan, task.id, failure, claim.tick, first_of_tick=claim.position == 0
        )
    )
    session.checkpoint("failure-plan-written")
    ledger.append_entry(_entry(session, claim, attempt, failure.outcome, failure.retries))
    if report.stash:
        ledger.append_event(status_log.emergency_stash(report.stash))
    sha = ledger.commit_with_state(
        bookkeeping.failure_message(claim, failure, worker), tick=claim.tick
    )
    if report.left:
        pipeline.trip_breaker(
            session,
            f"the rollback of {task.id} could not restore {', '.join(report.left)}; "
            "clean the working tree by hand, then `memento resume`",
        )
    analysis = bookkeeping.analysis(attempt) or failure.outcome
    return TaskOutcome(task.id, failure.outcome, sha, analysis)


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
        log=session.log_name,
    )
