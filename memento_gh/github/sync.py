"""GitHub's REST API as memento needs it, through PyGithub, with plain values out.

This is the only module that imports PyGithub. Everything it returns is a NamedTuple, and
everything that goes wrong is a :class:`SyncError` whose message says what failed and what
to do; the token never appears in a message.

Choices that matter:

- Requests are counted (:attr:`GitHub.requests`, every attempt) and kept few: constructing
  costs none (a lazy PyGithub, so no ``GET /repos``), lists ask for 100 items a page, values
  are built from the answers already received (never a refetch per issue), and labels are
  listed once per :class:`GitHub` object.
- PyGithub's own retry is off (it retries POSTs blindly and waits up to an hour on a rate
  limit); :meth:`GitHub._call` retries here instead, and only what is safe to repeat: reads,
  the edit of an issue (a PATCH sets values), a reaction (GitHub answers 200 when it exists)
  and a label (422 when it exists). Creating an issue or posting a comment is never repeated:
  a 5xx may come after GitHub did it. The caller looks an issue up by its marker again on
  the next run instead.
- Lists go page by page through PyGithub's requester (following GitHub's ``Link`` header),
  so that each page is counted and retried alone; single writes use PyGithub's objects.
- Who edited an issue's body, and to what, is only in the GraphQL API (``userContentEdits``):
  one query, through the same requester, at the GraphQL URL PyGithub derives from
  ``api_url`` (``/api/graphql`` on GitHub Enterprise Server).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from functools import partial
from http import HTTPStatus
from typing import Any, NamedTuple, TypeVar

import requests
from github import Auth, Github, GithubException
from github.GithubObject import NotSet
from github.IssueComment import IssueComment

from memento_gh import backoff
from memento_gh.errors import UserError
from memento_gh.github.boxes import History, Revision
from memento_gh.github.ci import Check
from memento_gh.github.events import Actor

T = TypeVar("T")

MEMENTO_LABEL = "memento"

# Name -> (colour, description) for the labels memento puts on its issues.
LABELS: Mapping[str, tuple[str, str]] = {
    "memento": ("6f42c1", "Written by memento-gh"),
    "memento:blocked": ("d93f0b", "A plan task memento could not finish: it needs a human"),
    "memento:dashboard": ("0e8a16", "memento's dashboard: progress and controls"),
    "memento:circuit-breaker": ("b60205", "memento paused the plan after repeated failures"),
}
OTHER_LABEL = ("ededed", "")

PERMISSIONS = ("admin", "maintain", "write", "triage", "read", "none")
# A login that can be a collaborator: letters, digits and hyphens. An app's "name[bot]"
# cannot be one, and nothing else may reach a URL path.
_LOGIN = re.compile(r"[A-Za-z0-9-]{1,39}")
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
#: The body's revisions GitHub keeps, newest first: the last 100 are plenty, as memento
#: rewrites the dashboard (a revision with no box ticked) on every change it makes.
HISTORY_QUERY = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      body
      author { __typename login }
      userContentEdits(first: 100) {
        pageInfo { hasNextPage }
        nodes { id editedAt diff editor { __typename login } }
      }
    }
  }
}
"""

#: The token's own user: GraphQL answers this for every kind of token (the workflow's, a
#: GitHub App's, a person's), where REST ``GET /user`` refuses the first two.
VIEWER_QUERY = "query { viewer { __typename login } }"


class Issue(NamedTuple):
    number: int
    title: str
    body: str
    state: str  # open | closed
    labels: tuple[str, ...]
    url: str  # the page people open (html_url)


class PullRequest(NamedTuple):
    """A pull request. From the issue listing, ``head_sha`` and ``merge_commit_sha`` are
    None (the listing does not say them); :meth:`GitHub.pull` reads them."""

    number: int
    body: str
    state: str  # open | closed
    draft: bool
    merged: bool
    url: str  # the page people open (html_url)
    head_sha: str | None = None  # the head's commit; once merged, the one merged
    merge_commit_sha: str | None = None


class Comment(NamedTuple):
    id: int
    issue_number: int
    body: str
    login: str
    association: str  # OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
    is_bot: bool
    url: str  # the page people open (html_url)
    created: datetime  # aware, UTC


class SyncError(UserError):
    """A GitHub API call failed; the message says which, why, and what to do."""


class GitHub:
    """One repository on GitHub (or GitHub Enterprise, or a local fake at ``api_url``).

    ``attempts`` bounds the tries of a request that is safe to repeat, ``backoff`` is the
    first wait between them in seconds (doubled each time), and ``max_wait`` the longest
    rate-limit wait worth sitting out; a longer one fails at once, saying when to retry.
    ``pace`` keeps PyGithub's spacing of requests (0.25 s, and 1 s between writes), which
    GitHub asks of clients to avoid its secondary rate limits; tests turn it off.
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        repository: str,
        *,
        attempts: int = 3,
        backoff: float = 1.0,
        max_wait: float = 10.0,
        timeout: int = 20,
        pace: bool = True,
    ) -> None:
        if not token:
            raise SyncError(
                "no GitHub token: pass `github-token` to the action (or set MEMENTO_GITHUB_TOKEN)"
            )
        owner, _, name = repository.partition("/")
        if not owner or not name or "/" in name:
            raise SyncError(
                f"the repository must be written owner/name (GITHUB_REPOSITORY), not {repository!r}"
            )
        if not api_url.startswith(("https://", "http://")):
            raise SyncError(
                f"GITHUB_API_URL must be an http(s) URL such as https://api.github.com, "
                f"not {api_url!r}"
            )
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        #: Every title, body and comment written passes through it: the action sets its
        #: redactor here (credentials out of what GitHub shows).
        self.redact: Callable[[str], str] = str
        self.requests = 0
        self._attempts = max(attempts, 1)
        self._backoff = max(backoff, 0.0)
        self._max_wait = max_wait
        self._github = Github(
            base_url=self.api_url,
            auth=Auth.Token(token),
            retry=0,  # see the module's docstring: _call retries what is safe to retry
            per_page=100,
            timeout=timeout,
            lazy=True,  # objects made from a URL cost no request until they are used
            seconds_between_requests=0.25 if pace else None,
            seconds_between_writes=1.0 if pace else None,
        )
        self._repo = self._github.get_repo(repository)  # lazy: no request
        self._labels: set[str] | None = None  # the labels' names in lower case, once listed
        self._own_login: str | None = None  # the token's user, once asked

    # -- reading -----------------------------------------------------------------------------

    def memento_issues(self) -> list[Issue]:
        """Every issue labelled ``memento``, open and closed, oldest first (one request per
        100 issues). Pull requests are left out."""
        return self.memento_listing()[0]

    def memento_listing(self) -> tuple[list[Issue], list[PullRequest]]:
        """The issues and the pull requests labelled ``memento``, open and closed, oldest
        first, from one listing (one request per 100)."""
        parameters = {"labels": MEMENTO_LABEL, "state": "all"}
        parameters.update(sort="created", direction="asc")
        raw = list(self._pages("listing the memento issues", "/issues", parameters))
        issues = [_issue(item) for item in raw if "pull_request" not in item]
        return issues, [_listed_pull(item) for item in raw if "pull_request" in item]

    def pull(self, number: int) -> PullRequest:
        """Pull request ``number`` as it is now, with its head and merge commit (one request)."""
        what = f"reading pull request #{number}"
        raw = self._call(what, partial(self._json, "GET", f"/pulls/{number}"), retry=True)[1]
        return _pull(raw)

    def recent_comments(self, since: datetime) -> list[Comment]:
        """Comments on the repository's issues and pull requests created or edited at or
        after ``since`` (a naive time is UTC), oldest first (one request per 100)."""
        if since.tzinfo is None:
            since = since.replace(tzinfo=timezone.utc)
        stamp = since.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        parameters = {"since": stamp, "sort": "created", "direction": "asc"}
        raw = self._pages("listing recent issue comments", "/issues/comments", parameters)
        return [_comment(item) for item in raw]

    def issue_comments(self, number: int) -> list[Comment]:
        """The comments on issue ``number``, oldest first (one request per 100)."""
        raw = self._pages(
            f"listing the comments of issue #{number}", f"/issues/{number}/comments", {}
        )
        return [_comment(item) for item in raw]

    def issue(self, number: int) -> Issue:
        """Issue ``number`` as it is now (one request)."""
        raw = self._call(
            f"reading issue #{number}", partial(self._json, "GET", f"/issues/{number}"), retry=True
        )[1]
        return _issue(raw)

    def body_history(self, number: int) -> History:
        """Issue ``number``'s body and its revisions, oldest first, each with its editor
        (one GraphQL request)."""
        owner, _, name = self.repository.partition("/")
        variables = {"owner": owner, "name": name, "number": number}
        requester = self._repo.requester
        data = self._call(
            f"reading the edit history of issue #{number}",
            partial(requester.graphql_query, HISTORY_QUERY, variables),
            retry=True,
        )[1]
        return _history(data)

    def own_login(self) -> str:
        """The login memento writes as: the author of every issue and comment it posts
        (``github-actions[bot]`` for the workflow's token, ``<app>[bot]`` for a GitHub App's,
        the person for a personal token). One GraphQL request, once per object."""
        if self._own_login is None:
            data = self._call(
                "asking GitHub whose token memento uses",
                partial(self._repo.requester.graphql_query, VIEWER_QUERY, {}),
                retry=True,
            )[1]
            viewer = _actor(((data or {}).get("data") or {}).get("viewer"))
            if viewer is None:
                raise SyncError(
                    "GitHub did not say whose token memento uses (GraphQL `viewer`); "
                    "check the token and try again"
                )
            self._own_login = viewer.login
        return self._own_login

    def permission(self, login: str) -> str:
        """``login``'s permission on the repository: admin, maintain, write, triage, read or
        none (none for a stranger, whom GitHub answers 404, and for app bots, at no cost)."""
        if not _LOGIN.fullmatch(login):
            return "none"

        def ask() -> Any:
            try:
                return self._json("GET", f"/collaborators/{login}/permission")[1]
            except GithubException as error:
                if error.status == 404:
                    return None  # not a collaborator (or no such user)
                raise

        data = self._call(f"asking GitHub for {login}'s permission", ask, retry=True)
        role = data.get("role_name") if isinstance(data, dict) else None
        legacy = data.get("permission") if isinstance(data, dict) else None
        for value in (role, legacy):
            if value in PERMISSIONS:
                return str(value)
        return "none"

    def checks(self, sha: str) -> list[Check]:
        """The check runs and the commit statuses on commit ``sha`` (two requests)."""
        runs = self._call(
            f"reading the check runs of {sha[:7]}",
            partial(self._json, "GET", f"/commits/{sha}/check-runs", {"per_page": 100}),
            retry=True,
        )[1]
        combined = self._call(
            f"reading the commit statuses of {sha[:7]}",
            partial(self._json, "GET", f"/commits/{sha}/status"),
            retry=True,
        )[1]
        found = [_check_run(run) for run in (runs or {}).get("check_runs") or ()]
        found += [_status(status) for status in (combined or {}).get("statuses") or ()]
        return found

    # -- writing -----------------------------------------------------------------------------

    def create_issue(self, title: str, body: str, labels: Sequence[str]) -> Issue:
        """Create an issue, after creating any of ``labels`` the repository lacks.

        Never retried: a 5xx may come after GitHub created it, so the error says to look
        the issue up (by its marker) before creating it again.
        """
        self._ensure_labels(labels)
        title, body = self.redact(title), self.redact(body)
        created = self._call(
            f"creating the issue “{_short(title)}”",
            lambda: self._repo.create_issue(title=title, body=body, labels=list(labels)),
            retry=False,
            unsure=True,
        )
        return _issue(created.raw_data)  # completed by the answer: no request

    def edit_issue(
        self,
        number: int,
        *,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
    ) -> None:
        """Change an issue's body and/or state (``closed`` with ``state_reason``
        ``completed`` or ``not_planned``; ``open``). Nothing to change costs nothing."""
        if body is None and state is None and state_reason is None:
            return
        if state not in (None, "open", "closed"):
            raise ValueError(f"state must be open or closed, not {state!r}")
        body = None if body is None else self.redact(body)
        issue = self._repo.get_issue(number)  # lazy: no request
        self._call(
            f"editing issue #{number}",
            lambda: issue.edit(
                body=NotSet if body is None else body,
                state=NotSet if state is None else state,
                state_reason=NotSet if state_reason is None else state_reason,
            ),
            retry=True,
        )

    def comment(self, number: int, body: str) -> None:
        """Post a comment on issue ``number``. Never retried (it would post it twice)."""
        issue = self._repo.get_issue(number)  # lazy: no request
        body = self.redact(body)
        self._call(
            f"commenting on issue #{number}",
            lambda: issue.create_comment(body),
            retry=False,
            unsure=True,
        )

    def create_pull(
        self, title: str, body: str, *, head: str, base: str, draft: bool
    ) -> PullRequest:
        """Open a pull request from ``head`` to ``base`` and label it ``memento`` (so the
        issue listing finds it). The create is never retried (a 5xx may come after GitHub
        made it); the next run finds it by its marker instead."""
        title, body = self.redact(title), self.redact(body)
        data = {"title": title, "body": body, "head": head, "base": base, "draft": draft}
        raw = self._call(
            f"opening the pull request from {head} to {base}",
            lambda: self._repo.requester.requestJsonAndCheck(
                "POST", f"{self._repo.url}/pulls", input=data
            )[1],
            retry=False,
            unsure=True,
        )
        created = _pull(raw)
        self._label_pull(created.number)
        return created

    def open_pull_between(self, head: str, base: str) -> PullRequest | None:
        """The open pull request from branch ``head`` of this repository to ``base``, if
        any: GitHub keeps one per pair (one request)."""
        owner = self.repository.partition("/")[0]
        parameters = {"head": f"{owner}:{head}", "base": base, "state": "open"}
        found = self._pages(
            f"looking for a pull request from {head} to {base}", "/pulls", parameters
        )
        return next((_pull(item) for item in found), None)

    def adopt_pull(self, number: int, *, body: str) -> None:
        """Make pull request ``number`` memento's: set its body and add the ``memento``
        label, keeping its other labels (both safe to retry: three requests at most)."""
        self.edit_pull(number, body=body)
        self._label_pull(number)

    def _label_pull(self, number: int) -> None:
        """Add the ``memento`` label, so the issue listing finds the pull request; the
        labels it has stay (adding one twice is harmless: safe to retry)."""
        self._ensure_labels([MEMENTO_LABEL])
        self._call(
            f"labelling pull request #{number}",
            lambda: self._repo.requester.requestJsonAndCheck(
                "POST",
                f"{self._repo.url}/issues/{number}/labels",
                input={"labels": [MEMENTO_LABEL]},
            ),
            retry=True,
        )

    def edit_pull(self, number: int, *, body: str, title: str | None = None) -> None:
        """Set pull request ``number``'s body (and title) (a PATCH sets values: safe to
        retry)."""
        data = {"body": self.redact(body)}
        if title is not None:
            data["title"] = self.redact(title)
        self._call(
            f"editing pull request #{number}",
            lambda: self._repo.requester.requestJsonAndCheck(
                "PATCH", f"{self._repo.url}/pulls/{number}", input=data
            ),
            retry=True,
        )

    def post_status(
        self, sha: str, state: str, *, context: str, description: str, target_url: str | None
    ) -> None:
        """A commit status on ``sha`` (success, failure, error or pending), shown among a
        pull request's checks. Safe to retry: the newest status of a context counts."""
        if state not in ("error", "failure", "pending", "success"):
            raise ValueError(f"state must be error, failure, pending or success, not {state!r}")
        data = {"state": state, "context": context, "description": self.redact(description)}
        if target_url:
            data["target_url"] = target_url
        self._call(
            f"setting the {context} status of {sha[:7]}",
            lambda: self._repo.requester.requestJsonAndCheck(
                "POST", f"{self._repo.url}/statuses/{sha}", input=data
            ),
            retry=True,
        )

    def ready_for_review(self, number: int, reviewers: Sequence[str]) -> None:
        """Mark draft pull request ``number`` ready for review (GitHub's GraphQL mutation,
        which needs its node id: two requests) and request ``reviewers`` (one more)."""
        what = f"marking pull request #{number} ready for review"
        raw = self._call(what, partial(self._json, "GET", f"/pulls/{number}"), retry=True)[1]
        if raw.get("draft"):
            requester = self._repo.requester
            self._call(
                what,
                partial(
                    requester.graphql_named_mutation,
                    "markPullRequestReadyForReview",
                    {"pullRequestId": str(raw.get("node_id") or "")},
                    "pullRequest { isDraft }",
                ),
                retry=True,
            )
        if reviewers:
            self._call(
                f"requesting reviews of pull request #{number} from {', '.join(reviewers)}",
                lambda: self._repo.requester.requestJsonAndCheck(
                    "POST",
                    f"{self._repo.url}/pulls/{number}/requested_reviewers",
                    input={"reviewers": list(reviewers)},
                ),
                retry=True,
            )

    def react(self, comment_id: int, content: str) -> None:
        """React to an issue comment (``+1``, ``eyes``, ``confused``…). Reacting twice with
        the same content is harmless: GitHub keeps one."""
        url = f"{self._repo.url}/issues/comments/{comment_id}"
        target = IssueComment(self._repo.requester, url=url)  # lazy: no request
        self._call(
            f"reacting to comment {comment_id}",
            lambda: target.create_reaction(content),
            retry=True,
        )

    # -- labels ------------------------------------------------------------------------------

    def _ensure_labels(self, names: Sequence[str]) -> None:
        if self._labels is None:
            listed = self._pages("listing the repository's labels", "/labels", {})
            self._labels = {str(item["name"]).lower() for item in listed}
        for name in names:
            if name.lower() in self._labels:
                continue
            color, description = LABELS.get(name, OTHER_LABEL)
            self._call(
                f"creating the label “{name}”",
                partial(self._create_label, name, color, description),
                retry=True,
            )
            self._labels.add(name.lower())

    def _create_label(self, name: str, color: str, description: str) -> None:
        try:
            self._repo.create_label(name, color, description)
        except GithubException as error:
            if error.status == 422 and "already_exists" in str(error.data):
                return  # made meanwhile, or by an attempt whose answer was lost
            raise

    # -- requests ----------------------------------------------------------------------------

    def _json(
        self, verb: str, path: str, parameters: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], Any]:
        """One request to ``path`` below the repository (or to an absolute URL)."""
        url = path if path.startswith(("http://", "https://")) else f"{self._repo.url}{path}"
        return self._repo.requester.requestJsonAndCheck(verb, url, parameters=parameters)

    def _pages(self, what: str, path: str, parameters: dict[str, Any]) -> Iterator[Any]:
        """The items of every page of a list, one request per page, following ``Link``."""
        url: str | None = path
        query: dict[str, Any] | None = {**parameters, "per_page": 100}
        page = 1
        while url is not None:
            headers, data = self._call(
                f"{what} (page {page})" if page > 1 else what,
                partial(self._json, "GET", url, query),
                retry=True,
            )
            yield from data or []
            url, query, page = _next_page(headers), None, page + 1

    def _call(
        self,
        what: str,
        request: Callable[[], T],
        *,
        retry: bool,
        unsure: bool = False,
    ) -> T:
        """Run ``request`` (exactly one HTTP request), counting and retrying it.

        ``retry``: the request is safe to repeat; it is, after a 5xx, a lost connection or
        a rate limit that lifts within ``max_wait``. ``unsure``: a failure may come after
        GitHub carried the request out, which the message then says.
        """
        attempt = 0
        while True:
            attempt += 1
            self.requests += 1
            try:
                return request()
            except GithubException as error:
                failure = self._failure(what, error, unsure=unsure)
            except requests.RequestException as error:
                failure = _Failure(
                    f"could not reach GitHub's API at {self.api_url} while {what} "
                    f"({type(error).__name__})",
                    "check GITHUB_API_URL and the network; the next run tries again",
                    transient=True,
                    unsure=unsure,
                )
            if retry and failure.transient and attempt < self._attempts:
                wait = failure.wait
                if wait is None:
                    wait = backoff.window(attempt, base=self._backoff, cap=math.inf)
                if wait <= self._max_wait:
                    time.sleep(wait)
                    continue
            raise SyncError(failure.text(attempt)) from None

    def _failure(self, what: str, error: GithubException, *, unsure: bool) -> _Failure:
        status = error.status
        message = _message(error)
        headers = {key.lower(): value for key, value in (error.headers or {}).items()}
        if status in (403, 429) and _rate_limited(message, headers):
            wait = _rate_limit_wait(headers)
            at = datetime.now(timezone.utc).timestamp() + wait
            when = datetime.fromtimestamp(at, timezone.utc).strftime("%H:%M:%S UTC")
            return _Failure(
                f"GitHub's API rate limit is used up ({status} while {what})",
                f"retry after {when} (in {round(wait)} seconds); the next scheduled run catches up",
                transient=True,
                wait=wait,
            )
        if status == 401:
            return _Failure(
                f"GitHub refused the token while {what} (401 {message})",
                f"pass a valid token for {self.repository} as the action's `github-token` "
                f"input (or MEMENTO_GITHUB_TOKEN), and check that it has not expired",
            )
        if status == 403:
            scope = "pull-requests" if "pull request" in what else "issues"
            return _Failure(
                f"GitHub refused {what} (403 {message})",
                f"the token needs the `{scope}: write` permission on {self.repository}: add "
                f"`permissions: {scope}: write` to the workflow, or use a token that has it",
            )
        if status == 404:
            return _Failure(
                f"GitHub found nothing while {what} (404 {message})",
                f"check that {self.repository} (GITHUB_REPOSITORY) exists, that "
                f"GITHUB_API_URL ({self.api_url}) is its API, and that the token can read it",
            )
        if status == 410:
            return _Failure(
                f"issues are turned off in {self.repository} (410 while {what})",
                "turn them on in the repository's Settings, under Features",
            )
        if status == 422:
            return _Failure(
                f"GitHub rejected {what} (422 {message}{_details(error)})",
                "this is a bug in memento-gh: please report it with this message",
            )
        if status >= 500:
            return _Failure(
                f"GitHub answered {status} {message} while {what}",
                "GitHub is having trouble; the next run tries again",
                transient=True,
                unsure=unsure,
            )
        return _Failure(
            f"GitHub answered {status} {message} while {what}",
            "the next run tries again; if this repeats, please report it",
        )


class _Failure:
    """What went wrong with one attempt, what to do, and whether waiting could help."""

    def __init__(
        self,
        happened: str,
        advice: str,
        *,
        transient: bool = False,
        wait: float | None = None,
        unsure: bool = False,
    ) -> None:
        self.happened = happened
        self.advice = advice
        self.transient = transient  # trying again later may succeed
        self.wait = wait  # how long GitHub asked to wait (None: our backoff)
        self.unsure = unsure  # GitHub may have carried the request out anyway

    def text(self, attempts: int) -> str:
        tried = f" (tried {attempts} times)" if attempts > 1 else ""
        advice = self.advice
        if self.unsure:
            advice = "GitHub may have done it anyway, so the next run looks before doing it again"
        return f"{self.happened}{tried}: {advice}"


def _issue(raw: Mapping[str, Any]) -> Issue:
    return Issue(
        number=int(raw["number"]),
        title=str(raw.get("title") or ""),
        body=str(raw.get("body") or ""),
        state=str(raw.get("state") or "open"),
        labels=tuple(str(label["name"]) for label in raw.get("labels") or ()),
        url=str(raw.get("html_url") or ""),
    )


def _listed_pull(raw: Mapping[str, Any]) -> PullRequest:
    links = raw.get("pull_request") or {}
    return PullRequest(
        number=int(raw["number"]),
        body=str(raw.get("body") or ""),
        state=str(raw.get("state") or "open"),
        draft=bool(raw.get("draft")),
        merged=bool(links.get("merged_at")),
        url=str(raw.get("html_url") or ""),
    )


def _pull(raw: Mapping[str, Any]) -> PullRequest:
    head = raw.get("head") or {}
    return PullRequest(
        number=int(raw["number"]),
        body=str(raw.get("body") or ""),
        state=str(raw.get("state") or "open"),
        draft=bool(raw.get("draft")),
        merged=bool(raw.get("merged") or raw.get("merged_at")),
        url=str(raw.get("html_url") or ""),
        head_sha=str(head["sha"]) if head.get("sha") else None,
        merge_commit_sha=str(raw["merge_commit_sha"]) if raw.get("merge_commit_sha") else None,
    )


def _check_run(raw: Mapping[str, Any]) -> Check:
    output = raw.get("output") or {}
    return Check(
        name=str(raw.get("name") or "a check"),
        done=raw.get("status") == "completed",
        conclusion=str(raw["conclusion"]) if raw.get("conclusion") else None,
        summary=str(output.get("summary") or output.get("title") or ""),
        url=str(raw.get("details_url") or raw.get("html_url") or ""),
    )


def _status(raw: Mapping[str, Any]) -> Check:
    state = str(raw.get("state") or "pending")
    return Check(
        name=str(raw.get("context") or "a status"),
        done=state != "pending",
        conclusion=None if state == "pending" else state,
        summary=str(raw.get("description") or ""),
        url=str(raw.get("target_url") or ""),
    )


def _comment(raw: Mapping[str, Any]) -> Comment:
    user = raw.get("user") or {}
    issue_url = str(raw.get("issue_url") or "")
    return Comment(
        id=int(raw["id"]),
        issue_number=int(issue_url.rstrip("/").rsplit("/", 1)[-1]),
        body=str(raw.get("body") or ""),
        login=str(user.get("login") or "ghost"),
        association=str(raw.get("author_association") or "NONE"),
        is_bot=user.get("type") == "Bot",
        url=str(raw.get("html_url") or ""),
        created=_time(str(raw["created_at"])),
    )


def _history(data: Mapping[str, Any]) -> History:
    issue = ((data.get("data") or {}).get("repository") or {}).get("issue") or {}
    edits = issue.get("userContentEdits") or {}
    nodes = [node for node in edits.get("nodes") or () if isinstance(node, dict)]
    # GitHub lists them newest first; by time, oldest first (a stable sort keeps GitHub's
    # order for two edits of one second).
    nodes.reverse()
    nodes.sort(key=lambda node: _time(str(node.get("editedAt") or "1970-01-01T00:00:00Z")))
    revisions = tuple(
        Revision(
            edit=str(node.get("id") or ""),
            editor=_actor(node.get("editor")),
            body=node["diff"] if isinstance(node.get("diff"), str) else None,
        )
        for node in nodes
    )
    has_more = bool((edits.get("pageInfo") or {}).get("hasNextPage"))
    return History(
        body=str(issue.get("body") or ""),
        author=_actor(issue.get("author")),
        revisions=revisions,
        complete=not has_more,
    )


def _actor(raw: Any) -> Actor | None:
    """A GraphQL actor; None for a deleted account (GitHub answers null)."""
    if not isinstance(raw, dict) or not raw.get("login"):
        return None
    is_bot = raw.get("__typename") == "Bot"
    login = str(raw["login"])
    # GraphQL names a bot without the "[bot]" its REST login carries.
    return Actor(f"{login}[bot]" if is_bot and not login.endswith("[bot]") else login, None, is_bot)


def _time(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _next_page(headers: Mapping[str, Any]) -> str | None:
    link = next((str(v) for k, v in headers.items() if k.lower() == "link"), "")
    match = _NEXT.search(link)
    return match.group(1) if match else None


def _message(error: GithubException) -> str:
    data = error.data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"]).strip().rstrip(".")
    if isinstance(error.message, str) and error.message:
        return error.message
    try:
        return HTTPStatus(error.status).phrase  # an HTML error page, say
    except ValueError:
        return "(no message)"


def _details(error: GithubException) -> str:
    data = error.data
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list) or not errors:
        return ""
    parts = []
    for item in errors:
        if isinstance(item, dict):
            parts.append(" ".join(str(item[k]) for k in ("field", "code") if k in item))
        else:
            parts.append(str(item))
    return ": " + ", ".join(part for part in parts if part)


def _rate_limited(message: str, headers: Mapping[str, str]) -> bool:
    return (
        headers.get("x-ratelimit-remaining") == "0"
        or "retry-after" in headers
        or "rate limit" in message.lower()
    )


def _rate_limit_wait(headers: Mapping[str, str]) -> float:
    """Seconds until GitHub takes requests again: ``retry-after``, else the reset time,
    else a minute (what GitHub's documentation advises)."""
    retry_after = headers.get("retry-after", "")
    if retry_after.strip().isdigit():
        return float(retry_after)
    reset = headers.get("x-ratelimit-reset", "")
    if reset.strip().isdigit():
        return max(float(reset) - time.time(), 0.0) + 1.0
    return 60.0


def _short(title: str, limit: int = 60) -> str:
    return title if len(title) <= limit else title[: limit - 1] + "…"
