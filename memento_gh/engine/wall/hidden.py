"""Changes the agent hid from git, found and shown to git again (the wall around the agent).

Two checks, neither of which takes git's index at its word:

- the index: ``gitindex.KeptIndex`` puts back the index from before the agent, so no flag
  the agent set and no entry it forged survives it; a flag it set is a violation;
- the files the wall watches (a task's ``guard_files`` and ``context_files``; for the
  architect, which may change none, every file): the index put back may still hide them
  from git (a flag the user set, file data git trusts without reading the file when the
  repository's configuration says so, a git to come). So their stat data is
  taken before the agent and again after it (a write moves the change time, which no process
  can set back); a file whose data moved while git lists no change to it is compared with
  its blob in HEAD. When they differ, its index entry is made afresh: git reads the file,
  the guards judge the change, a rollback puts it back, and the hiding is a violation.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from memento_gh.changes import FileChange
from memento_gh.engine.globs import first_match, literal_prefix
from memento_gh.engine.wall.gitindex import (
    ASSUME_UNCHANGED,
    SKIP_WORKTREE,
    IndexReport,
    blobs,
    file_stamp,
    refresh,
    same_as,
)

#: A file's stat data, by repository path.
Stamps = Mapping[str, tuple[int, ...]]
_SHOWN = 5  # paths a message names before it counts the rest


def stamp_files(
    root: Path,
    patterns: Sequence[str],
    skip: Callable[[str], bool],
    ignored: Collection[str] = (),
) -> Stamps:
    """The stat data of every file and link that ``patterns`` match (``.git`` folders, the
    paths ``skip`` says aside and the folders of ``ignored`` left out: git ignores them as a
    whole, so they hold no tracked file), found below each pattern's literal prefix only."""
    stamps: dict[str, tuple[int, ...]] = {}
    for start in _starts(patterns):
        for path, found in _below(root, start, frozenset(ignored)):
            if not skip(path) and first_match(patterns, path) is not None:
                stamps[path] = file_stamp(found)
    return stamps


def expose(root: Path, stamps: Stamps, head: str | None, listed: Collection[str]) -> set[str]:
    """The stamped files that changed on disk but not for git (not in ``listed``) and no
    longer hold their blob in ``head``; their index entries are made afresh, so that git
    reads them. No git process when every changed file is one git listed."""
    moved = [
        path for path, stamp in stamps.items() if path not in listed and _moved(root, path, stamp)
    ]
    if not moved or head is None:
        return set()
    committed = blobs(root, head, moved)
    differ = {path: blob for path, blob in committed.items() if not same_as(root / path, blob)}
    refresh(root, differ)
    return set(differ)


def hidden_messages(exposed: Collection[str], changes: Iterable[FileChange]) -> list[str]:
    """One violation naming the exposed files that git, reading them again, found changed."""
    hid = sorted(change.path for change in changes if change.path in exposed)
    if not hid:
        return []
    return [
        f"git's index hid the change to {_some(hid)} (a flag on the entry, or file data git "
        "trusted without reading the file); memento made git read it again"
    ]


def index_messages(report: IndexReport) -> list[str]:
    """The violations in what the agent did to git's index (which memento put back)."""
    messages = []
    for flag in (SKIP_WORKTREE, ASSUME_UNCHANGED):
        paths = sorted(path for kind, path in report.flags if kind == flag)
        if paths:
            messages.append(
                f"the agent set {flag} on {_some(paths)} in git's index, which hides changes "
                "from git; memento put back the index from before the agent"
            )
    if report.unreadable:
        messages.append(
            f"the agent left git's index unreadable ({report.unreadable}); memento put back "
            "the index from before the agent"
        )
    return messages


def _starts(patterns: Sequence[str]) -> list[str]:
    """The literal prefixes to walk, none inside another."""
    chosen: list[str] = []
    for start in sorted({prefix for prefix in map(literal_prefix, patterns) if prefix is not None}):
        if not any(start == done or not done or start.startswith(f"{done}/") for done in chosen):
            chosen.append(start)
    return chosen


def _below(root: Path, start: str, ignored: frozenset[str]) -> Iterator[tuple[str, os.stat_result]]:
    """Every file and link at or below ``start``; links are not followed, ``.git`` and the
    ``ignored`` folders skipped."""
    try:
        found = os.lstat(root / start)
    except OSError:
        return
    if not stat.S_ISDIR(found.st_mode):
        yield start, found
        return
    folders = [start]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(root / folder))
        except OSError:
            continue
        for entry in entries:
            path = f"{folder}/{entry.name}" if folder else entry.name
            if entry.name == ".git" or path in ignored:
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append(path)
            else:
                try:
                    yield path, entry.stat(follow_symlinks=False)
                except OSError:
                    continue


def _moved(root: Path, path: str, stamp: tuple[int, ...]) -> bool:
    try:
        return file_stamp(os.lstat(root / path)) != stamp
    except OSError:
        return True  # gone


def _some(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:_SHOWN])
    return shown if len(paths) <= _SHOWN else f"{shown} and {len(paths) - _SHOWN} more"
