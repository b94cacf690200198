"""Readers for the value syntaxes of the plan: code spans, lists, sizes, claims (durations are
``memento_gh.durations``'s).

Each reader takes the raw text of a value and returns a Python value, or raises
``ValueError`` with a sentence that says what a valid value looks like.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # datetime is imported where times are read: validate's start-up budget
    from datetime import datetime

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?", re.IGNORECASE)
_SIZE_FACTORS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "ki": 1024,
    "kib": 1024,
    "mi": 1024**2,
    "mib": 1024**2,
    "gi": 1024**3,
    "gib": 1024**3,
    "ti": 1024**4,
    "tib": 1024**4,
}

TASK_ID = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def parse_size(raw: str) -> int:
    """``500MB``, ``1GiB``, ``2G`` -> bytes (KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024)."""
    text = raw.strip()
    match = _SIZE.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a size; write e.g. 500MB or 2GiB")
    number, unit = match.groups()
    return int(float(number) * _SIZE_FACTORS[(unit or "").lower()])


def parse_switch(raw: str) -> bool:
    """``true`` or ``false`` (any case)."""
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"{raw.strip()!r} is not true or false")
    return value == "true"


def parse_int(raw: str, minimum: int = 0) -> int:
    text = raw.strip()
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"{text!r} is not a whole number")
    value = int(text)
    if value < minimum:
        raise ValueError(f"{value} is too small; the least allowed is {minimum}")
    return value


def parse_ratio(raw: str) -> float:
    text = raw.strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a ratio; write e.g. 0.3 or 30%") from None
    if not 0 <= value <= 1:
        raise ValueError(f"{text!r} is outside 0..1 (0%..100%)")
    return value


def parse_code(raw: str) -> str:
    """A Markdown code span (`` `cmd` `` or ``` `` cmd `with` ticks `` ```) -> its content."""
    text = raw.strip()
    ticks = len(text) - len(text.lstrip("`"))
    if ticks == 0 or not text.endswith("`" * ticks) or len(text) < 2 * ticks + 1:
        raise ValueError(f"write the command as a code span, e.g. `pytest -q` (got {text!r})")
    inner = text[ticks:-ticks]
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip():
        inner = inner[1:-1]
    if not inner.strip():
        raise ValueError("the command is empty")
    return inner


def parse_list(raw: str) -> tuple[str, ...]:
    """``[a, b/*]`` (brackets optional, items may be backticked) -> items."""
    text = raw.strip()
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValueError(f"the list {text!r} has no closing ']'")
        text = text[1:-1]
    elif text.endswith("]"):
        raise ValueError(f"the list {text!r} has no opening '['")
    items = []
    for part in text.split(","):
        item = part.strip().strip("`").strip()
        if item:
            items.append(item)
    return tuple(items)


def parse_task_ids(raw: str) -> tuple[str, ...]:
    ids = parse_list(raw)
    for task_id in ids:
        if not TASK_ID.fullmatch(task_id):
            raise ValueError(f"{task_id!r} is not a task ID like T-101")
    return ids


#: A worker id is one word: it follows the time in a task's ``claimed:`` field, which a
#: space would break, and it names the worker in commits, the dashboard and job summaries.
_WORKER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,63}")


def check_worker_id(text: str) -> str:
    """``text`` when it can name a worker; ValueError with a sentence naming what can."""
    if not _WORKER_ID.fullmatch(text):
        raise ValueError(
            f"a worker id is one word of letters, digits and _ . : @ + - (at most 64, "
            f"starting with a letter or digit), such as worker-2, not {text!r}"
        )
    return text


#: A model name as agents' command lines take it: ``claude-haiku-4-5``, ``openai/gpt-4.1``,
#: ``ollama/qwen3.5:9b``, ``claude-opus-4-8[1m]``. One word, never an option (``-...``): it
#: follows ``--model`` on the agent's command line.
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/+\[\]-]{0,199}")


def parse_model(raw: str) -> str:
    """A model name (backticks allowed around it); ValueError with a sentence naming what can."""
    text = raw.strip()
    name = text[1:-1].strip() if len(text) > 1 and text[0] == "`" == text[-1] else text
    if not _MODEL.fullmatch(name):
        raise ValueError(
            "a model is one word of letters, digits and _ . : @ / + - [ ], starting with a "
            f"letter or digit, such as claude-sonnet-4-6 or openai/gpt-4.1, not {text!r}"
        )
    return name


class Claim(NamedTuple):
    """``claimed: <ISO-8601 UTC time> <worker-id>``: who runs a ``[~]`` task since when."""

    at: datetime
    worker: str

    def render(self) -> str:
        return f"{format_time(self.at)} {self.worker}"


def parse_time(raw: str) -> datetime:
    """ISO-8601 time; a trailing ``Z`` or no zone at all means UTC."""
    from datetime import datetime, timezone

    text = raw.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{raw.strip()!r} is not an ISO-8601 time like 2025-01-15T14:35:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(
            f"{raw.strip()!r} is out of range once converted to UTC; write a real date"
        ) from None


def format_time(moment: datetime) -> str:
    from datetime import timezone

    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_claim(raw: str) -> Claim:
    parts = raw.split()
    if len(parts) != 2:
        raise ValueError(
            f"write claimed as '<ISO-8601 UTC time> <worker-id>', "
            f"e.g. 2025-01-15T14:35:00Z runner-1 (got {raw.strip()!r})"
        )
    return Claim(parse_time(parts[0]), parts[1])
