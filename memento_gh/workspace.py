"""Git: the only module that runs it.

It calls the git command line directly rather than through GitPython: a tick needs a
dozen plumbing commands and nothing of GitPython's object model, and importing GitPython
alone took longer than a bare `python -c pass` plus a `git commit` (benchmarks/bench_tick.py).

``Workspace`` is what the tick sees of the repository: the change against HEAD, the rollback
to HEAD, the commit, and a fingerprint of git's own configuration.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memento_gh.errors import UserError
from memento_gh.files import decode_utf8

if TYPE_CHECKING:
    from datetime import timedelta

EMERGENCY_STASH = "memento-emergency-stash"
FALLBACK_IDENTITY = (("user.name", "memento"), ("user.email", "memento@localhost"))

# git's own test for binary content (xdiff's FIRST_FEW_BYTES): a NUL among the first 8000 bytes.
_BINARY_PROBE = 8000
_CHUNK = 1 << 20

# On every command: no hooks and no fsmonitor command (an agent could have planted either),
# pathspecs are plain paths (a file may be called `*` or `:x`), and a read never takes the
# index lock just to refresh it.
_SAFE_OPTIONS = (
    "--no-optional-locks",
    "--literal-pathspecs",
    "-c",
    f"core.hooksPath={os.devnull}",
    "-c",
    "core.fsmonitor=false",
)
_DIFF_OPTIONS = ("-z", "--no-color", "--no-ext-diff", "--no-textconv")

_KINDS = {
    "M": "modified",
    "A": "added",
    "C": "added",
    "D": "deleted",
    "R": "renamed",
    "T": "typechange",
}


class GitError(UserError):
    """A git command failed in a repository that exists (the circuit breaker's "git failure")."""


class _Repository(NamedTuple):
    top: Path | None  # the work tree's top; None in a bare repository
    common_dir: Path  # where config, hooks/ and info/ live (shared by worktrees)


def _git_command() -> list[str]:
    return ["git"]


def _run_git(
    cwd: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            [*_git_command(), *args],
            cwd=cwd,
            input=stdin or b"",
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        if not cwd.is_dir():
            raise UserError(f"{cwd}: no such folder") from None
        raise UserError("git is not installed or not on PATH; install git") from None
    except NotADirectoryError:
        raise UserError(f"{cwd}: not a folder") from None


def open_repo(root: Path) -> _Repository:
    """The repository ``root`` is in (``root`` may be any folder inside its work tree)."""
    # One call in a work tree; a bare repository fails --show-toplevel and takes a second.
    done = _run_git(
        root, "rev-parse", "--is-bare-repository", "--git-common-dir", "--show-toplevel"
    )
    if done.returncode == 0:
        bare, common, top_line = os.fsdecode(done.stdout).splitlines()[:3]
        if bare != "true":
            return _Repository(Path(top_line), (root / common).resolve())
    done = _run_git(root, "rev-parse", "--is-bare-repository", "--git-common-dir")
    if done.returncode != 0:
        raise UserError(f"{root}: not inside a git repository; run `git init` first")
    bare, common = os.fsdecode(done.stdout).splitlines()[:2]
    common_dir = (root / common).resolve()
    if bare == "true":
        return _Repository(None, common_dir)
    top = _run_git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return _Repository(None, common_dir)
    return _Repository(Path(os.fsdecode(top.stdout).rstrip("\n")), common_dir)


def read_staged(root: Path, path: Path) -> str | None:
    """The text of ``path`` as staged in git's index, or None when it is not in the index."""
    repo = open_repo(root)
    top = (repo.top or root).resolve()
    try:
        relative = path.resolve().relative_to(top).as_posix()
    except ValueError:
        raise UserError(f"{path}: outside the repository at {top}") from None
    done = _run_git(top, "--literal-pathspecs", "cat-file", "blob", f":{relative}")
    if done.returncode != 0:
        return None
    return decode_utf8(done.stdout, path)


def init_repository(path: Path) -> Workspace:
    """``git init`` the folder ``path`` (it must exist) and return its workspace. Commits
    made through the workspace fall back to a "memento" identity when git has none."""
    done = _run_git(path, "init", "-q")
    if done.returncode != 0:
        reason = os.fsdecode(done.stderr).strip().splitlines()[:1] or [f"exit {done.returncode}"]
        raise UserError(f"git init failed in {path}: {reason[0]}")
    return Workspace(path)


class FileChange(NamedTuple):
    """One path that differs from HEAD, as the index and work tree stand."""

    path: str  # repo-relative POSIX path (the new path of a rename; "dir/" for a nested repo)
    kind: str  # "modified" | "added" | "deleted" | "renamed" | "untracked" | "typechange"
    added: int  # lines added (0 for binary)
    removed: int  # lines removed (0 for binary)
    binary: bool
    old_path: str | None = None  # the old path of a rename


class RollbackReport(NamedTuple):
    """What a rollback did, stage by stage."""

    restored: tuple[str, ...]  # tracked paths put back to HEAD (staged additions: unstaged)
    removed: tuple[str, ...]  # untracked paths deleted
    kept: tuple[str, ...]  # untracked paths spared by .memento_cleanignore patterns
    stash: str | None  # the emergency stash's message when the tree was still dirty
    left: tuple[str, ...] = ()  # paths still dirty after all three stages


class Workspace:
    """The git work tree the tick runs in."""

    def __init__(self, root: Path) -> None:
        self._repo = open_repo(root)
        top = self._repo.top
        if top is None:
            raise UserError(
                f"{root}: a bare repository has no working tree; run memento in a clone"
            )
        self.root = Path(top)

    # -- reading ----------------------------------------------------------------------------

    def head(self) -> str | None:
        """The sha HEAD points at, or None on an unborn branch (no commit yet)."""
        status, out, _ = self._try_git("rev-parse", "-q", "--verify", "HEAD^{commit}")
        return out.decode().strip() if status == 0 else None

    def current_branch(self) -> str | None:
        """The checked-out branch's short name, or None when HEAD is detached."""
        status, out, _ = self._try_git("symbolic-ref", "-q", "--short", "HEAD")
        return os.fsdecode(out).strip() if status == 0 else None

    def changes(self, keep: Sequence[str] = ()) -> list[FileChange]:
        """Everything that differs from HEAD, sorted by path: staged and unstaged edits to
        tracked files, and untracked files git does not ignore (except those matching
        ``keep``). On an unborn branch every file is "added" or "untracked"."""
        found = self._tracked_changes()
        found += [_untracked_change(self.root, path) for path in self._untracked(keep)]
        return sorted(found, key=lambda change: change.path)

    def commit_count(self) -> int:
        """How many commits HEAD's history holds (0 on an unborn branch)."""
        status, out, _ = self._try_git("rev-list", "--count", "HEAD")
        return int(out.decode().strip()) if status == 0 else 0

    def trailer_values(self, key: str, since: timedelta) -> set[str]:
        """The values of the ``key:`` trailer in the commits of HEAD's history made within
        ``since`` (by committer date); empty on an unborn branch."""
        window = f"--since={int(since.total_seconds())} seconds ago"
        status, out, _ = self._try_git(
            "log", window, f"--format=%(trailers:key={key},valueonly,separator=%x00)%x00"
        )
        if status != 0:
            return set()
        return {value.strip() for value in out.decode("utf-8", "replace").split("\0") if value}

    def is_clean(self, keep: Sequence[str] = ()) -> bool:
        """True when index and work tree equal HEAD, untracked files matching ``keep`` aside."""
        return not self._tracked_dirty() and not self._untracked(keep)

    def git_fingerprint(self) -> dict[str, str]:
        """A sha256 per file of .git/config, .git/hooks/ and .git/info/, keyed by its path
        relative to .git; the executable bit counts (it is what turns a hook on). The tick's
        own scratch files under .git/memento/ are not part of it."""
        common = self._repo.common_dir
        found: dict[str, str] = {}
        for path in [common / "config", *_walk(common / "hooks"), *_walk(common / "info")]:
            digest = _file_digest(path)
            if digest is not None:
                found[path.relative_to(common).as_posix()] = digest
        return found

    # -- changing ---------------------------------------------------------------------------

    def rollback(self, keep: Sequence[str], label: str) -> RollbackReport:
        """Put the tree back to HEAD in three stages: restore tracked files, delete untracked
        files (and directories left empty) except those matching ``keep``, and stash what is
        still dirty as a last resort. Gitignored files are never touched; tracked files are
        always restored, whatever ``keep`` says."""
        if self.head() is None:
            raise UserError(
                "there is no commit to roll back to (the branch is unborn); "
                "commit the project first: `git add -A && git commit`"
            )
        restored = sorted(self._tracked_dirty())
        self._git("reset", "-q")  # the index back to HEAD; staged additions become untracked
        blocked = self._restore_work_tree()
        untracked = self._untracked(())
        removable = set(self._untracked(keep))
        # One -f: like git itself, leave a nested repository alone (its history, and the
        # kept or ignored files inside, would go with it); the report lists it as left.
        self._git("clean", "-f", "-d", "-q", *_excludes(keep))
        if blocked:
            self._restore_work_tree()
        removed = [path for path in untracked if path in removable and not _exists(self.root, path)]
        kept = [path for path in untracked if path not in removable]
        stash: str | None = None
        left: tuple[str, ...] = ()
        if not self.is_clean(keep):
            stash = self._emergency_stash(keep, label)
            left = tuple(self._dirty_paths(keep))
        return RollbackReport(tuple(restored), tuple(removed), tuple(kept), stash, left)

    def commit(self, message: str, paths: Sequence[str] | None = None) -> str:
        """Stage everything (or just ``paths``, deletions included) and commit it with
        ``message`` byte for byte; return the new sha. No hooks run and nothing is signed."""
        only: list[str] = []
        if paths is None:
            self._git("add", "-A")
        else:
            chosen = list(dict.fromkeys(paths))
            # git add cannot name a path gone from disk; commit --only takes its deletion
            present = [path for path in chosen if _exists(self.root, path)]
            if present:
                self._git("add", "-A", "--", *present)
            only = ["--only", "--", *chosen]
        self._git(
            "commit",
            "-q",
            "--no-verify",
            "--no-gpg-sign",
            "--cleanup=verbatim",
            "-F",
            "-",
            *only,
            stdin=message.encode("utf-8"),
            config=("commit.gpgsign=false", *self._missing_identity()),
        )
        sha = self.head()
        assert sha is not None
        return sha

    def reset_soft(self, sha: str) -> None:
        """Move the branch back to ``sha`` and keep the undone commits' changes in the tree
        (for an agent that committed although it was told not to)."""
        self._git("reset", "-q", "--soft", sha)

    # -- stages of the rollback -------------------------------------------------------------

    def _restore_work_tree(self) -> bool:
        """Check out from the index every path whose file differs; True when some path had
        to wait because an untracked file or directory stands in its way (git would delete
        it, and with it any kept or ignored file inside)."""
        paths = _split(self._git("diff", "--name-only", "--no-renames", *_DIFF_OPTIONS))
        ready = [path for path in paths if not _obstructed(self.root, path)]
        if ready:
            listing = b"".join(os.fsencode(path) + b"\0" for path in ready)
            self._git("checkout-index", "-f", "-q", "-z", "--stdin", stdin=listing)
        return len(ready) < len(paths)

    def _emergency_stash(self, keep: Sequence[str], label: str) -> str | None:
        """Stash every dirty path but kept files and nested repositories (git cannot stash
        those); the stash's message, or None when nothing was stashed."""
        paths = [path for path in self._dirty_paths(keep) if not path.endswith("/")]
        if not paths:
            return None
        message = f"{EMERGENCY_STASH} {label}"
        before = self._stash_ref()
        status, _, _ = self._try_git(
            "stash", "push", "-q", "--include-untracked", "-m", message, "--", *paths
        )
        if status != 0:
            self._git("reset", "-q")  # a stash that failed halfway leaves its files staged
        return message if self._stash_ref() != before else None

    def _stash_ref(self) -> str | None:
        status, out, _ = self._try_git("rev-parse", "-q", "--verify", "refs/stash")
        return out.decode().strip() if status == 0 else None

    def _missing_identity(self) -> list[str]:
        _, out, _ = self._try_git("config", "--get-regexp", r"^user\.(name|email)$")
        configured = {
            line.split(" ", 1)[0]
            for line in os.fsdecode(out).splitlines()
            if " " in line and line.split(" ", 1)[1].strip()
        }
        return [f"{key}={fallback}" for key, fallback in FALLBACK_IDENTITY if key not in configured]

    # -- what differs -----------------------------------------------------------------------

    def _base(self) -> str:
        """HEAD, or the empty tree on an unborn branch."""
        head = self.head()
        if head is not None:
            return head
        return self._git("hash-object", "-t", "tree", "--stdin", stdin=b"").decode().strip()

    def _tracked_changes(self) -> list[FileChange]:
        # "HEAD" saves resolving it first; only an unborn branch needs the empty tree.
        status, names, _ = self._try_git("diff", "HEAD", "--name-status", "-M", *_DIFF_OPTIONS)
        base = "HEAD"
        if status != 0:
            base = self._base()
            names = self._git("diff", base, "--name-status", "-M", *_DIFF_OPTIONS)
        if not names:
            return []  # a clean tree needs no line counts
        counts = _parse_numstat(self._git("diff", base, "--numstat", "-M", *_DIFF_OPTIONS))
        found = []
        for letter, path, old_path in _parse_name_status(names):
            added, removed = counts.get(path, (0, 0))
            binary = added is None
            found.append(
                FileChange(
                    path,
                    _KINDS.get(letter, "modified"),
                    added or 0,
                    removed or 0,
                    binary,
                    old_path,
                )
            )
        return found

    def _tracked_dirty(self) -> set[str]:
        """Tracked paths whose index entry or file differs from HEAD (both ends of renames)."""
        base = self._base()
        work_tree = self._git("diff", base, "--name-only", "--no-renames", *_DIFF_OPTIONS)
        index = self._git("diff", "--cached", base, "--name-only", "--no-renames", *_DIFF_OPTIONS)
        return {*_split(work_tree), *_split(index)}

    def _untracked(self, keep: Sequence[str]) -> list[str]:
        """Untracked files git does not ignore, minus those matching ``keep``; a nested
        repository is one entry ending in "/"."""
        listing = self._git("ls-files", "-z", "--others", "--exclude-standard", *_excludes(keep))
        return _split(listing)

    def _dirty_paths(self, keep: Sequence[str]) -> list[str]:
        return sorted(self._tracked_dirty() | set(self._untracked(keep)))

    # -- running git ------------------------------------------------------------------------

    def _git(self, *args: str, stdin: bytes | None = None, config: Iterable[str] = ()) -> bytes:
        status, out, err = self._try_git(*args, stdin=stdin, config=config)
        if status != 0:
            lines = (err or os.fsdecode(out)).strip().splitlines()
            reason = lines[0].rstrip(".") if lines else f"exit code {status}"
            raise GitError(
                f"git {args[0]} failed in {self.root}: {reason}. "
                "Is the repository healthy (`git status`)?"
            )
        return out

    def _try_git(
        self, *args: str, stdin: bytes | None = None, config: Iterable[str] = ()
    ) -> tuple[int, bytes, str]:
        settings = [part for setting in config for part in ("-c", setting)]
        done = _run_git(self.root, *_SAFE_OPTIONS, *settings, *args, stdin=stdin)
        return done.returncode, done.stdout, os.fsdecode(done.stderr)


# -- pure helpers ---------------------------------------------------------------------------


def _excludes(keep: Sequence[str]) -> list[str]:
    """``--exclude`` options for the lines of a .memento_cleanignore (gitignore syntax)."""
    patterns = (line.rstrip("\r\n") for line in keep)
    return [f"--exclude={line}" for line in patterns if line.strip() and not line.startswith("#")]


def _split(listing: bytes) -> list[str]:
    return [os.fsdecode(item) for item in listing.split(b"\0") if item]


def _parse_name_status(listing: bytes) -> list[tuple[str, str, str | None]]:
    """``(letter, path, old_path)`` from ``git diff --name-status -z``."""
    fields = iter(_split(listing))
    found: list[tuple[str, str, str | None]] = []
    for status in fields:
        letter = status[0]
        if letter in "RC":
            old_path = next(fields)
            found.append((letter, next(fields), old_path if letter == "R" else None))
        else:
            found.append((letter, next(fields), None))
    return found


def _parse_numstat(listing: bytes) -> dict[str, tuple[int | None, int | None]]:
    """Lines added and removed per (new) path from ``git diff --numstat -z``; None for
    binary files, which git shows as ``-``."""
    fields = iter(listing.split(b"\0"))
    found: dict[str, tuple[int | None, int | None]] = {}
    for record in fields:
        if not record:
            continue
        added, removed, path = record.split(b"\t", 2)
        if not path:  # a rename: the old and the new path follow as fields of their own
            next(fields)
            path = next(fields)
        found[os.fsdecode(path)] = (_count(added), _count(removed))
    return found


def _count(field: bytes) -> int | None:
    return None if field == b"-" else int(field)


def _untracked_change(root: Path, path: str) -> FileChange:
    lines, binary = _count_lines(root / path)
    return FileChange(path, "untracked", lines, 0, binary)


def _count_lines(path: Path) -> tuple[int, bool]:
    """Lines as ``git diff --numstat`` counts them (a last line without a newline counts),
    and whether git would call the file binary."""
    try:
        if path.is_symlink():  # git diffs a link's target text
            target = os.fsencode(path.readlink())
            return target.count(b"\n") + (0 if target.endswith(b"\n") else 1), False
        if path.is_dir():  # a nested repository
            return 0, False
        with path.open("rb") as stream:
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


def _exists(root: Path, path: str) -> bool:
    return os.path.lexists(root / path)


def _obstructed(root: Path, path: str) -> bool:
    """True when checking ``path`` out would first have to delete something untracked:
    a directory where the file goes, or a file or link where one of its directories goes."""
    current = root
    parts = path.split("/")
    for part in parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            return True
        if not current.exists():
            return False
    target = current / parts[-1]
    return target.is_dir() and not target.is_symlink()


def _walk(directory: Path) -> list[Path]:
    """Every file and link below ``directory`` (links are not followed), sorted."""
    found: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            found += _walk(path)
        else:
            found.append(path)
    return sorted(found)


def _file_digest(path: Path) -> str | None:
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            data = b"link\0" + os.fsencode(path.readlink())
        else:
            kind = b"executable\0" if mode & 0o111 else b"file\0"
            data = kind + path.read_bytes()
    except OSError:
        return None
    return hashlib.sha256(data).hexdigest()
