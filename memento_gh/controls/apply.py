"""Applying a control to the repository: the one write path of the CLI, the Action and the
dashboard.

Each control is a surgical edit of the plan, the notes or the lessons, made under the
repository lock (a tick rewrites the plan as it works, so a control waits for it to end), and
committed when the file it changed had no other uncommitted changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from memento_gh import files
from memento_gh.controls.model import (
    NOTES_HEADER,
    SOURCE_TRAILER,
    STATUS_HEADER,
    Control,
    describe,
    plan_edits,
)
from memento_gh.engine.books.ledger import write_alert
from memento_gh.errors import UserError
from memento_gh.formats import notes as notes_doc
from memento_gh.formats import status_log
from memento_gh.layout import Layout
from memento_gh.lock import Busy, repo_lock
from memento_gh.plan import editor
from memento_gh.plan.scanner import parse
from memento_gh.redact import Redactor
from memento_gh.workspace import Workspace


def apply_control(
    layout: Layout,
    control: Control,
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    wait: float = 30.0,
    redact: Callable[[str], str] | None = None,
) -> str:
    """Apply one control under the repository lock; returns what happened, in a sentence.
    ``redact`` (default: the credentials of this process's environment and the common key
    shapes) takes them out of the control's text before it reaches a committed file."""
    control = control._replace(text=_redactor(redact)(control.text))
    try:
        with repo_lock(layout.lock, wait=wait):
            return _apply_locked(layout, control, clock()) + _mode_hint(layout, control)
    except Busy:
        raise UserError(
            f"a tick holds the lock on this repository ({layout.lock}); try again when it "
            "ends, or wait longer with --wait"
        ) from None


def _apply_locked(layout: Layout, control: Control, now: datetime) -> str:
    workspace = _workspace(layout)
    dirty_before = {change.path for change in workspace.changes()} if workspace else set()
    if control.action == "note":
        changed = _add_note(layout, control, now)
    elif control.action == "learn":
        changed = _learn(layout, control, now)
    else:
        changed = _edit_plan(layout, control, now)
    _write_alert(layout, now)
    if not changed:
        return f"nothing to change: {describe(control)}"
    changed += _write_state(layout, describe(control), now)
    if workspace is None:
        return describe(control) + " (not a git repository: not committed)"
    relative = [path.resolve().relative_to(workspace.root.resolve()).as_posix() for path in changed]
    # STATE.md is memento's own output, rewritten whole: an uncommitted copy is not work.
    state = layout.state.resolve().relative_to(workspace.root.resolve()).as_posix()
    if dirty_before.intersection(relative) - {state}:
        return describe(control) + " (not committed: the file had other uncommitted changes)"
    subject = f"memento: {control.action}" + (f" {control.task}" if control.task else "")
    sha = workspace.commit(f"{subject}\n\n{_trailers(control)}", relative)
    return describe(control) + f" (committed {sha[:7]})"


def _mode_hint(layout: Layout, control: Control) -> str:
    """For a control that readies a task while the plan is not ticking (the breaker pauses
    it when too many tasks are blocked): that the task waits for ``memento resume``."""
    if control.action != "retry":
        return ""
    mode = parse(files.read_text(layout.plan)).settings.tick_mode
    if mode == "auto":
        return ""
    return f"; the plan is still {mode}: `memento resume` lets ticks run it"


def _write_state(layout: Layout, last_action: str, now: datetime) -> list[Path]:
    """STATE.md, the snapshot to resume from, follows every control (see formats/state.py)."""
    from memento_gh.formats.state import render_state

    if not layout.plan.exists():
        return []
    plan = parse(files.read_text(layout.plan))
    text = render_state(plan, now=now, last_action=last_action, plan_dir=layout.plan_dir)
    path = layout.state
    if path.exists() and files.read_text(path) == text:
        return []
    files.write_atomic(path, text)
    return [path]


def _write_alert(layout: Layout, now: datetime) -> None:
    """``.memento_alert`` as the plan now calls for: a retry or a skip that unblocks the last
    blocked task takes it down at once, not at the next tick."""
    if not layout.plan.exists():
        return
    plan = parse(files.read_text(layout.plan))
    write_alert(layout, plan, files.read_optional(layout.status) or "", now)


def _trailers(control: Control) -> str:
    """``Memento-Source:`` names the comment a control came from: the branch's history is
    the ledger that keeps a re-delivered or re-scanned comment from applying twice."""
    lines = [f"Memento-Control: {control.action}"]
    if control.source:
        lines.append(f"{SOURCE_TRAILER}: {' '.join(control.source.split())}")
    return "".join(line + "\n" for line in lines)


def record_refused(
    layout: Layout,
    control: Control,
    reason: str,
    *,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    wait: float = 30.0,
    redact: Callable[[str], str] | None = None,
) -> None:
    """A control from a comment or a dashboard box that could not be applied still leaves a
    trace: an event in the status log, committed with its source, so that the refusal is
    visible and the same comment or box is not tried (and answered) again on every run."""
    if not control.source:
        return
    clean = _redactor(redact)
    control, reason = control._replace(text=clean(control.text)), clean(reason)
    try:
        with repo_lock(layout.lock, wait=wait):
            status = files.read_text(layout.status) if layout.status.exists() else STATUS_HEADER
            # What was asked, not what applying it would have said ("tick_mode is now ...").
            what = (
                describe(control)
                if control.action in ("retry", "skip", "learn")
                else control.action
            )
            line = f"Control not applied ({what}): {' '.join(reason.split())}"
            event = status_log.render_event(clock(), line)
            files.write_atomic(layout.status, status_log.append(status, event))
            workspace = _workspace(layout)
            if workspace is not None:
                relative = layout.status.resolve().relative_to(workspace.root.resolve())
                workspace.commit(
                    f"memento: {control.action} not applied\n\n{_trailers(control)}",
                    [relative.as_posix()],
                )
    except Busy:
        raise UserError(
            f"a tick holds the lock on this repository ({layout.lock}); try again when it ends"
        ) from None


def _redactor(redact: Callable[[str], str] | None) -> Callable[[str], str]:
    """What a control's text passes through before it is written and committed. Its source
    (a comment's URL and author, written by memento) is kept as it is: later runs compare
    it with the trailers to know what they applied already."""
    return redact or Redactor.from_environ(os.environ).redact


def _workspace(layout: Layout) -> Workspace | None:
    try:
        return Workspace(layout.root)
    except UserError:
        return None


def _edit_plan(layout: Layout, control: Control, now: datetime) -> list[Path]:
    text = files.read_text(layout.plan)
    plan = parse(text)
    edits = plan_edits(plan, control)
    edited = editor.apply(plan, edits) if edits else text
    if edited == text:  # a retry of a task that is [ ] with retries: 0 already
        return []
    files.write_atomic(layout.plan, edited)
    changed = [layout.plan]
    if control.action == "skip":
        # The reason has no place in the plan's grammar; the status log keeps it.
        status = files.read_text(layout.status) if layout.status.exists() else STATUS_HEADER
        why = f" — {control.text}" if control.text else ""
        event = status_log.render_event(now, f"Control: {control.task} skipped{why}")
        files.write_atomic(layout.status, status_log.append(status, event))
        changed.append(layout.status)
    return changed


def _learn(layout: Layout, control: Control, now: datetime) -> list[Path]:
    """A decision or preference told in a comment (``/memento learn``): the comment is its
    evidence. ``text`` is ``decision|preference TOPIC: TEXT``."""
    from memento_gh.formats import memory, memory_learning

    kind, _, rest = control.text.partition(" ")
    key, _, text = rest.partition(":")
    url = (control.source or "").split(" ", 1)[0]
    if kind not in (memory.DECISION, memory.PREFERENCE) or not url:
        raise UserError("a lesson from GitHub is a decision or a preference, from a comment")
    if control.task:
        editor.require_task(parse(files.read_text(layout.plan)), control.task)
    lesson = memory_learning.Lesson(
        kind,
        key.strip(),
        text.strip(),
        memory.Evidence("comment", url),
        task=control.task or memory.GLOBAL,
    )
    path = layout.docs / memory.FOLDER / memory.FILE_NAMES[kind]
    old = files.read_text(path) if path.exists() else memory.empty_file(kind)
    try:
        new, _ = memory_learning.learn(old, lesson, now)
    except ValueError as error:
        raise UserError(str(error)) from None
    if new == old:
        return []
    files.write_atomic(path, new)
    return [path]


def _add_note(layout: Layout, control: Control, now: datetime) -> list[Path]:
    if not control.text.strip():
        raise UserError("the note is empty; write what the worker should know")
    target = control.task or notes_doc.GLOBAL
    if target != notes_doc.GLOBAL:
        editor.require_task(parse(files.read_text(layout.plan)), target)
    text = files.read_text(layout.notes) if layout.notes.exists() else NOTES_HEADER
    if control.source and notes_doc.has_source(text, control.source):
        return []
    try:
        updated = notes_doc.add_note(
            text, target=target, body=control.text, time=now, source=control.source
        )
    except ValueError as error:
        raise UserError(str(error)) from None
    files.write_atomic(layout.notes, updated)
    return [layout.notes]
