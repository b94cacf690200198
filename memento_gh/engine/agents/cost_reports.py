"""What an agent's run cost, from the report the agent prints itself: tokens in and out, and
the price where the CLI gives one. Each reader follows the real CLI's output, as measured
against the scripted model server (``testing/AGENT_FINDINGS.md``). Text in, dict out.

The output is the agent's, and what it ran printed into it: its figures are data. A price
or a count no run can have (negative, not a number, infinite, above ``MOST_USD`` or
``MOST_TOKENS``) is left out of the report, and its ``refused`` says so in one line, so that
no sum or rounding downstream ever meets it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

COMMAND = "command"

COST_KEYS = (
    "agent",
    "model",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "turns",
    "duration_ms",
    "status",
)
#: The most one agent run is believed to cost, in USD, and to use, in tokens: far above any
#: real run, and small enough that every sum of runs stays an ordinary number.
MOST_USD = 10_000
MOST_TOKENS = 10**10
_COUNT_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "turns",
    "duration_ms",
)


def parse_cost(agent: str, output: str) -> dict[str, Any] | None:
    """The run's cost and token counts from the agent's own report, or None without one.

    The dict has every key of ``COST_KEYS`` (None where the agent does not report it);
    ``agent`` names the format that was read. Every count describes the same calls as the
    cost: all the model requests of the run, side questions included. ``input_tokens`` is
    every input token the model read, cached or not; ``cache_read_tokens`` and
    ``cache_write_tokens`` say how many of them the cache served or stored. Claude, aider
    and OpenClaw's ``agent exec`` report a price; codex and gemini tokens only. For
    ``command`` every known format is tried.
    """
    name = agent.strip().lower()
    readers = list(_READERS.values()) if name == COMMAND else [_READERS.get(name)]
    for reader in readers:
        found = reader(output) if reader is not None else None
        if found is not None:
            return found
    return None


def blank_report(agent: str) -> dict[str, Any]:
    """A report of ``agent`` with nothing known yet (every key None)."""
    return _cost(agent)


def _cost(agent: str, **values: Any) -> dict[str, Any]:
    """The report of ``agent``; ``cost_usd`` as the agent gave it (any JSON value), every
    figure checked: one that no run can have is None, and ``refused`` names it."""
    report: dict[str, Any] = dict.fromkeys(COST_KEYS)
    report.update(values, agent=agent)
    refused = []
    price = report["cost_usd"]
    if price is not None:
        report["cost_usd"] = _price(price)
        if report["cost_usd"] is None:
            refused.append(f"a price of {_shown(price)}")
    for key in _COUNT_KEYS:
        count = report[key]
        if count is not None and not 0 <= count <= MOST_TOKENS:
            refused.append(f"{key.replace('_', ' ')} {_shown(count)}")
            report[key] = None
    if refused:
        report["refused"] = (
            f"the agent's cost report gave {', '.join(refused)}, which no run has: "
            "left out of the spend"
        )
    return report


def _price(value: Any) -> float | None:
    """A run's price in USD from the report's value: None unless it is a number from 0 to
    ``MOST_USD``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not (math.isfinite(value) and 0 <= value <= MOST_USD):
        return None
    return float(value)


def _shown(value: Any) -> str:
    """A figure of the report as a message quotes it: short, on one line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 40 else text[:39] + "…"


def _claude_cost(output: str) -> dict[str, Any] | None:
    result = last_json(output, lambda found: "total_cost_usd" in found or "cost_usd" in found)
    if result is None:
        return None
    # modelUsage counts every call (side questions on other models too), as total_cost_usd
    # prices them; usage counts the main loop only, and is read when modelUsage is missing.
    models = [_dict(model) for model in _dict(result.get("modelUsage")).values()]
    usage = _dict(result.get("usage"))
    if models:
        counts = [
            tuple(_int(model.get(key)) or 0 for key in _CLAUDE_MODEL_KEYS) for model in models
        ]
        fresh, output_tokens, read, write = (sum(column) for column in zip(*counts, strict=True))
    else:
        fresh, output_tokens, read, write = (
            _int(usage.get(key)) or 0 for key in _CLAUDE_USAGE_KEYS
        )
    return _cost(
        "claude",
        cost_usd=result.get("total_cost_usd", result.get("cost_usd")),
        input_tokens=fresh + read + write,
        output_tokens=output_tokens,
        cache_read_tokens=read,
        cache_write_tokens=write,
        turns=_int(result.get("num_turns")),
        duration_ms=_int(result.get("duration_ms")),
        status=_text(result.get("subtype")),
    )


_CLAUDE_MODEL_KEYS = (
    "inputTokens",
    "outputTokens",
    "cacheReadInputTokens",
    "cacheCreationInputTokens",
)
_CLAUDE_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _codex_cost(output: str) -> dict[str, Any] | None:
    totals = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
    turns = 0
    status = "completed"
    for event in json_lines(output):
        kind = event.get("type")
        if kind == "turn.completed":
            turns += 1
            usage = _dict(event.get("usage"))
            for key in totals:
                totals[key] += _int(usage.get(key)) or 0
        elif kind == "turn.failed":
            status = "failed"
    if not turns:
        return None
    return _cost(
        "codex",
        input_tokens=totals["input_tokens"],
        output_tokens=totals["output_tokens"],
        cache_read_tokens=totals["cached_input_tokens"],
        turns=turns,
        status=status,
    )


_AIDER_AMOUNT = r"[\d.,]+[kKmM]?"
# A report starts a line: what verify prints comes quoted (``quoted_output.py``).
_AIDER_USAGE = re.compile(
    rf"(?m)^Tokens: (?P<sent>{_AIDER_AMOUNT}) sent"
    rf"(?:, (?P<write>{_AIDER_AMOUNT}) cache write)?"
    rf"(?:, (?P<hit>{_AIDER_AMOUNT}) cache hit)?"
    rf", (?P<received>{_AIDER_AMOUNT}) received\."
    r"(?:\s*Cost: \$(?P<message>[\d.]+) message, \$(?P<session>[\d.]+) session\.)?"
)


def _aider_cost(output: str) -> dict[str, Any] | None:
    # One report per model reply: token counts are per message (summed here), the session
    # cost is cumulative (the last one wins). Counts like "2.3k" are aider's rounding.
    if "Tokens: " not in output:  # every report starts so; the pattern is compiled on demand
        return None
    sent: float = 0
    received: float = 0
    hit: float = 0
    write: float = 0
    session: float | str | None = None
    replies = 0
    for found in _AIDER_USAGE.finditer(output):
        replies += 1
        sent += _aider_count(found["sent"])
        received += _aider_count(found["received"])
        hit += _aider_count(found["hit"])
        write += _aider_count(found["write"])
        if found["session"] is not None:
            session = _aider_price(found["session"])
    if not replies:
        return None
    return _cost(
        "aider",
        cost_usd=session,
        input_tokens=sent,
        output_tokens=received,
        cache_read_tokens=hit,
        cache_write_tokens=write,
        turns=replies,
    )


def _aider_count(text: str | None) -> float:
    """A count as aider prints it (``2.3k``); infinite when it is too large to be one, so
    that the report refuses the sum."""
    if not text:
        return 0
    text = text.replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1].lower(), 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = float(number) * scale
    except ValueError:
        return 0
    return round(value) if math.isfinite(value) else math.inf


def _aider_price(text: str) -> float | str:
    """The session's price as aider prints it; the text itself when it reads as no number
    (``_cost`` refuses it)."""
    try:
        return float(text)
    except ValueError:
        return text


def _gemini_cost(output: str) -> dict[str, Any] | None:
    found = last_json(output, lambda value: isinstance(value.get("stats"), dict))
    if found is None:
        return None
    stats = _dict(found.get("stats"))
    status = "error" if found.get("error") else _text(found.get("status"))
    if "input_tokens" in stats or "total_tokens" in stats:  # stream-json's result event
        return _cost(
            "gemini",
            input_tokens=_int(stats.get("input_tokens")),
            output_tokens=_int(stats.get("output_tokens")),
            cache_read_tokens=_int(stats.get("cached")),
            duration_ms=_int(stats.get("duration_ms")),
            status=status,
        )
    models = [_dict(model) for model in _dict(stats.get("models")).values()]
    if not models:
        return None
    tokens = [_dict(model.get("tokens")) for model in models]
    requests = sum(_int(_dict(model.get("api")).get("totalRequests")) or 0 for model in models)
    return _cost(
        "gemini",
        input_tokens=sum(_int(count.get("prompt", count.get("input"))) or 0 for count in tokens),
        # thinking tokens are billed as output
        output_tokens=sum(
            (_int(count.get("candidates")) or 0) + (_int(count.get("thoughts")) or 0)
            for count in tokens
        ),
        cache_read_tokens=sum(_int(count.get("cached")) or 0 for count in tokens),
        turns=requests or None,
        status=status,
    )


def _openclaw_cost(output: str) -> dict[str, Any] | None:
    # `openclaw agent --local --json` nests its usage under meta.agentMeta; `openclaw agent
    # exec --json` puts usage and costUsd at the top of its envelope.
    found = last_json(
        output,
        lambda value: (
            _find_key(value, "agentMeta") is not None or isinstance(value.get("usage"), dict)
        ),
    )
    if found is None:
        return None
    meta = _dict(_find_key(found, "meta"))
    usage = _dict(_dict(meta.get("agentMeta")).get("usage")) or _dict(found.get("usage"))
    fresh, output_tokens, read, write = (
        _int(usage.get(key)) or 0 for key in ("input", "output", "cacheRead", "cacheWrite")
    )
    error = _dict(meta.get("error")) or _dict(found.get("error"))
    provider, model = _text(found.get("provider")), _text(found.get("model"))
    return _cost(
        "openclaw",
        model=f"{provider}/{model}" if provider and model and not meta else None,
        cost_usd=found.get("costUsd", _dict(usage.get("cost")).get("total")),
        input_tokens=fresh + read + write,
        output_tokens=output_tokens,
        cache_read_tokens=read,
        cache_write_tokens=write,
        turns=_int(found.get("assistantTurns")),
        duration_ms=_int(meta.get("durationMs")),
        status=_text(error.get("kind")) or _text(meta.get("stopReason") or found.get("status")),
    )


_READERS: Mapping[str, Callable[[str], dict[str, Any] | None]] = {
    "claude": _claude_cost,
    "codex": _codex_cost,
    "gemini": _gemini_cost,
    "openclaw": _openclaw_cost,
    "aider": _aider_cost,
}


def last_json(output: str, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The last JSON object in ``output`` that starts a line and satisfies ``wanted``.

    Reports are one object per line (JSON lines) or one pretty-printed object; other
    output (stderr is merged in) may surround them.
    """
    starts = [match.start() for match in re.finditer(r"(?m)^\{", output)]
    if not starts:
        return None
    import json  # only output that holds JSON pays for the import

    decoder = json.JSONDecoder()
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(output, start)
        except ValueError:
            continue
        if isinstance(value, dict) and wanted(value):
            return value
    return None


def json_lines(output: str) -> Iterator[dict[str, Any]]:
    """Each line of ``output`` that is a JSON object, as a dict (other lines skipped)."""
    if "{" not in output:
        return
    import json  # only output that holds JSON pays for the import

    for raw in output.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _find_key(value: Any, key: str) -> Any:
    """The value of the first ``key`` found in nested dicts (breadth first), or None."""
    queue = [value]
    while queue:
        current = queue.pop(0)
        if isinstance(current, dict):
            if key in current:
                return current[key]
            queue.extend(item for item in current.values() if isinstance(item, dict))
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    """A count from the report, None when it is no finite number (``_cost`` checks what the
    counts add up to)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if math.isfinite(value) else None
