"""Whole-process cost of `memento tick`, and prompt size against plan size.

    .venv/bin/python benchmarks/bench_tick.py [--rounds N] [--python PATH]

A tick here runs a no-op agent (`true`) on a task whose verify is `true` and that needs no
change (`needs_change: false`: else a run that changes nothing fails), so what is measured
is memento's own work: start-up, reading and validating the plan, the claim, the
guards, the bookkeeping and one git commit. The baseline is what any tick must pay at
least: a bare `python -c pass` plus one `git commit`, measured in the same rounds. After
each tick the repository is reset to its first commit (not timed), so every round runs
the same task. memento runs as installed by `pip install .` into a virtualenv of its own,
and the baseline uses that virtualenv's interpreter (``installed.py``). Bound: at most 5x
the baseline at 1,000 tasks, growing linearly; and the prompt for the same task equal
(within 5%) in a 10-task and a 10,000-task plan.

Each repository is set up by `memento init` (the worker prompt, the notes, the status log,
the ignore files), its plan then replaced by one of N tasks whose Meta holds every counter
init writes: the tick measured is an ordinary one. `--setup bare` measures instead a
project's very first tick in a repository holding only the plan and the map, which also
creates the status log and adds the missing Meta counter.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from installed import add_option, install_commit, python_for

SIZES = (10, 1_000, 10_000)
TASKS_PER_PHASE = 100


def plan_text(tasks: int, counters: bool = True) -> str:
    parts = [
        "# MASTER_PLAN: Bench\n\n## Meta\n- tick_mode: auto\n- max_retries: 3\n",
        f"- total_ticks: 0\n- total_tasks: {tasks}\n- completed_tasks: 0\n",
        "- consecutive_failed_ticks: 0\n\n" if counters else "\n",
    ]
    for phase in range((tasks + TASKS_PER_PHASE - 1) // TASKS_PER_PHASE):
        parts.append(
            f"## Phase {phase + 1}: Part {phase + 1}\n<!-- parallel: false -->\n"
            "<!-- depends: none -->\n\n"
        )
        for offset in range(min(TASKS_PER_PHASE, tasks - phase * TASKS_PER_PHASE)):
            number = phase * TASKS_PER_PHASE + offset + 1
            parts.append(
                f"- [ ] `T-{number}` [MODULE:core] Step {number}\n"
                f"  - verify: `true`\n  - context_files: [src/step_{number}.py]\n"
                "  - needs_change: false\n  - estimate: 1min\n  - retries: 0\n\n"
            )
    return "".join(parts)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_repo(root: Path, name: str, tasks: int | None, memento: Path, setup: str = "init") -> Path:
    repo = root / name
    (repo / "docs").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.name", "Bench")
    git(repo, "config", "user.email", "bench@localhost")
    if tasks is not None and setup == "init":
        command = [str(memento), "init", "--name", "Bench"]
        subprocess.run(command, cwd=repo, capture_output=True, check=True, env=RUN_ENV)
    else:
        text = "logs/\n.memento.lock\n.memento_alert\n"
        (repo / ".gitignore").write_text(text, encoding="utf-8")
    if tasks is not None:
        plan = plan_text(tasks, counters=setup == "init")
        (repo / "docs" / "MASTER_PLAN.md").write_text(plan, encoding="utf-8")
        map_text = "# PROJECT MAP\n\n## Module Registry\n\n### [MODULE:core]\n- Purpose: all\n"
        (repo / "docs" / "PROJECT_MAP.md").write_text(map_text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    return repo


# Installed packages run from cached bytecode (pip compiles it at install time); a shell
# that sets PYTHONDONTWRITEBYTECODE would make every run recompile memento from source.
RUN_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False, env=RUN_ENV)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command} failed:\n{done.stdout.decode()}{done.stderr.decode()}")
    return elapsed


def tick_once(memento: Path, repo: Path, start: str) -> float:
    command = [str(memento), "tick", "--agent-cmd", "true"]
    elapsed = timed(command, repo)
    if "complete T-1 " not in git(repo, "log", "-1", "--format=%s") + " ":
        raise SystemExit(f"the tick in {repo} did not complete T-1")
    git(repo, "reset", "-q", "--hard", start)
    git(repo, "clean", "-qfdx")
    return elapsed


def baseline_once(python: Path, scratch: Path) -> float:
    python_time = timed([str(python), "-c", "pass"], scratch)
    commit = timed(["git", "commit", "-q", "--allow-empty", "-m", "bench"], scratch)
    return python_time + commit


def prompt_bytes(tasks: int) -> int:
    from memento_gh.engine import prompt
    from memento_gh.plan.scanner import parse

    plan = parse(plan_text(tasks))
    task = plan.tasks[0]
    return len(
        prompt.build_prompt(
            system="system",
            task_block=prompt.task_block(plan, task),
            task=task,
            module_entry=None,
            notes=(),
            context=(),
        ).encode("utf-8")
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--setup",
        choices=("init", "bare"),
        default="init",
        help="init: a repository as `memento init` sets it up (default); bare: the plan and "
        "the map alone, so that each round is a project's first tick",
    )
    parser.add_argument(
        "--against",
        metavar="COMMIT",
        help="also time the 1,000-task tick of memento as it was at COMMIT, in the same "
        "rounds, and print what this version adds to it in milliseconds",
    )
    add_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        python = python_for(args.python, root)
        memento = python.with_name("memento")
        scratch = make_repo(root, "scratch", None, memento)
        repos = {size: make_repo(root, f"plan-{size}", size, memento, args.setup) for size in SIZES}
        starts = {size: git(repo, "rev-parse", "HEAD") for size, repo in repos.items()}
        samples: dict[str, list[float]] = {"baseline": []}
        samples.update({f"tick {size:>6,} tasks": [] for size in SIZES})
        other = None
        if args.against:
            other = install_commit(args.against, root).with_name("memento")
            samples[f"tick  1,000 at {args.against}"] = []
            tick_once(other, repos[1_000], starts[1_000])
        tick_once(memento, repos[SIZES[0]], starts[SIZES[0]])  # warm caches and .pyc files
        for round_number in range(args.rounds):
            # The older version runs first in every other round: whichever runs right after
            # the other is measured in a warmer machine, and alternating cancels that out.
            other_first = other is not None and round_number % 2 == 1
            if other is not None and other_first:
                ticked = tick_once(other, repos[1_000], starts[1_000])
                samples[f"tick  1,000 at {args.against}"].append(ticked)
            samples["baseline"].append(baseline_once(python, scratch))
            for size, repo in repos.items():
                samples[f"tick {size:>6,} tasks"].append(tick_once(memento, repo, starts[size]))
            if other is not None and not other_first:
                ticked = tick_once(other, repos[1_000], starts[1_000])
                samples[f"tick  1,000 at {args.against}"].append(ticked)
    base = statistics.median(samples["baseline"])
    print(
        f"median of {args.rounds} rounds, setup {args.setup}, memento installed in "
        f"{python.parent.parent} ({sys.version.split()[0]})"
    )
    print(f"{'case':<24}{'median ms':>10}{'x baseline':>12}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<24}{median * 1000:>10.1f}{median / base:>12.2f}")
    if args.against:
        now, then = samples["tick  1,000 tasks"], samples[f"tick  1,000 at {args.against}"]
        added = statistics.median(a - b for a, b in zip(now, then, strict=True))
        print(
            f"this version adds {added * 1000:.1f} ms to a 1,000-task tick at {args.against} "
            "(median of the rounds' differences)"
        )
    small, large = prompt_bytes(10), prompt_bytes(10_000)
    print(
        f"prompt bytes for T-1: {small} (10 tasks) vs {large} (10,000 tasks), "
        f"ratio {large / small:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
