"""HUMAN_NOTES.md: ``### [NOTE] <time> → <target>`` headers, their text, and the archive."""

from __future__ import annotations

import pytest

from memento_gh.formats.notes import GLOBAL, Note, parse_notes
from memento_gh.plan.model import ERROR

# The seed's example (§3.4), with a fenced block in a note and an archived note.
NOTES = """\
# HUMAN NOTES

<!-- format: ### [NOTE] <time> → <target> -->
<!--
### [NOTE] 2025-01-01T00:00:00 → T-000
a commented-out note is no note
-->

## Active Notes

### [NOTE] 2025-01-15T15:00:00 → T-201
Use Redis for sessions, not PostgreSQL.

The connection settings are in redis.conf.

### [NOTE] 2025-01-15T15:10:00Z -> global
Pause every Phase 3 task. An example of a header:

```markdown
### [NOTE] 2025-01-15T15:20:00 → T-999
not a note: it is inside a code block
```
Still the global note.

### [NOTE:READ] 2025-01-15T14:00:00 → T-102
Read the JWT secret from `JWT_SECRET`.

---

## Archive

### [NOTE:READ] 2025-01-14T10:00:00 → T-101
Handled long ago.
"""


def test_headers_read_and_unread_with_either_arrow() -> None:
    notes = parse_notes(NOTES)

    assert notes.problems == ()
    assert [(n.line + 1, n.read, n.time, n.target, n.archived) for n in notes.notes] == [
        (11, False, "2025-01-15T15:00:00", "T-201", False),
        (16, False, "2025-01-15T15:10:00Z", GLOBAL, False),
        (25, True, "2025-01-15T14:00:00", "T-102", False),
        (32, True, "2025-01-14T10:00:00", "T-101", True),
    ]


def test_the_body_is_the_text_under_the_header_with_its_code_blocks() -> None:
    first, second, third, archived = parse_notes(NOTES).notes

    assert first.body == (
        "Use Redis for sessions, not PostgreSQL.\n\nThe connection settings are in redis.conf."
    )
    assert second.body == (
        "Pause every Phase 3 task. An example of a header:\n\n"
        "```markdown\n"
        "### [NOTE] 2025-01-15T15:20:00 → T-999\n"
        "not a note: it is inside a code block\n"
        "```\n"
        "Still the global note."
    )
    # the '---' before '## Archive' closes the list of notes; it is not the note's text
    assert third.body == "Read the JWT secret from `JWT_SECRET`."
    assert archived.body == "Handled long ago."


def test_pending_notes_of_a_task_are_its_unread_active_ones_and_the_global_ones() -> None:
    notes = parse_notes(NOTES)

    assert [note.target for note in notes.pending_for("T-201")] == ["T-201", GLOBAL]
    assert [note.target for note in notes.pending_for("T-102")] == [GLOBAL]  # T-102's is read
    assert [note.target for note in notes.pending_for("T-101")] == [GLOBAL]  # archived
    assert len(notes.active()) == 3


def test_crlf_and_a_byte_order_mark_change_nothing() -> None:
    windows = "\ufeff" + NOTES.replace("\n", "\r\n")
    assert parse_notes(windows) == parse_notes(NOTES)


def test_a_section_heading_ends_the_note_above_it() -> None:
    text = (
        "### [NOTE] 2025-01-15T15:00:00 → T-1\n"
        "first\n"
        "#### a sub-heading stays in the note\n"
        "second\n"
        "## Ideas\n"
        "not part of the note\n"
    )
    [note] = parse_notes(text).notes
    assert note.body == "first\n#### a sub-heading stays in the note\nsecond"


def test_a_malformed_header_ends_the_note_above_it() -> None:
    """Its text belongs to the broken note, not to the one before (whose task would get it)."""
    text = (
        "### [NOTE] 2025-01-15T15:00:00 → T-1\n"
        "for T-1\n"
        "### [NOTE] 2025-01-15T15:05:00 T-2\n"
        "for T-2, whose header has no arrow\n"
    )
    notes = parse_notes(text)
    assert [note.body for note in notes.notes] == ["for T-1"]
    assert [problem.line for problem in notes.problems] == [3]


@pytest.mark.parametrize(
    ("header", "fragment"),
    [
        pytest.param(
            "### [NOTE] yesterday → T-201",
            "note time: 'yesterday' is not an ISO-8601 time like 2025-01-15T14:35:00Z",
            id="time-not-iso",
        ),
        pytest.param(
            "### [NOTE] 2025-01-15T15:00:00 → 201",
            "note target '201' must be a task ID like T-201 or 'global'",
            id="target-not-a-task-id",
        ),
        pytest.param(
            "### [NOTE] 2025-01-15T15:00:00 T-201",
            "malformed note header; write '### [NOTE] 2025-01-15T15:00:00Z → T-201'",
            id="no-arrow",
        ),
        pytest.param(
            "### [NOTE] 2025-01-15T15:00:00 → T-201 and T-202",
            "malformed note header",
            id="two-targets",
        ),
        pytest.param(
            "### [NOTE] 2025-01-15T15:00:00 →",
            "malformed note header",
            id="no-target",
        ),
        pytest.param("### [note] 2025-01-15T15:00:00 → T-201", "malformed note header", id="case"),
        pytest.param(
            "### [NOTE:DONE] 2025-01-15T15:00:00 → T-201",
            "malformed note header",
            id="unknown-state",
        ),
        pytest.param(
            "## [NOTE] 2025-01-15T15:00:00 → T-201", "malformed note header", id="level-2"
        ),
        pytest.param(
            "###[NOTE] 2025-01-15T15:00:00 → T-201", "malformed note header", id="no-space"
        ),
    ],
)
def test_a_malformed_header_is_an_error_at_its_line(header: str, fragment: str) -> None:
    text = f"# HUMAN NOTES\n\n## Active Notes\n\n{header}\nsome text\n"
    [problem] = parse_notes(text).problems
    assert (problem.line, problem.severity) == (5, ERROR)
    assert fragment in problem.message


def test_headings_that_are_not_notes_are_no_problem() -> None:
    text = "# HUMAN NOTES\n## Active Notes\n### Ideas\n## Archive\n"
    assert parse_notes(text) == ((), ())


def test_a_note_read_or_not_is_a_value() -> None:
    [note] = parse_notes("### [NOTE:READ] 2025-01-15T15:00:00Z → global\nhi\n").notes
    assert note == Note(
        line=0, read=True, time="2025-01-15T15:00:00Z", target=GLOBAL, body="hi", archived=False
    )
