"""The GitHub adapter drives the real PyGithub client against the fake GitHub over HTTP."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qsl

import pytest

from memento_gh.errors import UserError
from memento_gh.github.answers import Comment, Issue
from memento_gh.github.boxes import History
from memento_gh.github.events import Actor
from memento_gh.github.failures import SyncError
from memento_gh.github.sync import LABELS, GitHub
from testing.fake_github import FakeGitHub

REPO = "acme/shop"
TOKEN = "ghs_not-a-real-token-1234"
MARKER = "<!-- memento:task=T-201 -->"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(REPO, TOKEN) as server:
        yield server


def connect(
    fake: FakeGitHub, *, token: str = TOKEN, attempts: int = 3, max_wait: float = 10.0
) -> GitHub:
    """A client as production makes one, minus the pacing, with millisecond backoff."""
    return GitHub(
        fake.url, token, REPO, attempts=attempts, backoff=0.001, max_wait=max_wait, pace=False
    )


def test_constructing_costs_no_request(fake: FakeGitHub) -> None:
    github = connect(fake)

    assert github.requests == 0
    assert fake.request_count() == 0


@pytest.mark.parametrize(("count", "pages"), [(0, 1), (100, 1), (101, 2), (250, 3)])
def test_memento_issues_takes_one_request_per_hundred(
    fake: FakeGitHub, count: int, pages: int
) -> None:
    for index in range(count):
        fake.add_issue(f"issue {index}", f"body {index}", labels=["memento"])
    github = connect(fake)

    issues = github.memento_issues()

    assert len(issues) == count
    assert [issue.number for issue in issues] == list(range(1, count + 1))
    assert github.requests == pages
    assert fake.request_count() == pages
    assert fake.request_count("GET", "issues") == pages


def test_memento_issues_reads_open_and_closed_and_leaves_out_the_rest(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER, labels=["memento", "memento:blocked"])
    fake.add_issue(
        "T-100 BLOCKED: Old",
        None,
        labels=["memento", "memento:blocked"],
        state="closed",
        state_reason="completed",
    )
    fake.add_issue("a pull request", "x", labels=["memento"], pull_request=True)
    fake.add_issue("a bug", "x", labels=["bug"])
    github = connect(fake)

    issues = github.memento_issues()

    assert issues == [
        Issue(
            number=1,
            title="T-201 BLOCKED: Auth",
            body=MARKER,
            state="open",
            labels=("memento", "memento:blocked"),
            url=f"{fake.url}/{REPO}/issues/1",
        ),
        Issue(
            2,
            "T-100 BLOCKED: Old",
            "",
            "closed",
            ("memento", "memento:blocked"),
            f"{fake.url}/{REPO}/issues/2",
        ),
    ]
    assert github.requests == 1
    path, _, query = fake.requests_log[0][1].partition("?")
    assert path == f"/repos/{REPO}/issues"
    assert dict(parse_qsl(query)) == {
        "labels": "memento",
        "state": "all",
        "sort": "created",
        "direction": "asc",
        "per_page": "100",
    }


def test_create_issue_creates_the_missing_labels_once(fake: FakeGitHub) -> None:
    fake.add_label("Memento", "123456")  # exists, under another case: kept as it is
    github = connect(fake)

    issue = github.create_issue("T-201 BLOCKED: Auth", MARKER, ["memento", "memento:blocked"])

    assert issue == Issue(
        1,
        "T-201 BLOCKED: Auth",
        MARKER,
        "open",
        ("Memento", "memento:blocked"),
        f"{fake.url}/{REPO}/issues/1",
    )
    labels = {label["name"]: label for label in fake.labels()}
    assert set(labels) == {"Memento", "memento:blocked"}
    assert labels["Memento"]["color"] == "123456"
    assert labels["memento:blocked"]["color"] == LABELS["memento:blocked"][0]
    assert labels["memento:blocked"]["description"] == LABELS["memento:blocked"][1]
    assert github.requests == 3  # list labels, create one label, create the issue
    assert fake.request_count("GET", "labels") == 1
    assert fake.request_count("POST", "labels") == 1
    assert fake.request_count("POST", "issues") == 1

    github.create_issue(
        "memento dashboard", "<!-- memento:dashboard -->", ["memento", "memento:dashboard"]
    )
    github.create_issue("T-202 BLOCKED: Cart", "x", ["memento", "memento:blocked"])

    assert github.requests == 3 + 2 + 1  # labels are listed once per client
    assert fake.request_count("GET", "labels") == 1
    assert fake.labels()[-1]["name"] == "memento:dashboard"
    assert fake.labels()[-1]["color"] == LABELS["memento:dashboard"][0]
    assert [i["title"] for i in fake.issues()][-1] == "T-202 BLOCKED: Cart"
    assert fake.request_count() == github.requests


def test_a_label_made_meanwhile_is_not_an_error(fake: FakeGitHub) -> None:
    github = connect(fake)
    github.create_issue("first", "x", ["memento"])
    fake.add_label("memento:blocked")  # by someone else, after this client listed labels

    github.create_issue("second", "y", ["memento", "memento:blocked"])

    assert [label["name"] for label in fake.labels()] == ["memento", "memento:blocked"]
    assert fake.request_count("POST", "labels") == 2  # the second one answered 422
    assert len(fake.issues()) == 2


def test_edit_issue_closes_with_a_reason_in_one_request(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER, labels=["memento"])
    github = connect(fake)

    github.edit_issue(1, state="closed", state_reason="not_planned")
    closed = fake.issue(1)
    github.edit_issue(1, body="new body", state="open")
    reopened = fake.issue(1)
    github.edit_issue(1)  # nothing to change: nothing sent

    assert (closed["state"], closed["state_reason"]) == ("closed", "not_planned")
    assert (reopened["state"], reopened["body"]) == ("open", "new body")
    assert reopened["labels"][0]["name"] == "memento"  # labels untouched
    assert github.requests == 2
    assert fake.request_count("PATCH", "issues/1") == 2
    assert fake.request_count() == 2


def test_comment_posts_once(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER)
    github = connect(fake)

    github.comment(1, "T-201 left `[!]`: closing.")

    assert [c["body"] for c in fake.comments(1)] == ["T-201 left `[!]`: closing."]
    assert github.requests == 1
    assert fake.request_count("POST", "issues/1/comments") == 1


def test_react_twice_keeps_one_reaction(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER)
    comment = fake.add_comment(1, "/memento retry", author="alice")
    github = connect(fake)

    github.react(comment["id"], "+1")
    github.react(comment["id"], "+1")
    github.react(comment["id"], "eyes")

    assert [r["content"] for r in fake.reactions(comment["id"])] == ["+1", "eyes"]
    assert github.requests == 3
    assert fake.request_count("POST", "issues/comments/*/reactions") == 3


def test_permission_of_collaborators_strangers_and_bots(fake: FakeGitHub) -> None:
    fake.set_permission("alice", "write")
    fake.set_permission("bob", "maintain")
    fake.set_permission("carol", "triage")
    github = connect(fake)

    assert github.permission("alice") == "write"
    assert github.permission("bob") == "maintain"
    assert github.permission("carol") == "triage"
    assert github.permission("mallory") == "none"  # GitHub answers 404
    assert github.requests == 4
    assert github.permission("dependabot[bot]") == "none"  # cannot be one: not asked
    assert github.permission("../../user") == "none"
    assert github.requests == 4
    assert fake.request_count() == 4


def test_recent_comments_since_a_time_oldest_first(fake: FakeGitHub) -> None:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    fake.add_issue("T-201 BLOCKED: Auth", MARKER, labels=["memento"])
    fake.add_issue("a pull request", pull_request=True)
    fake.add_comment(1, "too old", author="alice", created_at=now - timedelta(days=2))
    fake.add_comment(
        1, "Use Redis", author="alice", association="OWNER", created_at=now - timedelta(minutes=5)
    )
    fake.add_comment(
        2,
        "on the PR",
        author="bob",
        association="CONTRIBUTOR",
        created_at=now - timedelta(minutes=4),
    )
    fake.add_comment(1, "beep", author="helper[bot]", created_at=now - timedelta(minutes=3))
    github = connect(fake)

    comments = github.recent_comments(now - timedelta(hours=1))

    first = fake.comments(1)[1]
    assert comments[0] == Comment(
        id=first["id"],
        issue_number=1,
        body="Use Redis",
        login="alice",
        association="OWNER",
        is_bot=False,
        url=f"{fake.url}/{REPO}/issues/1#issuecomment-{first['id']}",
        created=now - timedelta(minutes=5),
    )
    assert [(c.body, c.issue_number, c.association, c.is_bot) for c in comments[1:]] == [
        ("on the PR", 2, "CONTRIBUTOR", False),
        ("beep", 1, "NONE", True),
    ]
    assert comments[0].created.tzinfo is not None
    assert github.requests == 1
    query = dict(parse_qsl(fake.requests_log[0][1].partition("?")[2]))
    assert query["since"] == (now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (query["sort"], query["direction"], query["per_page"]) == ("created", "asc", "100")

    naive = github.recent_comments((now - timedelta(hours=1)).replace(tzinfo=None))
    assert naive == comments  # a naive time is UTC


def test_recent_comments_reads_every_page(fake: FakeGitHub) -> None:
    now = datetime.now(timezone.utc)
    fake.add_issue("busy")
    for index in range(205):
        fake.add_comment(1, f"comment {index}", created_at=now - timedelta(seconds=300 - index))
    github = connect(fake)

    comments = github.recent_comments(now - timedelta(hours=1))

    assert [c.body for c in comments] == [f"comment {index}" for index in range(205)]
    assert github.requests == 3
    assert fake.request_count("GET", "issues/comments") == 3


def test_a_wrong_token_is_a_clear_error_without_the_token(fake: FakeGitHub) -> None:
    github = connect(fake, token="ghs_wrong-token-5678")

    with pytest.raises(SyncError) as caught:
        github.memento_issues()

    message = str(caught.value)
    assert isinstance(caught.value, UserError)
    assert message.startswith("GitHub refused the token while listing the memento issues")
    assert "401 Bad credentials" in message
    assert "`github-token`" in message
    assert "ghs_wrong-token-5678" not in message
    assert TOKEN not in message
    assert github.requests == 1  # a refused token is not retried


def test_a_5xx_on_a_read_is_retried(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER, labels=["memento"])
    fake.fail("GET", "issues", 500)
    fake.fail("GET", "issues", 502)
    github = connect(fake)

    issues = github.memento_issues()

    assert [issue.number for issue in issues] == [1]
    assert github.requests == 3
    assert fake.request_count("GET", "issues") == 3


def test_a_read_failing_every_attempt_is_a_sync_error(fake: FakeGitHub) -> None:
    fake.fail("GET", "collaborators/*/permission", 503, times=5)
    github = connect(fake, attempts=3)

    with pytest.raises(SyncError) as caught:
        github.permission("alice")

    assert str(caught.value) == (
        "GitHub answered 503 Service Unavailable while asking GitHub for alice's permission "
        "(tried 3 times): GitHub is having trouble; the next run tries again"
    )
    assert github.requests == 3
    assert fake.request_count() == 3


def test_a_rate_limit_says_when_to_retry(fake: FakeGitHub) -> None:
    fake.rate_limit("GET", "issues", retry_after=600)
    github = connect(fake, max_wait=10)

    with pytest.raises(SyncError) as caught:
        github.memento_issues()

    message = str(caught.value)
    assert message.startswith(
        "GitHub's API rate limit is used up (403 while listing the memento issues): retry after "
    )
    assert "(in 600 seconds)" in message
    when = re.search(r"retry after (\d\d):(\d\d):(\d\d) UTC", message)
    assert when is not None
    expected = datetime.now(timezone.utc) + timedelta(seconds=600)
    told = expected.replace(hour=int(when[1]), minute=int(when[2]), second=int(when[3]))
    assert abs((told - expected).total_seconds()) < 5
    assert github.requests == 1  # a wait beyond max_wait is not sat out


def test_a_short_rate_limit_is_waited_out(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER, labels=["memento"])
    fake.rate_limit("GET", "issues", retry_after=0, status=429)
    github = connect(fake)

    assert len(github.memento_issues()) == 1
    assert github.requests == 2


def test_a_create_answered_500_after_it_happened_is_not_repeated(fake: FakeGitHub) -> None:
    fake.add_label("memento")
    fake.fail("POST", "issues", 500, apply=True)
    github = connect(fake)

    with pytest.raises(SyncError) as caught:
        github.create_issue("T-201 BLOCKED: Auth", MARKER, ["memento"])

    assert str(caught.value) == (
        "GitHub answered 500 Server Error while creating the issue “T-201 BLOCKED: Auth”: "
        "GitHub may have done it anyway, so the next run looks before doing it again"
    )
    assert fake.request_count("POST", "issues") == 1
    assert len(fake.issues()) == 1
    # The next run looks the marker up and finds the issue instead of creating another.
    found = connect(fake).memento_issues()
    assert [(issue.number, issue.body) for issue in found] == [(1, MARKER)]


def test_a_create_answered_502_is_not_retried_either(fake: FakeGitHub) -> None:
    fake.add_label("memento")
    fake.fail("POST", "issues", 502)
    github = connect(fake)

    with pytest.raises(SyncError, match="502 Bad Gateway while creating the issue"):
        github.create_issue("T-201 BLOCKED: Auth", MARKER, ["memento"])

    assert github.requests == 2  # the labels listing and one POST
    assert fake.issues() == []


def test_a_comment_is_never_posted_twice(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER)
    fake.fail("POST", "issues/1/comments", 504, apply=True)
    github = connect(fake)

    with pytest.raises(SyncError, match="may have done it anyway"):
        github.comment(1, "closing")

    assert [c["body"] for c in fake.comments(1)] == ["closing"]
    assert github.requests == 1


def test_a_refused_write_names_the_permission_to_grant(fake: FakeGitHub) -> None:
    fake.add_issue("T-201 BLOCKED: Auth", MARKER)
    fake.fail("PATCH", "issues/1", 403)
    github = connect(fake)

    with pytest.raises(SyncError) as caught:
        github.edit_issue(1, state="closed")

    assert str(caught.value).startswith("GitHub refused editing issue #1 (403 Forbidden)")
    assert "`permissions: issues: write`" in str(caught.value)
    assert github.requests == 1
    assert fake.issue(1)["state"] == "open"


def test_a_missing_issue_is_a_clear_error(fake: FakeGitHub) -> None:
    github = connect(fake)

    with pytest.raises(SyncError, match=r"GitHub found nothing while commenting on issue #7 \(404"):
        github.comment(7, "hello")


def test_an_unreachable_api_is_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    github = GitHub(f"http://127.0.0.1:{port}", TOKEN, REPO, pace=False, backoff=0.001)

    with pytest.raises(SyncError) as caught:
        github.memento_issues()

    assert str(caught.value).startswith(
        f"could not reach GitHub's API at http://127.0.0.1:{port} while listing the memento "
        "issues (ConnectionError) (tried 3 times): check GITHUB_API_URL"
    )
    assert github.requests == 3


@pytest.mark.parametrize(
    ("api_url", "token", "repository", "expected"),
    [
        ("https://api.github.com", "", REPO, "no GitHub token"),
        ("https://api.github.com", TOKEN, "shop", "owner/name"),
        ("https://api.github.com", TOKEN, "a/b/c", "owner/name"),
        ("api.github.com", TOKEN, REPO, "GITHUB_API_URL must be an http"),
    ],
)
def test_bad_settings_are_refused_up_front(
    api_url: str, token: str, repository: str, expected: str
) -> None:
    with pytest.raises(SyncError, match=expected) as caught:
        GitHub(api_url, token, repository)

    assert TOKEN not in str(caught.value)


def test_a_steady_state_run_reads_in_two_requests(fake: FakeGitHub) -> None:
    """What a scheduled run with nothing new does: list the issues, list recent comments."""
    fake.add_issue("memento dashboard", "<!-- memento:dashboard -->", labels=["memento"])
    github = connect(fake)

    github.memento_issues()
    github.recent_comments(datetime.now(timezone.utc) - timedelta(hours=1))

    assert github.requests == 2
    assert fake.request_count() == 2


def test_an_enterprise_api_url_with_a_path_works() -> None:
    with FakeGitHub(REPO, TOKEN, api_prefix="/api/v3") as fake:
        for index in range(120):
            fake.add_issue(f"issue {index}", labels=["memento"])
        github = GitHub(fake.url + "/", TOKEN, REPO, pace=False)

        issues = github.memento_issues()
        created = github.create_issue("T-201 BLOCKED: Auth", MARKER, ["memento"])
        github.comment(created.number, "hello")

        assert len(issues) == 120
        assert created.url == f"{fake.web_url}/{REPO}/issues/121"
        assert github.requests == fake.request_count() == 5
        assert fake.request_count("GET", "issues") == 2


# -- who edited an issue's body (GraphQL) ----------------------------------------------------


def test_the_body_history_names_each_revision_and_its_editor_oldest_first(
    fake: FakeGitHub,
) -> None:
    made = connect(fake).create_issue("memento dashboard", "v0", ["memento"])
    fake.add_token("alice-token", "alice")
    alice = connect(fake, token="alice-token")
    alice.edit_issue(made.number, body="v1")
    connect(fake).edit_issue(made.number, body="v2")
    alice.edit_issue(made.number, state="closed")  # no revision: the body did not change
    github = connect(fake)

    history = github.body_history(made.number)

    bot = Actor("github-actions[bot]", None, is_bot=True)
    assert history.body == "v2"
    assert history.author == bot
    assert [(r.editor, r.body) for r in history.revisions] == [
        (bot, "v0"),  # the body as created, kept by the first edit
        (Actor("alice", None, is_bot=False), "v1"),
        (bot, "v2"),
    ]
    assert len({revision.edit for revision in history.revisions}) == 3
    assert history.complete
    assert github.requests == fake.request_count("POST", "/graphql") == 1


def test_an_issue_never_edited_has_no_revisions(fake: FakeGitHub) -> None:
    made = fake.add_issue("memento dashboard", "v0", author="alice")

    history = connect(fake).body_history(made["number"])

    assert history == History("v0", Actor("alice", None, is_bot=False), (), complete=True)


def test_a_history_longer_than_a_page_is_read_as_incomplete(fake: FakeGitHub) -> None:
    made = fake.add_issue("memento dashboard", "v0")
    github = connect(fake)
    for index in range(1, 101):
        github.edit_issue(made["number"], body=f"v{index}")

    history = github.body_history(made["number"])

    assert not history.complete
    assert [r.body for r in history.revisions] == [f"v{index}" for index in range(1, 101)]


def test_a_missing_issue_has_no_history_to_read(fake: FakeGitHub) -> None:
    with pytest.raises(SyncError, match="edit history of issue #7"):
        connect(fake, attempts=1).body_history(7)


def test_the_history_is_read_from_enterprise_graphql_beside_the_rest_api() -> None:
    with FakeGitHub(REPO, TOKEN, api_prefix="/api/v3") as fake:
        made = fake.add_issue("memento dashboard", "v0")
        github = GitHub(fake.url, TOKEN, REPO, pace=False)
        github.edit_issue(made["number"], body="v1")

        history = github.body_history(made["number"])

        assert [r.body for r in history.revisions] == ["v0", "v1"]
        assert fake.graphql_path == "/api/graphql"  # the only place it answers, and it did
        assert fake.requests_log[-1] == ("POST", "/graphql", 200)


def test_an_issue_is_read_as_it_is_now(fake: FakeGitHub) -> None:
    made = fake.add_issue("memento dashboard", "v0", labels=["memento"])
    github = connect(fake)
    github.edit_issue(made["number"], body="v1")

    assert github.issue(made["number"]).body == "v1"


def test_own_login_names_the_tokens_user_and_asks_once(fake: FakeGitHub) -> None:
    fake.add_user("helper[bot]", "Bot")
    fake.add_token("app-token-5678", "helper[bot]")
    fake.add_token("alice-token-5678", "alice")
    workflow = connect(fake)

    assert workflow.own_login() == "github-actions[bot]"
    assert workflow.own_login() == "github-actions[bot]"
    assert workflow.requests == 1
    assert connect(fake, token="app-token-5678").own_login() == "helper[bot]"
    assert connect(fake, token="alice-token-5678").own_login() == "alice"
