"""git's listings of a work tree's change, read into values: ``git diff --raw --numstat``
into ``FileChange`` records, and a file's lines and size counted as git counts them.
``workspace.py`` runs git; this module reads what it printed, and the files it named.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memento_gh.changes import (
    ADDED,
    DELETED,
    MODIFIED,
    RENAMED,
    TYPECHANGE,
    UNTRACKED,
    FileChange,
)

# git's own test for binary content (xdiff's FIRST_FEW_BYTES): a NUL among the first 8000 bytes.
_BINARY_PROBE = 8000
_CHUNK = 1 << 20
#: Read flags for a file the agent may have swapped: no waiting on a FIFO, no following a link.
_READ_NOW = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

_KINDS = {
    "M": MODIFIED,
    "A": ADDED,
    "C": ADDED,
    "D": DELETED,
    "R": RENAMED,
    "T": TYPECHANGE,
}


def split(listing: bytes) -> list[str]:
    """The paths of a ``-z`` listing."""
    return [os.fsdecode(item) for item in listing.split(b"\0") if item]


def tracked_changes(listing: bytes) -> list[FileChange]:
    """The changes of ``git diff --raw --numstat -z``, one per (new) path."""
    names, counts = _parse_raw_numstat(listing)
    found = []
    for letter, path, old_path in names:
        added, removed = counts.get(path, (0, 0))
        kind = _KINDS.get(letter, MODIFIED)
        found.append(FileChange(path, kind, added or 0, removed or 0, added is None, old_path))
    return found


def _parse_raw_numstat(
    listing: bytes,
) -> tuple[list[tuple[str, str, str | None]], dict[str, tuple[int | None, int | None]]]:
    """From ``git diff --raw --numstat -z``: ``(letter, path, old_path)`` per change (the
    raw records, which start with ``:``), and lines added and removed per (new) path (the
    numstat records; None for binary files, which git shows as ``-``)."""
    fields = iter(listing.split(b"\0"))
    names: list[tuple[str, str, str | None]] = []
    counts: dict[str, tuple[int | None, int | None]] = {}
    for record in fields:
        if not record:
            continue
        if record[:1] == b":":  # ":100644 100644 <sha> <sha> M", then the path(s)
            letter = os.fsdecode(record.rsplit(b" ", 1)[1][:1])
            first = os.fsdecode(next(fields))
            if letter in "RC":
                second = os.fsdecode(next(fields))
                names.append((letter, second, first if letter == "R" else None))
            else:
                names.append((letter, first, None))
            continue
        added, removed, path = record.split(b"\t", 2)
        if not path:  # a rename: the old and the new path follow as fields of their own
            next(fields)
            path = next(fields)
        counts[os.fsdecode(path)] = (_count(added), _count(removed))
    return names, counts


def _count(field: bytes) -> int | None:
    return None if field == b"-" else int(field)


def untracked_change(root: Path, path: str) -> FileChange:
    lines, binary = _count_lines(root / path)
    return FileChange(path, UNTRACKED, lines, 0, binary)


def size(path: Path) -> int:
    """The bytes of a file (of a link: the name it holds) in the work tree; 0 for a folder
    or a path gone since git listed it."""
    try:
        found = path.lstat()
    except OSError:
        return 0
    return 0 if stat.S_ISDIR(found.st_mode) else found.st_size


def _count_lines(path: Path) -> tuple[int, bool]:
    """Lines as ``git diff --numstat`` counts them (a last line without a newline counts),
    and whether git would call the file binary."""
    try:
        if path.is_symlink():  # git diffs a link's target text
            target = os.fsencode(path.readlink())
            return target.count(b"\n") + (0 if target.endswith(b"\n") else 1), False
        if path.is_dir():  # a nested repository
            return 0, False
        # Never blocking: a FIFO put there since git listed it is no file's content.
        descriptor = os.open(path, _READ_NOW)
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            return 0, False
        with os.fdopen(descriptor, "rb") as stream:
            chunk = stream.read(_BINARY_PROBE)
            if b"\0" in chunk:
                return 0, True
            lines, last = 0, b""
            while chunk:
                lines += chunk.count(b"\n")
                last = chunk
                chunk = stream.read(_CHUNK)
    except OSError:  # gone or unreadable since git listed it
        return 0, False
    return lines + (1 if last and not last.endswith(b"\n") else 0), False
