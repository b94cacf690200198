"""The fake GitHub's pull requests and checks, driven by the real PyGithub over real HTTP,
with a real bare repository behind the pull requests' heads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from github import Auth, Github, GithubException
from github.Repository import Repository

from testing.fake_github import FakeGitHub
from testing.repos import bare_repo, commit_all, git, init_repo, write

pytestmark = pytest.mark.timeout(60)

REPO = "acme/shop"
TOKEN = "s3cret-token"


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    origin = bare_repo(tmp_path / "origin.git")
    seed = init_repo(tmp_path / "seed")
    write(seed, "a.txt", "a\n")
    commit_all(seed, "first")
    git(seed, "branch", "-M", "main")
    git(seed, "remote", "add", "origin", str(origin))
    git(seed, "push", "-q", "origin", "main")
    git(seed, "switch", "-q", "-c", "memento")
    write(seed, "b.txt", "b\n")
    commit_all(seed, "memento: complete T-101")
    git(seed, "push", "-q", "origin", "memento")
    return origin


@pytest.fixture
def fake(origin: Path) -> Iterator[FakeGitHub]:
    with FakeGitHub(REPO, TOKEN, git_dir=origin) as server:
        server.set_permission("alice", "write")
        server.set_policy(actions_may_open_pulls=True)  # the setting these tests assume
        yield server


@pytest.fixture
def repo(fake: FakeGitHub) -> Repository:
    client = Github(base_url=fake.url, auth=Auth.Token(TOKEN), retry=0)
    return client.get_repo(REPO)


def tip(origin: Path, branch: str) -> str:
    return git(origin, "rev-parse", branch).strip()


def test_a_created_pull_request_is_listed_got_and_edited(repo: Repository, origin: Path) -> None:
    made = repo.create_pull(base="main", head="memento", title="memento", body="one", draft=True)
    assert made.draft is True
    assert made.head.sha == tip(origin, "memento")
    assert made.base.ref == "main"
    listed = list(repo.get_pulls(state="open", head="acme:memento", base="main"))
    assert [pull.number for pull in listed] == [made.number]
    assert list(repo.get_pulls(state="open", head="other:memento")) == []
    made.edit(body="two")
    assert repo.get_pull(made.number).body == "two"
    # A pull request is an issue too: it shows in the issue listing, flagged.
    [issue] = [i for i in repo.get_issues(state="all") if i.number == made.number]
    assert issue.pull_request is not None


def test_a_second_open_pull_request_for_one_branch_is_refused(repo: Repository) -> None:
    repo.create_pull(base="main", head="memento", title="memento", body="")
    with pytest.raises(GithubException) as refused:
        repo.create_pull(base="main", head="memento", title="again", body="")
    assert refused.value.status == 422
    assert "already exists" in str(refused.value.data)


def test_a_merged_pull_request_keeps_its_head_and_merge_commit(
    repo: Repository, fake: FakeGitHub, origin: Path
) -> None:
    made = repo.create_pull(base="main", head="memento", title="memento", body="")
    head = tip(origin, "memento")
    fake.merge_pull(made.number, "f" * 40, method="squash")
    merged = repo.get_pull(made.number)
    assert (merged.merged, merged.state) == (True, "closed")
    assert merged.merge_commit_sha == "f" * 40
    assert merged.head.sha == head
    assert merged.merged_by.login == "alice"
    assert [p.number for p in repo.get_pulls(state="closed")] == [made.number]


def test_ready_for_review_and_requested_reviewers(repo: Repository) -> None:
    made = repo.create_pull(base="main", head="memento", title="m", body="", draft=True)
    made.mark_ready_for_review()  # a GraphQL mutation, as on GitHub
    made.create_review_request(reviewers=["alice"])
    again = repo.get_pull(made.number)
    assert again.draft is False
    assert [user.login for user in again.requested_reviewers] == ["alice"]
    with pytest.raises(GithubException) as refused:
        made.create_review_request(reviewers=["stranger"])
    assert refused.value.status == 422


def test_a_commits_check_runs_and_combined_status(
    repo: Repository, fake: FakeGitHub, origin: Path
) -> None:
    sha = tip(origin, "memento")
    fake.add_check_run(sha, "tests", conclusion="failure", summary="2 failed")
    fake.add_check_run(sha, "lint", status="in_progress")
    fake.add_status(sha, "ci/legacy", "success")
    commit = repo.get_commit(sha)
    runs = {run.name: run for run in commit.get_check_runs()}
    assert runs["tests"].conclusion == "failure"
    assert runs["tests"].output.summary == "2 failed"
    assert runs["lint"].conclusion is None
    assert commit.get_combined_status().state == "success"
    fake.add_status(sha, "ci/legacy", "pending")  # the newest status of a context counts
    assert repo.get_commit("memento").get_combined_status().state == "pending"


def test_a_status_posted_through_the_api_is_listed_and_counts_in_the_combined_state(
    repo: Repository, fake: FakeGitHub, origin: Path
) -> None:
    sha = tip(origin, "memento")
    commit = repo.get_commit(sha)
    commit.create_status("failure", description="3 errors", context="memento/plan")
    commit.create_status("success", description="1 phase, 3 tasks", context="memento/plan")
    listed = list(commit.get_statuses())  # newest first, as GitHub lists them
    assert [(s.state, s.description) for s in listed] == [
        ("success", "1 phase, 3 tasks"),
        ("failure", "3 errors"),
    ]
    assert listed[0].creator.login == fake.login
    assert commit.get_combined_status().state == "success"
    assert [s["state"] for s in fake.statuses(sha)] == ["failure", "success"]
    with pytest.raises(GithubException) as bad_state:
        commit.create_status("green", context="memento/plan")
    assert bad_state.value.status == 422
    with pytest.raises(GithubException) as no_commit:
        repo.get_commit("f" * 40).create_status("success")  # a SHA the origin lacks
    assert no_commit.value.status == 422


def test_pull_request_endpoints_take_injected_faults(repo: Repository, fake: FakeGitHub) -> None:
    fake.fail("POST", "pulls", 502, apply=True)
    with pytest.raises(GithubException):
        repo.create_pull(base="main", head="memento", title="m", body="")
    assert len(fake.pulls()) == 1  # created, though the answer was an error
    assert fake.request_count("POST", "pulls") == 1


def test_adding_a_label_to_a_pull_request_keeps_its_labels(repo: Repository) -> None:
    made = repo.create_pull(base="main", head="memento", title="memento", body="")
    issue = repo.get_issue(made.number)
    issue.add_to_labels("bug")
    issue.add_to_labels("memento")
    assert [label.name for label in repo.get_issue(made.number).labels] == ["bug", "memento"]
