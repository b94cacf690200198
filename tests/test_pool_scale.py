"""Twenty workers on one branch (issue #20): every result lands while its claim is live, the
bookkeeping stays exact, and a worker killed between its agent's run and its result costs
only that one run. Real ``memento run --push`` processes, a bare origin, a clone each; the
agent (``testing/agents/sleepy.py``) logs every run outside the repositories.

These tests start twenty processes on a small machine: they are slow and run sparingly.
The numbers (push attempts, wall time, load) are in ``benchmarks/bench_workers.py``."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

import pytest

from testing.repos import clone
from testing.workers import BRANCH, Pool, finish, pool_plan, task_ids, wait_for

pytestmark = pytest.mark.slow

TASKS = 96
WORKERS = 20
TIMEOUT = 1500  # twenty workers beside other tests on two cores: generous


def assert_exact(pool: Pool, tasks: list[str], died: int = 0) -> None:
    """Every task completed once on the remote, and the Meta, the status log and the tick
    numbers agree with the history."""
    history = pool.history()
    assert history.completions() == dict.fromkeys(tasks, 1)
    plan = pool.plan()
    assert [task.marker for task in plan.tasks] == ["x"] * len(tasks)
    assert plan.settings.completed_tasks == len(tasks)
    claims = history.of_kind("memento: claim ")
    claim_ticks = [commit.tick or 0 for commit in claims]
    assert len(set(claim_ticks)) == len(claim_ticks)  # each claim its own tick
    # A death is recorded under a tick number of its own, after the claims before it.
    assert plan.settings.total_ticks == len(claims) + died
    assert max(claim_ticks) <= plan.settings.total_ticks
    status = pool.show("docs/TICK_STATUS.md")
    assert status.count("✅ SUCCESS") == len(tasks), status[-2000:]
    assert status.count("❌ FAILED") == died, status[-3000:]
    for task in tasks:
        assert pool.show(f"out/{task}.txt") == f"{task} done\n"


def dropped(outputs: list[str]) -> list[str]:
    return [line for out in outputs for line in out.splitlines() if "unpublished" in line]


@pytest.mark.timeout(TIMEOUT + 120)
def test_twenty_workers_land_every_result_of_ninety_six_tasks_exactly_once(
    tmp_path: Path,
) -> None:
    tasks = task_ids(TASKS)
    pool = Pool(tmp_path, pool_plan([(TASKS, True)]), WORKERS, agent_seconds=3)

    outputs = pool.run_all(TIMEOUT)

    assert dropped(outputs) == []
    assert all("ALL TASKS COMPLETE" in out for out in outputs), outputs
    assert pool.runs() == dict.fromkeys(tasks, 1)  # every agent ran once: nothing redone
    assert pool.history().claims() == dict.fromkeys(tasks, 1)
    assert_exact(pool, tasks)


@pytest.mark.timeout(TIMEOUT + 120)
def test_two_workers_killed_mid_result_cost_only_their_own_runs(tmp_path: Path) -> None:
    tasks = task_ids(TASKS)
    # One retry: the killed run counts as a failed attempt, the second run completes it.
    pool = Pool(tmp_path, pool_plan([(TASKS, True)], retries=1), WORKERS, agent_seconds=3)
    # Workers 1 and 2 die by SIGKILL after their first agent run, before its result lands.
    victims = [pool.start(index, env={"MEMENTO_CRASH_AT": "attempted"}) for index in (1, 2)]
    others = [pool.start(index) for index in range(3, WORKERS + 1)]
    for process in victims:
        finish(process, TIMEOUT)
        assert process.returncode == -9
    # Started again, each finds its dead tick's claim, counts the attempt, and goes on.
    again = [pool.start(index) for index in (1, 2)]

    outputs = [finish(process, TIMEOUT) for process in others + again]

    assert dropped(outputs) == []
    assert all("ALL TASKS COMPLETE" in out for out in outputs), outputs
    runs = pool.runs()
    twice = sorted(task for task, count in runs.items() if count == 2)
    assert len(twice) == 2  # the killed runs, and the ones that completed their tasks
    assert runs == {**dict.fromkeys(tasks, 1), **dict.fromkeys(twice, 2)}
    recovered = [line for out in outputs for line in out.splitlines() if "Recovered" in line]
    assert sorted(re.sub(r".* running ", "", line) for line in recovered) == twice
    assert_exact(pool, tasks, died=2)


def interrupted_agent(pool: Pool, scratch: Path) -> str:
    """The sleepy agent, after which a scratch clone pushes a commit of its own (trying
    until it lands): the branch has moved by the time the worker pushes its result, so the
    worker posts it."""
    sleepy = pool.agent_command().removesuffix(" {task_id} {repo}")
    where = shlex.quote(str(scratch))
    script = (
        f'{sleepy} "$1" "$2" && for i in $(seq 60); do git -C {where} pull -q --rebase && '
        f"git -C {where} commit -q --allow-empty -m 'move the branch' && "
        f"git -C {where} push -q origin {BRANCH} && exit 0; sleep 0.2; done; exit 0"
    )
    return f"sh -c {shlex.quote(script)} agent {{task_id}} {{repo}}"


@pytest.mark.timeout(TIMEOUT + 120)
def test_two_workers_killed_after_posting_their_results_lose_nothing(tmp_path: Path) -> None:
    tasks = task_ids(TASKS)
    pool = Pool(tmp_path, pool_plan([(TASKS, True)]), WORKERS, agent_seconds=3)
    scratch = clone(pool.origin, tmp_path / "scratch")
    # Workers 1 and 2 die by SIGKILL once their first result is posted, before it lands.
    agent = interrupted_agent(pool, scratch)
    victims = [
        pool.start(index, "--agent-cmd", agent, env={"MEMENTO_CRASH_AT": "posted"})
        for index in (1, 2)
    ]
    others = [pool.start(index) for index in range(3, WORKERS + 1)]
    for process in victims:
        out = finish(process, TIMEOUT)
        assert process.returncode == -9, out
    again = [pool.start(index) for index in (1, 2)]

    outputs = [finish(process, TIMEOUT) for process in others + again]

    assert dropped(outputs) == []
    assert all("ALL TASKS COMPLETE" in out for out in outputs), outputs
    # The killed workers' runs were recorded by others: no task ran twice, nothing died.
    assert pool.runs() == dict.fromkeys(tasks, 1)
    assert not any("Recovered" in out for out in outputs)
    assert_exact(pool, tasks)


@pytest.mark.timeout(300)
def test_an_idle_worker_waits_longer_each_time_and_wakes_when_the_branch_moves(
    tmp_path: Path,
) -> None:
    pool = Pool(tmp_path, pool_plan([(1, True)]), 2, agent_seconds=20)
    busy = pool.start(1)
    assert wait_for(lambda: pool.history().claims(), 120), finish(busy, 5)
    idle = pool.start(2)

    busy_out = finish(busy, 240)
    landed = time.monotonic()
    idle_out = finish(idle, 240)
    woke = time.monotonic() - landed

    assert "ALL TASKS COMPLETE" in busy_out and "ALL TASKS COMPLETE" in idle_out, idle_out
    # Ticking back to back (every 0.2 s) it would tick dozens of times in 20 s; waiting 1, 2,
    # 4, 8, 16 s it ticks a handful.
    idle_ticks = idle_out.count("Nothing to run")
    assert 1 <= idle_ticks <= 6, idle_out
    # Its last wait (up to 16 s or more) was cut short by the result landing.
    assert woke < 10, (woke, idle_out)
