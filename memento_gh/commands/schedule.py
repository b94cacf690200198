"""``memento schedule install|remove|show``: the user's crontab line that ticks this repository.

The line's text is ``cron.line``'s, and ``cron.table`` reads and writes the crontab.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from memento_gh.commands.tick_options import tick_words
from memento_gh.cron import line as crontab
from memento_gh.cron.table import (
    Crontab,
    UserCrontab,
    cron_daemon_running,
    crontab_for,
    repo_marker,
)
from memento_gh.engine.agents.check import AgentConfigError
from memento_gh.errors import UserError
from memento_gh.layout import Layout, display


def run(args: argparse.Namespace, layout: Layout) -> int:
    table = crontab_for(args.crontab)
    if args.action == "install":
        return install(args, layout, table)
    if args.action in ("uninstall", "remove"):  # remove: the name it had first
        return remove(layout, table)
    return show(layout, table)


def install(args: argparse.Namespace, layout: Layout, table: Crontab) -> int:
    line = line_for(args, layout)
    mark = repo_marker(layout)
    text = table.read()
    done = "updated" if crontab.find_line(text, mark) is not None else "installed"
    table.write(crontab.install_line(text, line, mark))
    print(f"memento schedule: {done} in {table.name}:\n{line}")
    # Only the user's own crontab is known to be read by this machine's cron.
    idle = isinstance(table, UserCrontab) and cron_daemon_running() is False
    print(NO_DAEMON if idle else _next_line(crontab.schedule_of(line)))
    print(
        f"Ticks log to {display(layout.logs / 'cron.log')}. cron starts them with a minimal "
        "environment: make the agent's API key available to it (a KEY=value line in the "
        "crontab, or a file the agent reads itself)."
    )
    return 0


NO_DAEMON = (
    "next tick: none while no cron daemon runs on this machine (no cron or crond process "
    "is running): start it (e.g. `sudo service cron start`), or keep `memento run --every "
    "5m` running in the foreground instead"
)


def line_for(args: argparse.Namespace, layout: Layout) -> str:
    """The crontab line ``install`` asks for, its interval and tick options checked."""
    from memento_gh.commands.tick import tick_config

    # A mistake in the tick options shows now, not in cron's mail; and the agent's program
    # is looked for on this PATH, the one the line carries.
    try:
        tick_config(args, layout)
    except AgentConfigError as error:
        raise AgentConfigError(f"{error} (the crontab line runs with this shell's PATH)") from None
    argv = [*memento_argv(), "--plan-dir", args.plan_dir, "tick", *tick_words(args)]
    try:
        expression = crontab.cron_expression(args.every)
        return crontab.render_line(
            expression, str(layout.root.resolve()), os.environ.get("PATH", ""), argv
        )
    except ValueError as error:
        raise UserError(str(error)) from None


def remove(layout: Layout, table: Crontab) -> int:
    text = table.read()
    mark = repo_marker(layout)
    if crontab.find_line(text, mark) is None:
        print(f"memento schedule: no memento line for {layout.root.resolve()} in {table.name}")
        return 0
    table.write(crontab.remove_line(text, mark))
    print(f"memento schedule: removed the line for {layout.root.resolve()} from {table.name}")
    return 0


def show(layout: Layout, table: Crontab) -> int:
    line = crontab.find_line(table.read(), repo_marker(layout))
    if line is None:
        print(f"memento schedule: no memento line for {layout.root.resolve()} in {table.name}")
        return 0
    print(line)
    print(_next_line(crontab.schedule_of(line)))
    return 0


def _next_line(expression: str) -> str:
    from memento_gh.cron import fields as cron

    try:
        parsed = cron.parse_cron(expression)
    except ValueError as error:
        return f"next tick: unknown ({error})"
    now = datetime.now(timezone.utc)
    local = now.astimezone()
    moment = cron.next_fire_in(parsed, now, local.tzinfo or timezone.utc)
    if moment is None:
        return "next tick: never (the schedule names no date that exists)"
    return f"next tick: {moment.astimezone(local.tzinfo):%Y-%m-%d %H:%M %Z} (cron's local time)"


def memento_argv() -> list[str]:
    """How cron starts this very memento: the console script beside this Python (a venv's or
    pipx's), else the module, with absolute paths since cron's PATH knows neither."""
    # Not resolve(): a venv's python is a symlink out of the venv, whose packages it needs.
    python = Path(sys.executable).absolute()
    script = python.with_name("memento")
    return [str(script)] if script.is_file() else [str(python), "-m", "memento_gh"]
