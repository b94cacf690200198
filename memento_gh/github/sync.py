"""GitHub's REST API as memento needs it, through PyGithub, with plain values out.

This is the only module that imports PyGithub. Everything it returns is a NamedTuple
(``answers.py`` builds them from the JSON received), and everything that goes wrong is a
:class:`SyncError` whose message says what failed and what to do (``failures.py``); the
token never appears in a message.

Choices that matter:

- Requests are counted (:attr:`GitHub.requests`, every attempt) and kept few: constructing
  costs none (a lazy PyGithub, so no ``GET /repos``), lists ask for 100 items a page, values
  are built from the answers already received (never a refetch per issue), and labels are
  listed once per :class:`GitHub` object.
- Lists are PyGithub's ``PaginatedList`` (``per_page`` from the client, the next page from
  GitHub's ``Link`` header), fetched a page at a time so that each page is counted and
  retried alone. Its items are kept as GitHub sent them (``_Listed``): PyGithub's own
  classes would fetch each issue again the first time their ``raw_data`` is read. Single
  reads and writes use PyGithub's objects, made lazily (no request until used).
- PyGithub's own retry (``GithubRetry``, urllib3's ``Retry`` underneath) is off, and
  :meth:`_Client._call` retries instead, because that retry cannot do what memento needs:
  it is one policy per client, and its default repeats POSTs, so it would post a comment
  or create an issue twice after a 5xx that came once GitHub had done it; it sleeps
  whatever a ``Retry-After`` header asks (``max_rate_limit_wait`` bounds only the waits it
  reads from the body), where a run must fail at once and say when to retry; and its
  attempts happen inside urllib3, uncounted, ending in urllib3's ``MaxRetryError`` rather
  than GitHub's status and message. ``_call`` repeats only what is safe: reads, the edit of
  an issue (a PATCH sets values), a reaction (GitHub answers 200 when it exists), a label
  (422 when it exists), a commit status (the newest one counts). Creating an issue or a pull
  request and posting a comment are never repeated; the next run looks them up by their
  marker instead. Its waits are ``backoff.window``'s, or the rate limit's.
- The raw requester is used for GraphQL (who edited an issue's body, and to what, is only in
  ``userContentEdits``; the token's own login), at the GraphQL URL PyGithub derives from
  ``api_url`` (``/api/graphql`` on GitHub Enterprise Server), and for REST reads PyGithub
  would make in several requests or not at all (``_Client._get``): a collaborator's
  permission, the combined status with ``per_page``, a branch's rules, a dispatch.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote

import requests
from github import Auth, Github, GithubException
from github.Commit import Commit
from github.GithubObject import NonCompletableGithubObject, NotSet
from github.IssueComment import IssueComment
from github.PaginatedList import PaginatedList

from memento_gh import backoff
from memento_gh.github import bodies, failures
from memento_gh.github.answers import (
    HISTORY_QUERY,
    VIEWER_QUERY,
    Comment,
    Issue,
    PullRequest,
    SetupFacts,
    actor_of,
    check_run_of,
    comment_of,
    history_of,
    issue_of,
    listed_pull_of,
    pull_of,
    status_of,
)
from memento_gh.github.boxes import History
from memento_gh.github.ci import Check
from memento_gh.github.failures import SyncError

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
# A login that can be a collaborator: letters, digits and hyphens, and the underscore of a
# managed user's (Enterprise Managed Users are "name_shortcode"). An app's "name[bot]"
# cannot be one, and nothing else may reach a URL path.
_LOGIN = re.compile(r"[A-Za-z0-9_-]{1,39}")


class _Listed(NonCompletableGithubObject):
    """An item of a list, kept as GitHub sent it (``raw_data``): it never fetches itself."""

    def _initAttributes(self) -> None:
        pass

    def _useAttributes(self, attributes: Any) -> None:
        pass


class _Client:
    """The PyGithub client and how one request goes: counted, retried when safe, its
    failure put in words.

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
        #: Where the whole text of a body cut to fit GitHub's limit is: the action sets the
        #: run's page here (``bodies.fit``).
        self.full_text_at: str | None = None
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

    def _pages(
        self, what: str, path: str, parameters: Mapping[str, Any], list_item: str = "items"
    ) -> Iterator[Any]:
        """The items of every page of a list below the repository, one request per page.
        ``list_item``: where the items are when GitHub answers an object (``check_runs``)."""
        url = f"{self._repo.url}{path}"
        listing = PaginatedList(
            _Listed, self._repo.requester, url, dict(parameters), list_item=list_item
        )
        page = 1
        # One page at a time (PaginatedListBase's own step), so that a failed page is
        # retried alone: a page that failed leaves the list where it was.
        while listing._couldGrow():
            items = self._call(
                f"{what} (page {page})" if page > 1 else what, listing._grow, retry=True
            )
            yield from (item.raw_data for item in items)
            page += 1

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
        where = failures.Where(self.repository, self.api_url)
        attempt = 0
        while True:
            attempt += 1
            self.requests += 1
            try:
                return request()
            except GithubException as error:
                answer = failures.Answer(
                    error.status, error.data, error.message, error.headers or {}
                )
                failure = failures.answered(what, answer, where, unsure=unsure, now=time.time())
            except requests.RequestException as error:
                failure = failures.unreachable(what, type(error).__name__, where, unsure=unsure)
            if retry and failure.transient and attempt < self._attempts:
                wait = failure.wait
                if wait is None:
                    wait = backoff.window(attempt, base=self._backoff, cap=math.inf)
                if wait <= self._max_wait:
                    time.sleep(wait)
                    continue
            raise SyncError(
                failure.text(attempt), status=failure.status, said=failure.said
            ) from None

    def _body(self, text: str) -> str:
        """A body as GitHub takes it: redacted, and cut to fit its limit."""
        return bodies.fit(self.redact(text), self.full_text_at)

    def _get(
        self, what: str, path: str, parameters: dict[str, Any] | None = None, *, gone: Any = ...
    ) -> Any:
        """One GET below the repository, as GitHub's JSON; ``gone``: what a 404 means."""
        url, requester = f"{self._repo.url}{path}", self._repo.requester

        def ask() -> Any:
            try:
                return requester.requestJsonAndCheck("GET", url, parameters=parameters)[1]
            except GithubException as error:
                if error.status == 404 and gone is not ...:
                    return gone
                raise

        return self._call(what, ask, retry=True)

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

    def _label(self, number: int, what: str) -> None:
        """Add the ``memento`` label to issue or pull request ``number``, so the issue
        listing finds it; the labels it has stay (adding one twice is harmless)."""
        self._ensure_labels([MEMENTO_LABEL])
        issue = self._repo.get_issue(number)  # lazy: no request
        self._call(f"labelling {what}", partial(issue.add_to_labels, MEMENTO_LABEL), retry=True)

    def _commit(self, sha: str) -> Commit:
        """Commit ``sha`` of the repository, known by its sha alone (no request)."""
        url = f"{self._repo.url}/commits/{sha}"
        return Commit(self._repo.requester, attributes={"sha": sha, "url": url}, completed=False)


class _PullRequests(_Client):
    """Pull requests, and the checks and statuses of commits."""

    def pull(self, number: int) -> PullRequest:
        """Pull request ``number`` as it is now, with its head and merge commit (one request)."""
        found = self._repo.get_pull(number)  # lazy: its first attribute read is the request
        raw = self._call(f"reading pull request #{number}", lambda: found.raw_data, retry=True)
        return pull_of(raw)

    def create_pull(
        self, title: str, body: str, *, head: str, base: str, draft: bool
    ) -> PullRequest:
        """Open a pull request from ``head`` to ``base`` and label it ``memento`` (so the
        issue listing finds it). The create is never retried (a 5xx may come after GitHub
        made it); the next run finds it by its marker instead."""
        title, body = self.redact(title), self._body(body)
        created = self._call(
            f"opening the pull request from {head} to {base}",
            lambda: self._repo.create_pull(
                base=base, head=head, title=title, body=body, draft=draft
            ),
            retry=False,
            unsure=True,
        )
        pulled = pull_of(created.raw_data)  # completed by the answer: no request
        self._label(pulled.number, f"pull request #{pulled.number}")
        return pulled

    def open_pull_between(self, head: str, base: str) -> PullRequest | None:
        """The open pull request from branch ``head`` of this repository to ``base``, if
        any: GitHub keeps one per pair (one request)."""
        owner = self.repository.partition("/")[0]
        parameters = {"head": f"{owner}:{head}", "base": base, "state": "open"}
        found = self._pages(
            f"looking for a pull request from {head} to {base}", "/pulls", parameters
        )
        return next((pull_of(item) for item in found), None)

    def adopt_pull(self, number: int, *, body: str) -> None:
        """Make pull request ``number`` memento's: set its body and add the ``memento``
        label, keeping its other labels (both safe to retry: three requests at most)."""
        self.edit_pull(number, body=body)
        self._label(number, f"pull request #{number}")

    def edit_pull(self, number: int, *, body: str, title: str | None = None) -> None:
        """Set pull request ``number``'s body (and title) (a PATCH sets values: safe to
        retry)."""
        pull = self._repo.get_pull(number)  # lazy: no request
        body = self._body(body)
        title = None if title is None else self.redact(title)
        self._call(
            f"editing pull request #{number}",
            lambda: pull.edit(body=body, title=NotSet if title is None else title),
            retry=True,
        )

    def ready_for_review(self, number: int, reviewers: Sequence[str]) -> None:
        """Mark draft pull request ``number`` ready for review (GitHub's GraphQL mutation,
        which needs its node id: two requests) and request ``reviewers`` (one more)."""
        what = f"marking pull request #{number} ready for review"
        pull = self._repo.get_pull(number)  # lazy: reading ``draft`` is the request
        if self._call(what, lambda: pull.draft, retry=True):
            self._call(what, pull.mark_ready_for_review, retry=True)
        if reviewers:
            self._call(
                f"requesting reviews of pull request #{number} from {', '.join(reviewers)}",
                partial(pull.create_review_request, reviewers=list(reviewers)),
                retry=True,
            )

    def checks(self, sha: str) -> list[Check]:
        """The check runs and the commit statuses on commit ``sha`` (two requests, one
        more per 100 check runs past the first 100). The combined status lists 30 statuses
        unless asked for more: 100, its most (PyGithub's ``get_combined_status`` asks for
        none)."""
        runs = self._pages(
            f"reading the check runs of {sha[:7]}",
            f"/commits/{sha}/check-runs",
            {},
            list_item="check_runs",
        )
        found = [check_run_of(run) for run in runs]
        combined = self._get(
            f"reading the commit statuses of {sha[:7]}", f"/commits/{sha}/status", {"per_page": 100}
        )
        statuses = (combined or {}).get("statuses") or ()
        return found + [status_of(status) for status in statuses]

    def post_status(
        self, sha: str, state: str, *, context: str, description: str, target_url: str | None
    ) -> None:
        """A commit status on ``sha`` (success, failure, error or pending), shown among a
        pull request's checks. Safe to retry: the newest status of a context counts."""
        if state not in ("error", "failure", "pending", "success"):
            raise ValueError(f"state must be error, failure, pending or success, not {state!r}")
        description = self.redact(description)
        self._call(
            f"setting the {context} status of {sha[:7]}",
            lambda: self._commit(sha).create_status(
                state, target_url or NotSet, description, context
            ),
            retry=True,
        )


class GitHub(_PullRequests):
    """One repository on GitHub (or GitHub Enterprise, or a local fake at ``api_url``): its
    issues and comments here, its pull requests and checks in :class:`_PullRequests`, how a
    request goes in :class:`_Client`."""

    _own_login: str | None = None  # the token's user, once asked

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
        issues = [issue_of(item) for item in raw if "pull_request" not in item]
        return issues, [listed_pull_of(item) for item in raw if "pull_request" in item]

    def recent_comments(self, since: datetime) -> list[Comment]:
        """Comments on the repository's issues and pull requests created or edited at or
        after ``since`` (a naive time is UTC), oldest first (one request per 100)."""
        if since.tzinfo is None:
            since = since.replace(tzinfo=timezone.utc)
        stamp = since.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        parameters = {"since": stamp, "sort": "created", "direction": "asc"}
        raw = self._pages("listing recent issue comments", "/issues/comments", parameters)
        return [comment_of(item) for item in raw]

    def issue_comments(self, number: int) -> list[Comment]:
        """The comments on issue ``number``, oldest first (one request per 100)."""
        raw = self._pages(
            f"listing the comments of issue #{number}", f"/issues/{number}/comments", {}
        )
        return [comment_of(item) for item in raw]

    def issue(self, number: int) -> Issue:
        """Issue ``number`` as it is now (one request)."""
        found = self._repo.get_issue(number)  # lazy: its first attribute read is the request
        return issue_of(self._call(f"reading issue #{number}", lambda: found.raw_data, retry=True))

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
        return history_of(data)

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
            viewer = actor_of(((data or {}).get("data") or {}).get("viewer"))
            if viewer is None:
                raise SyncError(
                    "GitHub did not say whose token memento uses (GraphQL `viewer`); "
                    "check the token and try again"
                )
            self._own_login = viewer.login
        return self._own_login

    def setup_facts(self, branch: str) -> SetupFacts:
        """What the repository says of memento's set-up, in three requests (``branch`` need
        not exist yet: a ruleset names branches to come)."""
        repo = self._call("reading the repository", lambda: self._repo.raw_data, retry=True)
        permissions = repo.get("permissions") if isinstance(repo, dict) else None
        can_push = bool(permissions.get("push")) if isinstance(permissions, dict) else None
        quoted = quote(branch, safe="")
        shown = self._get(f"reading {branch}", f"/branches/{quoted}", gone={})  # not pushed yet
        classic = bool((shown or {}).get("protected"))
        rules = self._get(f"reading the rules of {branch}", f"/rules/branches/{quoted}")
        blocked = any(
            isinstance(rule, dict) and rule.get("type") == "non_fast_forward"
            for rule in rules or ()
        )
        return SetupFacts(bool(repo.get("has_issues", True)), can_push, classic or blocked)

    def reacted(self, comment_id: int) -> bool:
        """Whether the token's own user reacted to comment ``comment_id``: what says that a
        bare `/memento tick`, which records nothing, was answered."""
        own = self.own_login()
        raw = self._pages(
            f"listing the reactions to comment {comment_id}",
            f"/issues/comments/{comment_id}/reactions",
            {},
        )
        return any(str((item.get("user") or {}).get("login")) == own for item in raw)

    def permission(self, login: str) -> str:
        """``login``'s permission on the repository: admin, maintain, write, triage, read or
        none (none for a stranger, whom GitHub answers 404, and for app bots, at no cost)."""
        if not _LOGIN.fullmatch(login):
            return "none"
        what, path = f"asking GitHub for {login}'s permission", f"/collaborators/{login}/permission"
        data = self._get(what, path, gone=None)  # 404: not a collaborator (or no such user)
        role = data.get("role_name") if isinstance(data, dict) else None
        legacy = data.get("permission") if isinstance(data, dict) else None
        for value in (role, legacy):
            if value in PERMISSIONS:
                return str(value)
        return "none"

    def relayed_comment(self, comment_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Comment ``comment_id`` and its issue as GitHub has them now, as the JSON of an
        ``issue_comment`` event: the router reads them as a delivered comment's."""
        comment = self._get(f"reading comment {comment_id}", f"/issues/comments/{comment_id}")
        issue_url = str((comment or {}).get("issue_url") or "")
        number = int(issue_url.rstrip("/").rsplit("/", 1)[-1] or 0)
        issue = self._repo.get_issue(number)  # lazy: its first attribute read is the request
        raw = self._call(f"reading issue #{number}", lambda: issue.raw_data, retry=True)
        return dict(comment or {}), dict(raw)

    # -- writing -----------------------------------------------------------------------------

    def dispatch(self, event_type: str, payload: Mapping[str, Any]) -> None:
        """A ``repository_dispatch`` event: it starts a run even from the workflow's token.
        Never retried: a 5xx may come after GitHub started the run."""
        url = f"{self._repo.url}/dispatches"
        body = {"event_type": event_type, "client_payload": dict(payload)}
        requester = self._repo.requester
        self._call(
            f"handing on to the memento job ({event_type})",
            lambda: requester.requestJsonAndCheck("POST", url, input=body),
            retry=False,
            unsure=True,
        )

    def create_issue(self, title: str, body: str, labels: Sequence[str]) -> Issue:
        """Create an issue, after creating any of ``labels`` the repository lacks.

        Never retried: a 5xx may come after GitHub created it, so the error says to look
        the issue up (by its marker) before creating it again.
        """
        self._ensure_labels(labels)
        title, body = self.redact(title), self._body(body)
        created = self._call(
            f"creating the issue “{_short(title)}”",
            lambda: self._repo.create_issue(title=title, body=body, labels=list(labels)),
            retry=False,
            unsure=True,
        )
        return issue_of(created.raw_data)  # completed by the answer: no request

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
        body = None if body is None else self._body(body)
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
        body = self._body(body)
        self._call(
            f"commenting on issue #{number}",
            lambda: issue.create_comment(body),
            retry=False,
            unsure=True,
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


def _short(title: str, limit: int = 60) -> str:
    return title if len(title) <= limit else title[: limit - 1] + "…"
