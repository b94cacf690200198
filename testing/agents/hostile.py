#!/usr/bin/env python3
"""A hostile coding agent: it does its task's work and, on the side, tries to get around the
wall memento builds around it through git (README, "Security model"), for the tests of it.

Usage (the ``command`` agent's template; see ``testing.agents.hostile_command``)::

    hostile.py PROMPT_FILE [TASK_ID]

and, as the program it plants for git to run (a filter, a textconv, a hook, fsmonitor)::

    hostile.py --record DIR [--inject] [--textconv] [WHAT ...]

What it does comes from ``MEMENTO_HOSTILE``, a JSON object::

    {"home": "/tmp/.../home",            must equal $HOME before any "~/" path is written
     "record": "/tmp/.../records",       where a planted program writes what it saw
     "attacker": "http://127.0.0.1:PORT/steal",
     "steps": [...],
     "tasks": {"T-101": [...]}}         steps only for that task, after "steps"

Steps run in order; in every string, ``{record}`` becomes the command line of the recorder,
``{attacker}`` the attacker's URL, ``{origin}`` the URL of the remote ``origin`` and ``~/``
(at the start of a path) the home folder:

- ``{"write": PATH, "text": TEXT}``: write a file (folders made), e.g. the task's work or
  ``.git/info/attributes``;
- ``{"config": {KEY: VALUE, ...}, "file": PATH}``: ``git config`` each key, in the
  repository's own config, or in ``file`` (``~/.gitconfig``: the user's global one);
- ``{"hook": NAME}``: an executable hook ``NAME`` in git's hooks folder that runs the
  recorder;
- ``{"delete": PATH}`` (a folder with all in it too), ``{"chmod": PATH, "mode": "755"}``,
  ``{"rename": PATH, "to": PATH}``, ``{"symlink": PATH, "to": TARGET}``, ``{"fifo": PATH}``,
  ``{"hardlink": PATH, "to": TARGET}`` (``PATH`` a second name of the file ``TARGET``; what
  was at ``PATH`` is removed first);
- ``{"git": [ARG, ...]}``: run git (with an identity of its own);
- ``{"forge": REF, "path": PATH, "text": TEXT}``: a commit made with ``commit-tree`` on top of
  ``REF`` (HEAD's tree plus the file), put on ``REF`` with ``update-ref``: never ``git
  commit``, so no hook or HEAD move shows it;
- ``{"dump_env": PATH}``: this process's environment, as JSON;
- ``{"print": TEXT}``: a line on stdout (a cost report, a provider's limit, a file name);
- ``{"exit": CODE}``: stop here, exiting with ``CODE``.

The recorder writes ``DIR/record-<pid>-<n>.json`` (its argv, environment and folder) and
then behaves as the program git expects: it copies stdin to stdout (a filter), adding a line
with ``--inject`` (a clean filter that changes what is committed), or prints the file named
last with ``--textconv``. It imports only the standard library.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

IDENTITY = ["-c", "user.name=Hostile Agent", "-c", "user.email=hostile@localhost"]
INJECTED = b"# injected by a filter memento ran\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--record"]:
        return record(argv[1:])
    if not argv or not Path(argv[0]).is_file():
        print("usage: hostile.py PROMPT_FILE [TASK_ID]", file=sys.stderr)
        return 2
    spec = json.loads(os.environ.get("MEMENTO_HOSTILE") or "{}")
    task_steps = spec.get("tasks", {}).get(argv[1], []) if len(argv) > 1 else []
    for step in [*spec.get("steps", []), *task_steps]:
        perform(step, spec)
    return 0


def perform(step: dict[str, Any], spec: dict[str, Any]) -> None:
    def fill(text: str) -> str:
        return _fill(text, spec)

    if "write" in step:
        target = _path(fill(step["write"]), spec)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(fill(step.get("text", "")), encoding="utf-8")
    elif "config" in step:
        where = ["--file", str(_path(fill(step["file"]), spec))] if "file" in step else []
        for key, value in step["config"].items():
            _git("config", *where, fill(key), fill(value))
    elif "hook" in step:
        hook = Path(_git("rev-parse", "--git-path", f"hooks/{step['hook']}").strip())
        hook.write_text(f"#!/bin/sh\nexec {_recorder(spec)} hook {step['hook']}\n")
        hook.chmod(0o755)
    elif "delete" in step:
        target = _path(fill(step["delete"]), spec)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    elif "symlink" in step:
        _path(fill(step["symlink"]), spec).symlink_to(fill(step["to"]))
    elif "hardlink" in step:
        link = _path(fill(step["hardlink"]), spec)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        os.link(_path(fill(step["to"]), spec), link)
    elif "fifo" in step:
        os.mkfifo(_path(fill(step["fifo"]), spec))
    elif "rename" in step:
        _path(fill(step["rename"]), spec).rename(_path(fill(step["to"]), spec))
    elif "chmod" in step:
        _path(fill(step["chmod"]), spec).chmod(int(step["mode"], 8))
    elif "git" in step:
        _git(*(fill(arg) for arg in step["git"]))
    elif "forge" in step:
        _forge(step["forge"], step["path"], step["text"])
    elif "exit" in step:
        sys.stdout.flush()
        raise SystemExit(int(step["exit"]))
    elif "print" in step:
        print(fill(step["print"]), flush=True)
    elif "dump_env" in step:
        _path(fill(step["dump_env"]), spec).write_text(json.dumps(dict(os.environ)))
    else:
        raise SystemExit(f"hostile agent: unknown step {step}")


def _fill(text: str, spec: dict[str, Any]) -> str:
    text = text.replace("{record}", _recorder(spec))
    text = text.replace("{attacker}", spec.get("attacker", ""))
    if "{origin}" in text:
        text = text.replace("{origin}", _git("remote", "get-url", "origin").strip())
    return text


def _recorder(spec: dict[str, Any]) -> str:
    parts = [sys.executable, str(Path(__file__).resolve()), "--record", spec.get("record", "")]
    return " ".join(shlex.quote(part) for part in parts)


def _path(name: str, spec: dict[str, Any]) -> Path:
    """``name``, with a leading ``~/`` in the home folder the test made for this run: never
    the home folder of whoever runs the tests."""
    if not name.startswith("~/"):
        return Path(name)
    home = os.environ.get("HOME", "")
    if not spec.get("home") or home != spec["home"]:
        raise SystemExit(f"hostile agent: HOME is {home!r}, not the test's; not writing {name}")
    return Path(home) / name[2:]


def _git(*args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"hostile agent: git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def _forge(ref: str, path: str, text: str) -> None:
    """A commit on ``ref`` holding ``path``, made from objects alone (an index of its own)."""
    index = Path(_git("rev-parse", "--git-path", "hostile-index").strip()).resolve()
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}

    def git(*args: str, stdin: str | None = None) -> str:
        command = ["git", *IDENTITY, *args]
        done = subprocess.run(
            command, input=stdin, capture_output=True, text=True, env=env, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"hostile agent: git {' '.join(args)} failed: {done.stderr}")
        return done.stdout.strip()

    parent = git("rev-parse", f"{ref}^{{commit}}")
    git("read-tree", parent)
    blob = git("hash-object", "-w", "--stdin", stdin=text)
    git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    tree = git("write-tree")
    commit = git("commit-tree", tree, "-p", parent, "-m", "forged", stdin="")
    git("update-ref", ref, commit)
    index.unlink()


def record(argv: list[str]) -> int:
    """Run by git as a filter, textconv, hook or fsmonitor: keep what this process saw."""
    folder = Path(argv[0])
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"argv": argv[1:], "env": dict(os.environ), "cwd": str(Path.cwd())}
    name = folder / f"record-{os.getpid()}-{time.monotonic_ns()}.json"
    name.write_text(json.dumps(entry), encoding="utf-8")
    if "--textconv" in argv:
        sys.stdout.buffer.write(Path(argv[-1]).read_bytes())
    elif "hook" not in argv:
        data = sys.stdin.buffer.read()
        sys.stdout.buffer.write(data + (INJECTED if "--inject" in argv else b""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
