"""``memento tick``: one guarded, verified, committed tick."""

from __future__ import annotations

import gc
import os
import signal
from types import FrameType
from typing import TYPE_CHECKING

from memento_gh.engine.agents.check import check_agent, check_model, choose_agent, read_agent_args
from memento_gh.engine.agents.presets import COMMAND, KNOWN_AGENTS
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.errors import UserError
from memento_gh.layout import Layout, display

if TYPE_CHECKING:
    import argparse

#: How to choose an agent on the command line, said when none is.
HOW_TO_CHOOSE = (
    f"pass --agent {'|'.join(name for name in KNOWN_AGENTS if name != COMMAND)}, or "
    "--agent-cmd 'your-agent {prompt_file}' (or set MEMENTO_AGENT / MEMENTO_AGENT_CMD)"
)


def run(args: argparse.Namespace, layout: Layout) -> int:
    config = tick_config(args, layout)
    # A cancelled CI job or `kill` sends SIGTERM: unwind like Ctrl-C, so the agent's process
    # group is killed and the next tick finds the running-marker and recovers.
    signal.signal(signal.SIGTERM, _interrupt)
    # The process ends with the tick, so the cyclic garbage collector stays off for good:
    # run_tick pauses it, and turned on again it would walk the plan's objects (hundreds of
    # thousands in a large plan, none in a cycle) once more before the exit frees them.
    gc.disable()
    result = run_tick(layout, config)
    print(result.line)
    return 0


def tick_config(
    args: argparse.Namespace, layout: Layout, *, find_program: bool = True
) -> TickConfig:
    """The tick the options of ``tick_options.TICK_OPTIONS`` ask for, checked; the agent's
    program must be on PATH too, unless not ``find_program`` (a crontab line runs later)."""
    if not layout.plan.exists():
        raise UserError(f"{display(layout.plan)}: no plan here; run `memento init` first")
    agent = choose_agent(args.agent, args.agent_cmd, HOW_TO_CHOOSE)
    check_agent(
        agent, args.agent_cmd, repo=layout.root, environ=os.environ, find_program=find_program
    )
    model = check_model(args.model)
    agent_args = read_agent_args(args.agent_args)
    if args.max_tasks is not None and args.max_tasks < 1:
        raise UserError(f"--max-tasks must be at least 1, not {args.max_tasks}")
    if args.worker_id:
        from memento_gh.plan.values import check_worker_id

        try:
            check_worker_id(args.worker_id)
        except ValueError as error:
            raise UserError(f"--worker-id: {error}") from None
    shared = None
    if args.push:
        from memento_gh.remote import SharedBranch

        shared = SharedBranch.for_current_branch(layout.root, remote=args.remote)
    return TickConfig(
        agent=agent,
        agent_cmd=args.agent_cmd,
        worker_id=args.worker_id or "",
        max_tasks=args.max_tasks,
        shared=shared,
        model=model,
        agent_args=agent_args,
    )


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
