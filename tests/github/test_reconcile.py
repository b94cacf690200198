"""The issues memento wants, from the plan: create, edit, reopen, reply and close."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import NamedTuple

from memento_gh.formats import status_log
from memento_gh.github import reconcile, render
from memento_gh.github.reconcile import Create, Edit, Reply
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from testing.plans import DEFAULT_META, phase_block, plan_text, task_block

WHEN = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


class Issue(NamedTuple):
    number: int
    body: str
    state: str = "open"
    url: str = ""


def plan_with(markers: dict[str, str], **meta: str) -> Plan:
    tasks = [task_block(task_id, marker) for task_id, marker in markers.items()]
    return parse(plan_text([phase_block(1, "Core", tasks)], {**DEFAULT_META, **meta}))


def task_issue(number: int, task_id: str, state: str = "open", body: str | None = None) -> Issue:
    text = body if body is not None else render.marker(render.TASK_KIND, task_id) + "\nold"
    return Issue(number, text, state, f"https://example.test/issues/{number}")


def operations(
    plan: Plan, issues: Sequence[Issue] = (), records: Sequence[status_log.Record] = ()
) -> list[reconcile.Operation]:
    found = reconcile.find_issues(list(issues))
    return reconcile.task_operations(plan, list(records), found, plan_path="docs/MASTER_PLAN.md")


def test_a_blocked_task_without_an_issue_gets_one() -> None:
    plan = plan_with({"T-1": "!", "T-2": " "})
    [create] = operations(plan)
    assert isinstance(create, Create)
    assert render.read_marker(create.text.body) == (render.TASK_KIND, "T-1")
    assert create.text.title.startswith("T-1 BLOCKED")
    assert render.BLOCKED_LABEL in create.text.labels


def test_an_existing_issue_is_never_created_again_only_brought_up_to_date() -> None:
    plan = plan_with({"T-1": "!"})
    [create] = operations(plan)
    assert isinstance(create, Create)
    current = task_issue(7, "T-1", body=create.text.body)
    assert operations(plan, [current]) == []
    assert operations(plan, [task_issue(7, "T-1")]) == [Edit(7, body=create.text.body)]


def test_a_closed_issue_of_a_task_blocked_again_is_reopened() -> None:
    plan = plan_with({"T-1": "!"})
    [edit] = operations(plan, [task_issue(3, "T-1", state="closed")])
    assert isinstance(edit, Edit)
    assert (edit.number, edit.state) == (3, "open")


def test_a_task_that_left_blocked_gets_a_reply_and_its_issue_closed() -> None:
    for marker, reason in (("x", "completed"), (" ", "completed"), ("-", "not_planned")):
        plan = plan_with({"T-1": marker})
        reply, close = operations(plan, [task_issue(4, "T-1")])
        assert isinstance(reply, Reply)
        assert reply.number == 4
        assert render.is_generated(reply.body)
        assert close == Edit(4, state="closed", state_reason=reason)


def test_a_task_gone_from_the_plan_closes_as_not_planned_and_closed_issues_stay_closed() -> None:
    plan = plan_with({"T-2": " "})
    gone = operations(plan, [task_issue(4, "T-1"), task_issue(5, "T-3", state="closed")])
    assert gone[-1] == Edit(4, state="closed", state_reason="not_planned")
    assert len(gone) == 2


def test_of_two_issues_with_one_marker_the_open_one_counts() -> None:
    found = reconcile.find_issues(
        [task_issue(2, "T-1", state="closed"), task_issue(9, "T-1"), task_issue(12, "T-1")]
    )
    assert found.tasks["T-1"].number == 9
    assert [(d.issue.number, d.kept.number) for d in found.duplicates] == [(12, 9)]


def test_a_second_open_issue_for_one_purpose_is_answered_and_closed() -> None:
    dashboards = [Issue(n, render.marker(render.DASHBOARD_KIND) + "\nbody") for n in (5, 3, 8)]
    found = reconcile.find_issues([*dashboards, task_issue(4, "T-1"), task_issue(6, "T-2")])

    assert found.dashboard is not None and found.dashboard.number == 3
    operations = reconcile.duplicate_operations(found)
    assert [type(op).__name__ for op in operations] == ["Reply", "Edit", "Reply", "Edit"]
    assert [op.number for op in operations] == [5, 5, 8, 8]
    reply = operations[0]
    assert isinstance(reply, Reply) and "#3" in reply.body and render.is_generated(reply.body)
    assert operations[1] == Edit(5, state="closed", state_reason="not_planned")


def test_closed_issues_are_never_duplicates() -> None:
    found = reconcile.find_issues([task_issue(2, "T-1", state="closed"), task_issue(9, "T-1")])
    assert found.duplicates == ()
    assert reconcile.duplicate_operations(found) == []


def test_issues_without_a_marker_are_not_memento_issues() -> None:
    found = reconcile.find_issues([Issue(1, "T-1 BLOCKED: a title is no marker")])
    assert found == reconcile.Found({}, None, None)


def records_of(*events: str) -> list[status_log.Record]:
    text = "# TICK STATUS LOG\n"
    for line in events:
        text = status_log.append(text, status_log.render_event(WHEN, line))
    return status_log.parse_status(text)


def test_the_breaker_issue_opens_while_the_breaker_holds_the_plan() -> None:
    tripped = records_of(status_log.circuit_breaker("3 ticks in a row failed"))
    plan = plan_with({"T-1": " "}, tick_mode="paused")
    found = reconcile.find_issues([])
    [create] = reconcile.breaker_operations(plan, tripped, found)
    assert isinstance(create, Create)
    assert render.read_marker(create.text.body) == (render.BREAKER_KIND, None)
    assert "3 ticks in a row failed" in create.text.body


def test_a_pause_by_a_person_is_no_breaker_trip() -> None:
    plan = plan_with({"T-1": " "}, tick_mode="paused")
    later = records_of(status_log.circuit_breaker("disk"), "Control: T-1 skipped")
    assert reconcile.breaker_operations(plan, later, reconcile.find_issues([])) == []
    assert reconcile.breaker_operations(plan, [], reconcile.find_issues([])) == []


def test_resuming_closes_the_breaker_issue_once() -> None:
    tripped = records_of(status_log.circuit_breaker("disk"))
    plan = plan_with({"T-1": " "}, tick_mode="auto")
    issue = Issue(6, render.marker(render.BREAKER_KIND) + "\nwhy")
    reply, close = reconcile.breaker_operations(plan, tripped, reconcile.find_issues([issue]))
    assert isinstance(reply, Reply)
    assert close == Edit(6, state="closed", state_reason="completed")
    closed = issue._replace(state="closed")
    assert reconcile.breaker_operations(plan, tripped, reconcile.find_issues([closed])) == []


def view_of(plan: Plan, records: Sequence[status_log.Record] = ()) -> render.DashboardView:
    return render.DashboardView(
        plan=plan,
        records=list(records),
        blocked_issues={},
        server_url="https://github.com",
        repository="o/r",
        branch="memento",
        updated="never",
    )


def test_the_dashboard_is_made_once_and_written_only_when_it_changes() -> None:
    plan = plan_with({"T-1": " ", "T-2": " "})
    [create] = reconcile.dashboard_operations(view_of(plan), reconcile.find_issues([]))
    assert isinstance(create, Create)
    same = Issue(1, create.text.body)
    assert reconcile.dashboard_operations(view_of(plan), reconcile.find_issues([same])) == []
    progressed = plan_with({"T-1": "x", "T-2": " "})
    [edit] = reconcile.dashboard_operations(view_of(progressed), reconcile.find_issues([same]))
    assert isinstance(edit, Edit)
    assert edit.number == 1
    assert edit.body != create.text.body
