#!/usr/bin/env python3
"""A fake agent for worker pools: sleep, then write the task's own file.

Usage: ``sleepy.py TASK_ID REPO``. It sleeps ``SLEEPY_SECONDS`` (default 0), writes
``out/<TASK_ID>.txt`` in REPO, and appends ``start`` and ``end`` lines (task, pid, time) to
the file ``SLEEPY_LOG`` names, outside every repository: the pool's tests count each
task's executions, and check which ran at the same time, from that log.

With ``SLEEPY_MEET`` set to a number of seconds, a run that finds itself the only one in
the log so far waits, at most that long, for a second run to start before it sleeps: on a
machine too busy for two short runs to meet by chance, the first two runs of a pool still
run at the same time, as long as the pool lets a second worker start a task meanwhile.

With ``SLEEPY_COST`` set to a price in USD, it ends by printing claude's cost report for
that price and 100 tokens in, 10 out (``--output-format json``, as the real CLI prints it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def log(event: str, task_id: str) -> None:
    path = os.environ.get("SLEEPY_LOG")
    if not path:
        return
    line = f"{event} {task_id} {os.getpid()} {time.time():.6f}\n"
    # One write of a short line to a file opened for appending lands whole, whoever else
    # appends at the same moment.
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line.encode("utf-8"))
    finally:
        os.close(descriptor)


def wait_for_a_second_run(seconds: float) -> None:
    """Return once the log holds two starts, or after ``seconds``."""
    path = Path(os.environ["SLEEPY_LOG"])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        starts = path.read_text(encoding="utf-8").count("start ")
        if starts >= 2:
            return
        time.sleep(0.02)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: sleepy.py TASK_ID REPO", file=sys.stderr)
        return 2
    task_id, repo = argv[1], Path(argv[2])
    log("start", task_id)
    meet = os.environ.get("SLEEPY_MEET")
    if meet:
        wait_for_a_second_run(float(meet))
    time.sleep(float(os.environ.get("SLEEPY_SECONDS", "0")))
    out = repo / "out"
    out.mkdir(exist_ok=True)
    (out / f"{task_id}.txt").write_text(f"{task_id} done\n", encoding="utf-8")
    log("end", task_id)
    cost = os.environ.get("SLEEPY_COST")
    if cost:
        usage = {"inputTokens": 100, "outputTokens": 10, "costUSD": float(cost)}
        report = {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "total_cost_usd": float(cost),
            "modelUsage": {"claude-opus-4-8": usage},
        }
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
