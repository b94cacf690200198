"""How often unattended ticks run: ``30s``, ``5m``, ``1h``, ``1.5s``, ``0s``.

Shared by ``memento run --every`` (any interval) and ``memento schedule install --every``
(what cron can express). Pure: text in, seconds out.
"""

from __future__ import annotations

import argparse
import re

_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_INTERVAL = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*(s|min|m|h|d)")
EXAMPLES = "30s, 5m, 1h or 1.5s (0s runs ticks back to back)"


def parse_interval(text: str) -> float:
    """Seconds, or ValueError with a sentence that shows what to write instead."""
    match = _INTERVAL.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(f"{text!r} is not an interval; write a number and a unit: {EXAMPLES}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def interval_arg(text: str) -> float:
    """``parse_interval`` as an argparse ``type``: a mistake is a usage error (exit 2)."""
    try:
        return parse_interval(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def format_interval(seconds: float) -> str:
    """The shortest of ``parse_interval``'s spellings for ``seconds``: 300 -> ``5m``."""
    for unit in ("d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
