"""Throughput of 1, 2 and 4 workers sharing one branch (issues #7 and #20).

    .venv/bin/python benchmarks/bench_workers.py [--tasks 40] [--seconds 1] [--rounds 1]
                                                  [--workers 1,2,4] [--single-tasks N]
                                                  [--python PATH]

The contended case of issue #20, 20 workers on 96 tasks of a 3-second agent:

    .venv/bin/python benchmarks/bench_workers.py --tasks 96 --seconds 3 --workers 1,20 \
        --single-tasks 12

Each case is a fresh pool (``testing/workers.py``): a bare ``origin`` holding a plan of one
``parallel: true`` phase of ``--tasks`` tasks, a clone per worker, and one
``memento run --push --until-done`` process per clone, all started at once. The agent sleeps
``--seconds`` and writes its task's file. A case's time runs from the start of the workers
to the exit of the last one, when the plan is complete; throughput is tasks per second,
and the ratio is against one worker measured in the same run (target: 3x or more at 4
workers). Each case also checks the result: every task completed exactly once, the agent
started once per task (a double execution would be counted and shown), every claim's tick
number its own.

With ``--single-tasks N``, one worker runs N tasks only, and its time for all ``--tasks``
is derived from its measured time per task (said so in the table): one worker on 96 tasks
of 3 seconds takes several minutes. Each case also shows how many pushes each result took
to land (from the workers' "(N pushes)" lines), how many results were dropped
("unpublished"), and the highest load average seen while it ran.

With several rounds, the cases take turns (1, 2, 4, 1, 2, 4, ...) so that they share the
machine's noise, and the median time of each is shown. memento runs as installed by
`pip install .` into a virtualenv of its own (``installed.py``).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from installed import add_option, python_for

from testing.workers import Pool, pool_plan

PUSHES = re.compile(r"^  \w+: .* \((\d+) push(?:es)?\)$", re.MULTILINE)


class Measured(NamedTuple):
    seconds: float
    completed: int
    double_runs: int
    double_completions: int
    pushes: list[int]  # per result
    dropped: int
    load: float  # the highest 1-minute load average seen
    cpu: float  # seconds of CPU the workers and their children used, all together


class Load:
    """The highest 1-minute load average, sampled every second in a thread."""

    def __init__(self) -> None:
        self.peak = os.getloadavg()[0]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.done.wait(1.0):
            self.peak = max(self.peak, os.getloadavg()[0])

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def measure(workers: int, tasks: int, agent_seconds: float, memento: Path) -> Measured:
    with tempfile.TemporaryDirectory(prefix="memento-bench-workers-") as folder:
        pool = Pool(
            Path(folder),
            pool_plan([(tasks, True)]),
            workers,
            agent_seconds=agent_seconds,
            memento=[str(memento)],
        )
        started, before = time.perf_counter(), children_cpu()
        with Load() as load:
            outputs = pool.run_all(timeout=tasks * (agent_seconds + 10) + 60)
        elapsed = time.perf_counter() - started
        cpu = children_cpu() - before
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
            [int(found) for out in outputs for found in PUSHES.findall(out)],
            sum(out.count("unpublished") for out in outputs),
            load.peak,
            cpu,
        )


def children_cpu() -> float:
    """CPU seconds (user and system) of the waited-for children so far: the workers, and
    through them their git processes and agents."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=1.0, help="each agent run's sleep")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", default="1,2,4", help="the pool sizes, 1 first")
    parser.add_argument(
        "--single-tasks", type=int, help="one worker runs this many tasks; its time scaled"
    )
    add_option(parser)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.workers.split(",")]
    results: dict[int, list[Measured]] = {count: [] for count in sizes}
    single = args.single_tasks or args.tasks
    with tempfile.TemporaryDirectory(prefix="memento-bench-install-") as folder:
        memento = python_for(args.python, Path(folder)).with_name("memento")
        for _ in range(args.rounds):
            for count in sizes:
                tasks = single if count == 1 else args.tasks
                results[count].append(measure(count, tasks, args.seconds, memento))
    return report(args, sizes, results, single)


def report(
    args: argparse.Namespace, sizes: list[int], results: dict[int, list[Measured]], single: int
) -> int:
    def seconds(count: int) -> float:
        measured = statistics.median(m.seconds for m in results[count])
        return measured * args.tasks / single if count == 1 else measured

    base = seconds(1)
    print(f"{args.tasks} tasks, agent {args.seconds:g} s, {args.rounds} round(s)")
    if single != args.tasks:
        print(f"1 worker: measured on {single} tasks, its time scaled to {args.tasks}")
    print()
    print(
        "| workers | time | tasks/s | x 1 worker | completed | double runs | dropped "
        "| pushes per result (median / mean / max) | CPU per task | peak load |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    failed = False
    for count in sizes:
        runs = results[count]
        tasks = single if count == 1 else args.tasks
        completed = min(m.completed for m in runs)
        doubles = sum(m.double_runs + m.double_completions for m in runs)
        dropped = sum(m.dropped for m in runs)
        pushes = [push for m in runs for push in m.pushes] or [0]
        failed |= completed != tasks or doubles > 0 or dropped > 0
        print(
            f"| {count} | {seconds(count):.1f} s | {args.tasks / seconds(count):.2f} "
            f"| {base / seconds(count):.2f} | {completed}/{tasks} | {doubles} | {dropped} "
            f"| {statistics.median(pushes):g} / {statistics.mean(pushes):.1f} / {max(pushes)} "
            f"| {statistics.median(m.cpu for m in runs) / tasks:.2f} s "
            f"| {max(m.load for m in runs):.1f} |"
        )
    largest = sizes[-1]
    print(f"\n{largest} workers: {base / seconds(largest):.2f}x one worker")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
