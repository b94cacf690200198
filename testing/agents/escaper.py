#!/usr/bin/env python3
"""A hostile fake agent: it leaves a daemon behind that memento's process group cannot reach.

Usage: ``escaper.py PROMPT_FILE`` as an agent; ``escaper.py --spawn`` from a verify command.

Both start the same daemon the way a prompt-injected agent would hide one: fork, ``setsid``
(a session and process group of its own), fork again (nobody's child but init's, or the
nearest subreaper's), close the inherited output, and re-execute itself with an environment
from which every ``MEMENTO_*`` variable is gone, so that ``/proc/<pid>/environ`` carries no
tag of the tick. The caller returns once the daemon has written its pid file.

As an agent it first writes ``ESCAPER_WRITE`` (``PATH=TEXT``, optional): the task's work.

The daemon (``escaper.py --daemon``) writes its pid to ``$ESCAPER_DIR/daemon.pid``, waits
(at most a minute) for ``$ESCAPER_DIR/verified`` to appear, which the test's verify command
creates once it has checked the work, then overwrites ``ESCAPER_TARGET`` (a path relative to
the repository, its working folder) with ``ESCAPER_TEXT``, creates ``$ESCAPER_DIR/wrote``
and sleeps for an hour. ``ESCAPER_DIR`` is outside the repository.

Standard library only; nothing to install.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    if argv[:1] == ["--daemon"]:
        return daemon()
    if argv[:1] != ["--spawn"]:
        if not argv or not Path(argv[0]).is_file():
            print("usage: escaper.py PROMPT_FILE | --spawn | --daemon", file=sys.stderr)
            return 2
        write_the_work()
    spawn_daemon(Path(os.environ["ESCAPER_DIR"]) / "daemon.pid")
    print("escaper: daemon started", flush=True)
    return 0


def write_the_work() -> None:
    chosen = os.environ.get("ESCAPER_WRITE")
    if chosen:
        path, text = chosen.split("=", 1)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text.replace("\\n", "\n"), encoding="utf-8")


def spawn_daemon(pidfile: Path) -> None:
    """Double-fork a ``setsid`` daemon without memento's variables; wait for its pid file."""
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        deadline = time.monotonic() + 30
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for descriptor in (0, 1, 2):
        os.dup2(null, descriptor)
    untagged = {name: value for name, value in os.environ.items() if "MEMENTO" not in name}
    untagged["ESCAPER_DIR"] = os.environ["ESCAPER_DIR"]
    for name in ("ESCAPER_TARGET", "ESCAPER_TEXT"):
        untagged[name] = os.environ.get(name, "")
    os.execve(sys.executable, [sys.executable, __file__, "--daemon"], untagged)


def daemon() -> int:
    folder = Path(os.environ["ESCAPER_DIR"])
    partial = folder / "daemon.pid.partial"
    partial.write_text(str(os.getpid()), encoding="utf-8")
    partial.rename(folder / "daemon.pid")
    deadline = time.monotonic() + 60
    while not (folder / "verified").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    target = os.environ.get("ESCAPER_TARGET")
    if target:
        Path(target).write_text(os.environ.get("ESCAPER_TEXT", ""), encoding="utf-8")
        (folder / "wrote").touch()
    time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
