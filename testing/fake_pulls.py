"""The fake GitHub's pull requests and commit checks (mixed into ``FakeGitHub``).

A pull request is an issue with a ``pull`` record, as on GitHub: it shares the issues'
numbers, shows in the issue listing (with ``pull_request``) and takes issue edits (labels,
body). Its record holds the head and base branches, ``draft``, the requested reviewers and,
once merged, ``merged_at``, ``merged_by``, ``merge_commit_sha`` and the head SHA it was
merged at. The fake knows no git by itself: given ``git_dir`` (the bare origin), an open
pull request's head SHA and a ref in a commit URL are read from it; a test playing the user
merges on that repository, then tells the fake with :meth:`PullsMixin.merge_pull`.

Checks are seeded per commit SHA (:meth:`add_check_run`, :meth:`add_status`) and answered
by ``GET /commits/{ref}/check-runs`` and ``GET /commits/{ref}/status`` (the combined state,
worked out as GitHub does: any failure or error fails, any pending is pending, else success).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

JSON = dict[str, Any]
_SHA = re.compile(r"[0-9a-f]{40}")
CHECK_STATUSES = ("queued", "in_progress", "completed")
CONCLUSIONS = (
    "success",
    "failure",
    "neutral",
    "cancelled",
    "skipped",
    "timed_out",
    "action_required",
)
STATUS_STATES = ("error", "failure", "pending", "success")
MERGE_METHODS = ("merge", "squash", "rebase")


class PullsMixin:
    """Pull requests and checks; ``FakeGitHub`` provides the state and the helpers."""

    _state: JSON
    _lock: Any
    _acting: str
    git_dir: Path | None
    repository: str

    if TYPE_CHECKING:  # what FakeGitHub defines, typed for the mixin's own use

        def _save(self) -> None: ...
        def _next_id(self) -> int: ...
        def _find_issue(self, number: int) -> JSON | None: ...
        def _user(self, login: str, type: str | None = None) -> JSON: ...
        def _render_user(self, login: str, user: JSON) -> JSON: ...
        def _render_issue(self, issue: JSON) -> JSON: ...
        def _association(self, login: str) -> str: ...
        def _revise(self, issue: JSON, body: str | None, editor: str, when: str) -> None: ...
        def _paginate(self, items: list[JSON], route: str, query: dict[str, str]) -> Any: ...
        def _new_issue(
            self,
            title: str,
            body: str | None,
            labels: list[str],
            author: str,
            association: str | None,
            created: str,
            updated: str,
        ) -> JSON: ...

        @property
        def repo_url(self) -> str: ...

        @property
        def web_url(self) -> str: ...

    # -- seeding and playing the user ------------------------------------------------------

    def merge_pull(
        self,
        number: int,
        merge_commit_sha: str,
        *,
        head_sha: str | None = None,
        method: str = "merge",
        merged_by: str = "alice",
    ) -> JSON:
        """Mark pull request ``number`` merged, as GitHub does once the user merged it:
        closed, ``merged``, with the merge commit (for a squash the squashed commit, for a
        rebase the last rebased one) and the head SHA it was merged at (default: the head
        branch's tip in ``git_dir``)."""
        if method not in MERGE_METHODS:
            raise ValueError(f"method must be one of {', '.join(MERGE_METHODS)}")
        with self._lock:
            issue = self._pull_or_error(number)
            if issue["state"] != "open":
                raise ValueError(f"pull request #{number} is not open")
            pull = issue["pull"]
            head = head_sha or self._resolve(pull["head"])
            if head is None:
                raise ValueError("head_sha is needed when the fake has no git_dir")
            now = _now_stamp()
            pull.update(
                merged=True,
                merged_at=now,
                merged_by=merged_by,
                merge_commit_sha=merge_commit_sha,
                head_sha=head,
                method=method,
            )
            self._user(merged_by)
            issue.update(state="closed", closed_at=now, closed_by=merged_by, updated_at=now)
            self._save()
            return self._render_pull(issue)

    def add_check_run(
        self,
        sha: str,
        name: str,
        *,
        status: str = "completed",
        conclusion: str | None = "success",
        title: str | None = None,
        summary: str | None = None,
        details_url: str | None = None,
    ) -> JSON:
        """A check run (a CI job) on commit ``sha``; ``conclusion`` only once completed."""
        if status not in CHECK_STATUSES:
            raise ValueError(f"status must be one of {', '.join(CHECK_STATUSES)}")
        if status == "completed" and conclusion not in CONCLUSIONS:
            raise ValueError(f"conclusion must be one of {', '.join(CONCLUSIONS)}")
        with self._lock:
            ident = self._next_id()
            run = {
                "id": ident,
                "head_sha": sha,
                "name": name,
                "status": status,
                "conclusion": conclusion if status == "completed" else None,
                "title": title,
                "summary": summary,
                "details_url": details_url or f"{self.web_url}/{self.repository}/runs/{ident}",
                "started_at": _now_stamp(),
                "completed_at": _now_stamp() if status == "completed" else None,
            }
            self._state.setdefault("check_runs", []).append(run)
            self._save()
            return self._render_check_run(run)

    def add_status(
        self,
        sha: str,
        context: str,
        state: str,
        *,
        description: str | None = None,
        target_url: str | None = None,
    ) -> JSON:
        """A commit status (the older API a CI may report through) on commit ``sha``."""
        if state not in STATUS_STATES:
            raise ValueError(f"state must be one of {', '.join(STATUS_STATES)}")
        with self._lock:
            status = {
                "id": self._next_id(),
                "sha": sha,
                "context": context,
                "state": state,
                "description": description,
                "target_url": target_url,
                "created_at": _now_stamp(),
            }
            self._state.setdefault("statuses", []).append(status)
            self._save()
            return self._render_status(status)

    def pulls(self) -> list[JSON]:
        """Every pull request as ``GET /pulls/{n}`` renders it, by number."""
        with self._lock:
            return [
                self._render_pull(issue)
                for issue in self._state["issues"]
                if issue["pull_request"] and "pull" in issue
            ]

    # -- endpoints -------------------------------------------------------------------------

    def _list_pulls(self, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import _invalid, _Problem

        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise _Problem(422, "Validation Failed", [_invalid("PullRequest", "state")])
        head = query.get("head")
        owner = self.repository.split("/")[0]
        if head is not None and ":" in head:
            head_owner, _, head = head.partition(":")
            if head_owner.lower() != owner.lower():
                head = "\0"  # a fork's branch: none here
        base = query.get("base")
        found = [
            issue
            for issue in self._state["issues"]
            if "pull" in issue
            and (state == "all" or issue["state"] == state)
            and (head is None or issue["pull"]["head"] == head)
            and (base is None or issue["pull"]["base"] == base)
        ]
        sort = query.get("sort", "created")
        if sort not in ("created", "updated", "popularity", "long-running"):
            raise _Problem(422, "Validation Failed", [_invalid("PullRequest", "sort")])
        field = "updated_at" if sort == "updated" else "created_at"
        default = "asc" if sort == "long-running" else "desc"
        found.sort(
            key=lambda issue: (issue[field], issue["number"]),
            reverse=query.get("direction", default) != "asc",
        )
        return self._paginate([self._render_pull(i) for i in found], "/pulls", query)

    def _create_pull(self, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import Response, _invalid, _Problem

        body = body or {}
        title, head, base = body.get("title"), body.get("head"), body.get("base")
        for name, value in (("title", title), ("head", head), ("base", base)):
            if not isinstance(value, str) or not value:
                raise _Problem(
                    422, "Validation Failed", [_invalid("PullRequest", name, "missing_field")]
                )
        assert isinstance(title, str) and isinstance(head, str) and isinstance(base, str)
        head = head.partition(":")[2] or head
        if self.git_dir is not None:
            for name, branch in (("head", head), ("base", base)):
                if self._resolve(branch) is None:
                    raise _Problem(422, "Validation Failed", [_invalid("PullRequest", name)])
        for issue in self._state["issues"]:
            pull = issue.get("pull")
            if pull and issue["state"] == "open" and (pull["head"], pull["base"]) == (head, base):
                message = f"A pull request already exists for {self._owner()}:{head}."
                error = {"resource": "PullRequest", "code": "custom", "message": message}
                raise _Problem(422, "Validation Failed", [error])
        text = body.get("body")
        now = _now_stamp()
        author = self._acting
        issue = self._new_issue(title, text, [], author, self._association(author), now, now)
        issue["pull_request"] = True
        issue["pull"] = {
            "head": head,
            "base": base,
            "draft": bool(body.get("draft", False)),
            "merged": False,
            "merged_at": None,
            "merged_by": None,
            "merge_commit_sha": None,
            "head_sha": None,
            "method": None,
            "requested_reviewers": [],
        }
        rendered = self._render_pull(issue)
        return Response(201, rendered, {"Location": rendered["url"]})

    def _get_pull(self, number: str, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import Response

        return Response(200, self._render_pull(self._pull_or_404(number)))

    def _edit_pull(self, number: str, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import Response, _invalid, _Problem

        issue = self._pull_or_404(number)
        body = body or {}
        now = _now_stamp()
        if "title" in body:
            if not isinstance(body["title"], str) or not body["title"]:
                raise _Problem(422, "Validation Failed", [_invalid("PullRequest", "title")])
            issue["title"] = body["title"]
        if "body" in body:
            self._revise(issue, body["body"], self._acting, now)
        if "base" in body:
            issue["pull"]["base"] = str(body["base"])
        if "state" in body:
            if body["state"] not in ("open", "closed"):
                raise _Problem(422, "Validation Failed", [_invalid("PullRequest", "state")])
            if issue["pull"]["merged"] and body["state"] == "open":
                raise _Problem(422, "Validation Failed", [_invalid("PullRequest", "state")])
            closed = body["state"] == "closed"
            issue.update(
                state=body["state"],
                closed_at=now if closed else None,
                closed_by=self._acting if closed else None,
            )
        issue["updated_at"] = now
        return Response(200, self._render_pull(issue))

    def _request_reviewers(self, number: str, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import Response, _invalid, _Problem

        issue = self._pull_or_404(number)
        reviewers = (body or {}).get("reviewers") or []
        if not isinstance(reviewers, list) or not all(isinstance(r, str) for r in reviewers):
            raise _Problem(422, "Validation Failed", [_invalid("PullRequest", "reviewers")])
        for login in reviewers:
            if login not in self._state["permissions"]:
                message = "Reviews may only be requested from collaborators."
                raise _Problem(422, message)
            if login not in issue["pull"]["requested_reviewers"]:
                issue["pull"]["requested_reviewers"].append(login)
        return Response(201, self._render_pull(issue))

    def _list_requested_reviewers(
        self, number: str, *, query: dict[str, str], body: JSON | None
    ) -> Any:
        from testing.fake_github import Response

        issue = self._pull_or_404(number)
        users = [
            self._render_user(login, self._user(login))
            for login in issue["pull"]["requested_reviewers"]
        ]
        return Response(200, {"users": users, "teams": []})

    def _get_commit(self, ref: str, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import Response

        sha = self._commit_or_422(ref)
        return Response(
            200,
            {
                "sha": sha,
                "node_id": f"C_fake{sha[:12]}",
                "url": f"{self.repo_url}/commits/{sha}",
                "html_url": f"{self.web_url}/{self.repository}/commit/{sha}",
                "commit": {"message": "", "tree": {"sha": "0" * 40}},
                "parents": [],
                "files": [],
            },
        )

    def _check_runs(self, ref: str, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import Response

        sha = self._commit_or_422(ref)
        found = [run for run in self._state.get("check_runs", []) if run["head_sha"] == sha]
        if query.get("filter", "latest") == "latest":
            # GitHub's default: the newest run of each name (a re-run replaces the last).
            latest = {run["name"]: run for run in found}
            found = [run for run in found if latest[run["name"]] is run]
        runs = [self._render_check_run(run) for run in reversed(found)]  # newest first
        return Response(200, {"total_count": len(runs), "check_runs": runs})

    def _combined_status(self, ref: str, *, query: dict[str, str], body: JSON | None) -> Any:
        from testing.fake_github import Response

        sha = self._commit_or_422(ref)
        latest: dict[str, JSON] = {}
        for status in self._state.get("statuses", []):
            if status["sha"] == sha:
                latest[status["context"]] = status  # the newest status of each context counts
        states = {status["state"] for status in latest.values()}
        # The statuses come a page at a time, like a list's (30 unless per_page says more,
        # up to 100); the state and total_count are of them all.
        per_page = min(max(int(query.get("per_page") or 30), 1), 100)
        page = max(int(query.get("page") or 1), 1)
        shown = list(latest.values())[(page - 1) * per_page : page * per_page]
        if states & {"error", "failure"}:
            combined = "failure"
        elif "pending" in states or not states:
            combined = "pending"
        else:
            combined = "success"
        return Response(
            200,
            {
                "state": combined,
                "sha": sha,
                "total_count": len(latest),
                "statuses": [self._render_status(status) for status in shown],
                "commit_url": f"{self.repo_url}/commits/{sha}",
                "url": f"{self.repo_url}/commits/{sha}/status",
            },
        )

    def _create_status(self, sha: str, *, query: dict[str, str], body: JSON | None) -> Any:
        """``POST /statuses/{sha}``: a commit status, by the token's user, as a CI (or
        memento itself) reports one. The newest of each context is the one that counts."""
        from testing.fake_github import Response, _invalid, _Problem

        body = body or {}
        state, context = body.get("state"), body.get("context", "default")
        if state not in STATUS_STATES:
            raise _Problem(422, "Validation Failed", [_invalid("Status", "state")])
        if not isinstance(context, str) or not context:
            raise _Problem(422, "Validation Failed", [_invalid("Status", "context")])
        description = body.get("description")
        if description is not None and (not isinstance(description, str) or len(description) > 140):
            raise _Problem(422, "Validation Failed", [_invalid("Status", "description")])
        found = self._commit_or_422(sha)
        if self.git_dir is not None and not _in_repository(self.git_dir, found):
            raise _Problem(422, f"No commit found for SHA: {sha}")
        status = {
            "id": self._next_id(),
            "sha": found,
            "context": context,
            "state": state,
            "description": description,
            "target_url": body.get("target_url"),
            "created_at": _now_stamp(),
            "creator": self._acting,
        }
        self._state.setdefault("statuses", []).append(status)
        return Response(201, self._render_status(status))

    def _list_statuses(self, ref: str, *, query: dict[str, str], body: JSON | None) -> Any:
        """``GET /commits/{ref}/statuses`` (or ``/statuses/{ref}``): every status on the
        commit, newest first."""
        sha = self._commit_or_422(ref)
        found = [s for s in self._state.get("statuses", []) if s["sha"] == sha]
        rendered = [self._render_status(status) for status in reversed(found)]
        return self._paginate(rendered, f"/commits/{ref}/statuses", query)

    def statuses(self, sha: str) -> list[JSON]:
        """The commit statuses on ``sha``, oldest first, as the API renders them."""
        with self._lock:
            found = [s for s in self._state.get("statuses", []) if s["sha"] == sha]
            return [self._render_status(status) for status in found]

    # -- the GraphQL mutation PyGithub's ``mark_ready_for_review`` sends ---------------------

    def _graph_ready_for_review(self, input: JSON) -> JSON:
        from testing.fake_github import _GraphQLError

        ident = str((input or {}).get("pullRequestId") or "")
        for issue in self._state["issues"]:
            if "pull" in issue and f"PR_fake{issue['id']}" == ident:
                issue["pull"]["draft"] = False
                issue["updated_at"] = _now_stamp()
                return {
                    "__typename": "MarkPullRequestReadyForReviewPayload",
                    "clientMutationId": (input or {}).get("clientMutationId"),
                    "pullRequest": {"__typename": "PullRequest", "isDraft": False},
                }
        raise _GraphQLError(
            f"Could not resolve to a node with the global id of '{ident}'", kind="NOT_FOUND"
        )

    # -- the model -------------------------------------------------------------------------

    def _owner(self) -> str:
        return self.repository.split("/")[0]

    def _resolve(self, ref: str) -> str | None:
        """``ref``'s commit in ``git_dir`` (a SHA is itself), or None."""
        if _SHA.fullmatch(ref):
            return ref
        if self.git_dir is None:
            return None
        done = subprocess.run(
            ["git", "rev-parse", "-q", "--verify", f"{ref}^{{commit}}"],
            cwd=self.git_dir,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        return done.stdout.strip() or None

    def _commit_or_422(self, ref: str) -> str:
        from testing.fake_github import _Problem

        sha = self._resolve(ref)
        if sha is None:
            raise _Problem(422, f"No commit found for SHA: {ref}")
        return sha

    def _pull_or_error(self, number: int) -> JSON:
        issue = self._find_issue(int(number))
        if issue is None or "pull" not in issue:
            raise ValueError(f"no pull request #{number}")
        return issue

    def _pull_or_404(self, number: str) -> JSON:
        from testing.fake_github import _Problem

        issue = self._find_issue(int(number))
        if issue is None or "pull" not in issue:
            raise _Problem(404, "Not Found")
        return issue

    # -- rendering -------------------------------------------------------------------------

    def _render_pull(self, issue: JSON) -> JSON:
        """A pull request as ``GET /pulls/{n}`` answers it (the fields a client reads)."""
        rendered = self._render_issue(issue)
        pull = issue["pull"]
        number = issue["number"]
        url = f"{self.repo_url}/pulls/{number}"
        head_sha = pull["head_sha"] if pull["merged"] else self._resolve(pull["head"])
        rendered.update(
            url=url,
            node_id=f"PR_fake{issue['id']}",
            issue_url=f"{self.repo_url}/issues/{number}",
            commits_url=f"{url}/commits",
            statuses_url=f"{self.repo_url}/statuses/{head_sha or ''}",
            draft=pull["draft"],
            merged=pull["merged"],
            merged_at=pull["merged_at"],
            merge_commit_sha=pull["merge_commit_sha"],
            merged_by=(
                self._render_user(pull["merged_by"], self._user(pull["merged_by"]))
                if pull["merged_by"]
                else None
            ),
            mergeable=None if pull["merged"] else True,
            requested_reviewers=[
                self._render_user(login, self._user(login)) for login in pull["requested_reviewers"]
            ],
            requested_teams=[],
            head=self._render_ref(pull["head"], head_sha),
            base=self._render_ref(pull["base"], self._resolve(pull["base"])),
        )
        rendered.pop("pull_request", None)
        return rendered

    def _render_ref(self, branch: str, sha: str | None) -> JSON:
        owner = self._owner()
        return {
            "label": f"{owner}:{branch}",
            "ref": branch,
            "sha": sha or "0" * 40,
            "user": self._render_user(owner, self._user(owner)),
            "repo": {"full_name": self.repository, "url": self.repo_url},
        }

    def _render_check_run(self, run: JSON) -> JSON:
        return {
            "id": run["id"],
            "head_sha": run["head_sha"],
            "name": run["name"],
            "status": run["status"],
            "conclusion": run["conclusion"],
            "html_url": run["details_url"],
            "details_url": run["details_url"],
            "url": f"{self.repo_url}/check-runs/{run['id']}",
            "started_at": run["started_at"],
            "completed_at": run["completed_at"],
            "output": {"title": run["title"], "summary": run["summary"], "text": None},
        }

    def _render_status(self, status: JSON) -> JSON:
        return {
            "id": status["id"],
            "state": status["state"],
            "context": status["context"],
            "description": status["description"],
            "target_url": status["target_url"],
            "created_at": status["created_at"],
            "updated_at": status["created_at"],
            "url": f"{self.repo_url}/statuses/{status['sha']}",
            "creator": (
                self._render_user(status["creator"], self._user(status["creator"]))
                if status.get("creator")
                else None
            ),
        }


def _in_repository(git_dir: Path, sha: str) -> bool:
    done = subprocess.run(
        ["git", "cat-file", "-e", f"{sha}^{{commit}}"],
        cwd=git_dir,
        capture_output=True,
        check=False,
        timeout=30,
    )
    return done.returncode == 0


def _now_stamp() -> str:
    from testing.fake_github import _now, _stamp

    return _stamp(None, _now())
