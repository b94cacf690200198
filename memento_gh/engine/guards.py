"""The limits a task's change must keep: a pure function of the change.

The change is checked after the agent stops and before ``verify`` runs; a change that breaks
a limit fails the task without running ``verify``.

Every path a change touches counts: both sides of a rename, deletions, untracked files.
One violation per offending path, by the first rule it breaks in this order:

1. ``protected``: memento's own files (the plan, map, status log, notes, state, memory,
   ``.memento/``, ``.memento_ignore``, ``.memento_cleanignore``, ``.github/``, ``.git/``),
   even where ``context_files`` would allow them;
2. ``guard_file``: a path that matches the task's ``guard_files``;
3. ``outside_context``: a path that matches none of the task's ``context_files``;
4. ``file_too_large``: a file the change adds or changes that is bigger than
   ``max_file_size`` in the work tree (what a commit would store).

Then at most one ``diff_too_large`` for the whole change: added plus removed lines above
``max_diff_lines``; and at most one ``diff_too_many_bytes``: the files it adds or changes
hold more than ``max_diff_bytes`` in all (each counts its whole size, text or binary, as a
commit stores it; not said when a file is too large already), so that no number of
long-lined files below ``max_file_size`` and ``max_diff_lines`` fits in one change either.

A binary file has no lines (git's numstat gives it none), yet it is what
fills a repository: it counts as its size in lines ``max_file_size / max_diff_lines`` bytes
wide (25 kB with the defaults), at least ``BINARY_CHANGE_LINES``. So a binary file of
``max_file_size`` takes the whole change's room, binary files together can add no more than
``max_file_size`` to one change, and a mix of text and binaries shares the room; a plan that
raises ``max_file_size`` to hold larger assets makes each of them count less. A deleted
binary counts the least: it has no size left, and it adds nothing to the repository.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import NamedTuple, Protocol

from memento_gh.changes import DELETED
from memento_gh.engine.globs import first_match
from memento_gh.layout import MAP_NAME, NOTES_NAME, PLAN_NAME, STATE_NAME, STATUS_NAME
from memento_gh.plan.meta import Settings
from memento_gh.plan.model import Task

GUARD_FILE = "guard_file"
OUTSIDE_CONTEXT = "outside_context"
PROTECTED = "protected"
DIFF_TOO_LARGE = "diff_too_large"
DIFF_TOO_MANY_BYTES = "diff_too_many_bytes"
FILE_TOO_LARGE = "file_too_large"
#: Rules the orchestrator checks itself (they are not about the file change).
HEAD_MOVED = "head_moved"
GIT_INTERNALS = "git_internals"

#: The least a binary change counts in the diff guard.
BINARY_CHANGE_LINES = 1
_DEFAULTS = Settings()
_NO_SIZES: Mapping[str, int] = {}

#: Repository-root paths no agent may change, whatever the plan's directory.
ROOT_PROTECTED = (".memento/", ".memento_ignore", ".memento_cleanignore", ".github/", ".git/")


class Change(Protocol):
    """What the guards read of a change: ``changes.FileChange`` or any record like it."""

    @property
    def path(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def added(self) -> int: ...
    @property
    def removed(self) -> int: ...
    @property
    def binary(self) -> bool: ...
    @property
    def old_path(self) -> str | None: ...


class Violation(NamedTuple):
    rule: str  # GUARD_FILE | OUTSIDE_CONTEXT | PROTECTED | DIFF_TOO_LARGE | HEAD_MOVED | ...
    path: str | None  # None for a rule about the whole change
    message: str  # one sentence for the status log: the path, the rule, why


def protected_paths(plan_dir: str) -> tuple[str, ...]:
    """memento's own files as ``context_files`` patterns, for a plan kept in ``plan_dir``
    (``docs``; ``.`` or ``""`` for the repository root)."""
    folder = PurePosixPath(plan_dir.replace("\\", "/").strip("/") or ".").as_posix()
    prefix = "" if folder == "." else f"{folder}/"
    names = (PLAN_NAME, MAP_NAME, STATUS_NAME, NOTES_NAME, STATE_NAME, "memory/")
    return (*(prefix + name for name in names), *ROOT_PROTECTED)


def check_guards(
    changes: Iterable[Change],
    task: Task,
    *,
    max_diff_lines: int,
    protected: Sequence[str],
    max_file_size: int = _DEFAULTS.max_file_size,
    sizes: Mapping[str, int] = _NO_SIZES,
    max_diff_bytes: int = _DEFAULTS.max_diff_bytes,
) -> list[Violation]:
    """Every limit the change breaks, in path order, then the size limits; [] when it keeps all.
    ``sizes`` holds the bytes of each path the change adds or changes, as the work tree has
    it (a path it leaves out counts as empty)."""
    ordered = sorted(changes, key=lambda change: (change.path, change.old_path or ""))
    violations: list[Violation] = []
    seen: set[str] = set()
    for change in ordered:
        for path, how in _touched(change):
            if path in seen:
                continue
            found = _path_violation(path, how, task, protected)
            if found is None and path == change.path and change.kind != DELETED:
                found = _file_size_violation(path, sizes.get(path, 0), max_file_size)
            if found is not None:
                seen.add(path)
                violations.append(found)
    room = Room(max_diff_lines, max_file_size)
    size = _diff_size_violation(ordered, room, sizes)
    if size is not None:
        violations.append(size)
    # A file too large says it already; the sum would only repeat it.
    heavy = None
    if not any(violation.rule == FILE_TOO_LARGE for violation in violations):
        heavy = _diff_bytes_violation(ordered, sizes, max_diff_bytes)
    if heavy is not None:
        violations.append(heavy)
    return violations


class Room(NamedTuple):
    """How much one change may hold: lines of text, bytes of one file."""

    max_diff_lines: int = _DEFAULTS.max_diff_lines
    max_file_size: int = _DEFAULTS.max_file_size

    def binary_lines(self, size: int) -> int:
        """The lines a binary file of ``size`` bytes counts as: one per started
        ``max_file_size / max_diff_lines`` bytes, at least ``BINARY_CHANGE_LINES``."""
        started = -(-size * self.max_diff_lines // self.max_file_size)  # a whole ceiling
        return max(BINARY_CHANGE_LINES, started)


def diff_lines(
    changes: Iterable[Change], sizes: Mapping[str, int] = _NO_SIZES, room: Room | None = None
) -> int:
    """The size of a change as the diff guard counts it: its lines added and removed, and
    each binary file by its size in ``sizes`` (see the module's docstring)."""
    room = room or Room()
    return sum(
        change.added
        + change.removed
        + (room.binary_lines(sizes.get(change.path, 0)) if change.binary else 0)
        for change in changes
    )


def _touched(change: Change) -> list[tuple[str, str]]:
    """The paths a change touches, each with how, as a message says it."""
    if change.old_path is not None and change.old_path != change.path:
        return [
            (change.old_path, f"was renamed to {change.path}"),
            (change.path, f"was renamed from {change.old_path}"),
        ]
    how = "was deleted" if change.kind == DELETED else f"was {_participle(change.kind)}"
    return [(change.path, how)]


def _participle(kind: str) -> str:
    return {"untracked": "created", "added": "added", "typechange": "changed in type"}.get(
        kind, "modified"
    )


def _path_violation(path: str, how: str, task: Task, protected: Sequence[str]) -> Violation | None:
    found = first_match(protected, path)
    if found is not None:
        return Violation(
            PROTECTED,
            path,
            f"{path} is one of memento's own files ({found}), which no task may change, "
            f"and it {how}",
        )
    found = first_match(task.guard_files, path)
    if found is not None:
        return Violation(
            GUARD_FILE,
            path,
            f"{path} is a guard file of {task.id} (guard_files: {found}) and it {how}",
        )
    if first_match(task.context_files, path) is None:
        return Violation(
            OUTSIDE_CONTEXT,
            path,
            f"{path} is outside the context_files of {task.id} and it {how}",
        )
    return None


def _file_size_violation(path: str, size: int, limit: int) -> Violation | None:
    if size <= limit:
        return None
    shown, most = show_sizes(size, limit)
    return Violation(
        FILE_TOO_LARGE,
        path,
        f"{path} is {shown}, more than max_file_size ({most}): keep files that large out of "
        "the repository, or raise max_file_size in the plan's Meta",
    )


def _diff_size_violation(
    changes: Sequence[Change], room: Room, sizes: Mapping[str, int]
) -> Violation | None:
    total = diff_lines(changes, sizes, room)
    limit = room.max_diff_lines
    if total <= limit:
        return None
    added = sum(change.added for change in changes)
    removed = sum(change.removed for change in changes)
    binaries = [change.path for change in changes if change.binary]
    counted = total - added - removed
    shown = ""
    if binaries:
        shown = f", {len(binaries)} binary file{'s' if len(binaries) != 1 else ''}"
        if counted != len(binaries) * BINARY_CHANGE_LINES:
            size = show_sizes(sum(sizes.get(path, 0) for path in binaries))[0]
            shown += f" of {size} counted as {counted} lines"
    return Violation(
        DIFF_TOO_LARGE,
        None,
        f"the change has {total} changed lines (+{added} -{removed}{shown}), more than "
        f"max_diff_lines ({limit}): a possible full-file rewrite",
    )


def _diff_bytes_violation(
    changes: Sequence[Change], sizes: Mapping[str, int], limit: int
) -> Violation | None:
    held = [
        (change.path, sizes.get(change.path, 0)) for change in changes if change.kind != DELETED
    ]
    total = sum(size for _, size in held)
    if total <= limit:
        return None
    shown, most = show_sizes(total, limit)
    largest = max(held, key=lambda found: found[1])[0]
    return Violation(
        DIFF_TOO_MANY_BYTES,
        None,
        f"the files the change adds or changes hold {shown} ({len(held)} file"
        f"{'s' if len(held) != 1 else ''}, the largest {largest}), more than max_diff_bytes "
        f"({most}): split the work, or raise max_diff_bytes in the plan's Meta",
    )


def show_sizes(*sizes: int) -> tuple[str, ...]:
    """Byte counts for a person: ``20 MB``, ``1.2 MB``, ``512 bytes`` (kB, MB, GB are powers
    of 1000, as in ``max_file_size: 5MB``); exact counts when rounding would show two
    different sizes alike."""
    shown = tuple(_rounded(size) for size in sizes)
    if len(set(shown)) < len(set(sizes)):
        return tuple(f"{size:,} bytes" for size in sizes)
    return shown


def _rounded(size: int) -> str:
    for unit, factor in (("GB", 1000**3), ("MB", 1000**2), ("kB", 1000)):
        if size >= factor:
            return f"{size / factor:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} byte{'s' if size != 1 else ''}"
