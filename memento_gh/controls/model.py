"""What a control is and what it changes in the plan: pure values, no I/O.

Controls (pause, resume, stop, retry, skip, note, learn) are how people steer: from the
command line, a GitHub comment or dashboard checkbox, or the local dashboard.
"""

from __future__ import annotations

from typing import NamedTuple

from memento_gh.errors import UserError
from memento_gh.formats import notes as notes_doc
from memento_gh.plan import editor
from memento_gh.plan.model import DONE, PENDING, RUNNING, SKIPPED, Plan
from memento_gh.plan.picking import review_gate

MODES = {"pause": "paused", "resume": "auto", "stop": "stopped"}
ACTIONS = (*MODES, "retry", "skip", "note", "learn", "approve", "reopen")
NOTES_HEADER = "# HUMAN NOTES\n\n## Active Notes\n\n---\n\n## Archive\n"
STATUS_HEADER = "# TICK STATUS LOG\n"
SOURCE_TRAILER = "Memento-Source"


class Control(NamedTuple):
    action: str  # one of ACTIONS
    task: str | None = None  # the task for retry / skip / note (None: a global note)
    text: str = ""  # the note, or why a task is skipped
    source: str | None = None  # where it came from (a comment URL), for notes


def plan_edits(plan: Plan, control: Control) -> list[editor.Edit]:
    """The plan edits of a control, or UserError when it makes no sense in this state."""
    if control.action in MODES:
        mode = MODES[control.action]
        if plan.settings.tick_mode == mode:
            return []
        edits = [editor.set_meta(plan, "tick_mode", mode)]
        if control.action == "resume":
            # Resuming after the circuit breaker must not trip it again on the next tick.
            edits.append(editor.set_meta(plan, "consecutive_failed_ticks", "0"))
            if plan.settings.consecutive_deferrals:
                edits.append(editor.set_meta(plan, "consecutive_deferrals", "0"))
        return edits
    if control.action == "approve":
        gate = review_gate(plan)
        if gate is None:
            raise UserError(
                "no phase is waiting for review: approve lets the phase after a finished "
                "`<!-- review: true -->` phase start"
            )
        return [editor.approve_review(plan, gate)]
    task = editor.require_task(plan, control.task or "")
    if control.action == "retry":
        if task.marker == DONE:
            raise UserError(
                f"{task.id} is done; only a pending, blocked or skipped task can be retried. "
                f"To run it again, reopen it: change its `[x]` to `[ ]` at line "
                f"{task.line + 1} of the plan, then `memento validate --fix` (the counters) "
                "and commit"
            )
        if task.marker == RUNNING:
            raise UserError(
                f"{task.id} is running; only a pending, blocked or skipped task can be "
                "retried: wait for its tick to end (a claim older than stale_lock_timeout "
                "goes back to [ ] by itself)"
            )
        return [
            editor.set_status(plan, task.id, PENDING),
            editor.set_field(plan, task.id, "retries", "0"),
        ]
    if control.action == "reopen":
        # A check failed on the task's commit (ci-verify): run it again, as a failed
        # attempt does, one retry used.
        if task.marker != DONE:
            return []
        return [
            editor.set_status(plan, task.id, PENDING),
            editor.set_field(plan, task.id, "retries", str(task.retries + 1)),
        ]
    if control.action == "skip":
        if task.marker == SKIPPED:
            return []  # skipped already: nothing to change
        if task.marker in (DONE, RUNNING):
            state = "done" if task.marker == DONE else "running"
            raise UserError(f"{task.id} is {state}; only a pending or blocked task can be skipped")
        return [editor.set_status(plan, task.id, SKIPPED)]
    raise UserError(f"unknown control {control.action!r}; use one of {', '.join(ACTIONS)}")


def describe(control: Control) -> str:
    if control.action in MODES:
        return f"{control.action}: tick_mode is now {MODES[control.action]}"
    if control.action == "note":
        return f"note for {control.task or notes_doc.GLOBAL} added"
    if control.action == "approve":
        return "approve: the review gate is open, the next phase may start"
    if control.action == "learn":
        kind, _, rest = control.text.partition(" ")
        return f"{kind} learned: {rest.partition(':')[0].strip()}"
    why = f" — {control.text}" if control.text else ""
    return f"{control.action} {control.task}{why}"
