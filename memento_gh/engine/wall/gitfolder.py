"""The git folder as an agent must leave it: git's configuration, hooks and ``info/`` files,
every ref and where HEAD points, and the ``.git`` entry of the work tree itself.

The wall (``engine/wall``) takes a ``Snapshot`` before the agent runs and ``restore``s it
after the agent and after verify, before git runs again: what was written there (a push URL,
a filter, a hook, a forged branch, a tag, a checkout of another branch) is put back byte for
byte and named, for the attempt to fail with. Files, not git commands: git itself must not
run on a folder the agent rewrote, and the refs' files (loose, ``packed-refs``,
``reftable/``) put back are the refs as they were, however git stores them. Nothing here
starts a process.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from memento_gh.errors import UserError

#: What the configuration is made of, in the folder shared by all work trees: a
#: ``commondir`` or an object store's alternates there would point git somewhere else.
CONFIG_FILES = (
    "config",
    "config.worktree",
    "commondir",
    "objects/info/alternates",
    "objects/info/http-alternates",
)
CONFIG_FOLDERS = ("hooks", "info")
#: Where the refs are, in the shared folder (a work tree's own: HEAD, and refs/ beside it),
#: and ``shallow``, where history is cut short.
REF_FILES = ("packed-refs", "shallow")
REF_FOLDERS = ("refs", "reftable")
#: A linked work tree's own files besides HEAD: its configuration, and where its folders are.
OWN_FILES = ("config.worktree", "commondir", "gitdir")
#: An operation left in progress, in a work tree's own folder: a commit would record a
#: merge of whatever MERGE_HEAD names, or refuse to commit at all.
OPERATION_FILES = (
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_AUTOSTASH",
    "AUTO_MERGE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "SQUASH_MSG",
    "BISECT_START",
    "BISECT_LOG",
    "BISECT_TERMS",
    "BISECT_HEAD",
    "BISECT_EXPECTED_REV",
    "BISECT_NAMES",
    "BISECT_ANCESTORS_OK",
)
OPERATION_FOLDERS = ("rebase-merge", "rebase-apply", "sequencer")

State = dict[str, bytes]


class GitFolder(NamedTuple):
    """Where a work tree's git files are (absolute paths)."""

    top: str  # the work tree; its ``.git`` is a folder, or a file naming one
    common: str  # config, hooks/, info/, refs/, packed-refs: shared by all work trees
    own: str  # this work tree's HEAD (the same folder as ``common`` but in linked ones)
    #: Files of the user's that git reads whatever its configuration says: the default
    #: ``core.excludesFile`` (``~/.config/git/ignore``), where an ignore pattern would hide
    #: a new file from every ``git status``.
    user_files: tuple[str, ...] = ()


class Snapshot(NamedTuple):
    dot_git: bytes  # the ``.git`` entry: which file or folder it is, and a file's text
    config: State  # per file below ``common``/``own``: its kind, mode and bytes
    refs: State
    operations: State
    user: State  # the user's files of ``GitFolder.user_files``


def snapshot(folder: GitFolder) -> Snapshot:
    """What the agent must leave as it is: about 20 small files in a fresh clone."""
    return Snapshot(
        _dot_git(folder.top),
        config_state(folder),
        ref_state(folder),
        operation_state(folder),
        _state("", (), (), folder.user_files),
    )


def config_state(folder: GitFolder) -> State:
    own = [] if folder.own == folder.common else [f"{folder.own}/{name}" for name in OWN_FILES]
    return _state(folder.common, CONFIG_FILES, CONFIG_FOLDERS, own)


def ref_state(folder: GitFolder) -> State:
    own = [f"{folder.own}/HEAD"]
    if folder.own != folder.common:
        own += [f"{folder.common}/HEAD", *_walk(f"{folder.own}/refs")]
    return _state(folder.common, REF_FILES, REF_FOLDERS, own)


def operation_state(folder: GitFolder) -> State:
    return _state(folder.own, OPERATION_FILES, OPERATION_FOLDERS, ())


class Restored(NamedTuple):
    """What ``restore`` put back; each a sentence for the attempt's violations, or ""."""

    config: str
    head: str
    refs: str
    operation: str

    def violations(self) -> list[str]:
        return [said for said in self if said]


def restore(folder: GitFolder, before: Snapshot) -> Restored:
    """Put the configuration and the refs back as ``before`` has them, and say what the
    agent had changed. A ``.git`` replaced by another file or folder is not put back (the
    original may be anywhere): ``UserError``, before git could run there."""
    if _dot_git(folder.top) != before.dot_git:
        raise UserError(
            f"the agent replaced {folder.top}/.git, the repository's git folder, during the "
            "tick; memento ran nothing in what is there now. Put the git folder back by hand "
            "(`git status` must show the repository again), then run memento again"
        )
    kept = _kept(folder)
    config = _put_back(before.config, config_state(folder), kept)
    config += _put_back_users(before.user, _state("", (), (), folder.user_files))
    refs_after = ref_state(folder)
    refs = _put_back(before.refs, refs_after, kept)
    operation = _put_back(before.operations, operation_state(folder), kept)
    if not config and not refs and not operation:
        return Restored("", "", "", "")
    config_said = operation_said = ""
    if config:
        config_said = (
            f"the agent changed git's configuration or hooks under .git/ "
            f"({_relative(folder, config)}); memento put them back as they were"
        )
    if operation:
        operation_said = (
            f"the agent left a git operation in progress ({_relative(folder, operation)}); "
            "memento cleared it"
        )
    head_said, refs_said = _ref_changes(folder, before.refs, refs_after) if refs else ("", "")
    if refs and not head_said and not refs_said:  # a file of git's that names no ref
        refs_said = (
            f"the agent changed git's refs ({_relative(folder, refs)}); "
            "memento put them back as they were"
        )
    return Restored(config_said, head_said, refs_said, operation_said)


# -- reading --------------------------------------------------------------------------------


def _state(
    common: str, files: Iterable[str], folders: Iterable[str], others: Iterable[str]
) -> State:
    found: State = {}
    paths = [f"{common}/{name}" for name in files]
    for name in folders:
        paths += _walk(f"{common}/{name}")
    for path in [*paths, *others]:
        data = _file_state(path)
        if data is not None:
            found[path] = data
    return found


def _walk(top: str) -> list[str]:
    """``top`` when it is not a folder (a file or a link standing where a folder goes), else
    every file and link below it (links not followed), sorted. Plain ``os`` calls: a tick
    reads .git/hooks twice."""
    try:
        if stat.S_ISLNK(os.lstat(top).st_mode):
            return [top]
        with os.scandir(top) as entries:
            listed = [(entry.path, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except NotADirectoryError:
        return [top]
    except OSError:
        return []
    found: list[str] = []
    for path, is_dir in sorted(listed):
        found += _walk(path) if is_dir else [path]
    return found


def _file_state(path: str) -> bytes | None:
    """The kind, permissions and content of the file at ``path`` (a link: its target);
    None when there is none."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            return b"link\0" + os.fsencode(Path(path).readlink())
        if not stat.S_ISREG(mode):
            return f"other {stat.S_IFMT(mode):o}\0".encode()
        # non-blocking: a FIFO swapped in since the lstat must not hang the read
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return b"other\0"
            chunks = [f"file {stat.S_IMODE(mode):o}\0".encode()]
            while chunk := os.read(descriptor, 1 << 16):
                chunks.append(chunk)
        finally:
            os.close(descriptor)
    except OSError:
        return None
    return b"".join(chunks)


def _dot_git(top: str) -> bytes:
    path = f"{top}/.git"
    try:
        info = os.lstat(path)
    except OSError:
        return b"missing"
    which = f"{info.st_dev} {info.st_ino} {stat.S_IFMT(info.st_mode):o}\0".encode()
    if stat.S_ISREG(info.st_mode):
        return which + (_file_state(path) or b"")
    return which


# -- putting back ---------------------------------------------------------------------------


def _relative(folder: GitFolder, paths: Iterable[str]) -> str:
    """``paths`` named from the git folder they are in."""
    return _names(
        path.removeprefix(folder.own + "/").removeprefix(folder.common + "/") for path in paths
    )


def _kept(folder: GitFolder) -> frozenset[str]:
    """The folders that stay, even empty: those git makes and expects."""
    kept = [*CONFIG_FOLDERS, *REF_FOLDERS, "refs/heads", "refs/tags", "objects/info"]
    return frozenset(
        [folder.common, folder.own, f"{folder.own}/refs", *(f"{folder.common}/{n}" for n in kept)]
    )


def _put_back(before: State, after: State, kept: frozenset[str]) -> list[str]:
    """Make the files of ``after`` those of ``before`` again; the paths that differed."""
    changed = sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )
    for path in changed:
        _remove(path)
    for path in changed:
        if path in before:
            _write(path, before[path])
    for path in changed:
        if path not in before:
            _prune(Path(path).parent, before, kept)
    return changed


def _put_back_users(before: State, after: State) -> list[str]:
    """``_put_back`` for the user's own files: their folders (a link into a dotfiles
    repository, say) stay as they are, only the file itself is put back or removed."""
    changed = sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )
    for path in changed:
        target = Path(path)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        if path in before:
            header, _, content = before[path].partition(b"\0")
            if header.startswith(b"file "):
                target.write_bytes(content)
                target.chmod(int(header.split(b" ")[1], 8))
            elif header == b"link":
                target.symlink_to(os.fsdecode(content))
    return changed


def _remove(path: str | Path) -> None:
    """Delete whatever is at ``path``: a file, a link, a folder and all in it."""
    target = Path(path)
    try:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    except FileNotFoundError:
        pass
    except NotADirectoryError:
        _remove(target.parent)  # a file stands where one of its folders goes


def _write(path: str, data: bytes) -> None:
    header, _, content = data.partition(b"\0")
    kind, _, mode = header.decode().partition(" ")
    target = Path(path)
    parent = target.parent
    if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
        _remove(parent)
    parent.mkdir(parents=True, exist_ok=True)
    if kind == "link":
        target.symlink_to(os.fsdecode(content))
        return
    if kind != "file":
        return  # a FIFO or a device: nothing git reads as configuration
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(descriptor, content)
        os.fchmod(descriptor, int(mode, 8))
    finally:
        os.close(descriptor)


def _prune(folder: Path, before: Mapping[str, bytes], kept: frozenset[str]) -> None:
    """Remove ``folder`` and the folders above it while they are empty and held nothing
    before (a folder the agent made for a hook or a ref of its own), up to those ``kept``."""
    while str(folder) not in kept and not any(p.startswith(f"{folder}/") for p in before):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


# -- what changed, in words -----------------------------------------------------------------


def _ref_changes(folder: GitFolder, before: State, after: State) -> tuple[str, str]:
    """Sentences for a moved HEAD and for the other refs that changed ("" for none)."""
    old, new = _refs(folder, before), _refs(folder, after)
    if old is None or new is None:  # reftable: its files say that refs changed, not which
        return "", "the agent changed git's refs; memento put them back as they were"
    head = ""
    if old.get("HEAD") != new.get("HEAD") or _resolve(old, "HEAD") != _resolve(new, "HEAD"):
        head = "the agent moved HEAD (it ran a git command that commits or switches branches)"
    changes = []
    for name in sorted(old.keys() | new.keys()):
        if name == "HEAD" or old.get(name) == new.get(name):
            continue
        verb = "created" if name not in old else "deleted" if name not in new else "moved"
        changes.append(f"{name} {verb}")
    if not changes:
        return head, ""
    return head, (f"the agent changed refs ({_names(changes)}); memento put them back as they were")


def _refs(folder: GitFolder, state: State) -> dict[str, str] | None:
    """Every ref's value ("<sha>" or "ref: <name>") in the files of ``state``; None when
    git keeps them in a reftable."""
    if any(path.startswith(f"{folder.common}/reftable/") for path in state):
        return None
    found: dict[str, str] = {}
    packed = state.get(f"{folder.common}/packed-refs", b"").partition(b"\0")[2]
    for line in packed.decode("utf-8", "replace").splitlines():
        if line and line[0] not in "#^" and " " in line:
            sha, _, name = line.partition(" ")
            found[name.strip()] = sha
    for path, data in state.items():
        for root in (folder.own, folder.common):
            if path.startswith(root + "/refs/") or path == f"{root}/HEAD":
                name = path.removeprefix(root + "/")
                if root != folder.own and name == "HEAD":
                    name = "HEAD of the main work tree"
                if not name.endswith(".lock"):
                    found[name] = data.partition(b"\0")[2].decode("utf-8", "replace").strip()
                break
    return found


def _resolve(refs: Mapping[str, str], name: str) -> str | None:
    for _ in range(5):
        value = refs.get(name)
        if value is None or not value.startswith("ref: "):
            return value
        name = value.removeprefix("ref: ").strip()
    return None


def _names(names: Iterable[str], most: int = 6) -> str:
    listed = list(names)
    more = f" and {len(listed) - most} more" if len(listed) > most else ""
    return ", ".join(listed[:most]) + more
