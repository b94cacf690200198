"""Throughput of 1, 2 and 4 workers sharing one branch (issue #7).

    .venv/bin/python benchmarks/bench_workers.py [--tasks 40] [--seconds 1] [--rounds 1]
                                                  [--python PATH]

Each case is a fresh pool (``testing/workers.py``): a bare ``origin`` holding a plan of one
``parallel: true`` phase of ``--tasks`` tasks, a clone per worker, and one
``memento run --push --until-done`` process per clone, all started at once. The agent sleeps
``--seconds`` and writes its task's file. A case's time runs from the start of the workers
to the exit of the last one, when the plan is complete; throughput is tasks per second,
and the ratio is against one worker measured in the same run (target: 3x or more at 4
workers). Each case also checks the result: every task completed exactly once, the agent
started once per task (a double execution would be counted and shown), every claim's tick
number its own.

With several rounds, the cases take turns (1, 2, 4, 1, 2, 4, ...) so that they share the
machine's noise, and the median time of each is shown. memento runs as installed by
`pip install .` into a virtualenv of its own (``installed.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from installed import add_option, python_for

from testing.workers import Pool, pool_plan

WORKERS = (1, 2, 4)
TARGET = 3.0


class Measured(NamedTuple):
    seconds: float
    completed: int
    double_runs: int
    double_completions: int


def measure(workers: int, tasks: int, agent_seconds: float, memento: Path) -> Measured:
    with tempfile.TemporaryDirectory(prefix="memento-bench-workers-") as folder:
        pool = Pool(
            Path(folder),
            pool_plan([(tasks, True)]),
            workers,
            agent_seconds=agent_seconds,
            memento=[str(memento)],
        )
        started = time.perf_counter()
        outputs = pool.run_all(timeout=tasks * (agent_seconds + 10) + 60)
        elapsed = time.perf_counter() - started
        history = pool.history()
        completed = sum(1 for task in pool.plan().tasks if task.marker == "x")
        runs = pool.runs()
        if completed != tasks:
            print("\n".join(outputs), file=sys.stderr)
        return Measured(
            elapsed,
            completed,
            sum(count - 1 for count in runs.values() if count > 1),
            sum(count - 1 for count in history.completions().values() if count > 1),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=1.0, help="each agent run's sleep")
    parser.add_argument("--rounds", type=int, default=1)
    add_option(parser)
    args = parser.parse_args(argv)
    results: dict[int, list[Measured]] = {count: [] for count in WORKERS}
    with tempfile.TemporaryDirectory(prefix="memento-bench-install-") as folder:
        memento = python_for(args.python, Path(folder)).with_name("memento")
        for _ in range(args.rounds):
            for count in WORKERS:
                results[count].append(measure(count, args.tasks, args.seconds, memento))
    base = statistics.median(m.seconds for m in results[1])
    print(f"{args.tasks} tasks, agent {args.seconds:g} s, {args.rounds} round(s)\n")
    print("| workers | time | tasks/s | x 1 worker | completed | double runs |")
    print("|---:|---:|---:|---:|---:|---:|")
    failed = False
    for count in WORKERS:
        seconds = statistics.median(m.seconds for m in results[count])
        completed = min(m.completed for m in results[count])
        doubles = sum(m.double_runs + m.double_completions for m in results[count])
        failed |= completed != args.tasks or doubles > 0
        print(
            f"| {count} | {seconds:.1f} s | {args.tasks / seconds:.2f} | {base / seconds:.2f} "
            f"| {completed}/{args.tasks} | {doubles} |"
        )
    speedup = base / statistics.median(m.seconds for m in results[4])
    print(f"\n4 workers: {speedup:.2f}x one worker (target {TARGET:g}x)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
