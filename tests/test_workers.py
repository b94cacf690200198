"""Worker pools: several ``memento run --push`` processes, each in its own clone, sharing one
branch of a bare ``origin`` (issue #7). The agent sleeps and writes its task's own file, and
logs every run outside the repositories (``testing/agents/sleepy.py``)."""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from pathlib import Path

import pytest

from testing.cli import run_memento
from testing.repos import clone
from testing.workers import Pool, finish, pool_plan, task_ids, wait_for

pytestmark = pytest.mark.slow

TIMEOUT = 300


def agent_spans(pool: Pool) -> list[tuple[str, float, float]]:
    """(task, start, end) of each agent run that ended, from the agent's own log."""
    started: dict[str, tuple[str, float]] = {}
    spans = []
    for line in pool.log.read_text(encoding="utf-8").splitlines():
        event, task, pid, moment = line.split()
        if event == "start":
            started[pid] = (task, float(moment))
        else:
            task, begun = started.pop(pid)
            spans.append((task, begun, float(moment)))
    return spans


def simultaneous(spans: list[tuple[str, float, float]]) -> int:
    """How many pairs of agent runs overlapped in time."""
    return sum(
        1
        for index, (_, start, end) in enumerate(spans)
        for _, other_start, other_end in spans[index + 1 :]
        if start < other_end and other_start < end
    )


def assert_pool_finished(pool: Pool, folder: Path, tasks: list[str]) -> None:
    """Every task done once on the remote, every tick in the history, a valid plan."""
    history = pool.history()
    assert history.completions() == dict.fromkeys(tasks, 1)
    plan = pool.plan()
    assert [task.marker for task in plan.tasks] == ["x"] * len(tasks)
    claims = history.of_kind("memento: claim ")
    assert plan.settings.completed_tasks == len(tasks)
    assert plan.settings.total_ticks == len(claims)
    claim_ticks = sorted(commit.tick or 0 for commit in claims)
    assert claim_ticks == list(range(1, len(claims) + 1))  # each claim its own tick
    status = pool.show("docs/TICK_STATUS.md")
    assert status.count("✅ SUCCESS") == len(tasks), status[-2000:]
    for task in tasks:
        assert pool.show(f"out/{task}.txt") == f"{task} done\n"
    check = clone(pool.origin, folder / "check")
    done = run_memento("validate", cwd=check)
    assert done.returncode == 0, done.stdout + done.stderr


def test_four_workers_complete_forty_parallel_tasks_each_exactly_once(tmp_path: Path) -> None:
    tasks = task_ids(40)
    # The first agent run waits for a second to start: on a busy machine two runs of 0.2s
    # need not meet by chance, but they must be able to.
    pool = Pool(tmp_path, pool_plan([(40, True)]), 4, agent_seconds=0.2, meet_seconds=30)

    outputs = pool.run_all(TIMEOUT)

    assert all("the plan rests — 🎉 ALL TASKS COMPLETE" in out for out in outputs), outputs
    assert_pool_finished(pool, tmp_path, tasks)
    assert pool.runs() == dict.fromkeys(tasks, 1)  # no task's agent ran twice
    assert pool.history().claims() == dict.fromkeys(tasks, 1)  # no claim lost or repeated
    assert pool.history().overlaps(set(tasks))  # the workers really ran side by side
    assert simultaneous(agent_spans(pool)) > 0
    workers = {commit.worker for commit in pool.history().of_kind("memento: complete ")}
    assert len(workers) >= 2


def test_four_workers_count_each_runs_spend_once(tmp_path: Path) -> None:
    """Results made again on another worker's tip add their spend to the counters there:
    the ledger holds every agent run exactly once (issue #18)."""
    tasks = task_ids(12)
    pool = Pool(tmp_path, pool_plan([(12, True)]), 4, agent_seconds=0.1)

    started = [pool.start(index, env={"SLEEPY_COST": "0.01"}) for index in range(1, 5)]
    outputs = [finish(process, TIMEOUT) for process in started]

    assert all("ALL TASKS COMPLETE" in out for out in outputs), outputs
    runs = sum(pool.runs().values())
    assert runs >= len(tasks)
    plan = pool.plan()
    settings = plan.settings
    assert str(settings.spend_total.usd) == f"{runs / 100:.2f}"
    assert (settings.spend_total.tokens_in, settings.spend_total.tokens_out) == (
        100 * runs,
        10 * runs,
    )
    ticks = len(pool.history().of_kind("memento: claim "))
    assert settings.spend_day.ticks == ticks
    assert settings.spend_day.spend == settings.spend_total
    for task in plan.tasks:
        assert str(task.spend.usd) == f"{pool.runs()[task.id] / 100:.2f}", task.id


def test_a_killed_workers_task_is_reclaimed_after_the_stale_timeout_and_done_once(
    tmp_path: Path,
) -> None:
    tasks = task_ids(40)
    # A stale_lock_timeout no live worker's claim reaches on a busy machine: the victim's
    # claim is made older than that instead, as if its worker had died long ago.
    plan = pool_plan([(40, True)], stale_lock_timeout="10min")
    pool = Pool(tmp_path, plan, 4, agent_seconds=0.2)
    # Worker 1's agent hangs; it is killed, memento and agent, once its claim has landed.
    doomed = pool.start(1, env={"SLEEPY_SECONDS": "600"})
    assert wait_for(lambda: pool.history().claims(), 60), finish(doomed, 5)
    (victim,) = pool.history().claims()
    assert wait_for(lambda: pool.runs().get(victim) == 1, 30)
    os.killpg(doomed.pid, signal.SIGKILL)
    doomed.communicate()
    for line in pool.log.read_text(encoding="utf-8").splitlines():
        os.kill(int(line.split()[2]), signal.SIGKILL)  # the only run so far: the hung agent
    pool.age_claim(victim, timedelta(minutes=11))
    others = [pool.start(index) for index in (2, 3, 4)]

    outputs = [finish(process, TIMEOUT) for process in others]

    assert all("ALL TASKS COMPLETE" in out for out in outputs), outputs
    assert_pool_finished(pool, tmp_path, tasks)
    runs = pool.runs()
    assert runs.pop(victim) == 2  # the killed run, and the one that completed it
    assert runs == dict.fromkeys(set(tasks) - {victim}, 1)
    subjects = [commit.subject for commit in pool.history().commits]
    assert f"memento: reset stale claim on {victim}" in subjects
    completed_by = {c.task: c.worker for c in pool.history().of_kind("memento: complete ")}
    assert completed_by[victim] != "w1"


def test_a_sequential_phase_under_four_workers_runs_one_task_at_a_time(tmp_path: Path) -> None:
    tasks = task_ids(6)
    pool = Pool(tmp_path, pool_plan([(6, False)]), 4, agent_seconds=0.2)

    outputs = pool.run_all(TIMEOUT)

    assert all("ALL TASKS COMPLETE" in out for out in outputs), outputs
    assert_pool_finished(pool, tmp_path, tasks)
    # From the claims in the history: each claim lands after the last task's result.
    assert pool.history().overlaps(set(tasks)) == []
    # And from the agent's own clock: no two runs at once.
    assert simultaneous(agent_spans(pool)) == 0
    assert [commit.task for commit in pool.history().of_kind("memento: claim ")] == tasks
