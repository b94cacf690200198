"""A tick checks how its agent is configured before it claims anything: the agent's name,
the command agent's template, and that the program the agent runs is there to run.

A mistake found then is the user's to fix (exit 1, the fix named); a mistake found only
after the claim would have marked the task running, died, and cost it a retry at the next
tick's recovery, every tick, until the task ended blocked.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memento_gh.engine.agents.check import AgentConfigError
from memento_gh.engine.tick.steps import TickConfig, run_tick
from memento_gh.errors import UserError
from memento_gh.layout import Layout
from testing.action_runs import ActionProject
from testing.agents import SCRIPTED
from testing.fake_github import FakeGitHub
from testing.repos import git
from testing.ticks import Project, good, make_project

pytestmark = pytest.mark.timeout(120)

RUNNING_MARKER = Path(".git") / "memento" / "running.json"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    made = make_project(tmp_path)
    made.script({"T-101": good("T-101")})
    return made


class Untouched:
    """What a refused tick must leave as it was: the plan byte for byte, HEAD, a clean tree
    and no running marker."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.plan = project.plan_path.read_bytes()
        self.head = project.head()

    def check(self) -> None:
        project = self.project
        assert project.plan_path.read_bytes() == self.plan
        assert project.head() == self.head
        assert project.dirty() == []
        assert not (project.root / RUNNING_MARKER).exists()


def tick_with(project: Project, *args: str, env: dict[str, str] | None = None) -> object:
    return project.memento("tick", *args, env=env)


def path_without(tmp_path: Path, *names: str) -> str:
    """A PATH with git and sh only: none of the agents' programs."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    for name in ("git", "sh", *names):
        found = next(
            (
                Path(folder) / name
                for folder in os.environ["PATH"].split(os.pathsep)
                if (Path(folder) / name).exists()
            ),
            None,
        )
        assert found is not None, name
        (tools / name).symlink_to(found)
    return str(tools)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--agent", "cluade"],
            "memento: error: unknown agent 'cluade' (did you mean claude?); known agents: "
            "aider, claude, codex, command, gemini, openclaw",
        ),
        (
            ["--agent", "command"],
            "memento: error: --agent command runs the command line of --agent-cmd, and none "
            "is set; pass --agent-cmd 'your-agent {prompt_file}' (or set MEMENTO_AGENT_CMD)",
        ),
        (
            ["--agent-cmd", "no-such-agent-xyz {prompt_file}"],
            "memento: error: the agent command line runs `no-such-agent-xyz`, which is not "
            "on PATH; install it, or give its full path in --agent-cmd",
        ),
        (
            ["--agent-cmd", "'unclosed {prompt_file}"],
            "memento: error: the agent command line cannot be read (No closing quotation): "
            "'unclosed {prompt_file}",
        ),
    ],
    ids=["unknown-agent", "command-without-template", "program-not-found", "bad-quoting"],
)
def test_a_misconfigured_agent_stops_the_tick_before_the_claim(
    project: Project, args: list[str], message: str
) -> None:
    before = Untouched(project)

    done = project.memento("tick", *args)

    assert (done.returncode, done.stdout, done.stderr) == (1, "", message + "\n")
    before.check()
    # the next tick, with the agent right, recovers nothing and costs no retry
    ran = project.tick()
    assert ran.returncode == 0, ran.stderr
    assert "Recovered" not in ran.stdout
    task = project.plan().task("T-101")
    assert task is not None and (task.marker, task.retries) == ("x", 0)


def test_a_preset_agent_whose_program_is_not_installed_is_refused(
    project: Project, tmp_path: Path
) -> None:
    before = Untouched(project)

    done = project.memento(
        "tick", "--agent", "claude", env={"PATH": path_without(tmp_path, "python3")}
    )

    assert done.returncode == 1
    assert done.stderr == (
        "memento: error: the agent claude runs `claude`, which is not on PATH; install it "
        "(see its documentation), or put the folder that holds it on PATH\n"
    )
    before.check()


def test_an_agent_script_in_the_repository_must_exist_and_be_executable(
    project: Project,
) -> None:
    before = Untouched(project)
    missing = project.memento("tick", "--agent-cmd", "./agent.sh {prompt_file}")
    script = project.outside / "agent.sh"
    script.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    not_executable = project.memento("tick", "--agent-cmd", f"{script} {{prompt_file}}")

    assert missing.returncode == not_executable.returncode == 1
    assert missing.stderr == (
        f"memento: error: the agent command line runs ./agent.sh, which is not at "
        f"{project.root / 'agent.sh'}; correct the path in --agent-cmd\n"
    )
    assert not_executable.stderr == (
        f"memento: error: the agent command line runs {script}, which is not executable; "
        f"make it so: chmod +x {script}\n"
    )
    before.check()
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    assert project.memento("tick", "--agent-cmd", f"{script} {{prompt_file}}").returncode == 0


def test_run_stops_at_once_on_a_misconfigured_agent(project: Project) -> None:
    before = Untouched(project)

    done = project.memento("run", "--every", "0s", "--max-ticks", "4", "--agent", "cluade")

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("memento: error: unknown agent 'cluade' (did you mean claude?)")
    before.check()
    assert not (project.root / "logs" / "cron.log").exists()


def test_the_action_checks_its_agent_before_it_ticks(tmp_path: Path) -> None:
    with FakeGitHub("octo/project", "ghs_test_token_0123456789") as github:
        action = ActionProject(tmp_path, github)
        action.script({"T-101": good("T-101")})

        with pytest.raises(UserError) as refused:
            action.run("schedule", env={"MEMENTO_AGENT": "cluade"})

        assert str(refused.value).startswith("unknown agent 'cluade' (did you mean claude?)")
        assert "set the action's `agent` input" in str(refused.value)
        assert git(action.origin, "for-each-ref", "refs/heads/memento") == ""  # nothing pushed
        ran = action.run("schedule")
        assert ran.code == 0, ran.said
        task = action.plan().task("T-101")
        assert task is not None and (task.marker, task.retries) == ("x", 0)


def test_the_engine_itself_refuses_an_agent_that_cannot_run(project: Project) -> None:
    before = Untouched(project)

    with pytest.raises(AgentConfigError, match="unknown agent 'cluade'"):
        run_tick(Layout(project.root), TickConfig(agent="cluade"), say=lambda line: None)

    before.check()


def test_run_ends_when_the_agent_goes_missing_between_two_ticks(project: Project) -> None:
    """The first tick's agent removes its own program: the second tick finds it gone and
    the run ends there with exit 1, instead of failing every tick after it."""
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    agent = project.outside / "agent.sh"
    agent.write_text(
        f'#!/bin/sh\n"{SCRIPTED}" "$@"\ncode=$?\nrm -f "$0"\nexit $code\n', encoding="utf-8"
    )
    agent.chmod(0o755)

    done = project.memento(
        "run",
        "--every",
        "0s",
        "--max-ticks",
        "3",
        "--agent-cmd",
        f"{agent} {{prompt_file}} {{task_id}}",
    )

    assert done.returncode == 1
    assert "tick: ran — T-101 success" in done.stdout
    assert done.stderr == (
        f"memento: error: the agent command line runs {agent}, which is not at {agent}; "
        "correct the path in --agent-cmd\n"
    )
    assert [project.marker(t) for t in ("T-101", "T-102")] == ["x", " "]
    assert project.plan().task("T-102").retries == 0  # type: ignore[union-attr]
