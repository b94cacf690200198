#!/usr/bin/env python3
"""A hostile fake agent: it changes files and then tries to hide the change from git.

Usage (as the ``command`` agent's template)::

    tamper.py PROMPT_FILE

It runs in the repository (its working directory), performs the steps that the JSON list in
``TAMPER_STEPS`` gives, in order, and exits 0. It imports nothing but the standard library.

Steps (one JSON object each; paths are relative to the repository):
- ``{"write": PATH, "text": TEXT}``: create or overwrite a text file;
- ``{"blob": PATH, "size": N}``: write N bytes of binary data (NUL bytes among them);
- ``{"long_lines": PATH, "lines": N, "width": W}``: write a text of N lines, each W bytes
  long with its newline;
- ``{"flag": "skip-worktree" | "assume-unchanged", "path": PATH}``: set that flag on the
  path's index entry (``git update-index --skip-worktree``): git then no longer compares the
  file with the index, so ``git status`` and ``git diff`` stop showing its changes;
- ``{"forge": PATH, "text": TEXT}``: write TEXT to PATH, then rewrite git's index so that
  the path's entry keeps the blob id it had and takes the new file's cached file data (size,
  times, inode), with no flag set: git trusts that data, and sees nothing. The new index
  replaces the old one as git replaces it (a new file renamed over it); with
  ``"in_place": true`` it is written into the old index file instead;
- ``{"restat": PATH, "text": TEXT}``: write TEXT (as long as the file's text was) and put the
  old modification time back; with ``core.checkStat=minimal`` and ``core.trustctime=false``
  in the repository's configuration git then takes the file for unchanged;
- ``{"sparse": [PATTERN, ...]}``: ``git sparse-checkout set --no-cone`` with those patterns:
  git removes every other tracked file from the work tree and marks it skip-worktree;
- ``{"kill_tick": true}``: SIGKILL the tick that started this agent (its parent process).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_ENTRY_NAME = 62  # where a version 2 or 3 index entry's path starts (after ctime ... flags)
_EXTENDED = 0x4000


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_file():
        print("usage: tamper.py PROMPT_FILE (which must exist)", file=sys.stderr)
        return 2
    for step in json.loads(os.environ.get("TAMPER_STEPS", "[]")):
        _perform(step)
    return 0


def _perform(step: dict[str, Any]) -> None:
    if "write" in step:
        _write(Path(step["write"]), step["text"].encode("utf-8"))
    elif "blob" in step:
        pattern = b"\0\x01binary\xff"
        size = int(step["size"])
        _write(Path(step["blob"]), (pattern * (size // len(pattern) + 1))[:size])
    elif "long_lines" in step:
        line = b"x" * (int(step["width"]) - 1) + b"\n"
        _write(Path(step["long_lines"]), line * int(step["lines"]))
    elif "flag" in step:
        _git("update-index", f"--{step['flag']}", "--", step["path"])
    elif "forge" in step:
        _forge(step["forge"], step["text"].encode("utf-8"), in_place=bool(step.get("in_place")))
    elif "restat" in step:
        path = Path(step["restat"])
        before = path.stat()
        path.write_bytes(step["text"].encode("utf-8"))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif "sparse" in step:
        _git("sparse-checkout", "set", "--no-cone", *step["sparse"])
    elif "kill_tick" in step:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(5)  # the tick is gone; stay long enough not to race its death
    else:
        raise SystemExit(f"tamper.py: unknown step {step}")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
    return done.stdout


def _forge(name: str, data: bytes, *, in_place: bool) -> None:
    """The new content on disk, the old blob id in the index, the new file's data cached."""
    old = bytes.fromhex(_git("rev-parse", f":{name}").strip())
    path = Path(name)
    path.write_bytes(data)
    # An mtime older than the index it goes into: git does not take the entry for racy
    # (and so re-read the file) when it trusts the cached data.
    past = time.time() - 10
    os.utime(path, (past, past))
    _git("update-index", "--", name)
    index = Path(_git("rev-parse", "--git-path", "index").strip())
    data_of_index = bytearray(index.read_bytes())
    _, version, count = struct.unpack(">4sII", data_of_index[:12])
    if version not in (2, 3):
        raise SystemExit(f"tamper.py: cannot forge an index of version {version}")
    position = 12
    for _ in range(count):
        (flags,) = struct.unpack(">H", data_of_index[position + 60 : position + 62])
        start = position + _ENTRY_NAME + (2 if flags & _EXTENDED else 0)
        end = data_of_index.index(b"\0", start)
        if data_of_index[start:end] == os.fsencode(name):
            data_of_index[position + 40 : position + 40 + len(old)] = old
        position += ((end - position) // 8 + 1) * 8
    data_of_index[-20:] = hashlib.sha1(bytes(data_of_index[:-20])).digest()
    if in_place:
        with index.open("r+b") as stream:
            stream.write(data_of_index)
        return
    fresh = index.with_name("index.tamper")
    fresh.write_bytes(bytes(data_of_index))
    fresh.replace(index)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
