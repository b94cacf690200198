"""GitHub's answers as memento reads them: plain records built from the JSON GitHub sent,
never a request of their own. Pure: a field GitHub left out gets a harmless default (an
empty body, a ghost login), so an answer never crashes a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, NamedTuple

from memento_gh.github.boxes import History, Revision
from memento_gh.github.ci import Check
from memento_gh.github.events import Actor

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


class SetupFacts(NamedTuple):
    """What the repository says of memento's set-up (``GitHub.setup_facts``)."""

    has_issues: bool
    can_push: bool | None  # None: GitHub does not say it of an app's token (the workflow's)
    force_blocked: bool  # the branch refuses force pushes (a protection rule, or a ruleset)


class Comment(NamedTuple):
    id: int
    issue_number: int
    body: str
    login: str
    association: str  # OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
    is_bot: bool
    url: str  # the page people open (html_url)
    created: datetime  # aware, UTC


def issue_of(raw: Mapping[str, Any]) -> Issue:
    return Issue(
        number=int(raw["number"]),
        title=str(raw.get("title") or ""),
        body=str(raw.get("body") or ""),
        state=str(raw.get("state") or "open"),
        labels=tuple(str(label["name"]) for label in raw.get("labels") or ()),
        url=str(raw.get("html_url") or ""),
    )


def listed_pull_of(raw: Mapping[str, Any]) -> PullRequest:
    links = raw.get("pull_request") or {}
    return PullRequest(
        number=int(raw["number"]),
        body=str(raw.get("body") or ""),
        state=str(raw.get("state") or "open"),
        draft=bool(raw.get("draft")),
        merged=bool(links.get("merged_at")),
        url=str(raw.get("html_url") or ""),
    )


def pull_of(raw: Mapping[str, Any]) -> PullRequest:
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


def check_run_of(raw: Mapping[str, Any]) -> Check:
    output = raw.get("output") or {}
    return Check(
        name=str(raw.get("name") or "a check"),
        done=raw.get("status") == "completed",
        conclusion=str(raw["conclusion"]) if raw.get("conclusion") else None,
        summary=str(output.get("summary") or output.get("title") or ""),
        url=str(raw.get("details_url") or raw.get("html_url") or ""),
    )


def status_of(raw: Mapping[str, Any]) -> Check:
    state = str(raw.get("state") or "pending")
    return Check(
        name=str(raw.get("context") or "a status"),
        done=state != "pending",
        conclusion=None if state == "pending" else state,
        summary=str(raw.get("description") or ""),
        url=str(raw.get("target_url") or ""),
    )


def comment_of(raw: Mapping[str, Any]) -> Comment:
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
        created=time_of(str(raw["created_at"])),
    )


def history_of(data: Mapping[str, Any]) -> History:
    issue = ((data.get("data") or {}).get("repository") or {}).get("issue") or {}
    edits = issue.get("userContentEdits") or {}
    nodes = [node for node in edits.get("nodes") or () if isinstance(node, dict)]
    # GitHub lists them newest first; by time, oldest first (a stable sort keeps GitHub's
    # order for two edits of one second).
    nodes.reverse()
    nodes.sort(key=lambda node: time_of(str(node.get("editedAt") or "1970-01-01T00:00:00Z")))
    revisions = tuple(
        Revision(
            edit=str(node.get("id") or ""),
            editor=actor_of(node.get("editor")),
            body=node["diff"] if isinstance(node.get("diff"), str) else None,
        )
        for node in nodes
    )
    has_more = bool((edits.get("pageInfo") or {}).get("hasNextPage"))
    return History(
        body=str(issue.get("body") or ""),
        author=actor_of(issue.get("author")),
        revisions=revisions,
        complete=not has_more,
    )


def actor_of(raw: Any) -> Actor | None:
    """A GraphQL actor; None for a deleted account (GitHub answers null)."""
    if not isinstance(raw, dict) or not raw.get("login"):
        return None
    login = str(raw["login"])
    # GraphQL's `viewer` is a User even for an app's token, whose login ends in "[bot]".
    is_bot = raw.get("__typename") == "Bot" or login.endswith("[bot]")
    # GraphQL names a bot without the "[bot]" its REST login carries.
    return Actor(f"{login}[bot]" if is_bot and not login.endswith("[bot]") else login, None, is_bot)


def time_of(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)
