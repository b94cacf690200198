"""The options of one tick, declared once.

``memento tick``, ``memento run`` and ``memento schedule install`` take them
(``add_tick_options``), and the crontab line ``schedule install`` writes passes them on to
``memento tick`` (``tick_words``). Adding an option here adds it to all four.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import NamedTuple

from memento_gh.engine.agents.presets import COMMAND, KNOWN_AGENTS


class TickOption(NamedTuple):
    """``flag VALUE``, its value read by ``type``; a ``bool`` option is a bare switch."""

    flag: str
    help: str
    type: type[str] | type[int] | type[bool] = str
    #: The variable whose value, when set and not empty, is the default.
    env: str | None = None
    #: The default without that variable.
    default: str | None = None
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse reads the option into: ``--agent-cmd`` -> ``agent_cmd``."""
        return self.flag.removeprefix("--").replace("-", "_")

    def default_in(self, environ: Mapping[str, str]) -> str | None:
        # An empty variable counts as unset, as an empty NO_COLOR does.
        return (environ.get(self.env) if self.env else None) or self.default


_PRESETS = [name for name in KNOWN_AGENTS if name != COMMAND]
_AGENTS = f"{', '.join(_PRESETS)}, or {COMMAND} (with --agent-cmd)"

TICK_OPTIONS = (
    TickOption(
        "--agent",
        f"{_AGENTS} (default: $MEMENTO_AGENT, else {COMMAND} when --agent-cmd is set)",
        env="MEMENTO_AGENT",
    ),
    TickOption(
        "--agent-cmd",
        "the agent's command line, with {prompt_file}, {task_id}, {repo} and {model} "
        "(default: $MEMENTO_AGENT_CMD)",
        env="MEMENTO_AGENT_CMD",
        metavar="TEMPLATE",
    ),
    TickOption(
        "--model",
        "the model the agent runs on, passed as its --model; a task's `model:` and Meta "
        "retry_model (for a failed task's retries) come first (default: $MEMENTO_MODEL, else "
        "the agent's own default)",
        env="MEMENTO_MODEL",
    ),
    TickOption(
        "--agent-args",
        "more arguments for the agent, after the preset's own, split as a shell would split "
        "them, e.g. --agent-args='--max-turns 30' (default: $MEMENTO_AGENT_ARGS)",
        env="MEMENTO_AGENT_ARGS",
        metavar="ARGS",
    ),
    TickOption(
        "--worker-id",
        "name of this worker in claims and commits (default: $MEMENTO_WORKER_ID, "
        "else hostname-pid)",
        env="MEMENTO_WORKER_ID",
    ),
    TickOption("--max-tasks", "tasks this tick may run (default: Meta)", type=int, metavar="N"),
    TickOption(
        "--push",
        "share the current branch with other workers through its remote: fetch first, "
        "push each claim before the agent starts and each result after it",
        type=bool,
    ),
    TickOption(
        "--remote",
        "the remote --push shares the branch through (default: origin)",
        default="origin",
        metavar="NAME",
    ),
)


#: The options that choose and configure the agent: what ``memento plan`` takes too.
AGENT_FLAGS = ("--agent", "--agent-cmd", "--model", "--agent-args")


def add_tick_options(
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str] = os.environ,
    *,
    only: tuple[str, ...] | None = None,
) -> None:
    for option in TICK_OPTIONS:
        if only is not None and option.flag not in only:
            continue
        if option.type is bool:
            parser.add_argument(option.flag, action="store_true", help=option.help)
        else:
            parser.add_argument(
                option.flag,
                type=option.type,
                default=option.default_in(environ),
                metavar=option.metavar,
                help=option.help,
            )


def tick_words(args: argparse.Namespace) -> list[str]:
    """The tick options of ``args`` as words of a ``memento tick`` command line. A value an
    environment variable gave is written out, since cron will not have that variable; an
    option left at its plain default is left out."""
    words: list[str] = []
    for option in TICK_OPTIONS:
        value = getattr(args, option.dest)
        if value is None or value is False or value == option.default:
            continue
        if value is True:
            words.append(option.flag)
        elif str(value).startswith("-"):
            words.append(f"{option.flag}={value}")  # else read as an option of its own
        else:
            words += [option.flag, str(value)]
    return words
