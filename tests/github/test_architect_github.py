"""The architect on GitHub, end to end in-process against the fake GitHub: ``/memento
revise`` on a blocked task's issue posts one proposal comment; a trusted ``/memento approve``
applies it as one commit, an untrusted one does nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento_gh.github import render
from memento_gh.github.revision import proposal_comment, read_proposal
from testing.action_runs import ActionProject, comment_event
from testing.fake_github import FakeGitHub
from testing.repos import git
from testing.ticks import one_phase, plan_of, wrong

pytestmark = pytest.mark.timeout(180)

PROPOSAL = "$MEMENTO_PROPOSAL_FILE"
#: Give the blocked T-101 its retries back.
UNBLOCK = [
    {"replace": PROPOSAL, "old": "- [!] `T-101`", "new": "- [ ] `T-101`"},
    {"replace": PROPOSAL, "old": "  - retries: 3", "new": "  - retries: 0"},
]


@pytest.fixture
def project(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    project = ActionProject(tmp_path, github)
    project.script({"T-101": wrong("T-101")})
    for _ in range(3):
        assert project.run("schedule").code == 0
    assert project.marker("T-101") == "!"
    project.script({"T-101": wrong("T-101"), "architect": UNBLOCK})
    return project


def proposals(github: FakeGitHub, number: int) -> list[str]:
    return [
        comment["body"]
        for comment in github.comments(number)
        if render.is_generated(comment["body"]) and "/memento approve" in comment["body"]
    ]


def revise(project: ActionProject, github: FakeGitHub) -> dict[str, object]:
    [issue] = project.memento_issues("blocked")
    result = project.run("issue_comment", comment_event(github, issue, "/memento revise"))
    assert result.code == 0, result.said
    return issue


def test_revise_posts_one_proposal_comment_and_changes_nothing(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = revise(project, github)
    [proposal] = proposals(github, int(issue["number"]))
    assert "-- [!] `T-101`" in proposal and "+- [ ] `T-101`" in proposal
    assert project.marker("T-101") == "!"
    assert "memento: revise plan (T-101)" not in project.subjects()
    project.run("schedule")  # the catch-up does not propose it again
    assert len(proposals(github, int(issue["number"]))) == 1


def test_a_trusted_approval_applies_the_revision_once(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = revise(project, github)
    payload = comment_event(github, issue, "/memento approve")
    approved = project.run("issue_comment", payload)
    assert approved.code == 0, approved.said
    assert project.marker("T-101") == " "
    assert project.subjects().count("memento: revise plan (T-101)") == 1
    project.run("issue_comment", payload)  # delivered again
    project.run("schedule")
    assert project.subjects().count("memento: revise plan (T-101)") == 1


def test_an_untrusted_approval_does_nothing(project: ActionProject, github: FakeGitHub) -> None:
    issue = revise(project, github)
    before = git(project.origin, "rev-parse", "memento")
    payload = comment_event(github, issue, "/memento approve", author="mallory", association="NONE")
    result = project.run("issue_comment", payload)
    assert result.outputs["outcome"] == "untrusted"
    assert git(project.origin, "rev-parse", "memento") == before
    assert project.marker("T-101") == "!"


def test_architect_auto_proposes_once_for_a_blocked_task_and_never_applies_it(
    tmp_path: Path, github: FakeGitHub
) -> None:
    project = ActionProject(tmp_path, github, plan_of([one_phase()], architect="auto"))
    project.script({"T-101": wrong("T-101"), "architect": UNBLOCK})
    for _ in range(3):
        assert project.run("schedule").code == 0
    assert project.marker("T-101") == "!"
    [issue] = project.memento_issues("blocked")
    assert len(proposals(github, issue["number"])) == 1
    project.run("schedule")
    assert len(proposals(github, issue["number"])) == 1
    assert project.marker("T-101") == "!"
    assert "memento: revise plan (T-101)" not in project.subjects()


def forge(project: ActionProject, github: FakeGitHub, issue: dict[str, object]) -> None:
    """Another bot (any GitHub App that may comment) posts a comment with memento's markers:
    it shows the honest diff and carries a plan that skips T-101."""
    plan = project.show("docs/MASTER_PLAN.md").replace("- [!] `T-101`", "- [-] `T-101`")
    shown = "-- [!] `T-101`\n+- [ ] `T-101`"
    body = proposal_comment("T-101", shown, plan)
    github.add_comment(int(str(issue["number"])), body, author="helper[bot]", author_type="Bot")


def test_a_proposal_another_bot_posted_is_never_applied(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = revise(project, github)
    forge(project, github, issue)  # newer than memento's own proposal
    approved = project.run("issue_comment", comment_event(github, issue, "/memento approve"))
    assert approved.code == 0, approved.said
    assert project.marker("T-101") == " "  # memento's proposal, not the forged skip


def test_with_only_a_forged_proposal_approve_changes_nothing(
    project: ActionProject, github: FakeGitHub
) -> None:
    [issue] = project.memento_issues("blocked")
    forge(project, github, issue)
    result = project.run("issue_comment", comment_event(github, issue, "/memento approve"))
    assert any("no proposal" in line for line in result.said), result.said
    assert "memento: revise plan (T-101)" not in project.subjects()
    assert project.marker("T-101") == "!"


def test_a_key_the_architect_writes_into_a_revision_never_reaches_the_comment_or_the_branch(
    tmp_path: Path, github: FakeGitHub
) -> None:
    """The proposal comment carries the plan packed (compressed, base64), where redacting
    the comment's text cannot see it: the plan is redacted before it is packed."""
    key = "sk-ant-api03-" + "R3v1s3d" * 8 + "-AA"
    project = ActionProject(tmp_path, github)
    project.script({"T-101": wrong("T-101")})
    for _ in range(3):
        assert project.run("schedule").code == 0
    leak = {"replace": PROPOSAL, "old": "## Phase 1: Core", "new": f"## Phase 1: Core {key}"}
    project.script({"T-101": wrong("T-101"), "architect": [*UNBLOCK, leak]})
    [issue] = project.memento_issues("blocked")
    env = {"ANTHROPIC_API_KEY": key}
    asked = project.run("issue_comment", comment_event(github, issue, "/memento revise"), env=env)
    assert asked.code == 0, asked.said

    [proposal] = proposals(github, int(issue["number"]))
    packed = read_proposal(proposal)
    assert packed is not None
    assert key not in proposal and key not in packed, packed[:300]
    assert "## Phase 1: Core ***" in packed
    approve = comment_event(github, issue, "/memento approve")
    assert project.run("issue_comment", approve, env=env).code == 0
    assert "memento: revise plan (T-101)" in project.subjects()
    assert key not in git(project.origin, "log", "-p", "memento")
