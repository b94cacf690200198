#!/usr/bin/env python3
"""A fake coding agent that does what a JSON script tells it, for real-process tests.

Usage (the ``command`` agent's template; see ``testing.agents.scripted_command``)::

    scripted.py PROMPT_FILE [TASK_ID]

It runs in the repository (its working directory), reads the prompt file (it must exist),
picks the actions for TASK_ID, performs them in order and exits 0 unless an action says
otherwise. It imports nothing but the standard library and needs no package installed.

Where the actions come from (first found wins):
- ``MEMENTO_FAKE_ACTIONS``: a JSON list of actions, used for every task;
- ``MEMENTO_FAKE_SCRIPT``: the path of a JSON script file::

    {
      "T-101": [{"write": "src/a.py", "text": "A = 1\\n"}],
      "T-102": {"attempts": [
          [{"exit": 3}],
          [{"write": "src/b.py", "text": "B = 2\\n"}]
      ]},
      "*": [{"print": "nothing scripted for this task"}]
    }

  A task maps to a list of actions (the same every run) or to ``{"attempts": [...]}``, a list
  of action lists: run N of that task uses attempt N (the last one once they run out). Runs
  are counted per task in a JSON file, ``MEMENTO_FAKE_STATE`` or else ``<script>.runs.json``
  beside the script (keep it outside the repository). ``"*"`` is for any other task.
  A task with no entry and no ``"*"`` does nothing.

Actions (one JSON object each; paths are relative to the repository unless absolute):
- ``{"write": PATH, "text": TEXT}``: create or overwrite a file (folders are created);
- ``{"append": PATH, "text": TEXT}``: append to a file (e.g. ``docs/MASTER_PLAN.md``);
- ``{"replace": PATH, "old": TEXT, "new": TEXT}``: replace the first occurrence;
- ``{"delete": PATH}``: remove a file;
- ``{"touch": PATH}``: create an empty file or update its time (e.g. a guard file);
- ``{"junk": N, "dir": DIR}``: write N untracked files ``DIR/junk_<i>.tmp`` (DIR: "junk");
- ``{"print": TEXT}`` / ``{"stderr": TEXT}``: write a line to stdout / stderr;
- ``{"claude_result": {...}}``: print a Claude Code ``--output-format json`` result whose
  fields are the defaults below updated with the given ones (``total_cost_usd``, ...);
- ``{"dump_env": PATH}``: write the environment as a JSON object;
- ``{"print_env": true}``: print the environment, ``NAME=value`` a line (a careless agent);
- ``{"save_prompt": PATH}``: copy the prompt file; ``{"save_stdin": PATH}``: save stdin;
- ``{"git": [ARG, ...]}``: run git with these arguments (an identity is supplied), e.g.
  ``{"git": ["commit", "-qam", "sneaky"]}`` to move HEAD;
- ``{"ignore_sigterm": true}``: from now on SIGTERM does nothing (only SIGKILL stops it);
- ``{"write_pid": PATH}``: write this process's pid;
- ``{"spawn_sleeper": PIDFILE}``: double-fork a grandchild that stays in the process group
  and sleeps for an hour (it keeps an ignored SIGTERM); its pid is written to PIDFILE;
- ``{"sleep": SECONDS}``: sleep (use a large number for "forever");
- ``{"wait_for": PATH, "seconds": SECONDS}``: wait until the file exists, at most SECONDS
  (default 60), then go on either way: a test makes the agent outlast something it waits
  for, however busy the machine, instead of sleeping a guess;
- ``{"exit": CODE}``: stop here with that exit code (e.g. 3 for a crash).

A path may name environment variables (``$MEMENTO_PROPOSAL_FILE``): they are expanded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CLAUDE_RESULT: dict[str, Any] = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "duration_ms": 12345,
    "duration_api_ms": 11000,
    "num_turns": 4,
    "result": "Done.",
    "session_id": "00000000-0000-0000-0000-000000000000",
    "total_cost_usd": 0.0421,
    "usage": {
        "input_tokens": 1200,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 15000,
        "output_tokens": 450,
    },
}
GIT_IDENTITY = ["-c", "user.name=Fake Agent", "-c", "user.email=fake@localhost"]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: scripted.py PROMPT_FILE [TASK_ID]", file=sys.stderr)
        return 2
    prompt = Path(argv[0])
    if not prompt.is_file():
        print(f"fake agent: no prompt file at {prompt}", file=sys.stderr)
        return 2
    task_id = argv[1] if len(argv) > 1 else "*"
    actions = _actions_for(task_id)
    print(f"fake agent: task {task_id}, {len(actions)} action(s)", flush=True)
    for action in actions:
        code = _perform(action, prompt)
        if code is not None:
            return code
    return 0


def _actions_for(task_id: str) -> list[dict[str, Any]]:
    inline = os.environ.get("MEMENTO_FAKE_ACTIONS")
    if inline:
        return list(json.loads(inline))
    script_path = os.environ.get("MEMENTO_FAKE_SCRIPT")
    if not script_path:
        return []
    script = json.loads(Path(script_path).read_text(encoding="utf-8"))
    entry = script.get(task_id, script.get("*"))
    if entry is None:
        return []
    if isinstance(entry, list):
        return entry
    attempts = entry["attempts"]
    run = _count_run(Path(script_path), task_id)
    return list(attempts[min(run, len(attempts) - 1)])


def _count_run(script_path: Path, task_id: str) -> int:
    """This run's index (0 for the first run of the task), counted in the state file."""
    state = Path(os.environ.get("MEMENTO_FAKE_STATE") or f"{script_path}.runs.json")
    runs = json.loads(state.read_text(encoding="utf-8")) if state.exists() else {}
    run = int(runs.get(task_id, 0))
    runs[task_id] = run + 1
    state.write_text(json.dumps(runs), encoding="utf-8")
    return run


def _perform(action: dict[str, Any], prompt: Path) -> int | None:
    if "write" in action:
        _path(action["write"]).write_text(action.get("text", ""), encoding="utf-8")
    elif "append" in action:
        with _path(action["append"]).open("a", encoding="utf-8") as file:
            file.write(action.get("text", ""))
    elif "replace" in action:
        target = _path(action["replace"])
        text = target.read_text(encoding="utf-8")
        target.write_text(text.replace(action["old"], action["new"], 1), encoding="utf-8")
    elif "delete" in action:
        Path(action["delete"]).unlink()
    elif "touch" in action:
        _path(action["touch"]).touch()
    elif "junk" in action:
        for index in range(int(action["junk"])):
            junk = _path(f"{action.get('dir', 'junk')}/junk_{index}.tmp")
            junk.write_text(f"junk {index}\n", encoding="utf-8")
    elif "print" in action:
        print(action["print"], flush=True)
    elif "stderr" in action:
        print(action["stderr"], file=sys.stderr, flush=True)
    elif "claude_result" in action:
        print(json.dumps({**CLAUDE_RESULT, **action["claude_result"]}), flush=True)
    elif "dump_env" in action:
        _path(action["dump_env"]).write_text(json.dumps(dict(os.environ)), encoding="utf-8")
    elif "print_env" in action:
        print("".join(f"{name}={value}\n" for name, value in sorted(os.environ.items())))
    elif "save_prompt" in action:
        _path(action["save_prompt"]).write_bytes(prompt.read_bytes())
    elif "save_stdin" in action:
        _path(action["save_stdin"]).write_bytes(sys.stdin.buffer.read())
    elif "git" in action:
        return _git(action["git"])
    elif "ignore_sigterm" in action:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif "write_pid" in action:
        _path(action["write_pid"]).write_text(str(os.getpid()), encoding="utf-8")
    elif "spawn_sleeper" in action:
        _spawn_sleeper(_path(action["spawn_sleeper"]))
    elif "sleep" in action:
        time.sleep(float(action["sleep"]))
    elif "wait_for" in action:
        _wait_for(Path(action["wait_for"]), float(action.get("seconds", 60)))
    elif "exit" in action:
        sys.stdout.flush()
        return int(action["exit"])
    else:
        print(f"fake agent: unknown action {action}", file=sys.stderr)
        return 2
    return None


def _wait_for(path: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _path(name: str) -> Path:
    # "$MEMENTO_PROPOSAL_FILE": the architect's proposal file, named by memento at run time
    path = Path(os.path.expandvars(name))
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _git(args: list[str]) -> int | None:
    done = subprocess.run(["git", *GIT_IDENTITY, *args], check=False)
    return None if done.returncode == 0 else done.returncode


def _spawn_sleeper(pidfile: Path) -> None:
    """Fork twice so the sleeper is nobody's child here, yet still in this process group."""
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        deadline = time.monotonic() + 5
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return
    if os.fork():
        os._exit(0)
    partial = pidfile.with_name(pidfile.name + ".partial")
    partial.write_text(str(os.getpid()), encoding="utf-8")
    partial.rename(pidfile)
    time.sleep(3600)
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
