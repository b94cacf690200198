"""The pull request and the base-conflict issue, decided purely: values in, decisions out."""

from __future__ import annotations

from typing import NamedTuple

from memento_gh.github import pulls, reconcile
from memento_gh.plan.scanner import parse
from testing.ticks import one_phase, plan_of


class Pull(NamedTuple):
    number: int
    body: str
    state: str = "open"
    merged: bool = False
    url: str = ""
    draft: bool = True


class Issue(NamedTuple):
    number: int
    body: str
    state: str = "open"
    url: str = ""


PLAN = parse(plan_of([one_phase()]))
COMMITS = [
    ("a" * 40, "memento: claim T-101"),
    ("b" * 40, "memento: complete T-101 Write module A"),
    ("c" * 40, "memento: pause"),
]


def view(**changes: object) -> pulls.PullView:
    made = pulls.PullView(PLAN, "memento", "main", COMMITS, {}, "http://x/issues/1")
    return made._replace(**changes)  # type: ignore[arg-type]


def test_the_tasks_completed_are_read_from_the_commits() -> None:
    again = [*COMMITS, ("d" * 40, "memento: complete T-101 Write module A")]
    assert pulls.completed_in(COMMITS) == [("T-101", "b" * 40)]
    assert pulls.completed_in(again) == [("T-101", "d" * 40)]


def test_no_pull_request_makes_one_an_equal_body_changes_nothing() -> None:
    body = pulls.pull_body(view())
    assert pulls.pull_operation([], view(), "draft") == pulls.CreatePull(
        "memento: the work on memento", body, draft=True
    )
    assert pulls.pull_operation([Pull(7, body)], view(), "draft") is None
    assert pulls.pull_operation(
        [Pull(7, f"{pulls.PULL_MARKER}\nold")], view(), "ready"
    ) == pulls.EditPull(7, body)
    assert pulls.pull_operation([], view(), "off") is None


def test_only_a_marker_on_the_first_line_makes_memento_s_pull_request() -> None:
    quoted = Pull(3, f"someone's PR\n{pulls.PULL_MARKER}")
    assert pulls.open_pull([quoted]) is None
    assert pulls.last_merged([Pull(2, pulls.PULL_MARKER, "closed", merged=True), quoted]) == Pull(
        2, pulls.PULL_MARKER, "closed", merged=True
    )


def test_the_body_has_a_spend_line_only_when_given() -> None:
    assert "Spend" not in pulls.pull_body(view())
    assert "**Spend:** 12 USD\n" in pulls.pull_body(view(spend="12 USD"))


def test_a_conflict_opens_one_issue_and_a_clean_merge_closes_it() -> None:
    conflict = pulls.Conflict("memento", "main", ("src/a.py",))
    [create] = pulls.conflict_operations(conflict, [])
    assert isinstance(create, reconcile.Create)
    assert "`src/a.py`" in create.text.body
    issue = Issue(4, create.text.body)
    assert pulls.conflict_operations(conflict, [issue]) == []
    reply, close = pulls.conflict_operations(None, [issue])
    assert isinstance(reply, reconcile.Reply)
    assert close == reconcile.Edit(4, state="closed", state_reason="completed")
    assert pulls.conflict_operations(None, [issue._replace(state="closed")]) == []


def test_a_pull_request_opened_by_hand_is_taken_over_with_its_text_below() -> None:
    create = pulls.pull_operation([], view(), "draft")
    assert isinstance(create, pulls.CreatePull)
    theirs = Pull(7, "Looks good?\r\n\n<!-- their own -->", url="http://x/pull/7")
    adopted = pulls.adoption(theirs, create)
    assert adopted == pulls.AdoptPull(
        7,
        "http://x/pull/7",
        f"{create.body}\n{pulls.TEXT_MARKER}\nLooks good?\r\n\n<!-- their own -->\n",
    )
    assert pulls.is_memento_pull(adopted.body)
    # Later runs rewrite memento's part only; their text, edited since, stays as they left it.
    edited = adopted.body.replace("Looks good?", "Looks good now")
    later = pulls.pull_operation(
        [Pull(7, edited)],
        view(commits=[*COMMITS, ("d" * 40, "memento: complete T-102 B")]),
        "draft",
    )
    assert isinstance(later, pulls.EditPull)
    assert later.body.endswith(f"\n{pulls.TEXT_MARKER}\nLooks good now\r\n\n<!-- their own -->\n")
    assert (
        pulls.pull_operation(
            [Pull(7, later.body)],
            view(commits=[*COMMITS, ("d" * 40, "memento: complete T-102 B")]),
            "draft",
        )
        is None
    )


def test_taking_over_an_empty_or_unlisted_memento_pull_request_writes_memento_s_body() -> None:
    create = pulls.pull_operation([], view(), "draft")
    assert isinstance(create, pulls.CreatePull)
    assert pulls.adoption(Pull(3, ""), create).body == create.body
    # memento's own, made by a run that died before labelling it: not quoted into itself.
    assert pulls.adoption(Pull(3, create.body), create).body == create.body
