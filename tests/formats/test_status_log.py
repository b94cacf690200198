"""TICK_STATUS.md: entries in the seed's format (§3.3, §9.1.1), one-line events, rotation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import mistune
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memento_gh.formats.status_log import (
    BLOCKED,
    FAILED,
    SUCCESS,
    Event,
    ParsedEntry,
    TickEntry,
    append,
    archive_path,
    circuit_breaker,
    emergency_stash,
    entry_count,
    is_latest_event,
    last_event,
    parse_status,
    render_entry,
    render_event,
    rotate,
    stale_claim_reset,
    tick_skipped,
    verify_lines,
)

T0 = datetime(2025, 1, 15, 14, 35, tzinfo=timezone.utc)


def at(hour: int, minute: int) -> datetime:
    return datetime(2025, 1, 15, hour, minute, tzinfo=timezone.utc)


# -- the seed's four example entries (§3.3), typed in from the seed --------------------------
# Our differences from the seed, on purpose: times carry "Z" (UTC, said out loud); tick #014
# shows its Duration and Git Commit (§9.1.1 lists both for every entry) and the real verify
# output instead of the worker's prose "Same error as Tick #013".

SEED_12 = """\
## [2025-01-15T14:35:00Z] Tick #012
- **Task**: T-101 [MODULE:database] Setup PostgreSQL schema
- **Status**: ✅ SUCCESS
- **Verify Output**: `PASS` (exit code 0)
- **Duration**: 2m18s
- **Files Modified**: src/db/schema.ts (+45 -0), src/db/migrations/001_init.sql (+23 -0)
- **Diff Size**: 68 lines
- **Git Commit**: `a3f7b2c` — "memento: complete T-101 database schema setup"

---
"""

SEED_12_CONTINUED = """\
## [2025-01-15T14:35:00Z] Tick #012 (continued, tasks_this_tick: 2/2)
- **Task**: T-102 [MODULE:auth] Implement JWT token generation
- **Status**: ✅ SUCCESS
- **Verify Output**: `PASS` (exit code 0)
- **Duration**: 3m41s
- **Files Modified**: src/auth/jwt.ts (+67 -0), tests/auth/jwt.test.ts (+34 -0)
- **Diff Size**: 101 lines
- **Git Commit**: `b8e2d1f` — "memento: complete T-102 JWT token generation"

---
"""

SEED_13 = """\
## [2025-01-15T14:40:00Z] Tick #013
- **Task**: T-201 [MODULE:auth] Connect auth middleware to database
- **Status**: ❌ FAILED (retry 2/3)
- **Verify Output**: `TypeError: pool.query is not a function` (exit code 1)
- **Duration**: 4m52s
- **Error Analysis**: DB module exports `pool` but middleware imports `connection`. \
Interface mismatch.
- **Files Modified**: (rolled back)
- **Git Commit**: (none — rollback)

---
"""

SEED_14 = """\
## [2025-01-15T14:45:00Z] Tick #014
- **Task**: T-201 [MODULE:auth] Connect auth middleware to database
- **Status**: 🚫 BLOCKED (retry 3/3 — max_retries reached)
- **Verify Output**: `TypeError: pool.query is not a function` (exit code 1)
- **Duration**: 4m10s
- **Error Analysis**: Recurring interface mismatch. Likely needs Architect to update \
MODULE:database exports or redefine task scope.
- **Escalation**: ⚠️ NEEDS ARCHITECT ATTENTION: tell the worker what it needs (`memento note \
--task T-201 '…'`, or a comment on the task's issue), then `memento retry T-201`; or change \
the task, or `memento skip T-201`
- **Files Modified**: (rolled back)
- **Git Commit**: (none — rollback)

---
"""

TICK_12 = TickEntry(
    time=at(14, 35),
    tick=12,
    task="T-101 [MODULE:database] Setup PostgreSQL schema",
    outcome=SUCCESS,
    duration=138,
    verify_head="PASS\n",
    exit_code=0,
    files=(("src/db/schema.ts", 45, 0), ("src/db/migrations/001_init.sql", 23, 0)),
    diff_size=68,
    commit=("a3f7b2c41d09e8f6", "memento: complete T-101 database schema setup"),
)
TICK_12_CONTINUED = TickEntry(
    time=at(14, 35),
    tick=12,
    continuation=(2, 2),
    task="T-102 [MODULE:auth] Implement JWT token generation",
    outcome=SUCCESS,
    duration=221,
    verify_head="PASS",
    exit_code=0,
    files=(("src/auth/jwt.ts", 67, 0), ("tests/auth/jwt.test.ts", 34, 0)),
    diff_size=101,
    commit=("b8e2d1f", "memento: complete T-102 JWT token generation"),
)
TICK_13 = TickEntry(
    time=at(14, 40),
    tick=13,
    task="T-201 [MODULE:auth] Connect auth middleware to database",
    outcome=FAILED,
    retry=2,
    max_retries=3,
    duration=292,
    verify_head="TypeError: pool.query is not a function",
    exit_code=1,
    error_analysis=(
        "DB module exports `pool` but middleware imports `connection`. Interface mismatch."
    ),
    files=None,
)
TICK_14 = TickEntry(
    time=at(14, 45),
    tick=14,
    task="T-201 [MODULE:auth] Connect auth middleware to database",
    outcome=BLOCKED,
    retry=3,
    max_retries=3,
    duration=250,
    verify_head="TypeError: pool.query is not a function",
    exit_code=1,
    error_analysis=(
        "Recurring interface mismatch. Likely needs Architect to update MODULE:database "
        "exports or redefine task scope."
    ),
    escalation=True,
    files=None,
)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(TICK_12, SEED_12, id="success"),
        pytest.param(TICK_12_CONTINUED, SEED_12_CONTINUED, id="continued"),
        pytest.param(TICK_13, SEED_13, id="failed"),
        pytest.param(TICK_14, SEED_14, id="blocked"),
    ],
)
def test_an_entry_is_the_seeds_markdown(entry: TickEntry, expected: str) -> None:
    assert render_entry(entry) == expected


SEED_LOG = """\
# TICK STATUS LOG

---

## [2025-01-15T14:35:00] Tick #012
- **Task**: T-101 [MODULE:database] Setup PostgreSQL schema
- **Status**: ✅ SUCCESS
- **Verify Output**: `PASS` (exit code 0)
- **Duration**: 2m18s
- **Files Modified**: src/db/schema.ts (+45 -0), src/db/migrations/001_init.sql (+23 -0)
- **Diff Size**: 68 lines
- **Git Commit**: `a3f7b2c` — "memento: complete T-101 database schema setup"

---

## [2025-01-15T14:35:00] Tick #012 (continued, tasks_this_tick: 2/2)
- **Task**: T-102 [MODULE:auth] Implement JWT token generation
- **Status**: ✅ SUCCESS
- **Verify Output**: `PASS` (exit code 0)
- **Duration**: 3m41s
- **Files Modified**: src/auth/jwt.ts (+67 -0), tests/auth/jwt.test.ts (+34 -0)
- **Diff Size**: 101 lines
- **Git Commit**: `b8e2d1f` — "memento: complete T-102 JWT token generation"

---

## [2025-01-15T14:40:00] Tick #013
- **Task**: T-201 [MODULE:auth] Connect auth middleware to database
- **Status**: ❌ FAILED (retry 2/3)
- **Verify Output**: `TypeError: pool.query is not a function` (exit code 1)
- **Duration**: 4m52s
- **Error Analysis**: DB module exports `pool` but middleware imports `connection`. \
Interface mismatch.
- **Files Modified**: (rolled back)
- **Git Commit**: (none — rollback)

---

## [2025-01-15T14:45:00] Tick #014
- **Task**: T-201 [MODULE:auth] Connect auth middleware to database
- **Status**: 🚫 BLOCKED (retry 3/3 — max_retries exceeded)
- **Verify Output**: Same error as Tick #013
- **Error Analysis**: Recurring interface mismatch. Likely needs Architect to update \
MODULE:database exports or redefine task scope.
- **Escalation**: ⚠️ NEEDS ARCHITECT ATTENTION
- **Files Modified**: (rolled back)

---
"""


def test_the_seeds_example_log_reads_back() -> None:
    """§3.3 verbatim: times without a zone, a verify field in prose, fields left out."""
    entries = parse_status(SEED_LOG)

    assert [
        (
            e.tick,
            e.continuation,
            e.task_id,
            e.outcome,
            e.retry,
            e.max_retries,
            e.duration,
            e.commit,
        )
        for e in entries
        if isinstance(e, ParsedEntry)
    ] == [
        (12, None, "T-101", SUCCESS, None, None, 138, "a3f7b2c"),
        (12, (2, 2), "T-102", SUCCESS, None, None, 221, "b8e2d1f"),
        (13, None, "T-201", FAILED, 2, 3, 292, None),
        (14, None, "T-201", BLOCKED, 3, 3, None, None),
    ]
    third, last = entries[2], entries[3]
    assert isinstance(third, ParsedEntry) and isinstance(last, ParsedEntry)
    assert (third.verify_head, third.exit_code) == ("TypeError: pool.query is not a function", 1)
    assert third.error_analysis == (
        "DB module exports `pool` but middleware imports `connection`. Interface mismatch."
    )
    assert last.time == at(14, 45)
    assert (last.verify_head, last.exit_code) == ("Same error as Tick #013", None)
    assert (third.escalation, last.escalation) == (False, True)
    assert entry_count(SEED_LOG) == 4


# -- each field -------------------------------------------------------------------------------


def field_line(entry: TickEntry, key: str) -> str | None:
    prefix = f"- **{key}**: "
    lines = [line for line in render_entry(entry).splitlines() if line.startswith(prefix)]
    assert len(lines) <= 1
    return lines[0][len(prefix) :] if lines else None


@pytest.mark.parametrize(
    ("outcome", "retry", "max_retries", "status"),
    [
        (SUCCESS, 1, 3, "✅ SUCCESS"),
        (FAILED, 1, 3, "❌ FAILED (retry 1/3)"),
        (FAILED, None, None, "❌ FAILED"),
        (FAILED, 1, None, "❌ FAILED"),
        (BLOCKED, 5, 5, "🚫 BLOCKED (retry 5/5 — max_retries reached)"),
        (BLOCKED, None, None, "🚫 BLOCKED"),
        (BLOCKED, 1, 3, "🚫 BLOCKED (retry 1/3)"),  # blocked by hand, not by retries
    ],
)
def test_status(outcome: str, retry: int | None, max_retries: int | None, status: str) -> None:
    entry = TICK_13._replace(outcome=outcome, retry=retry, max_retries=max_retries)
    assert field_line(entry, "Status") == status


def test_an_unknown_outcome_is_refused() -> None:
    with pytest.raises(ValueError, match="outcome 'skipped' is not one of success"):
        render_entry(TICK_12._replace(outcome="skipped"))


@pytest.mark.parametrize(
    ("tick", "continuation", "heading"),
    [
        (7, None, "## [2025-01-15T14:35:00Z] Tick #007"),
        (1234, None, "## [2025-01-15T14:35:00Z] Tick #1234"),
        (7, (1, 3), "## [2025-01-15T14:35:00Z] Tick #007"),  # the first task: no "continued"
        (7, (3, 3), "## [2025-01-15T14:35:00Z] Tick #007 (continued, tasks_this_tick: 3/3)"),
    ],
)
def test_heading(tick: int, continuation: tuple[int, int] | None, heading: str) -> None:
    rendered = render_entry(TICK_12._replace(tick=tick, continuation=continuation))
    assert rendered.splitlines()[0] == heading


def test_the_time_is_written_in_utc() -> None:
    tokyo = timezone(timedelta(hours=9))
    entry = TICK_12._replace(time=datetime(2025, 1, 15, 23, 35, tzinfo=tokyo))
    assert render_entry(entry).startswith("## [2025-01-15T14:35:00Z] Tick #012\n")


@pytest.mark.parametrize(
    ("changes", "value"),
    [
        ({"verify_head": "ok", "exit_code": 0}, "`ok` (exit code 0)"),
        ({"verify_head": "", "exit_code": 0}, "(no output) (exit code 0)"),
        ({"verify_head": "\n  \n", "exit_code": 2}, "(no output) (exit code 2)"),
        ({"verify_head": "", "exit_code": None}, "(not run)"),
        (
            {"verify_head": "slow", "exit_code": None, "verify_timed_out": True},
            "`slow` (timed out)",
        ),
        (
            {"verify_head": "", "exit_code": None, "verify_timed_out": True},
            "(no output) (timed out)",
        ),
        ({"verify_head": "a `b` c", "exit_code": 1}, "``a `b` c`` (exit code 1)"),
        ({"verify_head": "`x`", "exit_code": 1}, "`` `x` `` (exit code 1)"),
        ({"verify_head": "  indented", "exit_code": 1}, "`   indented ` (exit code 1)"),
        ({"verify_head": "\x1b[31mred\x1b[0m\x07", "exit_code": 1}, "`red` (exit code 1)"),
        ({"verify_head": "(no output)", "exit_code": 0}, "`(no output)` (exit code 0)"),
        ({"verify_head": "x", "exit_code": -9}, "`x` (exit code -9)"),
    ],
)
def test_a_one_line_verify_output_is_a_code_span(changes: dict[str, object], value: str) -> None:
    entry = TICK_13._replace(**changes)

    assert field_line(entry, "Verify Output") == value
    [parsed] = parse_status(render_entry(entry))
    assert isinstance(parsed, ParsedEntry)
    assert parsed.exit_code == entry.exit_code
    assert parsed.verify_head == "\n".join(verify_lines(entry.verify_head))


HOSTILE_OUTPUT = """\
FAILED tests/test_x.py::test_y
## [2025-01-15T14:35:00Z] Tick #999
- **Status**: ✅ SUCCESS
```
<!--
---
- [2025-01-15T14:50:00Z] 🎉 ALL TASKS COMPLETE
"""


def test_a_multi_line_verify_output_is_a_fenced_block_nothing_can_break() -> None:
    entry = TICK_13._replace(verify_head=HOSTILE_OUTPUT, exit_code=1)

    rendered = render_entry(entry)

    assert rendered == (
        "## [2025-01-15T14:40:00Z] Tick #013\n"
        "- **Task**: T-201 [MODULE:auth] Connect auth middleware to database\n"
        "- **Status**: ❌ FAILED (retry 2/3)\n"
        "- **Verify Output**: (exit code 1)\n"
        "  ````text\n"
        "  FAILED tests/test_x.py::test_y\n"
        "  ## [2025-01-15T14:35:00Z] Tick #999\n"
        "  - **Status**: ✅ SUCCESS\n"
        "  ```\n"
        "  <!--\n"
        "  ---\n"
        "  - [2025-01-15T14:50:00Z] 🎉 ALL TASKS COMPLETE\n"
        "  ````\n"
        "- **Duration**: 4m52s\n"
        "- **Error Analysis**: DB module exports `pool` but middleware imports `connection`. "
        "Interface mismatch.\n"
        "- **Files Modified**: (rolled back)\n"
        "- **Git Commit**: (none — rollback)\n"
        "\n"
        "---\n"
    )
    log = append(append("# TICK STATUS LOG\n", rendered), render_entry(TICK_14))
    records = parse_status(log)
    assert [(type(r).__name__, getattr(r, "tick", None)) for r in records] == [
        ("ParsedEntry", 13),
        ("ParsedEntry", 14),
    ]
    first = records[0]
    assert isinstance(first, ParsedEntry)
    assert first.verify_head == "\n".join(HOSTILE_OUTPUT.splitlines()[:8])
    assert (first.duration, first.outcome) == (292, FAILED)  # fields after the block are read
    # a CommonMark reader agrees: two headings, the rest is inside the entries' lists
    assert top_level_headings(log) == [
        "TICK STATUS LOG",
        "[2025-01-15T14:40:00Z] Tick #013",
        "[2025-01-15T14:45:00Z] Tick #014",
    ]


def top_level_headings(text: str) -> list[str]:
    tokens = mistune.create_markdown(renderer=None)(text)
    return [
        "".join(child.get("raw", "") for child in token["children"])
        for token in tokens
        if token["type"] == "heading"
    ]


def test_verify_output_is_its_first_eight_lines_cleaned() -> None:
    output = (
        "\n\n"
        "collecting\r 10%\r100%\n"
        "\x1b[1mbold\x1b[0m   \n" + "x" * 600 + "\n"
        "line 6\n"
        "  line 7\n"
        "line 8\n"
        "line 9 is cut\n"
    )
    assert verify_lines(output) == [
        "collecting",
        " 10%",
        "100%",
        "bold",
        "x" * 499 + "…",
        "line 6",
        "  line 7",
        "line 8",
    ]


def test_files_diff_size_commit_and_the_optional_fields() -> None:
    entry = TICK_12._replace(
        files=(),
        diff_size=1,
        commit=None,
        outputs="exports `pool`\nand `query()`",
        violations=("guard_files touched: src/db/schema.ts", "diff too large: 412 lines"),
        cost={"usd": 0.4213, "input_tokens": 12345, "output_tokens": 2345, "session": "x"},
        log="https://github.com/o/r/actions/runs/42",
    )
    assert field_line(entry, "Files Modified") == "(none)"
    assert field_line(entry, "Diff Size") == "1 line"
    assert field_line(entry, "Git Commit") == "(none)"
    assert field_line(entry, "Outputs") == "exports `pool` and `query()`"
    assert field_line(entry, "Guard Violations") == (
        "guard_files touched: src/db/schema.ts; diff too large: 412 lines"
    )
    assert field_line(entry, "Cost") == "$0.4213, 12,345 tokens in / 2,345 out"
    assert field_line(entry, "Log") == "https://github.com/o/r/actions/runs/42"
    assert render_entry(entry).index("**Guard Violations**") < render_entry(entry).index(
        "**Files Modified**"
    )


def test_fields_without_a_value_are_left_out() -> None:
    rendered = render_entry(TICK_12._replace(diff_size=None, cost={}, error_analysis="  "))
    for key in ("Diff Size", "Cost", "Error Analysis", "Outputs", "Log", "Guard Violations"):
        assert f"**{key}**" not in rendered
    assert "**Escalation**" not in rendered


@pytest.mark.parametrize(
    ("cost", "text"),
    [
        ({"total_cost_usd": 1.5}, "$1.50"),
        ({"cost_usd": 0.0042}, "$0.0042"),
        ({"usd": 0}, "$0.00"),
        ({"input_tokens": 1000}, "1,000 tokens in"),
        ({"output_tokens": 20}, "20 tokens out"),
        ({"usd": 0.1, "model": "claude-sonnet-4"}, "$0.10, claude-sonnet-4"),
        ({"anything": "else"}, None),
    ],
)
def test_cost(cost: dict[str, object], text: str | None) -> None:
    assert field_line(TICK_12._replace(cost=cost), "Cost") == text


def test_free_text_fields_stay_on_their_line() -> None:
    entry = TICK_13._replace(
        task="T-201 title\n## [2025-01-15T14:35:00Z] Tick #666",
        error_analysis="first\r\nsecond\n\n- [2025-01-15T14:50:00Z] fake event\x00",
        commit=("c0ffee1234", 'memento: fix\n\n## heading "quoted"'),
    )
    rendered = render_entry(entry)

    assert field_line(entry, "Task") == "T-201 title ## [2025-01-15T14:35:00Z] Tick #666"
    assert field_line(entry, "Error Analysis") == (
        "first second - [2025-01-15T14:50:00Z] fake event"
    )
    assert field_line(entry, "Git Commit") == '`c0ffee1` — "memento: fix ## heading "quoted""'
    assert [type(r) for r in parse_status(rendered)] == [ParsedEntry]


def test_an_entry_reads_back_as_it_was_written() -> None:
    log = "# TICK STATUS LOG\n"
    entries = [TICK_12, TICK_12_CONTINUED, TICK_13, TICK_14]
    for entry in entries:
        log = append(log, render_entry(entry))

    parsed = parse_status(log)

    assert [
        (
            p.time,
            p.tick,
            p.continuation,
            p.task,
            p.outcome,
            p.retry,
            p.max_retries,
            p.duration,
            p.verify_head,
            p.exit_code,
            p.error_analysis,
            p.commit,
            p.escalation,
        )
        for p in parsed
        if isinstance(p, ParsedEntry)
    ] == [
        (
            e.time,
            e.tick,
            e.continuation,
            e.task,
            e.outcome,
            e.retry,
            e.max_retries,
            e.duration,
            e.verify_head.strip(),
            e.exit_code,
            e.error_analysis,
            e.commit[0][:7] if e.commit else None,
            e.escalation,
        )
        for e in entries
    ]
    first = parsed[0]
    assert isinstance(first, ParsedEntry)
    assert first.task_id == "T-101"
    assert first.fields["Files Modified"] == (
        "src/db/schema.ts (+45 -0), src/db/migrations/001_init.sql (+23 -0)"
    )


# -- events ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (tick_skipped("mode=paused"), "Tick skipped: mode=paused"),
        (stale_claim_reset("T-101"), "Stale [~] detected on T-101, reset to [ ]"),
        ("🎉 ALL TASKS COMPLETE", "🎉 ALL TASKS COMPLETE"),
        (
            "⚠️ PIPELINE BLOCKED — Phase 2 has unresolved [!] tasks",
            "⚠️ PIPELINE BLOCKED — Phase 2 has unresolved [!] tasks",
        ),
        (
            circuit_breaker("5 consecutive failed ticks"),
            "🔴 CIRCUIT BREAKER TRIGGERED — reason: 5 consecutive failed ticks",
        ),
        (
            emergency_stash("memento-emergency-stash-20250115T144000Z"),
            "CRITICAL: Emergency stash created (memento-emergency-stash-20250115T144000Z). "
            "Manual inspection required.",
        ),
        ("Control: paused by @alice", "Control: paused by @alice"),
        ("Control: T-201 skipped —\nflaky  test", "Control: T-201 skipped — flaky test"),
    ],
)
def test_an_event_is_one_line(text: str, line: str) -> None:
    rendered = render_event(at(14, 50), text)

    assert rendered == f"- [2025-01-15T14:50:00Z] {line}\n"
    assert parse_status(rendered) == [Event(0, at(14, 50), line)]


def test_an_event_needs_text() -> None:
    with pytest.raises(ValueError, match="an event needs some text"):
        render_event(T0, " \n ")


def test_the_seeds_shell_lines_are_events_too() -> None:
    text = "# TICK STATUS LOG\n[2025-01-15T14:35:00] Tick skipped: previous tick still running\n"
    assert parse_status(text) == [Event(1, T0, "Tick skipped: previous tick still running")]


def test_records_in_code_blocks_comments_or_with_bad_times_are_not_records() -> None:
    text = (
        "# TICK STATUS LOG\n"
        "```\n## [2025-01-15T14:35:00Z] Tick #001\n- [2025-01-15T14:35:00Z] in a fence\n```\n"
        "<!--\n## [2025-01-15T14:35:00Z] Tick #002\n-->\n"
        "## [yesterday] Tick #003\n"
        "- [x] a checkbox, not an event\n"
        "- [2025-01-15T14:35:00Z] a real one\n"
    )
    assert parse_status(text) == [Event(10, T0, "a real one")]
    assert entry_count(text) == 0


def test_entry_count_counts_entries_not_events() -> None:
    log = append("# TICK STATUS LOG\n", render_entry(TICK_12))
    log = append(log, render_event(T0, "🎉 ALL TASKS COMPLETE"))
    log = append(log, render_entry(TICK_13))
    assert entry_count(log) == 2
    assert len(parse_status(log)) == 3


def test_a_state_is_logged_once_until_something_else_happens() -> None:
    done = "🎉 ALL TASKS COMPLETE"
    log = append("# TICK STATUS LOG\n", render_entry(TICK_12))
    assert not is_latest_event(log, done)  # the last record is an entry

    log = append(log, render_event(at(14, 50), done))
    assert is_latest_event(log, done)  # the next tick writes nothing

    log = append(log, render_event(at(14, 55), "Control: T-101 retried by @alice"))
    assert not is_latest_event(log, done)  # something happened: write it again

    assert not is_latest_event("# TICK STATUS LOG\n", done)  # an empty log
    assert last_event("# TICK STATUS LOG\n") is None
    assert last_event(log) == "Control: T-101 retried by @alice"
    assert last_event(append(log, render_entry(TICK_12))) is None
    blocked = "⚠️ PIPELINE BLOCKED — Phase 2 has unresolved [!] tasks (T-201)"
    log = append(log, render_event(at(15, 0), blocked))
    assert is_latest_event(log, blocked)
    assert not is_latest_event(log, blocked.replace("T-201", "T-202"))  # another state


# -- appending -------------------------------------------------------------------------------


def test_append_puts_a_blank_line_before_a_block_and_keeps_events_together() -> None:
    log = append("# TICK STATUS LOG\n", render_entry(TICK_13))
    log = append(log, render_event(at(14, 50), "Tick skipped: mode=paused"))
    log = append(log, render_event(at(14, 55), "Tick skipped: mode=paused"))
    log = append(log, render_entry(TICK_14))

    assert log == (
        "# TICK STATUS LOG\n\n" + SEED_13 + "\n- [2025-01-15T14:50:00Z] Tick skipped: mode=paused\n"
        "- [2025-01-15T14:55:00Z] Tick skipped: mode=paused\n\n" + SEED_14
    )


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("", "# TICK STATUS LOG\n\n## ["),
        ("\n\n", "# TICK STATUS LOG\n\n## ["),
        ("# TICK STATUS LOG", "# TICK STATUS LOG\n\n## ["),  # no line ending at the end
        ("# TICK STATUS LOG\n\n", "# TICK STATUS LOG\n\n## ["),
        ("\ufeff# TICK STATUS LOG\n", "\ufeff# TICK STATUS LOG\n\n## ["),
    ],
)
def test_append_to_a_new_or_untidy_log(text: str, start: str) -> None:
    log = append(text, render_entry(TICK_12))
    assert log.startswith(start)
    assert log.endswith("\n---\n")
    assert entry_count(log) == 1


def test_append_keeps_crlf() -> None:
    old = "# TICK STATUS LOG\r\n\r\n" + SEED_12.replace("\n", "\r\n")

    log = append(old, render_entry(TICK_13._replace(verify_head="a\nb\r\nc", exit_code=1)))
    log = append(log, render_event(T0, "Tick skipped: mode=paused"))

    assert log.startswith(old)
    assert "\n" not in log.replace("\r\n", "")
    assert "\r" not in log.replace("\r\n", "")
    [_, failed, event] = parse_status(log)
    assert isinstance(failed, ParsedEntry)
    assert failed.verify_head == "a\nb\nc"
    assert isinstance(event, Event)
    assert log.split("\r\n")[event.line] == "- [2025-01-15T14:35:00Z] Tick skipped: mode=paused"


# -- rotation --------------------------------------------------------------------------------


def log_of(count: int, eol: str = "\n") -> str:
    log = "# TICK STATUS LOG\n"
    for number in range(1, count + 1):
        if number % 4 == 0:
            log = append(log, render_event(T0 + timedelta(minutes=number), f"event {number}"))
        else:
            entry = TICK_12._replace(tick=number, time=T0 + timedelta(minutes=number))
            log = append(log, render_entry(entry))
    return log.replace("\n", eol)


def test_a_small_log_is_not_rotated() -> None:
    log = log_of(50)
    assert rotate(log, 50, at(16, 0)) == (log, None)


def test_rotation_archives_all_but_the_newest_records() -> None:
    log = log_of(51)
    now = at(16, 0)

    fresh, archived = rotate(log, 50, now)

    assert archived is not None
    assert archive_path(now) == "logs/status_archive/TICK_STATUS_20250115_160000.md"
    assert log.startswith(archived)  # the archive is the old file's bytes up to the cut
    kept = log[len(archived) :]
    assert fresh == (
        "# TICK STATUS LOG\n\n"
        "<!-- Rotated at 2025-01-15T16:00:00Z; 46 entries archived in "
        "logs/status_archive/TICK_STATUS_20250115_160000.md -->\n\n" + kept
    )
    old = parse_status(log)
    assert [r[1:] for r in parse_status(archived) + parse_status(fresh)] == [r[1:] for r in old]
    assert [r.tick if isinstance(r, ParsedEntry) else r.text for r in parse_status(fresh)] == [
        47,
        "event 48",
        49,
        50,
        51,
    ]


def test_rotation_keeps_the_last_event_so_it_is_not_written_again() -> None:
    log = append(log_of(51), render_event(at(16, 0), "🎉 ALL TASKS COMPLETE"))
    fresh, archived = rotate(log, 50, at(16, 1), keep=1)
    assert archived is not None
    assert is_latest_event(fresh, "🎉 ALL TASKS COMPLETE")
    assert len(parse_status(fresh)) == 1


def test_rotating_a_rotated_log_leaves_one_rotation_comment() -> None:
    first, _ = rotate(log_of(60), 50, at(16, 0), keep=40)
    for number in range(61, 72):
        first = append(first, render_event(T0 + timedelta(minutes=number), f"e{number}"))

    second, archived = rotate(first, 50, at(17, 0))

    assert archived is not None and "Rotated at 2025-01-15T16:00:00Z" in archived
    assert second.count("<!-- Rotated at") == 1
    assert "Rotated at 2025-01-15T17:00:00Z; 46 entries archived" in second


def test_rotation_keeps_crlf_and_the_byte_order_mark() -> None:
    log = "\ufeff" + log_of(12, "\r\n")

    fresh, archived = rotate(log, 10, at(16, 0), keep=2)

    assert archived is not None
    assert fresh.startswith("\ufeff# TICK STATUS LOG\r\n\r\n<!-- Rotated at ")
    assert archived.startswith("\ufeff# TICK STATUS LOG\r\n")
    for text in (fresh, archived):
        assert "\n" not in text.replace("\r\n", "")
    assert len(parse_status(fresh)) == 2
    assert len(parse_status(archived)) == 10


def test_rotation_with_nothing_kept_and_no_header() -> None:
    log = log_of(3).removeprefix("# TICK STATUS LOG\n")
    fresh, archived = rotate(log, 2, at(16, 0), keep=0)
    assert archived == log
    assert fresh == (
        "# TICK STATUS LOG\n\n<!-- Rotated at 2025-01-15T16:00:00Z; 3 entries archived in "
        "logs/status_archive/TICK_STATUS_20250115_160000.md -->\n\n"
    )


def test_the_archive_folder_can_be_another() -> None:
    fresh, _ = rotate(log_of(3), 2, at(16, 0), archive_dir="history/")
    assert archive_path(at(16, 0), "history/") == "history/TICK_STATUS_20250115_160000.md"
    assert "archived in history/TICK_STATUS_20250115_160000.md -->" in fresh


RECORD_LINES = [
    *render_entry(TICK_12).splitlines(),
    "- [2025-01-15T14:35:00Z] Tick skipped: mode=paused",
    "* [2025-01-15T14:35:00Z] starred event",
    "-\t[2025-01-15T14:35:00Z] tabbed event",
    "[2025-01-15T14:35:00Z] the seed's shell form",
    "\ufeff## [2025-01-15T14:30:00Z] Tick #7",
    "  - [2025-01-15T14:35:00Z] indented: not a record",
    "## [not a time] Tick #8",
    "```",
    "<!--",
    "-->",
    "",
    "a remark",
]


@given(st.lists(st.sampled_from(RECORD_LINES), max_size=40), st.sampled_from(["\n", "\r\n", "\r"]))
def test_rotation_happens_exactly_when_the_log_holds_too_many_records(
    lines: list[str], eol: str
) -> None:
    """``rotate`` skips reading a log whose lines cannot hold that many records; the count
    it skips on must never be below the real one."""
    text = "".join(line + eol for line in lines)
    records = len(parse_status(text))
    for limit in {max(records - 1, 0), records}:
        _, archived = rotate(text, limit, at(16, 0))
        assert (archived is not None) is (records > limit)
