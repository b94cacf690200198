"""``memento plan draft --agent <preset>`` with each real CLI against the scripted model
server: the architect writes its proposal file (``.memento_proposal.md`` at the top of the
work tree) with the CLI's own file tool, and the plan lands. Each round trip checks that the
spec reached the model, that the plan landed as memento's one commit, that the tree is clean
(the proposal file gone, never committed) and that nothing left the machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memento_gh.layout import PROPOSAL_NAME
from testing.model_server import Call, ModelServer, Say
from testing.real_agents import Launch, aider, claude, codex, gemini, openclaw
from testing.ticks import UNSET, Project, make_project, one_phase, plan_of

pytestmark = pytest.mark.slow

PLAN = plan_of([one_phase()])
SPEC = "# Demo\n\nModules A, B and C, each a file holding its letter.\n"


def without_plan(tmp_path: Path) -> tuple[Project, Path]:
    project = make_project(tmp_path)
    project.git("rm", "-q", "docs/MASTER_PLAN.md")
    project.git("commit", "-qm", "no plan yet")
    spec = tmp_path / "spec.md"
    spec.write_text(SPEC)
    return project, spec


def draft(
    project: Project, spec: Path, agent: str, launch: Launch, *options: str
) -> subprocess.CompletedProcess[str]:
    env = {**launch.env, **dict.fromkeys(UNSET, ""), "NO_COLOR": "1"}
    argv = ["plan", "draft", "--spec", str(spec), "--agent", agent, "--rounds", "1", *options]
    return subprocess.run(
        [sys.executable, "-m", "memento_gh", *argv],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )


def assert_landed(
    project: Project, server: ModelServer, result: subprocess.CompletedProcess[str], said: str
) -> None:
    """The plan landed from the proposal, alone in memento's commit, and nothing is left."""
    assert result.returncode == 0, result.stdout + result.stderr + said[-2000:]
    assert [task.id for task in project.plan().tasks] == ["T-101", "T-102", "T-103"]
    assert project.subjects()[0] == "memento: draft plan"
    assert project.committed_files() == {"docs/MASTER_PLAN.md"}
    assert project.dirty() == []
    assert not (project.root / PROPOSAL_NAME).exists()
    assert not project.ever_committed(PROPOSAL_NAME)
    assert "Modules A, B and C" in server.turns[0].text
    assert server.outbound == []


def answer(server: ModelServer) -> str:
    """What the CLI sent back after the first turn (a tool's result), for failure messages."""
    return server.turns[1].text if len(server.turns) > 1 else ""


@pytest.mark.timeout(240)
def test_claude_drafts_a_plan_with_its_write_tool(tmp_path: Path) -> None:
    project, spec = without_plan(tmp_path)
    proposal = str(project.root / PROPOSAL_NAME)
    script = [
        Call("Write", {"file_path": proposal, "content": PLAN}),
        Say("The plan is in the proposal file."),
    ]
    with ModelServer(script) as server:
        launch = claude(server.url, tmp_path / "home", "")
        del launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]  # the preset sets it
        result = draft(project, spec, "claude", launch)

    assert_landed(project, server, result, answer(server))
    assert "is_error" not in str(server.turns[1].body["messages"][-1])


@pytest.mark.timeout(240)
def test_gemini_drafts_a_plan_with_its_write_file_tool(tmp_path: Path) -> None:
    project, spec = without_plan(tmp_path)
    script = [
        Call("write_file", {"file_path": PROPOSAL_NAME, "content": PLAN}),
        Say("The plan is in the proposal file."),
    ]
    with ModelServer(script) as server:
        result = draft(project, spec, "gemini", gemini(server.url, tmp_path / "home", ""))

    assert_landed(project, server, result, answer(server))


@pytest.mark.timeout(240)
def test_codex_drafts_a_plan_with_apply_patch_in_its_sandbox(tmp_path: Path) -> None:
    """The proposal is in the work tree, which codex's workspace-write sandbox may write
    (under .git/, where it was, the sandbox refused it: codex could not draft at all)."""
    project, spec = without_plan(tmp_path)
    added = "".join(f"+{line}\n" for line in PLAN.splitlines())
    patch = f"*** Begin Patch\n*** Add File: {PROPOSAL_NAME}\n{added}*** End Patch\n"
    script = [Call("apply_patch", {"input": patch}, custom=True), Say("The plan is written.")]
    with ModelServer(script) as server:
        result = draft(project, spec, "codex", codex(server.url, tmp_path / "home", ""))

    assert_landed(project, server, result, answer(server))


@pytest.mark.timeout(240)
def test_codex_drafts_a_plan_with_its_shell_in_its_sandbox(tmp_path: Path) -> None:
    project, spec = without_plan(tmp_path)
    write = f"cat > \"$MEMENTO_PROPOSAL_FILE\" <<'PLAN'\n{PLAN}PLAN"
    script = [Call("exec_command", {"cmd": write}), Say("The plan is written.")]
    with ModelServer(script) as server:
        result = draft(project, spec, "codex", codex(server.url, tmp_path / "home", ""))

    assert_landed(project, server, result, answer(server))


@pytest.mark.timeout(240)
def test_aider_drafts_a_plan_by_editing_the_proposal_in_its_chat(tmp_path: Path) -> None:
    """aider edits only the files in its chat: the preset gives it the proposal (git
    ignores it: --add-gitignore-files) and hides every other file from it. A URL in the
    spec is data: aider, which would fetch it (--yes-always), is told not to look for any."""
    project, spec = without_plan(tmp_path)
    spec.write_text(SPEC + "\nThe format is described at https://example.com/format.\n")
    edit = f"{PROPOSAL_NAME}\n```\n<<<<<<< SEARCH\n=======\n{PLAN}>>>>>>> REPLACE\n```\n"
    with ModelServer([Say(edit)]) as server:
        launch = aider(server.url, tmp_path / "home", tmp_path / "unused.md")
        result = draft(project, spec, "aider", launch, "--model", "openai/gpt-4.1")

    assert_landed(project, server, result, "")
    assert len(server.turns) == 1  # the edit applied at once: nothing asked again
    # The prompt lists the repository's files, and aider adds each file a message names
    # to its chat (editable, its content sent along): none but the proposal joined it.
    assert "G = 1" not in server.turns[0].text  # src/guard.py's content


@pytest.mark.timeout(300)
def test_openclaw_drafts_a_plan_with_its_write_tool(tmp_path: Path) -> None:
    project, spec = without_plan(tmp_path)
    script = [
        Call("write", {"path": PROPOSAL_NAME, "content": PLAN}),
        Say("The plan is in the proposal file."),
    ]
    home = tmp_path / "home"
    with ModelServer(script) as server:
        launch = openclaw(server.url, home, "", project.root)
        launch.env["OPENCLAW_CONFIG_PATH"] = str(home / "openclaw.json")
        result = draft(project, spec, "openclaw", launch, "--model", "scripted/claude-sonnet-4-6")

    assert_landed(project, server, result, answer(server))


@pytest.mark.timeout(240)
def test_claude_revises_the_plan_by_editing_the_proposal_it_was_given(tmp_path: Path) -> None:
    """``revise`` starts the proposal as a copy of the plan: claude reads it and edits it
    with its own tools (its Edit needs a Read of the file first), and the revision lands."""
    blocked = PLAN.replace("- [ ] `T-102`", "- [!] `T-102`")
    project = make_project(tmp_path, blocked)
    proposal = str(project.root / PROPOSAL_NAME)
    edit = {
        "file_path": proposal,
        "old_string": "- [!] `T-102`",
        "new_string": "- [ ] `T-102`",
    }
    script = [
        Call("Read", {"file_path": proposal}),
        Call("Edit", edit),
        Say("T-102 is pending again."),
    ]
    with ModelServer(script) as server:
        launch = claude(server.url, tmp_path / "home", "")
        del launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]
        env = {**launch.env, **dict.fromkeys(UNSET, ""), "NO_COLOR": "1"}
        argv = ["plan", "revise", "--task", "T-102", "--agent", "claude", "--apply"]
        result = subprocess.run(
            [sys.executable, "-m", "memento_gh", *argv],
            cwd=project.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=200,
            check=False,
        )

    assert result.returncode == 0, result.stdout + result.stderr + answer(server)
    assert project.marker("T-102") == " "
    assert project.subjects()[0] == "memento: revise plan (T-102)"
    assert project.committed_files() == {"docs/MASTER_PLAN.md"}
    assert project.dirty() == []
    assert not (project.root / PROPOSAL_NAME).exists()
    assert server.outbound == []
