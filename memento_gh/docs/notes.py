"""``HUMAN_NOTES.md``: ``### [NOTE] <time> → <target>`` entries, read or not, active or archived."""

from __future__ import annotations

import re
from typing import NamedTuple

from memento_gh.markdown import NORMAL, CodeTracker
from memento_gh.plan import values
from memento_gh.plan.model import ERROR, Problem
from memento_gh.plan.scanner import split_lines

GLOBAL = "global"
_HEADER = re.compile(
    r"###[ \t]+\[NOTE(?P<read>:READ)?\][ \t]+(?P<time>\S+)"
    r"[ \t]+(?:→|->)[ \t]+(?P<target>\S+)[ \t]*$"
)
_LOOKS_LIKE_HEADER = re.compile(r"#{1,6}[ \t]*\[NOTE", re.IGNORECASE)
_SECTION_HEADING = re.compile(r"#{1,2}(?:[ \t]|$)")
_THEMATIC_BREAK = re.compile(r"([-*_])(?:[ \t]*\1){2,}")
HEADER_FORMAT = "'### [NOTE] 2025-01-15T15:00:00Z → T-201' (or → global)"


class Note(NamedTuple):
    line: int  # 0-based index of the header
    read: bool
    time: str
    target: str
    body: str
    archived: bool


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
            notes.append(
                Note(
                    line=number,
                    read=bool(match.group("read")),
                    time=match.group("time"),
                    target=match.group("target"),
                    body=_body_text(body),
                    archived=end_archived,
                )
            )

    for number, line in enumerate(lines):
        stripped = line.lstrip(" \t")
        if code.step(number, stripped) != NORMAL or not stripped.startswith("#"):
            if open_header is not None:
                body.append(line)
            continue
        if re.match(r"##[ \t]+Archive\b", stripped, re.IGNORECASE):
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
