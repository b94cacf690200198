"""The limits a task's change must keep: a pure function of the change.

The change is checked after the agent stops and before ``verify`` runs; a change that breaks
a limit fails the task without running ``verify``.

Every path a change touches counts: both sides of a rename, deletions, untracked files.
One violation per offending path, by the first rule it breaks in this order:

1. ``protected``: memento's own files (the plan, map, status log, notes, state, memory,
   ``.memento/``, ``.memento_ignore``, ``.memento_cleanignore``, ``.github/``, ``.git/``),
   even where ``context_files`` would allow them;
2. ``guard_file``: a path that matches the task's ``guard_files``;
3. ``outside_context``: a path that matches none of the task's ``context_files``.

Then at most one ``diff_too_large`` for the whole change: added plus removed lines above
``max_diff_lines``. A binary file has no lines; each binary change counts as
``BINARY_CHANGE_LINES`` so that it shows in the total without dwarfing it (git's numstat gives
binary files no line count, and a binary file cannot be the full-file rewrite of source this
guard exists to catch).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import NamedTuple, Protocol

from memento_gh.changes import DELETED
from memento_gh.engine.globs import first_match
from memento_gh.layout import MAP_NAME, NOTES_NAME, PLAN_NAME, STATE_NAME, STATUS_NAME
from memento_gh.plan.model import Task

GUARD_FILE = "guard_file"
OUTSIDE_CONTEXT = "outside_context"
PROTECTED = "protected"
DIFF_TOO_LARGE = "diff_too_large"
#: Rules the orchestrator checks itself (they are not about the file change).
HEAD_MOVED = "head_moved"
GIT_INTERNALS = "git_internals"

BINARY_CHANGE_LINES = 1

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
) -> list[Violation]:
    """Every limit the change breaks, in path order, then the size limit; [] when it keeps all."""
    ordered = sorted(changes, key=lambda change: (change.path, change.old_path or ""))
    violations: list[Violation] = []
    seen: set[str] = set()
    for change in ordered:
        for path, how in _touched(change):
            if path in seen:
                continue
            found = _path_violation(path, how, task, protected)
            if found is not None:
                seen.add(path)
                violations.append(found)
    size = _diff_size_violation(ordered, max_diff_lines)
    if size is not None:
        violations.append(size)
    return violations


def diff_lines(changes: Iterable[Change]) -> int:
    """The size of a change as the diff guard counts it (and the status log shows it)."""
    return sum(
        change.added + change.removed + (BINARY_CHANGE_LINES if change.binary else 0)
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


def _diff_size_violation(changes: Sequence[Change], limit: int) -> Violation | None:
    total = diff_lines(changes)
    if total <= limit:
        return None
    added = sum(change.added for change in changes)
    removed = sum(change.removed for change in changes)
    binary = sum(1 for change in changes if change.binary)
    binaries = f", {binary} binary file{'s' if binary != 1 else ''}" if binary else ""
    return Violation(
        DIFF_TOO_LARGE,
        None,
        f"the change has {total} changed lines (+{added} -{removed}{binaries}), more than "
        f"max_diff_lines ({limit}): a possible full-file rewrite",
    )
