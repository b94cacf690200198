"""``docs/memory/*.md``: lessons that outlive a tick.

Three files, one kind of record each: ``known-issues.md`` (learned by the engine when a task
that failed passes), ``decisions.md`` and ``preferences.md`` (``memento learn``). A record
is a rule, a ``## title`` heading and ``**Field**: value`` lines; besides what it says, its
fields make it checkable: the task it came from, its evidence (a file or a command), a
confidence and when it was last verified::

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
records not verified for ``memory_stale_after`` move there.

This module is the format and its check: the records, reading them, rendering one, the
problems of a file, a new empty file. Learning (writing records, archiving) is
:mod:`memento_gh.formats.memory_learning`; choosing the lessons a task is given is
:mod:`memento_gh.formats.memory_selection`. Every function here takes text and returns text
or values: reading and writing the files is the caller's business.
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

KNOWN_ISSUE, DECISION, PREFERENCE = "known-issue", "decision", "preference"
KINDS = (KNOWN_ISSUE, DECISION, PREFERENCE)
FOLDER = MEMORY_FOLDER  # under the plan folder: docs/memory/
FILE_NAMES: Mapping[str, str] = dict(zip(KINDS, MEMORY_FILE_NAMES, strict=True))
KIND_OF_FILE: Mapping[str, str] = {name: kind for kind, name in FILE_NAMES.items()}
CONFIDENCES = ("high", "medium", "low")
GLOBAL = "global"  # the task of a record that belongs to no task

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
THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*")
_DATED = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})[ \t]*:[ \t]*(?P<topic>\S.*)")
_EVIDENCE = re.compile(r"(?P<kind>file|command|comment)[ \t]+(?P<rest>\S.*)", re.IGNORECASE)
EVIDENCE_KINDS = ("file", "command", "comment")
MODULE_NAME = re.compile(r"[^\]\s,]+")
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
        elif first in "-*_" and THEMATIC_BREAK.fullmatch(stripped):
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
            bad = [name for name in parse_modules(value) if not MODULE_NAME.fullmatch(name)]
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
    return ["---", "", f"## {heading_title(title)}", "", *body]


def heading_title(text: str) -> str:
    """``text`` as a record's heading holds it: one line, no leading ``#``, never "Archive"
    (which reads as the archive's heading)."""
    title = one_line(text).lstrip("#").strip()
    if not title or title.casefold() == "archive":
        return f"{title or 'untitled'} (record)"
    return title


def read_all(texts: Mapping[str, str]) -> list[Record]:
    """The records of the memory files, by kind (``{KNOWN_ISSUE: text, ...}``)."""
    return [
        record
        for kind, text in texts.items()
        for record in parse_memory(text, kind, check=False).records
    ]
