"""``memento demo [DIR]``: build a sample project with a scripted worker, offline, to the end.

It creates the ``calc`` project of :mod:`memento_gh.demo.project` in a new git repository
and runs real ticks on it, with the built-in worker of :mod:`memento_gh.demo.agent` as the
``command`` agent: no LLM, no network, a few seconds. Each tick's result is printed as it
happens. When a task ends blocked, the demo plays the human: it reads the worker's question
in the tick's log, answers it with ``memento note`` and runs ``memento retry``. At the end it
prints ``memento status`` and where the project is.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import textwrap
from datetime import date
from pathlib import Path, PurePosixPath

from memento_gh import files
from memento_gh.commands.init import check_plan_dir, write_file
from memento_gh.commands.status import render_status
from memento_gh.controls.apply import apply_control
from memento_gh.controls.model import Control
from memento_gh.demo import agent, project
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.errors import UserError
from memento_gh.layout import STATUS_NAME, Layout, display
from memento_gh.output import commented, wants_color
from memento_gh.plan.model import DONE, SKIPPED
from memento_gh.plan.progress import summary
from memento_gh.plan.scanner import parse
from memento_gh.workspace import Workspace, init_repository

#: A safety cap: the story takes 11 ticks; a demo must never loop forever.
MAX_TICKS = 20
WORKER_ID = "demo-worker"
WIDTH = 96


def agent_command(python: str = sys.executable) -> str:
    """The ``command`` agent's template that runs the demo's worker.

    The worker is run as a script by its path, not with ``-m``: it then works whether or not
    memento is installed where the project is (``python -m memento_gh`` in a checkout)."""
    script = Path(agent.__file__).resolve()
    return f"{shlex.join([python, str(script)])} {{prompt_file}} {{task_id}}"


def run(args: argparse.Namespace, layout: Layout) -> int:
    plan_dir = check_plan_dir(layout.plan_dir)
    target = _new_folder(None if args.path is None else layout.root / args.path).resolve()
    demo = Layout(target, plan_dir)
    print("memento demo: a sample project, a plan of 6 tasks in 2 phases, and a scripted")
    print("worker (no LLM, no network). Every tick below is a real one.")
    print(f"Project: {target}\n")
    _create_project(target, plan_dir)
    config = TickConfig(agent="command", agent_cmd=agent_command(), worker_id=WORKER_ID)
    _drive(demo, config)
    return 0 if _finish(demo) else 1


def _new_folder(path: Path | None) -> Path:
    """The demo's folder: a new temporary one, or ``path`` when it is new or empty."""
    if path is None:
        return Path(tempfile.mkdtemp(prefix="memento-demo-"))
    if path.is_dir() and any(path.iterdir()):
        raise UserError(
            f"{display(path)} is not empty; give `memento demo` a new or empty folder "
            "(or none: it then makes a temporary one)"
        )
    files.make_folder(path, "memento demo", "a new or empty folder")
    return path


def _create_project(target: Path, plan_dir: str) -> None:
    scaffold = project.scaffold(sys.executable, date.today(), plan_dir)
    for relative, text in scaffold.items():
        write_file(target, relative, text, force=False)
    workspace = init_repository(target)
    workspace.commit("Start calc, the memento demo's sample project\n")
    print(f"Created {len(scaffold)} files and the first commit: the plan, the project map,")
    print("tests for every task, and an empty calc package.\n")


def _drive(layout: Layout, config: TickConfig) -> None:
    """Tick until nothing is left to run (or MAX_TICKS); answer each blocked task once."""
    answered: set[str] = set()
    for _ in range(MAX_TICKS):
        result = run_tick(layout, config, say=_say)
        for outcome in result.tasks:
            _explain(layout, outcome.task_id, outcome.outcome)
            if outcome.outcome == "blocked" and outcome.task_id not in answered:
                answered.add(outcome.task_id)
                _play_the_human(layout, outcome.task_id)
        if result.status != "ran":
            return
    _say(f"Stopping after {MAX_TICKS} ticks (the demo's safety cap).")


def _say(line: str) -> None:
    print(line, flush=True)


def _explain(layout: Layout, task_id: str, outcome: str) -> None:
    """What the worker said it did, and what memento did about the outcome."""
    said = _worker_said(layout, task_id)
    if said:
        _say(textwrap.fill(said, WIDTH, initial_indent="  worker: ", subsequent_indent=" " * 10))
    task = parse(files.read_text(layout.plan)).task(task_id)
    if task is None or outcome == "success":
        return
    if outcome == "failed":
        _say(f"  → rolled back; {task_id} is [ ] again with retries: {task.retries}: it runs again")
    else:
        _say(f"  → rolled back; {task_id} is [!] after {task.retries} attempts: it needs a human")


def _play_the_human(layout: Layout, task_id: str) -> None:
    _say(
        f"\nA human answers the worker (on GitHub: a comment on {task_id}'s issue; here: the CLI):"
    )
    note = project.HUMAN_NOTE if task_id == project.BLOCKED_TASK else "Try again."
    for words, control in (
        (["note", "--task", task_id, note], Control("note", task_id, note)),
        (["retry", task_id], Control("retry", task_id)),
    ):
        _say(f"  $ {shlex.join(['memento', *words])}")
        _say(f"    {apply_control(layout, control)}")
    _say("")


def _worker_said(layout: Layout, task_id: str) -> str | None:
    """The last line the worker printed about ``task_id``, from the newest tick log."""
    logs = sorted(layout.logs.glob("tick_*.log"), key=lambda path: path.stat().st_mtime)
    if not logs:
        return None
    prefix = f"worker {task_id}: "
    lines = files.read_text(logs[-1]).splitlines()
    said = [line.removeprefix(prefix) for line in lines if line.startswith(prefix)]
    return said[-1] if said else None


def _finish(layout: Layout) -> bool:
    """Print ``memento status`` and where the project is; True when the plan is complete."""
    plan = parse(files.read_text(layout.plan))
    data = summary(plan, display(layout.plan))
    done = sum(1 for task in plan.tasks if task.marker in (DONE, SKIPPED))
    complete = done == len(plan.tasks)
    commits = Workspace(layout.root).commit_count()
    print("\n$ memento status")
    print(render_status(data, wants_color(sys.stdout)))
    print()
    if complete:
        print(f"The plan is complete: {done}/{data['total']} tasks in {data['ticks']} ticks.")
    else:
        print(
            f"The demo stopped with {done}/{data['total']} tasks done, but it should complete "
            "the plan: please report this with the output above."
        )
    where = shlex.quote(str(layout.root))
    status = shlex.quote((PurePosixPath(layout.plan_dir) / STATUS_NAME).as_posix())
    plan_dir = [] if layout.plan_dir == "docs" else ["--plan-dir", layout.plan_dir]
    print(f"The project is in {where}, with {commits} commits. Look around:")
    look = [
        (f"cd {where}", ""),
        ("git log --oneline", "a commit for every task run and every control"),
        (f"cat {status}", "the tick log"),
        (shlex.join(["memento", *plan_dir, "status"]), ""),
    ]
    print("\n".join(commented(look)))
    return complete
