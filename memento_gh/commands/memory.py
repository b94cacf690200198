"""``memento memory`` (list the lessons) and ``memento learn`` (add a decision or preference).

The lessons live in ``docs/memory/`` (see :mod:`memento_gh.formats.memory`). ``learn`` and
``memory --archive`` edit those files under the repository lock, like the controls, and
commit the file they changed unless it had other uncommitted changes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memento_gh import files
from memento_gh.errors import UserError
from memento_gh.formats import memory, memory_learning, memory_selection
from memento_gh.layout import Layout, display
from memento_gh.lock import Busy, repo_lock
from memento_gh.output import paint, wants_color
from memento_gh.plan import values
from memento_gh.plan.meta import Settings
from memento_gh.plan.scanner import parse
from memento_gh.redact import Redactor

SCHEMA = 1
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def run(args: argparse.Namespace, layout: Layout) -> int:
    if args.command == "learn":
        return run_learn(args, layout)
    return run_memory(args, layout)


# -- the files -------------------------------------------------------------------------------


def memory_path(layout: Layout, kind: str) -> Path:
    return layout.docs / memory.FOLDER / memory.FILE_NAMES[kind]


def read_texts(layout: Layout) -> dict[str, str]:
    """The text of each memory file that exists, by kind."""
    found = {}
    for kind in memory.KINDS:
        path = memory_path(layout, kind)
        if path.exists():
            found[kind] = files.read_text(path)
    return found


def settings_of(layout: Layout) -> Settings:
    """The plan's Meta (for ``memory_stale_after``); the defaults when there is no plan."""
    return parse(files.read_text(layout.plan)).settings if layout.plan.exists() else Settings()


# -- memento memory --------------------------------------------------------------------------


def run_memory(args: argparse.Namespace, layout: Layout, clock: Clock = utc_now) -> int:
    now = clock()
    stale_after = settings_of(layout).memory_stale_after
    if args.archive:
        print(_locked(layout, args.wait, lambda: _archive(layout, now, stale_after)))
        return 0
    data = summary(layout, read_texts(layout), now, stale_after)
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        print(render_list(data, show_archived=args.all, color=wants_color(sys.stdout)))
    return 0


def summary(
    layout: Layout, texts: dict[str, str], now: datetime, stale_after: float
) -> dict[str, Any]:
    """The documented JSON shape of ``memento memory --json``."""
    records: list[dict[str, Any]] = []
    errors = 0
    for kind in memory.KINDS:
        parsed = memory.parse_memory(texts.get(kind, ""), kind)
        errors += sum(1 for problem in parsed.problems if problem.severity == "error")
        where = display(memory_path(layout, kind))
        records += [_record_data(record, where, now, stale_after) for record in parsed.records]
    archived = sum(1 for record in records if record["archived"])
    return {
        "schema": SCHEMA,
        "folder": display(layout.docs / memory.FOLDER),
        "now": values.format_time(now),
        "stale_after": stale_after,
        "errors": errors,
        "counts": {
            "active": len(records) - archived,
            "archived": archived,
            "stale": sum(1 for record in records if record["stale"]),
        },
        "records": records,
    }


def _record_data(
    record: memory.Record, where: str, now: datetime, stale_after: float
) -> dict[str, Any]:
    evidence = record.evidence
    verified = record.last_verified
    return {
        "kind": record.kind,
        "key": record.key,
        "title": record.title,
        "text": record.text,
        "file": where,
        "line": record.line + 1,
        "task": record.task,
        "modules": list(record.modules),
        "evidence": None if evidence is None else evidence._asdict(),
        "confidence": record.confidence,
        "last_verified": None if verified is None else values.format_time(verified),
        "seen": record.seen,
        "archived": record.archived,
        "stale": not record.archived and not memory_selection.is_fresh(record, now, stale_after),
    }


def render_list(data: dict[str, Any], *, show_archived: bool, color: bool) -> str:
    lines: list[str] = []
    for kind in memory.KINDS:
        shown = [
            record
            for record in data["records"]
            if record["kind"] == kind and (show_archived or not record["archived"])
        ]
        where = f"{data['folder']}/{memory.FILE_NAMES[kind]}"
        lines.append(paint(f"{memory.TITLES[kind]} ({where})", "bold", color))
        lines += [line for record in shown for line in _record_lines(record)] or ["  none"]
    counts = data["counts"]
    lines += ["", _footer(counts, show_archived)]
    if data["errors"]:
        lines.append(
            paint(
                f"the memory files have {data['errors']} errors; run `memento validate`",
                "error",
                color,
            )
        )
    return "\n".join(lines)


def _record_lines(record: dict[str, Any]) -> list[str]:
    marks = " [archived]" if record["archived"] else " [stale]" if record["stale"] else ""
    meta = [record["task"] or "no task"]
    if record["modules"]:
        meta.append("module " + ", ".join(record["modules"]))
    if record["kind"] == memory.KNOWN_ISSUE:
        meta.append(f"seen {record['seen']}x")
    meta.append(f"confidence {record['confidence'] or '?'}")
    meta.append(f"verified {record['last_verified'] or '?'}")
    evidence = record["evidence"]
    if evidence:
        meta.append(f"evidence: {evidence['kind']} {memory.code_span(evidence['value'])}")
    return [f"  line {record['line']}: {record['title']}{marks}", f"    {' · '.join(meta)}"]


def _footer(counts: dict[str, int], show_archived: bool) -> str:
    text = f"{counts['active']} active, {counts['archived']} archived"
    if counts["archived"] and not show_archived:
        text += " (--all lists them)"
    if counts["stale"]:
        text += (
            f"; {counts['stale']} stale: not verified within memory_stale_after, so no worker "
            "is given them (`memento memory --archive` moves them to the archive)"
        )
    return text


def _archive(layout: Layout, now: datetime, stale_after: float) -> str:
    texts = read_texts(layout)
    dirty = _dirty(layout)
    changed: list[Path] = []
    moved: list[str] = []
    for kind, text in texts.items():
        new, stale = memory_learning.archive_stale(text, kind, now=now, stale_after=stale_after)
        if stale:
            path = memory_path(layout, kind)
            files.write_atomic(path, new)
            changed.append(path)
            moved += [f"{display(path)}: {record.title}" for record in stale]
    if not moved:
        return "nothing to archive: every record was verified within memory_stale_after"
    subject = f"memento: archive {len(moved)} stale lessons"
    note = _commit(layout, changed, subject, "archive-lessons", dirty)
    return "\n".join([f"archived {len(moved)} record(s){note}:", *(f"  {m}" for m in moved)])


# -- memento learn ---------------------------------------------------------------------------


def run_learn(args: argparse.Namespace, layout: Layout, clock: Clock = utc_now) -> int:
    lesson = memory_learning.Lesson(
        kind=memory.DECISION if args.kind == "decision" else memory.PREFERENCE,
        key=args.key,
        text=args.text,
        evidence=_evidence(layout, args.evidence, args.evidence_cmd),
        task=_task(layout, args.task),
        modules=tuple(args.module or ()),
        confidence=args.confidence,
        reason=args.why or "",
        context=args.context or "",
        options=args.options or "",
    )
    try:
        memory_learning.lesson_fields(lesson)  # the mistakes of the command line, before the lock
    except ValueError as error:
        raise UserError(_as_options(str(error))) from None
    print(_locked(layout, args.wait, lambda: _learn(layout, lesson, clock())))
    return 0


def _as_options(message: str) -> str:
    """The pure module's words for a lesson's parts, as the options that set them."""
    for word, option in (("reason", "--why"), ("context", "--context"), ("options", "--options")):
        message = message.replace(f"; {word} is for decisions", f"; {option} is for decisions")
    return message.replace("module '", "--module '")


def _evidence(layout: Layout, path: str | None, command: str | None) -> memory.Evidence:
    if command is not None:
        if not command.strip():
            raise UserError("--evidence-cmd is empty; give the command that shows the lesson holds")
        return memory.Evidence("command", memory.one_line(command))
    assert path is not None  # argparse requires one of the two
    root = layout.root.resolve()
    full = (layout.root / path).resolve()
    if not full.is_relative_to(root) or not full.is_file():
        raise UserError(
            f"--evidence {path}: no such file in the repository; name a file (relative to the "
            "repository root) that shows the lesson, or give --evidence-cmd COMMAND"
        )
    return memory.Evidence("file", full.relative_to(root).as_posix())


def _task(layout: Layout, task_id: str | None) -> str:
    if task_id is None:
        return memory.GLOBAL
    if not values.TASK_ID.fullmatch(task_id):
        raise UserError(f"--task {task_id!r}: give a task ID like T-201")
    if not layout.plan.exists():
        raise UserError(
            f"{display(layout.plan)}: no plan here to find {task_id} in; run `memento init`, "
            "or leave --task out"
        )
    if parse(files.read_text(layout.plan)).task(task_id) is None:
        raise UserError(
            f"--task {task_id}: no such task in {display(layout.plan)}; give one of its task "
            "IDs, or leave --task out for a lesson of no particular task"
        )
    return task_id


def _learn(layout: Layout, lesson: memory_learning.Lesson, now: datetime) -> str:
    lesson = _redacted(lesson, Redactor.from_environ(os.environ).redact)
    path = memory_path(layout, lesson.kind)
    old = files.read_text(path) if path.exists() else memory.empty_file(lesson.kind)
    try:
        new, created = memory_learning.learn(old, lesson, now)
    except memory_learning.Hidden as error:
        raise UserError(f"{display(path)}:{error.problem.line}: {error.problem.message}") from None
    dirty = _dirty(layout)
    files.write_atomic(path, new)
    key = memory.one_line(lesson.key)
    found = memory.parse_memory(new, lesson.kind, check=False).find(key)
    line = f":{found.line + 1}" if found else ""
    what = "topic" if lesson.kind == memory.DECISION else "category"
    how = "new record" if created else f"updated the record of the same {what}"
    noun = memory.NOUNS[lesson.kind]
    note = _commit(layout, [path], f"memento: learn {noun} {key}", "learn", dirty)
    return f"learned {noun} {key!r}: {display(path)}{line} ({how}){note}"


def _redacted(
    lesson: memory_learning.Lesson, redact: Callable[[str], str]
) -> memory_learning.Lesson:
    """The lesson without credentials: its words reach a committed file (and its key the
    commit's subject), which every later worker's prompt and every clone holds."""
    evidence = lesson.evidence._replace(value=redact(lesson.evidence.value))
    return lesson._replace(
        key=redact(lesson.key),
        text=redact(lesson.text),
        reason=redact(lesson.reason),
        evidence=evidence,
    )


# -- lock and commit -------------------------------------------------------------------------


def _locked(layout: Layout, wait: float, work: Callable[[], str]) -> str:
    try:
        with repo_lock(layout.lock, wait=wait):
            return work()
    except Busy:
        raise UserError(
            f"a tick holds the lock on this repository ({layout.lock}); try again when it "
            "ends, or wait longer with --wait"
        ) from None


def _dirty(layout: Layout) -> set[str] | None:
    """Paths with uncommitted changes; None outside a git repository."""
    from memento_gh.workspace import Workspace

    try:
        return {change.path for change in Workspace(layout.root).changes()}
    except UserError:
        return None


def _commit(
    layout: Layout, changed: Sequence[Path], subject: str, control: str, dirty: set[str] | None
) -> str:
    """Commit ``changed`` unless one had uncommitted changes before memento wrote it (``dirty``,
    None outside a git repository); says what happened."""
    from memento_gh.workspace import Workspace

    if dirty is None:
        return " (not a git repository: not committed)"
    workspace = Workspace(layout.root)
    root = workspace.root.resolve()
    relative = [path.resolve().relative_to(root).as_posix() for path in changed]
    if dirty.intersection(relative):
        return " (not committed: the file had other uncommitted changes)"
    sha = workspace.commit(f"{subject}\n\nMemento-Control: {control}\n", relative)
    return f" (committed {sha[:7]})"
