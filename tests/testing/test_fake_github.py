"""The fake GitHub answers like GitHub: real HTTP, real shapes, pagination, faults, counts."""

from __future__ import annotations

import json
import re
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

import pytest

from testing.fake_github import FakeGitHub, spawn

REPO = "acme/shop"
TOKEN = "s3cret-token"
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


class Answer(NamedTuple):
    status: int
    headers: dict[str, str]
    body: Any


def call(
    base: str,
    method: str,
    path: str,
    body: object = None,
    *,
    token: str | None = TOKEN,
) -> Answer:
    url = path if path.startswith("http") else f"{base}{path}"
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"token {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw, status, got = response.read(), response.status, response.headers
    except urllib.error.HTTPError as error:
        raw, status, got = error.read(), error.code, error.headers
    text = raw.decode()
    kind = got.get("Content-Type", "")
    parsed = json.loads(text) if kind.startswith("application/json") else text
    return Answer(status, {k.lower(): v for k, v in got.items()}, parsed)


def links(answer: Answer) -> dict[str, str]:
    found = {}
    for part in answer.headers.get("link", "").split(", "):
        match = re.fullmatch(r'<([^>]+)>; rel="(\w+)"', part)
        if match:
            found[match.group(2)] = match.group(1)
    return found


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(REPO, TOKEN, login="memento-bot[bot]") as server:
        yield server


def test_the_token_is_required_and_checked(fake: FakeGitHub) -> None:
    missing = call(fake.url, "GET", f"/repos/{REPO}/issues", token=None)
    wrong = call(fake.url, "GET", f"/repos/{REPO}/issues", token="nope")
    bearer = urllib.request.Request(
        f"{fake.url}/repos/{REPO}", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(bearer, timeout=10) as answer:
        assert answer.status == 200

    assert missing.status == 401
    assert missing.body["message"] == "Requires authentication"
    assert wrong.status == 401
    assert wrong.body == {
        "message": "Bad credentials",
        "documentation_url": "https://docs.github.com/rest",
        "status": "401",
    }
    assert fake.request_count() == 3


def test_anything_unknown_is_githubs_404(fake: FakeGitHub) -> None:
    for method, path in [
        ("GET", "/nothing/here"),
        ("GET", "/repos/acme/other/issues"),
        ("DELETE", f"/repos/{REPO}/issues/1"),
        ("GET", f"/repos/{REPO}/issues/99"),
        ("GET", f"/repos/{REPO}/issues/comments/99"),
        ("GET", f"/repos/{REPO}/labels/none"),
    ]:
        answer = call(fake.url, method, path)
        assert answer.status == 404, (method, path)
        assert answer.body["message"] == "Not Found"
        assert answer.body["status"] == "404"


def test_a_created_issue_has_githubs_shape_with_urls_to_the_server(fake: FakeGitHub) -> None:
    answer = call(
        fake.url,
        "POST",
        f"/repos/{REPO}/issues",
        {"title": "T-201 BLOCKED: Auth", "body": "<!-- memento:task=T-201 -->", "labels": ["x"]},
    )
    issue = answer.body

    assert answer.status == 201
    assert answer.headers["location"] == issue["url"]
    assert issue["url"] == f"{fake.url}/repos/{REPO}/issues/1"
    assert issue["html_url"] == f"{fake.url}/{REPO}/issues/1"
    assert issue["repository_url"] == f"{fake.url}/repos/{REPO}"
    assert issue["comments_url"] == f"{issue['url']}/comments"
    assert issue["number"] == 1
    assert isinstance(issue["id"], int)
    assert issue["node_id"]
    assert issue["title"] == "T-201 BLOCKED: Auth"
    assert issue["body"] == "<!-- memento:task=T-201 -->"
    assert issue["user"]["login"] == "memento-bot[bot]"
    assert issue["user"]["type"] == "Bot"
    assert isinstance(issue["user"]["id"], int)
    assert issue["user"]["url"].startswith(fake.url)
    assert [label["name"] for label in issue["labels"]] == ["x"]
    assert issue["labels"][0]["color"] == "ededed"  # GitHub creates a missing label
    assert issue["labels"][0]["url"] == f"{fake.url}/repos/{REPO}/labels/x"
    assert issue["state"] == "open"
    assert issue["state_reason"] is None
    assert issue["author_association"] == "NONE"
    assert ISO.fullmatch(issue["created_at"])
    assert issue["created_at"] == issue["updated_at"]
    assert issue["closed_at"] is None
    assert issue["comments"] == 0
    assert issue["reactions"]["total_count"] == 0
    assert "pull_request" not in issue
    assert call(fake.url, "GET", f"/repos/{REPO}/issues/1").body == issue
    assert answer.headers["x-ratelimit-limit"] == "5000"
    assert int(answer.headers["x-ratelimit-remaining"]) < 5000


def test_creating_an_issue_validates_its_title(fake: FakeGitHub) -> None:
    answer = call(fake.url, "POST", f"/repos/{REPO}/issues", {"body": "no title"})

    assert answer.status == 422
    assert "title" in answer.body["message"]
    assert fake.issues() == []


def test_the_repository_and_the_user(fake: FakeGitHub) -> None:
    repo = call(fake.url, "GET", f"/repos/{REPO}").body
    user = call(fake.url, "GET", "/user").body

    assert repo["full_name"] == REPO
    assert repo["url"] == f"{fake.url}/repos/{REPO}"
    assert repo["owner"]["login"] == "acme"
    assert user["login"] == "memento-bot[bot]"


def test_issues_are_filtered_and_paginated_with_a_link_header(fake: FakeGitHub) -> None:
    for index in range(130):
        fake.add_issue(f"memento {index}", labels=["memento"], state=("closed", "open")[index % 2])
    fake.add_issue("a pull request", labels=["memento"], pull_request=True)
    fake.add_issue("someone else's", labels=["bug"])

    first = call(fake.url, "GET", f"/repos/{REPO}/issues?state=all&labels=memento&per_page=100")
    pages = links(first)
    second = call(fake.url, "GET", pages["next"])

    assert first.status == 200
    assert len(first.body) == 100
    assert set(pages) == {"next", "last"}
    assert pages["next"].startswith(f"{fake.url}/repos/{REPO}/issues?")
    assert parse_qs(urlsplit(pages["next"]).query) == {
        "state": ["all"],
        "labels": ["memento"],
        "per_page": ["100"],
        "page": ["2"],
    }
    assert pages["last"] == pages["next"]
    assert len(second.body) == 31
    assert set(links(second)) == {"prev", "first"}
    listed = first.body + second.body
    numbers = [issue["number"] for issue in listed]
    assert numbers == sorted(numbers, reverse=True)  # GitHub's default: newest first
    assert len(set(numbers)) == 131
    pulls = [issue for issue in listed if "pull_request" in issue]
    assert [issue["title"] for issue in pulls] == ["a pull request"]
    assert pulls[0]["pull_request"]["url"] == f"{fake.url}/repos/{REPO}/pulls/131"
    assert pulls[0]["html_url"] == f"{fake.url}/{REPO}/pull/131"

    default = call(fake.url, "GET", f"/repos/{REPO}/issues?per_page=100&page=1").body
    assert {issue["state"] for issue in default} == {"open"}  # state defaults to open
    closed = call(fake.url, "GET", f"/repos/{REPO}/issues?state=closed&per_page=100").body
    assert len(closed) == 65
    both = call(fake.url, "GET", f"/repos/{REPO}/issues?labels=memento,bug&state=all").body
    assert both == []
    oldest = call(fake.url, "GET", f"/repos/{REPO}/issues?state=all&direction=asc&per_page=2")
    assert [issue["number"] for issue in oldest.body] == [1, 2]
    assert len(call(fake.url, "GET", f"/repos/{REPO}/issues?state=all").body) == 30
    assert call(fake.url, "GET", f"/repos/{REPO}/issues?state=weird").status == 422


def test_since_filters_on_the_update_time(fake: FakeGitHub) -> None:
    now = datetime.now(timezone.utc)
    fake.add_issue("old", created_at=now - timedelta(days=3))
    fake.add_issue("touched", created_at=now - timedelta(days=3), updated_at=now)
    since = (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    answer = call(fake.url, "GET", f"/repos/{REPO}/issues?since={since}")

    assert [issue["title"] for issue in answer.body] == ["touched"]


def test_edit_closes_with_a_reason_reopens_and_replaces_labels(fake: FakeGitHub) -> None:
    fake.add_issue("T-1 BLOCKED", labels=["memento", "memento:blocked"])
    path = f"/repos/{REPO}/issues/1"

    closed = call(fake.url, "PATCH", path, {"state": "closed", "state_reason": "not_planned"})
    assert closed.status == 200
    assert closed.body["state"] == "closed"
    assert closed.body["state_reason"] == "not_planned"
    assert ISO.fullmatch(closed.body["closed_at"])
    assert closed.body["closed_by"]["login"] == "memento-bot[bot]"

    reopened = call(fake.url, "PATCH", path, {"state": "open", "body": "new", "labels": ["a"]})
    assert reopened.body["state"] == "open"
    assert reopened.body["state_reason"] == "reopened"
    assert reopened.body["closed_at"] is None
    assert reopened.body["body"] == "new"
    assert [label["name"] for label in reopened.body["labels"]] == ["a"]

    plain = call(fake.url, "PATCH", path, {"state": "closed"})
    assert plain.body["state_reason"] == "completed"
    assert call(fake.url, "PATCH", path, {"state": "gone"}).status == 422
    assert call(fake.url, "PATCH", path, {"state_reason": "bored"}).status == 422
    assert fake.issue(1)["state"] == "closed"


def test_comments_per_issue_and_repository_wide(fake: FakeGitHub) -> None:
    now = datetime.now(timezone.utc)
    fake.add_issue("one")
    fake.add_issue("a pull request", pull_request=True)
    fake.add_comment(
        1, "old", author="alice", association="OWNER", created_at=now - timedelta(days=2)
    )
    fake.add_comment(2, "on the PR", author="bob", association="CONTRIBUTOR")
    posted = call(fake.url, "POST", f"/repos/{REPO}/issues/1/comments", {"body": "hello"})
    comment = posted.body

    assert posted.status == 201
    assert comment["url"] == f"{fake.url}/repos/{REPO}/issues/comments/{comment['id']}"
    assert comment["html_url"] == f"{fake.url}/{REPO}/issues/1#issuecomment-{comment['id']}"
    assert comment["issue_url"] == f"{fake.url}/repos/{REPO}/issues/1"
    assert comment["user"]["login"] == "memento-bot[bot]"
    assert comment["user"]["type"] == "Bot"
    assert comment["author_association"] == "NONE"
    assert comment["reactions"]["+1"] == 0
    assert ISO.fullmatch(comment["created_at"])
    assert call(fake.url, "GET", f"/repos/{REPO}/issues/1").body["comments"] == 2
    on_one = call(fake.url, "GET", f"/repos/{REPO}/issues/1/comments").body
    assert [c["body"] for c in on_one] == ["old", "hello"]
    assert on_one[0]["author_association"] == "OWNER"
    got = call(fake.url, "GET", f"/repos/{REPO}/issues/comments/{comment['id']}")
    assert got.body == comment

    since = (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    recent = call(fake.url, "GET", f"/repos/{REPO}/issues/comments?since={since}").body
    assert [c["body"] for c in recent] == ["on the PR", "hello"]
    assert recent[0]["html_url"].startswith(f"{fake.url}/{REPO}/pull/2#")
    newest = call(fake.url, "GET", f"/repos/{REPO}/issues/comments?sort=created&direction=desc")
    assert [c["body"] for c in newest.body] == ["hello", "on the PR", "old"]
    assert call(fake.url, "POST", f"/repos/{REPO}/issues/1/comments", {}).status == 422
    assert call(fake.url, "POST", f"/repos/{REPO}/issues/9/comments", {"body": "x"}).status == 404


def test_repository_comments_paginate(fake: FakeGitHub) -> None:
    fake.add_issue("busy")
    for index in range(120):
        fake.add_comment(1, f"comment {index}")

    first = call(fake.url, "GET", f"/repos/{REPO}/issues/comments?per_page=100")
    second = call(fake.url, "GET", links(first)["next"])

    assert len(first.body) == 100
    assert [c["body"] for c in second.body] == [f"comment {i}" for i in range(100, 120)]
    assert "next" not in links(second)


def test_a_reaction_is_created_once_per_user_and_content(fake: FakeGitHub) -> None:
    fake.add_issue("one")
    comment = fake.add_comment(1, "please retry")
    path = f"/repos/{REPO}/issues/comments/{comment['id']}/reactions"

    first = call(fake.url, "POST", path, {"content": "+1"})
    again = call(fake.url, "POST", path, {"content": "+1"})
    other = call(fake.url, "POST", path, {"content": "eyes"})

    assert (first.status, again.status, other.status) == (201, 200, 201)
    assert again.body == first.body
    assert first.body["content"] == "+1"
    assert first.body["user"]["login"] == "memento-bot[bot]"
    assert [r["content"] for r in fake.reactions(comment["id"])] == ["+1", "eyes"]
    summary = fake.comments(1)[0]["reactions"]
    assert (summary["total_count"], summary["+1"], summary["eyes"]) == (2, 1, 1)
    assert call(fake.url, "POST", path, {"content": "clap"}).status == 422
    assert len(call(fake.url, "GET", path).body) == 2


def test_labels_list_get_and_create(fake: FakeGitHub) -> None:
    for index in range(35):
        fake.add_label(f"label-{index}")
    created = call(
        fake.url,
        "POST",
        f"/repos/{REPO}/labels",
        {"name": "memento:blocked", "color": "d93f0b", "description": "Blocked"},
    )
    duplicate = call(fake.url, "POST", f"/repos/{REPO}/labels", {"name": "Memento:Blocked"})
    first = call(fake.url, "GET", f"/repos/{REPO}/labels")

    assert created.status == 201
    assert created.body["name"] == "memento:blocked"
    assert created.body["color"] == "d93f0b"
    assert created.body["description"] == "Blocked"
    assert created.body["url"] == f"{fake.url}/repos/{REPO}/labels/memento%3Ablocked"
    assert duplicate.status == 422
    assert duplicate.body["errors"] == [
        {"resource": "Label", "code": "already_exists", "field": "name"}
    ]
    assert len(first.body) == 30
    assert "next" in links(first)
    for path in ("memento:blocked", "memento%3Ablocked", "MEMENTO:BLOCKED"):
        got = call(fake.url, "GET", f"/repos/{REPO}/labels/{path}")
        assert got.status == 200
        assert got.body["name"] == "memento:blocked"


def test_collaborator_permission_and_strangers(fake: FakeGitHub) -> None:
    fake.set_permission("alice", "maintain")
    fake.set_permission("carol", "write")
    fake.set_permission("carol", "none")

    alice = call(fake.url, "GET", f"/repos/{REPO}/collaborators/alice/permission")
    stranger = call(fake.url, "GET", f"/repos/{REPO}/collaborators/mallory/permission")
    removed = call(fake.url, "GET", f"/repos/{REPO}/collaborators/carol/permission")

    assert alice.status == 200
    assert alice.body["permission"] == "write"  # GitHub's legacy name for maintain
    assert alice.body["role_name"] == "maintain"
    assert alice.body["user"]["login"] == "alice"
    assert alice.body["user"]["permissions"]["maintain"] is True
    assert alice.body["user"]["permissions"]["admin"] is False
    assert stranger.status == 404
    assert removed.status == 404
    with pytest.raises(ValueError, match="permission must be one of"):
        fake.set_permission("alice", "god")


def test_a_fault_answers_the_next_matching_requests(fake: FakeGitHub) -> None:
    fake.add_issue("one")
    fake.fail("GET", "issues", 500, times=2)

    answers = [call(fake.url, "GET", f"/repos/{REPO}/issues").status for _ in range(3)]
    other = call(fake.url, "GET", f"/repos/{REPO}/issues/1")

    assert answers == [500, 500, 200]
    assert other.status == 200
    assert fake.faults() == []


def test_a_502_is_githubs_html_page(fake: FakeGitHub) -> None:
    fake.fail("*", "/repos/*", 502)

    answer = call(fake.url, "GET", f"/repos/{REPO}/labels")

    assert answer.status == 502
    assert answer.headers["content-type"].startswith("text/html")
    assert "Bad Gateway" in answer.body


def test_an_applied_fault_does_the_work_then_fails(fake: FakeGitHub) -> None:
    fake.fail("POST", "issues", 500, apply=True)

    failed = call(fake.url, "POST", f"/repos/{REPO}/issues", {"title": "made anyway"})
    second = call(fake.url, "POST", f"/repos/{REPO}/issues", {"title": "second"})

    assert failed.status == 500
    assert failed.body["message"] == "Server Error"
    assert second.status == 201
    assert [issue["title"] for issue in fake.issues()] == ["made anyway", "second"]


def test_a_rate_limit_fault_has_githubs_headers(fake: FakeGitHub) -> None:
    fake.rate_limit("GET", "issues/*", retry_after=120)

    limited = call(fake.url, "GET", f"/repos/{REPO}/issues/7")
    after = call(fake.url, "GET", f"/repos/{REPO}/issues/7")

    assert limited.status == 403
    assert limited.body["message"].startswith("API rate limit exceeded")
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert limited.headers["retry-after"] == "120"
    reset = int(limited.headers["x-ratelimit-reset"])
    assert 100 < reset - datetime.now(timezone.utc).timestamp() <= 121
    assert after.status == 404  # used up: the request goes through again
    with pytest.raises(ValueError, match="4xx or 5xx"):
        fake.fail("GET", "issues", 200)


def test_requests_are_counted_per_method_and_path(fake: FakeGitHub) -> None:
    fake.add_issue("one")
    call(fake.url, "GET", f"/repos/{REPO}/issues?state=all")
    call(fake.url, "GET", f"/repos/{REPO}/issues?page=2")
    call(fake.url, "GET", f"/repos/{REPO}/issues/1")
    call(fake.url, "POST", f"/repos/{REPO}/issues/1/comments", {"body": "x"})
    call(fake.url, "GET", "/_fake/state")  # control requests are not counted

    assert fake.request_count() == 4
    assert fake.request_count("GET") == 3
    assert fake.request_count("GET", "issues") == 2
    assert fake.request_count("GET", f"/repos/{REPO}/issues") == 2
    assert fake.request_count("*", "issues/*") == 2
    assert fake.request_count("POST", "issues/*/comments") == 1
    assert fake.request_count(path="issues/1") == 1
    assert fake.requests_log[0] == ("GET", f"/repos/{REPO}/issues?state=all", 200)
    fake.reset_requests()
    assert fake.request_count() == 0
    assert fake.requests_log == []


def test_the_state_file_survives_a_restart(tmp_path: Path) -> None:
    state_file = tmp_path / "github.json"
    with FakeGitHub(REPO, TOKEN, state_file=state_file) as first:
        first.set_permission("alice", "admin")
        call(first.url, "POST", f"/repos/{REPO}/issues", {"title": "kept", "labels": ["memento"]})
        saved = json.loads(state_file.read_text())
        assert [issue["title"] for issue in saved["issues"]] == ["kept"]

    with FakeGitHub(REPO, TOKEN, state_file=state_file) as second:
        assert [issue["title"] for issue in second.issues()] == ["kept"]
        assert second.state()["permissions"] == {"alice": "admin"}
        assert second.request_count() == 1
        made = call(second.url, "POST", f"/repos/{REPO}/issues", {"title": "next"})
        assert made.body["number"] == 2

    with pytest.raises(ValueError, match="holds the state of"):
        FakeGitHub("acme/other", TOKEN, state_file=state_file)


def test_seeded_authors_carry_type_and_association(fake: FakeGitHub) -> None:
    fake.set_permission("alice", "write")
    issue = fake.add_issue("x", author="renovate[bot]")
    mine = fake.add_comment(issue["number"], "by the owner", author="acme")
    theirs = fake.add_comment(issue["number"], "by alice", author="alice")
    app = fake.add_comment(issue["number"], "beep", author="helper", author_type="Bot")
    chosen = fake.add_comment(issue["number"], "x", author="dave", association="CONTRIBUTOR")

    assert issue["user"]["type"] == "Bot"
    assert mine["author_association"] == "OWNER"
    assert theirs["author_association"] == "COLLABORATOR"
    assert app["user"]["type"] == "Bot"
    assert app["author_association"] == "NONE"
    assert chosen["author_association"] == "CONTRIBUTOR"
    with pytest.raises(ValueError, match="no issue #9"):
        fake.add_comment(9, "nowhere")


def test_another_process_is_driven_through_the_control_endpoints(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    process, remote = spawn(REPO, TOKEN, state_file=state_file)
    try:
        remote.set_permission("alice", "write")
        remote.add_user("helper", "Bot")
        seeded = remote.add_issue("seeded", "body", labels=["memento"], author="alice")
        said = remote.add_comment(seeded["number"], "hi", author="helper", association="NONE")
        remote.add_label("extra", "00ff00", "An extra label")
        remote.add_token("alice-token", "alice")
        remote.edit_comment(said["id"], "edited")
        remote.fail("POST", "issues", 502, apply=True)
        remote.rate_limit("GET", "labels", retry_after=5)

        created = call(remote.url, "POST", f"/repos/{REPO}/issues", {"title": "made"})
        limited = call(remote.url, "GET", f"/repos/{REPO}/labels")
        listed = call(remote.url, "GET", f"/repos/{REPO}/issues", token="wrong")
        state = remote.state()

        assert seeded["url"] == f"{remote.url}/repos/{REPO}/issues/1"
        assert created.status == 502
        assert limited.status == 403
        assert listed.status == 401
        assert [issue["title"] for issue in state["issues"]] == ["seeded", "made"]
        assert state["comments"][0]["user"] == "helper"
        assert state["comments"][0]["body"] == "edited"
        assert state["tokens"] == {"alice-token": "alice"}
        assert state["users"]["helper"]["type"] == "Bot"
        assert state["permissions"] == {"alice": "write"}
        assert state["url"] == remote.url
        assert remote.request_count() == 3
        assert remote.request_count("POST", "issues") == 1
        bad = urllib.request.Request(
            f"{remote.url}/_fake/issues", data=b'{"nonsense": 1}', method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(bad, timeout=10)
        assert refused.value.code == 400
        remote.clear_faults()
        remote.reset_requests()
        assert remote.request_count() == 0
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0

    saved = json.loads(state_file.read_text())
    assert [issue["title"] for issue in saved["issues"]] == ["seeded", "made"]


def test_an_api_prefix_serves_the_api_below_it_as_enterprise_does() -> None:
    with FakeGitHub(REPO, TOKEN, api_prefix="/api/v3") as fake:
        for index in range(3):
            fake.add_issue(f"issue {index}")

        first = call(fake.url, "GET", f"/repos/{REPO}/issues?per_page=2")
        outside = call(fake.web_url, "GET", f"/repos/{REPO}/issues")

        assert fake.url == f"{fake.web_url}/api/v3"
        assert first.status == 200
        assert first.body[0]["url"].startswith(f"{fake.web_url}/api/v3/repos/{REPO}/issues/")
        assert first.body[0]["html_url"].startswith(f"{fake.web_url}/{REPO}/issues/")
        assert links(first)["next"].startswith(f"{fake.url}/repos/{REPO}/issues?")
        assert outside.status == 404
        assert fake.request_count("GET", "issues") == 2  # counted without the prefix
        assert fake.requests_log[0] == ("GET", f"/repos/{REPO}/issues?per_page=2", 200)


# -- users' own tokens, edit histories, GraphQL ------------------------------------------------

HISTORY = """query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      body
      author { __typename login }
      edits: userContentEdits(first: 2) {
        totalCount
        pageInfo { hasNextPage }
        nodes { editedAt diff editor { __typename login } }
      }
    }
  }
}"""


def graphql(fake: FakeGitHub, query: str, token: str = TOKEN, **variables: Any) -> Answer:
    return call(fake.url, "POST", "/graphql", {"query": query, "variables": variables}, token=token)


def test_each_token_acts_as_its_own_user(fake: FakeGitHub) -> None:
    fake.set_permission("alice", "write")
    fake.add_token("alice-token", "alice")
    issue = call(fake.url, "POST", f"/repos/{REPO}/issues", {"title": "hi"}).body

    comment = call(
        fake.url,
        "POST",
        f"/repos/{REPO}/issues/{issue['number']}/comments",
        {"body": "mine"},
        token="alice-token",
    )
    user = call(fake.url, "GET", "/user", token="alice-token")

    assert issue["user"]["login"] == "memento-bot[bot]"
    assert (comment.body["user"]["login"], comment.body["author_association"]) == (
        "alice",
        "COLLABORATOR",
    )
    assert user.body["login"] == "alice"
    with pytest.raises(ValueError, match="new and not empty"):
        fake.add_token(TOKEN, "mallory")


def test_graphql_gives_the_body_and_its_revisions_newest_first(fake: FakeGitHub) -> None:
    fake.add_token("alice-token", "alice")
    issue = call(fake.url, "POST", f"/repos/{REPO}/issues", {"title": "d", "body": "v0"}).body
    path = f"/repos/{REPO}/issues/{issue['number']}"
    call(fake.url, "PATCH", path, {"body": "v1"}, token="alice-token")
    call(fake.url, "PATCH", path, {"title": "only the title"})
    call(fake.url, "PATCH", path, {"body": "v2"})

    answer = graphql(fake, HISTORY, owner="acme", name="shop", number=issue["number"])

    assert answer.status == 200
    found = answer.body["data"]["repository"]["issue"]
    assert "errors" not in answer.body
    assert found["body"] == "v2"
    assert found["author"] == {"__typename": "Bot", "login": "memento-bot"}
    edits = found["edits"]
    assert (edits["totalCount"], edits["pageInfo"]) == (3, {"hasNextPage": True})
    assert [(node["diff"], node["editor"]["login"]) for node in edits["nodes"]] == [
        ("v2", "memento-bot"),
        ("v1", "alice"),
    ]
    assert all(ISO.fullmatch(node["editedAt"]) for node in edits["nodes"])
    assert fake.state()["issues"][0]["edits"][0]["body"] == "v0"  # kept as created
    assert fake.request_count("POST", "/graphql") == 1


@pytest.mark.parametrize(
    ("query", "variables", "says"),
    [
        ("{ organization { login } }", {}, "Field 'organization' doesn't exist on type 'Query'"),
        (
            'query { repository(owner: "acme", name: "shop") { issue(number: 1) { nope } } }',
            {},
            "Field 'nope' doesn't exist on type 'Issue'",
        ),
        (
            'query { repository(owner: "acme", name: "shop") '
            "{ issue(number: 1) { userContentEdits { totalCount } } } }",
            {},
            "You must provide a `first` or `last` value",
        ),
        (
            'query { repository(owner: "acme", name: "shop") '
            "{ issue(number: 1) { userContentEdits(last: 101) { totalCount } } } }",
            {},
            "exceeds the `last` limit of 100 records",
        ),
        ("query($n: Int!) { repository(owner: $o) { id } }", {}, "$o is used but not provided"),
        ("query { repository(owner: ", {}, "Parse error"),
        ("mutation { closeIssue }", {}, "doesn't exist on type 'Mutation'"),
        ("{ repository { ...on Repository { id } } }", {}, "no fragments"),
    ],
)
def test_graphql_refuses_what_github_refuses(
    fake: FakeGitHub, query: str, variables: dict[str, Any], says: str
) -> None:
    fake.add_issue("one", "body")

    answer = graphql(fake, query, **variables)

    assert answer.status == 200
    assert "data" not in answer.body
    [error] = answer.body["errors"]
    assert says in error["message"]


def test_graphql_answers_null_with_not_found_for_what_is_not_there(fake: FakeGitHub) -> None:
    fake.add_issue("a pull request", "x", pull_request=True)
    query = (
        'query($n: Int!) { repository(owner: "acme", name: "shop") { issue(number: $n) { body } } }'
    )

    pull = graphql(fake, query, n=1)
    other = graphql(fake, '{ repository(owner: "acme", name: "other") { nameWithOwner } }')

    assert pull.body["data"] == {"repository": {"issue": None}}
    [error] = pull.body["errors"]
    assert error["type"] == "NOT_FOUND"
    assert error["path"] == ["repository", "issue"]
    assert error["message"] == "Could not resolve to an Issue with the number of 1."
    assert other.body["data"] == {"repository": None}
    assert graphql(fake, query, token="wrong", n=1).status == 401


def test_a_comment_edited_keeps_its_id_and_creation_time(fake: FakeGitHub) -> None:
    issue = fake.add_issue("one", "body")
    then = datetime(2025, 1, 15, 14, 0, tzinfo=timezone.utc)
    comment = fake.add_comment(issue["number"], "first", author="alice", created_at=then)

    edited = fake.edit_comment(comment["id"], "second")
    patched = call(
        fake.url, "PATCH", f"/repos/{REPO}/issues/comments/{comment['id']}", {"body": "third"}
    )
    recent = call(fake.url, "GET", f"/repos/{REPO}/issues/comments?since=2025-01-16T00:00:00Z")

    assert (edited["id"], edited["created_at"], edited["body"]) == (
        comment["id"],
        "2025-01-15T14:00:00Z",
        "second",
    )
    assert edited["updated_at"] > edited["created_at"]
    assert patched.status == 200
    assert patched.body["body"] == "third"
    assert [found["id"] for found in recent.body] == [comment["id"]]  # listed as updated
