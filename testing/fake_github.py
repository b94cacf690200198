"""A stateful fake of GitHub's REST API, served over real HTTP on 127.0.0.1.

The real PyGithub client talks to it exactly as it talks to api.github.com: the same paths,
status codes, JSON shapes (every ``url`` field points at this server), ``Link`` pagination
and rate-limit headers. It covers the endpoints memento uses: the repository, issues (pull
requests included, flagged with ``pull_request``, as GitHub lists them), issue comments,
comment reactions, labels, collaborator permissions, pull requests (list, create, get,
edit, merged state, requested reviewers), a commit's check runs, its statuses (created
with ``POST /statuses/{sha}``, listed) and its combined status (testing/fake_pulls.py),
GitHub's policies, each behind a switch at GitHub's default (testing/fake_policies.py:
who may open a pull request, drafts, body limits, private membership, protected branches,
dispatches), and two corners of the GraphQL API: marking a pull request ready
for review, and an issue's body and its edit history (``userContentEdits``: who changed the
body to what, newest first, as GitHub lists them). Anything else answers GitHub's 404.

Each token belongs to one user (:meth:`FakeGitHub.add_token`), who is the author of what a
request with it creates and the editor of what it changes: a person ticking a box in the
browser is a client with that person's token.

In a test::

    with FakeGitHub("owner/name", token="t0ken") as fake:
        fake.set_permission("alice", "write")
        fake.add_token("alice-t0ken", "alice")          # alice's own client
        fake.add_issue("T-201 BLOCKED: …", labels=["memento"])
        fake.fail("POST", "issues", 502, apply=True)    # create it, then answer 502
        ...                                             # talk to fake.url
        assert fake.request_count("GET", "issues") == 1

In another process (for the workflow run by ``act``)::

    python -m testing.fake_github --port 0 --repo owner/name --token t0ken --state-file s.json
        [--login github-actions[bot]] [--api-prefix /api/v3] [--host 127.0.0.1]

prints ``fake GitHub for owner/name listening on http://127.0.0.1:PORT`` (the API URL, for
``GITHUB_API_URL``) and serves until SIGTERM. :class:`RemoteFakeGitHub` (or :func:`spawn`)
drives it through the control endpoints under ``/_fake/``, which need no token and are not
counted as API requests:

==========================  =============================================================
``GET /_fake/state``        the whole state as JSON (see :meth:`FakeGitHub.state`)
``POST /_fake/users``       ``{"login", "type"}``
``POST /_fake/tokens``      ``{"token", "login"}``
``POST /_fake/permissions`` ``{"login", "permission"}``
``POST /_fake/labels``      ``{"name", "color", "description"}``
``POST /_fake/issues``      the keyword arguments of :meth:`FakeGitHub.add_issue`
``POST /_fake/comments``    the keyword arguments of :meth:`FakeGitHub.add_comment`
``POST /_fake/comment-edits`` the keyword arguments of :meth:`FakeGitHub.edit_comment`
``POST /_fake/faults``      the keyword arguments of :meth:`FakeGitHub.fail`
``POST /_fake/rate-limits`` the keyword arguments of :meth:`FakeGitHub.rate_limit`
``POST /_fake/pull-merges`` the keyword arguments of :meth:`FakeGitHub.merge_pull`
``POST /_fake/check-runs``  the keyword arguments of :meth:`FakeGitHub.add_check_run`
``POST /_fake/statuses``    the keyword arguments of :meth:`FakeGitHub.add_status`
``DELETE /_fake/faults``    drop the faults not yet used
``DELETE /_fake/requests``  reset the request counts and log
==========================  =============================================================

Each answers the rendered object (as the API would) or ``{"ok": true}``; a bad argument
answers 400 with ``{"message": …}``. With ``--state-file`` the state is loaded from the
file when it exists and written back (atomically) after every change, so it survives a
restart and can be read after the server has stopped.

Path patterns (faults, counts) are :mod:`fnmatch` globs over the request path without its
query; a pattern not starting with ``/`` is relative to the repository, so ``"issues"``
means ``/repos/owner/name/issues`` and ``"issues/*"`` every path below it.
"""

from __future__ import annotations

import argparse
import copy
import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from testing import fake_policies
from testing.fake_policies import PoliciesMixin
from testing.fake_pulls import PullsMixin

JSON = dict[str, Any]

PERMISSIONS = ("admin", "maintain", "write", "triage", "read", "none")
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
STATE_REASONS = ("completed", "not_planned", "reopened", "duplicate")
ASSOCIATIONS = (
    "OWNER",
    "MEMBER",
    "COLLABORATOR",
    "CONTRIBUTOR",
    "FIRST_TIME_CONTRIBUTOR",
    "FIRST_TIMER",
    "MANNEQUIN",
    "NONE",
)
DOCS = "https://docs.github.com/rest"
RATE_LIMIT = 5000
API_VERSION = "2022-11-28"
_TIME = "%Y-%m-%dT%H:%M:%SZ"
GRAPHQL = "/graphql"


class Response(NamedTuple):
    """One HTTP answer: a JSON value (or text, served as HTML) and extra headers."""

    status: int
    body: Any
    headers: dict[str, str] = {}  # noqa: RUF012 - NamedTuple default, never mutated


class _Problem(Exception):
    """Raised inside a handler to answer an error in GitHub's shape."""

    def __init__(self, status: int, message: str, errors: Sequence[JSON] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = list(errors)


def _error(status: int, message: str, errors: Sequence[JSON] = ()) -> Response:
    body: JSON = {"message": message, "documentation_url": DOCS, "status": str(status)}
    if errors:
        body["errors"] = list(errors)
    return Response(status, body)


def _stamp(value: datetime | str | None, default: datetime) -> str:
    """A timestamp as GitHub writes it: ISO 8601, UTC, whole seconds, ``Z``."""
    if value is None:
        value = default
    if isinstance(value, str):
        value = parse_time(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).strftime(_TIME)


def parse_time(text: str) -> datetime:
    """Read an ISO 8601 time (``Z`` or an offset; a naive one is UTC)."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


class FakeGitHub(PullsMixin, PoliciesMixin):
    """GitHub for one repository, in memory, behind a real HTTP server.

    ``token`` is the credential of ``login`` (``Authorization: token …`` or ``Bearer …``),
    the user the workflow's token belongs to; :meth:`add_token` gives other users theirs.
    ``api_prefix="/api/v3"`` serves the API below that path, as GitHub Enterprise Server
    does (the web links stay at the root); counts and patterns leave the prefix out.
    """

    def __init__(
        self,
        repository: str = "owner/name",
        token: str = "test-token",
        *,
        login: str = "github-actions[bot]",
        host: str = "127.0.0.1",
        port: int = 0,
        state_file: Path | str | None = None,
        api_prefix: str = "",
        git_dir: Path | str | None = None,
    ) -> None:
        owner, slash, name = repository.partition("/")
        if not (owner and slash and name) or "/" in name:
            raise ValueError(f"repository must be owner/name, not {repository!r}")
        self.repository = repository
        self.token = token
        self.login = login
        self.host = host
        self.port = port
        self.state_file = Path(state_file) if state_file else None
        self.api_prefix = "/" + api_prefix.strip("/") if api_prefix.strip("/") else ""
        #: The repository's git directory (a bare origin): where pull requests' heads and
        #: commit refs are read (see testing/fake_pulls.py).
        self.git_dir = Path(git_dir) if git_dir else None
        self._lock = threading.RLock()
        self._acting = login  # the user of the request being answered (under the lock)
        self._faults: list[JSON] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._state: JSON = {
            "repository": repository,
            "viewer": login,
            "next_id": 1001,
            "users": {},
            "tokens": {},
            "permissions": {},
            "labels": [],
            "issues": [],
            "comments": [],
            "reactions": [],
            "check_runs": [],
            "statuses": [],
            "requests": {"total": 0, "by_route": {}, "log": []},
        }
        if self.state_file and self.state_file.exists():
            loaded = json.loads(self.state_file.read_text(encoding="utf-8"))
            if loaded.get("repository") != repository:
                raise ValueError(
                    f"{self.state_file} holds the state of {loaded.get('repository')!r}, "
                    f"not {repository!r}"
                )
            self._state.update(loaded)
        self._user(owner)
        self._user(login)

    # -- the server ------------------------------------------------------------------------

    def bind(self) -> None:
        """Open the listening socket (``port=0`` picks a free port; :attr:`url` has it)."""
        if self._server is None:
            server = _Server((self.host, self.port), _Handler)
            server.fake = self
            self.port = server.server_address[1]
            self._server = server

    def start(self) -> FakeGitHub:
        """Listen and serve in a background thread."""
        if self._thread is not None:
            return self
        self.bind()
        assert self._server is not None
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-github", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is None:
            return
        if thread is not None:
            server.shutdown()
            thread.join(timeout=5)
        server.server_close()
        self._save()

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`shutdown` (the command-line mode)."""
        self.bind()
        server = self._server
        assert server is not None
        try:
            server.serve_forever(poll_interval=0.05)
        finally:
            server.server_close()
            self._server = None
            self._save()

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` from another thread or a signal handler."""
        server = self._server
        if server is not None:
            threading.Thread(target=server.shutdown, daemon=True).start()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API root: what ``GITHUB_API_URL`` should be."""
        return f"{self.web_url}{self.api_prefix}"

    @property
    def web_url(self) -> str:
        """The root of the ``html_url`` links (``GITHUB_SERVER_URL``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def graphql_path(self) -> str:
        """Where the GraphQL API answers: ``/graphql``, or ``/api/graphql`` beside an
        ``/api/v3`` prefix (GitHub Enterprise Server)."""
        return self.api_prefix.removesuffix("/v3") + GRAPHQL

    @property
    def repo_url(self) -> str:
        return f"{self.url}/repos/{self.repository}"

    # -- seeding ---------------------------------------------------------------------------

    def add_user(self, login: str, type: str | None = None) -> JSON:
        """Register ``login`` (type ``User`` or ``Bot``; a ``[bot]`` suffix means Bot)."""
        if type is not None and type not in ("User", "Bot", "Organization"):
            raise ValueError(f"user type must be User, Bot or Organization, not {type!r}")
        with self._lock:
            user = self._user(login, type)
            self._save()
            return self._render_user(login, user)

    def add_token(self, token: str, login: str) -> None:
        """A token of ``login``'s own: requests with it act as that user."""
        if not token or token == self.token:
            raise ValueError("a user's token must be new and not empty")
        with self._lock:
            self._user(login)
            self._state["tokens"][token] = login
            self._save()

    def set_permission(self, login: str, permission: str) -> None:
        """Make ``login`` a collaborator with ``permission`` (``none`` removes them)."""
        if permission not in PERMISSIONS:
            raise ValueError(f"permission must be one of {', '.join(PERMISSIONS)}")
        with self._lock:
            self._user(login)
            if permission == "none":
                self._state["permissions"].pop(login, None)
            else:
                self._state["permissions"][login] = permission
            self._save()

    def add_label(self, name: str, color: str = "ededed", description: str | None = None) -> JSON:
        with self._lock:
            if self._find_label(name) is not None:
                raise ValueError(f"label {name!r} exists")
            label = self._new_label(name, color, description)
            self._save()
            return self._render_label(label)

    def add_issue(
        self,
        title: str,
        body: str | None = "",
        *,
        labels: Iterable[str] = (),
        state: str = "open",
        state_reason: str | None = None,
        author: str = "octocat",
        author_type: str | None = None,
        association: str | None = None,
        pull_request: bool = False,
        created_at: datetime | str | None = None,
        updated_at: datetime | str | None = None,
    ) -> JSON:
        """Seed an issue (or, with ``pull_request=True``, a pull request's issue side).

        Missing labels are created, as GitHub does. The association defaults to OWNER for
        the repository owner, COLLABORATOR for a user with a permission, NONE otherwise.
        """
        if state not in ("open", "closed"):
            raise ValueError("state must be open or closed")
        if state_reason is not None and state_reason not in STATE_REASONS:
            raise ValueError(f"state_reason must be one of {', '.join(STATE_REASONS)}")
        with self._lock:
            self._user(author, author_type)
            created = _stamp(created_at, _now())
            updated = _stamp(updated_at, parse_time(created))
            issue = self._new_issue(
                title, body, list(labels), author, association, created, updated
            )
            issue["pull_request"] = bool(pull_request)
            if state == "closed":
                issue.update(
                    state="closed",
                    state_reason=state_reason or "completed",
                    closed_at=updated,
                    closed_by=author,
                )
            else:
                issue["state_reason"] = state_reason
            self._save()
            return self._render_issue(issue)

    def add_comment(
        self,
        issue: int,
        body: str,
        *,
        author: str = "octocat",
        author_type: str | None = None,
        association: str | None = None,
        created_at: datetime | str | None = None,
        updated_at: datetime | str | None = None,
    ) -> JSON:
        """Seed a comment on issue (or pull request) number ``issue``."""
        with self._lock:
            target = self._find_issue(issue)
            if target is None:
                raise ValueError(f"no issue #{issue}")
            self._user(author, author_type)
            created = _stamp(created_at, _now())
            updated = _stamp(updated_at, parse_time(created))
            comment = self._new_comment(target, body, author, association, created, updated)
            self._save()
            return self._render_comment(comment)

    def edit_comment(
        self, comment: int, body: str, *, updated_at: datetime | str | None = None
    ) -> JSON:
        """Change comment ``comment``'s text, as its author does in the browser: the
        comment keeps its id, URL and creation time; ``updated_at`` moves (now by default)."""
        with self._lock:
            found = self._comment_or_404(str(comment))
            found.update(body=body, updated_at=_stamp(updated_at, _now()))
            self._save()
            return self._render_comment(found)

    # -- faults ----------------------------------------------------------------------------

    def fail(
        self,
        method: str,
        path: str,
        status: int = 500,
        *,
        times: int = 1,
        apply: bool = False,
    ) -> None:
        """The next ``times`` requests matching ``method`` (or ``*``) and the ``path`` glob
        answer ``status``; with ``apply=True`` the request is carried out first (the issue
        is created, the comment posted…) and only the answer is the error."""
        self._add_fault(method, path, status, times, apply, rate_limit=False, retry_after=None)

    def rate_limit(
        self,
        method: str,
        path: str,
        *,
        times: int = 1,
        retry_after: int = 60,
        status: int = 403,
    ) -> None:
        """The next ``times`` matching requests answer GitHub's rate-limit error: 403 (or
        429), ``x-ratelimit-remaining: 0``, ``x-ratelimit-reset`` and ``retry-after``."""
        self._add_fault(
            method, path, status, times, apply=False, rate_limit=True, retry_after=retry_after
        )

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def faults(self) -> list[JSON]:
        """The faults not used up yet."""
        with self._lock:
            return copy.deepcopy(self._faults)

    def _add_fault(
        self,
        method: str,
        path: str,
        status: int,
        times: int,
        apply: bool,
        *,
        rate_limit: bool,
        retry_after: int | None,
    ) -> None:
        if not 400 <= int(status) <= 599:
            raise ValueError(f"a fault's status must be 4xx or 5xx, not {status}")
        if int(times) < 1:
            raise ValueError("times must be at least 1")
        with self._lock:
            self._faults.append(
                {
                    "method": method.upper(),
                    "path": self._pattern(path),
                    "status": int(status),
                    "times": int(times),
                    "apply": bool(apply),
                    "rate_limit": rate_limit,
                    "retry_after": retry_after,
                }
            )

    # -- inspection ------------------------------------------------------------------------

    def state(self) -> JSON:
        """A copy of the whole state, as stored (and as ``GET /_fake/state`` answers):

        ``repository``, ``viewer`` (the token's login), ``users`` ({login: {id, type}}),
        ``tokens`` ({token: login}, the other users' own), ``permissions`` ({login:
        permission}), ``labels`` ([{id, name, color, description}]), ``issues`` ([{number,
        id, title, body, state, state_reason, labels (names), user (login),
        author_association, pull_request (bool), created_at, updated_at, closed_at,
        closed_by, edits}], where ``edits`` are the body's revisions, oldest first, from the
        body as created on: [{id, editor (login), edited_at, body}]), ``comments`` ([{id,
        issue (number), body, user, author_association, created_at, updated_at}]),
        ``reactions`` ([{id, comment, user, content, created_at}]) and ``requests``
        ({total, by_route: {"GET /path": n}, log: [[method, path?query, status]]}).
        """
        with self._lock:
            return copy.deepcopy(self._state)

    def issues(self, *, pulls: bool = True) -> list[JSON]:
        """Every issue as the API renders it, by number (pull requests unless ``pulls=False``)."""
        with self._lock:
            return [
                self._render_issue(issue)
                for issue in self._state["issues"]
                if pulls or not issue["pull_request"]
            ]

    def issue(self, number: int) -> JSON:
        with self._lock:
            issue = self._find_issue(number)
            if issue is None:
                raise KeyError(f"no issue #{number}")
            return self._render_issue(issue)

    def comments(self, issue: int | None = None) -> list[JSON]:
        """Every comment (or those on ``issue``) as the API renders it, oldest first."""
        with self._lock:
            return [
                self._render_comment(comment)
                for comment in self._state["comments"]
                if issue is None or comment["issue"] == issue
            ]

    def labels(self) -> list[JSON]:
        with self._lock:
            return [self._render_label(label) for label in self._state["labels"]]

    def reactions(self, comment_id: int) -> list[JSON]:
        with self._lock:
            return [
                self._render_reaction(reaction)
                for reaction in self._state["reactions"]
                if reaction["comment"] == comment_id
            ]

    def request_count(self, method: str | None = None, path: str | None = None) -> int:
        """API requests received (faulted and refused ones included; control requests
        not), all of them or those matching ``method`` and the ``path`` glob."""
        with self._lock:
            requests = self._state["requests"]
            if method is None and path is None:
                return int(requests["total"])
            return _count(requests["by_route"], method, self._pattern(path) if path else None)

    @property
    def requests_log(self) -> list[tuple[str, str, int]]:
        """Every API request as (method, path with query, status), in order (the path
        without the ``api_prefix``)."""
        with self._lock:
            return [(m, p, s) for m, p, s in self._state["requests"]["log"]]

    def reset_requests(self) -> None:
        with self._lock:
            self._state["requests"] = {"total": 0, "by_route": {}, "log": []}
            self._save()

    def _pattern(self, path: str) -> str:
        return path if path.startswith("/") else f"/repos/{self.repository}/{path}"

    # -- the HTTP side ---------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Response:
        """Answer one request (the HTTP handler calls this; tests need not)."""
        split = urlsplit(target)
        raw_path = split.path.rstrip("/") or "/"
        prefixed = bool(self.api_prefix) and (
            raw_path == self.api_prefix or raw_path.startswith(self.api_prefix + "/")
        )
        if prefixed:
            raw_path = raw_path[len(self.api_prefix) :] or "/"
        elif raw_path == self.graphql_path:
            raw_path, prefixed = GRAPHQL, True
        path = unquote(raw_path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        if path == "/_fake" or path.startswith("/_fake/"):
            return self._control(method, path, raw)
        with self._lock:
            if self.api_prefix and not prefixed:
                response = _error(404, "Not Found")  # the API lives below its prefix only
            else:
                response = self._api(method, raw_path, query, headers, raw)
            requests = self._state["requests"]
            requests["total"] += 1
            route = f"{method} {path}"
            requests["by_route"][route] = requests["by_route"].get(route, 0) + 1
            shown = f"{raw_path}?{split.query}" if split.query else raw_path
            requests["log"].append([method, shown, response.status])
            total = int(requests["total"])
            self._save()
        limit = self._rate_limit_of(headers)  # the workflow's token gets fewer (policies)
        remaining = max(limit - total, 0)
        extra = {
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-used": str(limit - remaining),
            "x-ratelimit-reset": str(int((_now() + timedelta(hours=1)).timestamp())),
            "x-ratelimit-resource": "core",
            "x-github-api-version-selected": API_VERSION,
            "x-github-request-id": f"FAKE:{total:08d}",
        }
        return response._replace(headers={**extra, **response.headers})

    def _api(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> Response:
        """``path`` is still percent-encoded, so that an encoded ``/`` stays in its segment."""
        fault = self._take_fault(method, unquote(path))
        if fault is not None and not fault["apply"]:
            return self._fault_response(fault)
        acting = self._authorized(headers)
        if acting is None:
            if not any(key.lower() == "authorization" for key in headers):
                return _error(401, "Requires authentication")
            return _error(401, "Bad credentials")
        self._acting = acting
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            return _error(400, "Problems parsing JSON")
        try:
            response = self._route(method, path, query, body)
        except _Problem as problem:
            response = _error(problem.status, problem.message, problem.errors)
        if fault is not None:
            return self._fault_response(fault)
        return response

    def _authorized(self, headers: dict[str, str]) -> str | None:
        """The login the request's token belongs to, or None."""
        value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        scheme, _, credential = value.strip().partition(" ")
        if scheme.lower() not in ("token", "bearer") or not credential.strip():
            return None
        if credential.strip() == self.token:
            return self.login
        found = self._state["tokens"].get(credential.strip())
        return str(found) if found is not None else None

    def _take_fault(self, method: str, path: str) -> JSON | None:
        for fault in self._faults:
            if fault["method"] in ("*", method) and fnmatch.fnmatchcase(path, fault["path"]):
                fault["times"] -= 1
                if fault["times"] <= 0:
                    self._faults.remove(fault)
                return fault
        return None

    def _fault_response(self, fault: JSON) -> Response:
        status = int(fault["status"])
        if fault.get("secondary"):
            return _error(403, fake_policies.SECONDARY.format(id=f"FAKE:{self._used():08d}"))
        if fault["rate_limit"]:
            wait = int(fault["retry_after"] or 0)
            reset = int((_now() + timedelta(seconds=wait)).timestamp())
            used = self._state["requests"]["total"]
            message = (
                f"API rate limit exceeded for user ID {self._user(self.login)['id']}. "
                "If you reach out to GitHub Support for help, please include the request ID "
                f"FAKE:{used:08d}."
            )
            response = _error(status, message)
            return response._replace(
                headers={
                    "x-ratelimit-limit": str(RATE_LIMIT),
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-used": str(RATE_LIMIT),
                    "x-ratelimit-reset": str(reset),
                    "x-ratelimit-resource": "core",
                    "retry-after": str(wait),
                }
            )
        if status == 502:
            page = (
                "<html><head><title>502 Bad Gateway</title></head>"
                "<body><h1>502 Bad Gateway</h1><p>Unicorn! (fake)</p></body></html>"
            )
            return Response(502, page)
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Error"
        return _error(status, "Server Error" if status == 500 else reason)

    def _route(self, method: str, path: str, query: dict[str, str], body: JSON | None) -> Response:
        if path == GRAPHQL and method == "POST":
            return self._graphql(body)
        if path == "/user" and method == "GET":
            return Response(200, self._render_user(self._acting, self._user(self._acting)))
        prefix = f"/repos/{self.repository}".lower()
        if unquote(path).lower() != prefix and not path.lower().startswith(prefix + "/"):
            raise _Problem(404, "Not Found")
        rest = path[len(prefix) :]
        self._police(method, unquote(rest), body)  # what GitHub's policies refuse
        for verb, pattern, handler in _ROUTES:
            match = pattern.fullmatch(rest)
            if match and verb == method:
                groups = [unquote(group) for group in match.groups()]
                result: Response = handler(self, *groups, query=query, body=body)
                return result
        raise _Problem(404, "Not Found")

    # -- endpoints -------------------------------------------------------------------------

    def _get_repo(self, *, query: dict[str, str], body: JSON | None) -> Response:
        owner, name = self.repository.split("/")
        return Response(
            200,
            {
                "id": 1,
                "node_id": "R_fake1",
                "name": name,
                "full_name": self.repository,
                "private": bool(self.policies()["private"]),
                "owner": self._render_user(owner, self._user(owner)),
                "html_url": f"{self.web_url}/{self.repository}",
                "description": None,
                "fork": False,
                "url": self.repo_url,
                "issues_url": f"{self.repo_url}/issues{{/number}}",
                "labels_url": f"{self.repo_url}/labels{{/name}}",
                "default_branch": "main",
                "has_issues": True,
                "open_issues_count": sum(
                    issue["state"] == "open" for issue in self._state["issues"]
                ),
                "visibility": "private" if self.policies()["private"] else "public",
                "archived": False,
                "disabled": False,
            },
        )

    def _list_issues(self, *, query: dict[str, str], body: JSON | None) -> Response:
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise _Problem(422, "Validation Failed", [_invalid("Issue", "state")])
        wanted = [name.strip().lower() for name in query.get("labels", "").split(",")]
        wanted = [name for name in wanted if name]
        since = _since(query)
        issues = [
            issue
            for issue in self._state["issues"]
            if (state == "all" or issue["state"] == state)
            and all(name in {label.lower() for label in issue["labels"]} for name in wanted)
            and (since is None or parse_time(issue["updated_at"]) >= since)
        ]
        sort = query.get("sort", "created")
        if sort not in ("created", "updated", "comments"):
            raise _Problem(422, "Validation Failed", [_invalid("Issue", "sort")])
        counts = self._comment_counts()

        def key(issue: JSON) -> tuple[Any, int]:
            if sort == "comments":
                return (counts.get(issue["number"], 0), issue["number"])
            return (issue[f"{sort}_at"], issue["number"])

        issues.sort(key=key, reverse=query.get("direction", "desc") != "asc")
        return self._paginate([self._render_issue(i) for i in issues], "/issues", query)

    def _create_issue(self, *, query: dict[str, str], body: JSON | None) -> Response:
        body = body or {}
        title = body.get("title")
        if not isinstance(title, (str, int)) or str(title) == "":
            raise _Problem(422, 'Invalid request.\n\n"title" wasn\'t supplied.')
        text = body.get("body")
        if text is not None and not isinstance(text, str):
            raise _Problem(422, "Invalid request.\n\nFor 'properties/body', is not a string.")
        labels = _label_names(body.get("labels", []))
        association = self._association(self._acting)
        now = _stamp(None, _now())
        issue = self._new_issue(str(title), text, labels, self._acting, association, now, now)
        rendered = self._render_issue(issue)
        return Response(201, rendered, {"Location": rendered["url"]})

    def _get_issue(self, number: str, *, query: dict[str, str], body: JSON | None) -> Response:
        return Response(200, self._render_issue(self._issue_or_404(number)))

    def _edit_issue(self, number: str, *, query: dict[str, str], body: JSON | None) -> Response:
        issue = self._issue_or_404(number)
        body = body or {}
        now = _stamp(None, _now())
        if "title" in body:
            if not isinstance(body["title"], str) or not body["title"]:
                raise _Problem(422, "Validation Failed", [_invalid("Issue", "title")])
            issue["title"] = body["title"]
        if "body" in body:
            if body["body"] is not None and not isinstance(body["body"], str):
                raise _Problem(422, "Validation Failed", [_invalid("Issue", "body")])
            self._revise(issue, body["body"], self._acting, now)
        reason = body.get("state_reason")
        if reason is not None and reason not in STATE_REASONS:
            raise _Problem(422, "Validation Failed", [_invalid("Issue", "state_reason")])
        if "state" in body:
            state = body["state"]
            if state not in ("open", "closed"):
                raise _Problem(422, "Validation Failed", [_invalid("Issue", "state")])
            if state == "closed" and issue["state"] == "open":
                issue.update(state="closed", closed_at=now, closed_by=self._acting)
                issue["state_reason"] = reason or "completed"
            elif state == "open" and issue["state"] == "closed":
                issue.update(state="open", closed_at=None, closed_by=None)
                issue["state_reason"] = "reopened"
            elif "state_reason" in body:
                issue["state_reason"] = reason
        elif "state_reason" in body:
            issue["state_reason"] = reason
        if "labels" in body:
            issue["labels"] = self._ensure_labels(_label_names(body["labels"]))
        issue["updated_at"] = now
        return Response(200, self._render_issue(issue))

    def _add_issue_labels(
        self, number: str, *, query: dict[str, str], body: JSON | None
    ) -> Response:
        """``POST /issues/{n}/labels``: add labels, keeping those it has (the answer lists
        them all, as GitHub's does)."""
        issue = self._issue_or_404(number)
        # GitHub takes {"labels": [...]} or the bare list (which PyGithub sends).
        given = body if isinstance(body, list) else (body or {}).get("labels")
        if not isinstance(given, list) or not given:
            raise _Problem(422, "Validation Failed", [_invalid("Label", "labels")])
        names = [*issue["labels"], *(n for n in _label_names(given) if n not in issue["labels"])]
        issue["labels"] = self._ensure_labels(names)
        issue["updated_at"] = _stamp(None, _now())
        labels = [self._find_label(name) for name in issue["labels"]]
        return Response(200, [self._render_label(label) for label in labels if label])

    def _list_issue_comments(
        self, number: str, *, query: dict[str, str], body: JSON | None
    ) -> Response:
        issue = self._issue_or_404(number)
        since = _since(query)
        comments = [
            self._render_comment(comment)
            for comment in self._state["comments"]
            if comment["issue"] == issue["number"]
            and (since is None or parse_time(comment["updated_at"]) >= since)
        ]
        return self._paginate(comments, f"/issues/{issue['number']}/comments", query)

    def _create_comment(self, number: str, *, query: dict[str, str], body: JSON | None) -> Response:
        issue = self._issue_or_404(number)
        text = (body or {}).get("body")
        if not isinstance(text, str) or not text:
            raise _Problem(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        now = _stamp(None, _now())
        association = self._association(self._acting)
        comment = self._new_comment(issue, text, self._acting, association, now, now)
        issue["updated_at"] = now
        rendered = self._render_comment(comment)
        return Response(201, rendered, {"Location": rendered["url"]})

    def _list_repo_comments(self, *, query: dict[str, str], body: JSON | None) -> Response:
        since = _since(query)
        sort = query.get("sort", "created")
        if sort not in ("created", "updated"):
            raise _Problem(422, "Validation Failed", [_invalid("IssueComment", "sort")])
        comments = [
            comment
            for comment in self._state["comments"]
            if since is None or parse_time(comment["updated_at"]) >= since
        ]
        comments.sort(
            key=lambda c: (c[f"{sort}_at"], c["id"]),
            reverse=query.get("direction", "asc") == "desc",
        )
        rendered = [self._render_comment(comment) for comment in comments]
        return self._paginate(rendered, "/issues/comments", query)

    def _get_comment(self, ident: str, *, query: dict[str, str], body: JSON | None) -> Response:
        return Response(200, self._render_comment(self._comment_or_404(ident)))

    def _edit_comment(self, ident: str, *, query: dict[str, str], body: JSON | None) -> Response:
        comment = self._comment_or_404(ident)
        text = (body or {}).get("body")
        if not isinstance(text, str) or not text:
            raise _Problem(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        comment.update(body=text, updated_at=_stamp(None, _now()))
        return Response(200, self._render_comment(comment))

    def _list_reactions(self, ident: str, *, query: dict[str, str], body: JSON | None) -> Response:
        comment = self._comment_or_404(ident)
        reactions = [
            self._render_reaction(reaction)
            for reaction in self._state["reactions"]
            if reaction["comment"] == comment["id"]
            and query.get("content") in (None, reaction["content"])
        ]
        return self._paginate(reactions, f"/issues/comments/{comment['id']}/reactions", query)

    def _create_reaction(self, ident: str, *, query: dict[str, str], body: JSON | None) -> Response:
        comment = self._comment_or_404(ident)
        content = (body or {}).get("content")
        if content not in REACTIONS:
            raise _Problem(422, "Validation Failed", [_invalid("Reaction", "content")])
        for reaction in self._state["reactions"]:
            if (reaction["comment"], reaction["user"], reaction["content"]) == (
                comment["id"],
                self._acting,
                content,
            ):
                return Response(200, self._render_reaction(reaction))
        reaction = {
            "id": self._next_id(),
            "comment": comment["id"],
            "user": self._acting,
            "content": content,
            "created_at": _stamp(None, _now()),
        }
        self._state["reactions"].append(reaction)
        return Response(201, self._render_reaction(reaction))

    def _list_labels(self, *, query: dict[str, str], body: JSON | None) -> Response:
        labels = [self._render_label(label) for label in self._state["labels"]]
        return self._paginate(labels, "/labels", query)

    def _get_label(self, name: str, *, query: dict[str, str], body: JSON | None) -> Response:
        label = self._find_label(name)
        if label is None:
            raise _Problem(404, "Not Found")
        return Response(200, self._render_label(label))

    def _create_label(self, *, query: dict[str, str], body: JSON | None) -> Response:
        body = body or {}
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _Problem(422, "Validation Failed", [_invalid("Label", "name", "missing_field")])
        color = str(body.get("color") or "ededed").removeprefix("#")
        if not re.fullmatch(r"[0-9a-fA-F]{6}", color):
            raise _Problem(422, "Validation Failed", [_invalid("Label", "color")])
        if self._find_label(name) is not None:
            raise _Problem(
                422,
                "Validation Failed",
                [{"resource": "Label", "code": "already_exists", "field": "name"}],
            )
        label = self._new_label(name, color, body.get("description"))
        rendered = self._render_label(label)
        return Response(201, rendered, {"Location": rendered["url"]})

    def _permission(self, login: str, *, query: dict[str, str], body: JSON | None) -> Response:
        permission = self._state["permissions"].get(login)
        if permission is None:
            raise _Problem(404, "Not Found")
        user = self._render_user(login, self._user(login))
        levels = ("read", "triage", "write", "maintain", "admin")
        rank = levels.index(permission)
        user["permissions"] = {
            "pull": rank >= 0,
            "triage": rank >= 1,
            "push": rank >= 2,
            "maintain": rank >= 3,
            "admin": rank >= 4,
        }
        user["role_name"] = permission
        legacy = {"maintain": "write", "triage": "read"}.get(permission, permission)
        return Response(200, {"permission": legacy, "role_name": permission, "user": user})

    # -- GraphQL ---------------------------------------------------------------------------

    def _graphql(self, body: JSON | None) -> Response:
        """``POST /graphql``: a query over the repository's issues and their edit history,
        answered as GitHub answers (200, ``data``, and ``errors`` for what failed)."""
        request = body or {}
        variables = request.get("variables") or {}
        if not isinstance(request.get("query"), str) or not isinstance(variables, dict):
            return Response(200, {"errors": [{"message": "A query attribute must be specified"}]})
        try:
            parser = _GraphParser(request["query"])
            fields = parser.document()
            missing: list[JSON] = []
            root: JSON = {
                "__typename": "Query",
                "repository": self._graph_repository,
                "viewer": self._graph_viewer,  # the token's user, a User (policies)
            }
            if parser.operation == "mutation":
                root = {
                    "__typename": "Mutation",
                    "markPullRequestReadyForReview": self._graph_ready_for_review,
                }
            data = _select_fields(root, fields, variables, [], missing)
        except _GraphQLError as error:
            return Response(200, {"errors": [error.render()]})
        answer: JSON = {"data": data}
        if missing:
            answer["errors"] = missing
        return Response(200, answer)

    def _graph_repository(self, owner: str, name: str) -> JSON:
        if f"{owner}/{name}".lower() != self.repository.lower():
            raise _GraphQLError(
                f"Could not resolve to a Repository with the name '{owner}/{name}'.",
                kind="NOT_FOUND",
            )
        return {
            "__typename": "Repository",
            "nameWithOwner": self.repository,
            "issue": self._graph_issue,
        }

    def _graph_issue(self, number: int) -> JSON:
        issue = self._find_issue(int(number))
        if issue is None or issue["pull_request"]:
            raise _GraphQLError(
                f"Could not resolve to an Issue with the number of {number}.", kind="NOT_FOUND"
            )
        edits = issue.get("edits") or []
        # GitHub lists the revisions newest first.
        nodes = [self._graph_edit(edit) for edit in reversed(edits)]
        return {
            "__typename": "Issue",
            "id": f"I_fake{issue['id']}",
            "number": issue["number"],
            "title": issue["title"],
            "body": issue["body"] or "",
            "createdAt": issue["created_at"],
            "updatedAt": issue["updated_at"],
            "lastEditedAt": edits[-1]["edited_at"] if edits else None,
            "includesCreatedEdit": bool(edits),
            "author": self._graph_actor(issue["user"]),
            "editor": self._graph_actor(edits[-1]["editor"]) if edits else None,
            "userContentEdits": lambda first=None, last=None: _connection(
                "userContentEdits", nodes, first, last
            ),
        }

    def _graph_edit(self, edit: JSON) -> JSON:
        return {
            "__typename": "UserContentEdit",
            "id": f"UCE_fake{edit['id']}",
            "createdAt": edit["edited_at"],
            "updatedAt": edit["edited_at"],
            "editedAt": edit["edited_at"],
            "deletedAt": None,
            "deletedBy": None,
            "diff": edit["body"],
            "editor": self._graph_actor(edit["editor"]),
        }

    def _graph_actor(self, login: str | None) -> JSON | None:
        if login is None:
            return None  # a deleted account: GitHub answers null
        kind = self._user(login)["type"]
        shown = login.removesuffix("[bot]") if kind == "Bot" else login
        return {
            "__typename": "Bot" if kind == "Bot" else "User",
            "login": shown,  # a bot's login without "[bot]", as GraphQL gives it
            "url": f"{self.web_url}/{quote(login)}",
        }

    # -- pagination ------------------------------------------------------------------------

    def _paginate(self, items: list[JSON], route: str, query: dict[str, str]) -> Response:
        per_page = min(max(_int(query.get("per_page"), 30), 1), 100)
        page = max(_int(query.get("page"), 1), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        base = f"{self.repo_url}{route}"

        def link(number: int, rel: str) -> str:
            return f'<{base}?{urlencode({**query, "page": str(number)})}>; rel="{rel}"'

        links = []
        if page > 1:
            links.append(link(min(page - 1, last), "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        return Response(200, chunk, {"Link": ", ".join(links)} if links else {})

    # -- the model -------------------------------------------------------------------------

    def _next_id(self) -> int:
        ident = int(self._state["next_id"])
        self._state["next_id"] = ident + 1
        return ident

    def _user(self, login: str, type: str | None = None) -> JSON:
        users = self._state["users"]
        if login not in users:
            kind = type or ("Bot" if login.endswith("[bot]") else "User")
            users[login] = {"id": self._next_id(), "type": kind}
        elif type is not None:
            users[login]["type"] = type
        user: JSON = users[login]
        return user

    def _association(self, login: str) -> str:
        if login.lower() == self.repository.split("/")[0].lower():
            return "OWNER"
        member = self._member_association(login)  # private membership hides MEMBER
        if member is not None:
            return member
        if login in self._state["permissions"]:
            return "COLLABORATOR"
        return "NONE"

    def _find_label(self, name: str) -> JSON | None:
        for label in self._state["labels"]:
            if label["name"].lower() == name.lower():
                found: JSON = label
                return found
        return None

    def _new_label(self, name: str, color: str, description: str | None) -> JSON:
        label = {
            "id": self._next_id(),
            "name": name,
            "color": color.removeprefix("#").lower(),
            "description": description,
        }
        self._state["labels"].append(label)
        return label

    def _ensure_labels(self, names: list[str]) -> list[str]:
        """The labels' stored names, creating missing ones (GitHub does, in grey)."""
        result: list[str] = []
        for name in names:
            label = self._find_label(name) or self._new_label(name, "ededed", None)
            if label["name"] not in result:
                result.append(label["name"])
        return result

    def _new_issue(
        self,
        title: str,
        body: str | None,
        labels: list[str],
        author: str,
        association: str | None,
        created: str,
        updated: str,
    ) -> JSON:
        if association is not None and association not in ASSOCIATIONS:
            raise ValueError(f"association must be one of {', '.join(ASSOCIATIONS)}")
        numbers = [issue["number"] for issue in self._state["issues"]]
        issue = {
            "number": max(numbers, default=0) + 1,
            "id": self._next_id(),
            "title": title,
            "body": body,
            "state": "open",
            "state_reason": None,
            "labels": self._ensure_labels(labels),
            "user": author,
            "author_association": association or self._association(author),
            "pull_request": False,
            "created_at": created,
            "updated_at": updated,
            "closed_at": None,
            "closed_by": None,
            "edits": [],
        }
        self._state["issues"].append(issue)
        return issue

    def _revise(self, issue: JSON, body: str | None, editor: str, when: str) -> None:
        """Change the body, keeping the revision as GitHub does: an issue's first edit
        also keeps the body as created, by its author."""
        if body == issue["body"]:
            return  # no revision for a body that did not change
        edits = issue.setdefault("edits", [])
        if not edits:
            edits.append(self._revision(issue["user"], issue["created_at"], issue["body"]))
        issue["body"] = body
        edits.append(self._revision(editor, when, body))

    def _revision(self, editor: str, when: str, body: str | None) -> JSON:
        return {"id": self._next_id(), "editor": editor, "edited_at": when, "body": body or ""}

    def _new_comment(
        self,
        issue: JSON,
        body: str,
        author: str,
        association: str | None,
        created: str,
        updated: str,
    ) -> JSON:
        if association is not None and association not in ASSOCIATIONS:
            raise ValueError(f"association must be one of {', '.join(ASSOCIATIONS)}")
        comment = {
            "id": self._next_id(),
            "issue": issue["number"],
            "body": body,
            "user": author,
            "author_association": association or self._association(author),
            "created_at": created,
            "updated_at": updated,
        }
        self._state["comments"].append(comment)
        return comment

    def _find_issue(self, number: int) -> JSON | None:
        for issue in self._state["issues"]:
            if issue["number"] == number:
                found: JSON = issue
                return found
        return None

    def _issue_or_404(self, number: str) -> JSON:
        issue = self._find_issue(int(number))
        if issue is None:
            raise _Problem(404, "Not Found")
        return issue

    def _comment_or_404(self, ident: str) -> JSON:
        for comment in self._state["comments"]:
            if comment["id"] == int(ident):
                found: JSON = comment
                return found
        raise _Problem(404, "Not Found")

    def _comment_counts(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for comment in self._state["comments"]:
            counts[comment["issue"]] = counts.get(comment["issue"], 0) + 1
        return counts

    # -- rendering (the shapes GitHub answers) ---------------------------------------------

    def _render_user(self, login: str, user: JSON) -> JSON:
        api = f"{self.url}/users/{quote(login)}"
        return {
            "login": login,
            "id": user["id"],
            "node_id": f"U_fake{user['id']}",
            "avatar_url": f"{self.web_url}/avatars/{quote(login)}",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{self.web_url}/{quote(login)}",
            "followers_url": f"{api}/followers",
            "repos_url": f"{api}/repos",
            "type": user["type"],
            "user_view_type": "public",
            "site_admin": False,
        }

    def _render_label(self, label: JSON) -> JSON:
        return {
            "id": label["id"],
            "node_id": f"LA_fake{label['id']}",
            "url": f"{self.repo_url}/labels/{quote(label['name'], safe='')}",
            "name": label["name"],
            "color": label["color"],
            "default": False,
            "description": label["description"],
        }

    def _reactions_summary(self, url: str, reactions: list[JSON]) -> JSON:
        summary: JSON = {"url": url, "total_count": len(reactions)}
        for content in REACTIONS:
            summary[content] = sum(r["content"] == content for r in reactions)
        return summary

    def _render_issue(self, issue: JSON) -> JSON:
        number = issue["number"]
        api = f"{self.repo_url}/issues/{number}"
        kind = "pull" if issue["pull_request"] else "issues"
        html = f"{self.web_url}/{self.repository}/{kind}/{number}"
        labels = [self._find_label(name) for name in issue["labels"]]
        rendered: JSON = {
            "url": api,
            "repository_url": self.repo_url,
            "labels_url": f"{api}/labels{{/name}}",
            "comments_url": f"{api}/comments",
            "events_url": f"{api}/events",
            "html_url": html,
            "id": issue["id"],
            "node_id": f"I_fake{issue['id']}",
            "number": number,
            "title": issue["title"],
            "user": self._render_user(issue["user"], self._user(issue["user"])),
            "labels": [self._render_label(label) for label in labels if label is not None],
            "state": issue["state"],
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": self._comment_counts().get(number, 0),
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "closed_at": issue["closed_at"],
            "author_association": issue["author_association"],
            "active_lock_reason": None,
            "body": issue["body"],
            "closed_by": (
                self._render_user(issue["closed_by"], self._user(issue["closed_by"]))
                if issue["closed_by"]
                else None
            ),
            "reactions": self._reactions_summary(f"{api}/reactions", []),
            "timeline_url": f"{api}/timeline",
            "performed_via_github_app": None,
            "state_reason": issue["state_reason"],
        }
        if issue["pull_request"]:
            pulls = f"{self.repo_url}/pulls/{number}"
            pull = issue.get("pull") or {}
            rendered["draft"] = bool(pull.get("draft", False))
            rendered["pull_request"] = {
                "url": pulls,
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": pull.get("merged_at"),
            }
        return rendered

    def _render_comment(self, comment: JSON) -> JSON:
        issue = self._find_issue(comment["issue"])
        kind = "pull" if issue and issue["pull_request"] else "issues"
        api = f"{self.repo_url}/issues/comments/{comment['id']}"
        reactions = [r for r in self._state["reactions"] if r["comment"] == comment["id"]]
        return {
            "url": api,
            "html_url": (
                f"{self.web_url}/{self.repository}/{kind}/{comment['issue']}"
                f"#issuecomment-{comment['id']}"
            ),
            "issue_url": f"{self.repo_url}/issues/{comment['issue']}",
            "id": comment["id"],
            "node_id": f"IC_fake{comment['id']}",
            "user": self._render_user(comment["user"], self._user(comment["user"])),
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "author_association": comment["author_association"],
            "body": comment["body"],
            "reactions": self._reactions_summary(f"{api}/reactions", reactions),
            "performed_via_github_app": None,
        }

    def _render_reaction(self, reaction: JSON) -> JSON:
        return {
            "id": reaction["id"],
            "node_id": f"REA_fake{reaction['id']}",
            "user": self._render_user(reaction["user"], self._user(reaction["user"])),
            "content": reaction["content"],
            "created_at": reaction["created_at"],
        }

    # -- control endpoints and persistence -------------------------------------------------

    def _control(self, method: str, path: str, raw: bytes) -> Response:
        if (method, path) == ("GET", "/_fake/state"):
            state = self.state()
            state["url"] = self.url
            state["faults"] = self.faults()
            return Response(200, state)
        if (method, path) == ("DELETE", "/_fake/faults"):
            self.clear_faults()
            return Response(200, {"ok": True})
        if (method, path) == ("DELETE", "/_fake/requests"):
            self.reset_requests()
            return Response(200, {"ok": True})
        action = _CONTROLS.get(path) if method == "POST" else None
        if action is None:
            return Response(404, {"message": f"no control endpoint {method} {path}"})
        try:
            arguments = json.loads(raw) if raw.strip() else {}
            if not isinstance(arguments, dict):
                raise TypeError("the body must be a JSON object of keyword arguments")
            result = action(self, **arguments)
        except (TypeError, ValueError, KeyError) as error:
            return Response(400, {"message": str(error)})
        return Response(200, result if isinstance(result, dict) else {"ok": True})

    def _save(self) -> None:
        if self.state_file is None:
            return
        with self._lock:
            text = json.dumps(self._state, indent=1, sort_keys=True)
            temporary = self.state_file.with_name(self.state_file.name + ".tmp")
            temporary.write_text(text, encoding="utf-8")
            temporary.replace(self.state_file)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _since(query: dict[str, str]) -> datetime | None:
    if "since" not in query:
        return None
    try:
        return parse_time(query["since"])
    except ValueError:
        raise _Problem(422, "Validation Failed", [_invalid("Issue", "since")]) from None


def _invalid(resource: str, field: str, code: str = "invalid") -> JSON:
    return {"resource": resource, "code": code, "field": field}


def _label_names(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise _Problem(422, "Validation Failed", [_invalid("Issue", "labels")])
    names = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name:
            raise _Problem(422, "Validation Failed", [_invalid("Issue", "labels")])
        names.append(name)
    return names


def _count(by_route: dict[str, int], method: str | None, pattern: str | None) -> int:
    total = 0
    for route, count in by_route.items():
        verb, _, path = route.partition(" ")
        if method not in (None, "*", verb):
            continue
        if pattern is not None and not fnmatch.fnmatchcase(path, pattern):
            continue
        total += count
    return total


# -- GraphQL: the part of the language a client of this fake sends ------------------------

_GRAPHQL_TOKEN = re.compile(
    r"(?P<skip>[\s,]+|#[^\n]*)|(?P<punct>\.\.\.|[{}():!$=\[\]@])"
    r'|(?P<name>[_A-Za-z][_0-9A-Za-z]*)|(?P<number>-?\d+)|(?P<string>"(?:[^"\\\n]|\\.)*")'
)
_GRAPHQL_PAGE_LIMIT = 100


class _GraphQLError(Exception):
    """A query GitHub would refuse (``kind=None``) or a thing it did not find (NOT_FOUND:
    that field is null and the rest of the answer stands)."""

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.path: list[str] = []

    def render(self) -> JSON:
        found: JSON = {"message": self.message, "locations": [{"line": 1, "column": 1}]}
        if self.path:
            found["path"] = self.path
        if self.kind:
            found["type"] = self.kind
        return found


class _GraphField(NamedTuple):
    name: str
    key: str  # the alias, or the name
    arguments: dict[str, Any]  # literal values, or _GraphVariable
    selections: tuple[_GraphField, ...]


class _GraphVariable(NamedTuple):
    name: str


class _GraphParser:
    """Queries: an optional ``query Name($variable: Type)`` head and nested fields, with
    aliases and arguments; a ``mutation`` the same way (only PyGithub's
    ``markPullRequestReadyForReview``). No fragments or directives: a client of this fake
    does not send them, and it answers them with an error."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text):
            match = _GRAPHQL_TOKEN.match(text, position)
            if match is None:
                raise _GraphQLError(f'Parse error on "{text[position]}"')
            position = match.end()
            if match.lastgroup != "skip":
                self.tokens.append((str(match.lastgroup), match.group()))
        self.at = 0
        self.operation = "query"

    def document(self) -> tuple[_GraphField, ...]:
        kind, word = self._peek()
        if (kind, word) in (("name", "query"), ("name", "mutation")):
            self.operation = word
            self.at += 1
            if self._peek()[0] == "name":
                self.at += 1
            if self._peek()[1] == "(":
                while self._take() != ")":
                    pass
        elif kind == "name":
            raise _GraphQLError(f"this fake answers queries and mutations, not a {word}")
        fields = self._selection_set()
        if self._peek()[0] != "end":
            raise _GraphQLError(f'Parse error on "{self._peek()[1]}"')
        return fields

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def _take(self, wanted: str | None = None) -> str:
        kind, word = self._peek()
        if kind == "end" or (wanted is not None and word != wanted):
            raise _GraphQLError(f'Parse error on "{word or "end of file"}"')
        self.at += 1
        return word

    def _name(self) -> str:
        if self._peek()[0] != "name":
            raise _GraphQLError(f'Parse error on "{self._peek()[1] or "end of file"}"')
        return self._take()

    def _selection_set(self) -> tuple[_GraphField, ...]:
        self._take("{")
        fields = []
        while self._peek()[1] != "}":
            if self._peek()[1] in ("...", "@"):
                raise _GraphQLError("this fake reads no fragments or directives")
            fields.append(self._field())
        self._take("}")
        return tuple(fields)

    def _field(self) -> _GraphField:
        key = name = self._name()
        if self._peek()[1] == ":":
            self._take(":")
            name = self._name()
        arguments: dict[str, Any] = {}
        if self._peek()[1] == "(":
            self._take("(")
            while self._peek()[1] != ")":
                argument = self._name()
                self._take(":")
                arguments[argument] = self._value()
            self._take(")")
        selections = self._selection_set() if self._peek()[1] == "{" else ()
        return _GraphField(name, key, arguments, selections)

    def _value(self) -> Any:
        kind, word = self._peek()
        if word == "$":
            self._take("$")
            return _GraphVariable(self._name())
        self._take()
        if kind == "number":
            return int(word)
        if kind == "string":
            return json.loads(word)
        if kind == "name":
            return {"true": True, "false": False, "null": None}.get(word, word)
        raise _GraphQLError(f'Parse error on "{word}"')


def _select_fields(
    value: JSON,
    fields: Sequence[_GraphField],
    variables: dict[str, Any],
    path: list[str],
    missing: list[JSON],
) -> JSON:
    """The fields asked of one object. An object is a dict with its ``__typename``; a
    field's value is plain, or a function of the field's arguments."""
    return {field.key: _resolve_field(value, field, variables, path, missing) for field in fields}


def _resolve_field(
    value: JSON,
    field: _GraphField,
    variables: dict[str, Any],
    path: list[str],
    missing: list[JSON],
) -> Any:
    typename = value["__typename"]
    where = [*path, field.key]
    if field.name not in value:
        raise _GraphQLError(f"Field '{field.name}' doesn't exist on type '{typename}'")
    arguments = {}
    for name, given in field.arguments.items():
        if isinstance(given, _GraphVariable) and given.name not in variables:
            raise _GraphQLError(f"Variable ${given.name} is used but not provided")
        arguments[name] = variables[given.name] if isinstance(given, _GraphVariable) else given
    entry = value[field.name]
    try:
        if callable(entry):
            found = entry(**arguments)
        elif arguments:
            raise TypeError
        else:
            found = entry
    except TypeError:
        names = ", ".join(arguments)
        raise _GraphQLError(f"Field '{field.name}' doesn't accept argument(s) {names}") from None
    except _GraphQLError as error:
        if error.kind != "NOT_FOUND":
            raise
        error.path = where
        missing.append(error.render())
        return None
    return _shape(found, field, variables, where, missing)


def _shape(
    found: Any,
    field: _GraphField,
    variables: dict[str, Any],
    path: list[str],
    missing: list[JSON],
) -> Any:
    if found is None:
        return None
    if isinstance(found, list):
        return [_shape(item, field, variables, path, missing) for item in found]
    if isinstance(found, dict):
        if not field.selections:
            raise _GraphQLError(
                f"Field must have selections (field '{field.name}' returns "
                f"{found['__typename']} but has no selections.)"
            )
        return _select_fields(found, field.selections, variables, path, missing)
    if field.selections:
        raise _GraphQLError(f"Selections can't be made on scalars (field '{field.name}')")
    return found


def _connection(name: str, nodes: list[JSON], first: int | None, last: int | None) -> JSON:
    """A connection's page: ``first`` N nodes in its order, or the ``last`` N."""
    if first is None and last is None:
        raise _GraphQLError(
            f"You must provide a `first` or `last` value to properly paginate the `{name}` "
            "connection."
        )
    count = first if first is not None else last
    assert count is not None
    if count < 0 or count > _GRAPHQL_PAGE_LIMIT:
        bound = "first" if first is not None else "last"
        raise _GraphQLError(
            f"Requesting {count} records on the `{name}` connection exceeds the `{bound}` "
            f"limit of {_GRAPHQL_PAGE_LIMIT} records."
        )
    chosen = nodes[:count] if first is not None else nodes[max(len(nodes) - count, 0) :]
    return {
        "__typename": "UserContentEditConnection",
        "totalCount": len(nodes),
        "nodes": chosen,
        "pageInfo": {
            "__typename": "PageInfo",
            "hasNextPage": first is not None and len(nodes) > count,
            "hasPreviousPage": last is not None and len(nodes) > count,
        },
    }


_Endpoint = Callable[..., Response]
_ROUTES: list[tuple[str, re.Pattern[str], _Endpoint]] = [
    (verb, re.compile(pattern), handler)
    for verb, pattern, handler in (
        ("GET", r"", FakeGitHub._get_repo),
        ("GET", r"/issues", FakeGitHub._list_issues),
        ("POST", r"/issues", FakeGitHub._create_issue),
        ("GET", r"/issues/comments", FakeGitHub._list_repo_comments),
        ("GET", r"/issues/comments/(\d+)", FakeGitHub._get_comment),
        ("PATCH", r"/issues/comments/(\d+)", FakeGitHub._edit_comment),
        ("GET", r"/issues/comments/(\d+)/reactions", FakeGitHub._list_reactions),
        ("POST", r"/issues/comments/(\d+)/reactions", FakeGitHub._create_reaction),
        ("GET", r"/issues/(\d+)", FakeGitHub._get_issue),
        ("PATCH", r"/issues/(\d+)", FakeGitHub._edit_issue),
        ("POST", r"/issues/(\d+)/labels", FakeGitHub._add_issue_labels),
        ("GET", r"/issues/(\d+)/comments", FakeGitHub._list_issue_comments),
        ("POST", r"/issues/(\d+)/comments", FakeGitHub._create_comment),
        ("GET", r"/labels", FakeGitHub._list_labels),
        ("POST", r"/labels", FakeGitHub._create_label),
        ("GET", r"/labels/([^/]+)", FakeGitHub._get_label),
        ("GET", r"/collaborators/([^/]+)/permission", FakeGitHub._permission),
        ("GET", r"/pulls", FakeGitHub._list_pulls),
        ("POST", r"/pulls", FakeGitHub._create_pull),
        ("GET", r"/pulls/(\d+)", FakeGitHub._get_pull),
        ("PATCH", r"/pulls/(\d+)", FakeGitHub._edit_pull),
        ("GET", r"/pulls/(\d+)/requested_reviewers", FakeGitHub._list_requested_reviewers),
        ("POST", r"/pulls/(\d+)/requested_reviewers", FakeGitHub._request_reviewers),
        ("GET", r"/commits/([^/]+)", FakeGitHub._get_commit),
        ("GET", r"/commits/([^/]+)/check-runs", FakeGitHub._check_runs),
        ("GET", r"/commits/([^/]+)/status", FakeGitHub._combined_status),
        ("GET", r"/commits/([^/]+)/statuses", FakeGitHub._list_statuses),
        ("GET", r"/statuses/([^/]+)", FakeGitHub._list_statuses),  # the older path to it
        ("POST", r"/statuses/([^/]+)", FakeGitHub._create_status),
        *fake_policies.ROUTES,
    )
]

_CONTROLS: dict[str, Callable[..., Any]] = {
    "/_fake/users": FakeGitHub.add_user,
    "/_fake/permissions": FakeGitHub.set_permission,
    "/_fake/labels": FakeGitHub.add_label,
    "/_fake/issues": FakeGitHub.add_issue,
    "/_fake/comments": FakeGitHub.add_comment,
    "/_fake/comment-edits": FakeGitHub.edit_comment,
    "/_fake/tokens": FakeGitHub.add_token,
    "/_fake/faults": FakeGitHub.fail,
    "/_fake/rate-limits": FakeGitHub.rate_limit,
    "/_fake/pull-merges": FakeGitHub.merge_pull,
    "/_fake/check-runs": FakeGitHub.add_check_run,
    "/_fake/statuses": FakeGitHub.add_status,
    "/_fake/policies": FakeGitHub.set_policy,
    "/_fake/members": FakeGitHub.add_member,
    "/_fake/protected-branches": FakeGitHub.protect_branch,
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30  # an idle keep-alive connection frees its thread

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        response = self.server.fake.handle(self.command, self.path, dict(self.headers), raw)
        if response.status == 204:
            payload, kind = b"", "application/json; charset=utf-8"  # No Content: no body
        elif isinstance(response.body, str):
            payload = response.body.encode("utf-8")
            kind = "text/html; charset=utf-8"
        else:
            payload = json.dumps(response.body).encode("utf-8")
            kind = "application/json; charset=utf-8"
        self.send_response(response.status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is in the state."""


# -- another process -----------------------------------------------------------------------


class RemoteFakeGitHub:
    """Drive a fake server running in another process through its control endpoints."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _call(self, method: str, path: str, body: JSON | None = None) -> Any:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")
            raise AssertionError(f"{method} {path} answered {error.code}: {detail}") from None

    def state(self) -> JSON:
        state: JSON = self._call("GET", "/_fake/state")
        return state

    def add_user(self, login: str, type: str | None = None) -> JSON:
        user: JSON = self._call("POST", "/_fake/users", {"login": login, "type": type})
        return user

    def add_token(self, token: str, login: str) -> None:
        self._call("POST", "/_fake/tokens", {"token": token, "login": login})

    def set_permission(self, login: str, permission: str) -> None:
        self._call("POST", "/_fake/permissions", {"login": login, "permission": permission})

    def add_label(self, name: str, color: str = "ededed", description: str | None = None) -> JSON:
        body = {"name": name, "color": color, "description": description}
        label: JSON = self._call("POST", "/_fake/labels", body)
        return label

    def add_issue(self, title: str, body: str | None = "", **options: Any) -> JSON:
        issue: JSON = self._call("POST", "/_fake/issues", {"title": title, "body": body, **options})
        return issue

    def add_comment(self, issue: int, body: str, **options: Any) -> JSON:
        comment: JSON = self._call(
            "POST", "/_fake/comments", {"issue": issue, "body": body, **options}
        )
        return comment

    def edit_comment(self, comment: int, body: str, **options: Any) -> JSON:
        edited: JSON = self._call(
            "POST", "/_fake/comment-edits", {"comment": comment, "body": body, **options}
        )
        return edited

    def fail(
        self, method: str, path: str, status: int = 500, *, times: int = 1, apply: bool = False
    ) -> None:
        body = {"method": method, "path": path, "status": status, "times": times, "apply": apply}
        self._call("POST", "/_fake/faults", body)

    def rate_limit(
        self, method: str, path: str, *, times: int = 1, retry_after: int = 60, status: int = 403
    ) -> None:
        body = {
            "method": method,
            "path": path,
            "times": times,
            "retry_after": retry_after,
            "status": status,
        }
        self._call("POST", "/_fake/rate-limits", body)

    def merge_pull(self, number: int, merge_commit_sha: str, **options: Any) -> JSON:
        body = {"number": number, "merge_commit_sha": merge_commit_sha, **options}
        merged: JSON = self._call("POST", "/_fake/pull-merges", body)
        return merged

    def add_check_run(self, sha: str, name: str, **options: Any) -> JSON:
        run: JSON = self._call("POST", "/_fake/check-runs", {"sha": sha, "name": name, **options})
        return run

    def add_status(self, sha: str, context: str, state: str, **options: Any) -> JSON:
        body = {"sha": sha, "context": context, "state": state, **options}
        status: JSON = self._call("POST", "/_fake/statuses", body)
        return status

    def clear_faults(self) -> None:
        self._call("DELETE", "/_fake/faults")

    def reset_requests(self) -> None:
        self._call("DELETE", "/_fake/requests")

    def request_count(self, method: str | None = None, path: str | None = None) -> int:
        state = self.state()
        requests = state["requests"]
        if method is None and path is None:
            return int(requests["total"])
        if path is not None and not path.startswith("/"):
            path = f"/repos/{state['repository']}/{path}"
        return _count(requests["by_route"], method, path)


def spawn(
    repository: str,
    token: str,
    *,
    state_file: Path | str | None = None,
    login: str = "github-actions[bot]",
    port: int = 0,
    api_prefix: str = "",
    git_dir: Path | str | None = None,
) -> tuple[subprocess.Popen[str], RemoteFakeGitHub]:
    """Start ``python -m testing.fake_github`` and wait until it listens.

    The caller stops it with ``process.terminate(); process.wait()``.
    """
    command = [sys.executable, "-m", "testing.fake_github", "--repo", repository]
    command += ["--token", token, "--login", login, "--port", str(port)]
    command += ["--api-prefix", api_prefix]
    if git_dir is not None:
        command += ["--git-dir", str(git_dir)]
    if state_file is not None:
        command += ["--state-file", str(state_file)]
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"listening on (http://\S+)", line)
    if match is None:
        process.kill()
        _, errors = process.communicate(timeout=10)
        raise AssertionError(f"the fake GitHub did not start: {line}{errors}")
    return process, RemoteFakeGitHub(match.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m testing.fake_github",
        description="Serve a stateful fake of GitHub's REST API for one repository.",
    )
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--token",
        default=os.environ.get("FAKE_GITHUB_TOKEN", "test-token"),
        help="the token it accepts (default: $FAKE_GITHUB_TOKEN or test-token)",
    )
    parser.add_argument("--login", default="github-actions[bot]", help="the token's user")
    parser.add_argument("--api-prefix", default="", help="serve the API below it: /api/v3")
    parser.add_argument("--state-file", type=Path, help="load from and save the state here")
    parser.add_argument("--git-dir", type=Path, help="the bare repository pull requests read")
    args = parser.parse_args(argv)
    try:
        fake = FakeGitHub(
            args.repo,
            args.token,
            login=args.login,
            host=args.host,
            port=args.port,
            state_file=args.state_file,
            api_prefix=args.api_prefix,
            git_dir=args.git_dir,
        )
    except (ValueError, OSError) as error:
        print(f"fake_github: {error}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: object) -> None:
        fake.shutdown()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        fake.bind()
    except OSError as error:
        print(f"fake_github: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 2
    print(f"fake GitHub for {fake.repository} listening on {fake.url}", flush=True)
    fake.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
