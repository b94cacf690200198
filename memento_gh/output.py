"""Terminal output: colour only for a terminal, never when NO_COLOR is set."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TextIO

_CODES = {"error": "31;1", "warning": "33;1", "ok": "32", "dim": "2", "bold": "1"}


def wants_color(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and environ.get("TERM") != "dumb"


def paint(text: str, style: str, color: bool) -> str:
    return f"\033[{_CODES[style]}m{text}\033[0m" if color else text


def commented(lines: Sequence[tuple[str, str]], indent: str = "  ") -> list[str]:
    """Commands with their ``# comments`` lined up in one column, however long the commands
    (``memento -C sub --plan-dir plans validate``) turn out; a line without a comment is the
    command alone."""
    width = max((len(command) for command, comment in lines if comment), default=0)
    return [
        f"{indent}{command:<{width}}  # {comment}" if comment else f"{indent}{command}"
        for command, comment in lines
    ]
