"""The bytes verify saw: the agent's files fingerprinted just before verify runs and again
just before the commit, which reads them from the work tree once more (``git commit
--only``). A file that changed in between (verify's own run rewrote it, or a process out of
memento's reach did) would put bytes nobody checked into the commit: the attempt fails.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from memento_gh.changes import FileChange

_CHUNK = 1 << 20


def paths_of(changes: Iterable[FileChange]) -> list[str]:
    """Every path a change touches: the new one, and the old one of a rename."""
    found: list[str] = []
    for change in changes:
        found.append(change.path)
        if change.old_path:
            found.append(change.old_path)
    return found


def fingerprint(root: Path, paths: Iterable[str]) -> dict[str, bytes]:
    """Per path: what is there (nothing, a link and its target, a folder, something else)
    and, for a file, its executable bit and a SHA-256 of its bytes."""
    return {path: _state(root / path) for path in paths}


def changed_since(root: Path, seen: Mapping[str, bytes]) -> list[str]:
    """The paths of ``seen`` that differ now, in its order."""
    return [path for path, before in seen.items() if _state(root / path) != before]


def _state(path: Path) -> bytes:
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            return b"link:" + os.fsencode(path.readlink())
        if stat.S_ISDIR(mode):  # a nested repository: git commits it as one entry
            return b"folder"
        if not stat.S_ISREG(mode):
            return b"special"
        # Never through a link, never blocking: the entry may have been swapped since.
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return b"absent"
    except OSError as error:
        return f"unreadable:{error.errno}".encode()
    # Imported here, as gitindex does: importing hashlib (OpenSSL) costs 11M instructions,
    # which a tick whose agent changed nothing need not pay.
    import hashlib

    digest = hashlib.sha256(b"executable:" if mode & stat.S_IXUSR else b"file:")
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return b"special"
        while chunk := os.read(descriptor, _CHUNK):
            digest.update(chunk)
    except OSError as error:
        return f"unreadable:{error.errno}".encode()
    finally:
        os.close(descriptor)
    return digest.digest()
