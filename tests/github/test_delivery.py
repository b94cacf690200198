"""Delivery through one pull request, end to end in-process: real git (a bare origin, a
fresh checkout per run), the fake GitHub over HTTP through PyGithub, the scripted agent as
a process. The test plays the user on the bare origin: it merges, squashes or rebases the
pull request there (in a clone of its own) and tells the fake GitHub what it merged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests

from memento_gh.errors import UserError
from memento_gh.github import action, pulls
from testing.action_runs import (
    ActionProject,
    BusyGitHub,
    comment_event,
    edit_event,
    person,
    tick_box,
)
from testing.fake_github import FakeGitHub
from testing.plans import phase_block
from testing.repos import GitHttpServer, clone, commit_all, git, write
from testing.ticks import good, plan_of, task

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def project(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    made = ActionProject(tmp_path, github)
    github.git_dir = made.origin  # the pull requests' heads are read there
    return made


def open_pulls(github: FakeGitHub) -> list[dict[str, Any]]:
    return [pull for pull in github.pulls() if pull["state"] == "open"]


def new_work(project: ActionProject) -> list[str]:
    """The subjects of the commits memento's branch has and the base lacks, newest first,
    but the runs' records of the pull request (bookkeeping made after the merge)."""
    subjects = git(project.origin, "log", "--format=%s", "--no-merges", "main..memento")
    return [s for s in subjects.splitlines() if not s.startswith("memento: record pull")]


def tick(project: ActionProject, *task_ids: str) -> None:
    project.script({task_id: good(task_id) for task_id in task_ids})
    result = project.run("schedule")
    assert result.code == 0, result.said


class User:
    """A person with a clone of the origin, merging and pushing as on GitHub."""

    def __init__(self, project: ActionProject) -> None:
        self.project = project
        self.root = clone(project.origin, project.tmp / "user", "-b", "main")

    def fetch(self) -> None:
        git(self.root, "fetch", "-q", "origin")
        git(self.root, "switch", "-q", "main")
        git(self.root, "reset", "-q", "--hard", "origin/main")

    def merge(self, github: FakeGitHub, number: int, method: str) -> None:
        self.fetch()
        head = git(self.root, "rev-parse", "origin/memento").strip()
        if method == "merge":
            git(self.root, "merge", "-q", "--no-ff", "-m", "Merge memento", "origin/memento")
        elif method == "squash":
            git(self.root, "merge", "-q", "--squash", "origin/memento")
            git(self.root, "commit", "-q", "-m", "memento's work (#1)")
        else:
            git(self.root, "switch", "-q", "-c", "rebased", "origin/memento")
            git(self.root, "rebase", "-q", "--force-rebase", "main")
            git(self.root, "switch", "-q", "main")
            git(self.root, "merge", "-q", "--ff-only", "rebased")
        git(self.root, "push", "-q", "origin", "main")
        merged = git(self.root, "rev-parse", "main").strip()
        github.merge_pull(number, merged, head_sha=head, method=method)

    def push_to_main(self, path: str, text: str) -> None:
        self.fetch()
        write(self.root, path, text)
        commit_all(self.root, f"a person changes {path}")
        git(self.root, "push", "-q", "origin", "main")


def test_the_first_push_opens_one_draft_pull_request_and_later_runs_never_a_second(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    [pull] = open_pulls(github)
    assert pull["draft"] is True
    assert (pull["head"]["ref"], pull["base"]["ref"]) == ("memento", "main")
    assert pull["body"].startswith("<!-- memento:pull-request -->")
    assert "T-101" in pull["body"] and "1 of 3 tasks done" in pull["body"]
    tick(project, "T-102")
    tick(project)  # T-103's agent does nothing: a failure, pushed
    assert [p["number"] for p in open_pulls(github)] == [pull["number"]]
    body = open_pulls(github)[0]["body"]
    assert "T-102" in body and "2 of 3 tasks done" in body


def test_the_body_is_written_only_when_it_changes(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})  # a push, same body
    assert github.request_count("PATCH", "pulls/*") == 0
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "resume"})
    tick(project, "T-102")  # T-102 completed: the body changes
    assert github.request_count("PATCH", "pulls/*") == 1
    github.reset_requests()
    project.run("schedule")  # nothing runs after... T-103 fails: pushed, body unchanged
    assert github.request_count("PATCH", "pulls/*") == 0
    assert github.request_count("POST", "pulls") == 0


def test_pull_request_off_opens_none(project: ActionProject, github: FakeGitHub) -> None:
    project.script({"T-101": good("T-101")})
    result = project.run("schedule", env={"MEMENTO_PULL_REQUEST": "off"})
    assert result.code == 0, result.said
    assert github.pulls() == []


def test_ready_opens_it_ready_for_review(project: ActionProject, github: FakeGitHub) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule", env={"MEMENTO_PULL_REQUEST": "ready"})
    [pull] = open_pulls(github)
    assert pull["draft"] is False


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_after_the_user_merges_the_next_pull_request_holds_only_the_new_commits(
    project: ActionProject, github: FakeGitHub, method: str
) -> None:
    tick(project, "T-101")
    [first] = open_pulls(github)
    user = User(project)
    user.merge(github, first["number"], method)
    tick(project, "T-102")
    [second] = open_pulls(github)
    assert second["number"] != first["number"]
    assert new_work(project) == ["memento: complete T-102 Write module B"]
    assert "T-101" not in second["body"].split("### Completed in this pull request")[1]
    assert project.marker("T-101") == "x" and project.marker("T-102") == "x"
    # main's merge is in memento's history: the next pull request merges cleanly.
    git(project.origin, "merge-base", "--is-ancestor", "main", "memento")


def test_commits_made_after_the_merged_head_are_kept(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    [first] = open_pulls(github)
    user = User(project)
    user.fetch()
    head = git(user.root, "rev-parse", "origin/memento").strip()
    tick(project, "T-102")  # lands after the head the user merges
    git(user.root, "merge", "-q", "--squash", head)
    git(user.root, "commit", "-q", "-m", "squashed T-101")
    git(user.root, "push", "-q", "origin", "main")
    github.merge_pull(first["number"], git(user.root, "rev-parse", "main").strip(), head_sha=head)
    tick(project, "T-103")
    assert new_work(project) == [
        "memento: complete T-103 Write module C",
        "memento: complete T-102 Write module B",
    ]


def test_a_base_that_moved_is_merged_in_before_the_tick(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    User(project).push_to_main("README.md", "a person wrote this\n")
    project.script({"T-102": good("T-102")})
    result = project.run("schedule")
    assert result.code == 0, result.said
    assert project.show("README.md") == "a person wrote this\n"
    subjects = project.subjects()
    assert subjects.index("memento: complete T-102 Write module B") < subjects.index(
        "memento: merge main into memento"
    )
    git(project.origin, "merge-base", "--is-ancestor", "main", "memento")


def test_a_conflicting_base_stops_ticking_with_one_issue_that_closes_once_resolved(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")
    User(project).push_to_main("src/a.py", "A = 2  # a person's\n")
    project.script({"T-102": good("T-102")})
    for _ in range(2):
        result = project.run("schedule")
        assert result.code == 0, result.said
        assert result.outputs["outcome"] == "waiting"
    assert project.marker("T-102") == " "  # no tick
    [issue] = project.memento_issues()[1:]  # after the dashboard
    assert issue["state"] == "open" and "src/a.py" in issue["body"]
    assert "git merge origin/main" in issue["body"]
    # The person resolves it on the branch, keeping their line.
    fixer = clone(project.origin, project.tmp / "fixer", "-b", "memento")
    git(fixer, "fetch", "-q", "origin", "main")
    git(fixer, "merge", "-q", "-X", "theirs", "origin/main", "-m", "resolve")
    git(fixer, "push", "-q", "origin", "memento")
    result = project.run("schedule")
    assert result.outputs["outcome"] == "success", result.said
    assert project.marker("T-102") == "x"
    assert github.issue(issue["number"])["state"] == "closed"


def test_an_unknown_pull_request_mode_is_refused_with_the_choices() -> None:
    env = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "o/n", "MEMENTO_PULL_REQUEST": "sometimes"}
    with pytest.raises(UserError, match="pull-request must be draft, ready or off"):
        action.read_settings(env)


def test_a_push_race_after_merging_the_base_keeps_the_merge(tmp_path: Path) -> None:
    """The push is rejected (a person pushed to the branch meanwhile) and rebased: the
    base's merge is kept as a merge, so the base stays in the branch's history."""
    with BusyGitHub("octo/project", "ghs_test_token_0123456789") as github:
        project = ActionProject(tmp_path, github)
        github.git_dir = project.origin
        tick(project, "T-101")
        person = clone(project.origin, project.tmp / "person", "-b", "memento")
        User(project).push_to_main("README.md", "a person wrote this\n")

        def push_to_memento() -> None:
            write(person, "NOTES.txt", "pushed while the run ticks\n")
            commit_all(person, "a person's commit on memento")
            git(person, "push", "-q", "origin", "memento")

        github.meanwhile.append(push_to_memento)
        tick(project, "T-102")
        assert project.show("NOTES.txt") == "pushed while the run ticks\n"
        git(project.origin, "merge-base", "--is-ancestor", "main", "memento")
        assert project.marker("T-102") == "x"


def test_the_dashboard_shows_the_pull_request(project: ActionProject, github: FakeGitHub) -> None:
    tick(project, "T-101")
    tick(project, "T-102")  # the dashboard shows a new pull request from its next edit
    [pull] = open_pulls(github)
    [dashboard] = project.memento_issues("dashboard")
    shown = f"**Pull request:** [#{pull['number']}]({pull['html_url']}) (draft)"
    assert shown in dashboard["body"]


def review_plan() -> str:
    first = phase_block(1, "Core", [task("T-101")], parallel=True, depends=None)
    first = first.replace(
        "<!-- parallel: true -->", "<!-- parallel: true -->\n<!-- review: true -->"
    )
    return plan_of([first, phase_block(2, "More", [task("T-102")], parallel=True, depends=None)])


@pytest.fixture
def gated(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    made = ActionProject(tmp_path, github, plan=review_plan())
    github.git_dir = made.origin
    return made


def finish_review_phase(project: ActionProject, github: FakeGitHub) -> dict[str, Any]:
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    result = project.run("schedule", env={"MEMENTO_REVIEWERS": "alice"})
    assert result.code == 0, result.said
    [pull] = open_pulls(github)
    assert pull["draft"] is False  # ready for review
    assert [user["login"] for user in pull["requested_reviewers"]] == ["alice"]
    assert "Phase 1 is done and waits for your review" in pull["body"]
    result = project.run("schedule")
    assert project.marker("T-102") == " "
    assert "waiting for review of Phase 1" in result.summary + "\n".join(result.said)
    return pull


def test_a_review_phase_waits_until_approve(gated: ActionProject, github: FakeGitHub) -> None:
    finish_review_phase(gated, github)
    [dashboard] = gated.memento_issues("dashboard")
    result = gated.run("issue_comment", comment_event(github, dashboard, "/memento approve"))
    assert result.code == 0, result.said
    assert "<!-- review: approved -->" in gated.show("docs/MASTER_PLAN.md")
    gated.run("schedule")
    assert gated.marker("T-102") == "x"


def test_a_review_phase_waits_until_the_merge(gated: ActionProject, github: FakeGitHub) -> None:
    pull = finish_review_phase(gated, github)
    User(gated).merge(github, pull["number"], "squash")
    result = gated.run("schedule")
    assert result.code == 0, result.said
    assert gated.marker("T-102") == "x", result.said


def test_a_review_phase_waits_until_the_dashboard_box_is_ticked(
    gated: ActionProject, github: FakeGitHub
) -> None:
    finish_review_phase(gated, github)
    [dashboard] = gated.memento_issues("dashboard")
    ticked = tick_box(dashboard["body"], "approve")
    person(github).edit_issue(dashboard["number"], body=ticked)
    result = gated.run("issues", edit_event(dashboard, ticked))
    assert result.code == 0, result.said
    assert "<!-- review: approved -->" in gated.show("docs/MASTER_PLAN.md")


CI = {"MEMENTO_CI_VERIFY": "true", "MEMENTO_GITHUB_PUSH_TOKEN": "github_pat_for_pushes"}


def completed_commit(project: ActionProject, task_id: str) -> str:
    subjects = git(project.origin, "log", "--format=%H %s", "memento").splitlines()
    return next(line.split()[0] for line in subjects if f"complete {task_id} " in line + " ")


def test_ci_verify_needs_a_push_token(project: ActionProject) -> None:
    env = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "o/n", "MEMENTO_CI_VERIFY": "true"}
    with pytest.raises(UserError, match="push-token"):
        action.read_settings(env)


def test_a_pending_check_holds_the_next_task(project: ActionProject, github: FakeGitHub) -> None:
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    project.run("schedule", env=CI)
    sha = completed_commit(project, "T-101")
    github.add_check_run(sha, "tests", status="in_progress")
    result = project.run("schedule", env=CI)
    assert result.outputs["outcome"] == "waiting", result.said
    assert project.marker("T-102") == " "
    assert "tests" in "\n".join(result.said)
    github.add_check_run(sha, "tests", conclusion="success")  # the run finished: green
    project.run("schedule", env=CI)
    assert project.marker("T-102") == "x"


def test_a_failing_check_reopens_its_task_with_a_note(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule", env=CI)
    sha = completed_commit(project, "T-101")
    github.add_check_run(
        sha,
        "tests",
        conclusion="failure",
        summary="test_a failed: expected 2",
        details_url="http://ci.example/runs/7",
    )
    # The reopened task's run fixes what the check found: a change of its own.
    fixed = [{"write": "src/a.py", "text": "A = 2\n"}]
    project.script({"T-101": fixed, "T-102": good("T-102")})
    project.run("schedule", env=CI)
    task = project.plan().task("T-101")
    assert task is not None
    assert task.marker in (" ", "x")  # reopened; this run's tick may have redone it
    notes = project.show("docs/HUMAN_NOTES.md")
    for said in ("tests", "failure", "test_a failed: expected 2", "http://ci.example/runs/7"):
        assert said in notes
    assert "memento: reopen T-101" in project.subjects()
    assert task.retries == 1


def test_the_push_alone_uses_push_token(project: ActionProject, github: FakeGitHub) -> None:
    token, pusher = "ghs_test_token_0123456789", "github_pat_pushes_start_workflows"
    git(project.origin, "config", "http.receivepack", "true")
    project.script({"T-101": good("T-101")})
    with GitHttpServer(project.origin.parent, token, also=[pusher]) as served:
        url = served.url(project.origin.name)
        result = project.run("schedule", env={"MEMENTO_GITHUB_PUSH_TOKEN": pusher}, origin_url=url)
        sent = [
            (request.get("Authorization", ""), "receive-pack" in str(request.get("Content-Type")))
            for request in served.requests
        ]
    assert result.code == 0, result.said
    assert project.marker("T-101") == "x"
    pushes = {auth for auth, pushing in sent if pushing}
    fetches = {auth for auth, pushing in sent if not pushing}
    assert pushes == {served_header(pusher)}
    assert served_header(token) in fetches  # the fetches keep the workflow's token


def served_header(token: str) -> str:
    import base64

    return "basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def test_status_json_shows_the_pull_request_the_runs_saw(
    project: ActionProject, github: FakeGitHub
) -> None:
    tick(project, "T-101")  # opens the pull request
    tick(project, "T-102")  # records it in the status log, with its tick
    [pull] = open_pulls(github)
    checkout = clone(project.origin, project.tmp / "mine", "-b", "memento")
    shown = subprocess.run(
        [sys.executable, "-m", "memento_gh", "status", "--json"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    data = json.loads(shown.stdout)
    assert data["pull_request"] == {
        "number": pull["number"],
        "url": pull["html_url"],
        "state": "draft",
        "checks": None,
    }
    before = len(project.subjects())
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})
    assert len(project.subjects()) == before + 1  # the pause; no second record


def test_ci_verify_reads_no_checks_while_the_plan_is_paused(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    project.run("schedule", env=CI)
    project.run("workflow_dispatch", env={**CI, "MEMENTO_COMMAND": "pause"})
    github.reset_requests()
    project.run("schedule", env=CI)  # the steady state: nothing would run
    assert github.request_count("GET", "commits/*") == 0
    assert github.request_count() <= 3, github.requests_log


def test_the_body_says_what_the_work_cost_so_far(
    project: ActionProject, github: FakeGitHub
) -> None:
    from tests.github.test_action_spend import claude_report

    project.script({"T-101": [*good("T-101"), claude_report(0.0247, 3710, 185)]})
    assert project.run("schedule").code == 0
    [pull] = open_pulls(github)
    assert "**Spend:** \\$0.0247, 3,895 tokens so far" in pull["body"]


def open_pull_by_hand(github: FakeGitHub, body: str) -> int:
    """alice opens a pull request from memento's branch to the base herself, on GitHub."""
    github.add_token("alice-token-0123456789", "alice")
    answer = requests.post(
        f"{github.url}/repos/{github.repository}/pulls",
        json={"title": "Ship memento's work", "head": "memento", "base": "main", "body": body},
        headers={"Authorization": "token alice-token-0123456789"},
        timeout=10,
    )
    answer.raise_for_status()
    return int(answer.json()["number"])


def test_a_pull_request_a_person_opened_from_the_branch_is_adopted_keeping_their_text(
    project: ActionProject, github: FakeGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    assert project.run("schedule", env={"MEMENTO_PULL_REQUEST": "off"}).code == 0
    theirs = "Please look at the API first.\n\n- [ ] docs checked"
    number = open_pull_by_hand(github, theirs)
    tick(project, "T-102")
    [pull] = open_pulls(github)
    assert pull["number"] == number
    assert pull["body"].startswith(pulls.PULL_MARKER)
    assert "T-102" in pull["body"] and pull["body"].rstrip().endswith(theirs)
    assert "memento" in [label["name"] for label in pull["labels"]]
    tick(project, "T-103")  # later runs edit memento's part and keep the person's
    [pull] = open_pulls(github)
    assert pull["number"] == number and "T-103" in pull["body"]
    assert pull["body"].rstrip().endswith(theirs)
