"""The files of a task's ``context_files``, read for the prompt (the one reader of the engine's
pure core: it walks the work tree and reads files, and changes nothing).

A pattern is searched for below its literal prefix only (``src/db`` for ``src/db/*.sql``),
so a task naming a few files costs a few ``stat`` calls however large the repository is.
Skipped on the way: ``.git`` directories, paths that ``.memento_ignore`` excludes and paths
of ``exclude`` (memento's own files). A pattern without wildcards that finds no file is still
listed, so the agent learns why: missing (it may create it), ignored, or protected.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from memento_gh import files
from memento_gh.engine.globs import (
    IgnoreRule,
    compile_ignores,
    excluded_here,
    has_wildcards,
    is_ignored_by,
    literal_prefix,
    matches,
    matches_any,
    normalize,
    parse_ignore,
)
from memento_gh.engine.prompt import (
    BINARY,
    IGNORED,
    MISSING,
    OVER_BUDGET,
    PROTECTED,
    SPECIAL,
    SYMLINK,
    TOO_LARGE,
    UNREADABLE,
    ContextFile,
)
from memento_gh.errors import UserError

BINARY_SNIFF = 8192
DEFAULT_PER_FILE_CAP = 64_000
DEFAULT_TOTAL_CAP = 256_000


def read_ignore_file(path: Path) -> list[str]:
    """The patterns of an ignore file (``.memento_ignore``, ``.memento_cleanignore``);
    [] when there is none. Not UTF-8, or not a regular file, is a ``UserError`` naming it."""
    text = files.read_optional(path)
    return [] if text is None else parse_ignore(text)


def gather_context(
    root: Path,
    patterns: Sequence[str],
    ignore_patterns: Sequence[str],
    *,
    per_file_cap: int = DEFAULT_PER_FILE_CAP,
    total_cap: int = DEFAULT_TOTAL_CAP,
    exclude: Sequence[str] = (),
) -> list[ContextFile]:
    """The files under ``root`` that ``patterns`` match, sorted by path, each with its text
    or the reason it has none. Files are read in path order while ``total_cap`` bytes last;
    a file that does not fit is listed as over the budget and later, smaller files may still
    fit. ``exclude`` holds ``context_files``-style patterns of files never shown
    (pass ``guards.protected_paths(plan_dir)``)."""
    finder = _Finder(root, ignore_patterns, tuple(exclude))
    found: set[str] = set()
    special: dict[str, str] = {}
    for pattern in patterns:
        matched = finder.matches(pattern)
        found.update(matched)
        if not matched:
            named = finder.named_but_absent(pattern)
            if named is not None:
                special.setdefault(*named)
    budget = _Budget(total_cap)
    files = [_read(finder, path, per_file_cap, budget) for path in sorted(found)]
    files += [
        ContextFile(path, 0, None, note)
        for path, note in special.items()
        if path.rstrip("/") not in found
    ]
    return sorted(files, key=lambda item: item.path)


class _Budget:
    def __init__(self, total: int) -> None:
        self.left = total

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


class _Finder:
    """Walks the tree below each pattern's literal prefix, once per prefix."""

    def __init__(self, root: Path, ignore_patterns: Sequence[str], exclude: tuple[str, ...]):
        self.root = root
        self.ignore_patterns = ignore_patterns
        self._rules: Sequence[IgnoreRule] | None = None
        self.exclude = exclude
        self.walked: dict[str, list[str]] = {}

    @property
    def rules(self) -> Sequence[IgnoreRule]:
        """The ignore rules, compiled when a path first needs them (a task whose files do
        not exist yet needs none)."""
        if self._rules is None:
            self._rules = compile_ignores(self.ignore_patterns)
        return self._rules

    def matches(self, pattern: str) -> list[str]:
        start = literal_prefix(pattern)
        if start is None:
            return []
        if start not in self.walked:
            self.walked[start] = list(self._walk(start))
        return [path for path in self.walked[start] if matches(pattern, path)]

    def named_but_absent(self, pattern: str) -> tuple[str, str] | None:
        """For a pattern without wildcards that found no file: the entry that says why."""
        text = normalize(pattern)
        start = literal_prefix(pattern)
        if not start or has_wildcards(text):
            return None
        full = self.root / start
        is_directory = text.endswith("/") or full.is_dir()
        shown = start + "/" if is_directory else start
        if _in_git_dir(start) or self._excluded(start):
            return shown, PROTECTED
        if full.is_symlink():
            return shown, SYMLINK
        if not full.exists():
            return shown, MISSING
        if self._ignored(start + "/" if is_directory else start):
            return shown, IGNORED
        return (shown, MISSING) if is_directory else None

    def _excluded(self, path: str) -> bool:
        """``path`` is one of memento's own files, or a directory they fill (``docs/memory``):
        a pattern that matches any name below it covers the whole directory."""
        return matches_any(self.exclude, path) or matches_any(self.exclude, f"{path}/\0")

    def _ignored(self, path: str) -> bool:
        """The verdict of the ignore rules for ``path`` and every directory above it."""
        return is_ignored_by(self.rules, path)

    def shows_link(self, link: Path) -> bool:
        """A symbolic link is read like the file it points to when that is a regular file
        inside the repository that would be shown itself (not in .git, ignored or excluded)."""
        try:
            target = link.resolve(strict=True)
            relative = target.relative_to(self.root.resolve()).as_posix()
        except (OSError, RuntimeError, ValueError):
            return False
        return target.is_file() and not (
            _in_git_dir(relative) or self._ignored(relative) or matches_any(self.exclude, relative)
        )

    def _walk(self, start: str) -> Iterator[str]:
        """Every file at or below ``start`` that is not skipped, as repo-relative paths."""
        full = self.root / start if start else self.root
        if start and _in_git_dir(start):
            return
        if start and (full.is_symlink() or (full.exists() and not full.is_dir())):
            if not self._ignored(start) and not matches_any(self.exclude, start):
                yield start  # a file, a link, or a special file (a note in the prompt)
        elif full.is_dir() and not (start and self._ignored(start + "/")):
            yield from self._walk_directory(full, start)

    def _walk_directory(self, full: Path, start: str) -> Iterator[str]:
        prefix = f"{start}/" if start else ""
        for directory, subdirectories, names in os.walk(full):
            relative = Path(directory).relative_to(full).as_posix()
            base = prefix if relative == "." else f"{prefix}{relative}/"
            kept = []
            for name in sorted(subdirectories):
                path = base + name
                if Path(directory, name).is_symlink():
                    names.append(name)  # listed, never followed
                elif name != ".git" and not excluded_here(self.rules, path + "/"):
                    kept.append(name)
            subdirectories[:] = kept
            for name in sorted(names):
                path = base + name
                if not excluded_here(self.rules, path) and not matches_any(self.exclude, path):
                    yield path


def _in_git_dir(path: str) -> bool:
    return ".git" in path.split("/")


def _read(finder: _Finder, path: str, per_file_cap: int, budget: _Budget) -> ContextFile:
    full = finder.root / path
    try:
        mode = full.lstat().st_mode
        link = stat.S_ISLNK(mode)
        if link and not finder.shows_link(full):
            return ContextFile(path, 0, None, SYMLINK)
        if not link and not stat.S_ISREG(mode):  # opening a FIFO blocks, a device may act
            return ContextFile(path, 0, None, SPECIAL)
        descriptor = files.open_regular(full, os.O_RDONLY, follow_links=link)
    except (OSError, UserError):
        return ContextFile(path, 0, None, UNREADABLE)
    if descriptor is None:  # gone since it was found
        return ContextFile(path, 0, None, UNREADABLE)
    try:
        with os.fdopen(descriptor, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            head = stream.read(BINARY_SNIFF)
            if b"\0" in head:
                return ContextFile(path, size, None, BINARY)
            if size > per_file_cap:
                return ContextFile(path, size, None, TOO_LARGE)
            data = head + stream.read(per_file_cap + 1 - len(head))
    except OSError:
        return ContextFile(path, 0, None, UNREADABLE)
    if len(data) > per_file_cap:  # it grew while it was read
        return ContextFile(path, len(data), None, TOO_LARGE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ContextFile(path, len(data), None, BINARY)
    if not budget.take(len(data)):
        return ContextFile(path, len(data), None, OVER_BUDGET)
    return ContextFile(path, len(data), text, "")
