"""Git: the only module that starts it.

It calls the git command line directly rather than through GitPython: a tick needs a
dozen plumbing commands and nothing of GitPython's object model, and importing GitPython
alone took longer than a bare `python -c pass` plus a `git commit` (benchmarks/bench_tick.py).

Every command runs with the same safety options, in an environment made in one place, and
fails the same way: ``GitError``, a sentence that names the command, the folder and what git
said. ``run`` gives back what git gave (exit code, stdout, stderr) for callers that read a
failure as an answer; ``check`` raises for the others; ``start`` does not wait.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from memento_gh.errors import UserError

# On every command: no hooks and no fsmonitor command (an agent could have planted either),
# pathspecs are plain paths (a file may be called `*` or `:x`), and a read never takes the
# index lock just to refresh it. A file whose cached data in the index still fits is taken as
# unchanged: the data compared is all of it, the change time included (an agent can put a
# file's size and modification time back, never its change time), whatever the repository's
# configuration says, and no command of memento's marks an entry assume-unchanged.
_SAFE_OPTIONS = (
    "--no-optional-locks",
    "--literal-pathspecs",
    "-c",
    f"core.hooksPath={os.devnull}",
    "-c",
    "core.fsmonitor=false",
    *("-c", "core.checkStat=default", "-c", "core.trustctime=true"),
    *("-c", "core.ignoreStat=false"),
)
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
    try:
        done = subprocess.run(
            _command(args, config),
            cwd=folder,
            env=_environment(env or {}, os.environ),
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
            env=_environment({}, os.environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except (FileNotFoundError, NotADirectoryError) as error:
        raise _not_started(folder, error) from None
    return Started(child)


class Started:
    """A git command that ``start`` started."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self._child = child
        self._done: Ran | None = None

    def wait(self) -> Ran:
        """Wait for git and give back what it gave (the same again on a second call)."""
        if self._done is None:
            out, err = self._child.communicate()
            self._done = Ran(self._child.returncode, out, err)
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
    settings = [part for setting in config for part in ("-c", setting)]
    return ["git", *_SAFE_OPTIONS, *settings, *args]


def _environment(extra: Mapping[str, str], base: Mapping[str, str]) -> dict[str, str] | None:
    """``base`` plus ``extra``; ``extra``'s numbered settings (``GIT_CONFIG_COUNT``,
    ``GIT_CONFIG_KEY_n``, ``GIT_CONFIG_VALUE_n``) are numbered after those ``base`` already
    has, so that both apply. None (inherit ``base``) when there is nothing extra."""
    # Every git process gets its environment here. Isolating git from the user's global and
    # system configuration is one edit, just below: add GIT_CONFIG_GLOBAL=os.devnull and
    # GIT_CONFIG_NOSYSTEM=1 to ``extra``. Not yet: a commit takes the user's global identity.
    if not extra:
        return None
    merged = dict(base)
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
