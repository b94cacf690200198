"""A posted result's record (``engine/pool/handoff.py``): what another worker reads back is what
the worker that ran the task had, and nothing else passes for a record."""

from __future__ import annotations

from datetime import datetime, timezone

from memento_gh.changes import FileChange
from memento_gh.engine.agents.limits import Limit
from memento_gh.engine.pool import handoff
from memento_gh.engine.pool.handoff import Handoff
from memento_gh.engine.records import AgentResult, Attempt, ProcessResult, TaskOutcome, VerifyResult

STARTED = datetime(2026, 5, 1, 12, 0, 3, tzinfo=timezone.utc)


def posted(attempt: Attempt, outcome: str = "success") -> Handoff:
    return Handoff(
        worker="box-1",
        task="T-101",
        claimed="2026-05-01T12:00:00Z box-1",
        tick=7,
        position=1,
        claim_commit="a" * 40,
        log="logs/tick-7.log",
        outcome=outcome,
        paths=("src/a.py", "old/b.py"),
        attempt=attempt,
    )


def test_a_success_reads_back_as_it_was_posted() -> None:
    attempt = Attempt(
        violations=(),
        verify=VerifyResult(0, False, 1.5, "12 passed\n", "12 passed"),
        agent=AgentResult(ProcessResult(0, False, 3.25, "words"), {"total_cost_usd": 0.5}),
        changes=(
            FileChange("src/a.py", "modified", 3, 1, False),
            FileChange("src/b.py", "renamed", 0, 0, False, "old/b.py"),
        ),
        started=STARTED,
        seen_by_verify={"src/a.py": b"x"},
    )

    read = handoff.read_result(handoff.result_message(posted(attempt)))

    # What the bookkeeping reads comes back; the agent's words stay in its tick log, and the
    # fingerprint of verify's bytes does not travel (the change is re-applied as a patch).
    expected = attempt._replace(
        agent=AgentResult(ProcessResult(0, False, 3.25, ""), {"total_cost_usd": 0.5}),
        seen_by_verify=None,
    )
    assert read == posted(expected)


def test_a_deferral_and_a_failure_keep_their_reasons() -> None:
    attempt = Attempt(
        violations=("touched docs/MASTER_PLAN.md",),
        verify=None,
        agent=None,
        changes=(),
        started=STARTED,
        agent_failure="the agent exited with code 2",
        tick_died="the tick died",
        conflict="its change no longer applies",
        limit=Limit("usage limit reached", STARTED, None),
    )

    read = handoff.read_result(handoff.result_message(posted(attempt, "deferred")))

    assert read == posted(attempt, "deferred")


def test_a_note_says_how_the_result_ended_and_is_no_result() -> None:
    outcome = TaskOutcome("T-101", "success", "b" * 40, "verify passed, committed bbbbbbb")

    note = handoff.note_message(outcome)

    assert handoff.read_note(note) == outcome
    assert handoff.read_result(note) is None


def test_anything_else_is_neither_a_result_nor_a_note() -> None:
    for message in (
        "",
        "memento: result of T-101",
        "subject\n\nnot json",
        'subject\n\n{"memento-result": 2}',
        'subject\n\n{"memento-result": 1, "task": 5}',
        'subject\n\n["memento-result"]',
    ):
        assert handoff.read_result(message) is None
        assert handoff.read_note(message) is None


def test_a_worker_id_becomes_a_safe_ref_name_and_two_ids_stay_apart() -> None:
    assert handoff.ref_name("box-1") == "box-1"
    odd = handoff.ref_name("box.1/../x.lock")
    assert odd.startswith("box_1____x_lock-") and "/" not in odd and "." not in odd
    assert handoff.ref_name("a.b") != handoff.ref_name("a_b")


def test_a_request_and_the_claim_made_for_it_read_back() -> None:
    request = handoff.Request("box-1", "2026-05-01T12:00:00Z box-1")
    assignment = handoff.Assignment("T-101", 12, "c" * 40)

    assert handoff.read_request(handoff.request_message(request)) == request
    assert handoff.read_assignment(handoff.assignment_message(assignment)) == assignment
    # A withdrawn request is noted with no task: no claim to find.
    assert handoff.read_assignment(handoff.assignment_message(None)) is None
    # Each kind reads as itself only.
    assert handoff.read_result(handoff.request_message(request)) is None
    assert handoff.read_request(handoff.assignment_message(assignment)) is None
