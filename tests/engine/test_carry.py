"""A result posted by a worker that ticks on (``memento run``) asks for its next task in the
same post: whoever records the result claims that task in the same push, and the worker's
next tick runs it without asking (issue #20). A task claimed that way and never started goes
back to ``[ ]``, with no attempt counted.

Real clones of a bare ``origin``; the branch moves under a worker's result because the
agent's command pushes another clone's commit right after the sleepy agent's run.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memento_gh.engine.pool import handoff
from memento_gh.engine.pool.branch import CHUNK
from memento_gh.engine.records import TickResult
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.layout import Layout
from memento_gh.remote import RESULTS, SharedBranch
from testing.cli import run_memento
from testing.repos import commit_all, git
from testing.workers import BRANCH, Pool, pool_plan
from tests.engine.test_shared import interrupting_agent, marker, tick_process

FIRST, SECOND, THIRD = "T-1001", "T-1002", "T-1003"

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def pool(tmp_path: Path) -> Pool:
    return Pool(tmp_path, pool_plan([(3, True)]), 3, agent_seconds=0)


def carrying(pool: Pool) -> SharedBranch:
    branch = SharedBranch(pool.clones[0], branch=BRANCH, sleep=lambda seconds: None)
    branch.carry = True
    return branch


def tick(pool: Pool, branch: SharedBranch, agent: str | None = None) -> TickResult:
    config = TickConfig(
        agent="command",
        agent_cmd=agent or pool.agent_command(),
        worker_id="w0",
        shared=branch,
    )
    return run_tick(Layout(pool.clones[0]), config, environ=pool.env(), say=lambda line: None)


def test_the_push_that_records_a_posted_result_claims_the_next_task_with_it(pool: Pool) -> None:
    branch = carrying(pool)

    first = tick(pool, branch, interrupting_agent(pool, 2))

    assert [(o.task_id, o.outcome) for o in first.tasks] == [(FIRST, "success")]
    assert first.tasks[0].pushes > 1  # the branch moved: the result was posted
    plan = pool.plan()
    assert (marker(plan, FIRST), marker(plan, SECOND)) == ("x", "~")
    assert branch.carried is not None and branch.carried.assignment.task == SECOND
    note = git(pool.origin, "log", "-1", "--format=%B", f"{RESULTS}w0")
    assert note.startswith(f"memento: recorded {FIRST}") and SECOND in note

    second = tick(pool, branch)  # runs the task claimed for it: no claim of its own

    assert [(o.task_id, o.outcome) for o in second.tasks] == [(SECOND, "success")]
    assert branch.carried is None
    history = pool.history()
    assert history.claims() == {FIRST: 1, SECOND: 1}
    [claim] = [c for c in history.of_kind("memento: claim ") if c.task == SECOND]
    assert (claim.worker, claim.tick) == ("w0", 2)
    assert pool.runs() == {FIRST: 1, SECOND: 1}
    plan = pool.plan()
    assert plan.settings.total_ticks == 2 and plan.settings.completed_tasks == 2
    assert not (pool.clones[0] / ".git" / "memento" / "running.json").exists()


def test_a_worker_that_ticks_once_asks_for_no_next_task(pool: Pool) -> None:
    branch = SharedBranch(pool.clones[0], branch=BRANCH, sleep=lambda seconds: None)

    tick(pool, branch, interrupting_agent(pool, 2))

    assert branch.carried is None
    assert marker(pool.plan(), SECOND) == " "


def test_a_task_claimed_for_a_tick_that_finds_the_plan_paused_goes_back(pool: Pool) -> None:
    branch = carrying(pool)
    tick(pool, branch, interrupting_agent(pool, 2))
    assert branch.carried is not None
    # A person pauses the plan; the worker's clone stands on that tip when it ticks next.
    other = pool.clones[1]
    git(other, "pull", "-q", "--ff-only")
    plan_path = other / "docs" / "MASTER_PLAN.md"
    plan_path.write_text(plan_path.read_text().replace("tick_mode: auto", "tick_mode: paused"))
    commit_all(other, "pause")
    git(other, "push", "-q", "origin", BRANCH)
    git(pool.clones[0], "pull", "-q", "--ff-only")

    result = tick(pool, branch)

    assert result.status == "skipped"
    task = pool.plan().task(SECOND)
    assert task is not None and (task.marker, task.retries, task.claimed) == (" ", 0, None)
    status = pool.show("docs/TICK_STATUS.md")
    assert f"[~] on {SECOND} released" in status
    assert pool.runs() == {FIRST: 1}
    assert not (pool.clones[0] / ".git" / "memento" / "running.json").exists()


def test_a_task_claimed_for_a_worker_that_died_before_starting_it_goes_back(
    pool: Pool,
) -> None:
    # `memento run` ticks twice: the first result is posted with a request for the next
    # task, and the process dies (SIGKILL) as the second tick takes that task.
    crashed = run_memento(
        "run",
        "--every",
        "0s",
        "--max-ticks",
        "2",
        "--push",
        "--worker-id",
        "w0",
        "--agent-cmd",
        interrupting_agent(pool, 2),
        cwd=pool.clones[0],
        env=pool.env({"MEMENTO_CRASH_AT": "carried"}),
    )
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    assert marker(pool.plan(), SECOND) == "~"

    # Started again, the worker releases that claim: its agent never ran, nothing counts.
    done = tick_process(pool, 0)

    assert f"Released {SECOND}" in done.stdout
    status = pool.show("docs/TICK_STATUS.md")
    assert f"[~] on {SECOND} released" in status and "died while running" not in status
    plan = pool.plan()
    for task in plan.tasks:
        assert task.retries == 0
    # That tick took the released task again, and ran it once.
    assert pool.runs() == {FIRST: 1, SECOND: 1}
    assert pool.history().claims() == {FIRST: 1, SECOND: 2}


class CrowdedBranch(SharedBranch):
    """A real shared branch: as this worker posts its result, workers first by name have
    posted requests for a task, while none is left, and gone quiet."""

    def __init__(self, pool: Pool, askers: list[str]) -> None:
        super().__init__(pool.clones[0], branch=BRANCH, sleep=lambda seconds: None)
        self.asker = SharedBranch(pool.clones[1], branch=BRANCH)
        self.askers = askers

    def post_result(self, name: str, tree_of: str, parent: str, message: str) -> str:
        self.asker.sync()
        tip = self.asker.tip or ""
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for asker in self.askers:
            request = handoff.request_message(handoff.Request(asker, f"{now} {asker}"))
            self.asker.post_result(asker, tip, tip, request)
        self.askers = []
        return super().post_result(name, tree_of, parent, message)


def test_a_recorder_behind_more_unanswerable_requests_than_a_push_takes_lands_its_result(
    tmp_path: Path,
) -> None:
    pool = Pool(tmp_path, pool_plan([(1, True)]), 3, agent_seconds=0)
    branch = CrowdedBranch(pool, [f"a{index}" for index in range(1, CHUNK + 2)])

    result = tick(pool, branch, interrupting_agent(pool, 2))

    # Its turn came after theirs (by name); answering none of them, it still records its own.
    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "success")]
    assert marker(pool.plan(), FIRST) == "x"
    assert pool.runs() == {FIRST: 1}


def test_who_waits_is_listed_in_the_order_they_posted_and_leaves_once_answered(
    pool: Pool,
) -> None:
    first, second = (SharedBranch(pool.clones[i], branch=BRANCH) for i in (1, 0))
    first.sync()
    tip = first.tip or ""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def ask(branch: SharedBranch, name: str) -> str:
        request = handoff.request_message(handoff.Request(name, f"{now} {name}"))
        return branch.post_result(name, tip, tip, request)

    asked = ask(first, "w1")
    time.sleep(0.01)  # the posts' stamps are in milliseconds
    ask(second, "w0")

    listed = second.waiting()
    # The turn to record goes to who posted first, not to the first name.
    assert listed is not None and list(listed[1]) == ["w1", "w0"]
    assert listed[0] == tip
    assert first.withdraw(asked, "w1", handoff.assignment_message(None))
    listed = second.waiting()
    assert listed is not None and list(listed[1]) == ["w0"]
