"""Each fixed preset through a real ``memento tick --agent <preset>``: the real CLI (found on
PATH as ``.tools/bin/<cli>``) against the scripted model server. The agent writes the file
and runs the task's verify itself, memento's own verify passes, and the commit lands.

The verify appends a line to a marker outside the repository each time it runs: two lines
are the agent's run and memento's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testing.model_server import Call, ModelServer, Say
from testing.real_agents import Launch, aider, claude, gemini
from testing.ticks import UNSET, Project, make_project, one_phase, plan_of, task

pytestmark = pytest.mark.slow


def project_for(tmp_path: Path, path: str) -> tuple[Project, Path, str]:
    """A project whose one task T-101 asks for ``path`` holding ``A``; its verify checks
    that and appends to the marker (outside the repository, so no guard sees it)."""
    marker = tmp_path / "verify.marker"
    verify = f"grep -q A {path} && echo verified >> {marker}"
    plan = plan_of(
        [one_phase(task("T-101", verify=f"`{verify}`", context_files=f"[{path}]"))],
        agent_timeout="150s",
        total_tasks="1",
    )
    return make_project(tmp_path, plan), marker, verify


def tick(project: Project, agent: str, launch: Launch) -> subprocess.CompletedProcess[str]:
    """``memento tick --agent <agent>`` in a process of its own, with the CLI's environment
    (its home, key and base URL; ``.tools/bin`` first on PATH) and nothing else."""
    env = {**launch.env, **dict.fromkeys(UNSET, ""), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "memento_gh", "tick", "--agent", agent],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )


def assert_done(project: Project, result: subprocess.CompletedProcess[str], path: str) -> None:
    assert result.returncode == 0, result.stdout + result.stderr
    assert project.marker("T-101") == "x", result.stdout + result.stderr
    assert (project.root / path).read_text() == "A = 1\n"
    assert path in project.committed_files()
    assert "T-101" in project.subjects()[0]
    assert project.dirty() == []


@pytest.mark.timeout(240)
def test_claude_preset_runs_the_verify_itself_and_the_tick_commits(
    tmp_path: Path,
) -> None:
    project, marker, verify = project_for(tmp_path, "src/a.py")
    script = [
        Call("Write", {"file_path": str(project.root / "src/a.py"), "content": "A = 1\n"}),
        Call("Bash", {"command": verify, "description": "Run the task's verify"}),
        Say("Done: src/a.py is written and the verify passed."),
    ]
    with ModelServer(script) as server:
        launch = claude(server.url, tmp_path / "home", "")
        del launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]  # the preset sets it
        result = tick(project, "claude", launch)

    assert_done(project, result, "src/a.py")
    assert marker.read_text() == "verified\nverified\n"
    answer = str(server.turns[2].body["messages"][-1])
    assert "Permission" not in answer and "requires approval" not in answer
    # Nothing left the machine: the preset turns claude's nonessential traffic off.
    assert server.outbound == []


@pytest.mark.timeout(240)
def test_gemini_preset_runs_the_verify_itself_in_an_untrusted_folder_and_the_tick_commits(
    tmp_path: Path,
) -> None:
    project, marker, verify = project_for(tmp_path, "src/a.py")
    script = [
        Call("write_file", {"file_path": "src/a.py", "content": "A = 1\n"}),
        Call("run_shell_command", {"command": verify, "description": "Run the task's verify"}),
        Say("Done: src/a.py is written and the verify passed."),
    ]
    with ModelServer(script) as server:
        result = tick(project, "gemini", gemini(server.url, tmp_path / "home", ""))

    assert_done(project, result, "src/a.py")
    assert marker.read_text() == "verified\nverified\n"
    # The policy file is memento's, beside the prompt under .git/, and gone afterwards.
    assert list((project.root / ".git" / "memento").glob("*.toml")) == []


@pytest.mark.timeout(240)
def test_aider_preset_runs_the_verify_as_its_test_and_writes_into_a_new_folder(
    tmp_path: Path,
) -> None:
    project, marker, _ = project_for(tmp_path, "lib/a.py")
    answer = "lib/a.py\n```\n<<<<<<< SEARCH\n=======\nA = 1\n>>>>>>> REPLACE\n```\n"
    with ModelServer([Say(answer)]) as server:
        prompt = tmp_path / "unused.md"  # the preset passes memento's own prompt file
        result = tick(project, "aider", aider(server.url, tmp_path / "home", prompt))

    assert_done(project, result, "lib/a.py")
    assert marker.read_text() == "verified\nverified\n"
    assert len(server.turns) == 1  # the test passed: nothing to send back
    # memento's own files, named in the prompt as off limits, stay out of aider's chat.
    (log,) = (project.root / "logs").glob("tick_*.log")
    added = [line for line in log.read_text().splitlines() if line.startswith("Added ")]
    assert added == ["Added lib/a.py to the chat."]
