"""``HUMAN_NOTES.md``: ``### [NOTE] <time> → <target>`` entries, read or not, active or archived.

Notes memento writes (from GitHub comments, the dashboard, ``memento note``) look like::

    ### [NOTE] 2025-01-15T15:00:00Z → T-201
    <!-- source: https://github.com/o/r/issues/5#issuecomment-1 by @alice (OWNER) -->
    > Use Redis for sessions,
    > not PostgreSQL.

The text is data, quoted line by line: a quoted line cannot be a heading, a ``[NOTE]``
header, a task, a meta line, a fence or a comment that reaches past the quote.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from memento_gh.markdown import NORMAL, CodeTracker
from memento_gh.plan import values
from memento_gh.plan.model import ERROR, Problem
from memento_gh.plan.scanner import split_lines

if TYPE_CHECKING:
    from datetime import datetime

GLOBAL = "global"
_HEADER = re.compile(
    r"###[ \t]+\[NOTE(?P<read>:READ)?\][ \t]+(?P<time>\S+)"
    r"[ \t]+(?:→|->)[ \t]+(?P<target>\S+)[ \t]*$"
)
_LOOKS_LIKE_HEADER = re.compile(r"#{1,6}[ \t]*\[NOTE", re.IGNORECASE)
_SECTION_HEADING = re.compile(r"#{1,2}(?:[ \t]|$)")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}")
_SOURCE = re.compile(r"<!--[ \t]*source:[ \t]*(?P<source>.*?)[ \t]*-->[ \t]*")
_ACTIVE = re.compile(r"##[ \t]+Active[ \t]+Notes\b", re.IGNORECASE)
_ARCHIVE = re.compile(r"##[ \t]+Archive\b", re.IGNORECASE)
HEADER_FORMAT = "'### [NOTE] 2025-01-15T15:00:00Z → T-201' (or → global)"


class Note(NamedTuple):
    line: int  # 0-based index of the header
    read: bool
    time: str
    target: str
    body: str  # the text as in the file (quoted when memento wrote it)
    archived: bool
    source: str | None = None  # where the note came from, e.g. a comment's URL and author

    @property
    def text(self) -> str:
        """The body for display: without the ``> `` of a note written as a quote."""
        lines = self.body.split("\n")
        if not all(line.startswith(">") for line in lines if line.strip()):
            return self.body
        return "\n".join(_unquote(line) for line in lines)


class Notes(NamedTuple):
    notes: tuple[Note, ...]
    problems: tuple[Problem, ...]

    def active(self) -> tuple[Note, ...]:
        return tuple(note for note in self.notes if not note.archived)

    def pending_for(self, task_id: str) -> tuple[Note, ...]:
        return tuple(
            note for note in self.active() if not note.read and note.target in (task_id, GLOBAL)
        )


def parse_notes(text: str) -> Notes:
    lines, _ = split_lines(text.removeprefix("\ufeff"))
    code = CodeTracker()
    notes: list[Note] = []
    problems: list[Problem] = []
    archived = False
    open_header: tuple[int, re.Match[str]] | None = None
    body: list[str] = []

    def close(end_archived: bool) -> None:
        if open_header is not None:
            number, match = open_header
            source = _SOURCE.fullmatch(body[0].strip()) if body else None
            notes.append(
                Note(
                    line=number,
                    read=bool(match.group("read")),
                    time=match.group("time"),
                    target=match.group("target"),
                    body=_body_text(body[1:] if source else body),
                    archived=end_archived,
                    source=source.group("source") if source else None,
                )
            )

    for number, line in enumerate(lines):
        stripped = line.lstrip(" \t")
        if code.step(number, stripped) != NORMAL or not stripped.startswith("#"):
            if open_header is not None:
                body.append(line)
            continue
        if _ARCHIVE.match(stripped):
            close(archived)
            open_header, body, archived = None, [], True
            continue
        match = _HEADER.match(stripped)
        if match is None:
            broken = _LOOKS_LIKE_HEADER.match(stripped) is not None
            if broken:
                problems.append(
                    Problem(number + 1, ERROR, f"malformed note header; write {HEADER_FORMAT}")
                )
            if broken or _SECTION_HEADING.match(stripped):
                # The previous note ends here: a broken header's text is not its text.
                close(archived)
                open_header, body = None, []
            elif open_header is not None:
                body.append(line)
            continue
        problem = _header_problem(match)
        if problem:
            problems.append(Problem(number + 1, ERROR, problem))
        close(archived)
        open_header, body = (number, match), []
    close(archived)
    return Notes(tuple(notes), tuple(problems))


def _body_text(lines: list[str]) -> str:
    """A note's text, without the blank lines and the ``---`` that close the list of notes."""
    end = len(lines)
    while end and (not lines[end - 1].strip() or _THEMATIC_BREAK.fullmatch(lines[end - 1].strip())):
        end -= 1
    return "\n".join(lines[:end]).strip("\n")


def _header_problem(match: re.Match[str]) -> str | None:
    try:
        values.parse_time(match.group("time"))
    except ValueError as error:
        return f"note time: {error}"
    target = match.group("target")
    if target != GLOBAL and not values.TASK_ID.fullmatch(target):
        return f"note target {target!r} must be a task ID like T-201 or 'global'"
    return None


def _unquote(line: str) -> str:
    rest = line[1:] if line.startswith(">") else line
    return rest[1:] if rest.startswith(" ") else rest


# -- writing ---------------------------------------------------------------------------------


def add_note(
    text: str, *, target: str, body: str, time: datetime, source: str | None = None
) -> str:
    """``text`` with a new unread note at the end of ``## Active Notes`` (made if missing).

    ``body`` is quoted line by line, so no note can create a heading, a task, another
    note's header, or a fence or comment that hides the notes after it. ``source`` is kept
    on one comment line under the header (see ``has_source``). Every other byte of
    ``text`` is kept, and the new lines use the file's line endings.
    """
    if target != GLOBAL and not values.TASK_ID.fullmatch(target):
        raise ValueError(f"a note's target is a task ID like T-201 or 'global', not {target!r}")
    quoted = _quote(body)
    if not quoted:
        raise ValueError("the note is empty; write some text")
    note = [f"### [NOTE] {values.format_time(time)} → {target}"]
    if source is not None:
        note.append(f"<!-- source: {_source_text(source)} -->")
    note += quoted

    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines, eols = split_lines(text.removeprefix("\ufeff"))
    eol = next((ending for ending in eols if ending), "\n")
    if not text.strip("\ufeff \t\r\n"):
        return bom + eol.join(["# HUMAN NOTES", "", "## Active Notes", "", *note]) + eol
    at, new_lines = _insertion(lines, note)
    if at == len(lines) and eols and not eols[-1]:
        eols[-1] = eol  # the last line had no line ending
    before = "".join(line + end for line, end in zip(lines[:at], eols[:at], strict=True))
    after = "".join(line + end for line, end in zip(lines[at:], eols[at:], strict=True))
    return bom + before + "".join(line + eol for line in new_lines) + after


def _quote(body: str) -> list[str]:
    # Every line break a Markdown reader might see (\r alone included) starts a quoted line.
    lines = [line.replace("\x00", "\ufffd") for line in body.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return [f"> {line}" if line.strip() else ">" for line in lines]


def _source_text(source: str) -> str:
    """One line that cannot end the comment it sits in."""
    return " ".join(source.split()).replace("--", "- -")


def _insertion(lines: list[str], note: list[str]) -> tuple[int, list[str]]:
    """Where the note goes, and the lines to insert there (blank lines around it included)."""
    code = CodeTracker()
    active: int | None = None  # the "## Active Notes" heading (one after the archive is not)
    end: int | None = None  # the heading that ends the Active Notes section
    archive: int | None = None
    for number, line in enumerate(lines):
        stripped = line.lstrip(" \t")
        if code.step(number, stripped) != NORMAL:
            continue
        if _ARCHIVE.match(stripped):
            archive = number
            break
        if active is None and _ACTIVE.match(stripped):
            active = number
        elif active is not None and end is None and _SECTION_HEADING.match(stripped):
            end = number
    if active is not None:
        bound = archive if end is None else end
        if bound is None:
            _refuse_if_open(code)
            bound = len(lines)
        return _place(lines, _before_break(lines, bound, active), note)
    if archive is None:
        _refuse_if_open(code)
        return _place(lines, len(lines), ["## Active Notes", "", *note])
    return _place(lines, _before_break(lines, archive, -1), ["## Active Notes", "", *note])


def _refuse_if_open(code: CodeTracker) -> None:
    """A note added at the end of the file would sit inside an unclosed fence or comment."""
    if code.opening is not None:
        raise ValueError(
            f"line {code.opening.line + 1}: this code fence or HTML comment is never closed, "
            f"so a note added below it would be hidden; close it with {code.opening.closer}"
        )


def _before_break(lines: list[str], end: int, start: int) -> int:
    """The index before the blank lines and the ``---`` that close a section at ``end``."""
    at = end
    while at > start + 1 and not lines[at - 1].strip():
        at -= 1
    if at > start + 1 and _THEMATIC_BREAK.fullmatch(lines[at - 1].strip()):
        at -= 1
        while at > start + 1 and not lines[at - 1].strip():
            at -= 1
    return at


def _place(lines: list[str], at: int, block: list[str]) -> tuple[int, list[str]]:
    """``block`` with a blank line before it (unless one is there) and after it (unless
    the file ends or a blank line follows)."""
    lead = [""] if at > 0 and lines[at - 1].strip() else []
    trail = [""] if at < len(lines) and lines[at].strip() else []
    return at, [*lead, *block, *trail]


def has_source(text: str, source: str) -> bool:
    """Whether a note (active or archived) came from ``source``: a re-delivered GitHub
    event is not applied twice."""
    wanted = _source_text(source)
    return any(note.source == wanted for note in parse_notes(text).notes)


def mark_read(text: str, task_id: str) -> str:
    """Every active unread note for ``task_id`` becomes ``[NOTE:READ]``; nothing else changes."""
    lines, eols = split_lines(text)
    changed = False
    for note in parse_notes(text).active():
        if not note.read and note.target == task_id:
            lines[note.line] = lines[note.line].replace("[NOTE]", "[NOTE:READ]", 1)
            changed = True
    if not changed:
        return text
    return "".join(line + end for line, end in zip(lines, eols, strict=True))
