"""``<!-- review: true -->``: a phase that ends in a review gate holds every later phase
until its pull request is merged or a person approves (the comment then says approved)."""

from __future__ import annotations

from memento_gh.plan.model import ERROR
from memento_gh.plan.picking import READY, WAITING, pick
from memento_gh.plan.scanner import parse
from testing.plans import DEFAULT_META, plan_text
from tests.plan.test_picking import phase, task


def gated(review: str, first: str = "x") -> str:
    one = phase(1, task("T-101", first)).replace(
        "<!-- depends: none -->", f"<!-- depends: none -->\n<!-- review: {review} -->"
    )
    return plan_text([one, phase(2, task("T-201"))], meta=DEFAULT_META)


def test_a_finished_review_phase_holds_the_later_phases() -> None:
    plan = parse(gated("true"))
    assert not plan.problems, plan.problems
    decision = pick(plan)
    assert (decision.task, decision.reason) == (None, WAITING)
    assert decision.message == "waiting for review of Phase 1"


def test_an_approved_review_phase_lets_them_go_on() -> None:
    decision = pick(parse(gated("approved")))
    assert decision.task is not None and decision.task.id == "T-201"
    assert decision.reason == READY


def test_a_review_phase_not_yet_finished_runs_its_own_tasks() -> None:
    decision = pick(parse(gated("true", first=" ")))
    assert decision.task is not None and decision.task.id == "T-101"


def test_review_false_is_no_gate() -> None:
    decision = pick(parse(gated("false")))
    assert decision.task is not None and decision.task.id == "T-201"


def test_a_review_value_is_validated_like_the_other_phase_comments() -> None:
    plan = parse(gated("maybe"))
    [problem] = [p for p in plan.problems if p.severity == ERROR]
    assert "review must be true, false or approved" in problem.message
    twice = parse(
        gated("true").replace(
            "<!-- review: true -->", "<!-- review: true -->\n<!-- review: true -->"
        )
    )
    assert any("sets review twice" in p.message for p in twice.problems)
