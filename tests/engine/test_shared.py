"""Ticks on a branch shared with other workers (``TickConfig.shared``): claims pushed before
the agent runs, results made again on the remote's new tip after a rejected push.

Each test has a bare ``origin`` and clones of it. The races are real: another clone pushes
(with a real ``memento tick --push`` or a plain commit) at the moment the test chooses, from
inside ``publish`` of a ``SharedBranch`` whose first pushes run that step first.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memento_gh.engine.pool.branch import ABANDONED
from memento_gh.engine.records import TickResult
from memento_gh.engine.tick.steps import TickConfig, run_tick, utc_now
from memento_gh.gitrun import NetworkError
from memento_gh.layout import Layout
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from memento_gh.remote import RESULTS, SharedBranch
from testing.cli import call_memento, run_memento
from testing.repos import clone, commit_all, git
from testing.workers import BRANCH, Pool, pool_plan

FIRST, SECOND, THIRD = "T-1001", "T-1002", "T-1003"


class RacingBranch(SharedBranch):
    """A real shared branch whose ``publish`` runs ``before[n]`` ahead of its n-th push: the
    other worker's push lands first, exactly between this tick's commit and its push."""

    def __init__(
        self, root: Path, before: dict[int, Callable[[], None]], attempts: int = 30
    ) -> None:
        super().__init__(root, branch=BRANCH, sleep=lambda seconds: None, attempts=attempts)
        self.before = before
        self.pushes = 0
        self.landed: list[bool] = []

    def publish(self) -> bool:
        self.pushes += 1
        step = self.before.get(self.pushes)
        if step is not None:
            step()
        landed = super().publish()
        self.landed.append(landed)
        return landed


@pytest.fixture
def pool(tmp_path: Path) -> Pool:
    return Pool(tmp_path, pool_plan([(3, True)]), 3, agent_seconds=0)


def tick(
    pool: Pool,
    index: int,
    branch: SharedBranch | None = None,
    clock: Callable[[], datetime] = utc_now,
    **env: str,
) -> TickResult:
    """One tick in clone ``index`` (0-based), in this process, with the sleepy agent."""
    root = pool.clones[index]
    config = TickConfig(
        agent="command",
        agent_cmd=pool.agent_command(),
        worker_id=f"w{index}",
        shared=branch or SharedBranch(root, branch=BRANCH),
    )
    return run_tick(Layout(root), config, clock=clock, environ=pool.env(env), say=lambda line: None)


def tick_process(pool: Pool, index: int) -> subprocess.CompletedProcess[str]:
    """A whole ``memento tick --push`` in clone ``index``: another worker, for real."""
    done = run_memento(
        "tick",
        "--push",
        "--worker-id",
        f"w{index}",
        "--agent-cmd",
        pool.agent_command(),
        cwd=pool.clones[index],
        env=pool.env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def tick_killed_at(pool: Pool, point: str) -> None:
    """A ``memento tick --push`` in clone 0 that dies (SIGKILL) at checkpoint ``point``."""
    crashed = run_memento(
        "tick",
        "--push",
        "--worker-id",
        "w0",
        "--agent-cmd",
        pool.agent_command(),
        cwd=pool.clones[0],
        env=pool.env({"MEMENTO_CRASH_AT": point}),
    )
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr


def push_edit(pool: Pool, index: int, edit: Callable[[Path], None], message: str) -> None:
    """Another clone changes files and pushes, as a human or a worker would."""
    root = pool.clones[index]
    git(root, "pull", "-q", "--ff-only")
    edit(root)
    commit_all(root, message)
    git(root, "push", "-q", "origin", BRANCH)


def remote_plan(pool: Pool) -> Plan:
    return pool.plan()


def marker(plan: Plan, task_id: str) -> str:
    found = plan.task(task_id)
    assert found is not None
    return found.marker


def test_a_claim_is_pushed_before_the_agent_runs_and_the_result_after(pool: Pool) -> None:
    result = tick(pool, 0)

    assert [outcome.task_id for outcome in result.tasks] == [FIRST]
    history = pool.history()
    assert [c.subject.split(" ")[1] for c in history.commits[1:]] == ["claim", "complete"]
    assert {c.worker for c in history.commits[1:]} == {"w0"}
    plan = remote_plan(pool)
    assert marker(plan, FIRST) == "x"
    assert plan.settings.total_ticks == 1
    assert plan.settings.completed_tasks == 1
    assert (pool.clones[0] / "out" / f"{FIRST}.txt").exists()
    assert git(pool.clones[0], "status", "--porcelain") == ""


def test_a_lost_claim_race_picks_the_next_task(pool: Pool) -> None:
    # Worker 1 finishes T-1001 between worker 0's claim commit and its push.
    branch = RacingBranch(pool.clones[0], {1: lambda: tick_process(pool, 1)})

    result = tick(pool, 0, branch)

    assert [outcome.task_id for outcome in result.tasks] == [SECOND]
    history = pool.history()
    assert history.claims() == {FIRST: 1, SECOND: 1}
    assert history.completions() == {FIRST: 1, SECOND: 1}
    assert pool.runs() == {FIRST: 1, SECOND: 1}
    assert [c.worker for c in history.of_kind("memento: complete")] == ["w1", "w0"]
    plan = remote_plan(pool)
    assert plan.settings.total_ticks == 2
    assert plan.settings.completed_tasks == 2


def test_a_rejected_result_is_made_again_on_the_new_tip(pool: Pool) -> None:
    # Worker 1 claims and finishes T-1002 while worker 0's agent works on T-1001.
    branch = RacingBranch(pool.clones[0], {2: lambda: tick_process(pool, 1)})

    result = tick(pool, 0, branch)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "success")]
    assert branch.landed[:3] == [True, False, True]  # the claim, the result twice
    plan = remote_plan(pool)
    assert (marker(plan, FIRST), marker(plan, SECOND)) == ("x", "x")
    assert plan.settings.completed_tasks == 2
    assert plan.settings.total_ticks == 2  # worker 0's tick 1 did not take back tick 2
    status = pool.show("docs/TICK_STATUS.md")
    assert FIRST in status and SECOND in status
    assert pool.show(f"out/{FIRST}.txt") == f"{FIRST} done\n"
    assert pool.show(f"out/{SECOND}.txt") == f"{SECOND} done\n"
    assert pool.history().completions() == {FIRST: 1, SECOND: 1}


def test_a_result_rejected_more_often_than_a_claim_may_be_still_lands_while_its_claim_lives(
    pool: Pool,
) -> None:
    # Three tries for a claim; the result is rejected five times, by five other commits.
    def other(number: int) -> Callable[[], None]:
        def edit(root: Path) -> None:
            (root / "out" / f"other-{number}.txt").write_text("x\n", encoding="utf-8")

        return lambda: push_edit(pool, 1, edit, f"another worker's commit {number}")

    branch = RacingBranch(pool.clones[0], {n: other(n) for n in range(2, 7)}, attempts=3)

    result = tick(pool, 0, branch)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "success")]
    assert result.tasks[0].pushes == 6
    assert branch.landed[:7] == [True, False, False, False, False, False, True]
    plan = remote_plan(pool)
    assert marker(plan, FIRST) == "x"
    assert plan.settings.completed_tasks == 1 and plan.settings.total_ticks == 1
    assert pool.history().completions() == {FIRST: 1}
    assert pool.show(f"out/{FIRST}.txt") == f"{FIRST} done\n"
    assert pool.show("out/other-6.txt") == "x\n"


def test_a_result_that_cannot_land_before_its_claim_goes_stale_says_why(pool: Pool) -> None:
    def other(number: int) -> Callable[[], None]:
        def edit(root: Path) -> None:
            (root / "out" / f"other-{number}.txt").write_text("x\n", encoding="utf-8")

        return lambda: push_edit(pool, 1, edit, f"another worker's commit {number}")

    branch = RacingBranch(pool.clones[0], {n: other(n) for n in range(2, 9)}, attempts=3)
    # Once the result's first push is rejected, the clock is 20 minutes on: the claim
    # (stale_lock_timeout 15min) is stale by the time the claim's three tries are spent.
    start = datetime.now(timezone.utc)

    def clock() -> datetime:
        return start + timedelta(minutes=20 if branch.pushes >= 2 else 0)

    root = pool.clones[0]
    config = TickConfig(
        agent="command", agent_cmd=pool.agent_command(), worker_id="w0", shared=branch
    )

    result = run_tick(Layout(root), config, clock=clock, environ=pool.env(), say=lambda line: None)

    [outcome] = result.tasks
    assert (outcome.task_id, outcome.outcome, outcome.pushes) == (FIRST, "unpublished", 3)
    assert "stale_lock_timeout" in outcome.message
    assert marker(remote_plan(pool), FIRST) == "~"  # left for the stale reset to recover
    assert pool.history().completions() == {}


def test_a_result_whose_files_changed_meanwhile_fails_and_keeps_the_other_change(
    pool: Pool,
) -> None:
    def overwrite(root: Path) -> None:
        (root / "out" / f"{FIRST}.txt").write_text("a human got there first\n")

    branch = RacingBranch(
        pool.clones[0], {2: lambda: push_edit(pool, 1, overwrite, "a human writes it")}
    )

    result = tick(pool, 0, branch)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "failed")]
    assert "no longer applies" in result.tasks[0].message
    plan = remote_plan(pool)
    task = plan.task(FIRST)
    assert task is not None and (task.marker, task.retries) == (" ", 1)
    assert pool.show(f"out/{FIRST}.txt") == "a human got there first\n"
    assert git(pool.clones[0], "status", "--porcelain") == ""


def test_a_result_whose_claim_was_reset_meanwhile_is_dropped(pool: Pool) -> None:
    def reset_claim(root: Path) -> None:
        plan = root / "docs" / "MASTER_PLAN.md"
        lines = plan.read_text().splitlines(keepends=True)
        kept = [line for line in lines if "claimed:" not in line]
        plan.write_text("".join(kept).replace(f"- [~] `{FIRST}`", f"- [ ] `{FIRST}`"))

    branch = RacingBranch(
        pool.clones[0], {2: lambda: push_edit(pool, 1, reset_claim, "reset the claim")}
    )

    result = tick(pool, 0, branch)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "lost")]
    plan = remote_plan(pool)
    assert marker(plan, FIRST) == " "
    assert "was dropped" in pool.show("docs/TICK_STATUS.md")
    assert pool.history().completions() == {}
    assert git(pool.clones[0], "status", "--porcelain") == ""


def test_a_stale_claim_of_a_dead_worker_is_reset_and_run(pool: Pool) -> None:
    old = (datetime.now(timezone.utc) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def dead_claim(root: Path) -> None:
        plan = root / "docs" / "MASTER_PLAN.md"
        text = plan.read_text().replace(f"- [ ] `{FIRST}`", f"- [~] `{FIRST}`", 1)
        plan.write_text(
            text.replace("  - retries: 0\n", f"  - retries: 0\n  - claimed: {old} ghost\n", 1)
        )

    push_edit(pool, 1, dead_claim, "a worker claimed it and died")

    result = tick(pool, 0)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "success")]
    subjects = [c.subject for c in pool.history().commits]
    assert f"memento: reset stale claim on {FIRST}" in subjects


def test_a_worker_killed_after_its_claim_landed_fails_that_attempt_on_the_remote(
    pool: Pool,
) -> None:
    tick_killed_at(pool, "attempted")
    assert marker(remote_plan(pool), FIRST) == "~"

    result = tick(pool, 0)

    plan = remote_plan(pool)
    task = plan.task(FIRST)
    assert task is not None and task.retries == 1
    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "success")]
    assert marker(plan, FIRST) == "x"
    assert "died while running" in pool.show("docs/TICK_STATUS.md")
    assert git(pool.clones[0], "status", "--porcelain") == ""


def test_a_dead_ticks_attempt_is_recorded_however_often_the_branch_moves_meanwhile(
    pool: Pool,
) -> None:
    tick_killed_at(pool, "attempted")

    def other(number: int) -> Callable[[], None]:
        def edit(root: Path) -> None:
            (root / "out" / f"other-{number}.txt").write_text("x\n", encoding="utf-8")

        return lambda: push_edit(pool, 1, edit, f"another worker's commit {number}")

    # Three tries for bookkeeping; the dead tick's record is rejected five times.
    branch = RacingBranch(pool.clones[0], {n: other(n) for n in range(1, 6)}, attempts=3)

    tick(pool, 0, branch)

    assert branch.landed[:6] == [False] * 5 + [True]
    assert "died while running" in pool.show("docs/TICK_STATUS.md")
    task = remote_plan(pool).task(FIRST)
    assert task is not None and task.retries == 1


def test_a_worker_killed_before_its_claim_landed_leaves_nothing_behind(pool: Pool) -> None:
    tick_killed_at(pool, "marked")

    result = tick(pool, 0)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "success")]
    task = remote_plan(pool).task(FIRST)
    assert task is not None and task.retries == 0
    assert pool.history().claims() == {FIRST: 1}


def test_a_humans_local_commit_is_pushed_not_dropped(pool: Pool) -> None:
    root = pool.clones[0]
    (root / "NOTES.txt").write_text("mine\n")
    commit_all(root, "a human's local commit")

    tick(pool, 0)

    assert pool.show("NOTES.txt") == "mine\n"
    assert "a human's local commit" in [c.subject for c in pool.history().commits]


def test_a_sequential_phase_never_runs_two_tasks_at_once(tmp_path: Path) -> None:
    pool = Pool(tmp_path, pool_plan([(3, False)]), 2, agent_seconds=0)
    # Worker 1 ticks while worker 0's T-1001 is claimed: the phase is busy.
    branch = RacingBranch(pool.clones[0], {2: lambda: tick_process(pool, 1)})

    tick(pool, 0, branch)

    history = pool.history()
    assert history.claims() == {FIRST: 1}
    assert history.overlaps({FIRST, SECOND, THIRD}) == []


def test_an_unreachable_remote_is_a_clear_error_and_pauses_nothing(pool: Pool) -> None:
    root = pool.clones[0]
    git(root, "remote", "set-url", "origin", os.fspath(pool.folder / "gone.git"))
    branch = SharedBranch(root, branch=BRANCH)  # the URL is read now, before any agent runs

    with pytest.raises(NetworkError, match="could not fetch"):
        tick(pool, 0, branch)

    assert parse((root / "docs" / "MASTER_PLAN.md").read_text()).settings.tick_mode == "auto"


def test_tick_push_on_a_detached_head_names_the_fix(pool: Pool) -> None:
    root = pool.clones[0]
    git(root, "checkout", "-q", "--detach")

    done = call_memento("tick", "--push", "--agent-cmd", "true", cwd=root, env=pool.env())

    assert done.returncode == 1
    assert "HEAD is detached" in done.stderr and "git switch" in done.stderr


def test_every_worker_history_entry_names_its_worker(tmp_path: Path) -> None:
    pool = Pool(tmp_path, pool_plan([(2, True)]), 2, agent_seconds=0)
    tick(pool, 0)
    tick(pool, 1)

    workers = [c.worker for c in pool.history().commits[1:] if c.task]
    assert workers == ["w0", "w0", "w1", "w1"]
    assert clone(pool.origin, tmp_path / "check").exists()


def test_a_worker_id_that_would_break_the_claim_line_is_refused(pool: Pool) -> None:
    done = call_memento(
        "tick", "--worker-id", "two words", "--agent-cmd", "true", cwd=pool.clones[0]
    )

    assert done.returncode == 1
    assert "--worker-id: a worker id is one word" in done.stderr
    assert pool.history().claims() == {}


def interrupting_agent(pool: Pool, index: int) -> str:
    """The sleepy agent, after which clone ``index`` pushes a commit of its own: the
    branch moves between the agent's run and its result's first push."""
    other = shlex.quote(os.fspath(pool.clones[index]))
    sleepy = pool.agent_command().removesuffix(" {task_id} {repo}")
    script = (
        f'{sleepy} "$1" "$2" && git -C {other} pull -q --ff-only && '
        f"git -C {other} commit -q --allow-empty -m 'another commit' && "
        f"git -C {other} push -q origin {BRANCH}"
    )
    return f"sh -c {shlex.quote(script)} agent {{task_id}} {{repo}}"


def tick_killed_after_posting(pool: Pool) -> None:
    """A ``memento tick --push`` in clone 0 whose result is rejected, so posted on its own
    ref, and which dies (SIGKILL) right after posting it."""
    crashed = run_memento(
        "tick",
        "--push",
        "--worker-id",
        "w0",
        "--agent-cmd",
        interrupting_agent(pool, 2),
        cwd=pool.clones[0],
        env=pool.env({"MEMENTO_CRASH_AT": "posted"}),
    )
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    posted = git(pool.origin, "for-each-ref", "--format=%(refname)", RESULTS)
    assert posted.strip() == RESULTS + "w0"


def test_a_result_another_worker_recorded_is_done_without_pushing_again(pool: Pool) -> None:
    # Worker 1 lands T-1002 before worker 0's result: that is posted. Worker 2 then claims
    # T-1003 in a push that records worker 0's T-1001 as well, before worker 0 pushes again.
    branch = RacingBranch(
        pool.clones[0], {2: lambda: tick_process(pool, 1), 3: lambda: tick_process(pool, 2)}
    )

    result = tick(pool, 0, branch)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "success")]
    assert result.tasks[0].pushes == 2
    assert branch.landed[:3] == [True, False, False]  # the claim, the result once, then done
    assert pool.runs() == {FIRST: 1, SECOND: 1, THIRD: 1}
    history = pool.history()
    assert history.completions() == {FIRST: 1, SECOND: 1, THIRD: 1}
    [first] = [c for c in history.of_kind("memento: complete") if c.task == FIRST]
    assert first.worker == "w0"  # recorded by worker 2, under the name of who ran it
    plan = remote_plan(pool)
    assert plan.settings.completed_tasks == 3 and plan.settings.total_ticks == 3
    status = pool.show("docs/TICK_STATUS.md")
    assert status.count("✅ SUCCESS") == 3
    assert pool.show(f"out/{FIRST}.txt") == f"{FIRST} done\n"
    # The ref now holds a note of how it ended: nobody records it again.
    note = git(pool.origin, "log", "-1", "--format=%s", f"{RESULTS}w0").strip()
    assert note == f"memento: recorded {FIRST}"


def test_a_worker_killed_after_posting_its_result_loses_nothing(pool: Pool) -> None:
    tick_killed_after_posting(pool)
    assert marker(remote_plan(pool), FIRST) == "~"

    result = tick(pool, 1)  # another worker records it with its own claim

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(SECOND, "success")]
    plan = remote_plan(pool)
    task = plan.task(FIRST)
    assert task is not None and (task.marker, task.retries) == ("x", 0)
    assert pool.show(f"out/{FIRST}.txt") == f"{FIRST} done\n"
    # The killed worker, started again, finds its run recorded: nothing died, nothing reruns.
    tick(pool, 0)
    assert pool.runs() == {FIRST: 1, SECOND: 1, THIRD: 1}
    assert "died while running" not in pool.show("docs/TICK_STATUS.md")
    plan = remote_plan(pool)
    assert plan.settings.completed_tasks == 3 and plan.settings.total_ticks == 3
    assert git(pool.clones[0], "status", "--porcelain") == ""


def test_a_worker_killed_after_posting_records_its_result_when_started_again(pool: Pool) -> None:
    tick_killed_after_posting(pool)

    result = tick(pool, 0)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(SECOND, "success")]
    task = remote_plan(pool).task(FIRST)
    assert task is not None and (task.marker, task.retries) == ("x", 0)
    assert pool.runs() == {FIRST: 1, SECOND: 1}
    status = pool.show("docs/TICK_STATUS.md")
    assert status.count("✅ SUCCESS") == 2 and "died while running" not in status
    assert pool.history().completions() == {FIRST: 1, SECOND: 1}


def test_a_worker_killed_while_it_asked_for_a_task_has_that_attempt_counted(
    pool: Pool,
) -> None:
    tick_killed_after_posting(pool)
    # With a result waiting, worker 1 asks the pool for a task, and dies once it asked.
    crashed = run_memento(
        "tick",
        "--push",
        "--worker-id",
        "w1",
        "--agent-cmd",
        pool.agent_command(),
        cwd=pool.clones[1],
        env=pool.env({"MEMENTO_CRASH_AT": "requested"}),
    )
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr

    # Worker 2 records worker 0's result and claims a task for worker 1 and one for itself,
    # in one push, once worker 0 (first by name, dead) kept still long enough.
    result = tick(pool, 2)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(THIRD, "success")]
    plan = remote_plan(pool)
    assert (marker(plan, FIRST), marker(plan, SECOND)) == ("x", "~")
    # Worker 1 started again finds the claim made for it, and counts the attempt.
    result = tick(pool, 1)

    task = remote_plan(pool).task(SECOND)
    assert task is not None and (task.marker, task.retries) == ("x", 1)
    assert [(o.task_id, o.outcome) for o in result.tasks] == [(SECOND, "success")]
    assert "died while running" in pool.show("docs/TICK_STATUS.md")
    assert pool.runs() == {FIRST: 1, SECOND: 1, THIRD: 1}
    assert pool.history().claims() == {FIRST: 1, SECOND: 2, THIRD: 1}


class BusyBranch(SharedBranch):
    """A real shared branch around which another clone pushes a commit of its own at each
    of the first ``moves`` waits (instead of sleeping): the branch moves while this worker
    waits. It counts the fetches that stand on the remote's tip again."""

    def __init__(self, pool: Pool, index: int, moves: int) -> None:
        super().__init__(pool.clones[index], branch=BRANCH, sleep=self._other_pushes)
        self.pool = pool
        self.moves = moves
        self.refreshes = 0

    def _other_pushes(self, seconds: float) -> None:
        if self.moves > 0:
            self.moves -= 1
            push_edit(self.pool, 1, lambda root: None, "another worker's commit")

    def refresh(self) -> None:
        self.refreshes += 1
        super().refresh()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_waiting_worker_whose_turn_it_is_not_fetches_only_when_its_turn_may_come(
    pool: Pool,
) -> None:
    # Worker 0 posts its result and dies: it is first by name, so the turn to record is its.
    tick_killed_after_posting(pool)
    # Worker 2 asks the pool for a task and waits for worker 0, while the branch moves at
    # each of its waits: neither its own ref nor worker 0's moved, so it does not fetch.
    branch = BusyBranch(pool, 2, moves=6)

    result = tick(pool, 2, branch)

    # Not even to read back its own post: one fetch, once its patience ran out, when it
    # records it all.
    assert branch.refreshes == 1, branch.refreshes
    assert [(o.task_id, o.outcome) for o in result.tasks] == [(SECOND, "success")]
    assert pool.history().completions() == {FIRST: 1, SECOND: 1}
    assert pool.runs() == {FIRST: 1, SECOND: 1}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_worker_left_without_a_task_still_lands_the_results_it_recorded(
    tmp_path: Path,
) -> None:
    pool = Pool(tmp_path, pool_plan([(1, True)]), 3, agent_seconds=0)
    tick_killed_after_posting(pool)  # worker 0's result for the only task waits, posted
    branch = SharedBranch(pool.clones[1], branch=BRANCH, sleep=lambda seconds: None)

    # Fresh, the post is its worker's to record: worker 1, with no task to ask for, stays
    # out of the way (no request, no push).
    assert tick(pool, 1, branch).tasks == ()
    assert marker(remote_plan(pool), FIRST) == "~"
    posted = git(pool.origin, "for-each-ref", "--format=%(refname)", RESULTS)
    assert posted.strip() == RESULTS + "w0"

    # Once it looks abandoned, worker 1 asks for a task, finds none left once it recorded
    # worker 0's result, and pushes that result before it takes its request back.
    later = datetime.now(timezone.utc) + timedelta(seconds=ABANDONED)
    result = tick(pool, 1, branch, clock=lambda: later)

    assert result.tasks == ()
    assert marker(remote_plan(pool), FIRST) == "x"
    assert pool.history().completions() == {FIRST: 1}
    assert pool.runs() == {FIRST: 1}
    refs = git(pool.origin, "for-each-ref", "--format=%(refname) %(subject)", RESULTS)
    assert f"{RESULTS}w0 memento: recorded {FIRST}" in refs
