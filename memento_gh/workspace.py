"""The repository as the tick sees it; git itself runs in ``gitrun.py``.

``Workspace`` is what the tick sees of the work tree: the change against HEAD, the rollback
to HEAD, the commit. What of ``.git`` an agent could use against memento, and its keeping
and putting back, is the wall's (``engine/wall/``); what git prints of a change is read in
``gitdiff.py``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memento_gh import gitdiff, gitrun
from memento_gh.changes import DELETED, FileChange
from memento_gh.errors import UserError
from memento_gh.files import decode_utf8

if TYPE_CHECKING:
    from datetime import timedelta

EMERGENCY_STASH = "memento-emergency-stash"
FALLBACK_IDENTITY = (("user.name", "memento"), ("user.email", "memento@localhost"))
#: The settings a commit's author and committer come from (``git config --help``).
IDENTITY_SETTINGS = r"^(user|author|committer)\.(name|email)$"

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
        repo = open_repo(root)
        if repo.top is None:
            raise UserError(
                f"{root}: a bare repository has no working tree; run memento in a clone"
            )
        self.root = Path(repo.top)
        #: The git folder every work tree of the repository shares: its config, hooks/ and
        #: info/ (``.git`` itself, unless this is a linked work tree).
        self.common_dir = repo.common_dir
        #: This work tree's own git folder: ``.git``, or in a linked work tree the folder
        #: its ``.git`` file names.
        self.git_dir = repo.git_dir.resolve() if repo.git_dir else repo.common_dir
        #: Where git keeps this work tree's index (None: git did not say where its git
        #: folder is).
        self.index_file = None if repo.git_dir is None else repo.git_dir / "index"
        self._head_files = (repo.git_dir, repo.common_dir)
        self._identity: tuple[str, ...] | None = None
        # The user's global git files as memento found them, before any agent of this run
        # could rewrite them: a commit's identity is read from these (``identity``).
        self._user_config = gitrun.global_config()

    def head(self) -> str | None:
        """The sha HEAD points at, or None on an unborn branch (no commit yet)."""
        return _head(self.root)

    def quick_head(self) -> str | None:
        """``head``, read from git's files when it can be: one git process fewer (about
        2 ms here) each time a tick checks where HEAD is."""
        return _head_file(*self._head_files) or self.head()

    def current_branch(self) -> str | None:
        """The checked-out branch's short name, or None when HEAD is detached."""
        done = gitrun.run(self.root, "symbolic-ref", "-q", "--short", "HEAD")
        return os.fsdecode(done.stdout).strip() if done.returncode == 0 else None

    def changes(self, keep: Sequence[str] = ()) -> list[FileChange]:
        """Everything that differs from HEAD, sorted by path: staged and unstaged edits to
        tracked files, and untracked files git does not ignore (except those matching
        ``keep``). On an unborn branch every file is "added" or "untracked"."""
        found = _tracked_changes(self.root)
        found += [gitdiff.untracked_change(self.root, path) for path in _untracked(self.root, keep)]
        return sorted(found, key=lambda change: change.path)

    def sizes(self, changes: Iterable[FileChange]) -> dict[str, int]:
        """The bytes each path that ``changes`` adds or changes holds in the work tree (what
        a commit would store): a file's length, a link's target name; 0 for a folder."""
        return {
            change.path: gitdiff.size(self.root / change.path)
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
        return not _tracked_dirty(self.root) and not _untracked(self.root, keep)

    def identity(self) -> tuple[str, ...]:
        """The ``user``/``author``/``committer`` name and email settings a commit is made
        with: the user's own, from every configuration file git would read (their global
        file included, which no other git command of memento's reads), and memento's
        fallback for what none sets. Read once, when a commit needs it: from the global files
        as they were when the workspace was made, before an agent (which may rewrite them)
        ran."""
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
        root = self.root
        restored = sorted(_tracked_dirty(root))
        # the index back to HEAD; staged additions become untracked
        gitrun.check(root, "reset", "-q")
        blocked = _restore_work_tree(root)
        untracked = _untracked(root, ())
        removable = set(_untracked(root, keep))
        # One -f: like git itself, leave a nested repository alone (its history, and the
        # kept or ignored files inside, would go with it); the report lists it as left.
        gitrun.check(root, "clean", "-f", "-d", "-q", *_excludes(keep))
        if blocked:
            _restore_work_tree(root)
        removed = [path for path in untracked if path in removable and not _exists(root, path)]
        kept = [path for path in untracked if path not in removable]
        stash: str | None = None
        left: tuple[str, ...] = ()
        if not self.is_clean(keep):
            stash = _emergency_stash(root, keep, label, self.identity())
            left = tuple(_dirty_paths(root, keep))
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
            _stage(self.root, [path for path in chosen if path in unknown])
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
                _stage(self.root, chosen)
            gitrun.check(self.root, *arguments, stdin=stdin, config=(*settings, *self.identity()))
        sha = _head_file(*self._head_files) or self.head()
        assert sha is not None
        return sha

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


# -- the stages of a rollback, and what differs ---------------------------------------------


def _stage(root: Path, paths: Sequence[str]) -> None:
    # git add cannot name a path gone from disk; commit --only takes its deletion
    present = [path for path in paths if _exists(root, path)]
    if present:
        gitrun.check(root, "add", "-A", "--", *present)


def _restore_work_tree(root: Path) -> bool:
    """Check out from the index every path whose file differs; True when some path had to
    wait because an untracked file or directory stands in its way (git would delete it, and
    with it any kept or ignored file inside)."""
    paths = gitdiff.split(gitrun.check(root, "diff", "--name-only", "--no-renames", *_DIFF_OPTIONS))
    ready = [path for path in paths if not _obstructed(root, path)]
    if ready:
        listing = b"".join(os.fsencode(path) + b"\0" for path in ready)
        gitrun.check(root, "checkout-index", "-f", "-q", "-z", "--stdin", stdin=listing)
    return len(ready) < len(paths)


def _emergency_stash(
    root: Path, keep: Sequence[str], label: str, identity: Sequence[str]
) -> str | None:
    """Stash every dirty path but kept files and nested repositories (git cannot stash
    those), as ``identity``; the stash's message, or None when nothing was stashed."""
    paths = [path for path in _dirty_paths(root, keep) if not path.endswith("/")]
    if not paths:
        return None
    message = f"{EMERGENCY_STASH} {label}"
    before = _stash_ref(root)
    done = gitrun.run(
        root,
        *("stash", "push", "-q", "--include-untracked", "-m", message, "--", *paths),
        config=identity,
    )
    if done.returncode != 0:
        # a stash that failed halfway leaves its files staged
        gitrun.check(root, "reset", "-q")
    return message if _stash_ref(root) != before else None


def _stash_ref(root: Path) -> str | None:
    done = gitrun.run(root, "rev-parse", "-q", "--verify", "refs/stash")
    return done.stdout.decode().strip() if done.returncode == 0 else None


def _head(root: Path) -> str | None:
    done = gitrun.run(root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
    return done.stdout.decode().strip() if done.returncode == 0 else None


def _head_file(git_dir: Path | None, common_dir: Path) -> str | None:
    """HEAD read from the files a commit has just written (the loose ref of the branch, or
    a detached HEAD); None when git keeps it elsewhere (packed refs, reftable)."""
    if git_dir is None:
        return None
    try:
        text = (git_dir / "HEAD").read_text(encoding="ascii").strip()
        if text.startswith("ref: refs/heads/"):
            text = (common_dir / text[len("ref: ") :]).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
    if len(text) in (40, 64) and all(char in "0123456789abcdef" for char in text):
        return text
    return None


def _base(root: Path) -> str:
    """HEAD, or the empty tree on an unborn branch."""
    head = _head(root)
    if head is not None:
        return head
    empty_tree = gitrun.check(root, "hash-object", "-t", "tree", "--stdin", stdin=b"")
    return empty_tree.decode().strip()


def _tracked_changes(root: Path) -> list[FileChange]:
    # "HEAD" saves resolving it first; only an unborn branch needs the empty tree. One
    # diff gives both the kind of each change (--raw) and its line counts (--numstat).
    options = ("--raw", "--numstat", "-M", *_DIFF_OPTIONS)
    done = gitrun.run(root, "diff", "HEAD", *options)
    listing = done.stdout
    if done.returncode != 0:
        listing = gitrun.check(root, "diff", _base(root), *options)
    return gitdiff.tracked_changes(listing) if listing else []


def _tracked_dirty(root: Path) -> set[str]:
    """Tracked paths whose index entry or file differs from HEAD (both ends of renames)."""
    base = _base(root)
    names = ("--name-only", "--no-renames", *_DIFF_OPTIONS)
    work_tree = gitrun.check(root, "diff", base, *names)
    index = gitrun.check(root, "diff", "--cached", base, *names)
    return {*gitdiff.split(work_tree), *gitdiff.split(index)}


def _untracked(root: Path, keep: Sequence[str]) -> list[str]:
    """Untracked files git does not ignore, minus those matching ``keep``; a nested
    repository is one entry ending in "/"."""
    listing = gitrun.check(
        root, "ls-files", "-z", "--others", "--exclude-standard", *_excludes(keep)
    )
    return gitdiff.split(listing)


def _dirty_paths(root: Path, keep: Sequence[str]) -> list[str]:
    return sorted(_tracked_dirty(root) | set(_untracked(root, keep)))


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


# -- pure helpers ---------------------------------------------------------------------------


def _excludes(keep: Sequence[str]) -> list[str]:
    """``--exclude`` options for the lines of a .memento_cleanignore (gitignore syntax)."""
    patterns = (line.rstrip("\r\n") for line in keep)
    return [f"--exclude={line}" for line in patterns if line.strip() and not line.startswith("#")]


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
