"""The command line of a plain ``memento tick``, read without argparse.

``memento tick`` starts every few minutes from cron or a workflow, and importing argparse
(with the gettext and locale modules it imports) and building the parser cost about a fifth
of the interpreter's own start. A command line made only of the options below, each given
its value, is read here into the namespace argparse would make. Anything else (help, a
mistake, an abbreviation, ``--``, a value that starts like an option) goes to argparse, so
that its messages stay the one source of command-line errors. A test holds the two readings
equal (``tests/test_quick_args.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

#: Options before the command, and where argparse puts them.
GLOBAL_OPTIONS = {"-C": "directory", "--plan-dir": "plan_dir"}
#: The tick's options that take a value (``cli.add_tick_options``), and its one flag.
TICK_OPTIONS = {
    "--agent": "agent",
    "--agent-cmd": "agent_cmd",
    "--worker-id": "worker_id",
    "--max-tasks": "max_tasks",
    "--remote": "remote",
}
TICK_FLAGS = {"--push": "push"}


def tick_arguments(
    words: Sequence[str], environ: Mapping[str, str] = os.environ
) -> SimpleNamespace | None:
    """What ``cli.build_parser().parse_args(words)`` gives for a ``tick`` command line of
    the plain options only; None for anything argparse should read (or refuse) itself."""
    values: dict[str, object] = {
        "directory": Path(),
        "plan_dir": environ.get("MEMENTO_PLAN_DIR") or "docs",
        "command": "tick",
        "agent": environ.get("MEMENTO_AGENT") or None,
        "agent_cmd": environ.get("MEMENTO_AGENT_CMD") or None,
        "worker_id": environ.get("MEMENTO_WORKER_ID") or None,
        "max_tasks": None,
        "push": False,
        "remote": "origin",
    }
    rest = list(words)
    if not _read_options(rest, GLOBAL_OPTIONS, {}, values, stop_at="tick"):
        return None
    if not rest or rest.pop(0) != "tick":
        return None
    if not _read_options(rest, TICK_OPTIONS, TICK_FLAGS, values, stop_at=None):
        return None
    if isinstance(values["directory"], str):
        values["directory"] = Path(values["directory"])
    max_tasks = values["max_tasks"]
    if isinstance(max_tasks, str):
        if not _is_int(max_tasks):
            return None  # argparse words the refusal
        values["max_tasks"] = int(max_tasks)
    return SimpleNamespace(**values)


def _read_options(
    words: list[str],
    options: Mapping[str, str],
    flags: Mapping[str, str],
    values: dict[str, object],
    stop_at: str | None,
) -> bool:
    """Take ``words`` off the front while they are known options, into ``values``; False
    when a word is one argparse must see (the command ``stop_at`` ends the options)."""
    while words and words[0] != stop_at:
        word = words.pop(0)
        if word in flags:
            values[flags[word]] = True
            continue
        name, value = _split(word)
        if name not in options:
            return False
        if value is None:
            if not words:
                return False
            value = words.pop(0)
        if value.startswith("-") and not _is_int(value):
            return False  # argparse reads it as an option, and says so
        values[options[name]] = value
    return True


def _split(word: str) -> tuple[str, str | None]:
    """An option word as its name and the value written in it (None: the next word)."""
    if word.startswith("--"):
        name, equals, value = word.partition("=")
        return name, value if equals else None
    if word.startswith("-C") and len(word) > 2 and word[2] != "=":
        return "-C", word[2:]  # -CDIR, as argparse reads a short option (-C=DIR is its own)
    return word, None


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True
