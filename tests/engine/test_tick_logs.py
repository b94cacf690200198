"""Every tick writes its own log file (first-use issue, item 5): four demo ticks in one
second shared ``logs/tick_20261201T132736Z.log``. Real ticks with the fake agent, in the
same second by a clock that stands still, and back to back by ``memento run --every 0s``."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.layout import Layout
from testing.agents import scripted_command
from testing.ticks import Project, good, make_project

TASKS = ("T-101", "T-102", "T-103")
SECOND = datetime(2026, 12, 1, 13, 27, 36, 250_000, tzinfo=timezone.utc)


def tick_logs(project: Project) -> list[Path]:
    return sorted((project.root / "logs").glob("tick_*.log"))


def assert_one_log_per_task(project: Project) -> None:
    logs = tick_logs(project)
    assert len(logs) == len(TASKS), [log.name for log in logs]
    said = [log.read_text(encoding="utf-8") for log in logs]
    for task_id in TASKS:
        # the fake agent's first line names its task: each log holds exactly one tick's run
        holding = [text for text in said if f"fake agent: task {task_id}," in text]
        assert len(holding) == 1, (task_id, said)
    named = [entry.fields["Log"] for entry in project.entries()]
    assert sorted(named) == [f"logs/{log.name}" for log in logs]


@pytest.mark.timeout(120)
def test_ticks_in_the_same_second_write_a_log_each(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({task_id: good(task_id) for task_id in TASKS})
    config = TickConfig(agent="command", agent_cmd=scripted_command(), worker_id="w1")

    for _ in TASKS:
        result = run_tick(
            Layout(project.root), config, clock=lambda: SECOND, environ=project.env(), say=print
        )
        assert result.status == "ran", result

    assert [task.marker for task in project.plan().tasks] == ["x", "x", "x"]
    assert_one_log_per_task(project)
    # named by the time the tick started, to the millisecond, then numbered
    assert [log.name for log in tick_logs(project)] == [
        "tick_20261201T132736.250Z-2.log",
        "tick_20261201T132736.250Z-3.log",
        "tick_20261201T132736.250Z.log",
    ]


@pytest.mark.timeout(120)
def test_a_run_with_every_0s_writes_a_log_per_tick(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({task_id: good(task_id) for task_id in TASKS})

    done = project.memento(
        "run", "--every", "0s", "--max-ticks", "3", "--agent-cmd", scripted_command()
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert_one_log_per_task(project)
