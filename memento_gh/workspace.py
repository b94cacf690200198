"""The repository as the tick sees it; git itself runs in ``gitrun.py``.

``Workspace`` is what the tick sees of the repository: the change against HEAD, the rollback
to HEAD, the commit, and git's own configuration and refs (which no agent may change: see
``gitfolder.py``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memento_gh import gitfolder, gitrun
from memento_gh.changes import (
    ADDED,
    DELETED,
    MODIFIED,
    RENAMED,
    TYPECHANGE,
    UNTRACKED,
    FileChange,
)
from memento_gh.errors import UserError
from memento_gh.files import decode_utf8

if TYPE_CHECKING:
    from datetime import timedelta

EMERGENCY_STASH = "memento-emergency-stash"
FALLBACK_IDENTITY = (("user.name", "memento"), ("user.email", "memento@localhost"))
#: The settings a commit's author and committer come from (``git config --help``).
IDENTITY_SETTINGS = r"^(user|author|committer)\.(name|email)$"

# git's own test for binary content (xdiff's FIRST_FEW_BYTES): a NUL among the first 8000 bytes.
_BINARY_PROBE = 8000
_CHUNK = 1 << 20
#: Read flags for a file the agent may have swapped: no waiting on a FIFO, no following a link.
_READ_NOW = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

_DIFF_OPTIONS = ("-z", "--no-color", "--no-ext-diff", "--no-textconv")
_NO_MAINTENANCE = ("maintenance.auto=false", "gc.auto=0")
_STATUS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--no-ahead-behind",
    "--untracked-files=all",
    "--no-renames",
)

_KINDS = {
    "M": MODIFIED,
    "A": ADDED,
    "C": ADDED,
    "D": DELETED,
    "R": RENAMED,
    "T": TYPECHANGE,
}


class _Repository(NamedTuple):
    top: Path | None  # the work tree's top; None in a bare repository
    common_dir: Path  # where config, hooks/ and info/ live (shared by worktrees)
    git_dir: Path | None = None  # where this work tree's HEAD lives (None: not asked)


def open_repo(root: Path) -> _Repository:
    """The repository ``root`` is in (``root`` may be any folder inside its work tree)."""
    # One call in a work tree; a bare repository fails --show-toplevel and takes a second.
    done = gitrun.run(
        root,
        "rev-parse",
        "--is-bare-repository",
        "--git-common-dir",
        "--git-dir",
        "--show-toplevel",
    )
    if done.returncode == 0:
        bare, common, git_dir, top_line = os.fsdecode(done.stdout).splitlines()[:4]
        if bare != "true":
            return _Repository(Path(top_line), (root / common).resolve(), root / git_dir)
    done = gitrun.run(root, "rev-parse", "--is-bare-repository", "--git-common-dir")
    if done.returncode != 0:
        raise UserError(f"{root}: not inside a git repository; run `git init` first")
    bare, common = os.fsdecode(done.stdout).splitlines()[:2]
    common_dir = (root / common).resolve()
    if bare == "true":
        return _Repository(None, common_dir)
    top = gitrun.run(root, "rev-parse", "--show-toplevel")
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
    done = gitrun.run(top, "cat-file", "blob", f":{relative}")
    if done.returncode != 0:
        return None
    return decode_utf8(done.stdout, path)


def init_repository(path: Path) -> Workspace:
    """``git init`` the folder ``path`` (it must exist) and return its workspace. Commits
    made through the workspace fall back to a "memento" identity when git has none. The
    first branch is named as the user's configuration says (``init.defaultBranch``)."""
    named = gitrun.user_settings(path, r"^init\.defaultbranch$")
    gitrun.check(path, "init", "-q", config=[f"init.defaultBranch={s.value}" for s in named[-1:]])
    return Workspace(path)


def _user_git_files() -> tuple[str, ...]:
    """The user's files that git reads even cut off from their configuration: the default
    global ignore file (``git help gitignore``)."""
    home = os.environ.get("HOME", "")
    config = os.environ.get("XDG_CONFIG_HOME") or f"{home}/.config"
    return (f"{config}/git/ignore",) if home or os.environ.get("XDG_CONFIG_HOME") else ()


def read_identity(
    folder: Path,
    fallback: Iterable[tuple[str, str]] = FALLBACK_IDENTITY,
    *,
    kept: bytes | None = None,
) -> tuple[str, ...]:
    """``Workspace.identity`` of the repository ``folder`` is in: ``key=value`` settings,
    ``fallback``'s for what the user's configuration does not set; from the global files as
    ``kept`` has them, when given (``gitrun.user_settings``).

    Reading runs no program, and the values only ever become names and email addresses in
    commits, so whatever wrote the files (an agent, in an earlier tick) can spoof an author
    but neither run code nor reach a credential through them."""
    found = gitrun.user_settings(folder, IDENTITY_SETTINGS, kept=kept)
    return identity_from(found, fallback)


def identity_from(
    found: Iterable[gitrun.Setting], fallback: Iterable[tuple[str, str]] = FALLBACK_IDENTITY
) -> tuple[str, ...]:
    """``read_identity`` from settings already read: those of ``found`` that name an author
    or a committer (the last value of a key wins), and ``fallback``'s for the others."""
    named = re.compile(IDENTITY_SETTINGS)
    chosen = {setting.key: setting.value for setting in found if named.match(setting.key)}
    settings = [f"{key}={value}" for key, value in chosen.items()]
    for key, value in fallback:
        if key not in chosen and not (key == "user.email" and os.environ.get("EMAIL")):
            settings.append(f"{key}={value}")
    return tuple(settings)


class TreeStatus(NamedTuple):
    """The work tree against HEAD, as one ``git status`` sees it."""

    head: str | None  # the sha HEAD points at; None on an unborn branch
    tracked: tuple[str, ...]  # tracked paths whose index entry or file differs from HEAD
    untracked: tuple[str, ...]  # untracked files git does not ignore ("dir/": nested repo)

    @property
    def paths(self) -> tuple[str, ...]:
        return self.tracked + self.untracked


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
        common = os.fspath(self._repo.common_dir)
        own = os.fspath(self._repo.git_dir.resolve()) if self._repo.git_dir else common
        self._folder = gitfolder.GitFolder(os.fspath(self.root), common, own, _user_git_files())
        self._identity: tuple[str, ...] | None = None
        self._user_config: bytes | None = None

    @property
    def git_dir(self) -> Path:
        """This work tree's own git folder: ``.git``, or in a linked work tree the folder
        its ``.git`` file names."""
        return Path(self._folder.own)

    @property
    def common_dir(self) -> Path:
        """The git folder every work tree of the repository shares: its config, hooks/
        and info/ (``.git`` itself, unless this is a linked work tree)."""
        return Path(self._folder.common)

    # -- reading ----------------------------------------------------------------------------

    @property
    def index_file(self) -> Path | None:
        """Where git keeps this work tree's index (None: git did not say where its git
        folder is)."""
        git_dir = self._repo.git_dir
        return None if git_dir is None else git_dir / "index"

    def head(self) -> str | None:
        """The sha HEAD points at, or None on an unborn branch (no commit yet)."""
        done = gitrun.run(self.root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def quick_head(self) -> str | None:
        """``head``, read from git's files when it can be: one git process fewer (about
        2 ms here) each time a tick checks where HEAD is."""
        return self._head_file() or self.head()

    def current_branch(self) -> str | None:
        """The checked-out branch's short name, or None when HEAD is detached."""
        done = gitrun.run(self.root, "symbolic-ref", "-q", "--short", "HEAD")
        return os.fsdecode(done.stdout).strip() if done.returncode == 0 else None

    def changes(self, keep: Sequence[str] = ()) -> list[FileChange]:
        """Everything that differs from HEAD, sorted by path: staged and unstaged edits to
        tracked files, and untracked files git does not ignore (except those matching
        ``keep``). On an unborn branch every file is "added" or "untracked"."""
        found = self._tracked_changes()
        found += [_untracked_change(self.root, path) for path in self._untracked(keep)]
        return sorted(found, key=lambda change: change.path)

    def sizes(self, changes: Iterable[FileChange]) -> dict[str, int]:
        """The bytes each path that ``changes`` adds or changes holds in the work tree (what
        a commit would store): a file's length, a link's target name; 0 for a folder."""
        return {
            change.path: _size(self.root / change.path)
            for change in changes
            if change.kind != DELETED
        }

    def start_status(self) -> PendingStatus:
        """HEAD and every path that differs from it, from a single git process: what a
        tick checks before and after the agent. Renames count as their two paths, and no
        line is counted (``changes`` does that, for the paths that need it). Git looks at
        the tree while the caller does other work, until ``result()``: at the start of a
        tick that overlaps it with finding the repository and reading the plan, about 6 ms of
        a 1,000-task tick (A/B against waiting at once, installed package)."""
        return start_status(self.root)

    def start_ignored_folders(self) -> PendingFolders:
        """The folders git ignores as a whole (``logs``, ``node_modules``), listed by a git
        process that runs while the caller does other things."""
        listing = ("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
        return PendingFolders(gitrun.start(self.root, *listing))

    def commit_count(self) -> int:
        """How many commits HEAD's history holds (0 on an unborn branch)."""
        done = gitrun.run(self.root, "rev-list", "--count", "HEAD")
        return int(done.stdout.decode().strip()) if done.returncode == 0 else 0

    def trailer_values(self, key: str, since: timedelta) -> set[str]:
        """The values of the ``key:`` trailer in the commits of HEAD's history made within
        ``since`` (by committer date); empty on an unborn branch."""
        window = f"--since={int(since.total_seconds())} seconds ago"
        done = gitrun.run(
            self.root, "log", window, f"--format=%(trailers:key={key},valueonly,separator=%x00)%x00"
        )
        if done.returncode != 0:
            return set()
        listing = done.stdout.decode("utf-8", "replace")
        return {value.strip() for value in listing.split("\0") if value}

    def is_clean(self, keep: Sequence[str] = ()) -> bool:
        """True when index and work tree equal HEAD, untracked files matching ``keep`` aside."""
        return not self._tracked_dirty() and not self._untracked(keep)

    def git_state(self) -> dict[str, bytes]:
        """Per file of .git/config, .git/hooks/ and .git/info/, keyed by its path relative
        to .git: its kind (file, link), permissions and content. The permissions count (the
        executable bit is what turns a hook on); the tick's own scratch files under
        .git/memento/ are not part of it."""
        common = f"{self._folder.common}/"
        state = gitfolder.config_state(self._folder)
        return {path.removeprefix(common): data for path, data in state.items()}

    def snapshot_git(self) -> gitfolder.Snapshot:
        """What an agent must leave as it is in the git folder: the configuration, hooks and
        info/ files, every ref and HEAD, and the .git entry itself. Take it before the
        agent runs, and ``restore_git`` it after, before git runs again. The user's global
        git files are kept too, the first time, for ``identity``."""
        if self._user_config is None:  # an identity is read from them later
            self._user_config = gitrun.global_config()
        return gitfolder.snapshot(self._folder)

    def restore_git(self, before: gitfolder.Snapshot) -> list[str]:
        """Put back what ``snapshot_git`` took, byte for byte; what the agent had changed,
        one sentence per kind (none: nothing). ``UserError`` when .git itself was replaced."""
        return gitfolder.restore(self._folder, before).violations()

    def identity(self) -> tuple[str, ...]:
        """The ``user``/``author``/``committer`` name and email settings a commit is made
        with: the user's own, from every configuration file git would read (their global
        file included, which no other git command of memento's reads), and memento's
        fallback for what none sets. Read once, when a commit needs it: from the global files
        as ``snapshot_git`` found them, before the agent (which may rewrite them) ran."""
        if self._identity is None:
            self._identity = read_identity(self.root, kept=self._user_config)
        return self._identity

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
        # the index back to HEAD; staged additions become untracked
        gitrun.check(self.root, "reset", "-q")
        blocked = self._restore_work_tree()
        untracked = self._untracked(())
        removable = set(self._untracked(keep))
        # One -f: like git itself, leave a nested repository alone (its history, and the
        # kept or ignored files inside, would go with it); the report lists it as left.
        gitrun.check(self.root, "clean", "-f", "-d", "-q", *_excludes(keep))
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

    def commit(
        self,
        message: str,
        paths: Sequence[str] | None = None,
        *,
        new: Iterable[str] | None = None,
        maintenance: bool = True,
    ) -> str:
        """Stage everything (or just ``paths``, deletions included) and commit it with
        ``message`` byte for byte; return the new sha. No hooks run and nothing is signed.

        ``new`` says which of ``paths`` git may not know yet: only those are staged first
        (``commit --only`` takes the others from the work tree itself), which spares a git
        process (about 2 ms) when there are none. Should git not know another one after all,
        the commit fails and is made again with every path staged.

        ``maintenance`` False skips git's automatic maintenance after the commit (another
        process, which packs loose objects once they pile up): a caller that commits often
        lets it run now and then instead of every time."""
        only: list[str] = []
        if paths is None:
            gitrun.check(self.root, "add", "-A")
        else:
            chosen = list(dict.fromkeys(paths))
            unknown = set(chosen if new is None else new)
            self._stage([path for path in chosen if path in unknown])
            only = ["--only", "--", *chosen]
        command = ("commit", "-q", "--no-verify", "--no-gpg-sign", "--cleanup=verbatim")
        arguments = (*command, "-F", "-", *only)
        stdin = message.encode("utf-8")
        settings = ("commit.gpgsign=false", *(() if maintenance else _NO_MAINTENANCE))
        # Git may not invent an identity (user.useConfigOnly), and reads only the
        # repository's own configuration: a commit whose repository names nobody fails
        # here, and only then is the user's identity read, from all their files.
        known = self._identity or ("user.useConfigOnly=true",)
        done = gitrun.run(self.root, *arguments, stdin=stdin, config=(*settings, *known))
        if done.returncode != 0:
            if paths is not None and new is not None:
                self._stage(chosen)
            gitrun.check(self.root, *arguments, stdin=stdin, config=(*settings, *self.identity()))
        sha = self._head_file() or self.head()
        assert sha is not None
        return sha

    def _stage(self, paths: Sequence[str]) -> None:
        # git add cannot name a path gone from disk; commit --only takes its deletion
        present = [path for path in paths if _exists(self.root, path)]
        if present:
            gitrun.check(self.root, "add", "-A", "--", *present)

    def change_between(self, old: str, new: str, paths: Sequence[str]) -> bytes:
        """The change from commit ``old`` to commit ``new`` in ``paths``, as a patch that
        ``apply_change`` takes (binary files included)."""
        if not paths:
            return b""
        options = ("--binary", "--no-color", "--no-ext-diff", "--no-textconv")
        return gitrun.check(self.root, "diff", *options, old, new, "--", *paths)

    def apply_change(self, patch: bytes) -> bool:
        """Apply ``patch`` to the work tree and the index, whole or not at all: False (and
        nothing changed) when it does not fit the files as they are."""
        if not patch:
            return True
        done = gitrun.run(self.root, "apply", "--index", "--whitespace=nowarn", stdin=patch)
        return done.returncode == 0

    def subjects_since(self, base: str) -> list[str] | None:
        """The subjects of the commits on HEAD since ``base``, newest first; None when
        ``base`` is not in HEAD's history."""
        if gitrun.run(self.root, "merge-base", "--is-ancestor", base, "HEAD").returncode != 0:
            return None
        out = gitrun.check(self.root, "log", "--format=%s", f"{base}..HEAD")
        return os.fsdecode(out).splitlines()

    def reset_hard(self, sha: str) -> None:
        """Move the branch, index and work tree to ``sha`` (untracked files stay)."""
        gitrun.check(self.root, "reset", "-q", "--hard", sha)

    def reset_soft(self, sha: str) -> None:
        """Move the branch back to ``sha`` and keep the undone commits' changes in the tree
        (for an agent that committed although it was told not to)."""
        gitrun.check(self.root, "reset", "-q", "--soft", sha)

    # -- stages of the rollback -------------------------------------------------------------

    def _restore_work_tree(self) -> bool:
        """Check out from the index every path whose file differs; True when some path had
        to wait because an untracked file or directory stands in its way (git would delete
        it, and with it any kept or ignored file inside)."""
        listing = gitrun.check(self.root, "diff", "--name-only", "--no-renames", *_DIFF_OPTIONS)
        paths = _split(listing)
        ready = [path for path in paths if not _obstructed(self.root, path)]
        if ready:
            listing = b"".join(os.fsencode(path) + b"\0" for path in ready)
            gitrun.check(self.root, "checkout-index", "-f", "-q", "-z", "--stdin", stdin=listing)
        return len(ready) < len(paths)

    def _emergency_stash(self, keep: Sequence[str], label: str) -> str | None:
        """Stash every dirty path but kept files and nested repositories (git cannot stash
        those); the stash's message, or None when nothing was stashed."""
        paths = [path for path in self._dirty_paths(keep) if not path.endswith("/")]
        if not paths:
            return None
        message = f"{EMERGENCY_STASH} {label}"
        before = self._stash_ref()
        done = gitrun.run(
            self.root,
            *("stash", "push", "-q", "--include-untracked", "-m", message, "--", *paths),
            config=self.identity(),
        )
        if done.returncode != 0:
            # a stash that failed halfway leaves its files staged
            gitrun.check(self.root, "reset", "-q")
        return message if self._stash_ref() != before else None

    def _stash_ref(self) -> str | None:
        done = gitrun.run(self.root, "rev-parse", "-q", "--verify", "refs/stash")
        return done.stdout.decode().strip() if done.returncode == 0 else None

    def _head_file(self) -> str | None:
        """HEAD read from the files a commit has just written (the loose ref of the branch,
        or a detached HEAD); None when git keeps it elsewhere (packed refs, reftable)."""
        git_dir = self._repo.git_dir
        if git_dir is None:
            return None
        try:
            text = (git_dir / "HEAD").read_text(encoding="ascii").strip()
            if text.startswith("ref: refs/heads/"):
                ref = text[len("ref: ") :]
                text = (self._repo.common_dir / ref).read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            return None
        if len(text) in (40, 64) and all(char in "0123456789abcdef" for char in text):
            return text
        return None

    # -- what differs -----------------------------------------------------------------------

    def _base(self) -> str:
        """HEAD, or the empty tree on an unborn branch."""
        head = self.head()
        if head is not None:
            return head
        empty_tree = gitrun.check(self.root, "hash-object", "-t", "tree", "--stdin", stdin=b"")
        return empty_tree.decode().strip()

    def _tracked_changes(self) -> list[FileChange]:
        # "HEAD" saves resolving it first; only an unborn branch needs the empty tree. One
        # diff gives both the kind of each change (--raw) and its line counts (--numstat).
        options = ("--raw", "--numstat", "-M", *_DIFF_OPTIONS)
        done = gitrun.run(self.root, "diff", "HEAD", *options)
        listing = done.stdout
        if done.returncode != 0:
            listing = gitrun.check(self.root, "diff", self._base(), *options)
        if not listing:
            return []
        names, counts = _parse_raw_numstat(listing)
        found = []
        for letter, path, old_path in names:
            added, removed = counts.get(path, (0, 0))
            binary = added is None
            found.append(
                FileChange(
                    path,
                    _KINDS.get(letter, MODIFIED),
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
        work_tree = gitrun.check(
            self.root, "diff", base, "--name-only", "--no-renames", *_DIFF_OPTIONS
        )
        index = gitrun.check(
            self.root, "diff", "--cached", base, "--name-only", "--no-renames", *_DIFF_OPTIONS
        )
        return {*_split(work_tree), *_split(index)}

    def _untracked(self, keep: Sequence[str]) -> list[str]:
        """Untracked files git does not ignore, minus those matching ``keep``; a nested
        repository is one entry ending in "/"."""
        listing = gitrun.check(
            self.root, "ls-files", "-z", "--others", "--exclude-standard", *_excludes(keep)
        )
        return _split(listing)

    def _dirty_paths(self, keep: Sequence[str]) -> list[str]:
        return sorted(self._tracked_dirty() | set(self._untracked(keep)))


def start_status(folder: Path) -> PendingStatus:
    """``Workspace.start_status`` of the work tree ``folder`` is in (any folder of it: the
    paths are the top's), even before the ``Workspace`` is made."""
    return PendingStatus(folder, gitrun.start(folder, *_STATUS))


class PendingStatus:
    """A ``git status`` running for ``start_status``."""

    def __init__(self, folder: Path, started: gitrun.Started) -> None:
        self._folder = folder
        self._started = started

    def result(self) -> TreeStatus:
        """Wait for git; its ``TreeStatus``, or ``GitError`` when it failed."""
        done = self._started.wait()
        if done.returncode != 0:
            raise gitrun.failure(self._folder, "status", done)
        return _parse_status(done.stdout)

    def close(self) -> None:
        """Wait for git without reading its answer (a tick that stopped before it)."""
        self._started.wait()


class PendingFolders:
    """A ``git ls-files --directory`` running for ``start_ignored_folders``."""

    def __init__(self, started: gitrun.Started) -> None:
        self._started = started

    def result(self) -> list[str]:
        """Wait for git; the folders, relative to the top, without their final "/" (none
        when git failed: then every folder is walked, which costs time, not safety)."""
        done = self._started.wait()
        if done.returncode != 0:
            return []
        return [path[:-1] for path in _split(done.stdout) if path.endswith("/")]

    def close(self) -> None:
        self._started.wait()


# -- pure helpers ---------------------------------------------------------------------------


def _excludes(keep: Sequence[str]) -> list[str]:
    """``--exclude`` options for the lines of a .memento_cleanignore (gitignore syntax)."""
    patterns = (line.rstrip("\r\n") for line in keep)
    return [f"--exclude={line}" for line in patterns if line.strip() and not line.startswith("#")]


def _split(listing: bytes) -> list[str]:
    return [os.fsdecode(item) for item in listing.split(b"\0") if item]


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


def _parse_status(listing: bytes) -> TreeStatus:
    """A ``TreeStatus`` from ``git status --porcelain=v2 -z --branch``."""
    head: str | None = None
    tracked: list[str] = []
    untracked: list[str] = []
    fields = iter(listing.split(b"\0"))
    for record in fields:
        kind = record[:2]
        if kind == b"# ":
            if record.startswith(b"# branch.oid "):
                oid = os.fsdecode(record[len(b"# branch.oid ") :])
                head = None if oid == "(initial)" else oid
        elif kind == b"1 ":  # 1 XY sub mH mI mW hH hI path
            tracked.append(os.fsdecode(record.split(b" ", 8)[8]))
        elif kind == b"2 ":  # 2 XY sub mH mI mW hH hI Xscore path, then the old path
            tracked.append(os.fsdecode(record.split(b" ", 9)[9]))
            tracked.append(os.fsdecode(next(fields)))
        elif kind == b"u ":  # u XY sub m1 m2 m3 mW h1 h2 h3 path
            tracked.append(os.fsdecode(record.split(b" ", 10)[10]))
        elif kind == b"? ":
            untracked.append(os.fsdecode(record[2:]))
    return TreeStatus(head, tuple(tracked), tuple(untracked))


def _count(field: bytes) -> int | None:
    return None if field == b"-" else int(field)


def _untracked_change(root: Path, path: str) -> FileChange:
    lines, binary = _count_lines(root / path)
    return FileChange(path, UNTRACKED, lines, 0, binary)


def _size(path: Path) -> int:
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
