"""Run the ``memento`` command line: in a real process, as a user or a hook would, or in this
process, for the tests where a process of its own adds nothing but its start-up.

``run_memento`` starts ``python -m memento_gh`` and waits for it. ``call_memento`` runs the
same command line through ``memento_gh.cli.main`` in the test's own process, in the same
folder and environment, and gives back the same result (exit code, stdout, stderr). It puts
back what the command changes in the process: the folder, ``os.environ``, the SIGTERM
handler and the garbage collector. What it cannot give is a process of memento's own: a test
about a kill, a signal, a lock held by another process, an exit code from ``os._exit``, a
pid or ``PYTHONPATH`` and ``TMPDIR`` read at start-up needs ``run_memento``.
"""

from __future__ import annotations

import contextlib
import gc
import io
import locale
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

Completed = subprocess.CompletedProcess[str]

#: Read when a process starts (imports, the temporary folder): ``call_memento`` cannot give
#: the command other values than this process has.
START_UP = ("PYTHONPATH", "PYTHONHOME", "TMPDIR")
#: Makes a tick SIGKILL its own process at a named point: in this process, pytest's.
CRASH_AT = "MEMENTO_CRASH_AT"


def memento_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment memento gets: this process's, without colour, plus ``env``."""
    return {**os.environ, "NO_COLOR": "1", **(env or {})}


def run_memento(
    *args: str | Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> Completed:
    """``memento ARGS`` in a process of its own (``python -m memento_gh``); a process that
    runs past ``timeout`` seconds is killed and ``subprocess.TimeoutExpired`` raised (a test of
    something that used to hang fails that way, instead of hanging the test run)."""
    return subprocess.run(
        [sys.executable, "-m", "memento_gh", *map(str, args)],
        cwd=cwd,
        env=memento_env(env),
        input=input,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def call_memento(
    *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> Completed:
    """``memento ARGS`` run by ``memento_gh.cli.main`` in this process, as ``run_memento``
    would run it: in ``cwd``, with the environment the process would get, stdout and stderr
    captured. Everything the command changes in the process is put back afterwards."""
    from memento_gh.cli import main

    environ = memento_env(env)
    _refuse_what_needs_a_process(environ)
    argv = [str(arg) for arg in args]
    with _process_state(cwd, environ), _captured() as output:
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse: --help, --version and usage errors
            code = _exit_code(exit)
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "memento_gh", *argv], code, output.stdout, output.stderr
    )


def _refuse_what_needs_a_process(environ: Mapping[str, str]) -> None:
    changed = [name for name in START_UP if environ.get(name) != os.environ.get(name)]
    if environ.get(CRASH_AT):
        changed.append(CRASH_AT)
    if changed:
        raise ValueError(
            f"{', '.join(changed)} need memento in a process of its own: use run_memento "
            "(Project.memento_process, Project.tick_process)"
        )


@contextlib.contextmanager
def _process_state(cwd: Path | None, environ: Mapping[str, str]) -> Iterator[None]:
    """Run in ``cwd`` with exactly ``environ``; afterwards, the folder, the environment, the
    SIGTERM handler (``memento tick`` sets one) and the garbage collector (``tick`` and
    ``validate`` turn it off for the rest of their process) are as they were."""
    folder = Path.cwd()
    saved = dict(os.environ)
    handler = signal.getsignal(signal.SIGTERM)
    collecting = gc.isenabled()
    try:
        if cwd is not None:
            os.chdir(cwd)
        _replace_environ(environ)
        yield
    finally:
        _replace_environ(saved)
        os.chdir(folder)
        signal.signal(signal.SIGTERM, handler)
        if collecting:
            gc.enable()
        else:
            gc.disable()


def _replace_environ(environ: Mapping[str, str]) -> None:
    """``os.environ`` becomes ``environ``, in place: modules that hold ``os.environ`` itself
    (a default argument, say) see the change, and so does every child process."""
    for name in set(os.environ) - set(environ):
        del os.environ[name]
    for name, value in environ.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


class _Captured:
    """What the command wrote to stdout and to stderr, once it has ended."""

    stdout = ""
    stderr = ""


@contextlib.contextmanager
def _captured() -> Iterator[_Captured]:
    """File descriptors 1 and 2, and ``sys.stdout`` and ``sys.stderr`` over them, go to two
    temporary files: what the command prints, and what a child process it starts writes to
    the descriptors it inherits, is captured as a pipe to a process would capture it."""
    captured = _Captured()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        streams = sys.stdout, sys.stderr
        for stream in streams:
            stream.flush()
        saved = os.dup(1), os.dup(2)
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            with (
                _text_stream(1, sys.__stdout__, line_buffering=False) as sys.stdout,
                _text_stream(2, sys.__stderr__, line_buffering=True) as sys.stderr,
            ):
                yield captured
        finally:
            sys.stdout, sys.stderr = streams
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        captured.stdout, captured.stderr = _decoded(out), _decoded(err)


def _text_stream(fd: int, like: IO[str] | None, *, line_buffering: bool) -> io.TextIOWrapper:
    """A text stream on ``fd`` (left open when the stream closes) with the encoding and error
    handler a process of memento's own would get there: those of this process's own."""
    encoding = getattr(like, "encoding", None) or locale.getpreferredencoding(False)
    errors = getattr(like, "errors", None) or "strict"
    buffer = io.BufferedWriter(io.FileIO(fd, "w", closefd=False))
    return io.TextIOWrapper(buffer, encoding, errors, line_buffering=line_buffering)


def _decoded(file: IO[bytes]) -> str:
    """The bytes written to ``file``, read back as ``subprocess.run(text=True)`` reads a pipe:
    decoded with the locale's encoding, every line ending turned into ``\\n``."""
    file.seek(0)
    text = file.read().decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _exit_code(exit: SystemExit) -> int:
    """The exit status of a process that ended with ``exit``, as the interpreter sets it."""
    if exit.code is None:
        return 0
    if isinstance(exit.code, int):
        return exit.code
    print(exit.code, file=sys.stderr)
    return 1
