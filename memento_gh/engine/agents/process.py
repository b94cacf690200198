"""Run one command in its own process group and make sure nothing of it survives.

The command gets a new session (so a new process group whose id is its pid), its stdin from a
file or /dev/null (never a terminal it could wait on), and one pipe for stdout and stderr. The
output is streamed to a log file as it arrives and its tail is kept in memory. When the command
exits, times out, or the caller is interrupted, whatever is left of its group (background jobs,
double-forked daemons that stayed in the group) gets SIGTERM, a grace period, then SIGKILL.

A process that leaves the group on purpose (``setsid`` and a double fork, its environment
rewritten) is out of reach of a group kill. On Linux, memento is a *child subreaper* while
the command runs (``prctl(PR_SET_CHILD_SUBREAPER)``): such a process, once its parent is
gone, becomes memento's child instead of init's. When the command ends, every process memento
adopted that way since the command started is killed with all its descendants, and reaped.
Elsewhere only the group is stopped.
"""

from __future__ import annotations

import os
import select
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import IO, NamedTuple

from memento_gh import files
from memento_gh.engine.records import ProcessResult
from memento_gh.errors import UserError

DEFAULT_GRACE = 5.0
DEFAULT_KEEP = 1 << 20
KEEP_HEAD = 64 << 10
_POLL = 0.02
_PROC = Path("/proc")
_PR_SET_CHILD_SUBREAPER = 36
#: How long to wait for adopted processes, SIGKILLed, to die, and how many times to look again
#: for their own children (adopted in turn when their parent dies).
_ADOPTED_WAIT = 2.0
_ADOPTED_ROUNDS = 50


def run_in_group(
    command: str | Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float | None,
    log: Path | IO[bytes] | None = None,
    stdin: Path | None = None,
    shell: bool = False,
    grace: float = DEFAULT_GRACE,
    keep: int = DEFAULT_KEEP,
) -> ProcessResult:
    """Run ``command`` (an argv, or a shell line when ``shell``) to the end or to ``timeout``.

    ``log`` receives every byte of output: a file open for appending, or a path to append
    to (its folders are created; only a regular file, never through a link).
    Raises UserError when the program cannot be started at all (missing, not executable).
    """
    argv = _argv(command, shell)
    with ExitStack() as stack:
        log_file = _open_log(log, stack)
        stdin_file: IO[bytes] | int = (
            stack.enter_context(stdin.open("rb")) if stdin is not None else subprocess.DEVNULL
        )
        adopting = stack.enter_context(_adopting_orphans())
        mine = _children_before() if adopting else set()
        started = time.monotonic()
        child = _start(argv, cwd, env, stdin_file)
        born = _start_time(child.pid) if adopting else None
        assert child.stdout is not None
        stack.callback(child.stdout.close)
        collector = _Collector(child.stdout.fileno(), log_file, keep)
        collector.start()
        exited = False
        try:
            exited = _wait_for_exit(child, started, timeout)
            duration = time.monotonic() - started
        finally:
            # Runs on success, timeout and KeyboardInterrupt alike: nothing the command
            # started may outlive it, in its group or out of it.
            _end_all(child, grace, None if born is None else _Adoption(born, mine))
            collector.finish(drain=min(grace, 1.0) + 0.5)
        return ProcessResult(
            exit_code=child.returncode if exited else None,
            timed_out=not exited,
            duration=duration,
            output=collector.text(),
        )


def _argv(command: str | Sequence[str], shell: bool) -> list[str]:
    if shell:
        if not isinstance(command, str):
            raise TypeError("a shell command is one string")
        return ["/bin/sh", "-c", command]
    if isinstance(command, str):
        raise TypeError("pass an argv list, or shell=True for a shell line")
    if not command:
        raise ValueError("empty command")
    return [str(item) for item in command]


def _start(
    argv: list[str], cwd: Path, env: Mapping[str, str] | None, stdin: IO[bytes] | int
) -> subprocess.Popen[bytes]:
    """The command started in a new session, so in a process group of its own whose id is
    its pid; UserError when it cannot start (missing, not executable, no such folder)."""
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as error:
        if error.filename is not None and str(error.filename) == str(cwd):
            raise UserError(f"cannot run {argv[0]!r} in {cwd}: {error.strerror}") from error
        raise UserError(
            f"cannot start {argv[0]!r}: {error.strerror}; is it installed and on PATH?"
        ) from error


def _open_log(log: Path | IO[bytes] | None, stack: ExitStack) -> IO[bytes] | None:
    if log is None or not isinstance(log, Path):
        return log
    return stack.enter_context(files.open_append(log))


def _wait_for_exit(child: subprocess.Popen[bytes], started: float, timeout: float | None) -> bool:
    """True when the child exited, False when ``timeout`` passed first.

    The child is left unreaped (a zombie) so that its pid, which is also the group id,
    cannot be reused before the group is cleaned up.
    """
    deadline = None if timeout is None else started + timeout
    exited = _wait_on_pidfd(child, deadline)
    if exited is not None:
        return exited
    delay = _POLL
    while not _has_exited(child):
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return False
        pause = delay if deadline is None else min(delay, deadline - now)
        time.sleep(pause)
        delay = min(delay * 1.5, 0.1)
    return True


def _wait_on_pidfd(child: subprocess.Popen[bytes], deadline: float | None) -> bool | None:
    """Linux: sleep until the child exits or the deadline passes (a pidfd turns readable
    when its process ends, reaped or not), instead of polling; None where unsupported."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        descriptor = pidfd_open(child.pid)
    except OSError:
        return None
    try:
        while not _has_exited(child):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            select.select([descriptor], [], [], remaining)
        return True
    finally:
        os.close(descriptor)


def _has_exited(child: subprocess.Popen[bytes]) -> bool:
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # macOS before Python 3.13: reap, accept the tiny pid-reuse window
        return child.poll() is not None
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    try:
        return waitid(os.P_PID, child.pid, flags) is not None
    except ChildProcessError:  # already reaped
        return True


class _Adoption(NamedTuple):
    """What tells the processes a command left from this process's other children."""

    born: int  # the command's start time, in clock ticks after boot
    before: set[int]  # this process's children before the command started


def _end_all(child: subprocess.Popen[bytes], grace: float, adoption: _Adoption | None) -> None:
    """Stop what is left of the child's group, reap the child, then kill what it started
    outside the group (None: nothing was adopted). One look at /proc serves both when
    nothing is left, as is usual."""
    seen = _processes()
    if seen is None or any(_alive_in(proc, child.pid) for proc in seen):
        _stop_group(child.pid, grace)
        seen = None  # the group's members died: their own children were adopted since
    if child.poll() is None:  # it left its own group; it is still our child
        child.kill()
    child.wait()
    if adoption is not None:
        _end_adopted(adoption, child.pid, seen)


def _alive_in(proc: _Proc, pgid: int) -> bool:
    return proc.group == pgid and proc.state not in (b"Z", b"X")


def _stop_group(pgid: int, grace: float) -> None:
    """SIGTERM every live member of the group, wait up to ``grace``, then SIGKILL the rest."""
    if not _group_alive(pgid):
        return
    try:
        _signal_group(pgid, signal.SIGTERM)
        _signal_group(pgid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        deadline = time.monotonic() + grace
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(_POLL)
    finally:
        # Also reached when a second Ctrl-C interrupts the grace period.
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
            # SIGKILL is delivered asynchronously: wait (briefly) until the kernel has
            # really ended them, so that "the group is gone" holds when we return.
            deadline = time.monotonic() + 2.0
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(_POLL)


def _signal_group(pgid: int, signum: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    """Whether a process other than a zombie is still in the group."""
    if not _PROC.joinpath("self", "stat").exists():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return any(_in_group(pid, pgid) for pid in _pids())


def _pids() -> list[str]:
    with os.scandir(_PROC) as entries:
        return [entry.name for entry in entries if entry.name.isdigit()]


def _read_proc(pid: str, name: str) -> bytes | None:
    """``/proc/<pid>/<name>``, or None once the process is gone (or not ours to read).
    Plain ``os`` calls: this runs for every process on the machine after each command."""
    try:
        descriptor = os.open(f"/proc/{pid}/{name}", os.O_RDONLY)
    except OSError:
        return None
    try:
        if name == "stat":  # one line of a few hundred bytes: one read returns all of it
            return os.read(descriptor, 4096) or None
        chunks = []
        while chunk := os.read(descriptor, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _state_and_group(raw: bytes) -> tuple[bytes, int]:
    """The state letter and the process group of a ``/proc/<pid>/stat`` line."""
    # Fields after the command name (which may contain spaces and parentheses):
    # state ppid pgrp ...
    fields = raw[raw.rindex(b")") + 2 :].split(maxsplit=3)
    return fields[0], int(fields[2])


def _in_group(pid: str, pgid: int) -> bool:
    raw = _read_proc(pid, "stat")
    if raw is None:  # it exited while we looked
        return False
    state, group = _state_and_group(raw)
    return group == pgid and state not in (b"Z", b"X")


class _Proc(NamedTuple):
    pid: int
    state: bytes  # R, S, Z (a zombie waiting to be reaped)...
    parent: int
    group: int
    started: int  # clock ticks after boot


def _processes() -> list[_Proc] | None:
    """Every process /proc shows; None without /proc (not Linux)."""
    if not _PROC.joinpath("self", "stat").exists():
        return None
    found = []
    for pid in _pids():
        raw = _read_proc(pid, "stat")
        if raw is not None:  # not gone while we looked
            found.append(_parse_stat(int(pid), raw))
    return found


def _parse_stat(pid: int, raw: bytes) -> _Proc:
    # After the command name (which may hold spaces and parentheses): state ppid pgrp
    # session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    # priority nice num_threads itrealvalue starttime ...
    fields = raw[raw.rindex(b")") + 2 :].split(maxsplit=20)
    return _Proc(pid, fields[0], int(fields[1]), int(fields[2]), int(fields[19]))


def _children_before() -> set[int]:
    """This process's children as a command starts: usually none, which one ``waitid``
    tells (it waits for nothing and reaps nothing) without reading /proc."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # no child at all
        return set()
    return _children()


def _children() -> set[int]:
    """The pids of this process's children (of all its threads)."""
    try:
        with os.scandir("/proc/self/task") as threads:
            listed = [_read_proc(f"self/task/{thread.name}", "children") for thread in threads]
    except OSError:
        listed = [None]
    if None in listed:  # a kernel without the children files: look at every process
        return {proc.pid for proc in _processes() or [] if proc.parent == os.getpid()}
    return {int(pid) for found in listed if found for pid in found.split()}


def _start_time(pid: int) -> int | None:
    raw = _read_proc(str(pid), "stat")
    return None if raw is None else _parse_stat(pid, raw).started


@contextmanager
def _adopting_orphans() -> Iterator[bool]:
    """Linux: while the block runs, this process adopts its orphaned descendants (those
    whose parent died), so that none can hide as init's child; True when it does. Only
    then: a process that outlives memento's steps (git's own background maintenance, after
    a commit) still goes to init, and the caller's other orphans are never this step's."""
    prctl = _prctl()
    adopting = prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0
    try:
        yield adopting
    finally:
        if adopting and prctl is not None:
            prctl(_PR_SET_CHILD_SUBREAPER, 0)


@cache
def _prctl() -> Callable[[int, int], int] | None:
    """``prctl(2)`` for an option and one value; None where there is none."""
    if not _PROC.joinpath("self", "stat").exists():
        return None
    try:
        # The C function through _ctypes: ``import ctypes`` itself cost 8M instructions of
        # a 1,000-task tick's 356M (valgrind), about 1.5 ms, for this one function.
        import _ctypes

        function = _ctypes.dlsym(_ctypes.dlopen(None), "prctl")  # type: ignore[arg-type]
    except (ImportError, AttributeError, OSError):
        return None

    def prctl(option: int, value: int) -> int:
        return int(_ctypes.call_function(function, (option, value, 0, 0, 0)))

    return prctl


def _end_adopted(adoption: _Adoption, child: int, seen: list[_Proc] | None) -> None:
    """SIGKILL every process this one adopted while the command ran (a child that is not
    the command, was not a child before and started after it: so the command's
    descendant, not a sibling's), with all its descendants, and reap them; look again for
    the children these leave, adopted in turn, until none is left."""
    me = os.getpid()
    deadline = time.monotonic() + _ADOPTED_WAIT
    for _ in range(_ADOPTED_ROUNDS):
        procs = seen if seen is not None else _processes() or []
        seen = None
        adopted = [
            p.pid
            for p in procs
            if p.parent == me
            and p.pid != child
            and p.pid not in adoption.before
            and p.started >= adoption.born
        ]
        if not adopted:
            return
        for pid in _descendants(procs, adopted):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for pid in adopted:
            _reap(pid, deadline)
        if time.monotonic() >= deadline:
            return


def _descendants(procs: list[_Proc], roots: list[int]) -> list[int]:
    """``roots`` and every process below them, parents first."""
    children: dict[int, list[int]] = {}
    for proc in procs:
        children.setdefault(proc.parent, []).append(proc.pid)
    found = list(roots)
    for pid in found:  # grows while it is walked
        found += children.get(pid, [])
    return found


def _reap(pid: int, deadline: float) -> None:
    """Wait for our child ``pid`` to end (it was sent SIGKILL), until ``deadline``."""
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not ours, or reaped already
            return
        if done or time.monotonic() >= deadline:
            return
        time.sleep(0.005)


def stop_tagged(name: str, value: str, grace: float = DEFAULT_GRACE) -> list[int]:
    """Stop the process groups of every process whose environment holds ``name=value``, the
    way a finished command's group is stopped; return the ids of the groups stopped.

    A tick that is SIGKILLed cannot stop its agent or verify command: they outlive it and
    could go on writing into the next tick's change. Each tick tags the commands it starts
    with a value of its own (in their environment, which their children inherit) and records
    it, so the next tick can find and stop what is left. The tag, not a recorded group id,
    decides: once a group has died its id can be reused by an unrelated one.

    Needs Linux's /proc; elsewhere nothing can be found and nothing is stopped.
    """
    if not _PROC.joinpath("self", "environ").exists():
        return []
    needle = os.fsencode(f"{name}={value}")
    stopped: list[int] = []
    # A tagged process may start another between the scan and the kill; a second scan
    # finds it (a group kill reaches every member there is at that instant).
    for _ in range(3):
        groups = sorted(_tagged_groups(needle) - {os.getpgrp()})
        if not groups:
            break
        for pgid in groups:
            _stop_group(pgid, grace)
        stopped += [pgid for pgid in groups if pgid not in stopped]
    return stopped


def _tagged_groups(needle: bytes) -> set[int]:
    """The process groups of live processes whose environment holds ``needle``."""
    groups: set[int] = set()
    for pid in _pids():
        environ = _read_proc(pid, "environ")
        if environ is None or needle not in environ.split(b"\0"):
            continue  # gone, another user's, or not tagged
        raw = _read_proc(pid, "stat")
        if raw is None:
            continue
        state, group = _state_and_group(raw)
        if state not in (b"Z", b"X"):
            groups.add(group)
    return groups


class _Collector:
    """Reads the child's output on a thread: all of it to the log, its start and end to
    memory."""

    def __init__(self, fd: int, log_file: IO[bytes] | None, keep: int) -> None:
        self._fd = fd
        self._log = log_file
        self._keep = keep
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="output-collector", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self, drain: float) -> None:
        """Wait for end of output; give up after ``drain`` seconds (a process that escaped
        the group may hold the pipe open forever)."""
        self._thread.join(drain)
        self._stop.set()
        self._thread.join()

    def text(self) -> str:
        """All output when it fits; otherwise its start and its end around a marker."""
        head = bytes(self._head)
        tail = bytes(self._tail[-self._keep :]) if self._keep else b""
        tail_start = self._total - len(tail)
        if tail_start <= len(head):
            whole = head + tail[len(head) - tail_start :]
            return whole.decode("utf-8", errors="replace")
        omitted = tail_start - len(head)
        return (
            head.decode("utf-8", errors="replace")
            + f"\n[... {omitted} bytes omitted; the log has all of them ...]\n"
            + tail.decode("utf-8", errors="replace")
        )

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._fd, selectors.EVENT_READ)
            while not self._stop.is_set():
                if not selector.select(timeout=0.1):
                    continue
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    return
                self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        if self._log is not None:
            try:
                self._log.write(chunk)
                self._log.flush()
            except OSError:  # a full disk must not stop the collection (or block the child)
                self._log = None
        if len(self._head) < KEEP_HEAD:
            self._head += chunk[: KEEP_HEAD - len(self._head)]
        self._total += len(chunk)
        self._tail += chunk
        if len(self._tail) > 2 * self._keep:
            del self._tail[: len(self._tail) - self._keep]
