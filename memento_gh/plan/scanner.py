"""Line scanner for ``MASTER_PLAN.md``.

A line scanner, not a Markdown renderer, so that every element keeps the exact lines and
columns it came from and an edit can rewrite just those bytes. It knows the parts of
Markdown that decide whether a line is a task: fenced code blocks (``` and ~~~, any
length), HTML comments, headings and list items. Where a section holds Markdown the
scanner's simple reading might not share with CommonMark (indented or nested items,
quotes, ordered lists, raw HTML, code), it marks the section "unusual" so that the
validator can check it against mistune.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager

from memento_gh.markdown import INSIDE, NORMAL, CodeTracker
from memento_gh.plan.model import (
    MARKERS,
    Field,
    MetaEntry,
    Phase,
    Plan,
    Problem,
    Rule,
    Task,
)
from memento_gh.plan.rules import META_SECTION, SYNTAX

_PHASE_HEADING = re.compile(r"Phase[ \t]+(\d+)\b[ \t]*(?:[:：.–—-][ \t]*)?(.*)$", re.IGNORECASE)
_TASK_REST = re.compile(
    r"[ \t]+`(?P<id>[^`\s]+)`"
    r"(?:[ \t]+\[MODULE:(?P<module>[^\]\s]*)\])?"
    r"(?P<desc>(?:[ \t].*)?)$"
)
# A field line in its usual shape (2-5 spaces of indentation: the scanner's reading is then
# surely CommonMark's); every other shape goes through the general path.
_PLAIN_FIELD = re.compile(r"( {2,5})- ([A-Za-z][A-Za-z0-9_]*):(?:[ \t]+|$)")
_KEY_VALUE = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+|$)")
_PHASE_COMMENT = re.compile(
    r"<!--[ \t]*(parallel|depends|review)[ \t]*:[ \t]*(.*?)[ \t]*-->[ \t]*$"
)
REVIEW_VALUES = ("true", "false", "approved")
_ORDERED_BULLET = re.compile(r"\d{1,9}[.)](?=[ \t]|$)")
_TASK_ID = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """Lines without their endings, and the endings (``\\n``, ``\\r\\n``, ``\\r`` or ``""``)."""
    if "\r" not in text:
        lines = text.split("\n")
        eols = ["\n"] * (len(lines) - 1) + [""]
        if lines[-1] == "" and len(lines) > 1:
            lines.pop()
            eols.pop()
        return lines, eols
    lines, eols = [], []
    for match in _LINE.finditer(text):
        content, eol = match.groups()
        if not content and not eol:
            break
        lines.append(content)
        eols.append(eol)
    return lines, eols


class _OpenTask:
    """A task whose field lines are still being read."""

    __slots__ = (
        "description",
        "fields",
        "id",
        "indent",
        "indent_width",
        "last",
        "line",
        "marker",
        "marker_col",
        "module",
        "phase",
    )

    def __init__(
        self,
        task_id: str,
        marker: str,
        module: str | None,
        description: str,
        line: int,
        marker_col: int,
        indent: str,
        phase: int,
    ) -> None:
        self.id = task_id
        self.marker = marker
        self.module = module
        self.description = description
        self.line = line
        self.marker_col = marker_col
        self.indent = indent
        self.indent_width = len(indent)
        self.phase = phase
        self.last = line
        self.fields: dict[str, Field] = {}


class _OpenPhase:
    """A phase whose tasks are still being read."""

    def __init__(self, number: int, title: str, line: int) -> None:
        self.number = number
        self.title = title
        self.line = line
        self.parallel: bool | None = None
        self.depends: tuple[int, ...] | None = None
        self.depends_line: int | None = None
        self.task_ids: list[str] = []
        self.review: str | None = None
        self.review_line: int | None = None


class _Scanner:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.problems: list[Problem] = []
        self.title: str | None = None
        # preamble | meta | phase | other | misread (a heading meant as a phase's)
        self.section = "preamble"
        self.meta_line: int | None = None
        self.meta_end: int | None = None
        self.meta: dict[str, MetaEntry] = {}
        self.phases: list[Phase] = []
        self.phase: _OpenPhase | None = None
        self.phase_numbers: dict[int, int] = {}
        self.tasks: list[Task] = []
        self.task: _OpenTask | None = None
        self.checkbox_lines: list[int] = []
        self.code = CodeTracker()
        self.chunk_start = 0
        self.chunk_unusual = False
        self.unusual_chunks: list[tuple[int, int]] = []

    # -- driver ---------------------------------------------------------------------------

    def run(self) -> None:
        code = self.code
        lines = self.lines
        number, total = 0, len(lines)
        while number < total:
            line = lines[number]
            stripped = line.lstrip(" \t")
            if not stripped and not code.open:
                number += 1
                continue
            if code.open or stripped[0] in "`~<":
                kind = code.step(number, stripped)
                if kind != NORMAL:
                    self._code_line(line, stripped, kind)
                    number += 1
                    continue
            if line[:3] == "- [" and line[4:5] == "]" and line[5:6] in ("", " ", "\t"):
                # A task line at the margin, the other common line: straight to the reader.
                number += self._margin_task(number, line)
                continue
            if self.task is not None and stripped[0] == "-":
                read = self._field_lines(number)
                if read:
                    number += read
                    continue
            self._line(number, line, stripped)
            number += 1
        self._finish()

    def _code_line(self, line: str, stripped: str, kind: str) -> None:
        self.chunk_unusual = True
        task = self.task
        if kind != INSIDE and task and len(line) - len(stripped) <= len(task.indent):
            self._close_task()

    def _field_lines(self, first: int) -> int:
        """Read the run of ``  - key: value`` lines under the open task that starts at
        ``first`` in one tight loop (a large plan is mostly field lines); returns how many
        lines it read, 0 leaving the line to ``_line``, which reads every other shape."""
        task = self.task
        assert task is not None
        lines, fields, width = self.lines, task.fields, task.indent_width
        match_field = _PLAIN_FIELD.match
        number, total = first, len(lines)
        while number < total:
            line = lines[number]
            found = match_field(line)
            # (a task at the margin, the usual case, takes any field indentation)
            if found is None or (width and found.end(1) <= width):
                break
            key = found.group(2)
            start = found.end()
            value = line[start:].rstrip(" \t")
            if key in fields:
                self._duplicate_field(number, key)
            else:
                fields[key] = Field(key, value, number, start, start + len(value))
            number += 1
        if number > first:
            task.last = number - 1
        return number - first

    def _finish(self) -> None:
        end = len(self.lines)
        if self.code.opening is not None:
            what = "code fence" if self.code.opening.closer != "-->" else "HTML comment"
            # An error: the tasks after it would be skipped without a word.
            self._problem(
                self.code.opening.line,
                f"this {what} is never closed, so nothing after it is read; "
                f"close it with {self.code.opening.closer}",
            )
        self._close_task()
        self._close_section(end)
        self._close_chunk(end)

    # -- one line -------------------------------------------------------------------------

    def _line(self, number: int, line: str, stripped: str) -> None:
        indent = len(line) - len(stripped)
        lead = stripped[0]
        if lead == "<" and stripped.startswith("<!--"):
            self._comment(number, stripped, indent)
            return
        if lead == "#" and indent <= 3 and self._heading(number, stripped, indent):
            return
        if self.task is not None and indent <= len(self.task.indent):
            self._close_task()
        if not self._list_item(number, line, stripped, indent):
            self._plain_text(stripped, indent)
        if self.task is not None:
            self.task.last = max(self.task.last, number)

    def _plain_text(self, stripped: str, indent: int) -> None:
        if indent or not (stripped[0].isalpha() or _is_thematic_break(stripped)):
            self.chunk_unusual = True

    def _comment(self, number: int, stripped: str, indent: int) -> None:
        """A one-line HTML comment (the tracker handles the ones that span lines)."""
        if indent:
            self.chunk_unusual = True
        if self.task is not None and indent <= len(self.task.indent):
            self._close_task()
        match = _PHASE_COMMENT.match(stripped)
        if match and self.phase is not None:
            self._phase_setting(number, match.group(1), match.group(2))

    def _heading(self, number: int, stripped: str, indent: int) -> bool:
        level = len(stripped) - len(stripped.lstrip("#"))
        if level > 6 or (len(stripped) > level and stripped[level] not in " \t"):
            return False
        text = _heading_text(stripped[level:])
        if indent:
            self.chunk_unusual = True
        else:
            self._close_chunk(number)
        self._close_task()
        if level == 1:
            self._close_section(number)
            self.section = "other" if self.title is not None else "preamble"
            if self.title is None:
                self.title = text
        elif level == 2:
            self._close_section(number)
            self._open_section(number, text)
        return True

    def _open_section(self, number: int, text: str) -> None:
        match = _PHASE_HEADING.match(text)
        if match:
            self._open_phase(number, int(match.group(1)), match.group(2).strip())
        elif text.strip().lower() == "meta":
            if self.meta_line is not None:
                self._problem(
                    number,
                    f"a second ## Meta section (the first is at line "
                    f"{self.meta_line + 1}); merge them into one",
                    META_SECTION,
                )
            self.section = "meta"
            self.meta_line = number
        elif re.match(r"phase(\b|[ \t]*\d)", text, re.IGNORECASE):
            # Its tasks are in no phase: this line says why, once, rather than each of them.
            self.section = "misread"
            self._problem(number, _misread_phase(text))
        else:
            self.section = "other"

    def _open_phase(self, number: int, phase_number: int, title: str) -> None:
        if phase_number in self.phase_numbers:
            first = self.phase_numbers[phase_number] + 1
            self._problem(
                number,
                f"Phase {phase_number} is declared twice (first at line {first}); "
                "give each phase its own number",
            )
        else:
            self.phase_numbers[phase_number] = number
        self.section = "phase"
        self.phase = _OpenPhase(phase_number, title, number)

    def _close_section(self, end: int) -> None:
        if self.section == "meta":
            self.meta_end = end - 1
        if self.phase is not None:
            open_phase = self.phase
            self.phases.append(
                Phase(
                    number=open_phase.number,
                    title=open_phase.title,
                    line=open_phase.line,
                    end=end - 1,
                    parallel=open_phase.parallel,
                    depends=open_phase.depends,
                    depends_line=open_phase.depends_line,
                    task_ids=tuple(open_phase.task_ids),
                    review=open_phase.review,
                    review_line=open_phase.review_line,
                )
            )
            self.phase = None
        self.section = "other"

    def _close_chunk(self, end: int) -> None:
        if self.chunk_unusual and end > self.chunk_start:
            self.unusual_chunks.append((self.chunk_start, end))
        self.chunk_start = end
        self.chunk_unusual = False

    def _phase_setting(self, number: int, key: str, raw: str) -> None:
        assert self.phase is not None
        value = raw.strip()
        if key == "parallel":
            if self.phase.parallel is not None:
                self._problem(number, f"{self.phase_name()} sets parallel twice")
            if value.lower() in ("true", "yes"):
                self.phase.parallel = True
            elif value.lower() in ("false", "no"):
                self.phase.parallel = False
            else:
                self._problem(number, f"parallel must be true or false, not {value!r}")
            return
        if key == "review":
            self._review(number, value)
            return
        if self.phase.depends_line is not None:
            self._problem(number, f"{self.phase_name()} sets depends twice")
        self.phase.depends_line = number
        self.phase.depends = self._phase_depends(number, value)

    def _review(self, number: int, value: str) -> None:
        assert self.phase is not None
        if self.phase.review_line is not None:
            self._problem(number, f"{self.phase_name()} sets review twice")
        if value.lower() not in REVIEW_VALUES:
            self._problem(
                number,
                f"review must be true, false or approved, not {value!r}; write "
                "'<!-- review: true -->' to end the phase in a review gate",
            )
            return
        self.phase.review = value.lower()
        self.phase.review_line = number

    def _phase_depends(self, number: int, value: str) -> tuple[int, ...]:
        if value.lower() in ("none", ""):
            return ()
        found = []
        for part in value.split(","):
            match = re.fullmatch(r"(?:Phase[ \t]*)?(\d+)", part.strip(), re.IGNORECASE)
            if match is None:
                self._problem(
                    number,
                    f"depends: {part.strip()!r} is not a phase; write "
                    "'<!-- depends: Phase 1, Phase 2 -->' or '<!-- depends: none -->'",
                )
                continue
            found.append(int(match.group(1)))
        return tuple(found)

    def phase_name(self) -> str:
        return f"Phase {self.phase.number}" if self.phase else "this phase"

    # -- list items -----------------------------------------------------------------------

    def _list_item(self, number: int, line: str, stripped: str, indent: int) -> bool:
        """Handle a bullet or ordered list item; False when the line is not one."""
        lead = stripped[0]
        if lead in "-*+":
            marker_width = 1
        else:
            ordered = _ORDERED_BULLET.match(stripped) if lead.isdigit() else None
            if ordered is None:
                return False
            marker_width = ordered.end()
        rest = stripped[marker_width:]
        if rest and rest[0] not in " \t":
            return False
        content = rest.lstrip(" \t")
        content_col = indent + len(stripped) - len(content)
        is_box = len(content) >= 3 and content[0] == "[" and content[2] == "]"
        if is_box and (len(content) == 3 or content[3] in " \t"):
            self._checkbox(number, line, content, content_col, indent, ordered=lead not in "-*+")
            return True
        usual = lead == "-" and rest[:1] == " " and content[:1].isalpha()
        if usual and self.task is not None and indent > len(self.task.indent):
            if not 2 <= indent <= 5 or "\t" in line[:indent]:
                self.chunk_unusual = True
            self._field(number, content, content_col)
        elif usual and indent == 0 and self.section == "meta":
            self._meta_entry(number, content, content_col)
        elif indent or not usual:
            self.chunk_unusual = True
        return True

    def _margin_task(self, number: int, line: str) -> int:
        """``- [?] `ID` ...`` at the margin: what ``_checkbox`` does with such a line, minus
        the steps that cannot apply to it, when it is a well-formed task in a phase; then the
        run of field lines below it, which ``run`` would hand to ``_field_lines`` next (no
        code block can be open after this line). Returns the number of lines read."""
        match = _TASK_REST.match(line, 5)
        marker = "x" if line[3] == "X" else line[3]
        if match is None or self.section != "phase" or marker not in MARKERS:
            self._checkbox(number, line, line[2:], 2, 0, ordered=False)
            return 1
        self.checkbox_lines.append(number)
        if self.task is not None:
            self._close_task()
        self._open_task(number, line, match, marker, 3, 0)
        if self.task is None:
            return 1
        return 1 + self._field_lines(number + 1)

    def _checkbox(
        self, number: int, line: str, content: str, content_col: int, indent: int, ordered: bool
    ) -> None:
        self.checkbox_lines.append(number)
        if indent or ordered or line[1:3] != " [":
            self.chunk_unusual = True
        if self.task is not None:
            self._close_task()
        match = _TASK_REST.match(content, 3)
        if self.section != "phase":
            if match is not None and self.section != "misread":
                self._problem(
                    number,
                    "this task is not inside a phase; move it under a '## Phase N: Title' heading",
                )
            return
        if ordered:
            self._problem(number, "write tasks as bullet items ('- [ ] ...'), not numbered")
            return
        marker = content[1]
        if marker == "X":
            marker = "x"
        if marker not in MARKERS:
            self._problem(
                number,
                # quoted: the marker may be a control character that would split the line
                f"unknown status marker {content[:3]!r}; use [ ] pending, "
                "[x] done, [!] blocked, [~] running or [-] skipped",
            )
            return
        if match is None:
            self._problem(
                number,
                "malformed task line; write '- [ ] `T-101` [MODULE:name] description'",
            )
            return
        self._open_task(number, line, match, marker, content_col + 1, indent)

    def _open_task(
        self, number: int, line: str, match: re.Match[str], marker: str, col: int, indent: int
    ) -> None:
        assert self.phase is not None
        task_id, module, description = match.group(1, 2, 3)
        if not _TASK_ID.fullmatch(task_id):
            self._problem(
                number,
                f"task ID {task_id!r} must start with a letter and hold only "
                "letters, digits, '.', '_' and '-' (e.g. T-101)",
            )
            return
        description = description.strip()
        if description.startswith("[MODULE"):
            self._problem(number, "malformed module tag; write [MODULE:name] with no spaces")
        self.phase.task_ids.append(task_id)
        self.task = _OpenTask(
            task_id,
            marker,
            module,
            description,
            number,
            col,
            line[:indent],
            len(self.phases),
        )

    def _field(self, number: int, content: str, content_col: int) -> None:
        assert self.task is not None
        match = _KEY_VALUE.match(content)
        if match is None:
            return
        start = content_col + match.end()
        end = max(start, content_col + len(content.rstrip(" \t")))
        self._add_field(number, match.group("key"), self.lines[number][start:end], start, end)

    def _add_field(self, number: int, key: str, value: str, start: int, end: int) -> None:
        task = self.task
        assert task is not None
        if key in task.fields:
            self._duplicate_field(number, key)
        else:
            task.fields[key] = Field(key, value, number, start, end)

    def _duplicate_field(self, number: int, key: str) -> None:
        assert self.task is not None
        first = self.task.fields[key].line + 1
        self._problem(
            number,
            f"{self.task.id} has a second {key!r} line (first at line {first}); keep one",
        )

    def _meta_entry(self, number: int, content: str, content_col: int) -> None:
        found = _meta_value(self.lines[number], content, content_col)
        if found is None:
            self.chunk_unusual = True
            return
        key = found[0]
        if key in self.meta:
            first = self.meta[key].line + 1
            self._problem(
                number,
                f"Meta key {key!r} appears twice (first at line {first}); keep one",
                META_SECTION,
            )
            return
        self.meta[key] = MetaEntry(key, found[1], number, found[2], found[3])

    def _close_task(self) -> None:
        if self.task is None:
            return
        open_task = self.task
        self.tasks.append(
            Task(
                open_task.id,
                open_task.marker,
                open_task.module,
                open_task.description,
                open_task.line,
                open_task.last,
                open_task.marker_col,
                open_task.indent,
                open_task.phase,
                open_task.fields,
            )
        )
        self.task = None

    def _problem(self, number: int, message: str, rule: Rule = SYNTAX) -> None:
        self.problems.append(rule.problem(number + 1, message))


def read_plain_field(line: str, indent_width: int) -> tuple[str, str, int, int] | None:
    """``(key, value, start, end)`` of a field line in its usual shape under a task indented
    ``indent_width`` columns, exactly as ``_Scanner._field_lines`` reads it; None for any
    other line (the scanner's general path may still read it, differently)."""
    found = _PLAIN_FIELD.match(line)
    if found is None or found.end(1) <= indent_width:
        return None
    start = found.end()
    value = line[start:].rstrip(" \t")
    return found.group(2), value, start, start + len(value)


def read_meta_line(line: str) -> tuple[str, str, int, int] | None:
    """``(key, value, start, end)`` of a Meta entry line (``- key: value`` at the margin),
    exactly as the scanner reads it in a Meta section; None for any other line."""
    if line[:2] != "- ":
        return None
    content = line[1:].lstrip(" \t")
    if not content[:1].isalpha():
        return None
    return _meta_value(line, content, len(line) - len(content))


def _meta_value(line: str, content: str, content_col: int) -> tuple[str, str, int, int] | None:
    """The key, value and value columns of a Meta entry whose text after the bullet,
    ``content``, starts at column ``content_col`` of ``line``."""
    match = _KEY_VALUE.match(content)
    if match is None:
        return None
    start = content_col + match.end()
    body = content[match.end() :]
    comment = body.find("<!--")
    if comment >= 0:
        body = body[:comment]
    end = start + len(body.rstrip(" \t"))
    return match.group("key"), line[start:end], start, max(start, end)


def _misread_phase(text: str) -> str:
    """What is wrong with a heading meant as a phase's (``## Phase5: Typos``), and the
    heading it should be."""
    close = re.match(r"phase[ \t]*(\d+)[ \t]*[:：.–—-]?[ \t]*(.*)$", text, re.IGNORECASE)
    fixed = (
        f"## Phase {close.group(1)}: {close.group(2) or 'Title'}" if close else "## Phase N: Title"
    )
    return (
        f"{text!r} is not a phase heading; write '{fixed}' (until then the tasks under it "
        "are in no phase)"
    )


def _heading_text(rest: str) -> str:
    """A heading's text without its optional closing ``#`` run: only a run that follows a
    space or tab (or stands alone) closes the heading, so ``## Port to C#`` keeps its ``#``."""
    text = rest.strip(" \t")
    before_run = text.rstrip("#")
    if not before_run or before_run[-1] in " \t":
        return before_run.rstrip(" \t")
    return text


def _is_thematic_break(stripped: str) -> bool:
    compact = stripped.replace(" ", "").replace("\t", "")
    return len(compact) >= 3 and compact[0] in "-*_" and not compact.strip(compact[0])


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: reading a large plan allocates a few hundred
    thousand small objects, none in a cycle, and each collection the allocations trigger
    walks them all again for nothing (a fifth of validate's time on 10,000 tasks)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse(text: str) -> Plan:
    """Read a plan. Never raises on bad content: problems are in ``Plan.problems``."""
    bom = text.startswith("\ufeff")
    lines, eols = split_lines(text[1:] if bom else text)
    scanner = _Scanner(lines)
    with no_cyclic_gc():
        scanner.run()
    return Plan(
        lines=tuple(lines),
        eols=tuple(eols),
        bom=bom,
        title=scanner.title,
        meta_line=scanner.meta_line,
        meta=scanner.meta,
        meta_end=scanner.meta_end,
        phases=tuple(scanner.phases),
        tasks=tuple(scanner.tasks),
        problems=tuple(scanner.problems),
        checkbox_lines=tuple(scanner.checkbox_lines),
        unusual_chunks=tuple(scanner.unusual_chunks),
    )
