"""A tick killed at any instant loses no committed work, and the next tick recovers.

Every test here runs the real ``memento tick`` (``python -m memento_gh``) in a real git
repository with the real fake agent ``testing/agents/scripted.py``, and kills it with SIGKILL:
- between its bookkeeping steps, through ``MEMENTO_CRASH_AT`` (the tick kills itself there);
- while its agent or its verify command runs: the test waits for a file that the agent or
  verify writes, then SIGKILLs the ``memento`` process.

A SIGKILLed tick cannot stop its agent or verify (they run in a process group of their own),
so they outlive it. The next tick must still recover: it stops the dead tick's processes
before it rolls back their work, so an orphan cannot write into the next tick's change.

After each kill a normal tick (run in the test's own process: ``run_tick``) must leave: a
plan that validates, every commit of before the kill in HEAD's history, a clean tree, and the
killed task either counted as one failed attempt (killed before its success commit) or done
(killed after it); more ticks then finish the plan.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

import pytest

from memento_gh.engine.agents.process import stop_tagged
from memento_gh.engine.tick.session import RUN_TAG
from memento_gh.plan.model import DONE, PENDING, RUNNING, Task
from memento_gh.plan.scanner import parse
from memento_gh.plan.values import format_time
from testing.agents import Action, scripted_command, scripted_env, write_script
from testing.cli import call_memento
from testing.plans import DEFAULT_META, phase_block, plan_text, task_block
from testing.processes import group_alive
from testing.repos import commit_all, git, init_repo

TASKS = ("T-101", "T-102", "T-103")
PLAN = "docs/MASTER_PLAN.md"
STATUS = "docs/TICK_STATUS.md"
#: The plan's verify lines run this hook first when the test sets it (it is unset otherwise):
#: that is how a test makes one verify run hang without changing the committed plan.
VERIFY_HOOK = "RECOVERY_VERIFY_HOOK"
DIED = "the previous tick died while running this task"
WAIT = 10.0  # seconds a test waits for a file that a child process writes


class Project(NamedTuple):
    repo: Path
    scratch: Path  # outside the repository: scripts, pid files, markers
    script: Path  # the agent's script: every task writes src/<id>.txt

    def agent_runs(self) -> list[str]:
        """The tasks the scripted agent ran, in order."""
        runs = self.scratch / "agent-runs"
        return runs.read_text(encoding="utf-8").split() if runs.exists() else []


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """The ``memento`` processes a test starts; whatever still runs at the end is killed."""
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=WAIT)


@pytest.fixture
def orphans() -> Iterator[list[int]]:
    """Process groups of agents / verify commands a test's ticks started (their ids are
    written to pid files by the test's own scripts); still-live ones are killed at the end."""
    groups: list[int] = []
    yield groups
    for group in groups:
        if group_alive(group):
            os.killpg(group, signal.SIGKILL)


def make_project(
    tmp_path: Path, *, claim: str | None = None, ignore_working_files: bool = True
) -> Project:
    """A committed repository made by ``memento init`` whose plan has three tasks; each
    task's agent writes ``src/<id>.txt`` and its verify checks that file.

    ``claim`` makes T-101 a committed ``[~]`` with that ``claimed:`` value (a worker elsewhere
    holds it). ``ignore_working_files=False`` drops the lines ``memento init`` adds to
    .gitignore for logs/, .memento.lock and .memento_alert.
    """
    repo = init_repo(tmp_path / "repo")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    done = call_memento("init", ".", "--name", "demo", cwd=repo)
    assert done.returncode == 0, done.stderr
    tasks = []
    for task_id in TASKS:
        fields = {
            "verify": f'`"${{{VERIFY_HOOK}:-true}}" && test -f src/{task_id}.txt`',
            "context_files": "[src/*]",
            "estimate": "1min",
            "retries": "0",
        }
        marker = " "
        if claim is not None and task_id == "T-101":
            marker = "~"
            fields["claimed"] = claim
        tasks.append(task_block(task_id, marker=marker, module="docs", fields=fields))
    meta = {
        **DEFAULT_META,
        "max_tasks_per_tick": "1",
        "total_tasks": str(len(TASKS)),
        "completed_tasks": "0",
        "consecutive_failed_ticks": "0",
    }
    (repo / PLAN).write_text(
        plan_text([phase_block(1, "Work", tasks, parallel=True)], meta=meta), encoding="utf-8"
    )
    if not ignore_working_files:
        (repo / ".gitignore").write_text(".aider*\n", encoding="utf-8")
    commit_all(repo, "the project")
    assert_valid(repo)
    script = write_script(
        scratch / "agent.json",
        {
            task_id: [
                {"append": str(scratch / "agent-runs"), "text": f"{task_id}\n"},
                {"write": f"src/{task_id}.txt", "text": f"{task_id}\n"},
            ]
            for task_id in TASKS
        },
    )
    return Project(repo, scratch, script)


# -- running ticks ---------------------------------------------------------------------------


def tick_env(
    project: Project, actions: Sequence[Action] | None = None, **extra: str
) -> dict[str, str]:
    """The environment of a tick: the agent follows the project's script (or ``actions``,
    for every task); ``extra`` adds variables (MEMENTO_CRASH_AT, the verify hook). The
    variables a test does not set are empty, which memento and the verify hook read as
    unset (a tick run in this process would otherwise get this process's values)."""
    env = scripted_env(script=project.script, actions=actions, state=project.scratch / "runs")
    env.update(
        dict.fromkeys(("MEMENTO_CRASH_AT", VERIFY_HOOK, "MEMENTO_AGENT", "MEMENTO_AGENT_CMD"), "")
    )
    return {**env, "NO_COLOR": "1", **extra}


def tick_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "memento_gh", "tick", "--agent-cmd", scripted_command(), *extra]


def run_tick(project: Project, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    """One normal tick, to its end, in this process (nothing kills it)."""
    argv = ["tick", "--agent-cmd", scripted_command(), *extra]
    return call_memento(*argv, cwd=project.repo, env=tick_env(project, **env))


def start_tick(
    project: Project,
    started: list[subprocess.Popen[str]],
    actions: Sequence[Action] | None = None,
    **env: str,
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        tick_argv(),
        cwd=project.repo,
        env=tick_env(project, actions, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started.append(process)
    return process


def wait_for_pid(path: Path, process: subprocess.Popen[str]) -> int:
    """The pid a child wrote to ``path``; fails when ``process`` (the tick) ends first."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        text = path.read_text(encoding="utf-8").strip() if path.exists() else ""
        if text.isdigit():
            return int(text)
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the tick ended before {path.name} appeared:\n{out}\n{err}")
        time.sleep(0.02)
    pytest.fail(f"{path} did not appear within {WAIT}s")


def sigkill(process: subprocess.Popen[str]) -> None:
    """SIGKILL the memento process alone (not its children) and check that it is dead."""
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=WAIT)
    assert process.returncode == -signal.SIGKILL


# -- reading the repository ------------------------------------------------------------------


def commits(repo: Path) -> list[str]:
    return git(repo, "rev-list", "--all").split()


def task(repo: Path, task_id: str) -> Task:
    found = parse((repo / PLAN).read_text(encoding="utf-8")).task(task_id)
    assert found is not None
    return found


def tick_trailers(repo: Path, revisions: str) -> list[str]:
    listing = git(repo, "log", "--format=%(trailers:key=Memento-Tick,valueonly)", revisions)
    return listing.split()


def status_log(repo: Path) -> str:
    return (repo / STATUS).read_text(encoding="utf-8")


def assert_valid(repo: Path) -> None:
    done = call_memento("validate", cwd=repo)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def assert_recovered(repo: Path, kept: Sequence[str]) -> None:
    """The plan validates, the tree is clean, and every commit in ``kept`` is in HEAD's
    history."""
    assert_valid(repo)
    assert git(repo, "status", "--porcelain") == ""
    history = set(git(repo, "rev-list", "HEAD").split())
    assert set(kept) <= history


def assert_plan_finishes(project: Project) -> None:
    """Further ticks run every task to done and announce it."""
    for _ in range(len(TASKS) + 1):
        done = run_tick(project)
        assert done.returncode == 0, done.stdout + done.stderr
        if all(task(project.repo, task_id).marker == DONE for task_id in TASKS):
            break
    done = run_tick(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ALL TASKS COMPLETE" in status_log(project.repo)
    assert git(project.repo, "status", "--porcelain") == ""
    assert_valid(project.repo)


# -- killed between two steps of its bookkeeping ---------------------------------------------

SUCCEEDS: list[Action] = [{"write": "src/T-101.txt", "text": "T-101\n"}]
CRASHES: list[Action] = [{"write": "src/T-101.txt", "text": "half\n"}, {"exit": 3}]


@pytest.mark.parametrize(
    ("point", "actions"),
    [
        ("marked", SUCCEEDS),
        ("claimed", SUCCEEDS),
        ("attempted", SUCCEEDS),
        ("plan-written", SUCCEEDS),
        ("status-written", SUCCEEDS),
        ("failure-plan-written", CRASHES),
    ],
)
def test_a_tick_killed_before_its_commit_counts_one_failed_attempt(
    project: Project, started: list[subprocess.Popen[str]], point: str, actions: list[Action]
) -> None:
    repo = project.repo
    before = commits(repo)
    killed = start_tick(project, started, actions, MEMENTO_CRASH_AT=point)
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert commits(repo) == before  # it died before committing anything

    second = run_tick(project)

    assert second.returncode == 0, second.stdout + second.stderr
    assert "Recovered from a tick that died while running T-101" in second.stdout
    assert_recovered(repo, before)
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.retries) == (DONE, 1)  # the dead attempt, then a success
    assert "claimed" not in t101.fields
    assert (repo / "src" / "T-101.txt").read_text(encoding="utf-8") == "T-101\n"
    assert DIED in status_log(repo)
    # the dead attempt's bookkeeping and the success: one commit each, in that order
    subjects = git(repo, "log", "--format=%s", f"{before[0]}..HEAD").splitlines()
    assert subjects == [
        "memento: complete T-101 Do the thing",
        "memento: T-101 failed (retry 1/3)",
    ]
    # the dead tick was tick 1, the one that recovered it is tick 2
    assert tick_trailers(repo, f"{before[0]}..HEAD") == ["2", "1"]
    assert parse((repo / PLAN).read_text(encoding="utf-8")).settings.total_ticks == 2
    assert_plan_finishes(project)


def test_a_tick_killed_after_its_commit_keeps_the_task_done(
    project: Project, started: list[subprocess.Popen[str]]
) -> None:
    repo = project.repo
    killed = start_tick(project, started, SUCCEEDS, MEMENTO_CRASH_AT="committed")
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    kept = commits(repo)
    assert git(repo, "log", "-1", "--format=%s").strip() == "memento: complete T-101 Do the thing"

    second = run_tick(project)

    assert second.returncode == 0, second.stdout + second.stderr
    assert "Recovered" not in second.stdout
    assert_recovered(repo, kept)
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.retries) == (DONE, 0)
    assert DIED not in status_log(repo)
    t102 = task(repo, "T-102")
    assert (t102.marker, t102.retries) == (DONE, 0)  # the second tick moved on
    assert_plan_finishes(project)


def test_a_tick_killed_while_it_recovers_a_dead_tick_is_recovered_too(
    project: Project, started: list[subprocess.Popen[str]]
) -> None:
    """The recovery's own bookkeeping can be cut short: the next tick redoes it, once."""
    repo = project.repo
    before = commits(repo)
    first = start_tick(project, started, SUCCEEDS, MEMENTO_CRASH_AT="claimed")
    first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    recovering = start_tick(project, started, MEMENTO_CRASH_AT="failure-plan-written")
    out, _ = recovering.communicate(timeout=60)
    assert recovering.returncode == -signal.SIGKILL
    assert "Recovered from a tick that died while running T-101" in out
    assert commits(repo) == before

    third = run_tick(project)

    assert third.returncode == 0, third.stdout + third.stderr
    assert_recovered(repo, before)
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.retries) == (DONE, 1)  # two ticks died, one attempt counted
    assert status_log(repo).count(f"**Error Analysis**: {DIED}") == 1
    assert_plan_finishes(project)


def test_a_recovered_tick_after_earlier_work_loses_none_of_it(
    project: Project, started: list[subprocess.Popen[str]]
) -> None:
    """Commits made by earlier ticks survive a later tick's death and its recovery."""
    repo = project.repo
    assert run_tick(project).returncode == 0
    assert task(repo, "T-101").marker == DONE
    kept = commits(repo)
    killed = start_tick(project, started, MEMENTO_CRASH_AT="status-written")
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL

    assert run_tick(project).returncode == 0

    assert_recovered(repo, kept)
    assert (repo / "src" / "T-101.txt").exists()
    t102 = task(repo, "T-102")
    assert (t102.marker, t102.retries) == (DONE, 1)
    assert_plan_finishes(project)


# -- killed while its agent or its verify runs -----------------------------------------------


def test_a_tick_killed_during_the_agent_is_recovered_and_its_agent_stopped(
    project: Project, started: list[subprocess.Popen[str]], orphans: list[int]
) -> None:
    repo = project.repo
    scratch = project.scratch
    before = commits(repo)
    late = repo / "src" / "late.txt"
    agent: list[Action] = [
        {"write": "src/T-101.txt", "text": "half done\n"},
        {"spawn_sleeper": str(scratch / "sleeper.pid")},
        {"write_pid": str(scratch / "agent.pid")},
        # Still running after the tick died, it writes once more: into the next tick's change
        # unless the next tick stops it first.
        {"sleep": 1.5},
        {"write": str(late), "text": "written by the dead tick's agent\n"},
        {"sleep": 60},
    ]
    killed = start_tick(project, started, agent)
    agent_pid = wait_for_pid(scratch / "agent.pid", killed)
    orphans.append(os.getpgid(agent_pid))
    sleeper_pid = int((scratch / "sleeper.pid").read_text(encoding="utf-8"))
    killed_at = time.monotonic()
    sigkill(killed)
    # memento died without cleaning up: its agent (and the agent's child) still run.
    assert group_alive(agent_pid)
    assert os.getpgid(sleeper_pid) == agent_pid
    assert (repo / "src" / "T-101.txt").exists()
    assert task(repo, "T-101").marker == RUNNING

    second = run_tick(project)

    assert second.returncode == 0, second.stdout + second.stderr
    assert not group_alive(agent_pid)  # the next tick stopped the dead tick's agent
    time.sleep(max(0.0, killed_at + 2.0 - time.monotonic()))  # past the orphan's late write
    assert not late.exists()
    assert "src/late.txt" not in git(repo, "log", "--all", "--name-only", "--format=")
    assert_recovered(repo, before)
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.retries) == (DONE, 1)
    assert (repo / "src" / "T-101.txt").read_text(encoding="utf-8") == "T-101\n"
    assert DIED in status_log(repo)
    assert_plan_finishes(project)


def test_a_tick_killed_during_verify_is_recovered_and_its_verify_stopped(
    project: Project, started: list[subprocess.Popen[str]], orphans: list[int]
) -> None:
    repo = project.repo
    pid_file = project.scratch / "verify.pid"
    hook = project.scratch / "hang.sh"
    hook.write_text(
        f"#!/bin/sh\necho $$ > '{pid_file}.partial' && mv '{pid_file}.partial' '{pid_file}'\n"
        "exec sleep 60\n",
        encoding="utf-8",
    )
    hook.chmod(0o755)
    before = commits(repo)
    killed = start_tick(project, started, **{VERIFY_HOOK: str(hook)})
    verify_pid = wait_for_pid(pid_file, killed)
    verify_group = os.getpgid(verify_pid)
    orphans.append(verify_group)
    sigkill(killed)
    assert group_alive(verify_group)  # memento could not stop its verify command

    second = run_tick(project)

    assert second.returncode == 0, second.stdout + second.stderr
    assert not group_alive(verify_group)
    assert_recovered(repo, before)
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.retries) == (DONE, 1)
    assert DIED in status_log(repo)
    assert_plan_finishes(project)


def test_a_dead_ticks_agent_that_already_ended_does_not_stop_the_next_tick(
    project: Project, started: list[subprocess.Popen[str]], orphans: list[int]
) -> None:
    """The orphan may be gone by the time the next tick runs; recovery just rolls back."""
    repo = project.repo
    scratch = project.scratch
    agent: list[Action] = [
        {"write": "src/T-101.txt", "text": "half\n"},
        {"write_pid": str(scratch / "agent.pid")},
        {"sleep": 0.3},
    ]
    killed = start_tick(project, started, agent)
    agent_pid = wait_for_pid(scratch / "agent.pid", killed)
    orphans.append(os.getpgid(agent_pid))
    sigkill(killed)
    deadline = time.monotonic() + WAIT
    while group_alive(agent_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(agent_pid)

    second = run_tick(project)

    assert second.returncode == 0, second.stdout + second.stderr
    assert_recovered(repo, commits(repo))
    assert (task(repo, "T-101").marker, task(repo, "T-101").retries) == (DONE, 1)


def test_only_processes_with_the_dead_ticks_tag_are_stopped(tmp_path: Path) -> None:
    """The tag, not a remembered group id, picks what recovery stops."""
    sleepers = {
        tag: subprocess.Popen(
            ["sleep", "60"], env={**os.environ, RUN_TAG: tag}, start_new_session=True
        )
        for tag in ("dead-tick", "other-tick")
    }
    try:
        stopped = stop_tagged(RUN_TAG, "dead-tick", grace=1.0)
        assert stopped == [sleepers["dead-tick"].pid]
        assert sleepers["dead-tick"].wait(timeout=WAIT) == -signal.SIGTERM
        assert sleepers["other-tick"].poll() is None
        assert stop_tagged(RUN_TAG, "dead-tick", grace=1.0) == []
    finally:
        for sleeper in sleepers.values():
            if sleeper.poll() is None:
                sleeper.kill()
            sleeper.wait(timeout=WAIT)


# -- a claim committed by a worker that died elsewhere ---------------------------------------


def claim_at(moment: datetime) -> str:
    return f"{format_time(moment)} ci-runner-7-4242"


def test_a_stale_committed_claim_is_reset_and_the_task_runs(tmp_path: Path) -> None:
    """A [~] older than stale_lock_timeout (15min) is a worker that died: back to [ ]."""
    old = datetime.now(timezone.utc) - timedelta(minutes=16)
    project = make_project(tmp_path, claim=claim_at(old))
    repo = project.repo
    kept = commits(repo)

    done = run_tick(project)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Reset stale claims: T-101" in done.stdout
    assert "Stale [~] detected on T-101, reset to [ ]" in status_log(repo)
    assert_recovered(repo, kept)
    subjects = git(repo, "log", "--format=%s", f"{kept[0]}..HEAD").splitlines()
    assert subjects == [
        "memento: complete T-101 Do the thing",
        "memento: reset stale claim on T-101",
    ]
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.retries) == (DONE, 0)
    assert "claimed" not in t101.fields
    assert_plan_finishes(project)


def test_a_tick_killed_while_resetting_a_stale_claim_is_recovered(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    project = make_project(tmp_path, claim="2020-01-01T00:00:00Z old-runner-1")
    repo = project.repo
    kept = commits(repo)
    killed = start_tick(project, started, MEMENTO_CRASH_AT="stale-reset-written")
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert commits(repo) == kept
    assert git(repo, "status", "--porcelain") != ""  # the reset, written but not committed

    done = run_tick(project)

    assert done.returncode == 0, done.stdout + done.stderr
    assert_recovered(repo, kept)
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.retries) == (DONE, 0)
    assert status_log(repo).count("Stale [~] detected on T-101") == 1
    assert_plan_finishes(project)


def test_a_claim_from_long_ago_is_reset(tmp_path: Path) -> None:
    project = make_project(tmp_path, claim="2020-01-01T00:00:00Z old-runner-1")
    done = run_tick(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert task(project.repo, "T-101").marker == DONE
    assert_recovered(project.repo, [])


def test_a_fresh_committed_claim_is_left_alone(tmp_path: Path) -> None:
    """A [~] younger than stale_lock_timeout belongs to a worker that may still run it."""
    claim = claim_at(datetime.now(timezone.utc) - timedelta(minutes=14))
    project = make_project(tmp_path, claim=claim)
    repo = project.repo
    kept = commits(repo)

    done = run_tick(project)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Reset stale" not in done.stdout
    assert "Stale" not in status_log(repo)
    assert_recovered(repo, kept)
    t101 = task(repo, "T-101")
    assert (t101.marker, t101.raw("claimed"), t101.retries) == (RUNNING, claim, 0)
    assert not (repo / "src" / "T-101.txt").exists()
    assert task(repo, "T-102").marker == DONE  # the tick ran another task instead
    assert project.agent_runs() == ["T-102"]


# -- two ticks at once -----------------------------------------------------------------------


def test_two_ticks_started_together_run_one_task(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    # No .gitignore entry for the lock file: the tick itself must keep it out of commits.
    project = make_project(tmp_path, ignore_working_files=False)
    repo = project.repo
    before = commits(repo)
    agent_runs = project.scratch / "agent-runs"
    # The winner's agent holds the lock until the loser has given up (it logs the skip),
    # and for a minute if it never does: however busy the machine, the two overlap.
    slow: list[Action] = [
        {"append": str(agent_runs), "text": "run\n"},
        {"wait_for": "logs/memento.log", "seconds": 60},
        {"write": "src/T-101.txt", "text": "T-101\n"},
    ]
    env = tick_env(project, slow)
    ticks = [
        subprocess.Popen(
            tick_argv(),
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    started += ticks
    start = time.monotonic()
    ended: dict[int, float] = {}
    while len(ended) < 2 and time.monotonic() - start < 30:
        for index, process in enumerate(ticks):
            if index not in ended and process.poll() is not None:
                ended[index] = time.monotonic() - start
        time.sleep(0.02)
    outputs = [process.communicate(timeout=WAIT) for process in ticks]

    assert [process.returncode for process in ticks] == [0, 0], outputs
    skipped = [index for index, (out, _) in enumerate(outputs) if "Tick skipped" in out]
    assert len(skipped) == 1, outputs
    loser, winner = skipped[0], 1 - skipped[0]
    assert ended[loser] < 15  # it did not wait for the lock, held for up to a minute
    assert ended[loser] < ended[winner]
    assert "T-101 success" in outputs[winner][0]
    assert agent_runs.read_text(encoding="utf-8") == "run\n"  # one agent ran, once
    t101, t102 = task(repo, "T-101"), task(repo, "T-102")
    assert (t101.marker, t101.retries) == (DONE, 0)
    assert (t102.marker, t102.retries) == (PENDING, 0)
    assert parse((repo / PLAN).read_text(encoding="utf-8")).settings.total_ticks == 1
    new = git(repo, "rev-list", f"{before[0]}..HEAD").split()
    assert len(new) == 1
    assert ".memento.lock" not in git(repo, "log", "--all", "--name-only", "--format=")
    assert ".memento.lock" not in git(repo, "ls-files")
    assert_valid(repo)
