"""`memento github` end to end in-process: real git (a bare origin, a fresh checkout per
run), the fake GitHub server over HTTP through PyGithub, the scripted agent as a process.
The same flows run under `act` with the real workflow in tests/test_act_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memento_gh.formats import memory
from memento_gh.formats.notes import parse_notes
from memento_gh.github import render
from testing.action_runs import ActionProject, comment_event, edit_event, person, tick_box
from testing.fake_github import FakeGitHub
from testing.repos import clone, commit_all, git
from testing.ticks import good, one_phase, plan_of, wrong

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    return ActionProject(tmp_path, github)


def block_t101(project: ActionProject) -> None:
    """Three scheduled runs in which T-101's agent gets it wrong: T-101 ends [!]."""
    project.script({"T-101": wrong("T-101")})
    for _ in range(3):
        assert project.run("schedule").code == 0
    assert project.marker("T-101") == "!"


def test_a_scheduled_run_creates_the_branch_ticks_pushes_and_reports(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    result = project.run("schedule")
    assert result.code == 0, result.said
    assert project.marker("T-101") == "x"
    assert project.subjects()[0] == "memento: complete T-101 Write module A"
    assert project.subjects("main") == ["project"]  # the base branch is never written
    assert result.outputs["outcome"] == "success"
    assert result.outputs["task-id"] == "T-101"
    assert (result.outputs["completed"], result.outputs["total"]) == ("1", "3")
    assert result.outputs["commit"] == git(project.origin, "rev-parse", "memento").strip()
    [dashboard] = project.memento_issues("dashboard")
    assert "1/3" in dashboard["body"] or "1 of 3" in dashboard["body"]
    assert "T-101" in result.summary
    author = git(project.origin, "log", "-1", "--format=%an <%ae>", "memento").strip()
    assert author.startswith("github-actions[bot] <")


def test_a_steady_run_with_nothing_new_makes_at_most_three_requests(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})
    github.reset_requests()
    result = project.run("schedule")  # paused: the tick is skipped, nothing changes
    assert result.code == 0, result.said
    assert github.request_count() <= 3, github.requests_log


def test_a_paused_run_says_the_tick_was_skipped_once(project: ActionProject) -> None:
    project.script({"T-101": good("T-101")})
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})
    result = project.run("schedule")
    assert result.summary.count("Tick skipped: mode=paused") == 1, result.summary
    assert "skipped — Tick skipped" not in result.summary


def test_a_failing_task_opens_exactly_one_issue_however_often_the_run_repeats(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": wrong("T-101")})
    project.run("schedule")
    project.run("schedule")
    github.reset_requests()
    result = project.run("schedule")
    assert result.outputs["outcome"] == "blocked"
    blocking_requests = github.request_count()
    # (one of them the blocking run's comment: its logs and the verify output's end)
    assert blocking_requests <= 9, github.requests_log
    for _ in range(2):
        project.run("schedule")
    [issue] = project.memento_issues("blocked")
    assert issue["title"].startswith("T-101 BLOCKED")
    assert issue["state"] == "open"
    assert render.read_marker(issue["body"]) == (render.TASK_KIND, "T-101")
    assert "src/a.py has no A" in issue["body"]  # the verify output


def test_an_owner_comment_becomes_a_note_and_a_stranger_comment_nothing(
    project: ActionProject, github: FakeGitHub
) -> None:
    block_t101(project)
    [issue] = project.memento_issues("blocked")
    owner = project.run(
        "issue_comment", comment_event(github, issue, "Use the word A, capitalised.")
    )
    assert owner.code == 0, owner.said
    [note] = parse_notes(project.show("docs/HUMAN_NOTES.md")).active()
    assert note.target == "T-101"
    assert "Use the word A" in note.text
    assert note.source is not None
    assert "@alice (OWNER)" in note.source
    # (the run that blocked the task commented first: the verify output's end)
    blocking, comment = github.comments(issue["number"])
    assert "The run that blocked T-101" in blocking["body"]
    assert [reaction["content"] for reaction in github.reactions(comment["id"])] == ["+1"]

    before = git(project.origin, "rev-parse", "memento")
    for association in ("NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR"):
        payload = comment_event(
            github, issue, "/memento skip", author="mallory", association=association
        )
        result = project.run("issue_comment", payload)
        assert result.outputs["outcome"] == "untrusted"
    assert git(project.origin, "rev-parse", "memento") == before
    assert project.marker("T-101") == "!"


def test_a_redelivered_comment_is_applied_once(project: ActionProject, github: FakeGitHub) -> None:
    block_t101(project)
    [issue] = project.memento_issues("blocked")
    payload = comment_event(github, issue, "Try harder.")
    project.run("issue_comment", payload)
    project.run("issue_comment", payload)
    project.run("schedule")  # and the catch-up scan does not apply it a third time
    notes = parse_notes(project.show("docs/HUMAN_NOTES.md")).active()
    assert len(notes) == 1


def test_retry_from_a_comment_then_a_passing_tick_closes_the_issue(
    project: ActionProject, github: FakeGitHub
) -> None:
    block_t101(project)
    [issue] = project.memento_issues("blocked")
    project.script({"T-101": good("T-101")})
    result = project.run("issue_comment", comment_event(github, issue, "/memento retry"))
    assert result.code == 0, result.said
    assert project.marker("T-101") == " "
    # the issue closes as soon as the task leaves [!]
    closed = github.issue(issue["number"])
    assert closed["state"] == "closed"
    assert any(render.is_generated(c["body"]) for c in github.comments(issue["number"]))
    project.run("schedule")
    assert project.marker("T-101") == "x"
    assert len(project.memento_issues("blocked")) == 1


def test_tick_from_a_comment_runs_a_tick_after_the_retry(
    project: ActionProject, github: FakeGitHub
) -> None:
    block_t101(project)
    [issue] = project.memento_issues("blocked")
    project.script({"T-101": good("T-101")})
    project.run("issue_comment", comment_event(github, issue, "/memento retry"))
    [dashboard] = project.memento_issues("dashboard")
    result = project.run("issue_comment", comment_event(github, dashboard, "/memento tick"))
    assert result.code == 0, result.said
    assert project.marker("T-101") == "x"


def test_a_ticked_dashboard_box_pauses_the_plan_and_the_body_is_rendered_unticked(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    [dashboard] = project.memento_issues("dashboard")
    ticked = tick_box(dashboard["body"], "pause")
    person(github).edit_issue(dashboard["number"], body=ticked)
    result = project.run("issues", edit_event(dashboard, ticked))
    assert result.code == 0, result.said
    assert project.plan().settings.tick_mode == "paused"
    now = github.issue(dashboard["number"])["body"]
    assert "- [x]" not in now
    assert f"- [ ] {render.marker(render.CONTROL_KIND, 'resume')}" in now


def test_a_box_ticked_by_someone_without_write_access_does_nothing(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    [dashboard] = project.memento_issues("dashboard")
    ticked = tick_box(dashboard["body"], "pause")
    github.set_permission("mallory", "read")
    result = project.run("issues", edit_event(dashboard, ticked, editor="mallory"))
    assert result.outputs["outcome"] == "untrusted"
    assert project.plan().settings.tick_mode == "auto"


def test_a_missed_comment_is_caught_up_by_the_next_scheduled_run(
    project: ActionProject, github: FakeGitHub
) -> None:
    block_t101(project)
    [issue] = project.memento_issues("blocked")
    # the comment's own run was dropped by the concurrency group: only the server has it
    missed = "A note nobody ran for."
    github.add_comment(issue["number"], missed, author="alice", association="OWNER")
    github.add_comment(issue["number"], "/memento skip", author="mallory", association="NONE")
    project.run("schedule")
    [note] = parse_notes(project.show("docs/HUMAN_NOTES.md")).active()
    assert missed in note.text
    assert project.marker("T-101") == "!"  # mallory's skip stays a comment
    project.run("schedule")
    assert len(parse_notes(project.show("docs/HUMAN_NOTES.md")).active()) == 1


def test_a_refused_command_is_answered_once_and_recorded(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    [dashboard] = project.memento_issues("dashboard")
    result = project.run(
        "issue_comment", comment_event(github, dashboard, "/memento retry T-101")
    )  # T-101 is done: nothing to retry
    assert result.code == 0, result.said
    [comment] = github.comments(dashboard["number"])
    assert [reaction["content"] for reaction in github.reactions(comment["id"])] == ["confused"]
    assert "Control not applied" in project.show("docs/TICK_STATUS.md")
    project.run("schedule")  # the catch-up scan does not try it again
    assert project.subjects().count("memento: retry not applied") == 1
    assert project.show("docs/TICK_STATUS.md").count("Control not applied") == 1
    assert len(github.reactions(comment["id"])) == 1


def test_a_push_race_ends_with_both_commits_on_the_branch(
    project: ActionProject, github: FakeGitHub, tmp_path: Path
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    human = clone(project.origin, tmp_path / "human", "-b", "memento")
    (human / "README.md").write_text("hello\n", encoding="utf-8")
    commit_all(human, "human: a readme")
    # while the next tick's agent works, the human's commit lands on the branch
    race = {"git": ["-C", str(human), "push", "-q", "origin", "memento"]}
    project.script({"T-102": [race, *good("T-102")]})
    result = project.run("schedule")
    assert result.code == 0, result.said
    subjects = project.subjects()
    assert subjects[0] == "memento: complete T-102 Write module B"
    assert "human: a readme" in subjects
    assert project.marker("T-102") == "x"


def test_dry_run_pushes_nothing_and_writes_no_issue(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    result = project.run("schedule", env={"MEMENTO_DRY_RUN": "true"})
    assert result.code == 0, result.said
    assert "memento" not in git(project.origin, "branch", "--list", "memento")
    assert github.issues() == []


def test_an_invalid_plan_is_annotated_and_not_ticked(tmp_path: Path, github: FakeGitHub) -> None:
    broken = "# MASTER_PLAN: x\n\n## Meta\n- tick_mode: sometimes\n"
    project = ActionProject(tmp_path, github, plan=broken)
    result = project.run("schedule")
    assert result.code == 1
    assert any(line.startswith("::error file=docs/MASTER_PLAN.md,line=") for line in result.said)
    assert result.outputs["outcome"] == "invalid-plan"


def test_the_agent_never_sees_the_token(project: ActionProject, tmp_path: Path) -> None:
    dump = tmp_path / "agent-env.json"
    project.script({"T-101": [{"dump_env": str(dump)}, *good("T-101")]})
    project.run("schedule")
    seen = dump.read_text(encoding="utf-8")
    assert "ghs_test_token_0123456789" not in seen


def test_the_model_input_reaches_the_agent_and_the_status_entry(
    project: ActionProject, tmp_path: Path
) -> None:
    dump = tmp_path / "agent-env.json"
    project.script({"T-101": [{"dump_env": str(dump)}, *good("T-101")]})
    result = project.run("schedule", env={"MEMENTO_MODEL": "gpt-5.5"})
    assert result.code == 0, result.said
    assert json.loads(dump.read_text(encoding="utf-8"))["MEMENTO_MODEL"] == "gpt-5.5"
    assert "gpt-5.5" in project.show("docs/TICK_STATUS.md")


def test_an_api_outage_after_the_push_loses_no_tick_and_the_next_run_converges(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": wrong("T-101")})
    project.run("schedule")
    project.run("schedule")
    github.fail("POST", "issues", 502, apply=True)  # created, but the answer is lost
    result = project.run("schedule")
    assert result.code == 0, result.said
    assert project.marker("T-101") == "!"  # the tick was pushed all the same
    project.run("schedule")
    assert len(project.memento_issues("blocked")) == 1


def test_a_circuit_breaker_trip_opens_an_issue_that_resume_closes(
    tmp_path: Path, github: FakeGitHub
) -> None:
    plan = plan_of([one_phase()], circuit_breaker_threshold="1")
    project = ActionProject(tmp_path, github, plan=plan)
    project.script({"T-101": wrong("T-101")})
    project.run("schedule")  # one failed tick is enough at threshold 1
    assert project.plan().settings.tick_mode == "paused"
    [tripped] = project.memento_issues("circuit-breaker")
    assert tripped["state"] == "open"
    assert "1 ticks in a row failed" in tripped["body"]

    project.run("schedule")  # paused: still one issue, nothing new
    assert len(project.memento_issues("circuit-breaker")) == 1

    result = project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "resume"})
    assert result.outputs["outcome"] == "controls"
    assert github.issue(tripped["number"])["state"] == "closed"


def test_a_decision_learned_in_a_comment_is_recorded_once_with_the_comment_as_evidence(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    [dashboard] = project.memento_issues("dashboard")
    body = "/memento learn decision Session storage: Keep sessions in Redis"
    result = project.run("issue_comment", comment_event(github, dashboard, body))
    assert result.code == 0, result.said
    [comment] = github.comments(dashboard["number"])
    [record] = memory.parse_memory(
        project.show("docs/memory/decisions.md"), memory.DECISION
    ).records
    assert (record.key, record.text) == ("Session storage", "Keep sessions in Redis")
    assert record.evidence == memory.Evidence("comment", comment["html_url"])
    assert record.value("Task") == "global"
    project.run("schedule")  # the catch-up scan finds the comment applied already
    assert project.show("docs/memory/decisions.md").count("Session storage") == 1
    assert [r["content"] for r in github.reactions(comment["id"])] == ["+1"]


def test_dashboards_made_twice_by_two_workers_at_once_end_as_one(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    [first] = project.memento_issues("dashboard")
    # Another worker's run listed the issues before this one's dashboard existed.
    labels = [label["name"] for label in first["labels"]]
    second = github.add_issue(first["title"], first["body"], labels=labels)

    project.run("schedule")

    still_open = [i["number"] for i in project.memento_issues("dashboard") if i["state"] == "open"]
    assert still_open == [first["number"]]
    closed = github.issue(second["number"])
    assert (closed["state"], closed["state_reason"]) == ("closed", "not_planned")
    [reply] = github.comments(second["number"])
    assert f"#{first['number']}" in reply["body"]


def test_a_retry_dispatched_twice_changes_nothing_the_second_time(
    project: ActionProject, github: FakeGitHub
) -> None:
    block_t101(project)
    retry = {"MEMENTO_COMMAND": "retry", "MEMENTO_TASK": "T-101"}
    first = project.run("workflow_dispatch", env=retry)
    assert first.code == 0, first.said
    assert project.marker("T-101") == " "
    tip = git(project.origin, "rev-parse", "memento")

    again = project.run("workflow_dispatch", env=retry)

    assert again.code == 0, again.said
    assert "Applied: nothing to change: retry T-101" in again.summary
    assert "git commit failed" not in again.summary + "\n".join(again.said)
    assert git(project.origin, "rev-parse", "memento") == tip
