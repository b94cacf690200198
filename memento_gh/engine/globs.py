"""Path patterns: the plan's ``context_files``/``guard_files`` and ``.memento_ignore`` lines.

Paths are repository-relative POSIX paths (``src/db/schema.ts``); matching is case-sensitive.

Plan patterns (``matches``), always relative to the repository root:

- ``*`` matches any characters within one segment (a leading dot included), ``?`` one
  character, ``[abc]``/``[a-z]``/``[!abc]`` one character of a set; none of them matches ``/``;
- ``**`` as a whole segment matches any number of segments, zero included
  (``src/**/test_*.py`` matches ``src/test_a.py`` and ``src/a/b/test_c.py``);
  ``**`` inside a segment is a plain ``*``;
- a trailing ``/`` means everything below that directory (``src/db/migrations/``);
- a pattern whose last segment is a plain name also matches everything below it, so that a
  directory can be named without a slash (``src/db/migrations`` matches
  ``src/db/migrations/001.sql``); ``src/auth/*`` matches the files directly in ``src/auth``
  only: write ``src/auth/`` or ``src/auth/**`` for the whole tree;
- a leading ``./`` or ``/`` is ignored; ``.`` alone names the whole repository;
- a pattern with a ``..`` segment matches nothing.

Ignore patterns (``ignore_matches``, ``is_ignored``) follow ``.gitignore``: a pattern without
a slash (other than a trailing one) matches a name at any depth, a pattern with one is
anchored at the root, a trailing ``/`` matches directories only, ``#`` starts a comment, a
backslash makes the next character literal, and ``!`` re-includes what an earlier line
excluded, except below an excluded directory (as in git).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

_WILDCARDS = frozenset("*?[")


def normalize(pattern: str) -> str:
    """The pattern without a leading ``./`` or ``/`` and with repeated slashes collapsed."""
    text = re.sub(r"/{2,}", "/", pattern.strip())
    while text.startswith("./"):
        text = text[2:]
    return text.lstrip("/")


def has_wildcards(pattern: str) -> bool:
    return any(char in _WILDCARDS for char in pattern)


def plan_segments(pattern: str) -> list[str] | None:
    """A plan pattern's segments, ``.`` segments dropped; None when one is ``..``."""
    segments = [segment for segment in normalize(pattern).split("/") if segment not in ("", ".")]
    return None if ".." in segments else segments


def literal_prefix(pattern: str) -> str | None:
    """The leading segments of a plan pattern that hold no wildcard (``src/db`` for
    ``src/db/*.sql``, ``""`` for ``**/x``): where a search for its matches starts.
    None for a pattern that matches nothing."""
    segments = plan_segments(pattern)
    if segments is None:
        return None
    plain = []
    for segment in segments:
        if has_wildcards(segment):
            break
        plain.append(segment)
    return "/".join(plain)


def matches(pattern: str, path: str) -> bool:
    """Whether a ``context_files``/``guard_files`` pattern matches ``path``.

    A ``path`` ending in ``/`` is a directory taken as a whole (a nested repository): the
    pattern matches it when it matches the directory itself or everything below it."""
    compiled = _compile_plan_pattern(pattern)
    if compiled is None:
        return False
    clean = _clean_path(path)
    if clean.endswith("/"):
        directory = clean.rstrip("/")
        # NUL is in no file name: matching it below the directory means "anything below"
        return bool(compiled.fullmatch(directory) or compiled.fullmatch(f"{directory}/\0"))
    return bool(compiled.fullmatch(clean))


def matches_any(patterns: Iterable[str], path: str) -> bool:
    return first_match(patterns, path) is not None


def first_match(patterns: Iterable[str], path: str) -> str | None:
    """The first of ``patterns`` that matches ``path``, to name it in a message."""
    return next((pattern for pattern in patterns if matches(pattern, path)), None)


def _clean_path(path: str) -> str:
    return path[2:] if path.startswith("./") else path


class _Literal:
    """A plan pattern without wildcards, matched the way its regular expression would be
    (``name(?:/.+)?``, or ``name/.+`` below a directory) by comparing strings: a tick
    checks memento's own files this way on every path, and compiling each pattern cost
    more than all the matching."""

    __slots__ = ("below_only", "name")

    def __init__(self, name: str, below_only: bool) -> None:
        self.name = name
        self.below_only = below_only

    def fullmatch(self, path: str) -> bool:
        if path == self.name:
            return not self.below_only
        return len(path) > len(self.name) + 1 and path.startswith(self.name + "/")


@lru_cache(maxsize=4096)
def _compile_plan_pattern(pattern: str) -> re.Pattern[str] | _Literal | None:
    below_only = normalize(pattern).endswith("/")
    segments = plan_segments(pattern)
    if segments is None:
        return None
    if not segments:
        return re.compile(r"(?s).+")
    if not any(has_wildcards(segment) for segment in segments):
        return _Literal("/".join(segments), below_only)
    body = _segments_regex(segments, escapes=False)
    if below_only:
        tail = "/.+"
    elif segments[-1] != "**" and not has_wildcards(segments[-1]):
        tail = "(?:/.+)?"
    else:
        tail = ""
    return re.compile(f"(?s){body}{tail}")


def _segments_regex(segments: Sequence[str], *, escapes: bool) -> str:
    parts = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":
            # zero or more whole segments, or (at the end) everything below
            parts.append(".+" if index == last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment, escapes=escapes) + ("" if index == last else "/"))
    return "".join(parts)


def _segment_regex(segment: str, *, escapes: bool) -> str:
    out = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if escapes and char == "\\" and index + 1 < len(segment):
            out.append(re.escape(segment[index + 1]))
            index += 2
            continue
        if char == "*":
            while index + 1 < len(segment) and segment[index + 1] == "*":
                index += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            bracket = _bracket(segment, index)
            if bracket is None:
                out.append(re.escape(char))
            else:
                regex, index = bracket
                out.append(regex)
                continue
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _bracket(segment: str, start: int) -> tuple[str, int] | None:
    """``[...]`` at ``start`` as a regex class that never matches ``/``, and the index after
    it; None when the bracket does not close (then ``[`` is a literal)."""
    index = start + 1
    negate = index < len(segment) and segment[index] in "!^"
    if negate:
        index += 1
    first = index
    # a ']' right after the opening (or its '!') belongs to the set
    if index < len(segment) and segment[index] == "]":
        index += 1
    while index < len(segment) and segment[index] != "]":
        index += 1
    if index >= len(segment):
        return None
    members = segment[first:index]
    escaped = "".join("\\" + char if char in "\\]^[" else char for char in members)
    regex = f"[^/{escaped}]" if negate else f"(?!/)[{escaped}]"
    return regex, index + 1


# ---- .memento_ignore (gitignore-like) ------------------------------------------------


class IgnoreRule(NamedTuple):
    regex: re.Pattern[str]  # matches one path (a name at any depth, or anchored)
    directory_only: bool
    negated: bool


def parse_ignore(text: str) -> list[str]:
    """The pattern lines of an ignore file: blank lines and ``#`` comments dropped, unescaped
    trailing spaces trimmed; ``!`` prefixes and backslash escapes are kept for the matcher."""
    patterns = []
    for raw in text.removeprefix("\ufeff").splitlines():
        line = _trim_trailing_spaces(raw)
        if not line.strip() or line.startswith("#"):
            continue
        patterns.append(line)
    return patterns


def _trim_trailing_spaces(line: str) -> str:
    trimmed = line.rstrip(" ")
    if trimmed.endswith("\\") and len(trimmed) < len(line):
        return trimmed + " "
    return trimmed


@lru_cache(maxsize=4096)
def compile_ignore(pattern: str) -> IgnoreRule | None:
    """One ignore line as a rule; None for a line that matches nothing (``!`` or ``/``)."""
    text = pattern
    negated = text.startswith("!")
    if negated or text.startswith("\\!") or text.startswith("\\#"):
        text = text[1:]
    directory_only = text.endswith("/") and not text.endswith("\\/")
    text = text.rstrip("/") if directory_only else text
    anchored = "/" in text
    segments = [segment for segment in text.split("/") if segment]
    if not segments:
        return None
    body = _segments_regex(segments, escapes=True)
    prefix = "" if anchored or segments[0] == "**" else "(?:[^/]+/)*"
    return IgnoreRule(re.compile(f"(?s){prefix}{body}"), directory_only, negated)


def ignore_matches(pattern: str, path: str) -> bool:
    """Whether one ignore pattern applies to ``path``: it matches the path itself or a
    directory above it. A leading ``!`` is not read as negation here (``is_ignored`` gives
    it its meaning); a ``path`` ending in ``/`` is a directory."""
    rule = compile_ignore(pattern)
    return rule is not None and any(_applies(rule, level) for level in _levels(path))


def is_ignored(patterns: Sequence[str], path: str) -> bool:
    """The verdict of a whole ignore file for ``path`` (a trailing ``/`` marks a directory):
    excluded when its last matching line, or that of a directory above it, excludes it."""
    return is_ignored_by(compile_ignores(patterns), path)


def is_ignored_by(rules: Sequence[IgnoreRule], path: str) -> bool:
    """``is_ignored`` with rules compiled once (``compile_ignores``)."""
    return any(excluded_here(rules, level) for level in _levels(path))


def excluded_here(rules: Sequence[IgnoreRule], path: str) -> bool:
    """The verdict for ``path`` alone, its directories not considered (for a tree walk that
    has already checked them): the last rule that matches decides."""
    verdict = False
    for rule in rules:
        if _applies(rule, path):
            verdict = not rule.negated
    return verdict


def compile_ignores(patterns: Sequence[str]) -> tuple[IgnoreRule, ...]:
    return tuple(rule for rule in map(compile_ignore, patterns) if rule is not None)


def _applies(rule: IgnoreRule, path: str) -> bool:
    is_directory = path.endswith("/")
    if rule.directory_only and not is_directory:
        return False
    return rule.regex.fullmatch(path.rstrip("/")) is not None


def _levels(path: str) -> list[str]:
    """``a/b/c`` -> ``a/``, ``a/b/``, ``a/b/c``: the directories above a path, then the path."""
    clean = _clean_path(path)
    segments = [segment for segment in clean.split("/") if segment]
    levels = ["/".join(segments[: count + 1]) + "/" for count in range(len(segments) - 1)]
    if segments:
        levels.append("/".join(segments) + ("/" if clean.endswith("/") else ""))
    return levels
