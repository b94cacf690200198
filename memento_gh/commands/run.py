"""``memento run --every 5m``: tick in a foreground loop, for machines without cron.

Fixed rate: a tick starts ``--every`` after the one before it started (at once when that one
took longer). A tick that fails on a human's mistake (an invalid plan, a dirty tree) is
reported and the loop goes on: an unattended loop outlives a broken edit. An agent that
cannot run (a mistyped name, a program not on PATH) ends the run at once with exit 1: every
tick would fail the same way. With ``--until-done`` the run also stops at a task deferred
for a provider limit (a rate limit, a spent quota): every tick would meet the same limit
until it lifts, so the run ends saying when the agent said to try again, for a person or a
schedule to start it then, rather than spend requests on a refusal. Every tick's line
goes to stdout and, timestamped, to ``logs/cron.log``, the file cron's ticks append to.

A worker of a pool (``--push``) that finds nothing to run, because the other workers hold
every task there is, waits longer each time (doubling from ``--every`` or one second, up
to 30 s or ``--every`` if longer), and wakes as soon as the shared branch moves: it asks the
remote for that one ref every second, which costs far less than a tick.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from types import FrameType
from typing import TextIO

from memento_gh import backoff, files
from memento_gh.commands.tick import tick_config
from memento_gh.durations import format_duration
from memento_gh.engine.agents.check import AgentConfigError
from memento_gh.engine.books.bookkeeping import DEFERRED
from memento_gh.engine.records import TickResult
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.errors import UserError
from memento_gh.gitrun import GitError
from memento_gh.layout import Layout
from memento_gh.plan import picking
from memento_gh.plan.scanner import parse
from memento_gh.plan.values import format_time
from memento_gh.redact import Redactor

#: Where the plan rests: no tick can change anything until a human does.
RESTING = {
    picking.ALL_COMPLETE,
    picking.PIPELINE_BLOCKED,
    picking.RETRIES_EXHAUSTED,
    picking.NO_TASKS,
    picking.PAUSED,
    picking.STOPPED,
}
IDLE_FIRST = 1.0  # seconds: the shortest wait of an idle worker of a pool
IDLE_CAP = 30.0  # seconds: the longest, unless --every is longer
IDLE_POLL = 1.0  # seconds between two looks at the shared branch while waiting


def idle_wait(every: float, idle_ticks: int) -> float:
    """How long a pool's worker waits after its ``idle_ticks``-th idle tick in a row."""
    return backoff.window(idle_ticks, base=max(every, IDLE_FIRST), cap=max(IDLE_CAP, every))


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
        self.idle = 0  # idle ticks in a row, of a worker of a pool
        #: cron.log is written here as well as printed: credentials out of it too.
        self.redactor = Redactor.from_environ(os.environ)

    def run(self) -> str:
        every = self.args.every
        self.report(f"run: a tick every {format_duration(every)}; Ctrl-C stops")
        while True:
            started = self.clock()
            stop = self.tick()
            if self.args.max_ticks is not None and self.finished >= self.args.max_ticks:
                return f"stopped after {_ticks(self.finished)} (--max-ticks {self.args.max_ticks})"
            if self.args.until_done and stop is not None:
                return f"stopped after {_ticks(self.finished)}: {stop}"
            self.pause(started)

    def pause(self, started: float) -> None:
        """Wait for the next tick: ``--every`` after this one started, or, for a pool's
        worker that found nothing to run, a growing wait that the branch moving cuts short."""
        every = float(self.args.every)
        shared = self.config.shared
        watch = getattr(shared, "remote_tip", None)
        if self.idle == 0 or shared is None or watch is None:
            self.sleep(max(0.0, started + every - self.clock()))
            return
        wait = idle_wait(every, self.idle)
        known = shared.tip
        deadline = started + wait
        while (left := deadline - self.clock()) > 0:
            self.sleep(min(IDLE_POLL, left))
            if left <= IDLE_POLL:
                return
            try:
                if watch() != known:
                    return  # the branch moved: a result landed, a task may be free
            except GitError:
                return  # the tick says what is wrong

    def tick(self) -> str | None:
        """Run one tick; with ``--until-done``, why the run stops now: the plan rests, or the
        agent's provider is limited (None: go on)."""
        self.in_tick = True
        shared = self.config.shared
        if shared is not None:
            # A result may bring the next tick's task with it, unless no tick follows.
            last = self.args.max_ticks is not None and self.finished + 1 >= self.args.max_ticks
            shared.carry = not last
        try:
            result = run_tick(self.layout, self.config, say=self.report)
        except AgentConfigError:
            raise  # every tick would fail the same way: the run ends (exit 1)
        except UserError as error:
            result = None
            self.report(f"memento: error: {error}", sys.stderr)
        self.in_tick = False
        self.finished += 1
        self.idle = self.idle + 1 if result is not None and result.status == "idle" else 0
        if result is None:
            return None
        self.report(result.line)
        if not self.args.until_done:
            return None
        return _deferral(result) or self.resting()

    def resting(self) -> str | None:
        try:
            plan = parse(files.read_text(self.layout.plan))
        except UserError:
            return None  # the next tick says what is wrong with the file
        decision = picking.pick(plan)
        return f"the plan rests — {decision.message}" if decision.reason in RESTING else None

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
                log.write(self.redactor.redact(f"[{moment}] {line}\n").encode())
        except (OSError, UserError) as error:
            print(f"memento: warning: cannot write logs/cron.log ({error})", file=sys.stderr)


def _deferral(result: TickResult) -> str | None:
    for outcome in result.tasks:
        if outcome.outcome == DEFERRED:
            when = f"; try again {outcome.try_again}" if outcome.try_again else ""
            return f"the agent's provider is limited ({outcome.message}){when}"
    return None


def _ticks(count: int) -> str:
    return f"{count} tick" if count == 1 else f"{count} ticks"


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
