"""A provider limit ends the task run ``deferred``, not failed (issue #14, item 4): the change
is rolled back and the claim released, no retry is counted, the circuit breaker's count
stays, no further task runs in the tick, and the status entry says what the agent said and
when to try again. Real ticks, real git, the fake agent printing each CLI's real words."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento_gh.dashboard.snapshot import build
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.layout import Layout
from memento_gh.remote import SharedBranch
from testing.agents import Action, scripted_command, scripted_env
from testing.ticks import GUARD, Project, make_project, one_phase, plan_of, task
from testing.workers import BRANCH, Pool, pool_plan
from tests.engine.test_shared import RacingBranch, tick_process

RATE_LIMITED = (
    "API Error: Request rejected (429) · This request would exceed your organization's rate "
    "limit. Please try again later."
)
SESSION_LIMIT = "You've hit your session limit · resets 9:57pm (UTC)"


def claude_limited(text: str = RATE_LIMITED, status: int = 429) -> list[Action]:
    """What claude prints when its provider refuses: the result JSON, then exit 1."""
    return [
        {"claude_result": {"is_error": True, "api_error_status": status, "result": text}},
        {"exit": 1},
    ]


def aider_limited() -> list[Action]:
    """aider gives up after its retries and exits 0; only its last lines tell."""
    return [
        {"print": "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your"},
        {"print": "current quota, please check your plan and billing details."},
        {"print": "The API provider has rate limited you. Try again later or check your quotas."},
    ]


def setting(project: Project, name: str) -> object:
    return getattr(project.plan().settings, name)


def retries(project: Project, task_id: str) -> int:
    found = project.plan().task(task_id)
    assert found is not None
    return found.retries


@pytest.mark.timeout(60)
def test_a_rate_limited_agent_defers_its_task_and_its_change_is_rolled_back(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": [{"write": "src/a.py", "text": "A = 'half'\n"}, *claude_limited()]})

    done = project.tick()

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == " "
    assert "claimed" not in project.plan_path.read_text(encoding="utf-8")
    assert retries(project, "T-101") == 0
    assert setting(project, "consecutive_failed_ticks") == 0
    assert setting(project, "tick_mode") == "auto"
    assert not (project.root / "src" / "a.py").exists()
    assert project.dirty() == []
    entry = project.entries()[-1]
    assert entry.outcome == "deferred"
    assert entry.fields["Provider Limit"] == RATE_LIMITED
    assert "Try Again" not in entry.fields  # "try again later" names no time
    assert entry.fields["Status"].startswith("⏳ DEFERRED")
    assert "Agent Failure" not in entry.fields
    assert project.subjects()[0].startswith("memento: T-101 deferred")
    assert f"deferred: provider limit, no retry counted: {RATE_LIMITED}" in done.stdout
    assert "tick: ran — T-101 deferred" in done.stdout


@pytest.mark.timeout(60)
def test_the_status_entry_says_when_to_try_again(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": claude_limited(SESSION_LIMIT)})

    done = project.tick()

    entry = project.entries()[-1]
    assert entry.outcome == "deferred"
    assert entry.fields["Provider Limit"] == SESSION_LIMIT
    when = entry.fields["Try Again"]
    assert when.endswith("Z (resets 9:57pm (UTC))") and "T21:57:00Z" in when
    assert f"T-101 deferred (try again {when})" in done.stdout


@pytest.mark.timeout(180)
def test_five_deferred_ticks_in_a_row_pause_nothing(tmp_path: Path) -> None:
    plan = plan_of(
        [one_phase(task("T-101"), task("T-102"), task("T-103"))],
        circuit_breaker_threshold="3",
        max_retries="2",
        max_deferrals="10",  # deferrals in a row have a bound of their own (issue #27)
    )
    project = make_project(tmp_path, plan)
    project.script({"*": claude_limited(SESSION_LIMIT)})

    for _ in range(5):
        done = project.tick()
        assert done.returncode == 0, done.stdout + done.stderr

    assert [entry.outcome for entry in project.entries()] == ["deferred"] * 5
    assert setting(project, "tick_mode") == "auto"
    assert setting(project, "consecutive_failed_ticks") == 0
    assert setting(project, "total_ticks") == 5
    assert [retries(project, task_id) for task_id in ("T-101", "T-102", "T-103")] == [0, 0, 0]
    assert [task.marker for task in project.plan().tasks] == [" ", " ", " "]
    assert not any("CIRCUIT BREAKER" in event for event in project.events())
    assert not (project.root / ".memento_alert").exists()


@pytest.mark.timeout(60)
def test_a_deferral_ends_the_tick_no_further_task_runs(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": claude_limited(), "*": [{"print": "should not run"}]})

    done = project.tick("--max-tasks", "3")

    assert [entry.task_id for entry in project.entries()] == ["T-101"]
    assert "T-102" not in done.stdout


@pytest.mark.timeout(60)
def test_aider_exiting_0_at_a_limit_is_deferred_not_verified(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    # Its edit would even pass verify: the run ended at the limit, so nothing is taken.
    project.script({"T-101": [{"write": "src/a.py", "text": "A = 1\n"}, *aider_limited()]})

    project.tick()

    entry = project.entries()[-1]
    assert entry.outcome == "deferred"
    assert entry.fields["Provider Limit"].endswith(
        "The API provider has rate limited you. Try again later or check your quotas."
    )
    assert project.marker("T-101") == " "
    assert not (project.root / "src" / "a.py").exists()


@pytest.mark.timeout(60)
def test_a_limit_after_breaking_a_rule_is_a_failure(tmp_path: Path) -> None:
    # The rule broken is the agent's doing, whatever stopped it afterwards.
    project = make_project(tmp_path)
    project.script({"T-101": [{"write": GUARD, "text": "G = 2\n"}, *claude_limited()]})

    project.tick()

    entry = project.entries()[-1]
    assert entry.outcome == "failed"
    assert retries(project, "T-101") == 1
    assert GUARD in entry.fields["Guard Violations"]
    assert RATE_LIMITED in entry.fields["Agent Failure"]


@pytest.mark.timeout(60)
def test_a_retry_after_a_deferral_still_hears_why_the_task_failed_before(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    prompt = project.outside / "prompt.md"
    project.script(
        {
            "T-101": {
                "attempts": [
                    [{"write": "src/a.py", "text": "WRONG\n"}],
                    claude_limited(),
                    [{"save_prompt": str(prompt)}],
                ]
            }
        }
    )

    for _ in range(3):
        project.tick()

    assert [entry.outcome for entry in project.entries()] == ["failed", "deferred", "failed"]
    assert "verify exited with code" in prompt.read_text(encoding="utf-8")


@pytest.mark.timeout(120)
def test_memento_run_until_done_stops_at_a_deferral(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"*": claude_limited(SESSION_LIMIT)})

    done = project.memento_process(
        "run", "--every", "0.1s", "--until-done", "--agent-cmd", scripted_command(), timeout=100
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert len(project.entries()) == 1
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("run: stopped after 1 tick: the agent's provider is limited")
    assert "resets 9:57pm (UTC)" in last


@pytest.mark.timeout(120)
def test_a_deferred_claim_on_a_shared_branch_is_released_on_the_remote(tmp_path: Path) -> None:
    pool = Pool(tmp_path, pool_plan([(2, True)]), 1, agent_seconds=0)
    root = pool.clones[0]
    config = TickConfig(
        agent="command",
        agent_cmd=scripted_command(),
        worker_id="w0",
        shared=SharedBranch(root, branch=BRANCH),
    )
    env = scripted_env(actions=claude_limited(), environ=pool.env())

    result = run_tick(Layout(root), config, environ=env, say=lambda line: None)

    assert [outcome.outcome for outcome in result.tasks] == ["deferred"]
    plan = pool.plan()  # the remote's
    first = plan.tasks[0]
    assert (first.marker, first.retries, first.claimed) == (" ", 0, None)
    assert plan.settings.consecutive_failed_ticks == 0
    subjects = [commit.subject for commit in pool.history().commits]
    assert subjects[-2:] == [
        f"memento: claim {first.id} Write out/{first.id}.txt",
        f"memento: {first.id} deferred (provider limit)",
    ]


@pytest.mark.timeout(60)
def test_status_and_the_dashboard_tell_a_deferral(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": claude_limited(SESSION_LIMIT)})
    project.tick()

    shown = project.memento("status", "--json")

    assert shown.returncode == 0, shown.stdout + shown.stderr
    entry = project.entries()[-1]
    snapshot = build(
        project.plan(),
        "docs/MASTER_PLAN.md",
        errors=0,
        status_text=project.status_path.read_text(encoding="utf-8"),
        notes_text="",
        schedules=[],
        alert=None,
        now=entry.time,
    )
    last = next(task["last"] for task in snapshot["tasks"] if task["id"] == "T-101")
    assert last["outcome"] == "deferred"
    assert last["summary"].startswith(f"provider limit: {SESSION_LIMIT}; try again ")


@pytest.mark.timeout(180)
def test_a_deferral_whose_push_is_rejected_is_made_again_on_the_new_tip(tmp_path: Path) -> None:
    pool = Pool(tmp_path, pool_plan([(2, True)]), 2, agent_seconds=0)
    first, second = (task.id for task in pool.plan().tasks)
    # Worker 1 claims and completes the second task between worker 0's deferral and its push.
    branch = RacingBranch(pool.clones[0], {2: lambda: tick_process(pool, 1)})
    config = TickConfig(
        agent="command", agent_cmd=scripted_command(), worker_id="w0", shared=branch
    )
    env = scripted_env(actions=claude_limited(), environ=pool.env())

    result = run_tick(Layout(pool.clones[0]), config, environ=env, say=lambda line: None)

    assert [outcome.outcome for outcome in result.tasks] == ["deferred"]
    assert branch.landed[:3] == [True, False, True]  # the result pushed again after a rejection
    plan = pool.plan()
    deferred, done = plan.task(first), plan.task(second)
    assert deferred is not None and done is not None
    assert (deferred.marker, deferred.retries, deferred.claimed) == (" ", 0, None)
    assert done.marker == "x"
    assert plan.settings.consecutive_failed_ticks == 0
    history = pool.history()
    assert len(history.of_kind(f"memento: {first} deferred")) == 1
    assert history.completions() == {second: 1}
