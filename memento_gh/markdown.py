"""The few Markdown block rules every memento file reader shares: which lines sit inside
a fenced code block or an HTML comment, where nothing is structure."""

from __future__ import annotations

from typing import NamedTuple

NORMAL, INSIDE, FENCE_OPENED, COMMENT_OPENED = "normal", "inside", "fence-opened", "comment-opened"


class Opening(NamedTuple):
    line: int
    closer: str


class CodeTracker:
    """Feed it lines in order; it says whether each is ordinary Markdown or code/comment.

    Fences open with three or more backticks or tildes (a backtick fence's info string
    holds no backtick) and close with a run of the same character at least as long; an
    HTML comment opens with a line starting ``<!--`` and closes at the first ``-->``.
    """

    def __init__(self) -> None:
        self._fence: tuple[str, int] | None = None
        self._in_comment = False
        self.opening: Opening | None = None
        #: Inside a code block or comment (an attribute, not a property: the plan's scanner
        #: asks for every line).
        self.open = False

    def step(self, number: int, stripped: str) -> str:
        """Classify one line, given without its leading whitespace."""
        if self._fence is not None:
            char, length = self._fence
            body = stripped.rstrip(" \t")
            if body.startswith(char * length) and not body.strip(char):
                self._fence = None
                self.opening = None
                self.open = False
            return INSIDE
        if self._in_comment:
            if "-->" in stripped:
                self._in_comment = False
                self.opening = None
                self.open = False
            return INSIDE
        lead = stripped[:1]
        if lead in ("`", "~"):
            length = len(stripped) - len(stripped.lstrip(lead))
            if length >= 3 and not (lead == "`" and "`" in stripped[length:]):
                self._fence = (lead, length)
                self.opening = Opening(number, lead * length)
                self.open = True
                return FENCE_OPENED
        elif lead == "<" and stripped.startswith("<!--") and "-->" not in stripped[4:]:
            self._in_comment = True
            self.opening = Opening(number, "-->")
            self.open = True
            return COMMENT_OPENED
        return NORMAL
