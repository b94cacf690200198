"""``memento run --every 5m``: tick in a foreground loop, for machines without cron.

Fixed rate: a tick starts ``--every`` after the one before it started (at once when that one
took longer). A tick that fails on a human's mistake (an invalid plan, a dirty tree) is
reported and the loop goes on: an unattended loop outlives a broken edit. An agent that
cannot run (a mistyped name, a program not on PATH) ends the run at once with exit 1: every
tick would fail the same way. Every tick's line
goes to stdout and, timestamped, to ``logs/cron.log``, the file cron's ticks append to.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from types import FrameType
from typing import TextIO

from memento_gh import files
from memento_gh.commands.tick import tick_config
from memento_gh.durations import format_duration
from memento_gh.engine.agents import AgentConfigError
from memento_gh.engine.tick import TickConfig, run_tick
from memento_gh.errors import UserError
from memento_gh.layout import Layout
from memento_gh.plan import schedule
from memento_gh.plan.scanner import parse
from memento_gh.plan.values import format_time

#: Where the plan rests: no tick can change anything until a human does.
RESTING = {
    schedule.ALL_COMPLETE,
    schedule.PIPELINE_BLOCKED,
    schedule.RETRIES_EXHAUSTED,
    schedule.NO_TASKS,
    schedule.PAUSED,
    schedule.STOPPED,
}


def run(args: argparse.Namespace, layout: Layout) -> int:
    config = tick_config(args, layout)  # a mistake in the options ends the run at once
    # `kill` and a stopping service manager send SIGTERM: end like Ctrl-C, so a running
    # agent's process group is killed and the next tick recovers its task.
    signal.signal(signal.SIGTERM, _interrupt)
    loop = _Loop(args, layout, config)
    try:
        reason = loop.run()
    except KeyboardInterrupt:
        # The loop runs until stopped: being stopped is how it normally ends (exit 0).
        reason = loop.interrupted()
    loop.report(f"run: {reason}")
    return 0


class _Loop:
    def __init__(
        self,
        args: argparse.Namespace,
        layout: Layout,
        config: TickConfig,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.args = args
        self.layout = layout
        self.config = config
        self.clock = clock
        self.sleep = sleep
        self.finished = 0  # ticks that ran to their end, errors included
        self.in_tick = False

    def run(self) -> str:
        every = self.args.every
        self.report(f"run: a tick every {format_duration(every)}; Ctrl-C stops")
        while True:
            started = self.clock()
            resting = self.tick()
            if self.args.max_ticks is not None and self.finished >= self.args.max_ticks:
                return f"stopped after {_ticks(self.finished)} (--max-ticks {self.args.max_ticks})"
            if self.args.until_done and resting is not None:
                return f"stopped after {_ticks(self.finished)}: the plan rests — {resting}"
            self.sleep(max(0.0, started + every - self.clock()))

    def tick(self) -> str | None:
        """Run one tick; with ``--until-done``, why the plan now rests (None: it does not)."""
        self.in_tick = True
        try:
            result = run_tick(self.layout, self.config, say=self.report)
        except AgentConfigError:
            raise  # every tick would fail the same way: the run ends (exit 1)
        except UserError as error:
            result = None
            self.report(f"memento: error: {error}", sys.stderr)
        self.in_tick = False
        self.finished += 1
        if result is None:
            return None
        self.report(result.line)
        return self.resting() if self.args.until_done else None

    def resting(self) -> str | None:
        try:
            plan = parse(files.read_text(self.layout.plan))
        except UserError:
            return None  # the next tick says what is wrong with the file
        decision = schedule.pick(plan)
        return decision.message if decision.reason in RESTING else None

    def interrupted(self) -> str:
        if self.in_tick:
            return (
                f"interrupted during tick {self.finished + 1}, after {_ticks(self.finished)}; "
                "the next tick recovers what it left"
            )
        return f"interrupted after {_ticks(self.finished)}"

    def report(self, line: str, stream: TextIO | None = None) -> None:
        """``line`` on stdout (or ``stream``) and, timestamped, at the end of logs/cron.log."""
        print(line, file=stream or sys.stdout, flush=True)
        moment = format_time(datetime.now(timezone.utc))
        try:
            with files.open_append(self.layout.logs / "cron.log") as log:
                log.write(f"[{moment}] {line}\n".encode())
        except (OSError, UserError) as error:
            print(f"memento: warning: cannot write logs/cron.log ({error})", file=sys.stderr)


def _ticks(count: int) -> str:
    return f"{count} tick" if count == 1 else f"{count} ticks"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
