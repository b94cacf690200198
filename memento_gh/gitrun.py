"""Git: the only module that starts it.

It calls the git command line directly rather than through GitPython: a tick needs a
dozen plumbing commands and nothing of GitPython's object model, and importing GitPython
alone took longer than a bare `python -c pass` plus a `git commit` (benchmarks/bench_tick.py).

Every command runs with the same safety options, in an environment made in one place, and
fails the same way: ``GitError``, a sentence that names the command, the folder and what git
said. ``run`` gives back what git gave (exit code, stdout, stderr) for callers that read a
failure as an answer; ``check`` raises for the others; ``start`` does not wait.

The agent runs as the same user as memento and may rewrite any file that user can, so git
here reads no configuration but the repository's own (which the tick restores after the
agent): not the user's global files nor the system's, no attributes file of theirs, no hooks,
no fsmonitor. What memento takes from the user's configuration (an identity, a push's
credential helper) it asks for by name, with ``user_settings``, before the agent runs. And
no git process gets a credential from memento's environment: the token reaches only the
network commands, through the ``env`` their caller passes.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from memento_gh import credentials
from memento_gh.errors import UserError

# On every command: no hooks, no fsmonitor command and no attributes file outside the
# repository (an agent could have planted any of them), pathspecs are plain paths (a file
# may be called `*` or `:x`), and a read never takes the index lock just to refresh it. A
# file whose cached data in the index still fits is taken as unchanged: the data compared is
# all of it, the change time included (an agent can put a file's size and modification time
# back, never its change time), whatever the repository's configuration says, and no command
# of memento's marks an entry assume-unchanged.
_SAFE_OPTIONS = (
    "--no-optional-locks",
    "--literal-pathspecs",
    "-c",
    f"core.hooksPath={os.devnull}",
    "-c",
    "core.fsmonitor=false",
    *("-c", f"core.attributesFile={os.devnull}"),
    *("-c", "core.checkStat=default", "-c", "core.trustctime=true"),
    *("-c", "core.ignoreStat=false"),
)
# Nor any configuration or attributes file of the user's or the system's.
_ISOLATION = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
}
#: The commands that talk to a remote: the only ones that may get a credential, from
#: their caller (``remote.remote_auth_env``), or keep the ways to one that the user's
#: environment has (an ssh agent, an askpass program).
NETWORK_COMMANDS = frozenset({"fetch", "ls-remote", "push"})
#: The user's ``safe.directory`` values, which say that a repository another user owns is
#: theirs to work in (a container job's checkout): read from their global and system files
#: the first time git refuses a repository as "dubious", and passed on (``git -c``) from
#: then on. Empty: not read yet.
_SAFE_FOLDERS: dict[str, tuple[str, ...]] = {}
# The variables that pass settings to git by number (``git config --help``, GIT_CONFIG_COUNT).
_NUMBERED_SETTINGS = ("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")


class GitError(UserError):
    """A git command failed in a repository that exists (the circuit breaker's "git failure")."""


class NetworkError(GitError):
    """Git could not reach the remote: the repository itself is fine, so no reason to pause."""


class Ran(NamedTuple):
    """What a finished git command gave back."""

    returncode: int
    stdout: bytes
    stderr: bytes


def run(
    folder: Path,
    *args: str,
    config: Iterable[str] = (),
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Ran:
    """Run ``git <args>`` in ``folder`` and wait for it, whatever its exit code.

    ``config`` holds ``key=value`` settings for this command alone (``git -c``); ``env``
    variables to add to the environment (``GIT_CONFIG_*`` entries count after any already
    set); ``timeout`` the seconds to wait before git is killed and ``GitError`` raised."""
    done = _run(folder, args, config, stdin, env, timeout)
    if _refused_as_dubious(folder, done):
        done = _run(folder, args, config, stdin, env, timeout)
    return done


def _run(
    folder: Path,
    args: tuple[str, ...],
    config: Iterable[str],
    stdin: bytes | None,
    env: Mapping[str, str] | None,
    timeout: float | None,
) -> Ran:
    try:
        done = subprocess.run(
            _command(args, config),
            cwd=folder,
            env=_environment(env or {}, os.environ, network=args[0] in NETWORK_COMMANDS),
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            check=False,
            timeout=timeout,
        )
    except (FileNotFoundError, NotADirectoryError) as error:
        raise _not_started(folder, error) from None
    except subprocess.TimeoutExpired:
        raise GitError(_sentence(folder, args[0], f"no answer in {timeout:g} seconds")) from None
    return Ran(done.returncode, done.stdout, done.stderr)


def check(
    folder: Path,
    *args: str,
    config: Iterable[str] = (),
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> bytes:
    """``run``, for a command that must succeed: its stdout, or ``GitError`` saying why not."""
    done = run(folder, *args, config=config, stdin=stdin, env=env)
    if done.returncode != 0:
        raise failure(folder, args[0], done)
    return done.stdout


def output(folder: Path, *args: str, config: Iterable[str] = ()) -> str:
    """Stdout without its last newline, or "" when the command fails."""
    done = run(folder, *args, config=config)
    return os.fsdecode(done.stdout).rstrip("\n") if done.returncode == 0 else ""


def start(folder: Path, *args: str) -> Started:
    """``run`` that returns at once: git works while the caller does other things."""
    try:
        child = subprocess.Popen(
            _command(args, ()),
            cwd=folder,
            env=_environment({}, os.environ, network=args[0] in NETWORK_COMMANDS),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except (FileNotFoundError, NotADirectoryError) as error:
        raise _not_started(folder, error) from None
    return Started(child, folder, args)


class Setting(NamedTuple):
    """One value from the user's git configuration, and the kind of file it came from."""

    scope: str  # "system", "global", "local", "worktree" or "command"
    key: str  # as git names it: section and key in lower case
    value: str


def user_settings(folder: Path, pattern: str, *, kept: bytes | None = None) -> list[Setting]:
    """Every value of the settings whose names match ``pattern`` (a regular expression, as
    ``git config --get-regexp`` takes it) in all the configuration the user's own git would
    read in ``folder``, the global and system files included, in git's order (the last value
    of a key wins); none when git cannot read it. ``kept``: the global files' bytes as
    ``global_config`` read them earlier, to read instead when the files changed since.

    This is the one command that reads the user's and the system's files, and it runs no
    program. Call it before the agent runs (the agent may rewrite them), or keep them."""
    env = credentials.without_credentials(os.environ)
    with contextlib.ExitStack() as stack:
        if kept is not None and kept != global_config():
            folder_kept = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            (folder_kept / "gitconfig").write_bytes(kept)
            env["GIT_CONFIG_GLOBAL"] = os.fspath(folder_kept / "gitconfig")
        try:
            command = ["git", "--no-optional-locks", "config", "-z", "--show-scope"]
            done = subprocess.run(
                [*command, "--get-regexp", pattern],
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
                timeout=_SETTINGS_TIMEOUT,
            )
        except (FileNotFoundError, NotADirectoryError) as error:
            raise _not_started(folder, error) from None
        except subprocess.TimeoutExpired:
            raise UserError(
                f"git config gave no answer in {_SETTINGS_TIMEOUT} seconds in {folder}: one of "
                "your git configuration files (~/.gitconfig, ~/.config/git/config, "
                ".git/config) is not a regular file, or is very large; replace it with a "
                "regular file, then run memento again"
            ) from None
    if done.returncode != 0:
        return []
    fields = done.stdout.removesuffix(b"\0").split(b"\0")
    found = []
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = os.fsdecode(entry).partition("\n")
        found.append(Setting(os.fsdecode(scope), key, value))
    return found


#: Seconds ``user_settings`` waits for git: reading a few small files takes milliseconds.
_SETTINGS_TIMEOUT = 10
#: More than any git configuration file of a person's: a larger one is not kept.
_CONFIG_CAP = 1 << 20


def global_config(environ: Mapping[str, str] = os.environ) -> bytes:
    """The bytes of the user's global git configuration files, in the order git reads them
    (``$XDG_CONFIG_HOME/git/config``, then ``~/.gitconfig``; ``$GIT_CONFIG_GLOBAL`` alone
    where set): what an agent could rewrite, kept before it runs for ``user_settings``. A
    file that is not a regular one, or too large, counts as empty, and nothing blocks."""
    if environ.get("GIT_CONFIG_GLOBAL"):
        paths = [environ["GIT_CONFIG_GLOBAL"]]
    else:
        home = environ.get("HOME", "")
        xdg = environ.get("XDG_CONFIG_HOME") or f"{home}/.config"
        paths = [f"{xdg}/git/config", f"{home}/.gitconfig"]
    return b"\n".join(_regular_bytes(path) for path in paths)


def _regular_bytes(path: str) -> bytes:
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _CONFIG_CAP:
            return b""
        return os.read(descriptor, _CONFIG_CAP)
    except OSError:
        return b""
    finally:
        os.close(descriptor)


class Started:
    """A git command that ``start`` started."""

    def __init__(self, child: subprocess.Popen[bytes], folder: Path, args: tuple[str, ...]) -> None:
        self._child = child
        self._folder = folder
        self._args = args
        self._done: Ran | None = None

    def wait(self) -> Ran:
        """Wait for git and give back what it gave (the same again on a second call)."""
        if self._done is None:
            out, err = self._child.communicate()
            self._done = Ran(self._child.returncode, out, err)
            if _refused_as_dubious(self._folder, self._done):
                self._done = run(self._folder, *self._args)
        return self._done


def failure(folder: Path, command: str, done: Ran) -> GitError:
    """The ``GitError`` for ``git <command>`` that failed in ``folder`` as ``done`` tells."""
    return GitError(_sentence(folder, command, reason(done)))


def reason(done: Ran) -> str:
    """What git said went wrong, in one line: the first "fatal:" or "error:" line of its
    stderr (of its stdout when stderr is empty) without that word, else the first line, else
    the exit code."""
    lines = [line.strip() for line in os.fsdecode(done.stderr or done.stdout).splitlines()]
    said = [line for line in lines if line]
    fatal = [line for line in said if line.startswith(("fatal:", "error:"))]
    chosen = (fatal or said or [f"exit code {done.returncode}"])[0]
    return chosen.removeprefix("fatal: ").removeprefix("error: ").rstrip(".")


def _sentence(folder: Path, command: str, why: str) -> str:
    return f"git {command} failed in {folder}: {why}. Is the repository healthy (`git status`)?"


def _command(args: Iterable[str], config: Iterable[str]) -> list[str]:
    safe = [f"safe.directory={folder}" for folder in _SAFE_FOLDERS.get("read", ())]
    settings = [part for setting in (*safe, *config) for part in ("-c", setting)]
    return ["git", *_SAFE_OPTIONS, *settings, *args]


def _refused_as_dubious(folder: Path, done: Ran) -> bool:
    """True when git refused ``folder`` as owned by another user and the user's
    configuration, read now for the first time, names folders they trust: the command is
    worth running again."""
    if "read" in _SAFE_FOLDERS or b"dubious ownership" not in done.stderr:
        return False
    found = user_settings(folder, r"^safe\.directory$")
    trusted = tuple(s.value for s in found if s.scope in ("system", "global", "command"))
    _SAFE_FOLDERS["read"] = trusted
    return bool(trusted)


def _environment(
    extra: Mapping[str, str], base: Mapping[str, str], *, network: bool = False
) -> dict[str, str]:
    """``base`` without credentials (a network command keeps the ways to them), cut off from
    the user's and the system's configuration, plus ``extra``; ``extra``'s numbered settings
    (``GIT_CONFIG_COUNT``, ``GIT_CONFIG_KEY_n``, ``GIT_CONFIG_VALUE_n``) are numbered after
    those ``base`` already has, so that both apply."""
    merged = credentials.without_credentials(base, openers=network)
    merged.update(_ISOLATION)
    try:
        offset = max(int(base.get("GIT_CONFIG_COUNT", "0")), 0)
    except ValueError:
        offset = 0  # git would refuse the bogus count; ours replaces it
    count = int(extra.get("GIT_CONFIG_COUNT", "0"))
    for key, value in extra.items():
        if not key.startswith(_NUMBERED_SETTINGS):
            merged[key] = value
    for index in range(count):
        merged[f"GIT_CONFIG_KEY_{offset + index}"] = extra[f"GIT_CONFIG_KEY_{index}"]
        merged[f"GIT_CONFIG_VALUE_{offset + index}"] = extra[f"GIT_CONFIG_VALUE_{index}"]
    if count:
        merged["GIT_CONFIG_COUNT"] = str(offset + count)
    return merged


def _not_started(folder: Path, error: OSError) -> UserError:
    if isinstance(error, NotADirectoryError):
        return UserError(f"{folder}: not a folder")
    if not folder.is_dir():
        return UserError(f"{folder}: no such folder")
    return UserError("git is not installed or not on PATH; install git")
