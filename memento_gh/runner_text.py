"""On an Actions runner, no line that starts a workflow command unless memento means it to.
Pure: text in, text out.

The runner reads every line a step prints, on stdout and stderr, for workflow commands:
``::name ...::value`` at the start of a line (after any white space), and the older
``##[name ...]value`` anywhere in a line; it breaks lines at ``\\n`` and at ``\\r``. Text
from the agent, its verify or the repository (a file name with a line break in it, the
agent's last words, a task's description) that memento prints must start none: it could
set the step's outputs (``::set-output``), mask or forge annotations, or stop the runner
from reading memento's own commands (``::stop-commands::``). ``inert`` makes any text
safe to print so; memento's own commands (``job_text.annotation``) are ``WorkflowCommand``
values, the only text printed as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TextIO


class WorkflowCommand(str):
    """A workflow command memento itself prints (an annotation), its values escaped: the one
    kind of text that reaches a runner's output as it is. ``print`` hands the value itself
    to the stream (``__str__``), so that ``RunnerText`` can tell it from other text."""

    __slots__ = ()

    def __str__(self) -> str:
        return self


_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_LEGACY = "##["


def inert(text: str) -> str:
    """``text`` with no line of it starting a workflow command, as the runner reads lines;
    its line breaks kept. A line that starts with ``::`` (after white space) gets a ``\\``
    in front, and ``##[`` becomes ``## [``. What does not look like a command is left as it
    is, and ``inert(inert(text)) == inert(text)``."""
    if "::" not in text and _LEGACY not in text:
        return text
    pieces = _LINE_BREAK.split(text)
    for index in range(0, len(pieces), 2):  # the lines; the breaks between them stay
        line = pieces[index].replace(_LEGACY, "## [")
        pieces[index] = "\\" + line if line.lstrip().startswith("::") else line
    return "".join(pieces)


def runner_say(say: Callable[[str], None]) -> Callable[[str], None]:
    """``say`` for a line printed on a runner: memento's own commands as they are, any
    other text ``inert``."""

    def said(line: str) -> None:
        say(line if isinstance(line, WorkflowCommand) else inert(line))

    return said


class RunnerText:
    """A text stream (``sys.stdout``, ``sys.stderr``) on an Actions runner: each write is
    passed on ``inert`` (a write starts a line for this purpose: ``print`` writes a line's
    text in one call), but for memento's own ``WorkflowCommand`` values. Everything else
    (``isatty``, ``fileno``...) is the target's."""

    def __init__(self, target: TextIO) -> None:
        self.target = target

    def write(self, text: str) -> int:
        self.target.write(text if isinstance(text, WorkflowCommand) else inert(text))
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.target, name)
