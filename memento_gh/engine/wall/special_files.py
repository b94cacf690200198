"""What the agent may not leave in the work tree: FIFOs, sockets, devices, and symbolic links
that lead out of the repository (or into ``.git``). A FIFO blocks whoever reads it, git
cannot even hash one in place of a tracked file, and a link out of the repository makes
whoever follows it read or write elsewhere. git does not list FIFOs, sockets or devices
among untracked files, so memento walks the tree itself.

The walk skips the folders git ignores as a whole (nothing there is committed, and memento
reads nothing there without checking it) and follows no link. In ``.git`` it covers what
memento's own git opens on every call (``config``, ``HEAD``, ``index``, the hooks, ``info/``,
the refs and their logs): a FIFO there would block git itself. Not ``objects/``. It runs
before the agent, so that what a person put there (a socket of a dev server, a link to /etc
that is tracked) is not the agent's, and after the agent and after verify. The walk after is
cheap: a folder whose inode and change time (``ctime``, which no process can set back) are
as before has the same entries, so only folders that changed are listed again.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from memento_gh import files
from memento_gh.errors import UserError

#: A folder changed this close before the walk is listed again after the agent whatever
#: its ctime says: file systems keep ctime in coarse ticks, and a change within the same
#: tick would not move it.
_RECENT_NS = 1_000_000_000
#: The folders of .git that are walked, with its top (config, HEAD, index, packed-refs): git
#: opens the files there on its own calls, and a FIFO among them would block it.
_HEAD = ".git/HEAD"
_GIT_FOLDERS = frozenset({"hooks", "info", "refs", "logs", "memento", "worktrees"})


class Stray(NamedTuple):
    """A special file, or a link out of the repository, in the work tree."""

    path: str  # relative to the work tree's top
    inode: int
    kind: str  # "a FIFO", "a symbolic link leading out of the repository (to /etc)"...

    def sentence(self) -> str:
        return f"the agent left {self.path}, {self.kind}"


class _Folder(NamedTuple):
    inode: int
    ctime: int  # ns
    recent: bool  # changed just before the walk: list it again after the agent
    folders: tuple[str, ...]  # the names of its subfolders that are walked
    strays: frozenset[tuple[str, int]]  # (name, inode) of the strays in it
    listed: bool = True  # False: memento could not list it


class Snapshot(NamedTuple):
    """The tree as the walk before the agent found it."""

    root: Path
    ignored: frozenset[str]  # folders git ignores, relative, without a trailing "/"
    folders: dict[str, _Folder]  # by path relative to ``root`` ("" for the top)
    head: str | None = None  # .git/HEAD's text: without that file git sees no repository


def snapshot(root: Path, ignored: Iterable[str]) -> Snapshot:
    """Walk the whole tree (but .git and ``ignored``) and remember every folder."""
    walker = _Walker(root, frozenset(ignored))
    folders: dict[str, _Folder] = {}
    stack = [""]
    while stack:
        relative = stack.pop()
        found = walker.list(relative, time.time_ns())
        if found is not None:
            folders[relative] = found[0]
            stack += [_join(relative, name) for name in found[0].folders]
    return Snapshot(root, walker.ignored, folders, _read_head(root))


def _read_head(root: Path) -> str | None:
    try:
        data = files.read_bytes(root / _HEAD, limit=4096)
        return None if data is None else data.decode("ascii")
    except (UserError, UnicodeDecodeError):
        return None


def new_strays(before: Snapshot) -> list[Stray]:
    """The strays in the tree that were not there at ``before``, and folders memento can
    no longer list (they may hide some), in walk order."""
    walker = _Walker(before.root, before.ignored)
    found: list[Stray] = []
    stack = [""]
    while stack:
        relative = stack.pop()
        old = before.folders.get(relative)
        try:
            now = os.lstat(walker.full(relative))
        except OSError:  # gone: whatever stood there is reported by its parent's listing
            continue
        if not stat.S_ISDIR(now.st_mode):
            continue
        unchanged = old is not None and (old.inode, old.ctime) == (now.st_ino, now.st_ctime_ns)
        if unchanged and old is not None and not old.recent:
            stack += [_join(relative, name) for name in old.folders]
            continue
        listed = walker.list(relative, None)
        if listed is None:  # gone since the lstat
            continue
        folder, strays = listed
        if not folder.listed:
            if not (unchanged and old is not None and not old.listed):
                found.append(Stray(relative + "/", now.st_ino, "a folder memento cannot list"))
            continue
        known = old.strays if old is not None and old.inode == now.st_ino else frozenset()
        found += [stray for stray in strays if (_name(stray.path), stray.inode) not in known]
        stack += [_join(relative, name) for name in folder.folders]
    return found


def remove(before: Snapshot, strays: Iterable[Stray]) -> list[str]:
    """Delete ``strays`` (a link itself, never what it points to), and put .git/HEAD back as
    ``before`` read it when it was one; the violation sentences, each saying whether it is
    gone."""
    root = before.root
    sentences = []
    for stray in strays:
        try:
            if not stray.path.endswith("/"):
                (root / stray.path).unlink()
                if stray.path == _HEAD and before.head is not None:
                    files.write_atomic(root / _HEAD, before.head, durable=False)
                sentences.append(f"{stray.sentence()} (removed)")
                continue
        except FileNotFoundError:
            sentences.append(f"{stray.sentence()} (gone)")
            continue
        except OSError as error:
            sentences.append(f"{stray.sentence()} (cannot remove it: {error.strerror})")
            continue
        sentences.append(f"{stray.sentence()} (remove it by hand)")
    return sentences


class _Walker:
    def __init__(self, root: Path, ignored: frozenset[str]) -> None:
        self.root = os.fspath(root)
        self.ignored = ignored
        self.inside = os.path.realpath(root)
        self.git = f"{self.inside}{os.sep}.git"

    def full(self, relative: str) -> str:
        return f"{self.root}/{relative}" if relative else self.root

    def list(self, relative: str, now: int | None) -> tuple[_Folder, list[Stray]] | None:
        """The folder at ``relative`` and the strays in it (a folder that cannot be listed
        says so); None when it is gone. ``now`` (the walk's time) marks a folder changed
        just before as recent."""
        full = self.full(relative)
        folders: list[str] = []
        strays: list[Stray] = []
        try:
            found = os.lstat(full)
        except OSError:
            return None
        recent = now is not None and found.st_ctime_ns >= now - _RECENT_NS
        try:
            with os.scandir(full) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if self._walked(relative, entry.name):
                            folders.append(entry.name)
                    elif not entry.is_file(follow_symlinks=False):
                        stray = self._stray(entry, relative)
                        if stray is not None:
                            strays.append(stray)
        except OSError:
            return _Folder(found.st_ino, found.st_ctime_ns, recent, (), frozenset(), False), []
        keys = frozenset((_name(stray.path), stray.inode) for stray in strays)
        folder = _Folder(found.st_ino, found.st_ctime_ns, recent, tuple(folders), keys)
        return folder, strays

    def _walked(self, relative: str, name: str) -> bool:
        """Whether the subfolder ``name`` of ``relative`` is walked: not one git ignores,
        not a nested repository's .git; in the repository's own .git, only the folders of
        the files git opens on each call (not objects/, too many to list each tick)."""
        if relative == ".git":
            return name in _GIT_FOLDERS
        if name == ".git":
            return not relative
        return _join(relative, name) not in self.ignored

    def _stray(self, entry: os.DirEntry[str], relative: str) -> Stray | None:
        """A link that leads out, or a special file; None for a link that stays inside."""
        path = _join(relative, entry.name)
        try:
            if entry.is_symlink():
                target = Path(entry.path).readlink()
                if not self._leads_out(entry.path):
                    return None
                kind = f"a symbolic link leading out of the repository (to {target})"
                return Stray(path, entry.inode(), kind)
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:  # gone while we looked
            return None
        return Stray(path, entry.inode(), files.kind_of(mode))

    def _leads_out(self, path: str) -> bool:
        target = os.path.realpath(path)
        inside = target == self.inside or target.startswith(self.inside + os.sep)
        in_git = target == self.git or target.startswith(self.git + os.sep)
        return not inside or in_git


def _join(relative: str, name: str) -> str:
    return f"{relative}/{name}" if relative else name


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]
