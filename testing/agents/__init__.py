"""Fake coding agents: executable scripts in this folder, and helpers to run them.

The scripts are run as programs (``#!/usr/bin/env python3``), never imported: a tick starts
them through the ``command`` agent exactly as it would start a real agent. ``scripted.py``
documents its script format at its top; ``hostile.py`` (the attacks on the wall around the
agent) documents its own.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

AGENTS_DIR = Path(__file__).resolve().parent
SCRIPTED = AGENTS_DIR / "scripted.py"
HOSTILE = AGENTS_DIR / "hostile.py"
#: A hostile agent that leaves a daemon outside its process group.
ESCAPER = AGENTS_DIR / "escaper.py"
#: A hostile agent that leaves FIFOs, sockets, devices and links in the work tree.
PLANTER = AGENTS_DIR / "planter.py"
TAMPER = AGENTS_DIR / "tamper.py"
#: A fake aider (``--agent aider``): hostile.py's steps, aider's usage report, its test-cmd.
AIDER = AGENTS_DIR / "aider.py"

Action = Mapping[str, Any]
#: A task's entry: a list of actions, or ``{"attempts": [[...], [...]]}``.
Script = Mapping[str, Sequence[Action] | Mapping[str, Sequence[Sequence[Action]]]]


def scripted_command(*, with_task: bool = True) -> str:
    """The ``--agent-cmd`` template that runs ``scripted.py`` on the prompt (and task id)."""
    template = f"{shlex.quote(str(SCRIPTED))} {{prompt_file}}"
    return f"{template} {{task_id}}" if with_task else template


def hostile_command() -> str:
    """The ``--agent-cmd`` template that runs ``hostile.py``; its steps come from
    ``MEMENTO_HOSTILE`` (``hostile_env``)."""
    return f"{shlex.quote(str(HOSTILE))} {{prompt_file}} {{task_id}}"


def hostile_env(
    steps: Sequence[Action],
    *,
    home: Path,
    record: Path,
    attacker: str = "",
    tasks: Mapping[str, Sequence[Action]] | None = None,
) -> dict[str, str]:
    """The variable that tells ``hostile.py`` what to do: ``steps`` (then ``tasks``' steps
    for the task it runs), in the home folder ``home`` (the test's own, never the user's),
    its planted programs recording to ``record``."""
    spec = {
        "home": str(home),
        "record": str(record),
        "attacker": attacker,
        "steps": list(steps),
        "tasks": {task: list(actions) for task, actions in (tasks or {}).items()},
    }
    return {"MEMENTO_HOSTILE": json.dumps(spec)}


def fake_aider_on_path(folder: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """``PATH`` with a folder first whose ``aider`` is the fake (``aider.py``)."""
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "aider"
    if not link.exists():
        link.symlink_to(AIDER)
    return {"PATH": f"{folder}{os.pathsep}{environ.get('PATH', os.defpath)}"}


def tamper_command() -> str:
    """The ``--agent-cmd`` template that runs ``tamper.py`` (its steps: ``tamper_env``)."""
    return f"{shlex.quote(str(TAMPER))} {{prompt_file}}"


def tamper_env(steps: Sequence[Action]) -> dict[str, str]:
    """The variables that tell ``tamper.py`` its steps."""
    return {"TAMPER_STEPS": json.dumps(list(steps))}


def scripted_argv(prompt_file: Path, task_id: str = "*") -> list[str]:
    """The command line of one fake run, for tests that start it without a template."""
    return [str(SCRIPTED), str(prompt_file), task_id]


def write_script(path: Path, script: Script) -> Path:
    """Write a ``scripted.py`` script file (keep it outside the repository under test)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(script, indent=2), encoding="utf-8")
    return path


def scripted_env(
    *,
    script: Path | None = None,
    actions: Sequence[Action] | None = None,
    state: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``environ`` (default: this process's) plus the variables that steer ``scripted.py``."""
    env = dict(os.environ if environ is None else environ)
    for name in ("MEMENTO_FAKE_SCRIPT", "MEMENTO_FAKE_ACTIONS", "MEMENTO_FAKE_STATE"):
        env.pop(name, None)
    if script is not None:
        env["MEMENTO_FAKE_SCRIPT"] = str(script)
    if actions is not None:
        env["MEMENTO_FAKE_ACTIONS"] = json.dumps(list(actions))
    if state is not None:
        env["MEMENTO_FAKE_STATE"] = str(state)
    return env
