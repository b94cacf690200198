"""A second reading of the plan by a CommonMark parser (mistune), to catch lines the line
scanner misread.

Both readings list the items that start with a ``[?]`` box, in order; any difference means
the scanner sees a task where Markdown does not, or the other way round. The scanner marks
the sections holding Markdown its simple reading might not share with CommonMark (nested
or indented items, quotes, ordered lists, raw HTML, code); only those are given to mistune,
so a plain plan costs nothing here. Each section is parsed with a sentinel task after it:
a section that swallows the sentinel left a block open that the scanner thought closed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from memento_gh.markdown import CodeTracker
from memento_gh.plan.model import Plan, Problem
from memento_gh.plan.rules import RENDERED_ALIKE

_BOX = re.compile(r"\[.\](?:[ \t]|$)")
_SENTINEL = "- [ ] `memento-crosscheck-sentinel`"


def crosscheck(plan: Plan) -> list[Problem]:
    problems: list[Problem] = []
    for start, end in plan.unusual_chunks:
        problems += _check_chunk(plan, start, end)
    return problems


def _check_chunk(plan: Plan, start: int, end: int) -> list[Problem]:
    theirs = _read_boxes(plan, start, end)
    if theirs and theirs[-1] == _SENTINEL[2:]:
        theirs.pop()
    elif not _ends_open(plan, start, end):
        return [
            RENDERED_ALIKE.problem(
                _open_block_line(plan, start, end) + 1,
                "Markdown reads the block that starts here (HTML such as <pre> or <script>, "
                "or a code fence) as still open at the end of its section, so the tasks after "
                "it are not what memento reads; close the block",
            )
        ]
    ours = [
        (number, _box_text(plan.lines[number]))
        for number in plan.checkbox_lines
        if start <= number < end
    ]
    for position, (number, text) in enumerate(ours):
        if position >= len(theirs) or theirs[position] != text:
            return [
                _disagreement(
                    number,
                    "memento reads this line as a checklist item but a Markdown renderer does not",
                )
            ]
    if len(theirs) > len(ours):
        extra = theirs[len(ours)]
        number = _find_line(plan, start, end, extra)
        return [
            _disagreement(
                number,
                f"a Markdown renderer reads {extra!r} here as a checklist item but memento "
                "does not",
            )
        ]
    return []


def _read_boxes(plan: Plan, start: int, end: int) -> list[str]:
    """The checklist items mistune reads in lines ``[start, end)`` followed by the sentinel."""
    import mistune  # deferred: only plans with unusual Markdown pay for the import

    source = "\n".join(plan.lines[start:end]) + "\n\n" + _SENTINEL + "\n"
    markdown = mistune.create_markdown(renderer=None)
    state = markdown.block.state_cls()
    state.process(source)
    markdown.block.parse(state)
    return list(_box_items(state.tokens))


def _open_block_line(plan: Plan, start: int, end: int) -> int:
    """The line whose block swallows the sentinel: the shortest part of the section that
    loses it ends there (found by halving, a few readings even for a long section)."""
    keeps, loses = start, end
    while loses - keeps > 1:
        middle = (keeps + loses) // 2
        boxes = _read_boxes(plan, start, middle)
        if boxes and boxes[-1] == _SENTINEL[2:]:
            keeps = middle
        else:
            loses = middle
    return loses - 1


def _disagreement(number: int, what: str) -> Problem:
    return RENDERED_ALIKE.problem(
        number + 1,
        f"{what} (check the indentation, the list marker and any open code block or "
        "HTML above); write tasks as "
        "'- [ ] `T-101` [MODULE:name] description' at the start of a line",
    )


def _ends_open(plan: Plan, start: int, end: int) -> bool:
    """Whether the scanner, too, reads the section as ending inside a code block or
    comment: it reports that block itself, and then both readings lose the sentinel."""
    code = CodeTracker()
    for number in range(start, end):
        code.step(number, plan.lines[number].lstrip(" \t"))
    return code.open


def _box_items(tokens: list[dict[str, Any]]) -> Iterator[str]:
    """The first line of every list item, at any depth, that starts with a ``[?]`` box."""
    for token in tokens:
        if token.get("type") == "list_item":
            children = token.get("children") or []
            first = children[0] if children else {}
            text = first.get("text") if first.get("type") in ("block_text", "paragraph") else None
            if isinstance(text, str):
                line = text.split("\n", 1)[0].strip()
                if _BOX.match(line):
                    yield line
        yield from _box_items(token.get("children") or [])


def _box_text(line: str) -> str:
    """A checkbox line's text as mistune gives it: without indentation and list marker."""
    stripped = line.lstrip(" \t")
    box = stripped.find("[")
    return stripped[box:].strip()


def _find_line(plan: Plan, start: int, end: int, text: str) -> int:
    for number in range(start, end):
        if text in plan.lines[number]:
            return number
    return start
