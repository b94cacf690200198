"""The repository lock: exclusive between processes, released by the kernel on death."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memento_gh.lock import Busy, repo_lock

HOLDER = """
import sys, time
from pathlib import Path
from memento_gh.lock import repo_lock
with repo_lock(Path(sys.argv[1])):
    Path(sys.argv[2]).write_text("held")
    time.sleep(60)
"""


def hold_in_another_process(lock: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    ready = tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(ready)])
    deadline = time.monotonic() + 20
    while not ready.exists():
        assert time.monotonic() < deadline, "the holder never took the lock"
        time.sleep(0.05)
    return holder


def test_a_lock_held_by_another_process_is_busy(tmp_path: Path) -> None:
    lock = tmp_path / ".memento.lock"
    holder = hold_in_another_process(lock, tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(Busy), repo_lock(lock, wait=0.3):
            pass
        assert time.monotonic() - started >= 0.3
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_of_a_killed_process_is_free_at_once(tmp_path: Path) -> None:
    lock = tmp_path / ".memento.lock"
    holder = hold_in_another_process(lock, tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()

    with repo_lock(lock):
        assert lock.exists()


def test_the_lock_is_free_again_after_the_block(tmp_path: Path) -> None:
    lock = tmp_path / ".memento.lock"
    with repo_lock(lock):
        pass
    with repo_lock(lock):
        pass
