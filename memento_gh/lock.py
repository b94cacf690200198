"""The repository lock: one tick or control at a time on a working copy.

``flock`` on ``.memento.lock``, held by an open file descriptor, so the kernel releases it
when the process ends however it ends (SIGKILL included): a dead tick never leaves a lock
behind. (The ``filelock`` package does the same with more machinery; importing it alone
cost about as much as starting Python.)
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memento_gh import files

_POLL = 0.05


class Busy(Exception):
    """Another process holds the lock."""


@contextmanager
def repo_lock(path: Path, wait: float = 0.0) -> Iterator[None]:
    """Hold the lock for the ``with`` block; ``Busy`` if it stays taken for ``wait`` seconds;
    ``UserError`` when anything but a regular file is in its place."""
    # Only a regular file, never through a link: the agent may leave a folder, a FIFO or
    # a link to any file in the lock's place (a clear error then, not a crash).
    fix = f"memento keeps its lock in a file of its own: remove it (`rm -r {path}`)"
    descriptor = files.open_regular(path, os.O_RDWR | os.O_CREAT, fix=fix)
    assert descriptor is not None  # O_CREAT
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(str(path)) from None
                time.sleep(_POLL)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock
