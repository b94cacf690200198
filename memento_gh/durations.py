"""Durations, as the plan, ``memento run --every`` and ``memento schedule install --every``
write them: ``30s``, ``5m``, ``15min``, ``1.5s``, ``2h``, ``1h30min``, ``7d``, ``0s``.

One grammar for all of them and one spelling back (what the status log, the dashboard and
the command line show). Pure: text in, seconds out, and seconds in, text out.
"""

from __future__ import annotations

import re

_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
_NUMBER = r"\d+(?:\.\d+)?|\.\d+"
_PART = re.compile(rf"({_NUMBER})\s*([a-z]+)")
_WHOLE = re.compile(rf"(?:(?:{_NUMBER})\s*[a-z]+\s*)+")
#: The units ``format_duration`` spells, largest first (seconds end the spelling).
_SPELLED = (("d", 86400), ("h", 3600), ("m", 60))


def parse_duration(text: str) -> float:
    """Seconds: ``15min`` -> 900, ``1h30m`` -> 5400, ``1.5s`` -> 1.5 (whole numbers stay
    ``int``); ValueError with a sentence that shows what to write instead."""
    written = text.strip()
    lowered = written.lower()
    if not _WHOLE.fullmatch(lowered):
        raise ValueError(f"{written!r} is not a duration; write e.g. 30s, 15min, 2h or 7d")
    total: float = 0
    for number, unit in _PART.findall(lowered):
        if unit not in _UNITS:
            raise ValueError(f"unknown time unit {unit!r} in {written!r}; use s, min, h or d")
        total += (float(number) if "." in number else int(number)) * _UNITS[unit]
    return total


def format_duration(seconds: float) -> str:
    """``seconds`` in the largest units first, as ``parse_duration`` reads it back:
    300 -> ``5m``, 138 -> ``2m18s``, 5400 -> ``1h30m``, 1.5 -> ``1.5s``, 0 -> ``0s``."""
    parts: list[str] = []
    rest = seconds
    for unit, size in _SPELLED:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{int(count)}{unit}")
    if rest or not parts:
        parts.append(f"{rest:g}s")
    return "".join(parts)
