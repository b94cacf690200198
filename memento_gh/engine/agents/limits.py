"""Provider limits: did the agent stop because its provider refused more work (a rate limit,
a used-up quota or plan window, an overloaded model)? Then the task is not at fault, and the
attempt is deferred instead of failed. Pure: the run's exit code and output in, a
:class:`Limit` or None out; the clock is passed in.

Only the agent's own final error counts, in the shape each CLI gives it (measured with the
real CLIs, ``testing/AGENT_FINDINGS.md``): claude's result JSON, codex's ``turn.failed``
event, gemini's last JSON error, aider's last lines, openclaw's ``ok: false`` envelope. A
verify or a tool printing "429", or a task about rate limiting, is none of those; nor is a
timeout. A run that ends 0 is a limit only for aider, which exits 0 after giving up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any, NamedTuple

from memento_gh.engine.agents.cost_reports import json_lines, last_json
from memento_gh.plan.values import format_time

#: The most characters of the agent's words a status entry shows.
WORDS_CHARS = 300
#: The furthest ahead a provider's "try again" time is read: a week's quota and then some.
MOST_WAIT = timedelta(days=31)
#: HTTP statuses that mean "not now": too many requests, unavailable, overloaded.
LIMIT_STATUSES = frozenset({429, 503, 529})


class Limit(NamedTuple):
    """The provider limit an agent stopped at: its own words, and when to try again: a time
    when its words give one that reads reliably (``retry_at``), else its words about it."""

    words: str
    retry_at: datetime | None = None
    retry_words: str | None = None

    @property
    def when(self) -> str | None:
        """When to try again, for a person; None when the agent did not say."""
        if self.retry_at is None:
            return self.retry_words
        return f"{format_time(self.retry_at)} ({self.retry_words})"


def provider_limit(
    agent: str,
    exit_code: int | None,
    timed_out: bool,
    output: str,
    *,
    now: datetime,
    local: tzinfo = timezone.utc,
) -> Limit | None:
    """The provider limit the agent's run ended at, or None. ``agent`` is the preset (or
    ``command``: every known shape is tried); ``now`` reads a relative "retry after 1s";
    ``local`` is the zone a time without one is in (codex says its reset time so)."""
    if timed_out or exit_code is None:
        return None
    name = agent.strip().lower()
    readers = list(_READERS.values()) if name not in _READERS else [_READERS[name]]
    for reader in readers:
        words = reader(exit_code, output)
        if words:
            return _limit(words, now, local)
    return None


# -- each CLI's final error ----------------------------------------------------------------

_CLAUDE_WORDS = re.compile(
    r"^(?:API Error: (?:Request rejected \((?:429|529)\)|(?:Repeated )?529 Overloaded)"
    r"|You've (?:hit|reached) your\b.*\blimit|You're out of (?:usage )?credits)",
    re.IGNORECASE,
)
_LIMIT_WORDS = re.compile(
    r"rate[ -]?limit|usage limit|quota|at capacity|overloaded|last status: (?:429|503|529)\b"
    r"|too many requests",
    re.IGNORECASE,
)


def _claude(exit_code: int, output: str) -> str | None:
    """``--output-format json``: the result object, ``is_error`` with the API's status."""
    if exit_code == 0:
        return None
    result = last_json(output, lambda found: found.get("type") == "result")
    if result is None or result.get("is_error") is not True:
        return None
    text = result.get("result")
    words = text if isinstance(text, str) else ""
    if result.get("api_error_status") in LIMIT_STATUSES or _CLAUDE_WORDS.search(words):
        return words or f"API error {result.get('api_error_status')}"
    return None


def _codex(exit_code: int, output: str) -> str | None:
    """``exec --json``: the last ``turn.failed`` (or ``error``) event's message."""
    if exit_code == 0:
        return None
    message = None
    for event in json_lines(output):
        kind = event.get("type")
        if kind == "turn.failed":
            message = _dict(event.get("error")).get("message")
        elif kind == "error":
            message = event.get("message")
    if isinstance(message, str) and _LIMIT_WORDS.search(message):
        return message
    return None


def _gemini(exit_code: int, output: str) -> str | None:
    """``-o json``: the JSON object last on stderr, ``error.code`` the HTTP status (gemini
    exits with it, & 0xFF: 173 for 429, 247 for 503)."""
    if exit_code == 0:
        return None
    found = last_json(output, lambda value: isinstance(value.get("error"), dict))
    if found is None:
        return None
    error = _dict(found.get("error"))
    message = error.get("message")
    words = message if isinstance(message, str) else ""
    if error.get("code") in LIMIT_STATUSES or (words and _LIMIT_WORDS.search(words)):
        return words or f"HTTP {error.get('code')}"
    return None


_AIDER_LAST = (
    "The API provider has rate limited you",
    "The API provider's servers are down or overloaded",
)
_AIDER_ERRORS = ("litellm.RateLimitError", "litellm.ServiceUnavailableError")


def _aider(exit_code: int, output: str) -> str | None:
    """aider gives up on a limit and exits as if done (0): its last lines are litellm's
    error, wrapped at 80 columns, then what it makes of it."""
    lines = [line.strip() for line in output.splitlines()[-40:] if line.strip()]
    if not lines or not lines[-1].startswith(_AIDER_LAST):
        return None
    for start in range(len(lines) - 2, max(-1, len(lines) - 12), -1):
        if lines[start].startswith(_AIDER_ERRORS):
            return " ".join(lines[start:])
    return None


def _openclaw(exit_code: int, output: str) -> str | None:
    """``--json``: the envelope ``{ok: false, error: {message, kind}}``."""
    if exit_code == 0:
        return None
    found = last_json(output, lambda value: value.get("ok") is False)
    message = _dict(found.get("error")).get("message") if found else None
    if isinstance(message, str) and _LIMIT_WORDS.search(message):
        return message
    return None


_READERS: Mapping[str, Callable[[int, str], str | None]] = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "aider": _aider,
    "openclaw": _openclaw,
}


# -- when to try again ---------------------------------------------------------------------

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# claude: "resets 9:57pm (UTC)", "resets Dec 8, 3pm (Europe/Paris)"
_RESETS = re.compile(
    r"resets (?:(?P<month>[A-Za-z]{3})[a-z]* (?P<day>\d{1,2})(?:st|nd|rd|th)?,? (?:at )?)?"
    r"(?P<clock>\d{1,2}(?::\d{2})?\s*[ap]m)\s*\((?P<zone>[^)]+)\)",
    re.IGNORECASE,
)
# codex: "try again at 9:57 PM." (the machine's local time), and on another day
# "try again at Dec 2nd, 2026 12:16 AM."
_TRY_AT = re.compile(
    r"try again at (?:(?P<month>[A-Za-z]{3})[a-z]* (?P<day>\d{1,2})(?:st|nd|rd|th)?, "
    r"(?P<year>\d{4}) )?(?P<clock>\d{1,2}(?::\d{2})?\s*[AP]M)\b",
    re.IGNORECASE,
)
# gemini "Suggested retry after 1s.", OpenAI's "Please try again in 1.5s", "in 20 minutes"
_AFTER = re.compile(
    r"(?:retry after|retry in|try again in)\s+(?P<amount>\d+(?:\.\d+)?)\s*"
    r"(?P<unit>ms|s|sec|seconds?|m|min|minutes?|h|hours?)\b",
    re.IGNORECASE,
)
_UNITS = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}


def _limit(words: str, now: datetime, local: tzinfo) -> Limit:
    one_line = " ".join(words.split())
    if len(one_line) > WORDS_CHARS:
        one_line = one_line[: WORDS_CHARS - 1] + "…"
    for read in (_read_resets, _read_try_at, _read_after):
        found = read(words, now, local)
        if found is not None:
            said, at = found
            # The words are the agent's output: a time no provider gives is none at all.
            if at is not None and not now - timedelta(days=1) <= at <= now + MOST_WAIT:
                at = None
            return Limit(one_line, at, said)
    return Limit(one_line)


def _read_resets(words: str, now: datetime, local: tzinfo) -> tuple[str, datetime | None] | None:
    found = _RESETS.search(words)
    if found is None:
        return None
    zone = _zone(found["zone"].strip())
    return found[0], None if zone is None else _moment(found, now.astimezone(zone))


def _read_try_at(words: str, now: datetime, local: tzinfo) -> tuple[str, datetime | None] | None:
    found = _TRY_AT.search(words)
    if found is None:
        return None
    return found[0], _moment(found, now.astimezone(local))


def _moment(found: re.Match[str], here: datetime) -> datetime | None:
    """The UTC time a match's ``clock`` (and ``month``, ``day``, ``year`` where it names
    them) stands for, read in ``here``'s zone: the next such time when no day is named, the
    next such day when no year is. None when it is no time."""
    clock = _clock(found["clock"])
    if clock is None:
        return None
    at = here.replace(hour=clock[0], minute=clock[1], second=0, microsecond=0)
    if not found["month"]:
        return (at if at > here else at + timedelta(days=1)).astimezone(timezone.utc)
    month = found["month"].lower()
    year = found.groupdict().get("year")
    if month not in _MONTHS:
        return None
    try:
        number = _MONTHS.index(month) + 1
        at = at.replace(year=int(year) if year else at.year, month=number, day=int(found["day"]))
    except ValueError:
        return None
    if not year and at < here - timedelta(days=1):
        at = at.replace(year=at.year + 1)
    return at.astimezone(timezone.utc)


def _read_after(words: str, now: datetime, local: tzinfo) -> tuple[str, datetime | None] | None:
    found = _AFTER.search(words)
    if found is None:
        return None
    unit = found["unit"].lower()
    scale = _UNITS.get(unit) or _UNITS[unit[0]]
    seconds = float(found["amount"]) * scale
    if not seconds <= MOST_WAIT.total_seconds():  # infinite too: no time that reads
        return found[0], None
    return found[0], now + timedelta(seconds=math.ceil(seconds))


def _clock(text: str) -> tuple[int, int] | None:
    """``9:57pm`` → (21, 57); None when it is no time of day."""
    found = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?\s*([ap]m)", text.strip(), re.IGNORECASE)
    if found is None:
        return None
    hour, minute = int(found[1]), int(found[2] or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return None
    return hour % 12 + (12 if found[3].lower() == "pm" else 0), minute


def _zone(name: str) -> tzinfo | None:
    if name.upper() in ("UTC", "GMT", "Z"):
        return timezone.utc
    from zoneinfo import ZoneInfo  # only a named zone pays for the import

    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):  # an unknown or malformed name
        return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
