"""The pipeline's own events: which task comes next, stale claims reset, "all complete" and
"blocked" written once, the circuit breaker, and the upkeep after a tick's tasks."""

from __future__ import annotations

import os
from collections.abc import Collection

from memento_gh import files
from memento_gh.engine.agents import verify_path
from memento_gh.engine.books import bookkeeping, breaker, lessons
from memento_gh.engine.tick.session import Session
from memento_gh.errors import UserError
from memento_gh.formats import status_log
from memento_gh.plan import picking
from memento_gh.plan.meta import Settings
from memento_gh.plan.model import Plan, Task


def choose(session: Session, tried: Collection[str], index: int) -> Task | None:
    """The task to claim next on the plan as it stands, or None; stale claims are reset
    first. ``index`` counts the tasks this tick ran so far: a later task must still fit in
    the time a claim is good for."""
    plan = session.plan_file.current
    if plan.settings.tick_mode != "auto":
        return None
    plan = reset_stale_claims(session, plan)
    decision = picking.pick(plan, skip=tried)
    task = decision.task
    if task is None:
        if index == 0:
            announce_rest(session, decision)
        return None
    if index and not fits_in_claim(session, task, plan.settings):
        return None
    reason = unrunnable_verify(session, task)
    if reason and index == 0:
        raise UserError(reason)  # nothing claimed yet: the tick is refused
    return None if reason else task  # the next tick refuses it


def unrunnable_verify(session: Session, task: Task) -> str | None:
    """Why ``task`` cannot pass its verify here (a program it starts is on none of the
    folders of the PATH verify gets), checked before a claim: no agent run is spent on it."""
    if "verify" not in task.fields:
        return None
    where = f"{session.plan_file.shown_as}:{task.fields['verify'].line + 1}"
    return verify_path.unrunnable_verify(task, session.child_env.get("PATH", os.defpath), where)


def pick_quietly(session: Session) -> Task | None:
    """``choose`` for another worker's first task: nothing said when there is none."""
    plan = session.plan_file.current
    if plan.settings.tick_mode != "auto":
        return None
    return picking.pick(reset_stale_claims(session, plan)).task


def next_tick_number(plan: Plan) -> int:
    return plan.settings.total_ticks + 1


def announce_task(session: Session, tick: int, task: Task) -> None:
    session.say(f"Tick #{tick:03d}: {task.title}")


def fits_in_claim(session: Session, task: Task, settings: Settings) -> bool:
    """A tick must end before its claims look stale, so it starts another task only when
    that task's estimate still fits within stale_lock_timeout."""
    elapsed = (session.clock() - session.started).total_seconds()
    return elapsed + (task.estimate or 0) <= settings.stale_lock_timeout


def reset_stale_claims(session: Session, plan: Plan) -> Plan:
    """Claims older than stale_lock_timeout back to ``[ ]``, committed; the plan after."""
    stale = bookkeeping.stale_claims(plan, session.clock())
    if not stale:
        return plan
    session.plan_file.edit(lambda current: bookkeeping.reset_edits(current, stale))
    for task in stale:
        session.ledger.append_event(status_log.stale_claim_reset(task.id))
    ids = ", ".join(task.id for task in stale)
    session.checkpoint("stale-reset-written")
    session.ledger.commit_with_state(f"memento: reset stale claim on {ids}")
    session.say(f"Reset stale claims: {ids}")
    return session.plan_file.current


def announce_rest(session: Session, decision: picking.Decision) -> None:
    """Nothing to run: say why, and log "all complete" or "blocked" when newly so."""
    if decision.reason in (picking.ALL_COMPLETE, picking.PIPELINE_BLOCKED):
        announce_once(session, decision.message)
    session.say(f"Nothing to run: {decision.message}")


def announce_completion(session: Session) -> None:
    """The task just recorded was the plan's last: "🎉 ALL TASKS COMPLETE" goes into the
    status log now, for the commit that records the task (written here, not committed)."""
    decision = picking.pick(session.plan_file.current)
    ledger = session.ledger
    if decision.reason != picking.ALL_COMPLETE:
        return
    if not status_log.is_latest_event(ledger.status_text(), decision.message):
        ledger.append_event(decision.message)
        session.say(decision.message)


def announce_once(session: Session, line: str) -> None:
    """ALL TASKS COMPLETE / PIPELINE BLOCKED are written when the state is reached, not on
    every tick that finds it unchanged."""
    ledger = session.ledger
    if status_log.is_latest_event(ledger.status_text(), line):
        return
    ledger.append_event(line)
    ledger.commit_with_state(f"memento: {line}")
    ledger.write_alert()


def trip_breaker(session: Session, reason: str) -> None:
    """Pause the plan and say why: no tick runs again until a person resumes it."""
    ledger = session.ledger
    session.plan_file.edit(lambda plan: [bookkeeping.pause_edit(plan)])
    line = status_log.circuit_breaker(reason)
    ledger.append_event(line)
    ledger.write_alert()  # before the commit, which fails when git is broken
    ledger.commit_with_state(f"memento: circuit breaker paused the plan\n\n{reason}\n")
    session.say(line)


def after_tasks(session: Session) -> None:
    """The upkeep once a tick's tasks are recorded: the breaker's rules, the status log's
    rotation, stale lessons archived, and the alert file."""
    reason = breaker.breaker_reason(session.plan_file.current, None)
    if reason:
        trip_breaker(session, reason)
    settings = session.plan_file.current.settings
    rotate_status(session, settings)
    if lessons.archive_stale(session.ledger, settings, session.clock()):
        session.ledger.commit_with_state("memento: archive stale lessons")
    session.ledger.write_alert()


def rotate_status(session: Session, settings: Settings) -> None:
    """Past status_max_entries, the oldest entries move to an archive file."""
    now = session.clock()
    ledger = session.ledger
    kept, archived = status_log.rotate(
        ledger.status_text(),
        settings.status_max_entries,
        now,
        archive_dir=settings.status_archive_dir,
    )
    if archived is None:
        return
    archive = session.root / status_log.archive_path(now, settings.status_archive_dir)
    files.write_atomic(archive, archived)
    files.write_atomic(session.layout.status, kept)
    ledger.commit_with_state("memento: rotate the tick status log")
