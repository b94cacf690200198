"""Deferral has an end (issue #27, class 9), in real ticks: ``testing/agents/hostile.py``
says its provider refused it on every run, with a reset time or without one. Each run is
deferred (no retry counted), until ``max_deferrals`` of them in a row pause the plan with
the circuit breaker's alert, which says why; a person's resume lets the plan go on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.agents import Action, hostile_command, hostile_env
from testing.ticks import Completed, Project, make_project, one_phase, plan_of, task

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.timeout(180)]

LIMITS = {
    "no reset time": "API Error: Request rejected (429) · rate limit. Please try again later.",
    "a reset time": "You've hit your session limit · resets 9:57pm (UTC)",
}


def limited(words: str, *, half_done: bool = True) -> list[Action]:
    """claude's result for a provider limit, then exit 1: whether or not one was met;
    ``half_done``: T-101's file half written first."""
    result = {"type": "result", "is_error": True, "api_error_status": 429, "result": words}
    work: list[Action] = [{"write": "src/a.py", "text": "A = 'half'\n"}] if half_done else []
    return [*work, {"print": json.dumps(result)}]


def tick(project: Project, steps: list[Action], home: Path) -> Completed:
    env = hostile_env([*steps, {"exit": 1}], home=home, record=project.outside / "records")
    done = project.memento("tick", "--agent-cmd", hostile_command(), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.parametrize("kind", list(LIMITS))
def test_deferrals_in_a_row_pause_the_plan_with_an_alert_that_says_why(
    tmp_path: Path, isolated_git: Path, kind: str
) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], max_deferrals="3"))
    steps = limited(LIMITS[kind])

    said = [tick(project, steps, isolated_git).stdout for _ in range(4)]

    outcomes = [entry.outcome for entry in project.entries()]
    assert outcomes == ["deferred", "deferred", "deferred"]  # the 4th tick found it paused
    settings = project.plan().settings
    assert settings.tick_mode == "paused"
    found = project.plan().task("T-101")
    assert found is not None and (found.retries, found.marker) == (0, " ")
    alert = (project.root / ".memento_alert").read_text()
    assert "circuit_breaker: TRIGGERED" in alert
    [event] = [text for text in project.events() if "CIRCUIT BREAKER" in text]
    assert "3 task runs in a row were deferred on a provider limit (max_deferrals is 3)" in event
    assert "memento resume" in event
    assert "CIRCUIT BREAKER TRIGGERED" in said[2]
    assert "mode=paused" in said[3]
    assert not (project.root / "src" / "a.py").exists()
    assert project.dirty() == []

    resumed = project.memento("resume")
    again = tick(project, steps, isolated_git)

    assert resumed.returncode == 0, resumed.stderr
    assert "deferred" in again.stdout
    assert project.plan().settings.tick_mode == "auto"  # one deferral after resuming: counted anew
    assert project.plan().settings.consecutive_deferrals == 1


def test_a_run_that_is_not_deferred_starts_the_count_again(
    tmp_path: Path, isolated_git: Path
) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], max_deferrals="2"))

    tick(project, limited(LIMITS["no reset time"]), isolated_git)
    env = hostile_env(
        [{"write": "src/a.py", "text": "A = 1\n"}], home=isolated_git, record=project.outside
    )
    done = project.memento("tick", "--agent-cmd", hostile_command(), env=env)
    tick(project, limited(LIMITS["no reset time"], half_done=False), isolated_git)  # T-102

    assert done.returncode == 0, done.stderr
    assert [entry.outcome for entry in project.entries()] == ["deferred", "success", "deferred"]
    settings = project.plan().settings
    assert (settings.tick_mode, settings.consecutive_deferrals) == ("auto", 1)


def test_the_default_bound_is_five(tmp_path: Path, isolated_git: Path) -> None:
    plan = plan_of([one_phase(task("T-101"), task("T-102"))], total_tasks="2")
    project = make_project(tmp_path, plan)

    for _ in range(6):
        tick(project, limited(LIMITS["a reset time"]), isolated_git)

    assert [entry.outcome for entry in project.entries()] == ["deferred"] * 5
    assert project.plan().settings.tick_mode == "paused"


@pytest.mark.parametrize("after", ["9" * 400, "99999999999"])
def test_a_reset_time_no_provider_gives_is_no_time_and_never_a_crash(
    tmp_path: Path, isolated_git: Path, after: str
) -> None:
    """The agent's words are data (class 7): "retry after 1e400 seconds" crashed the tick."""
    project = make_project(tmp_path)
    words = f"API Error: Request rejected (429) · rate limit. Please retry after {after} seconds"

    done = tick(project, limited(words), isolated_git)

    assert "internal error" not in done.stderr
    [entry] = project.entries()
    assert entry.outcome == "deferred"
    assert not entry.fields.get("Try Again", "").startswith(("2", "5"))  # no UTC time in it
    assert project.dirty() == []
