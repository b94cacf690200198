"""How ``docs/memory/`` learns: records written, updated and archived.

A known issue is learned by the engine when a task whose verify failed passes; decisions
and preferences are told by people (``memento learn``, ``/memento learn``). Learning a key
again updates its record in place, field by field, and every other line of the file stays
as it was. Every function here takes text and returns text: reading and writing the files
is the caller's business.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from memento_gh.formats import runner_output
from memento_gh.formats.memory import (
    CONFIDENCES,
    DECISION,
    EVIDENCE_KINDS,
    GLOBAL,
    KNOWN_ISSUE,
    LABELS,
    MODULE_NAME,
    NOUNS,
    PREFERENCE,
    THEMATIC_BREAK,
    Evidence,
    Field,
    Memory,
    Record,
    code_span,
    heading_title,
    one_line,
    parse_memory,
    parse_modules,
    render_record,
)
from memento_gh.formats.memory_selection import (
    SIGNATURE_CHARS,
    error_line,
    failure_signature,
    is_fresh,
)
from memento_gh.plan import values
from memento_gh.plan.model import Problem
from memento_gh.plan.scanner import split_lines

if TYPE_CHECKING:
    from datetime import datetime

    from memento_gh.formats.status_log import ParsedEntry
    from memento_gh.plan.model import Task


# -- remembering a record --------------------------------------------------------------------


class Hidden(ValueError):
    """A record added to the file would be hidden (by a fence or comment never closed)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(f"line {problem.line}: {problem.message}")


class _Text:
    """A file's lines and line endings, edited in place, then joined again."""

    def __init__(self, text: str) -> None:
        self.bom = "\ufeff" if text.startswith("\ufeff") else ""
        self.lines, self.eols = split_lines(text.removeprefix("\ufeff"))
        self.eol = next((ending for ending in self.eols if ending), "\n")

    def insert(self, at: int, new: Sequence[str]) -> None:
        if at == len(self.lines) and self.eols and not self.eols[-1]:
            self.eols[-1] = self.eol  # the last line had no line ending
        self.lines[at:at] = list(new)
        self.eols[at:at] = [self.eol] * len(new)

    def delete(self, start: int, end: int) -> None:
        del self.lines[start:end]
        del self.eols[start:end]

    def join(self) -> str:
        body = "".join(line + end for line, end in zip(self.lines, self.eols, strict=True))
        return self.bom + body


def remember(
    text: str,
    kind: str,
    *,
    key: str,
    title: str,
    fields: Sequence[tuple[str, str]],
    replaces: Sequence[str] = (),
) -> tuple[str, bool]:
    """``text`` with the record for ``key`` set to ``fields``: created at the end of the
    active records when no record has that key, else updated in place, field by field (an
    archived record comes back among the active ones). The lines of the ``replaces`` labels
    that ``fields`` leaves out go: they belonged to what is being replaced. Other fields are
    kept. Returns (new text, created)."""
    memory = parse_memory(text, kind, check=False)
    if memory.unclosed is not None:
        raise Hidden(memory.unclosed)
    record = memory.find(key)
    given = {label for label, _ in fields}
    dropped = {label for label in replaces if label not in given}
    if record is None or record.archived:
        merged = _merged(record, fields, dropped) if record else list(fields)
        edited = _Text(_without(text, record) if record else text)
        _append_active(edited, parse_memory(edited.join(), kind), render_record(title, merged))
        return edited.join(), record is None
    edited = _Text(text)
    _set_fields(edited, record, fields, dropped)
    if one_line(record.title) != heading_title(title):
        line = edited.lines[record.line]
        edited.lines[record.line] = (
            line[: len(line) - len(line.lstrip())] + f"## {heading_title(title)}"
        )
    return edited.join(), False


class Lesson(NamedTuple):
    """A decision or preference a person tells memento (``memento learn``, ``/memento learn``)."""

    kind: str  # DECISION | PREFERENCE
    key: str  # a decision's topic, a preference's category
    text: str  # what was decided, what is preferred
    evidence: Evidence
    task: str = GLOBAL
    modules: tuple[str, ...] = ()
    confidence: str = "high"
    reason: str = ""  # decisions only, like context and options
    context: str = ""
    options: str = ""


#: What a lesson says about its topic or category: learning it again replaces all of these.
LEARNED_LABELS = ("Decision", "Preference", "Context", "Options", "Reason", "Module")


def learn(text: str, lesson: Lesson, now: datetime) -> tuple[str, bool]:
    """``decisions.md`` or ``preferences.md`` with ``lesson`` recorded: a new record, or the
    record of the same topic or category updated. Returns (new text, created); ValueError
    with a sentence when the lesson cannot be recorded."""
    fields = lesson_fields(lesson)
    stamp = values.format_time(now)
    title = f"{stamp[:10]}: {one_line(lesson.key)}" if lesson.kind == DECISION else lesson.key
    stamped = [*fields, ("Last verified", stamp)]
    return remember(
        text,
        lesson.kind,
        key=one_line(lesson.key),
        title=title,
        fields=stamped,
        replaces=LEARNED_LABELS,
    )


def lesson_fields(lesson: Lesson) -> list[tuple[str, str]]:
    """The record's fields, or ValueError naming what is wrong with the lesson."""
    given = _check_lesson(lesson)
    fields = [(LABELS[lesson.kind][0], one_line(lesson.text)), *given, ("Task", lesson.task)]
    if lesson.modules:
        fields.append(("Module", ", ".join(dict.fromkeys(lesson.modules))))
    evidence = Evidence(lesson.evidence.kind, one_line(lesson.evidence.value))
    return [*fields, ("Evidence", evidence.render()), ("Confidence", lesson.confidence)]


def _check_lesson(lesson: Lesson) -> list[tuple[str, str]]:
    """ValueError for what cannot be recorded; the decision's extra fields otherwise."""
    if lesson.kind not in (DECISION, PREFERENCE):
        raise ValueError(f"learn a decision or a preference, not a {lesson.kind!r}")
    what = "topic" if lesson.kind == DECISION else "category"
    for name, value in ((f"the {what}", lesson.key), (f"the {NOUNS[lesson.kind]}", lesson.text)):
        if not one_line(value):
            raise ValueError(f"{name} is empty; write it as one line of text")
    extras = [("Context", lesson.context), ("Options", lesson.options), ("Reason", lesson.reason)]
    given = [(label, one_line(value)) for label, value in extras if one_line(value)]
    if given and lesson.kind == PREFERENCE:
        raise ValueError(f"a preference has only its text; {given[0][0].lower()} is for decisions")
    if lesson.confidence not in CONFIDENCES:
        raise ValueError(f"confidence {lesson.confidence!r} is not one of {', '.join(CONFIDENCES)}")
    if lesson.task != GLOBAL and not values.TASK_ID.fullmatch(lesson.task):
        raise ValueError(f"task {lesson.task!r}: give a task ID like T-201")
    for name in lesson.modules:
        if parse_modules(name) != (name,) or not MODULE_NAME.fullmatch(name):
            raise ValueError(f"module {name!r}: give one module name, like auth")
    evidence = lesson.evidence
    if not one_line(evidence.value) or evidence.kind not in EVIDENCE_KINDS:
        raise ValueError("the evidence is empty; name a file, or a command that shows the lesson")
    return given


def _merged(
    record: Record, fields: Sequence[tuple[str, str]], dropped: Iterable[str]
) -> list[tuple[str, str]]:
    """The record's fields in its kind's order, with ``fields`` taking precedence."""
    chosen = {field.label: field.value for field in record.fields.values()}
    for label in dropped:
        chosen.pop(label, None)
    chosen.update(fields)
    order = [label for label in LABELS[record.kind] if label in chosen]
    order += [label for label in chosen if label not in order]
    return [(label, chosen[label]) for label in order]


def _set_fields(
    text: _Text, record: Record, fields: Sequence[tuple[str, str]], dropped: Iterable[str]
) -> None:
    """Rewrite the value of each field that has a line, add the others after the last one,
    remove the ``dropped`` ones; every other line stays as it is."""
    missing = [(label, value) for label, value in fields if label not in record.fields]
    ends = [field.end + 1 for field in record.fields.values()]
    added = [f"**{label}**: {one_line(value)}" for label, value in missing]
    text.insert(max(ends, default=record.end), added)
    changes: list[tuple[Field, str | None]] = [
        (record.fields[label], value) for label, value in fields if label in record.fields
    ]
    changes += [(record.fields[label], None) for label in dropped if label in record.fields]
    for field, value in sorted(changes, key=lambda change: -change[0].line):
        if value is None:
            text.delete(field.line, field.end + 1)
            continue
        head = text.lines[field.line][: field.start]
        text.lines[field.line] = head + one_line(value)
        text.delete(field.line + 1, field.end + 1)


def _append_active(text: _Text, memory: Memory, block: list[str]) -> None:
    """Add ``block`` after the last active record (before ``# Archive``)."""
    end = memory.archive_line if memory.archive_line is not None else len(text.lines)
    at = end
    while at > 0 and not text.lines[at - 1].strip():
        at -= 1
    new = ["", *block] if at else list(block)
    if at == end and end < len(text.lines):
        new.append("")  # a blank line before "# Archive"
    text.insert(at, new)


def _span(lines: Sequence[str], record: Record) -> tuple[int, int]:
    """The lines that go when ``record`` goes: the rule before it and the blank lines
    after it, so that the records around it keep one rule and one blank line between."""
    start = record.line
    before = start
    while before > 0 and not lines[before - 1].strip():
        before -= 1
    if before > 0 and THEMATIC_BREAK.fullmatch(lines[before - 1].strip()):
        start = before - 1
    end = record.end
    while end < len(lines) and not lines[end].strip():
        end += 1
    return start, end


def _without(text: str, record: Record) -> str:
    edited = _Text(text)
    start, end = _span(edited.lines, record)
    edited.delete(start, end)
    return edited.join()


# -- archiving what went stale ---------------------------------------------------------------


def archive_stale(
    text: str, kind: str, *, now: datetime, stale_after: float
) -> tuple[str, tuple[Record, ...]]:
    """Move the active records not verified for ``stale_after`` seconds under ``# Archive``
    (made at the end when missing). A record without a readable time stays where it is:
    the validator reports it. Returns (new text, the records moved)."""
    memory = parse_memory(text, kind, check=False)
    stale = tuple(
        record
        for record in memory.active()
        if record.last_verified is not None and not is_fresh(record, now, stale_after)
    )
    if not stale or memory.unclosed is not None:
        return text, ()
    edited = _Text(text)
    blocks = [edited.lines[record.line : record.end] for record in stale]
    for record in reversed(stale):
        start, end = _span(edited.lines, record)
        edited.delete(start, end)
    while edited.lines and not edited.lines[-1].strip():
        edited.delete(len(edited.lines) - 1, len(edited.lines))
    if parse_memory(edited.join(), kind, check=False).archive_line is None:
        edited.insert(len(edited.lines), ["", "# Archive"] if edited.lines else ["# Archive"])
    for block in blocks:
        edited.insert(len(edited.lines), ["", "---", "", *block])
    return edited.join(), stale


# -- learning from a failure that was fixed --------------------------------------------------

#: The analysis the engine writes itself, which only repeats the symptom.
_ENGINE_ANALYSIS = re.compile(r"verify exited with code -?\d+: ")


def learn_from_success(
    memory_text: str,
    *,
    task: Task,
    previous_failure: ParsedEntry | None,
    changes: Sequence[tuple[str, int, int]],
    commit: str | None,
    verify_command: str,
    now: datetime,
    tick: int | None = None,
) -> str:
    """``known-issues.md`` after ``task`` passed: a record for the error its last run failed
    with, or the existing record of that signature seen once more. Unchanged when the last
    run did not fail in its verify (see ``failure_signature``).

    ``changes`` are the fix's (path, lines added, lines removed); ``commit`` its sha, or None
    when the record goes into the very commit of the fix (then ``tick`` names it).
    """
    if previous_failure is None or previous_failure.task_id not in (None, task.id):
        return memory_text
    if runner_output.runner_missing(
        previous_failure.verify_head or "",
        verify_command,
        previous_failure.exit_code,
        [path for path, _, _ in changes],
    ):
        return memory_text  # the runner itself was missing: the change did not fix that
    found = failure_signature(previous_failure)
    if found is None:
        return memory_text
    existing = parse_memory(memory_text, KNOWN_ISSUE, check=False).find(found)
    stamp = values.format_time(now)
    if existing is None:
        fields = _new_issue(task, previous_failure, found, changes, commit, tick)
        fields += _metadata(task.id, _module_tuple(task), verify_command, "medium")
        fields += [("Seen", "1"), ("Last verified", stamp)]
        return remember(memory_text, KNOWN_ISSUE, key=found, title=found, fields=fields)[0]
    seen = existing.seen + 1
    modules = tuple(dict.fromkeys((*existing.modules, *_module_tuple(task))))
    confidence = "high" if existing.confidence != "low" else "low"
    fields = _metadata(task.id, modules, verify_command, confidence)
    fields += [("Seen", str(seen)), ("Last verified", stamp)]
    return remember(memory_text, KNOWN_ISSUE, key=found, title=existing.title, fields=fields)[0]


def _module_tuple(task: Task) -> tuple[str, ...]:
    return (task.module,) if task.module else ()


def _metadata(
    task_id: str, modules: Sequence[str], command: str, confidence: str
) -> list[tuple[str, str]]:
    fields = [("Task", task_id)]
    if modules:
        fields.append(("Module", ", ".join(modules)))
    evidence = Evidence("command", command).render()
    return [*fields, ("Evidence", evidence), ("Confidence", confidence)]


def _new_issue(
    task: Task,
    failure: ParsedEntry,
    found: str,
    changes: Sequence[tuple[str, int, int]],
    commit: str | None,
    tick: int | None,
) -> list[tuple[str, str]]:
    symptom = error_line(failure.verify_head or "") or found
    where = f"a [MODULE:{task.module}] task" if task.module else "any task"
    return [
        ("Symptom", code_span(one_line(symptom)[:SIGNATURE_CHARS])),
        ("Root cause", _root_cause(failure)),
        ("Fix", _fix(task.id, changes, commit, tick)),
        ("Applies", f"{where} whose verify fails like this"),
        ("Found", f"{values.format_time(failure.time)}, {task.id}"),
        ("Signature", code_span(found)),
    ]


def _root_cause(failure: ParsedEntry) -> str:
    analysis = one_line(failure.error_analysis or "")
    log = one_line(failure.fields.get("Log", ""))
    if not analysis or _ENGINE_ANALYSIS.match(analysis):
        # The engine's own analysis only repeats the symptom.
        analysis = "not analysed beyond the verify output"
    return f"{analysis} (full output: {log})" if log else analysis


def _fix(
    task_id: str, changes: Sequence[tuple[str, int, int]], commit: str | None, tick: int | None
) -> str:
    if commit:
        where = f"in commit {code_span(commit[:7])}"
    elif tick is not None:
        where = f"in the commit of {task_id} in tick #{tick:03d}"
    else:
        where = f"in the commit that completed {task_id}"
    if not changes:
        return f"nothing changed {where}: the failure did not come back (flaky or environmental)"
    shown = ", ".join(f"{path} (+{added} -{removed})" for path, added, removed in changes[:5])
    more = f" and {len(changes) - 5} more" if len(changes) > 5 else ""
    return f"{shown}{more} {where}"
