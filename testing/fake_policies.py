"""GitHub's policies, in the fake (mixed into ``FakeGitHub``): what GitHub refuses, and to
whom, beyond the shapes of its answers. Each policy is a switch of :meth:`set_policy` whose
default is what GitHub does for a new repository:

=========================  =========  ========================================================
``actions_may_open_pulls`` ``False``  Settings → Actions → General → Workflow permissions →
                                      "Allow GitHub Actions to create and approve pull
                                      requests", off for new repositories since 2022: the
                                      workflow's token gets 403 from ``POST /pulls``
``private``                ``False``  the repository's visibility
``plan``                   ``free``   the owner's plan: free, pro, team or enterprise; a draft
                                      pull request in a private repository needs team or
                                      enterprise (422 otherwise)
``body_limit``             ``65536``  the longest issue, comment or pull-request body, counted
                                      in UTF-8 bytes (GitHub says characters; one report says
                                      bytes, so the fake takes the stricter reading)
``workflow_token_limit``   ``1000``   the workflow's ``GITHUB_TOKEN``'s requests per hour
                                      (other tokens: 5,000), in the rate-limit headers
=========================  =========  ========================================================

Organisation members (:meth:`add_member`) keep their membership private unless told
otherwise, as GitHub's default is, so their comments carry ``CONTRIBUTOR`` or ``NONE``, not
``MEMBER``; their permission on the repository is what the collaborator-permission API
answers. Branches are protected with :meth:`protect_branch`: ``GET /branches/{b}`` and
``GET /rules/branches/{b}`` say so, and the bare origin (``git_dir``) refuses force pushes
to it (``testing/fake_origin.py`` holds its pre-receive hook, which also refuses the
workflow's token any change of ``.github/workflows/``). ``POST /dispatches`` records a
``repository_dispatch`` event (:meth:`dispatches`), as GitHub starts a workflow run for it.
:meth:`secondary_rate_limit` answers GitHub's secondary rate limit: a 403 with no
``retry-after`` and requests left in the hour.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

JSON = dict[str, Any]

PLANS = ("free", "pro", "team", "enterprise")
DEFAULT_POLICIES: JSON = {
    "actions_may_open_pulls": False,
    "private": False,
    "plan": "free",
    "body_limit": 65536,
    "workflow_token_limit": 1000,
}
#: The login of the workflow's GITHUB_TOKEN.
ACTIONS_LOGIN = "github-actions[bot]"
OTHER_TOKEN_LIMIT = 5000
PULLS_DOCS = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
NOT_PERMITTED = "GitHub Actions is not permitted to create or approve pull requests."
NO_DRAFTS = "Draft pull requests are not supported in this repository."
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
    "again. If you reach out to GitHub Support for help, please include the request ID {id}."
)
#: The requests that carry a body, and the resource GitHub names when it is too long.
_BODIES = (
    ("POST", re.compile(r"/issues"), "Issue"),
    ("PATCH", re.compile(r"/issues/\d+"), "Issue"),
    ("POST", re.compile(r"/issues/\d+/comments"), "IssueComment"),
    ("PATCH", re.compile(r"/issues/comments/\d+"), "IssueComment"),
    ("POST", re.compile(r"/pulls"), "PullRequest"),
    ("PATCH", re.compile(r"/pulls/\d+"), "PullRequest"),
)


class PoliciesMixin:
    """GitHub's policies; ``FakeGitHub`` provides the state and the helpers."""

    _state: JSON
    _lock: Any
    _acting: str
    _faults: list[JSON]
    git_dir: Path | None
    repository: str
    token: str
    login: str

    if TYPE_CHECKING:  # what FakeGitHub defines, typed for the mixin's own use

        def _save(self) -> None: ...
        def _user(self, login: str, type: str | None = None) -> JSON: ...
        def _render_user(self, login: str, user: JSON) -> JSON: ...
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
        ) -> None: ...

        @property
        def repo_url(self) -> str: ...

        @property
        def web_url(self) -> str: ...

    # -- the switches ----------------------------------------------------------------------

    def policies(self) -> JSON:
        """The policies in force: :data:`DEFAULT_POLICIES` with what tests changed."""
        with self._lock:
            return {**DEFAULT_POLICIES, **self._state.get("policies", {})}

    def set_policy(self, **changes: Any) -> JSON:
        """Change policies by name (see the module's table); returns them all."""
        unknown = sorted(set(changes) - set(DEFAULT_POLICIES))
        if unknown:
            raise ValueError(f"no policy {', '.join(unknown)}; use {', '.join(DEFAULT_POLICIES)}")
        if "plan" in changes and changes["plan"] not in PLANS:
            raise ValueError(f"plan must be one of {', '.join(PLANS)}")
        with self._lock:
            self._state.setdefault("policies", {}).update(changes)
            self._save()
        return self.policies()

    def add_member(
        self,
        login: str,
        *,
        permission: str = "read",
        public: bool = False,
        contributor: bool = False,
    ) -> None:
        """Make ``login`` a member of the organisation that owns the repository, with
        ``permission`` on it (an organisation's base permission is read). Membership is
        private by default, as GitHub's is: the member's comments then say ``CONTRIBUTOR``
        (``contributor``: they have commits here) or ``NONE``."""
        with self._lock:
            self._user(login)
            self._state.setdefault("members", {})[login] = {
                "public": public,
                "contributor": contributor,
            }
            self._state["permissions"][login] = permission
            self._save()

    def protect_branch(self, branch: str, *, ruleset: bool = False) -> None:
        """Protect ``branch``: no force push, no deletion (a branch protection rule, or with
        ``ruleset`` a ruleset's "Block force pushes"). The origin's hook enforces it."""
        with self._lock:
            self._state.setdefault("protected", {})[branch] = {"ruleset": ruleset}
            self._save()
        if self.git_dir is not None:
            key = "fake.ruleset" if ruleset else "fake.protected"
            subprocess.run(
                ["git", "config", "--add", key, branch], cwd=self.git_dir, check=True, timeout=30
            )

    def secondary_rate_limit(self, method: str, path: str, *, times: int = 1) -> None:
        """The next ``times`` matching requests answer GitHub's secondary rate limit."""
        self._add_fault(method, path, 403, times, False, rate_limit=False, retry_after=None)
        with self._lock:
            self._faults[-1]["secondary"] = True

    def dispatches(self) -> list[JSON]:
        """The ``repository_dispatch`` events created, oldest first: {event_type,
        client_payload, sender}."""
        with self._lock:
            return [dict(event) for event in self._state.get("dispatches", [])]

    # -- what the policies refuse ----------------------------------------------------------

    def _police(self, method: str, rest: str, body: Any) -> None:
        """Refuse what GitHub's policies refuse, before the request is carried out."""
        from testing.fake_github import _Problem

        policies = self.policies()
        text = body.get("body") if isinstance(body, dict) else None
        resource = next(
            (name for verb, path, name in _BODIES if verb == method and path.fullmatch(rest)),
            None,
        )
        limit = int(policies["body_limit"])
        if resource and isinstance(text, str) and len(text.encode("utf-8")) > limit:
            error = {
                "resource": resource,
                "code": "unprocessable",
                "field": "data",
                "message": f"Body is too long (maximum is {limit} characters)",
            }
            raise _Problem(422, "Validation Failed", [error])
        if (method, rest) != ("POST", "/pulls"):
            return
        if self._acting == ACTIONS_LOGIN and not policies["actions_may_open_pulls"]:
            raise _Problem(403, NOT_PERMITTED)
        drafts = not policies["private"] or policies["plan"] in ("team", "enterprise")
        if isinstance(body, dict) and body.get("draft") and not drafts:
            raise _Problem(422, NO_DRAFTS)

    def _member_association(self, login: str) -> str | None:
        member = self._state.get("members", {}).get(login)
        if member is None:
            return None
        if member["public"]:
            return "MEMBER"
        return "CONTRIBUTOR" if member["contributor"] else "NONE"

    def _rate_limit_of(self, headers: dict[str, str]) -> int:
        value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        credential = value.strip().partition(" ")[2].strip()
        if credential == self.token and self.login == ACTIONS_LOGIN:
            return int(self.policies()["workflow_token_limit"])
        return OTHER_TOKEN_LIMIT

    def _used(self) -> int:
        return int(self._state["requests"]["total"])

    def _graph_viewer(self) -> JSON:
        """GraphQL's ``viewer`` is a ``User!`` in GitHub's schema, whatever the token: an
        app's token (the workflow's) answers a User whose login ends in ``[bot]``."""
        return {
            "__typename": "User",
            "login": self._acting,
            "url": f"{self.web_url}/{self._acting}",
        }

    # -- endpoints -------------------------------------------------------------------------

    def _create_dispatch(self, *, query: dict[str, str], body: JSON | None) -> Any:
        """``POST /dispatches``: a ``repository_dispatch`` event; 204, as GitHub answers."""
        from testing.fake_github import Response, _invalid, _Problem

        body = body or {}
        event_type = body.get("event_type")
        if not isinstance(event_type, str) or not event_type or len(event_type) > 100:
            raise _Problem(422, "Validation Failed", [_invalid("Dispatch", "event_type")])
        payload = body.get("client_payload", {})
        if not isinstance(payload, dict) or len(payload) > 10:
            raise _Problem(422, "Validation Failed", [_invalid("Dispatch", "client_payload")])
        event = {"event_type": event_type, "client_payload": payload, "sender": self._acting}
        self._state.setdefault("dispatches", []).append(event)
        return Response(204, None)

    def _get_branch(self, branch: str, *, query: dict[str, str], body: JSON | None) -> Any:
        """``GET /branches/{branch}``: its head and whether it is protected (the fields a
        client with contents: read sees)."""
        from testing.fake_github import Response, _Problem

        sha = self._branch_sha(branch)
        if sha is None:
            raise _Problem(404, "Branch not found")
        protected = branch in self._state.get("protected", {})
        url = f"{self.repo_url}/branches/{branch}"
        return Response(
            200,
            {
                "name": branch,
                "commit": {"sha": sha, "url": f"{self.repo_url}/commits/{sha}"},
                "protected": protected,
                "protection": {"enabled": protected, "required_status_checks": None},
                "protection_url": f"{url}/protection",
                "_links": {"self": url, "html": f"{self.web_url}/{self.repository}/tree/{branch}"},
            },
        )

    def _branch_rules(self, branch: str, *, query: dict[str, str], body: JSON | None) -> Any:
        """``GET /rules/branches/{branch}``: the active rules (a ruleset's; metadata: read)."""
        from testing.fake_github import Response

        found = self._state.get("protected", {}).get(branch)
        rules: list[JSON] = []
        if found is not None and found["ruleset"]:
            source = {"ruleset_source_type": "Repository", "ruleset_source": self.repository}
            rules = [
                {"type": kind, **source, "ruleset_id": 1}
                for kind in ("deletion", "non_fast_forward")
            ]
        return Response(200, rules)

    def _branch_sha(self, branch: str) -> str | None:
        if self.git_dir is None:
            return None
        done = subprocess.run(
            ["git", "rev-parse", "-q", "--verify", f"refs/heads/{branch}"],
            cwd=self.git_dir,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        return done.stdout.strip() or None


ROUTES = (
    ("POST", r"/dispatches", PoliciesMixin._create_dispatch),
    ("GET", r"/branches/([^/]+)", PoliciesMixin._get_branch),
    ("GET", r"/rules/branches/([^/]+)", PoliciesMixin._branch_rules),
)
