"""Whole-process cost of `memento validate` on large plans, as ratios to a bare interpreter.

    .venv/bin/python benchmarks/bench_validate.py [--rounds N] [--python PATH]

Each round runs every case once, in turn, so all cases share the machine's noise; the
report gives medians. memento runs as installed by `pip install .` into a virtualenv of its
own (``installed.py``). Bound: 10,000 tasks at most 15x a bare `python -c pass` of the
same interpreter, with time growing linearly in plan size.
The "unusual" rows hold a fenced code block in every phase, which makes the validator
re-read those sections with mistune: they show what that check costs.
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

from installed import add_option, python_for

SIZES = (1_000, 2_000, 5_000, 10_000)
TASKS_PER_PHASE = 100
UNUSUAL_SIZES = (1_000, 10_000)


def task_block(number: int, module: str) -> str:
    return (
        f"- [ ] `T-{number}` [MODULE:{module}] Implement step {number} of the feature\n"
        f"  - verify: `pytest -q tests/test_step_{number}.py`\n"
        f"  - context_files: [src/step_{number}.py, tests/test_step_{number}.py]\n"
        f"  - guard_files: [src/core/*]\n"
        f"  - estimate: 5min\n"
        f"  - retries: 0\n"
    )


def plan_text(tasks: int, unusual: bool = False) -> str:
    parts = [
        "# MASTER_PLAN: Benchmark\n\n## Meta\n- tick_mode: auto\n- max_retries: 3\n",
        f"- total_tasks: {tasks}\n- completed_tasks: 0\n\n",
    ]
    for phase in range(tasks // TASKS_PER_PHASE):
        depends = "none" if phase == 0 else f"Phase {phase}"
        parts.append(
            f"## Phase {phase + 1}: Part {phase + 1}\n"
            f"<!-- parallel: true -->\n<!-- depends: {depends} -->\n\n"
        )
        if unusual:
            parts.append("```text\n- [ ] `X-1` not a task, an example\n```\n\n")
        for offset in range(TASKS_PER_PHASE):
            number = phase * TASKS_PER_PHASE + offset + 1
            parts.append(task_block(number, f"m{phase % 10}") + "\n")
    return "".join(parts)


def map_text() -> str:
    modules = "".join(f"### [MODULE:m{n}]\n- Purpose: part {n}\n\n" for n in range(10))
    return f"# PROJECT MAP: Benchmark\n\n## Module Registry\n\n{modules}"


def make_repo(root: Path, tasks: int, unusual: bool) -> Path:
    repo = root / f"plan-{tasks}{'-unusual' if unusual else ''}"
    docs = repo / "docs"
    docs.mkdir(parents=True)
    (docs / "MASTER_PLAN.md").write_text(plan_text(tasks, unusual), encoding="utf-8")
    (docs / "PROJECT_MAP.md").write_text(map_text(), encoding="utf-8")
    (docs / "HUMAN_NOTES.md").write_text("# HUMAN NOTES\n\n## Active Notes\n", encoding="utf-8")
    return repo


# Installed packages run from cached bytecode (pip compiles it at install time); a shell
# that sets PYTHONDONTWRITEBYTECODE would make every run recompile memento from source.
RUN_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False, env=RUN_ENV)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed:\n{done.stdout.decode()}{done.stderr.decode()}"
        )
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    add_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        python = python_for(args.python, scratch)
        memento = str(python.with_name("memento"))
        cases: dict[str, list[str]] = {"python -c pass": [str(python), "-c", "pass"]}
        rows: dict[str, tuple[int, bool]] = {}
        for tasks, unusual in [(n, False) for n in SIZES] + [(n, True) for n in UNUSUAL_SIZES]:
            repo = make_repo(scratch, tasks, unusual)
            name = f"validate {tasks:>6,} tasks" + (" (unusual)" if unusual else "")
            cases[name] = [memento, "-C", str(repo), "validate"]
            rows[name] = (tasks, unusual)
        for command in cases.values():  # warm the file cache and .pyc files
            timed(command, scratch)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, command in cases.items():
                samples[name].append(timed(command, scratch))
        report(samples, rows, args.rounds, python)
    return 0


def report(
    samples: dict[str, list[float]], rows: dict[str, tuple[int, bool]], rounds: int, python: Path
) -> None:
    base = statistics.median(samples["python -c pass"])
    where = python.parent.parent
    print(f"median of {rounds} rounds, memento installed in {where} ({sys.version.split()[0]})")
    print(f"{'case':<34}{'median ms':>10}{'x bare':>9}{'ms/1k tasks':>13}")
    print(f"{'python -c pass':<34}{base * 1000:>10.1f}{1.0:>9.2f}")
    for name, (tasks, _unusual) in rows.items():
        median = statistics.median(samples[name])
        per_thousand = (median - base) * 1000 / (tasks / 1000)
        print(f"{name:<34}{median * 1000:>10.1f}{median / base:>9.2f}{per_thousand:>13.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
