"""What differs from HEAD in the work tree: a pure record, filled by ``workspace.py`` and read
by the guards (``engine/guards.py``), which must not import the git adapter."""

from __future__ import annotations

from typing import NamedTuple

MODIFIED = "modified"
ADDED = "added"
DELETED = "deleted"
RENAMED = "renamed"
UNTRACKED = "untracked"
TYPECHANGE = "typechange"


class FileChange(NamedTuple):
    """One path that differs from HEAD, as the index and work tree stand."""

    path: str  # repo-relative POSIX path (the new path of a rename; "dir/" for a nested repo)
    kind: str  # "modified" | "added" | "deleted" | "renamed" | "untracked" | "typechange"
    added: int  # lines added (0 for binary)
    removed: int  # lines removed (0 for binary)
    binary: bool
    old_path: str | None = None  # the old path of a rename
