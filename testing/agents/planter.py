#!/usr/bin/env python3
"""A hostile fake agent that leaves special files in the work tree.

Usage: ``planter.py PROMPT_FILE SPEC...``, each SPEC one of:

- ``fifo:PATH``: a named pipe (reading it blocks until someone writes);
- ``socket:PATH``: a Unix socket file (bound, then the socket closed: the file stays);
- ``device:PATH``: a character device, the same as ``/dev/null`` (needs root);
- ``link:PATH=TARGET``: a symbolic link to TARGET;
- ``write:PATH=TEXT``: a regular file holding TEXT (``\\n`` for a newline);
- ``move:PATH=SOURCE``: SOURCE (a file or a whole folder, from anywhere) renamed to PATH.

Each replaces whatever PATH held (a tracked file included) and creates the folders it needs.
Paths are relative to the repository, the agent's working folder. A PATH with a ``*``
(``logs/tick_*.log``) means every existing file it matches. Standard library only.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_file():
        print("usage: planter.py PROMPT_FILE SPEC...", file=sys.stderr)
        return 2
    for spec in argv[1:]:
        kind, _, rest = spec.partition(":")
        pattern, _, value = rest.partition("=")
        targets = sorted(Path().glob(pattern)) if "*" in pattern else [Path(pattern)]
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(target):
                target.unlink()
            plant(kind, target, value)
            print(f"planter: {kind} at {target}", flush=True)
    return 0


def plant(kind: str, target: Path, value: str) -> None:
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(target))
    elif kind == "device":
        os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    elif kind == "link":
        target.symlink_to(value)
    elif kind == "move":
        Path(value).rename(target)
    elif kind == "write":
        target.write_text(value.replace("\\n", "\n"), encoding="utf-8")
    else:
        raise SystemExit(f"planter: unknown kind {kind!r}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
