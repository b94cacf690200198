"""Surgical edits of a plan: each edit names the columns or the line it changes, and
applying edits rewrites only those bytes. Every other byte of the file (line endings,
indentation, trailing spaces, comments, any text) stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from memento_gh.errors import UserError
from memento_gh.plan.meta import META_KEYS
from memento_gh.plan.model import MARKERS, TASK_FIELDS, Phase, Plan, Task


class Splice(NamedTuple):
    """Replace columns ``[start, end)`` of line ``line``."""

    line: int
    start: int
    end: int
    text: str


class InsertLine(NamedTuple):
    """A new line after line ``after`` (its ending is chosen to match the file)."""

    after: int
    content: str


class DeleteLine(NamedTuple):
    line: int


Edit = Splice | InsertLine | DeleteLine


def apply(plan: Plan, edits: Iterable[Edit]) -> str:
    """The plan's text with ``edits`` applied; edits refer to the lines of ``plan``."""
    lines, eols = edit_lines(plan, edits)
    return join_lines(lines, eols, bom=plan.bom)


def edit_lines(plan: Plan, edits: Iterable[Edit]) -> tuple[list[str], list[str]]:
    """The plan's lines and their endings with ``edits`` applied (what ``apply`` joins).

    Only the edited lines are touched: the rest is copied as it is, so an edit of a large
    plan costs a list copy, not a pass over every line. Edits that name a line the plan
    does not have are ignored."""
    lines = list(plan.lines)
    eols = list(plan.eols)
    inserts: dict[int, list[str]] = {}
    deleted: set[int] = set()
    splices: dict[int, list[Splice]] = {}
    for edit in edits:
        if isinstance(edit, Splice):
            splices.setdefault(edit.line, []).append(edit)
        elif isinstance(edit, InsertLine):
            inserts.setdefault(edit.after, []).append(edit.content)
        else:
            deleted.add(edit.line)
    for number, group in splices.items():
        lines[number] = _splice_line(lines[number], group)
    count = len(lines)
    newline: str | None = None
    # From the end, so that the indexes of the lines still to do stay as they were.
    for number in sorted({at for at in (*inserts, *deleted) if 0 <= at < count}, reverse=True):
        added = inserts.get(number, [])
        eol = eols[number]
        if not eol and added and newline is None:
            newline = dominant_eol(plan)
        fill = eol or newline or ""
        new_lines: list[str] = []
        new_eols: list[str] = []
        if number not in deleted:
            new_lines.append(lines[number])
            new_eols.append(fill if added else eol)
        for offset, content in enumerate(added):
            last = offset == len(added) - 1 and number == count - 1 and not eol
            new_lines.append(content)
            new_eols.append("" if last else fill)
        lines[number : number + 1] = new_lines
        eols[number : number + 1] = new_eols
    return lines, eols


def join_lines(lines: Sequence[str], eols: Sequence[str], *, bom: bool = False) -> str:
    """Lines and their endings back into one text (with the byte order mark if ``bom``)."""
    parts = [""] * (2 * len(lines))
    parts[0::2] = lines
    parts[1::2] = eols
    return ("\ufeff" if bom else "") + "".join(parts)


def _splice_line(line: str, group: list[Splice]) -> str:
    ordered = sorted(group, key=lambda splice: splice.start, reverse=True)
    for earlier, later in zip(ordered[1:], ordered[:-1], strict=True):
        if earlier.end > later.start:
            raise ValueError(f"overlapping edits on line {later.line + 1}")
    for splice in ordered:
        line = line[: splice.start] + splice.text + line[splice.end :]
    return line


def dominant_eol(plan: Plan) -> str:
    crlf = sum(1 for eol in plan.eols if eol == "\r\n")
    lf = sum(1 for eol in plan.eols if eol == "\n")
    cr = sum(1 for eol in plan.eols if eol == "\r")
    if crlf > lf and crlf >= cr:
        return "\r\n"
    if cr > lf:
        return "\r"
    return "\n"


def require_task(plan: Plan, task_id: str) -> Task:
    task = plan.task(task_id)
    if task is None:
        known = ", ".join(task.id for task in plan.tasks[:10])
        more = ", ..." if len(plan.tasks) > 10 else ""
        raise UserError(f"no task {task_id!r} in the plan (tasks: {known}{more})")
    return task


def set_status(plan: Plan, task_id: str, marker: str) -> Edit:
    if marker not in MARKERS:
        raise ValueError(f"unknown status marker {marker!r}")
    task = require_task(plan, task_id)
    return Splice(task.line, task.marker_col, task.marker_col + 1, marker)


def set_field(plan: Plan, task_id: str, key: str, value: str) -> Edit:
    """Change a field's value, or add the field line after the task's last line."""
    if key not in TASK_FIELDS:
        raise ValueError(f"unknown task field {key!r}")
    _refuse_newlines(value)
    task = require_task(plan, task_id)
    found = task.fields.get(key)
    if found is not None:
        return _value_splice(plan, found.line, found.start, found.end, value)
    return InsertLine(task.end, f"{_field_prefix(plan, task)}{key}: {value}")


def remove_field(plan: Plan, task_id: str, key: str) -> Edit | None:
    task = require_task(plan, task_id)
    found = task.fields.get(key)
    return None if found is None else DeleteLine(found.line)


def set_meta(plan: Plan, key: str, value: str) -> Edit:
    """Change a Meta value (its trailing comment stays), or add the key to the section."""
    if key not in META_KEYS:
        raise ValueError(f"unknown Meta key {key!r}")
    _refuse_newlines(value)
    entry = plan.meta.get(key)
    if entry is not None:
        splice = _value_splice(plan, entry.line, entry.start, entry.end, value)
        return _in_column(plan.lines[entry.line], splice)
    if plan.meta_line is None:
        raise UserError("the plan has no '## Meta' section; add one (see `memento init`)")
    last = max((found.line for found in plan.meta.values()), default=None)
    if last is None:
        return InsertLine(plan.meta_line, f"- {key}: {value}")
    prefix = plan.lines[last][: plan.meta[_key_at(plan, last)].start]
    bullet = prefix[: len(prefix) - len(prefix.lstrip(" \t-*+"))]
    return InsertLine(last, f"{bullet or '- '}{key}: {value}")


def approve_review(plan: Plan, phase: Phase) -> Splice:
    """``<!-- review: true -->`` of ``phase`` made ``<!-- review: approved -->``."""
    if phase.review_line is None:
        raise ValueError(f"{phase.name} has no review comment")
    text = plan.lines[phase.review_line]
    found = re.search(r"review[ \t]*:[ \t]*(\w+)", text)
    assert found is not None, text
    return Splice(phase.review_line, found.start(1), found.end(1), "approved")


def _value_splice(plan: Plan, line: int, start: int, end: int, value: str) -> Splice:
    """Replace a value; filling an empty one (``- retries:``) adds the space that keeps
    ``key: value`` readable, and one before a comment that follows it."""
    text = plan.lines[line]
    if start == end:
        if not text[:start].endswith((" ", "\t")):
            value = " " + value
        if text[end:].startswith("<!--"):
            value += " "
    return Splice(line, start, end, value)


def _in_column(text: str, splice: Splice) -> Splice:
    """A Meta comment after spaces stays in its column (``total_ticks: 10`` after ``9``):
    the spaces take up what the value gains or loses, one always left, so the block's
    comments stay lined up and no other line is touched."""
    rest = text[splice.end :]
    gap = len(rest) - len(rest.lstrip(" "))
    if splice.start == splice.end or not gap or not rest[gap:].startswith("<!--"):
        return splice
    column = splice.end + gap
    padding = " " * max(1, column - splice.start - len(splice.text))
    return splice._replace(end=column, text=splice.text + padding)


def _key_at(plan: Plan, line: int) -> str:
    return next(key for key, entry in plan.meta.items() if entry.line == line)


def _field_prefix(plan: Plan, task: Task) -> str:
    """The indentation and bullet of the task's field lines, so a new one matches."""
    if task.fields:
        sample = min(task.fields.values(), key=lambda found: found.line)
        line = plan.lines[sample.line]
        stripped = line.lstrip(" \t")
        return line[: len(line) - len(stripped)] + stripped[: stripped.index(sample.key)]
    return f"{task.indent}  - "


def _refuse_newlines(value: str) -> None:
    if "\n" in value or "\r" in value:
        raise ValueError("a plan value must fit on one line")
