"""git's index as an agent may leave it: put back, read for flags, and made to look again.

git compares a tracked file with the index only when the index lets it. An entry flagged
skip-worktree or assume-unchanged is never compared; an entry whose cached file data (size,
times, inode) matches the file is taken as unchanged without reading it. An agent that sets a
flag, or writes an index whose entry keeps the committed blob id beside its new file's data,
hides its change: ``git status`` and ``git diff`` show nothing, a rollback (even
``git checkout-index -f``) leaves the file as it is, and the next tick's verify runs it.

So the index the agent leaves is never used: ``KeptIndex`` reads the one from before the
agent and puts it back. memento stages what it commits itself, so nothing of the agent's index
is lost but what it hid (an agent's ``git add`` becomes a change in the work tree again).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from memento_gh import gitrun
from memento_gh.errors import UserError

SKIP_WORKTREE = "skip-worktree"
ASSUME_UNCHANGED = "assume-unchanged"
_CHUNK = 1 << 20
_NAMED_PATHS = 200


class Blob(NamedTuple):
    """A path's entry in a commit: its mode (``100644``, ``100755``, ``120000``) and blob id."""

    mode: str
    oid: str


class IndexReport(NamedTuple):
    """What the agent had done to the index that memento put back."""

    flags: tuple[tuple[str, str], ...] = ()  # (flag, path) pairs the old index did not have
    unreadable: str | None = None  # git's complaint about the agent's index, if it had one


class KeptIndex:
    """The index file's bytes and stat data, read when made (before the agent);
    ``put_back`` restores it. Memory, not a file: nothing the agent can write to."""

    def __init__(self, root: Path, index: Path | None) -> None:
        self._root = root
        self._index = index
        self._data: bytes | None = None
        self._stamp: tuple[int, ...] | None = None
        if index is None:
            return
        try:
            with open(index, "rb", opener=_no_links) as stream:
                self._stamp = file_stamp(os.fstat(stream.fileno()))
                self._data = stream.read()
        except OSError:  # no index yet (a new repository): nothing to keep
            self._data = None

    def put_back(self) -> IndexReport:
        """Put the index from before back if the agent replaced or changed it, and report
        what the agent's index held that the old one did not. No git process when the index
        file is untouched (its inode, size and times, the change time included, which no
        process can set back)."""
        index, data = self._index, self._data
        if index is None or data is None or self._unchanged(index):
            return IndexReport()
        flags, unreadable = index_flags(self._root)
        try:
            _replace(index, data)
        except OSError as error:
            raise UserError(
                f"could not put git's index back at {index} ({error.strerror}); "
                "remove what stands there, then run `git reset`"
            ) from None
        if flags:
            flags -= index_flags(self._root)[0]
        return IndexReport(tuple(sorted(flags)), unreadable)

    def _unchanged(self, index: Path) -> bool:
        try:
            return file_stamp(os.lstat(index)) == self._stamp
        except OSError:
            return False


def index_flags(root: Path) -> tuple[set[tuple[str, str]], str | None]:
    """Every ``(flag, path)`` of the index, entries git does not compare with the work tree;
    and git's complaint when it cannot read the index (None when it can)."""
    done = gitrun.run(root, "ls-files", "-v", "-z")
    if done.returncode != 0:
        return set(), gitrun.reason(done)
    found: set[tuple[str, str]] = set()
    for record in done.stdout.split(b"\0"):
        if len(record) < 3:
            continue
        tag, path = record[:1].decode("ascii", "replace"), os.fsdecode(record[2:])
        if tag in "Ss":
            found.add((SKIP_WORKTREE, path))
        if tag.islower():
            found.add((ASSUME_UNCHANGED, path))
    return found, None


def rebuild(root: Path, head: str | None) -> None:
    """Make the index afresh from ``head`` (empty on an unborn branch): no flag, no cached
    file data, so that git reads every file again."""
    gitrun.check(root, "read-tree", *((head,) if head else ("--empty",)))


def blobs(root: Path, commit: str, paths: Iterable[str]) -> dict[str, Blob]:
    """The entries of ``paths`` in ``commit``; a path it does not hold is left out."""
    chosen = set(paths)
    if not chosen:
        return {}
    # Named one by one while the command line stays short; else the whole tree, filtered.
    named = (commit, "--", *sorted(chosen)) if len(chosen) <= _NAMED_PATHS else ("-r", commit)
    listing = gitrun.check(root, "ls-tree", "-z", "--full-tree", *named)
    found: dict[str, Blob] = {}
    for record in listing.split(b"\0"):
        head, tab, name = record.partition(b"\t")
        path = os.fsdecode(name)
        if tab and path in chosen:
            mode, kind, oid = head.decode("ascii").split(" ")
            if kind == "blob":
                found[path] = Blob(mode, oid)
    return found


def refresh(root: Path, entries: Mapping[str, Blob]) -> None:
    """Make the index entries of ``entries`` afresh, as in the commit: no flag and no cached
    file data, so that git reads those files again."""
    if entries:
        lines = b"".join(
            f"{blob.mode} {blob.oid}\t".encode("ascii") + os.fsencode(path) + b"\0"
            for path, blob in entries.items()
        )
        gitrun.check(root, "update-index", "-z", "--index-info", stdin=lines)


def same_as(path: Path, blob: Blob) -> bool:
    """Whether the file at ``path`` holds ``blob`` byte for byte, with its mode: a link for
    ``120000``, the executable bit for ``100755``. Conversions git would make on the way in
    (line endings) are not made: a file that differs only by them is not the same here."""
    try:
        found = path.lstat()
        if stat.S_ISLNK(found.st_mode) != (blob.mode == "120000"):
            return False
        if stat.S_ISLNK(found.st_mode):
            data = os.fsencode(path.readlink())
            return _blob_id([data], len(data), blob.oid) == blob.oid
        if not stat.S_ISREG(found.st_mode) or bool(found.st_mode & 0o100) != (
            blob.mode == "100755"
        ):
            return False
        with path.open("rb") as stream:
            chunks = iter(lambda: stream.read(_CHUNK), b"")
            return _blob_id(chunks, found.st_size, blob.oid) == blob.oid
    except OSError:
        return False


def _blob_id(chunks: Iterable[bytes], size: int, like: str) -> str:
    """git's id of a blob of ``size`` bytes, in the hash ``like`` is in (SHA-1 or SHA-256)."""
    # Imported here, by the rare tick that compares a file: importing hashlib (OpenSSL) costs
    # every tick 11M instructions, 3% of a 1,000-task tick (valgrind, installed package).
    import hashlib

    digest = hashlib.sha1() if len(like) == 40 else hashlib.sha256()
    digest.update(b"blob %d\0" % size)
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def file_stamp(found: os.stat_result) -> tuple[int, ...]:
    """What changes whenever a file is written, replaced or removed."""
    return (
        found.st_dev,
        found.st_ino,
        found.st_mode,
        found.st_size,
        found.st_mtime_ns,
        found.st_ctime_ns,
    )


def _no_links(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _replace(index: Path, data: bytes) -> None:
    """Write ``data`` to a new file and rename it over ``index``, as git does."""
    descriptor, name = tempfile.mkstemp(prefix=f"{index.name}.", dir=index.parent)
    fresh = Path(name)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)
    try:
        fresh.chmod(0o644)
        fresh.replace(index)
    except OSError:
        fresh.unlink()
        raise
