"""The fake GitHub's policies (testing/fake_policies.py, testing/fake_origin.py): each at
GitHub's default, each switchable, answered in GitHub's words."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testing import fake_origin
from testing.fake_github import FakeGitHub
from testing.fake_policies import NO_DRAFTS, NOT_PERMITTED
from testing.repos import GitHttpServer, bare_repo, clone, commit_all, git, write

REPO = "acme/shop"
TOKEN = "ghs_workflow_token"
PERSON = "ghu_alice_token"


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    origin = bare_repo(tmp_path / "origin.git")
    seed = clone(origin, tmp_path / "seed")
    write(seed, "a.txt", "a\n")
    commit_all(seed, "first")
    git(seed, "push", "-q", "origin", "HEAD:main")
    git(seed, "push", "-q", "origin", "HEAD:memento")
    git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
    fake_origin.install(origin)
    return origin


@pytest.fixture
def fake(origin: Path) -> Iterator[FakeGitHub]:
    with FakeGitHub(REPO, TOKEN, git_dir=origin) as server:
        server.add_token(PERSON, "alice")
        yield server


def call(fake: FakeGitHub, method: str, path: str, body: Any = None, token: str = TOKEN) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"{fake.repo_url}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            raw, status, headers = answer.read(), answer.status, answer.headers
    except urllib.error.HTTPError as error:
        raw, status, headers = error.read(), error.code, error.headers
    return status, (json.loads(raw) if raw else None), headers


PULL = {"title": "t", "head": "memento", "base": "main", "body": "b"}


def test_the_workflows_token_may_open_no_pull_request_until_the_setting_allows(
    fake: FakeGitHub,
) -> None:
    status, body, _ = call(fake, "POST", "/pulls", PULL)
    assert (status, body["message"]) == (403, NOT_PERMITTED)
    assert call(fake, "POST", "/pulls", PULL, token=PERSON)[0] == 201  # a person's token may
    fake.set_policy(actions_may_open_pulls=True)
    fake.merge_pull(1, "0" * 40, head_sha="1" * 40)
    assert call(fake, "POST", "/pulls", PULL)[0] == 201


@pytest.mark.parametrize(
    ("private", "plan", "refused"),
    [(False, "free", False), (True, "free", True), (True, "pro", True), (True, "team", False)],
)
def test_drafts_need_a_public_repository_or_a_plan_that_has_them(
    fake: FakeGitHub, private: bool, plan: str, refused: bool
) -> None:
    fake.set_policy(actions_may_open_pulls=True, private=private, plan=plan)
    status, body, _ = call(fake, "POST", "/pulls", {**PULL, "draft": True})
    if refused:
        assert (status, body["message"]) == (422, NO_DRAFTS)
    else:
        assert (status, body["draft"]) == (201, True)
    assert call(fake, "GET", "")[1]["private"] is private


def test_a_body_is_limited_in_bytes(fake: FakeGitHub) -> None:
    fake.add_issue("x")
    fits, too_long = "é" * 32768, "é" * 32769  # 65,536 bytes, and two more
    assert call(fake, "POST", "/issues/1/comments", {"body": fits})[0] == 201
    status, body, _ = call(fake, "POST", "/issues/1/comments", {"body": too_long})
    assert status == 422
    assert body["errors"][0]["message"] == "Body is too long (maximum is 65536 characters)"
    assert call(fake, "PATCH", "/issues/1", {"body": too_long})[0] == 422


def test_a_private_member_shows_as_contributor_or_none_and_keeps_their_permission(
    fake: FakeGitHub,
) -> None:
    fake.add_member("carol", permission="write")
    fake.add_member("dave", contributor=True)
    fake.add_member("erin", public=True)
    issue = fake.add_issue("x")
    shown = [
        fake.add_comment(issue["number"], "hi", author=who)["author_association"]
        for who in ("carol", "dave", "erin")
    ]
    assert shown == ["NONE", "CONTRIBUTOR", "MEMBER"]
    assert call(fake, "GET", "/collaborators/carol/permission")[1]["permission"] == "write"


def test_the_workflows_token_has_fewer_requests_an_hour(fake: FakeGitHub) -> None:
    assert call(fake, "GET", "")[2]["x-ratelimit-limit"] == "1000"
    assert call(fake, "GET", "", token=PERSON)[2]["x-ratelimit-limit"] == "5000"


def test_a_secondary_rate_limit_has_no_retry_after(fake: FakeGitHub) -> None:
    fake.secondary_rate_limit("GET", "issues")
    status, body, headers = call(fake, "GET", "/issues")
    assert status == 403 and "secondary rate limit" in body["message"]
    assert "retry-after" not in {key.lower() for key in headers}
    assert headers["x-ratelimit-remaining"] != "0"


def test_a_dispatch_is_recorded_and_answered_with_no_content(fake: FakeGitHub) -> None:
    body = {"event_type": "memento-comment", "client_payload": {"comment": 7}}
    assert call(fake, "POST", "/dispatches", body)[:2] == (204, None)
    assert fake.dispatches() == [{**body, "sender": "github-actions[bot]"}]


def test_graphqls_viewer_is_a_user_for_the_workflows_token(fake: FakeGitHub) -> None:
    request = urllib.request.Request(
        f"{fake.url}/graphql",
        data=json.dumps({"query": "query { viewer { __typename login } }"}).encode(),
        method="POST",
        headers={"Authorization": f"token {TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        viewer = json.loads(answer.read())["data"]["viewer"]
    assert viewer == {"__typename": "User", "login": "github-actions[bot]"}


def test_a_protected_branch_says_so_and_its_origin_refuses_a_force_push(
    fake: FakeGitHub, origin: Path, tmp_path: Path
) -> None:
    assert call(fake, "GET", "/branches/memento")[1]["protected"] is False
    fake.protect_branch("memento", ruleset=True)
    assert call(fake, "GET", "/branches/memento")[1]["protected"] is True
    rules = [rule["type"] for rule in call(fake, "GET", "/rules/branches/memento")[1]]
    assert "non_fast_forward" in rules
    work = clone(origin, tmp_path / "work", "-b", "memento")
    git(work, "commit", "-q", "--amend", "-m", "rewritten")
    done = subprocess.run(
        ["git", "push", "-q", "--force", "origin", "memento"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "GH013: Repository rule violations found for refs/heads/memento." in done.stderr
    assert "Cannot force-push to this branch" in done.stderr


def test_the_origin_refuses_the_workflows_token_a_workflow_change(
    origin: Path, tmp_path: Path
) -> None:
    work = clone(origin, tmp_path / "work", "-b", "main")
    write(work, ".github/workflows/ci.yml", "on: push\n")
    commit_all(work, "a workflow")
    pusher = "github_pat_with_workflows"
    said = {}
    with GitHttpServer(origin.parent, TOKEN, [pusher], workflows=[pusher]) as server:
        for token in (TOKEN, pusher):
            header = f"http.extraheader=AUTHORIZATION: basic {basic(token)}"
            url = server.url(origin.name)
            done = subprocess.run(
                ["git", "-c", header, "push", "-q", url, "HEAD:refs/heads/memento"],
                cwd=work,
                capture_output=True,
                text=True,
                check=False,
            )
            said[token] = (done.returncode, done.stderr)
    assert said[TOKEN][0] != 0
    assert (
        "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` "
        "without `workflows` permission"
    ) in said[TOKEN][1]
    assert said[pusher][0] == 0, said[pusher][1]
    git(work, "push", "-q", "origin", "HEAD:main")  # by path, as a person: never refused


def basic(token: str) -> str:
    import base64

    return base64.b64encode(f"x-access-token:{token}".encode()).decode()
