"""``PROJECT_MAP.md``: the module registry (``### [MODULE:name]`` sections)."""

from __future__ import annotations

import re
from typing import NamedTuple

from memento_gh.markdown import NORMAL, CodeTracker
from memento_gh.plan.model import ERROR, Problem
from memento_gh.plan.scanner import split_lines

_MODULE_HEADING = re.compile(r"#{2,6}[ \t]+\[MODULE:(?P<name>[^\]\s]+)\][ \t]*$")
_MODULE_LIKE = re.compile(r"#{1,6}[ \t]*\[MODULE", re.IGNORECASE)
_HEADING = re.compile(r"(#{1,6})[ \t]")


class Module(NamedTuple):
    name: str
    line: int  # 0-based index of its heading
    entry: str  # the section's text, heading included


class ProjectMap(NamedTuple):
    modules: dict[str, Module]
    problems: tuple[Problem, ...]


def parse_project_map(text: str) -> ProjectMap:
    lines, _ = split_lines(text.removeprefix("\ufeff"))
    code = CodeTracker()
    modules: dict[str, Module] = {}
    problems: list[Problem] = []
    heads: list[tuple[int, int, str]] = []  # (line, level, module name or "")
    for number, line in enumerate(lines):
        stripped = line.lstrip(" \t")
        if code.step(number, stripped) != NORMAL:
            continue
        match = _MODULE_HEADING.match(stripped)
        if match is None and _MODULE_LIKE.match(stripped):
            # Also '###[MODULE:x]', which Markdown does not read as a heading at all.
            problems.append(
                Problem(number + 1, ERROR, "malformed module heading; write '### [MODULE:name]'")
            )
        heading = _HEADING.match(stripped)
        if heading is None:
            continue
        heads.append((number, len(heading.group(1)), match.group("name") if match else ""))
    for position, (number, level, name) in enumerate(heads):
        if not name:
            continue
        end = next(
            (later for later, later_level, _ in heads[position + 1 :] if later_level <= level),
            len(lines),
        )
        if name in modules:
            first = modules[name].line + 1
            problems.append(
                Problem(
                    number + 1,
                    ERROR,
                    f"module {name!r} is registered twice (first at line {first}); keep one",
                )
            )
            continue
        modules[name] = Module(name, number, "\n".join(lines[number:end]).rstrip())
    return ProjectMap(modules, tuple(sorted(problems, key=lambda problem: problem.line)))
