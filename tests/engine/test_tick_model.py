"""The model a tick's agent runs on, and the user's extra arguments for it, through real ticks
with the fake agent: ``--model`` / ``MEMENTO_MODEL``, a task's ``model:``, Meta
``retry_model`` for the retries of a task that failed, and ``--agent-args``.

The precedence: ``retry_model`` on a retry, else the task's ``model:``, else the tick's own.
The command agent sees the model as ``{model}`` and ``MEMENTO_MODEL``; the status entry
records it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from testing.agents import SCRIPTED
from testing.ticks import Project, good, make_project, one_phase, plan_of, task, wrong


def recording_command(project: Project) -> str:
    """A command agent that appends its arguments after the template's own (one JSON list a
    run) to ``outside/argv.jsonl``, then runs the fake agent."""
    record = project.outside / "argv.jsonl"
    program = (
        f"python3 -c \"import json,sys; open({str(record)!r}, 'a').write("
        'json.dumps(sys.argv[1:]) + chr(10))" "$@" && exec "$0" "$1" "$2"'
    )
    fake = shlex.quote(str(SCRIPTED))
    return f"sh -c {shlex.quote(program)} {fake} {{prompt_file}} {{task_id}} {{model}}"


def runs(project: Project) -> list[list[str]]:
    """The arguments each run got after the template's (prompt file, task id, model)."""
    lines = (project.outside / "argv.jsonl").read_text().splitlines()
    return [json.loads(line)[2:] for line in lines]


def models_recorded(project: Project) -> list[str | None]:
    found = []
    for entry in project.entries():
        cost = entry.fields.get("Cost")
        found.append(cost.rsplit(", ", 1)[-1] if cost else None)
    return found


@pytest.mark.timeout(60)
def test_the_tick_model_reaches_the_agent_and_the_status_entry(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    dump = project.outside / "env.json"
    project.script({"T-101": [*good("T-101"), {"dump_env": str(dump)}]})

    done = project.tick("--agent-cmd", recording_command(project), "--model", "gpt-5.5")

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == "x"
    assert runs(project) == [["gpt-5.5"]]
    assert json.loads(dump.read_text())["MEMENTO_MODEL"] == "gpt-5.5"
    assert models_recorded(project) == ["gpt-5.5"]


@pytest.mark.timeout(60)
def test_memento_model_is_the_default_and_no_model_leaves_the_placeholder_empty(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    dump = project.outside / "env.json"
    project.script({"*": [{"dump_env": str(dump)}, *good("T-101"), *good("T-102")]})
    command = recording_command(project)

    project.tick("--agent-cmd", command, env={"MEMENTO_MODEL": "openai/gpt-4.1"})
    first = json.loads(dump.read_text())
    project.tick("--agent-cmd", command)

    assert runs(project) == [["openai/gpt-4.1"], [""]]
    assert first["MEMENTO_MODEL"] == "openai/gpt-4.1"
    assert "MEMENTO_MODEL" not in json.loads(dump.read_text())


@pytest.mark.timeout(90)
def test_a_task_model_beats_the_tick_model_and_retry_model_runs_its_retries(
    tmp_path: Path,
) -> None:
    plan = plan_of(
        [one_phase(task("T-101", model="claude-haiku-4-5"), task("T-102"))],
        retry_model="claude-opus-4-8",
        total_tasks="2",
    )
    project = make_project(tmp_path, plan)
    project.script(
        {
            "T-101": {"attempts": [wrong("T-101"), good("T-101")]},
            "T-102": good("T-102"),
        }
    )
    command = recording_command(project)

    for _ in range(3):
        done = project.tick("--agent-cmd", command, "--model", "sonnet")
        assert done.returncode == 0, done.stdout + done.stderr

    # T-101 on its own model, then (it failed) its retry on retry_model; T-102 on the tick's.
    assert runs(project) == [["claude-haiku-4-5"], ["claude-opus-4-8"], ["sonnet"]]
    assert models_recorded(project) == ["claude-haiku-4-5", "claude-opus-4-8", "sonnet"]
    assert project.marker("T-101") == project.marker("T-102") == "x"


@pytest.mark.timeout(60)
def test_agent_args_follow_the_command_line_as_a_shell_would_split_them(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": good("T-101")})

    done = project.tick(
        "--agent-cmd",
        recording_command(project),
        "--agent-args=--max-turns 3 --append-system-prompt 'Be brief; no $HOME.'",
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert runs(project) == [
        ["", "--max-turns", "3", "--append-system-prompt", "Be brief; no $HOME."]
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--model", "--dangerously-skip-permissions"], "--model: a model is one word"),
        (["--model", "claude opus"], "such as claude-sonnet-4-6 or openai/gpt-4.1"),
        (["--agent-args", "--x 'unclosed"], "--agent-args cannot be read (No closing quotation)"),
    ],
)
def test_a_model_or_agent_args_that_cannot_be_used_stop_the_tick_before_any_claim(
    tmp_path: Path, option: list[str], said: str
) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": good("T-101")})
    head = project.head()

    done = project.tick(option[0] + "=" + option[1])

    assert done.returncode == 1
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    assert project.head() == head and project.marker("T-101") == " "
