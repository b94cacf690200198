"""``memento run --every``: ticks in a foreground loop, through the real CLI.

Each test runs ``memento run`` on a real git repository, with the fake agent
``testing/agents/scripted.py``, and reads the real state back: the plan, ``git log`` and
``logs/cron.log``. The loop runs in the test's process (``Project.memento``), or in a
process of its own where a test sends it SIGTERM.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memento_gh import cli
from memento_gh.commands import run as run_command
from memento_gh.commands.tick import tick_config
from memento_gh.layout import Layout
from testing.agents import scripted_command
from testing.processes import alive
from testing.ticks import (
    Completed,
    Project,
    good,
    make_project,
    one_phase,
    plan_of,
    task,
    wrong,
)

STAMP = r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\] "


@pytest.fixture
def project(tmp_path: Path) -> Project:
    made = make_project(tmp_path)
    made.script({task_id: good(task_id) for task_id in ("T-101", "T-102", "T-103")})
    return made


def run(project: Project, *args: str) -> Completed:
    return project.memento("run", "--agent-cmd", scripted_command(), *args)


def cron_log(project: Project) -> str:
    return (project.root / "logs" / "cron.log").read_text(encoding="utf-8")


def test_max_ticks_runs_that_many_ticks(project: Project) -> None:
    done = run(project, "--every", "0s", "--max-ticks", "2")

    assert (done.returncode, done.stderr) == (0, "")
    assert re.findall(r"^tick: .*$", done.stdout, re.MULTILINE) == [
        "tick: ran — T-101 success",
        "tick: ran — T-102 success",
    ]
    assert done.stdout.splitlines()[-1] == "run: stopped after 2 ticks (--max-ticks 2)"
    assert project.subjects()[:2] == [
        "memento: complete T-102 Write module B",
        "memento: complete T-101 Write module A",
    ]
    assert project.marker("T-103") == " "
    log = cron_log(project)
    assert re.search(rf"^{STAMP}tick: ran — T-101 success$", log, re.MULTILINE)
    assert re.search(rf"^{STAMP}run: stopped after 2 ticks \(--max-ticks 2\)$", log, re.MULTILINE)


def test_max_ticks_counts_idle_ticks_too(project: Project) -> None:
    done = run(project, "--every", "0s", "--max-ticks", "3")

    assert done.returncode == 0
    assert done.stdout.count("\ntick: ") == 3
    assert [project.marker(t) for t in ("T-101", "T-102", "T-103")] == ["x", "x", "x"]


def test_until_done_stops_when_the_plan_completes(project: Project) -> None:
    done = run(project, "--every", "0s", "--until-done", "--max-ticks", "10")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.count("\ntick: ran") == 3
    assert done.stdout.splitlines()[-1] == (
        "run: stopped after 3 ticks: the plan rests — 🎉 ALL TASKS COMPLETE"
    )


def test_until_done_stops_when_the_plan_is_blocked(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        plan_of(
            [one_phase(task("T-101"))], max_retries="2", blocked_ratio_limit="1", total_tasks="1"
        ),
    )
    project.script({"T-101": wrong("T-101")})

    done = run(project, "--every", "0s", "--until-done", "--max-ticks", "10")

    assert done.returncode == 0
    assert done.stdout.count("\ntick: ran") == 2
    assert "run: stopped after 2 ticks: the plan rests — ⚠️ PIPELINE BLOCKED" in done.stdout
    assert project.marker("T-101") == "!"


def test_until_done_stops_on_a_paused_plan(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], tick_mode="paused"))

    done = run(project, "--every", "0s", "--until-done")

    assert done.returncode == 0
    assert done.stdout.splitlines()[-1].startswith(
        "run: stopped after 1 tick: the plan rests — tick_mode is paused; `memento resume`"
    )


def test_a_tick_that_fails_is_logged_and_the_loop_goes_on(tmp_path: Path) -> None:
    broken = plan_of([one_phase(task("T-101"), task("T-101"))])  # a duplicate task ID
    project = make_project(tmp_path, broken)

    done = run(project, "--every", "0s", "--max-ticks", "2")

    assert done.returncode == 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("memento: error: ")]
    assert len(errors) == 2, done.stderr
    assert errors[0] == "memento: error: the plan has errors; a tick runs only on a valid plan:"
    assert "duplicate" in done.stderr.lower()
    assert done.stdout.splitlines()[-1] == "run: stopped after 2 ticks (--max-ticks 2)"
    assert len(re.findall(rf"^{STAMP}memento: error: ", cron_log(project), re.MULTILINE)) == 2
    assert "Traceback" not in done.stderr


def test_a_tick_starts_every_interval_after_the_last_one_started(project: Project) -> None:
    started = time.monotonic()
    done = run(project, "--every", "0.5s", "--max-ticks", "3")
    elapsed = time.monotonic() - started

    assert done.returncode == 0
    assert 1.0 <= elapsed < 30  # three ticks, 0.5 s apart at least; room for a busy machine
    assert done.stdout.splitlines()[0] == "run: a tick every 0.5s; Ctrl-C stops"


def test_a_long_tick_is_followed_at_once(tmp_path: Path) -> None:
    """Fixed rate, not fixed delay: the wait is what is left of the interval, never less than
    nothing. The clock is ours: the first tick seems to take 7s of 10s, the second 15s."""
    done = plan_of([one_phase(task("T-101", "x"))], total_tasks="1", completed_tasks="1")
    project = make_project(tmp_path, done)
    moments = iter([0.0, 7.0, 10.0, 25.0, 25.0])
    slept: list[float] = []
    args = cli.build_parser("run").parse_args(
        ["run", "--every", "10s", "--max-ticks", "3", "--agent-cmd", scripted_command()]
    )
    layout = Layout(project.root)
    config = tick_config(args, layout)
    loop = run_command._Loop(args, layout, config, clock=lambda: next(moments), sleep=slept.append)

    assert loop.run() == "stopped after 3 ticks (--max-ticks 3)"
    assert slept == [3.0, 0.0]  # 10 - 7, then nothing: 10 + 10 - 25 < 0


def test_sigterm_ends_the_loop_between_ticks(project: Project) -> None:
    process = start_run(project, "--every", "1h")
    wait_for(lambda: "tick: ran — T-101" in cron_text(project))

    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=10)

    assert (process.returncode, err) == (0, "")
    assert out.splitlines()[-1] == "run: interrupted after 1 tick"
    assert cron_text(project).splitlines()[-1].endswith("] run: interrupted after 1 tick")


def test_sigterm_during_a_tick_stops_the_agent_and_the_loop(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": [{"write_pid": str(tmp_path / "agent.pid")}, {"sleep": 600}]})
    process = start_run(project, "--every", "0s")
    wait_for((tmp_path / "agent.pid").exists)

    stopping = time.monotonic()
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)

    assert time.monotonic() - stopping < 30  # the agent sleeps 600 s: room for a busy machine
    assert process.returncode == 0
    assert out.splitlines()[-1] == (
        "run: interrupted during tick 1, after 0 ticks; the next tick recovers what it left"
    )
    assert not alive(int((tmp_path / "agent.pid").read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--every", "5"], "argument --every: '5' is not an interval"),
        (["--every", "soon"], "write a number and a unit: 30s, 5m, 1h"),
        (["--every", "1s", "--max-ticks", "0"], "'0' is not a whole number of at least 1"),
        ([], "the following arguments are required: --every"),
    ],
)
def test_a_mistake_in_the_options_is_a_usage_error(
    project: Project, args: list[str], message: str
) -> None:
    done = run(project, *args)

    assert done.returncode == 2
    assert message in done.stderr
    assert not (project.root / "logs" / "cron.log").exists()


def test_without_an_agent_the_run_never_starts(project: Project) -> None:
    done = project.memento("run", "--every", "0s")

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("memento: error: no agent chosen; pass --agent")


# -- helpers --------------------------------------------------------------------------------


def start_run(project: Project, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "memento_gh", "run", "--agent-cmd", scripted_command(), *args]
    return subprocess.Popen(
        argv,
        cwd=project.root,
        env={**project.env(), "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def cron_text(project: Project) -> str:
    path = project.root / "logs" / "cron.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def wait_for(condition: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
