"""docs/memory/*.md: known issues learned from fixed failures, decisions and preferences,
their archive, their checks, and the lessons a worker is given."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone

import pytest

from memento_gh.engine.prompt import build_prompt, task_block
from memento_gh.formats import memory, memory_learning, memory_selection
from memento_gh.formats.memory import (
    DECISION,
    KNOWN_ISSUE,
    PREFERENCE,
    empty_file,
    parse_memory,
    read_all,
)
from memento_gh.formats.memory_learning import archive_stale, learn_from_success, remember
from memento_gh.formats.memory_selection import (
    error_line,
    failure_signature,
    last_failure,
    lessons_for,
    signature,
)
from memento_gh.formats.notes import parse_notes
from memento_gh.formats.status_log import (
    BLOCKED,
    FAILED,
    SUCCESS,
    TickEntry,
    append,
    parse_status,
    render_entry,
)
from memento_gh.plan.model import ERROR, WARNING, Plan, Task
from memento_gh.plan.scanner import parse
from testing.plans import phase_block, plan_text
from testing.plans import task_block as plan_task

T0 = datetime(2025, 1, 15, 14, 40, tzinfo=timezone.utc)
MONTH = 30 * 86400
STATUS = "# TICK STATUS LOG\n"

PLAN: Plan = parse(
    plan_text(
        [
            phase_block(
                1,
                "Core",
                [
                    plan_task(
                        "T-201",
                        module="auth",
                        description="JWT keys",
                        fields={
                            "verify": "`pytest -q tests/auth`",
                            "context_files": "[src/auth/*]",
                        },
                    ),
                    plan_task(
                        "T-305",
                        module="db",
                        description="Seed data",
                        fields={"verify": "`pytest -q tests/db`", "context_files": "[src/db/*]"},
                    ),
                    plan_task("T-400", module="ui", description="Buttons"),
                    plan_task("T-401", module="auth", description="Refresh tokens"),
                ],
            )
        ]
    )
)


def task(task_id: str) -> Task:
    found = PLAN.task(task_id)
    assert found is not None
    return found


# A pytest failure as the engine logs it: the error line is not the first line.
KEY_MISSING = (
    "collected 3 items\n"
    "src/auth/jwt.py:12: in encode\n"
    "E   FileNotFoundError: [Errno 2] No such file or directory: "
    "'config/keys/a1b2c3d4e5f6.pem'\n"
)
# The same mistake in another module: other paths, other numbers, another line.
KEY_MISSING_ELSEWHERE = (
    "collected 11 items\n"
    "E   FileNotFoundError: [Errno 2] No such file or directory: 'data/seed/0042.csv'\n"
    "src/db/seed.py:97: FileNotFoundError\n"
)
TYPE_ERROR = "TypeError: pool.query is not a function\n"


def run_entry(
    task_id: str,
    outcome: str,
    moment: datetime,
    head: str = "",
    exit_code: int | None = 1,
    violations: tuple[str, ...] = (),
) -> TickEntry:
    return TickEntry(
        time=moment,
        tick=13,
        task=task(task_id).title,
        outcome=outcome,
        duration=30,
        verify_head=head,
        exit_code=0 if outcome == SUCCESS else exit_code,
        retry=1,
        max_retries=3,
        error_analysis=None if outcome == SUCCESS else f"verify exited with code 1: {head[:20]}",
        files=() if outcome == SUCCESS else None,
        violations=violations,
        log="logs/tick_20250115T144000Z.log",
    )


def logged(*entries: TickEntry) -> str:
    """The status log holding these entries, written and read back as the engine does."""
    text = STATUS
    for entry in entries:
        text = append(text, render_entry(entry))
    return text


def fixed(
    memory_text: str,
    task_id: str,
    output: str,
    moment: datetime,
    changes: tuple[tuple[str, int, int], ...] = (("src/auth/jwt.py", 3, 1),),
) -> str:
    """``task_id`` failed with ``output``, then passed: known-issues.md after the success."""
    log = logged(run_entry(task_id, FAILED, moment, output))
    failure = last_failure(parse_status(log), task_id)
    assert failure is not None
    return learn_from_success(
        memory_text,
        task=task(task_id),
        previous_failure=failure,
        changes=changes,
        commit=None,
        verify_command=task(task_id).verify or "",
        now=moment + timedelta(minutes=5),
        tick=14,
    )


def issues(text: str) -> tuple[memory.Record, ...]:
    parsed = parse_memory(text, KNOWN_ISSUE)
    assert parsed.problems == ()
    return parsed.records


# -- learning known issues -------------------------------------------------------------------


def test_a_task_that_failed_then_passed_leaves_one_known_issue() -> None:
    text = fixed(empty_file(KNOWN_ISSUE), "T-201", KEY_MISSING, T0)

    (record,) = issues(text)
    assert record.key == "FileNotFoundError: [Errno {n}] No such file or directory: '{path}'"
    assert record.title == record.key
    assert record.text == (
        "FileNotFoundError: [Errno 2] No such file or directory: 'config/keys/a1b2c3d4e5f6.pem'"
    )
    assert record.task == "T-201"
    assert record.modules == ("auth",)
    assert record.evidence == memory.Evidence("command", "pytest -q tests/auth")
    assert record.confidence == "medium"
    assert record.seen == 1
    assert record.last_verified == T0 + timedelta(minutes=5)
    assert record.value("Fix") == "src/auth/jwt.py (+3 -1) in the commit of T-201 in tick #014"
    assert record.value("Found") == "2025-01-15T14:40:00Z, T-201"
    assert "logs/tick_20250115T144000Z.log" in (record.value("Root cause") or "")
    assert text.startswith(empty_file(KNOWN_ISSUE))


def test_the_same_error_elsewhere_updates_the_record_instead_of_adding_one() -> None:
    first = fixed(empty_file(KNOWN_ISSUE), "T-201", KEY_MISSING, T0)
    later = T0 + timedelta(days=3)
    second = fixed(first, "T-305", KEY_MISSING_ELSEWHERE, later, (("src/db/seed.py", 1, 0),))

    (record,) = issues(second)
    assert record.seen == 2
    assert record.task == "T-305"
    assert record.modules == ("auth", "db")
    assert record.confidence == "high"
    assert record.last_verified == later + timedelta(minutes=5)
    assert record.evidence == memory.Evidence("command", "pytest -q tests/db")
    # What was learned the first time stays: the symptom, the fix, where it was found.
    before = issues(first)[0]
    for label in ("Symptom", "Fix", "Found", "Signature", "Root cause"):
        assert record.value(label) == before.value(label), label
    # Only the lines of the updated fields changed.
    changed = set(first.splitlines()) ^ set(second.splitlines())
    assert {line.split("**")[1] for line in changed} == {
        "Task",
        "Module",
        "Evidence",
        "Confidence",
        "Seen",
        "Last verified",
    }


def test_a_different_error_is_a_second_record() -> None:
    first = fixed(empty_file(KNOWN_ISSUE), "T-201", KEY_MISSING, T0)
    second = fixed(first, "T-201", TYPE_ERROR, T0 + timedelta(hours=1))
    assert [record.key for record in issues(second)] == [
        "FileNotFoundError: [Errno {n}] No such file or directory: '{path}'",
        "TypeError: pool.query is not a function",
    ]


def test_a_fix_that_changed_nothing_says_so() -> None:
    text = fixed(empty_file(KNOWN_ISSUE), "T-201", TYPE_ERROR, T0, changes=())
    assert "flaky or environmental" in (issues(text)[0].value("Fix") or "")


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(run_entry("T-201", SUCCESS, T0, "ok"), id="the last run passed"),
        pytest.param(
            run_entry("T-201", FAILED, T0, "", exit_code=None, violations=("touched a guard",)),
            id="a guard violation: verify never ran",
        ),
        pytest.param(run_entry("T-201", FAILED, T0, "", exit_code=2), id="no output"),
        pytest.param(run_entry("T-201", FAILED, T0, "42\n7\n"), id="nothing but numbers"),
    ],
)
def test_a_success_without_a_verify_failure_before_it_learns_nothing(entry: TickEntry) -> None:
    previous = last_failure(parse_status(logged(entry)), "T-201")
    start = empty_file(KNOWN_ISSUE)
    text = learn_from_success(
        start,
        task=task("T-201"),
        previous_failure=previous,
        changes=(),
        commit="a3f7b2c41d",
        verify_command="pytest",
        now=T0,
    )
    assert text == start


def test_last_failure_is_the_newest_entry_of_the_task_only_when_it_failed() -> None:
    failed = run_entry("T-201", FAILED, T0, TYPE_ERROR)
    blocked = run_entry("T-201", BLOCKED, T0 + timedelta(minutes=5), KEY_MISSING)
    other = run_entry("T-305", FAILED, T0 + timedelta(minutes=9), TYPE_ERROR)
    passed = run_entry("T-201", SUCCESS, T0 + timedelta(minutes=10), "ok")

    found = last_failure(parse_status(logged(failed, blocked, other)), "T-201")
    assert found is not None
    assert (found.outcome, found.time) == (BLOCKED, T0 + timedelta(minutes=5))
    assert last_failure(parse_status(logged(failed, passed)), "T-201") is None
    assert last_failure(parse_status(logged(other)), "T-201") is None


def test_a_known_commit_is_named_by_its_short_sha() -> None:
    log = logged(run_entry("T-201", FAILED, T0, TYPE_ERROR))
    text = learn_from_success(
        empty_file(KNOWN_ISSUE),
        task=task("T-201"),
        previous_failure=last_failure(parse_status(log), "T-201"),
        changes=(("src/auth/pool.py", 2, 2),),
        commit="a3f7b2c41d09e8f6",
        verify_command="pytest -q tests/auth",
        now=T0,
    )
    assert issues(text)[0].value("Fix") == "src/auth/pool.py (+2 -2) in commit `a3f7b2c`"


# -- signatures ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("No such file: src/app/main.py", "No such file: {path}"),
        ("No such file: C:\\work\\app\\main.py", "No such file: {path}"),
        ("tests/test_x.py:12: AssertionError", "{path}:{n}: AssertionError"),
        ('File "setup.py", line 3', 'File "{path}", line {n}'),
        ("assert 3 == 4.5", "assert {n} == {n}"),
        ("1 failed in 0.21s, 12ms each, 5MB, 80%", "{n} failed in {n}, {n} each, {n}, {n}"),
        ("1st try of v2", "1st try of v2"),
        ("at 2025-01-15T14:35:00.123Z: timeout", "at {time}: timeout"),
        ("started 14:35:07 failed", "started {time} failed"),
        ("commit a3f7b2c41d09 not found", "commit {hash} not found"),
        ("object at 0x7f3a2c1e9d00", "object at {hash}"),
        ("run 123e4567-e89b-12d3-a456-426614174000 died", "run {uuid} died"),
        ("error TS2304: Cannot find name 'foo'.", "error TS2304: Cannot find name 'foo'."),
        ("TypeError: pool.query is not a function", "TypeError: pool.query is not a function"),
        ("int64 overflow in sha256", "int64 overflow in sha256"),
        ("  two   spaces\tand a tab ", "two spaces and a tab"),
    ],
)
def test_a_signature_keeps_the_words_and_drops_what_varies(line: str, expected: str) -> None:
    assert signature(line) == expected


def test_a_signature_is_short() -> None:
    assert len(signature("x" * 1000)) == memory_selection.SIGNATURE_CHARS


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("collected 1 item\nE   assert 1 == 2\n", "assert 1 == 2"),
        ("Traceback (most recent call last):\nKeyError: 'x'", "KeyError: 'x'"),
        ("building\nsrc/a.c:3: error: expected ';'", "src/a.c:3: error: expected ';'"),
        # a runner's boilerplate alone names no error (item: no signature of boilerplate)
        ("3 passed\n1 failed in 0.2s", None),
        ("F   [100%]\n___ test_a ___", None),
        ("Failed example:\n    add(1, 2)\n", "add(1, 2)"),
        ("", None),
    ],
)
def test_the_error_line_is_the_one_that_names_the_error(output: str, expected: str | None) -> None:
    assert error_line(output) == expected


def test_failures_of_the_same_error_share_a_signature() -> None:
    first = logged(run_entry("T-201", FAILED, T0, KEY_MISSING))
    second = logged(run_entry("T-305", FAILED, T0, KEY_MISSING_ELSEWHERE))
    a = last_failure(parse_status(first), "T-201")
    b = last_failure(parse_status(second), "T-305")
    assert a is not None and b is not None
    assert failure_signature(a) == failure_signature(b) is not None


# -- lessons for a prompt --------------------------------------------------------------------


def learned() -> dict[str, str]:
    """Memory files with one known issue (auth), one decision (db), one global preference."""
    known = fixed(empty_file(KNOWN_ISSUE), "T-201", KEY_MISSING, T0)
    decisions, _ = remember(
        empty_file(DECISION),
        DECISION,
        key="Seed format",
        title="2025-01-15: Seed format",
        fields=[
            ("Decision", "Seed files are CSV, not JSON"),
            ("Reason", "the fixtures team exports CSV"),
            ("Task", "T-305"),
            ("Module", "db"),
            ("Evidence", "file `docs/adr/003.md`"),
            ("Confidence", "high"),
            ("Last verified", "2025-01-15T15:00:00Z"),
        ],
    )
    preferences, _ = remember(
        empty_file(PREFERENCE),
        PREFERENCE,
        key="Commits",
        title="Commits",
        fields=[
            ("Preference", "One logical change per commit"),
            ("Task", "global"),
            ("Evidence", "command `git log --oneline`"),
            ("Confidence", "medium"),
            ("Last verified", "2025-01-15T15:00:00Z"),
        ],
    )
    return {KNOWN_ISSUE: known, DECISION: decisions, PREFERENCE: preferences}


def lessons(task_id: str, failure: str | None, now: datetime, **texts: str) -> tuple[str, ...]:
    chosen = {**learned(), **{kind.replace("_", "-"): text for kind, text in texts.items()}}
    return lessons_for(
        read_all(chosen), task(task_id), last_failure=failure, now=now, stale_after=MONTH
    )


KEY_SIGNATURE = "FileNotFoundError: [Errno {n}] No such file or directory: '{path}'"
SOON = T0 + timedelta(days=1)


def test_a_retry_that_failed_like_a_known_issue_gets_that_record_first() -> None:
    # T-305 (module db) failed with the error T-201 (module auth) once fixed.
    given = lessons("T-305", KEY_SIGNATURE, SOON)
    assert given[0].startswith("Known issue (your task's last run failed like this): ")
    assert "config/keys/a1b2c3d4e5f6.pem" in given[0]
    assert "src/auth/jwt.py (+3 -1)" in given[0]
    assert given[1].startswith("Decision on Seed format: Seed files are CSV, not JSON")
    assert given[2].startswith("Preference for Commits: One logical change per commit")
    assert len(given) == 3


def test_an_unrelated_task_gets_no_known_issue() -> None:
    given = lessons("T-400", None, SOON)
    assert len(given) == 1
    assert given[0].startswith("Preference for Commits")  # it names no module: for every task


def test_a_task_of_the_same_module_gets_the_known_issue_without_a_failure() -> None:
    given = lessons("T-401", None, SOON)
    assert given[0].startswith("Known issue: FileNotFoundError")


def test_each_lesson_is_one_line_with_where_it_came_from() -> None:
    for item in lessons("T-305", KEY_SIGNATURE, SOON):
        assert "\n" not in item
    issue, decision, preference = lessons("T-305", KEY_SIGNATURE, SOON)
    assert issue.endswith(
        "(T-201, seen 1x, confidence medium, verified 2025-01-15, "
        "evidence: command `pytest -q tests/auth`)"
    )
    assert decision.endswith(
        "Reason: the fixtures team exports CSV. (T-305, confidence high, verified 2025-01-15, "
        "evidence: file `docs/adr/003.md`)"
    )
    assert preference.endswith(
        "(global, confidence medium, verified 2025-01-15, evidence: command `git log --oneline`)"
    )


def test_stale_records_are_archived_and_no_longer_given() -> None:
    texts = learned()
    late = T0 + timedelta(days=31)
    assert lessons("T-305", KEY_SIGNATURE, late) == ()  # stale: not given, even unarchived

    archived, moved = archive_stale(texts[KNOWN_ISSUE], KNOWN_ISSUE, now=late, stale_after=MONTH)
    assert [record.key for record in moved] == [KEY_SIGNATURE]
    (record,) = issues(archived)
    assert record.archived
    block = texts[KNOWN_ISSUE].split("\n---\n\n", 1)[1]
    assert archived == empty_file(KNOWN_ISSUE) + "\n# Archive\n\n---\n\n" + block
    # Archived records are not given even while fresh.
    assert lessons("T-305", KEY_SIGNATURE, SOON, known_issue=archived)[0].startswith("Decision")


def test_fresh_records_and_records_of_unknown_age_stay() -> None:
    text = learned()[DECISION]
    assert archive_stale(text, DECISION, now=SOON, stale_after=MONTH) == (text, ())
    undated = text.replace("**Last verified**: 2025-01-15T15:00:00Z\n", "")
    late = T0 + timedelta(days=400)
    assert archive_stale(undated, DECISION, now=late, stale_after=MONTH) == (undated, ())
    assert lessons("T-305", None, SOON, decision=undated)[0].startswith("Preference")


def test_archiving_keeps_every_other_byte_and_the_files_line_endings() -> None:
    fresh = fixed(empty_file(KNOWN_ISSUE), "T-201", TYPE_ERROR, T0 + timedelta(days=40))
    fresh += "A person's remark on this record.\n"
    both = fixed(fresh, "T-201", KEY_MISSING, T0)  # the older record, added last
    crlf = both.replace("\n", "\r\n")
    late = T0 + timedelta(days=45)

    archived, moved = archive_stale(crlf, KNOWN_ISSUE, now=late, stale_after=MONTH)

    assert [record.key for record in moved] == [KEY_SIGNATURE]
    assert "\n" not in archived.replace("\r\n", "")
    active, archive = archived.split("# Archive\r\n")
    assert active == fresh.replace("\n", "\r\n") + "\r\n"
    assert archive.startswith("\r\n---\r\n\r\n## " + KEY_SIGNATURE + "\r\n")
    assert [record.archived for record in parse_memory(archived, KNOWN_ISSUE).records] == [
        False,
        True,
    ]


def test_a_record_learned_again_comes_back_from_the_archive() -> None:
    text = fixed(empty_file(KNOWN_ISSUE), "T-201", KEY_MISSING, T0)
    late = T0 + timedelta(days=60)
    archived, _ = archive_stale(text, KNOWN_ISSUE, now=late, stale_after=MONTH)

    again = fixed(archived, "T-305", KEY_MISSING_ELSEWHERE, late)

    (record,) = issues(again)
    assert not record.archived
    assert record.seen == 2
    assert again.rstrip().endswith("# Archive")
    assert lessons("T-305", KEY_SIGNATURE, late, known_issue=again)[0].startswith("Known issue")


def test_the_prompt_budget_holds_with_1000_records() -> None:
    records = read_all(many_records(1000))
    assert len(records) == 1000
    target = task("T-201")
    start = time.perf_counter()
    given = lessons_for(
        records,
        target,
        last_failure="AssertionError: case 3",  # a known issue of module auth
        now=SOON,
        stale_after=MONTH,
        budget=memory_selection.LESSONS_BUDGET,
    )
    elapsed = time.perf_counter() - start

    assert 1 <= len(given) <= memory_selection.MAX_LESSONS
    assert given[0].startswith("Known issue (your task's last run failed like this)")
    with_lessons = prompt_with(target, given)
    without = prompt_with(target, ())
    assert len(with_lessons.encode()) - len(without.encode()) <= memory_selection.LESSONS_BUDGET
    assert elapsed < 1.0  # linear in the records: about a millisecond on a laptop


def test_a_small_budget_gives_fewer_lessons_never_more_bytes() -> None:
    records = read_all(many_records(200))
    target = task("T-201")
    for budget in (0, 100, 300, 700, 1500, 4000):
        given = lessons_for(
            records, target, last_failure=None, now=SOON, stale_after=MONTH, budget=budget
        )
        added = len(prompt_with(target, given).encode()) - len(prompt_with(target, ()).encode())
        assert added <= budget
    assert (
        lessons_for(records, target, last_failure=None, now=SOON, stale_after=MONTH, budget=0) == ()
    )


def prompt_with(target: Task, given: tuple[str, ...]) -> str:
    return build_prompt(
        system="You are a worker.",
        task_block=task_block(PLAN, target),
        task=target,
        module_entry=None,
        notes=parse_notes("").notes,
        context=[],
        lessons=given,
    )


def many_records(count: int) -> dict[str, str]:
    """``count`` records spread over the three files: a third in module auth, long texts."""
    texts = {kind: empty_file(kind) for kind in memory.KINDS}
    for number in range(count):
        kind = memory.KINDS[number % 3]
        module = ("auth", "db", "ui")[number % 7 % 3]
        fields = [
            (memory.LABELS[kind][0], f"Lesson {number}: " + "a long explanation " * 20),
            ("Task", f"T-{number}"),
            ("Module", module),
            ("Evidence", f"command `pytest -q tests/test_{number}.py`"),
            ("Confidence", "high"),
            ("Last verified", "2025-01-15T12:00:00Z"),
        ]
        if kind == KNOWN_ISSUE:
            fields += [
                ("Signature", f"`AssertionError: case {number}`"),
                ("Fix", "changed the test"),
            ]
        key = f"AssertionError: case {number}" if kind == KNOWN_ISSUE else f"topic {number}"
        title = f"2025-01-15: {key}" if kind == DECISION else key
        texts[kind] += "\n" + "\n".join(memory.render_record(title, fields)) + "\n"
    return texts


# -- remember: the edit ----------------------------------------------------------------------


DECISIONS = """\
# Decisions

---

## 2025-01-10: Session storage
**Decision**: Redis
**Reason**: fast
 and already deployed
**Task**: T-201
**Evidence**: command `redis-cli ping`
**Confidence**: medium
**Last verified**: 2025-01-10T09:00:00Z
A remark a person added.

---

## 2025-01-11: Logging
**Decision**: structlog
**Task**: global
**Evidence**: file `pyproject.toml`
**Confidence**: high
**Last verified**: 2025-01-11T09:00:00Z
"""


def test_learning_a_topic_again_rewrites_only_its_field_lines() -> None:
    text, created = remember(
        DECISIONS.replace("\n", "\r\n"),
        DECISION,
        key="  session   STORAGE ",
        title="2025-01-15: Session storage",
        fields=[
            ("Decision", "PostgreSQL"),
            ("Task", "T-201"),
            ("Evidence", "command `psql -c 'select 1'`"),
            ("Confidence", "high"),
            ("Last verified", "2025-01-15T15:00:00Z"),
        ],
        replaces=("Reason", "Context"),
    )
    assert not created
    expected = (
        DECISIONS.replace("## 2025-01-10: Session storage", "## 2025-01-15: Session storage")
        .replace("**Decision**: Redis", "**Decision**: PostgreSQL")
        .replace("**Reason**: fast\n and already deployed\n", "")
        .replace("`redis-cli ping`", "`psql -c 'select 1'`")
        .replace("**Confidence**: medium", "**Confidence**: high")
        .replace("2025-01-10T09:00:00Z", "2025-01-15T15:00:00Z")
    )
    assert text == expected.replace("\n", "\r\n")


def test_a_new_topic_goes_after_the_last_active_record() -> None:
    with_archive = DECISIONS + "\n# Archive\n\n---\n\n## 2024-01-01: Old\n**Decision**: x\n"
    text, created = remember(
        with_archive,
        DECISION,
        key="Queues",
        title="2025-01-15: Queues",
        fields=[("Decision", "RabbitMQ")],
    )
    assert created
    assert text == with_archive.replace(
        "\n# Archive", "\n---\n\n## 2025-01-15: Queues\n\n**Decision**: RabbitMQ\n\n# Archive"
    )


def test_a_file_without_a_final_line_ending_gets_one_before_the_new_record() -> None:
    text, _ = remember(
        "# Preferences", PREFERENCE, key="Style", title="Style", fields=[("Preference", "x")]
    )
    assert text == "# Preferences\n\n---\n\n## Style\n\n**Preference**: x\n"


def test_field_values_are_folded_onto_one_line() -> None:
    text, _ = remember(
        "", PREFERENCE, key="Style", title="Sty\nle", fields=[("Preference", "a\n## Archive\nb")]
    )
    assert text == "---\n\n## Sty le\n\n**Preference**: a ## Archive b\n"


def test_a_record_below_an_unclosed_fence_is_refused() -> None:
    with pytest.raises(ValueError, match="never closed"):
        remember("# Decisions\n\n```\n", DECISION, key="x", title="2025-01-01: x", fields=[])


# -- reading and checking --------------------------------------------------------------------


def test_every_record_memento_writes_reads_back_without_a_problem() -> None:
    for kind, text in learned().items():
        parsed = parse_memory(text, kind)
        assert parsed.problems == ()
        assert len(parsed.records) == 1


def test_fields_may_be_bulleted_or_have_the_colon_inside_the_bold() -> None:
    text = (
        "## Commits\n- **Preference:** small\n* **last-verified**: 2025-01-15T00:00:00Z\n"
        "**task**: global\n**Evidence**: file docs/x.md\n**Confidence**: Low\n"
    )
    (record,) = parse_memory(text, PREFERENCE).records
    assert record.text == "small"
    assert record.last_verified == datetime(2025, 1, 15, tzinfo=timezone.utc)
    assert record.evidence == memory.Evidence("file", "docs/x.md")
    assert record.confidence == "low"
    assert parse_memory(text, PREFERENCE).problems == ()


def test_fenced_code_and_comments_hold_no_records() -> None:
    text = "# Preferences\n\n```\n## Not a record\n**Preference**: x\n```\n<!--\n## Nor this\n-->\n"
    assert parse_memory(text, PREFERENCE) == memory.Memory((), (), None)


GOOD_DECISION = [
    "## 2025-01-15: Sessions",
    "**Decision**: Redis",
    "**Task**: T-201",
    "**Evidence**: command `redis-cli ping`",
    "**Confidence**: high",
    "**Last verified**: 2025-01-15T15:00:00Z",
]


def decision_with(**changes: str | None) -> str:
    """A valid decision record with fields changed (None removes one; new labels are added)."""
    lines = []
    for line in GOOD_DECISION:
        label = line.split("**")[1] if line.startswith("**") else None
        if label in changes:
            new = changes[label]
            if new is not None:
                lines.append(f"**{label}**: {new}")
        else:
            lines.append(line)
    known = {line.split("**")[1] for line in GOOD_DECISION[1:]}
    lines += [f"**{label}**: {new}" for label, new in changes.items() if label not in known]
    return "# Decisions\n\n---\n\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "line", "severity", "message"),
    [
        (decision_with(Evidence=None), 5, ERROR, "this decision has no **Evidence** line; add one"),
        (decision_with(Confidence="sure"), 9, ERROR, "confidence 'sure' is not one of high"),
        (decision_with(**{"Last verified": "yesterday"}), 10, ERROR, "'yesterday' is not an ISO"),
        (decision_with(Evidence="pytest -q"), 8, ERROR, "write the evidence as 'file"),
        (decision_with(Evidence="command pytest"), 8, ERROR, "write the command as a code span"),
        (decision_with(Task="the auth one"), 7, ERROR, "must be a task ID like T-201, or global"),
        (decision_with(Decision=""), 6, ERROR, "**Decision** is empty"),
        (decision_with(Owner="alice"), 11, WARNING, "memento does not know the field **Owner**"),
        (
            decision_with().replace("2025-01-15: Sessions", "Sessions"),
            5,
            ERROR,
            "write a decision's heading as '## 2025-01-15: topic'",
        ),
        (
            decision_with() + "\n---\n\n" + decision_with().split("---\n\n")[1],
            14,
            ERROR,
            "the same topic as the one at line 5; merge them",
        ),
        (
            decision_with().replace("**Task**: T-201", "**Task**: T-201\n**Task**: T-202"),
            8,
            ERROR,
            "a second **Task** line in this record (the first is line 7)",
        ),
        (
            "# Decisions\n\n**Decision**: loose\n",
            3,
            ERROR,
            "this field belongs to no decision",
        ),
        (decision_with() + "\n## Archive\n", 12, ERROR, "heading is '# Archive'"),
        (decision_with() + "\n```python\n", 12, ERROR, "never closed"),
    ],
)
def test_malformed_records_are_reported_at_their_line(
    text: str, line: int, severity: str, message: str
) -> None:
    problems = parse_memory(text, DECISION).problems
    assert any(
        problem.line == line and problem.severity == severity and message in problem.message
        for problem in problems
    ), problems


def test_known_issue_fields_are_checked_too() -> None:
    text = fixed(empty_file(KNOWN_ISSUE), "T-201", TYPE_ERROR, T0)
    broken = text.replace("**Seen**: 1", "**Seen**: 0").replace(
        "**Signature**: `", "**Signature**: "
    )
    messages = [problem.message for problem in parse_memory(broken, KNOWN_ISSUE).problems]
    assert any(message.startswith("seen: 0 is too small") for message in messages), messages
    assert any(message.startswith("signature: write it as a code span") for message in messages)


# -- lessons told by people ------------------------------------------------------------------

SESSIONS = memory_learning.Lesson(
    DECISION,
    "Session storage",
    "Keep sessions in Redis",
    memory.Evidence("command", "redis-cli ping"),
    task="T-201",
    modules=("auth",),
    reason="already deployed",
)


def test_a_lesson_is_recorded_then_updated_by_its_topic() -> None:
    text, created = memory_learning.learn(empty_file(DECISION), SESSIONS, T0)

    assert created
    parsed = parse_memory(text, DECISION)
    assert parsed.problems == ()
    (record,) = parsed.records
    assert (record.title, record.text, record.value("Reason")) == (
        "2025-01-15: Session storage",
        "Keep sessions in Redis",
        "already deployed",
    )
    assert (record.task, record.modules, record.confidence, record.last_verified) == (
        "T-201",
        ("auth",),
        "high",
        T0,
    )

    later = T0 + timedelta(days=1)
    changed = SESSIONS._replace(key=" session\tSTORAGE ", text="PostgreSQL", reason="", modules=())
    again, created = memory_learning.learn(text, changed, later)

    assert not created
    (record,) = parse_memory(again, DECISION).records
    assert (record.title, record.text, record.value("Reason"), record.modules) == (
        "2025-01-16: session STORAGE",
        "PostgreSQL",
        None,
        (),
    )
    assert record.last_verified == later


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"key": " \n"}, "the topic is empty"),
        ({"text": ""}, "the decision is empty"),
        ({"kind": PREFERENCE}, "a preference has only its text; reason is for decisions"),
        ({"kind": KNOWN_ISSUE}, "learn a decision or a preference"),
        ({"confidence": "sure"}, "confidence 'sure' is not one of high, medium, low"),
        ({"task": "the auth one"}, "task 'the auth one': give a task ID like T-201"),
        ({"modules": ("a b",)}, "module 'a b': give one module name"),
        ({"evidence": memory.Evidence("command", " ")}, "the evidence is empty"),
    ],
)
def test_a_lesson_that_cannot_be_recorded_is_a_sentence(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        memory_learning.learn(empty_file(DECISION), SESSIONS._replace(**change), T0)
