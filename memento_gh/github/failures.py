"""What a failed request to GitHub means, as one sentence a user can act on: what failed,
why (GitHub's own words, quoted), and what to do, naming the setting or the permission to
change; whether waiting could help, and how long GitHub asked to wait. Pure: the answer's
status, body and headers in, the time passed in; the token never appears.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from http import HTTPStatus
from typing import Any, NamedTuple

from memento_gh.errors import UserError
from memento_gh.github import guidance

#: GitHub's own words for the refusals memento answers by itself (``delivery.py``).
PULLS_NOT_PERMITTED = "GitHub Actions is not permitted to create or approve pull requests"
NO_DRAFTS = "Draft pull requests are not supported in this repository"


class SyncError(UserError):
    """A GitHub API call failed; the message says which, why, and what to do. ``status``
    and ``said`` are GitHub's answer (None: no answer came), for a caller that answers a
    refusal by itself."""

    def __init__(self, message: str, *, status: int | None = None, said: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.said = said


class Answer(NamedTuple):
    """GitHub's answer to a request that failed."""

    status: int
    data: Any  # the JSON body (a dict), or the text of an error page
    message: str | None  # what the client made of it
    headers: Mapping[str, str]


class Where(NamedTuple):
    """The repository, and the API it is reached at, as the messages name them."""

    repository: str
    api_url: str


class Failure(NamedTuple):
    """What went wrong with one attempt, what to do, and whether waiting could help."""

    happened: str
    advice: str
    transient: bool = False  # trying again later may succeed
    wait: float | None = None  # how long GitHub asked to wait (None: our backoff)
    unsure: bool = False  # GitHub may have carried the request out anyway
    status: int | None = None  # GitHub's status (None: no answer)
    said: str = ""  # GitHub's message

    def text(self, attempts: int) -> str:
        tried = f" (tried {attempts} times)" if attempts > 1 else ""
        advice = self.advice
        if self.unsure:
            advice = "GitHub may have done it anyway, so the next run looks before doing it again"
        return f"{self.happened}{tried}: {advice}"


def unreachable(what: str, error: str, where: Where, *, unsure: bool) -> Failure:
    """No answer at all (a refused connection, a timeout): ``error`` names the exception."""
    return Failure(
        f"could not reach GitHub's API at {where.api_url} while {what} ({error})",
        "check GITHUB_API_URL and the network; the next run tries again",
        transient=True,
        unsure=unsure,
    )


def answered(what: str, answer: Answer, where: Where, *, unsure: bool, now: float) -> Failure:
    """The failure GitHub's ``answer`` to ``what`` means (``now``: seconds since the epoch)."""
    status, message = answer.status, message_of(answer)
    headers = {key.lower(): value for key, value in answer.headers.items()}
    if status in (403, 429) and _rate_limited(message, headers):
        failure = _rate_limit(what, status, message, rate_limit_wait(headers, now), now)
    elif status >= 500:
        failure = Failure(
            f"GitHub answered {status} {message} while {what}",
            "GitHub is having trouble; the next run tries again",
            transient=True,
            unsure=unsure,
        )
    else:
        failure = _refusal(what, status, message, answer, where)
    return failure._replace(status=status, said=message)


def _refusal(what: str, status: int, message: str, answer: Answer, where: Where) -> Failure:
    """A failure that waiting does not mend: the advice says what to change."""
    repository = where.repository
    if status == 401:
        return Failure(
            f"GitHub refused the token while {what} (401 {message})",
            f"pass a valid token for {repository} as the action's `github-token` "
            f"input (or MEMENTO_GITHUB_TOKEN), and check that it has not expired",
        )
    if status == 403 and message.startswith(PULLS_NOT_PERMITTED):
        return Failure(
            f"GitHub refused {what} (403 “{message}.”)",
            f"{guidance.PULLS_SETTING_ADVICE}, or set the action's `pull-request: off`",
        )
    if status == 403:
        scope = "pull-requests" if "pull request" in what else "issues"
        return Failure(
            f"GitHub refused {what} (403 {message})",
            f"the token needs the `{scope}: write` permission on {repository}: add "
            f"`permissions: {scope}: write` to the workflow, or use a token that has it",
        )
    if status == 404:
        return Failure(
            f"GitHub found nothing while {what} (404 {message})",
            f"check that {repository} (GITHUB_REPOSITORY) exists, that "
            f"GITHUB_API_URL ({where.api_url}) is its API, and that the token can read it",
        )
    if status == 410:
        return Failure(
            f"issues are turned off in {repository} (410 while {what})",
            "turn them on in the repository's Settings, under Features",
        )
    if status == 422 and message.startswith(NO_DRAFTS):
        return Failure(
            f"GitHub rejected {what} (422 “{message}.”)",
            f"{guidance.DRAFTS_ADVICE}, or set the action's `pull-request: ready`",
        )
    if status == 422:
        return Failure(
            f"GitHub rejected {what} (422 {message}{_details(answer.data)})",
            "GitHub's words above say what it refused; if memento-gh wrote it, please "
            "report it with this message",
        )
    return Failure(
        f"GitHub answered {status} {message} while {what}",
        "the next run tries again; if this repeats, please report it",
    )


def _rate_limit(what: str, status: int, message: str, wait: float, now: float) -> Failure:
    when = datetime.fromtimestamp(now + wait, timezone.utc).strftime("%H:%M:%S UTC")
    # A secondary limit (too many requests at once, not in the hour) says so in its text.
    happened = (
        f"GitHub's secondary rate limit stopped {what} ({status} “{message}.”)"
        if "secondary rate limit" in message
        else f"GitHub's API rate limit is used up ({status} while {what})"
    )
    return Failure(
        happened,
        f"retry after {when} (in {round(wait)} seconds); the next scheduled run catches up",
        transient=True,
        wait=wait,
    )


def message_of(answer: Answer) -> str:
    data = answer.data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"]).strip().rstrip(".")
    if isinstance(answer.message, str) and answer.message:
        return answer.message
    try:
        return HTTPStatus(answer.status).phrase  # an HTML error page, say
    except ValueError:
        return "(no message)"


def _details(data: Any) -> str:
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list) or not errors:
        return ""
    parts = []
    for item in errors:
        if isinstance(item, dict) and isinstance(item.get("message"), str):
            parts.append(f"“{item['message']}”")  # GitHub's own words: "Body is too long (…)"
        elif isinstance(item, dict):
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


def rate_limit_wait(headers: Mapping[str, str], now: float) -> float:
    """Seconds until GitHub takes requests again, as GitHub's documentation says to read
    them: ``retry-after``; else, when no request is left (``x-ratelimit-remaining: 0``),
    the reset time; else (a secondary rate limit) at least a minute. The reset time of a
    secondary limit is the hour's, which has nothing to do with it."""
    retry_after = headers.get("retry-after", "")
    if retry_after.strip().isdigit():
        return float(retry_after)
    reset = headers.get("x-ratelimit-reset", "")
    if headers.get("x-ratelimit-remaining", "").strip() == "0" and reset.strip().isdigit():
        return max(float(reset) - now, 0.0) + 1.0
    return 60.0
