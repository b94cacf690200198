"""``memento plan draft --agent <preset>`` with the real CLI against the scripted model
server: the architect writes its proposal file with its own tool, and the plan lands."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testing.model_server import Call, ModelServer, Say
from testing.real_agents import Launch, claude, codex, gemini
from testing.ticks import UNSET, Project, make_project, one_phase, plan_of

pytestmark = pytest.mark.slow

PLAN = plan_of([one_phase()])
#: The architect's shell command that writes the plan into the proposal file.
WRITE = f"cat > \"$MEMENTO_PROPOSAL_FILE\" <<'PLAN'\n{PLAN}PLAN"


def without_plan(tmp_path: Path) -> tuple[Project, Path]:
    project = make_project(tmp_path)
    project.git("rm", "-q", "docs/MASTER_PLAN.md")
    project.git("commit", "-qm", "no plan yet")
    spec = tmp_path / "spec.md"
    spec.write_text("# Demo\n\nModules A, B and C, each a file holding its letter.\n")
    return project, spec


def draft(
    project: Project, spec: Path, agent: str, launch: Launch
) -> subprocess.CompletedProcess[str]:
    env = {**launch.env, **dict.fromkeys(UNSET, ""), "NO_COLOR": "1"}
    argv = ["plan", "draft", "--spec", str(spec), "--agent", agent, "--rounds", "1"]
    return subprocess.run(
        [sys.executable, "-m", "memento_gh", *argv],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )


@pytest.mark.timeout(240)
def test_claude_drafts_a_plan_that_lands(tmp_path: Path) -> None:
    project, spec = without_plan(tmp_path)
    # Claude Code's Write refuses a path under .git/ ("a sensitive file", measured): the
    # prompt says to use the shell then, which the preset allows.
    script = [
        Call("Bash", {"command": WRITE, "description": "Write the proposed plan"}),
        Say("The plan is in the proposal file."),
    ]
    with ModelServer(script) as server:
        launch = claude(server.url, tmp_path / "home", "")
        del launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]  # the preset sets it
        result = draft(project, spec, "claude", launch)

    answer = str(server.turns[1].body["messages"][-1]) if len(server.turns) > 1 else ""
    assert result.returncode == 0, result.stdout + result.stderr + answer
    assert [task.id for task in project.plan().tasks] == ["T-101", "T-102", "T-103"]
    assert project.subjects()[0] == "memento: draft plan"
    assert project.dirty() == []
    prompt = str(server.turns[0].body["messages"][0])
    assert "Modules A, B and C" in prompt
    assert server.outbound == []


@pytest.mark.timeout(240)
def test_gemini_drafts_a_plan_that_lands(tmp_path: Path) -> None:
    project, spec = without_plan(tmp_path)
    # gemini's write_file refuses a path under .git/ ("outside the allowed workspace
    # directories", measured); its shell, which the preset's policy allows, writes it, but
    # refuses a command with backticks in it (the plan's verify lines): so in base64.
    packed = base64.b64encode(PLAN.encode()).decode()
    command = f'printf %s {packed} | base64 -d > "$MEMENTO_PROPOSAL_FILE"'
    script = [
        Call("run_shell_command", {"command": command, "description": "Write the proposed plan"}),
        Say("The plan is in the proposal file."),
    ]
    with ModelServer(script) as server:
        result = draft(project, spec, "gemini", gemini(server.url, tmp_path / "home", ""))

    answer = str(server.turns[1].body.get("contents", [])[-1:]) if len(server.turns) > 1 else ""
    assert result.returncode == 0, result.stdout + result.stderr + answer[-1500:]
    assert [task.id for task in project.plan().tasks] == ["T-101", "T-102", "T-103"]
    assert project.subjects()[0] == "memento: draft plan"
    assert project.dirty() == []


@pytest.mark.timeout(240)
def test_codex_cannot_write_the_proposal_under_git_and_nothing_lands(tmp_path: Path) -> None:
    """codex's workspace-write sandbox keeps .git read-only (``test_codex.py``), the
    proposal's folder with it: the draft fails, says why, and lands nothing."""
    project, spec = without_plan(tmp_path)
    script = [Call("exec_command", {"cmd": WRITE}), Say("The plan is in the proposal file.")]
    with ModelServer(script) as server:
        result = draft(project, spec, "codex", codex(server.url, tmp_path / "home", ""))

    assert result.returncode == 1, result.stdout + result.stderr
    assert "the proposal is empty" in result.stderr
    said = json.dumps(server.turns[1].body["input"][-1])
    assert "Read-only file system" in said or "Permission denied" in said, said
    assert not project.plan_path.exists()
    assert project.dirty() == []
