"""What lessons cost a tick, and what they add to a prompt, as the memory grows.

    .venv/bin/python benchmarks/bench_memory.py [--rounds N]

For 10 to 10,000 records (spread over the three memory files, a third of them in the
task's module, one known issue matching its last failure) it measures, in process:
reading the three files (``parse_memory``) and choosing the task's lessons
(``lessons_for``), each as a median of interleaved rounds and as a ratio to the 10-record
case; and the bytes the lessons add to the worker's prompt, against the budget (issue #6:
the budget holds with 1,000 records).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone

from memento_gh.engine.prompt import build_prompt, task_block
from memento_gh.formats import memory, memory_selection
from memento_gh.plan.model import Plan, Task
from memento_gh.plan.scanner import parse

SIZES = (10, 100, 1_000, 10_000)
NOW = datetime(2025, 1, 20, tzinfo=timezone.utc)
MONTH = 30 * 86400
PLAN = """\
# MASTER_PLAN: Bench

## Phase 1: One

- [ ] `T-1` [MODULE:auth] Tokens
  - verify: `pytest -q tests/auth`
  - context_files: [src/auth/*]
"""


def files_of(count: int) -> dict[str, str]:
    """``count`` records in the three files, every one fresh and some 400 bytes long."""
    parts: dict[str, list[str]] = {kind: [memory.empty_file(kind)] for kind in memory.KINDS}
    for number in range(count):
        kind = memory.KINDS[number % 3]
        key = f"AssertionError: case {number}" if kind == memory.KNOWN_ISSUE else f"topic {number}"
        fields = [
            (memory.LABELS[kind][0], f"Lesson {number}: " + "a long explanation " * 20),
            ("Task", f"T-{number + 2}"),
            ("Module", ("auth", "db", "ui")[number % 7 % 3]),
            ("Evidence", f"command `pytest -q tests/test_{number}.py`"),
            ("Confidence", "high"),
            ("Last verified", "2025-01-15T12:00:00Z"),
        ]
        if kind == memory.KNOWN_ISSUE:
            fields += [("Signature", f"`{key}`"), ("Fix", "src/auth/x.py (+1 -1)")]
        title = f"2025-01-15: {key}" if kind == memory.DECISION else key
        parts[kind].append("\n" + "\n".join(memory.render_record(title, fields)) + "\n")
    return {kind: "".join(texts) for kind, texts in parts.items()}


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def lessons(records: list[memory.Record], task: Task) -> tuple[str, ...]:
    return memory_selection.lessons_for(
        records, task, last_failure="AssertionError: case 0", now=NOW, stale_after=MONTH
    )


def added_bytes(plan: Plan, task: Task, given: tuple[str, ...]) -> int:
    def prompt(items: tuple[str, ...]) -> int:
        text = build_prompt(
            system="system",
            task_block=task_block(plan, task),
            task=task,
            module_entry=None,
            notes=(),
            context=(),
            lessons=items,
        )
        return len(text.encode("utf-8"))

    return prompt(given) - prompt(())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    plan = parse(PLAN)
    task = plan.tasks[0]
    texts = {size: files_of(size) for size in SIZES}
    records = {size: memory.read_all(texts[size]) for size in SIZES}
    reads: dict[int, list[float]] = {size: [] for size in SIZES}
    picks: dict[int, list[float]] = {size: [] for size in SIZES}
    for _ in range(args.rounds):
        for size in SIZES:
            reads[size].append(timed(functools.partial(memory.read_all, texts[size])))
            picks[size].append(timed(functools.partial(lessons, records[size], task)))
    print(f"median of {args.rounds} rounds, {sys.executable} ({sys.version.split()[0]})")
    print(
        f"{'records':>8}{'file KB':>9}{'read ms':>9}{'x 10':>7}{'pick ms':>9}{'x 10':>7}"
        f"{'lessons':>8}{'bytes':>7}{'budget':>8}"
    )
    read_base = statistics.median(reads[SIZES[0]])
    pick_base = statistics.median(picks[SIZES[0]])
    for size in SIZES:
        read, pick = statistics.median(reads[size]), statistics.median(picks[size])
        given = lessons(records[size], task)
        kilobytes = sum(len(text.encode("utf-8")) for text in texts[size].values()) / 1000
        print(
            f"{size:>8,}{kilobytes:>9.0f}{read * 1000:>9.2f}{read / read_base:>7.1f}"
            f"{pick * 1000:>9.3f}{pick / pick_base:>7.1f}{len(given):>8}"
            f"{added_bytes(plan, task, given):>7}{memory_selection.LESSONS_BUDGET:>8}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
