"""``docs/memory/*.md``: lessons that outlive a tick (memory seed, part 2).

Three files, one kind of record each: ``known-issues.md`` (learned by the engine when a task
that failed passes), ``decisions.md`` and ``preferences.md`` (``memento learn``). A record
has the seed's shape - a rule, a ``## title`` heading, ``**Field**: value`` lines - plus the
metadata that makes it checkable: the task it came from, its evidence (a file or a command),
a confidence and when it was last verified::

    ---

    ## TypeError: pool.query is not a function

    **Symptom**: `TypeError: pool.query is not a function`
    **Root cause**: DB module exports `pool` but middleware imports `connection`
    **Fix**: src/auth/middleware.ts (+3 -1) in commit `a3f7b2c`
    **Applies**: a [MODULE:auth] task whose verify fails like this
    **Found**: 2025-01-15T14:40:00Z, T-201
    **Signature**: `TypeError: pool.query is not a function`
    **Task**: T-201
    **Module**: auth
    **Evidence**: command `npm test`
    **Confidence**: medium
    **Seen**: 1
    **Last verified**: 2025-01-15T14:45:00Z

Records under a ``# Archive`` heading are kept for people but never given to a worker;
records not verified for ``memory_stale_after`` move there. Every function here takes text
and returns text or values: reading and writing the files is the caller's business.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from memento_gh.layout import MEMORY_FILE_NAMES, MEMORY_FOLDER
from memento_gh.markdown import NORMAL, CodeTracker
from memento_gh.plan import values
from memento_gh.plan.model import ERROR, WARNING, Problem
from memento_gh.plan.scanner import split_lines

if TYPE_CHECKING:  # datetime is imported where times are used: validate's start-up budget
    from datetime import datetime

    from memento_gh.formats.status_log import ParsedEntry
    from memento_gh.formats.status_log import Record as StatusRecord
    from memento_gh.plan.model import Task

KNOWN_ISSUE, DECISION, PREFERENCE = "known-issue", "decision", "preference"
KINDS = (KNOWN_ISSUE, DECISION, PREFERENCE)
FOLDER = MEMORY_FOLDER  # under the plan folder: docs/memory/
FILE_NAMES: Mapping[str, str] = dict(zip(KINDS, MEMORY_FILE_NAMES, strict=True))
KIND_OF_FILE: Mapping[str, str] = {name: kind for kind, name in FILE_NAMES.items()}
CONFIDENCES = ("high", "medium", "low")
GLOBAL = "global"  # the task of a record that belongs to no task
LESSONS_BUDGET = 2048  # bytes a worker's prompt gives to lessons
MAX_LESSONS = 8
ITEM_BYTES = 600  # one lesson's most, so that one long record cannot take the whole budget
#: What the "## Lessons" heading and the blank lines around the section cost in the prompt.
SECTION_OVERHEAD = 40

# Labels, in the order the engine writes them. The first of each kind is its main text.
_SHARED = ("Task", "Module", "Evidence", "Confidence")
LABELS: Mapping[str, tuple[str, ...]] = {
    KNOWN_ISSUE: (
        "Symptom",
        "Root cause",
        "Fix",
        "Applies",
        "Found",
        "Signature",
        *_SHARED,
        "Seen",
        "Last verified",
    ),
    DECISION: ("Decision", "Context", "Options", "Reason", *_SHARED, "Last verified"),
    PREFERENCE: ("Preference", *_SHARED, "Last verified"),
}
REQUIRED: Mapping[str, tuple[str, ...]] = {
    KNOWN_ISSUE: ("Symptom", "Fix", "Signature", "Task", "Evidence", "Confidence", "Last verified"),
    DECISION: ("Decision", "Task", "Evidence", "Confidence", "Last verified"),
    PREFERENCE: ("Preference", "Task", "Evidence", "Confidence", "Last verified"),
}
NOUNS = {KNOWN_ISSUE: "known issue", DECISION: "decision", PREFERENCE: "preference"}
TITLES = {KNOWN_ISSUE: "Known issues", DECISION: "Decisions", PREFERENCE: "Preferences"}
_INTRO = {
    KNOWN_ISSUE: "Written by memento: when a task that failed passes, the failure's error "
    "signature (paths, numbers, hashes and times replaced) becomes a record here, or raises "
    "the Seen count of the record that has it.",
    DECISION: "Added with `memento learn decision TOPIC TEXT --evidence FILE` (or "
    "--evidence-cmd); learning a topic again updates its record.",
    PREFERENCE: "Added with `memento learn preference CATEGORY TEXT --evidence FILE` (or "
    "--evidence-cmd); one record per category (code style, commits, tools, project...).",
}

_FIELD = re.compile(
    r"(?:[-*+][ \t]+)?\*\*(?P<label>[^*]+?)(?::\*\*|\*\*[ \t]*:)[ \t]*(?P<value>.*?)[ \t]*$"
)
_RECORD_HEADING = re.compile(r"##[ \t]+(?P<title>.*?)(?:[ \t]+#+)?[ \t]*$")
_TOP_HEADING = re.compile(r"#[ \t]+(?P<title>.*?)(?:[ \t]+#+)?[ \t]*$")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*")
_DATED = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})[ \t]*:[ \t]*(?P<topic>\S.*)")
_EVIDENCE = re.compile(r"(?P<kind>file|command|comment)[ \t]+(?P<rest>\S.*)", re.IGNORECASE)
EVIDENCE_KINDS = ("file", "command", "comment")
_MODULE = re.compile(r"[^\]\s,]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BACKTICKS = re.compile(r"`+")


class Evidence(NamedTuple):
    """What a person can check the lesson against: a file, a command to run, or the
    comment (its URL) in which a person told memento the lesson on GitHub."""

    kind: str  # "file" | "command" | "comment"
    value: str

    def render(self) -> str:
        return f"{self.kind} {code_span(self.value)}"


class Field(NamedTuple):
    label: str  # canonical ("Last verified") when known, else as written
    value: str  # continuation lines joined with a space
    line: int  # 0-based index of its first line
    end: int  # 0-based index of its last (continuation) line
    start: int  # column where the value starts in its first line


class Record(NamedTuple):
    kind: str
    title: str
    line: int  # 0-based index of its ``##`` heading
    end: int  # index after its last non-blank line
    fields: Mapping[str, Field]
    archived: bool

    def value(self, label: str) -> str | None:
        found = self.fields.get(label)
        return None if found is None else found.value

    @property
    def key(self) -> str:
        """What makes two records the same: the signature, topic or category."""
        if self.kind == KNOWN_ISSUE:
            raw = self.value("Signature") or ""
            return _lenient_code(raw) or raw
        if self.kind == DECISION:
            dated = _DATED.fullmatch(self.title)
            return dated.group("topic") if dated else self.title
        return self.title

    @property
    def text(self) -> str:
        """The record's main statement: its symptom, decision or preference."""
        raw = self.value(LABELS[self.kind][0]) or ""
        return (_lenient_code(raw) or raw) if self.kind == KNOWN_ISSUE else raw

    @property
    def task(self) -> str | None:
        raw = (self.value("Task") or "").strip()
        return raw or None

    @property
    def modules(self) -> tuple[str, ...]:
        return parse_modules(self.value("Module") or "")

    @property
    def evidence(self) -> Evidence | None:
        try:
            return parse_evidence(self.value("Evidence") or "")
        except ValueError:
            return None

    @property
    def confidence(self) -> str | None:
        raw = (self.value("Confidence") or "").strip().lower()
        return raw if raw in CONFIDENCES else None

    @property
    def last_verified(self) -> datetime | None:
        try:
            return values.parse_time(self.value("Last verified") or "")
        except ValueError:
            return None

    @property
    def seen(self) -> int:
        try:
            return values.parse_int(self.value("Seen") or "1", minimum=1)
        except ValueError:
            return 1


class Memory(NamedTuple):
    records: tuple[Record, ...]
    problems: tuple[Problem, ...]
    archive_line: int | None  # the ``# Archive`` heading
    #: The problem of a fence or comment never closed: whatever is added below it is hidden.
    unclosed: Problem | None = None

    def find(self, key: str) -> Record | None:
        """The record with this signature, topic or category (active or archived)."""
        wanted = same_key(key)
        return next((record for record in self.records if same_key(record.key) == wanted), None)

    def active(self) -> tuple[Record, ...]:
        return tuple(record for record in self.records if not record.archived)


class Hidden(ValueError):
    """A record added to the file would be hidden (by a fence or comment never closed)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(f"line {problem.line}: {problem.message}")


def same_key(key: str) -> str:
    """Topics and categories match whatever their case and spacing."""
    return " ".join(key.split()).casefold()


# -- values ----------------------------------------------------------------------------------


def parse_evidence(raw: str) -> Evidence:
    match = _EVIDENCE.fullmatch(raw.strip())
    if match is None:
        raise ValueError(
            "write the evidence as 'file `path/in/the/repo`', 'command `the command`' or "
            "'comment `https://…`'"
        )
    kind, rest = match.group("kind").lower(), match.group("rest")
    if kind == "command":
        return Evidence(kind, values.parse_code(rest))
    return Evidence(kind, _lenient_code(rest) or rest.strip())


def parse_modules(raw: str) -> tuple[str, ...]:
    """``auth, db`` or ``[MODULE:auth], [MODULE:db]`` -> ("auth", "db")."""
    names = []
    for part in raw.split(","):
        name = part.strip().removeprefix("[MODULE:").removesuffix("]").strip()
        if name and name not in ("-", "—"):
            names.append(name)
    return tuple(names)


def code_span(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it holds."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def one_line(text: str) -> str:
    """Line breaks, tabs and control characters folded into single spaces."""
    return " ".join(_CONTROL.sub(" ", text).split())


def _lenient_code(raw: str) -> str | None:
    try:
        return values.parse_code(raw)
    except ValueError:
        return None


# -- reading ---------------------------------------------------------------------------------


def parse_memory(text: str, kind: str, check: bool = True) -> Memory:
    """The records of a memory file of ``kind``; with ``check``, also what is wrong in it
    (a tick that only wants the records leaves the checks to the validator)."""
    lines, _ = split_lines(text.removeprefix("\ufeff"))
    return _Reader(lines, kind, check).run()


class _Reader:
    def __init__(self, lines: list[str], kind: str, check: bool) -> None:
        self.lines = lines
        self.kind = kind
        self.check = check
        self.code = CodeTracker()
        self.records: list[Record] = []
        self.problems: list[Problem] = []
        self.archive_line: int | None = None
        self.open: tuple[int, str] | None = None  # the heading being read
        self.fields: dict[str, Field] = {}
        self.last: str | None = None  # the label a continuation line extends
        self.content_end = 0

    def run(self) -> Memory:
        for number, line in enumerate(self.lines):
            stripped = line.lstrip(" \t")
            if self.code.step(number, stripped) != NORMAL:
                self._content(number)
                continue
            self._line(number, line, stripped)
        self._close()
        unclosed = None
        if self.code.opening is not None:
            opening = self.code.opening
            unclosed = Problem(
                opening.line + 1,
                ERROR,
                f"this code fence or HTML comment is never closed, so every record below "
                f"it is hidden; close it with {opening.closer}",
            )
            self.problems.append(unclosed)
        if self.check:
            self.problems += _duplicates(self.records)
        problems = sorted(self.problems, key=lambda problem: problem.line)
        return Memory(tuple(self.records), tuple(problems), self.archive_line, unclosed)

    def _line(self, number: int, line: str, stripped: str) -> None:
        first = stripped[:1]  # one look tells most lines apart: a big memory is read per task
        if first == "#":
            heading = _RECORD_HEADING.fullmatch(stripped)
            if heading:
                self._close()
                self.open, self.fields, self.last = (number, heading.group("title")), {}, None
                self.content_end = number + 1
                return
            top = _TOP_HEADING.fullmatch(stripped)
            if top:
                self._close()
                if top.group("title").strip().casefold() == "archive":
                    self.archive_line = number
                return
        elif not stripped.strip():
            self.last = None
            return
        elif first in "-*_" and _THEMATIC_BREAK.fullmatch(stripped):
            self._close()
            return
        field = _FIELD.fullmatch(stripped) if first in "*-+" else None
        if field:
            self._field(number, line, stripped, field)
        elif self.last is not None and line[:1] in (" ", "\t"):
            # An indented line continues the field above; any other line is the record's
            # own text (a person's remark), which no field rewrite touches.
            previous = self.fields[self.last]
            value = f"{previous.value} {stripped.strip()}".strip()
            self.fields[self.last] = previous._replace(value=value, end=number)
        else:
            self.last = None
        self._content(number)

    def _field(self, number: int, line: str, stripped: str, match: re.Match[str]) -> None:
        if self.open is None:
            self.problems.append(
                Problem(
                    number + 1,
                    ERROR,
                    f"this field belongs to no {NOUNS[self.kind]}; put a '## title' heading "
                    "(after a '---' line) above it",
                )
            )
            return
        label = canonical_label(self.kind, match.group("label"))
        if label in self.fields:
            first = self.fields[label].line + 1
            self.problems.append(
                Problem(
                    number + 1,
                    ERROR,
                    f"a second **{label}** line in this record (the first is line {first}); "
                    "keep one",
                )
            )
            self.last = None
            return
        start = len(line) - len(stripped) + match.start("value")
        self.fields[label] = Field(label, match.group("value"), number, number, start)
        self.last = label

    def _content(self, number: int) -> None:
        if self.open is not None:
            self.content_end = number + 1

    def _close(self) -> None:
        if self.open is None:
            return
        number, title = self.open
        archived = self.archive_line is not None
        record = Record(self.kind, title, number, self.content_end, self.fields, archived)
        self.records.append(record)
        if self.check:
            self.problems += record_problems(record)
        self.open, self.fields, self.last = None, {}, None


@functools.lru_cache(maxsize=256)
def canonical_label(kind: str, raw: str) -> str:
    """``last-verified``, ``Last Verified`` and ``last_verified`` are all "Last verified"."""
    wanted = " ".join(raw.replace("-", " ").replace("_", " ").split()).casefold()
    return next((label for label in LABELS[kind] if label.casefold() == wanted), raw.strip())


# -- checking --------------------------------------------------------------------------------


def record_problems(record: Record) -> list[Problem]:
    """What is wrong with one record, each at its line."""
    noun = NOUNS[record.kind]
    heading = record.line + 1
    if record.title.strip().casefold() == "archive":
        return [
            Problem(
                heading,
                ERROR,
                "the archive section's heading is '# Archive' (one #); "
                "'## Archive' reads as a record",
            )
        ]
    problems = [
        Problem(heading, ERROR, f"this {noun} has no **{label}** line; add one")
        for label in REQUIRED[record.kind]
        if label not in record.fields
    ]
    if record.kind == DECISION and not _DATED.fullmatch(record.title):
        problems.append(
            Problem(heading, ERROR, "write a decision's heading as '## 2025-01-15: topic'")
        )
    if not record.title.strip():
        problems.append(Problem(heading, ERROR, f"this {noun}'s heading has no title"))
    known = LABELS[record.kind]
    for field in record.fields.values():
        problem = _field_problem(record.kind, field) if field.label in known else None
        if field.label not in known:
            problem = (
                WARNING,
                f"memento does not know the field **{field.label}** in a {noun}; "
                f"the fields are {', '.join(known)}",
            )
        if problem:
            problems.append(Problem(field.line + 1, *problem))
    return problems


def _field_problem(kind: str, field: Field) -> tuple[str, str] | None:
    value = field.value.strip()
    if not value:
        return ERROR, f"**{field.label}** is empty; write its value after the colon"
    message = None
    if field.label == "Confidence" and value.lower() not in CONFIDENCES:
        message = f"confidence {value!r} is not one of {', '.join(CONFIDENCES)}"
    elif field.label == "Task" and value != GLOBAL and not values.TASK_ID.fullmatch(value):
        message = f"task {value!r} must be a task ID like T-201, or {GLOBAL}"
    elif field.label in ("Module", "Evidence", "Seen", "Last verified", "Signature"):
        message = _typed_problem(field.label, value)
    return (ERROR, message) if message else None


def _typed_problem(label: str, value: str) -> str | None:
    try:
        if label == "Last verified":
            values.parse_time(value)
        elif label == "Evidence":
            parse_evidence(value)
        elif label == "Seen":
            values.parse_int(value, minimum=1)
        elif label == "Signature" and _lenient_code(value) is None:
            return "signature: write it as a code span, e.g. `TypeError: {name} is not a function`"
        elif label == "Module":
            bad = [name for name in parse_modules(value) if not _MODULE.fullmatch(name)]
            if bad:
                return f"module {bad[0]!r} is not a module name like auth"
    except ValueError as error:
        return f"{label.lower()}: {error}"
    return None


def _duplicates(records: Sequence[Record]) -> list[Problem]:
    seen: dict[str, Record] = {}
    problems = []
    for record in records:
        key = same_key(record.key)
        if not key:
            continue
        first = seen.setdefault(key, record)
        if first is not record:
            what = {KNOWN_ISSUE: "signature", DECISION: "topic", PREFERENCE: "category"}
            problems.append(
                Problem(
                    record.line + 1,
                    ERROR,
                    f"this {NOUNS[record.kind]} has the same {what[record.kind]} as the one at "
                    f"line {first.line + 1}; merge them into one record",
                )
            )
    return problems


def memory_problems(text: str, file_name: str) -> list[Problem]:
    """The problems of ``known-issues.md``, ``decisions.md`` or ``preferences.md``."""
    return list(parse_memory(text, KIND_OF_FILE[file_name]).problems)


# -- writing ---------------------------------------------------------------------------------


def empty_file(kind: str) -> str:
    """A new memory file: its title and what belongs in it, in a comment."""
    return f"# {TITLES[kind]}\n\n<!-- {_INTRO[kind]} -->\n"


def render_record(title: str, fields: Iterable[tuple[str, str]]) -> list[str]:
    """A record's lines, the rule before it included."""
    body = [f"**{label}**: {one_line(value)}" for label, value in fields]
    return ["---", "", f"## {_title(title)}", "", *body]


def _title(text: str) -> str:
    title = one_line(text).lstrip("#").strip()
    if not title or title.casefold() == "archive":
        return f"{title or 'untitled'} (record)"
    return title


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
    if one_line(record.title) != _title(title):
        line = edited.lines[record.line]
        edited.lines[record.line] = line[: len(line) - len(line.lstrip())] + f"## {_title(title)}"
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
        if parse_modules(name) != (name,) or not _MODULE.fullmatch(name):
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
    if before > 0 and _THEMATIC_BREAK.fullmatch(lines[before - 1].strip()):
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


def is_fresh(record: Record, now: datetime, stale_after: float) -> bool:
    """Verified within ``stale_after`` seconds; a record of unknown age is not fresh."""
    verified = record.last_verified
    return verified is not None and (now - verified).total_seconds() <= stale_after


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

_SOURCE_EXTENSIONS = (
    "py|pyi|js|jsx|mjs|cjs|ts|tsx|json|ya?ml|toml|md|txt|cfg|ini|c|h|cc|cpp|hpp|rs|go|java|kt"
    "|rb|php|cs|swift|sh|sql|html|css|vue|lock|log|xml|csv"
)
#: (pattern, placeholder) in the order ``signature`` applies them: a path may hold a hash
#: or a number, a time holds numbers.
_VARIABLE_PARTS = (
    (
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
        r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b",
        "{time}",
    ),
    (r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b", "{uuid}"),
    (
        r"(?:[A-Za-z]:)?[\w.~@+-]*(?:[/\\][\w.~@+-]+)+[/\\]?"
        rf"|\b[\w-]+\.(?:{_SOURCE_EXTENSIONS})\b"
        r"|\b[\w-]+\.\w{1,8}(?=:\d)",
        "{path}",
    ),
    (r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b", "{hash}"),
    # A number of its own, with its unit (3s, 12ms, 5MB, 80%): not the digits of sha256 or TS2304.
    (r"(?<![\w.])\d+(?:\.\d+)*(?:(?i:ms|s|m|h|d|[kmgt]i?b)|%)?(?![\w])", "{n}"),
)
#: A line that names an error, then a line with an error word: the best and second best.
_ERROR_LINES = (
    r"\b[A-Z]\w*(?:Error|Exception|Failure)\b|^E\s|\berror(?:\[\w+\])?:|\berror [A-Z]+\d+",
    r"(?i)\b(?:error|fatal|panic|failed|failure|cannot|can't|no such|not found|undefined|"
    r"denied|refused|missing|invalid|unexpected)\b",
)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """Compiled on first use: ``memento validate`` reads memory files but learns nothing."""
    return re.compile(pattern)


SIGNATURE_CHARS = 200
_ENGINE_ANALYSIS = r"verify exited with code -?\d+: "


def signature(text: str) -> str:
    """An error line with what differs between two occurrences of the same error - times,
    ids, hashes, paths, numbers - replaced by ``{time}``, ``{uuid}``, ``{hash}``, ``{path}``
    and ``{n}``: the same mistake made elsewhere has the same signature."""
    found = one_line(text)
    for pattern, placeholder in _VARIABLE_PARTS:
        found = _compiled(pattern).sub(placeholder, found)
    return found[:SIGNATURE_CHARS].rstrip()


def error_line(output: str) -> str | None:
    """The line of a verify output that names the error: a named error or exception, else
    one with an error word, else all the lines (a summary line alone would merge unrelated
    failures into one signature)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for pattern in map(_compiled, _ERROR_LINES):
        found = next((line for line in lines if pattern.search(line)), None)
        if found is not None:
            return _compiled(r"^E\s+").sub("", found)  # pytest's "E   " margin
    return " ⏎ ".join(lines) or None


def failure_signature(entry: ParsedEntry) -> str | None:
    """The signature of a failed run whose verify ran and failed; None for other failures
    (a guard violation, a timeout, a dead agent), which teach nothing about the code."""
    if entry.exit_code in (None, 0):
        return None
    line = error_line(entry.verify_head or "")
    if line is None:
        return None
    found = signature(line)
    words = _compiled(r"\{(?:time|uuid|path|hash|n)\}").sub("", found)
    return found if any(char.isalpha() for char in words) else None


def last_failure(records: Sequence[StatusRecord], task_id: str) -> ParsedEntry | None:
    """The newest status entry of ``task_id`` when it is a failure, else None.

    Read it before the tick appends this run's entry: afterwards the newest entry is this run.
    """
    from memento_gh.formats.status_log import BLOCKED, FAILED, ParsedEntry

    for record in reversed(records):
        if isinstance(record, ParsedEntry) and record.task_id == task_id:
            return record if record.outcome in (FAILED, BLOCKED) else None
    return None


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
    if not analysis or _compiled(_ENGINE_ANALYSIS).match(analysis):
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


# -- lessons for a worker's prompt -----------------------------------------------------------


def lessons_for(
    records: Iterable[Record],
    task: Task,
    *,
    last_failure: str | None,
    now: datetime,
    stale_after: float,
    budget: int = LESSONS_BUDGET,
) -> tuple[str, ...]:
    """The few lessons worth a worker's attention on ``task``, most relevant first, within
    ``budget`` bytes of prompt: the known issue whose signature is ``last_failure`` (the
    signature of the task's last failed run), then records of this task, then of its
    module, then the decisions and preferences that name no module. Archived records and
    records not verified within ``stale_after`` seconds are never given.

    Each lesson is one line, for ``prompt.build_prompt(lessons=...)``; the bytes they add to
    the prompt (heading included) stay within ``budget``.
    """
    import heapq

    candidates = []
    for index, record in enumerate(records):
        rank = None if record.archived else _relevance(record, task, last_failure)
        verified = None if rank is None else record.last_verified
        if verified is None or (now - verified).total_seconds() > stale_after:
            continue
        candidates.append((rank, -verified.timestamp(), -record.seen, index, record))
    chosen: list[str] = []
    spent = SECTION_OVERHEAD
    # The best few are enough: a lesson is at most ITEM_BYTES, so these fill any sane budget.
    for rank, *_, record in heapq.nsmallest(4 * MAX_LESSONS, candidates):
        item = _lesson(record, matched=rank == 0)
        cost = len(item.encode("utf-8")) + 3  # "- " and the line break
        if spent + cost > budget:
            continue
        chosen.append(item)
        spent += cost
        if len(chosen) == MAX_LESSONS:
            break
    return tuple(chosen)


def _relevance(record: Record, task: Task, last_failure: str | None) -> int | None:
    """0 for the known issue of the task's last failure, 1 for its own records, 2 for its
    module's, 3 for decisions and preferences of no module; None when unrelated."""
    if (
        record.kind == KNOWN_ISSUE
        and last_failure
        and same_key(record.key) == same_key(last_failure)
    ):
        return 0
    if record.task == task.id:
        return 1
    if task.module and task.module in record.modules:
        return 2
    if record.kind != KNOWN_ISSUE and not record.modules:
        return 3
    return None


def _lesson(record: Record, matched: bool) -> str:
    """One line: the record's statement first, then where it came from."""
    if record.kind == KNOWN_ISSUE:
        lead = "Known issue (your task's last run failed like this)" if matched else "Known issue"
        parts = [
            f"{lead}: {_cut(record.text, 160)}",
            f"Root cause: {_cut(record.value('Root cause') or 'unknown', 160)}",
            f"Fix: {_cut(record.value('Fix') or 'unknown', 160)}",
        ]
    elif record.kind == DECISION:
        parts = [f"Decision on {_cut(record.key, 60)}: {_cut(record.text, 240)}"]
        reason = record.value("Reason")
        if reason:
            parts.append(f"Reason: {_cut(reason, 120)}")
    else:
        parts = [f"Preference for {_cut(record.key, 60)}: {_cut(record.text, 300)}"]
    line = ". ".join(part.rstrip(". ") for part in parts) + f". ({_provenance(record)})"
    return _fit(line, ITEM_BYTES)


def _provenance(record: Record) -> str:
    bits = [record.task or GLOBAL]
    if record.kind == KNOWN_ISSUE:
        bits.append(f"seen {record.seen}x")
    bits.append(f"confidence {record.confidence or 'unknown'}")
    verified = record.last_verified
    if verified is not None:
        bits.append(f"verified {values.format_time(verified)[:10]}")
    evidence = record.evidence
    if evidence is not None:
        bits.append(f"evidence: {evidence.kind} {code_span(_cut(evidence.value, 100))}")
    return ", ".join(bits)


def _cut(text: str, limit: int) -> str:
    flat = one_line(text)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _fit(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, an ellipsis marking the cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore").rstrip() + "…"


def read_all(texts: Mapping[str, str]) -> list[Record]:
    """The records of the memory files, by kind (``{KNOWN_ISSUE: text, ...}``)."""
    return [
        record
        for kind, text in texts.items()
        for record in parse_memory(text, kind, check=False).records
    ]
