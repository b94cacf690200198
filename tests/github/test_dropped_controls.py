"""No control is dropped, and none is applied on the wrong person's word, however GitHub
schedules the runs (the security issue's class 7).

GitHub keeps one waiting run per concurrency group and cancels the one before it, so the run
of an edit of the dashboard, or of a comment, may never start. Each test here lets a real
`memento github` run (real git, the fake GitHub over HTTP through PyGithub, the scripted
agent) find what such a dropped run left: a box still ticked, by a person who may steer or by
one who may not, or a comment edited after it was applied.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memento_gh.github import render
from testing.action_runs import (
    ActionProject,
    BusyGitHub,
    RunResult,
    comment_event,
    edit_event,
    person,
    tick_box,
    tick_task_box,
)
from testing.fake_github import FakeGitHub
from testing.ticks import good, wrong

pytestmark = pytest.mark.timeout(180)

REPOSITORY = "octo/project"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(REPOSITORY, "ghs_test_token_0123456789") as server:
        server.set_permission("alice", "admin")
        server.set_permission("mallory", "triage")  # may edit issues, may not steer memento
        yield server


@pytest.fixture
def project(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    return ActionProject(tmp_path, github)


def dashboard_of(project: ActionProject) -> dict[str, Any]:
    [dashboard] = project.memento_issues("dashboard")
    return dashboard


def ticked(body: str) -> list[str]:
    """The lines of the boxes ticked in ``body``."""
    return [line for line in body.splitlines() if line.startswith("- [x]")]


def block_t101(project: ActionProject) -> None:
    """Three scheduled runs in which T-101's agent gets it wrong: T-101 ends [!]."""
    project.script({"T-101": wrong("T-101")})
    for _ in range(3):
        assert project.run("schedule").code == 0
    assert project.marker("T-101") == "!"


def status(project: ActionProject) -> str:
    return project.show("docs/TICK_STATUS.md")


# -- a trusted box whose own run was dropped ------------------------------------------------


def displace_by_schedule(project: ActionProject, github: FakeGitHub) -> RunResult:
    return project.run("schedule")


def displace_by_comment(project: ActionProject, github: FakeGitHub) -> RunResult:
    note = comment_event(github, dashboard_of(project), "Keep the modules small.")
    return project.run("issue_comment", note)


def displace_by_dispatch(project: ActionProject, github: FakeGitHub) -> RunResult:
    env = {"MEMENTO_COMMAND": "note", "MEMENTO_TEXT": "Keep the modules small."}
    return project.run("workflow_dispatch", env=env)


@pytest.mark.parametrize(
    "displace", [displace_by_schedule, displace_by_comment, displace_by_dispatch]
)
def test_a_trusted_box_whose_run_was_dropped_is_applied_by_the_next_run_of_any_kind(
    project: ActionProject, github: FakeGitHub, displace: Any
) -> None:
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    project.run("schedule")
    dashboard = dashboard_of(project)
    person(github, "alice").edit_issue(
        dashboard["number"], body=tick_box(dashboard["body"], "pause")
    )
    # The edit's own run was dropped: the next run is a schedule, a comment or a dispatch.

    result = displace(project, github)

    assert result.code == 0, result.said
    assert project.plan().settings.tick_mode == "paused"
    assert project.marker("T-102") == " "  # paused before anything could tick
    body = github.issue(dashboard["number"])["body"]
    assert ticked(body) == []
    assert f"- [ ] {render.marker(render.CONTROL_KIND, 'resume')}" in body


# -- a box ticked by someone who may not steer -----------------------------------------------


def test_a_strangers_box_is_refused_and_unticked_by_the_run_of_the_edit(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule")
    dashboard = dashboard_of(project)
    paused = tick_box(dashboard["body"], "pause")
    person(github, "mallory").edit_issue(dashboard["number"], body=paused)

    result = project.run("issues", edit_event(dashboard, paused, editor="mallory"))

    assert result.outputs["outcome"] == "untrusted"
    assert project.plan().settings.tick_mode == "auto"
    assert ticked(github.issue(dashboard["number"])["body"]) == []
    assert "memento: pause not applied" in project.subjects()
    [refused] = [line for line in status(project).splitlines() if "not applied" in line]
    assert "Control not applied (pause)" in refused
    assert "@mallory" in refused


def test_a_strangers_box_is_never_applied_by_a_later_trusted_edit(
    project: ActionProject, github: FakeGitHub
) -> None:
    block_t101(project)
    dashboard = dashboard_of(project)
    paused = tick_box(dashboard["body"], "pause")
    person(github, "mallory").edit_issue(dashboard["number"], body=paused)
    # mallory's run was dropped; alice ticks another box on the same body.
    both = tick_task_box(paused, "retry", "T-101")
    person(github, "alice").edit_issue(dashboard["number"], body=both)

    result = project.run("issues", edit_event({**dashboard, "body": paused}, both))

    assert result.code == 0, result.said
    assert project.marker("T-101") == " "  # alice's retry
    assert project.plan().settings.tick_mode == "auto"  # not mallory's pause
    assert ticked(github.issue(dashboard["number"])["body"]) == []
    assert "Control not applied (pause)" in status(project)
    assert "memento: pause not applied" in project.subjects()


def test_a_strangers_box_whose_run_was_dropped_is_refused_by_the_next_scheduled_run(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    project.run("schedule")
    dashboard = dashboard_of(project)
    person(github, "mallory").edit_issue(
        dashboard["number"], body=tick_box(dashboard["body"], "stop")
    )

    result = project.run("schedule")

    assert result.code == 0, result.said
    assert project.plan().settings.tick_mode == "auto"
    assert project.marker("T-102") == "x"  # the tick went on
    assert ticked(github.issue(dashboard["number"])["body"]) == []
    assert "Control not applied (stop)" in status(project)
    assert "memento: stop not applied" in project.subjects()


# -- each tick is decided once -----------------------------------------------------------------


def test_a_box_is_applied_once_though_later_runs_still_find_it_ticked(
    project: ActionProject, github: FakeGitHub
) -> None:
    block_t101(project)
    dashboard = dashboard_of(project)
    number = dashboard["number"]
    alice = person(github, "alice")
    retry = tick_task_box(dashboard["body"], "retry", "T-101")
    alice.edit_issue(number, body=retry)
    # The dashboard cannot be written back for a while: the box stays ticked.
    github.fail("PATCH", f"issues/{number}", 500, times=6)
    project.run("issues", edit_event(dashboard, retry))
    assert project.marker("T-101") == " "
    project.run("workflow_dispatch")  # a tick: T-101 fails once more
    assert "  - retries: 1" in project.show("docs/MASTER_PLAN.md").split("`T-101`")[1]
    github.clear_faults()
    both = tick_box(retry, "pause")
    alice.edit_issue(number, body=both)

    project.run("issues", edit_event({**dashboard, "body": retry}, both))

    assert project.plan().settings.tick_mode == "paused"
    plan = project.show("docs/MASTER_PLAN.md")
    assert "  - retries: 1" in plan.split("`T-101`")[1]  # the retry was not applied again
    assert project.subjects().count("memento: retry T-101") == 1
    assert ticked(github.issue(number)["body"]) == []


# -- a comment edited after it was applied ---------------------------------------------------------


def test_a_comment_edited_after_it_was_applied_is_not_applied_again(
    project: ActionProject, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    block_t101(project)
    [issue] = project.memento_issues("blocked")
    then = datetime.now(timezone.utc) - timedelta(days=3)
    comment = github.add_comment(
        issue["number"], "/memento retry", author="alice", association="OWNER", created_at=then
    )
    payload = {"action": "created", "issue": issue, "comment": comment, "sender": comment["user"]}
    # Three days ago, the comment's own run retried T-101.
    stamp = then.strftime("%Y-%m-%dT%H:%M:%SZ")
    with monkeypatch.context() as old:
        old.setenv("GIT_COMMITTER_DATE", stamp)
        old.setenv("GIT_AUTHOR_DATE", stamp)
        assert project.run("issue_comment", payload).code == 0
    assert project.marker("T-101") == " "

    # Today alice edits it: GitHub sends an `edited` event, and lists it as updated.
    edited = github.edit_comment(comment["id"], "/memento skip")
    again = project.run("issue_comment", {**payload, "action": "edited", "comment": edited})
    assert again.outputs["outcome"] == "ignored"
    project.script({"T-101": wrong("T-101")})
    project.run("schedule")

    assert project.marker("T-101") != "-"
    assert not any(subject.startswith("memento: skip") for subject in project.subjects())


def test_a_comment_that_changed_nothing_is_not_applied_again_later(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    project.run("schedule")
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})
    dashboard = dashboard_of(project)
    # Paused already: the comment's run changes nothing, and says so with a reaction.
    result = project.run("issue_comment", comment_event(github, dashboard, "/memento pause"))
    assert result.code == 0, result.said

    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "resume"})
    project.run("schedule")

    assert project.plan().settings.tick_mode == "auto"
    assert project.marker("T-102") == "x"


def test_a_box_ticked_while_a_run_works_is_left_ticked_for_its_own_run(
    tmp_path: Path,
) -> None:
    with BusyGitHub(REPOSITORY, "ghs_test_token_0123456789") as github:
        github.set_permission("alice", "admin")
        project = ActionProject(tmp_path, github)
        project.script({"T-101": good("T-101"), "T-102": good("T-102")})
        project.run("schedule")
        dashboard = dashboard_of(project)
        paused = tick_box(dashboard["body"], "pause")
        # alice ticks Pause after the next run has read the dashboard, while it works.
        github.meanwhile.append(
            lambda: person(github, "alice").edit_issue(dashboard["number"], body=paused)
        )

        project.run("schedule")  # it ticks T-102, then writes the dashboard back

        assert project.marker("T-102") == "x"
        assert len(ticked(github.issue(dashboard["number"])["body"])) == 1  # not overwritten
        project.run("issues", edit_event(dashboard, paused))  # her edit's own run
        assert project.plan().settings.tick_mode == "paused"
        assert ticked(github.issue(dashboard["number"])["body"]) == []
