"""The wall around the agent and verify: whatever a program memento starts in the work tree
could use against memento, kept before it runs and put back, and named, after it.

The worker's attempt (``engine/tick/attempt.py``) and the architect (``architect/run.py``)
go through the same wall, and nothing else keeps or restores ``.git``::

    with wall.kept(workspace, watched=patterns, skip=is_working_file) as kept:
        ran = kept.run_agent(argv, env=..., ...)
        changes = kept.changes(read)  # the agent's change, as git can no longer hide it
        checked, seen = kept.run_verify(command, changes, env=..., ...)
    kept.violations  # one sentence per thing the agent or verify did that it may not

``kept`` takes, before any process runs, the git folder (``gitfolder.py``: config, hooks,
``info/``, refs, HEAD, operations in progress, the ``.git`` entry itself, the user's global
ignore file), git's index (``gitindex.py``) and where HEAD is; right before a process runs,
the tree's special files (``special_files.py``) and the stat data of the ``watched`` files
(``hidden.py``). After each process it puts back, in this order: special files first (a
FIFO in ``.git`` would block git itself), the git folder before git runs again, the index
before git reads it. ``changes`` then checks HEAD and shows git the watched files its index
hid. ``run_verify`` holds the change to the bytes verify saw (``fingerprint.py``); the
commit checks them again (``changed_since``). Verify runs the agent's code: it runs inside
the same wall, and is put back the same way.

Seams for what comes next, neither built yet:

- *A sandbox runner.* ``Kept.run_agent`` and ``Kept.run_verify`` are the only calls that
  start a process of the agent's (through ``presets.run_agent`` and ``verify.run_verify``,
  whose runner ends every descendant). They choose its surroundings: the work tree as its
  folder and an environment without credentials. A sandbox (bubblewrap with ``.git``
  read-only, a fresh ``$HOME`` and ``/tmp``, a model proxy that holds the key) wraps the
  command line and the environment there, and nowhere else; the put back after each run
  stays, for ``sandbox: off`` and as a second layer.
- *Checks before a push, and git that trusts nothing the agent wrote.* The wall holds what
  it read before the agent (``Kept``'s snapshot of the git folder): a check of
  ``.git/config`` right before a push compares against that, and belongs here, as do the
  rules memento's own git reads (HEAD's ignore rules and attributes, no submodule). What
  verify changed in the work tree is rolled back in ``Kept.run_verify``'s put back.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from memento_gh import gitrun
from memento_gh.changes import FileChange
from memento_gh.engine.agents import presets, verify
from memento_gh.engine.records import AgentResult, VerifyResult
from memento_gh.engine.wall import fingerprint, gitfolder, gitindex, hidden, special_files
from memento_gh.workspace import PendingStatus, TreeStatus, Workspace

#: The agent's change as the caller counts it, from the status taken after the agent (None:
#: read it all again).
ReadChanges = Callable[[TreeStatus | None], list[FileChange]]


def kept(
    workspace: Workspace,
    *,
    watched: Sequence[str] = (),
    skip: Callable[[str], bool] = lambda path: False,
) -> Kept:
    """The wall for one run of the agent (and its verify) in ``workspace``: use it as a
    context manager. ``watched``: plan patterns of the files whose change git's index must
    not hide (the task's guard and context files; ``.`` for every file); ``skip``: paths
    memento writes itself, never the agent's change."""
    return Kept(workspace, watched, skip)


class Kept:
    """What the wall kept before the agent, and the violations found since."""

    def __init__(
        self, workspace: Workspace, watched: Sequence[str], skip: Callable[[str], bool]
    ) -> None:
        self._workspace = workspace
        self._root = workspace.root
        self._watched = watched
        self._skip = skip
        #: Where HEAD was before the agent.
        self.head = workspace.quick_head()
        self._folder = git_folder(workspace)
        self._git = gitfolder.snapshot(self._folder)
        self._index = gitindex.KeptIndex(self._root, workspace.index_file)
        # git lists the folders it ignores while the caller writes the prompt
        self._ignored: _IgnoredFolders | None = _IgnoredFolders(self._root, skip)
        self._tree: special_files.Snapshot | None = None
        self._stamps: hidden.Stamps = {}
        self._status: PendingStatus | None = None
        self._ran = False  # a process ran since the last put back
        self._violations: list[str] = []

    def __enter__(self) -> Kept:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is None:
            self._close()
            return
        # Leaving on an error (an interrupt, say): put back what can be, and let it pass.
        with contextlib.suppress(Exception):
            self._close()

    @property
    def violations(self) -> tuple[str, ...]:
        """What the agent (or verify) did against memento, one sentence each, all undone."""
        return tuple(self._violations)

    def run_agent(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout: float | None,
        log: Path | IO[bytes] | None,
        prompt_file: Path,
        agent: str | None = None,
        identity: Sequence[str] = (),
        model: str | None = None,
    ) -> AgentResult:
        """Run the agent in the work tree (``presets.run_agent``: credentials out of
        ``env``), then put back all it could use against memento, and start a ``git status``
        for ``changes``."""
        self._before_run()
        self._ran = True
        result = presets.run_agent(
            argv,
            repo=self._root,
            env=env,
            timeout=timeout,
            log=log,
            prompt_file=prompt_file,
            agent=agent,
            identity=identity,
            model=model,
        )
        self._put_back("")
        self._status = self._workspace.start_status()  # git looks while the caller reads
        return result

    def changes(self, read: ReadChanges) -> list[FileChange]:
        """The agent's change as ``read`` counts it, once HEAD is where it was (an agent that
        committed: a violation, its commits undone, its change kept in the tree), with the
        watched files git's index hid made visible to git (each a violation)."""
        after = self._status_after()
        if after is None or after.head != self.head:
            self._violations.append("the agent moved HEAD (it ran a git command that commits)")
            after = None  # taken against the agent's commit: the change is read again
            if self.head is not None:
                self._workspace.reset_soft(self.head)
        found = read(after)
        listed = fingerprint.paths_of(found)
        exposed = hidden.expose(self._root, self._stamps, self.head, set(listed))
        if not exposed:
            return found
        found = read(None)
        self._violations += hidden.hidden_messages(exposed, found)
        return found

    def run_verify(
        self,
        command: str,
        changes: Sequence[FileChange],
        *,
        env: Mapping[str, str],
        timeout: float | None,
        log: Path | IO[bytes] | None,
    ) -> tuple[VerifyResult, dict[str, bytes]]:
        """Run ``command`` (a shell line) in the work tree, and the fingerprint of
        ``changes``' files it saw (``fingerprint.py``); then put back what it changed of git,
        as after the agent (verify runs the agent's code)."""
        seen = fingerprint.fingerprint(self._root, fingerprint.paths_of(changes))
        self._index = gitindex.KeptIndex(self._root, self._workspace.index_file)
        self._ran = True
        result = verify.run_verify(
            command, cwd=self._root, env=presets.agent_env(env), timeout=timeout, log=log
        )
        self._put_back("while verify ran, ")
        return result, seen

    # -- the steps ------------------------------------------------------------------------

    def _before_run(self) -> None:
        """The tree as it is right before the agent: its special files, and the stat data
        of the watched files."""
        ignored = self._ignored.result() if self._ignored is not None else []
        self._ignored = None
        if self._watched:
            self._stamps = hidden.stamp_files(self._root, self._watched, self._skip, ignored)
        self._tree = special_files.snapshot(self._root, ignored)

    def _put_back(self, prefix: str) -> None:
        """Undo what the process that ran could use against memento, in the order git
        needs; each thing undone becomes a violation, led by ``prefix``."""
        said: list[str] = []
        if self._tree is not None:
            # Before git looks: a FIFO in .git blocks it, one in place of a tracked file
            # stops it.
            said += special_files.remove(self._tree, special_files.new_strays(self._tree))
        # Before git runs again: whatever the agent planted in .git would run, or mislead it.
        said += gitfolder.restore(self._folder, self._git).violations()
        # Before git reads the index again: a flag set there hides a change.
        said += hidden.index_messages(self._index.put_back())
        self._violations += [f"{prefix}{sentence}" for sentence in said]
        self._ran = False

    def _status_after(self) -> TreeStatus | None:
        pending, self._status = self._status, None
        if pending is None:
            return None
        try:
            return pending.result()
        finally:
            pending.close()

    def _close(self) -> None:
        if self._ignored is not None:
            self._ignored.close()
            self._ignored = None
        if self._status is not None:
            self._status.close()
            self._status = None
        if self._ran:  # a run that ended in an error: its put back is still owed
            self._put_back("")


class _IgnoredFolders:
    """The folders git ignores as a whole (``node_modules``), but memento's own, listed by a
    git process that runs while the caller does other things. The walks before the agent
    leave them out: nothing there is committed, and memento reads nothing there unchecked."""

    _LISTING = ("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")

    def __init__(self, root: Path, skip: Callable[[str], bool]) -> None:
        self._started = gitrun.start(root, *self._LISTING)
        self._skip = skip

    def result(self) -> list[str]:
        """The folders, relative to the top, without their final "/" (none when git failed:
        then every folder is walked, which costs time, not safety)."""
        done = self._started.wait()
        if done.returncode != 0:
            return []
        listed = (os.fsdecode(item) for item in done.stdout.split(b"\0") if item)
        # memento's own folder (logs/) is walked, ignored or not
        return [path[:-1] for path in listed if path.endswith("/") and not self._skip(path)]

    def close(self) -> None:
        self._started.wait()


def git_folder(workspace: Workspace) -> gitfolder.GitFolder:
    """Where ``workspace``'s git files are, and the user's files git reads whatever its
    configuration says."""
    return gitfolder.GitFolder(
        os.fspath(workspace.root),
        os.fspath(workspace.common_dir),
        os.fspath(workspace.git_dir),
        _user_git_files(),
    )


def _user_git_files() -> tuple[str, ...]:
    """The user's files that git reads even cut off from their configuration: the default
    global ignore file (``git help gitignore``)."""
    home = os.environ.get("HOME", "")
    config = os.environ.get("XDG_CONFIG_HOME") or f"{home}/.config"
    return (f"{config}/git/ignore",) if home or os.environ.get("XDG_CONFIG_HOME") else ()


def git_config_state(workspace: Workspace) -> dict[str, bytes]:
    """Per file of .git/config, .git/hooks/ and .git/info/, keyed by its path relative to
    .git: its kind (file, link), permissions and content. The permissions count (the
    executable bit is what turns a hook on); the tick's own scratch files under
    .git/memento/ are not part of it."""
    common = f"{workspace.common_dir}/"
    state = gitfolder.config_state(git_folder(workspace))
    return {path.removeprefix(common): data for path, data in state.items()}


def fresh_index(workspace: Workspace) -> None:
    """After a tick that died: the index its agent left may hide files from git (flags,
    forged entries), so it is made afresh from HEAD and git reads every file again."""
    head = workspace.quick_head()
    if head is not None:
        gitindex.rebuild(workspace.root, head)
