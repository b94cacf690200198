"""Each fixed preset through a real ``memento tick --agent <preset>``: the real CLI (found on
PATH as ``.tools/bin/<cli>``) against the scripted model server. The agent writes the file
and runs the task's verify itself, memento's own verify passes, and the commit lands.

The verify appends a line to a marker outside the repository each time it runs: two lines
are the agent's run and memento's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from testing.model_server import Call, ModelServer, Say
from testing.real_agents import Launch, aider, claude, codex, gemini, openclaw
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
        budget_per_day="5",  # the claude preset passes it on as --max-budget-usd 5.00
    )
    return make_project(tmp_path, plan), marker, verify


def tick(
    project: Project, agent: str, launch: Launch, *options: str
) -> subprocess.CompletedProcess[str]:
    """``memento tick --agent <agent> <options>`` in a process of its own, with the CLI's
    environment (its home, key and base URL; ``.tools/bin`` first on PATH) and nothing else."""
    env = {**launch.env, **dict.fromkeys(UNSET, ""), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "memento_gh", "tick", "--agent", agent, *options],
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


def assert_spend_recorded(project: Project, server: ModelServer, *, priced: bool) -> None:
    """The status entry's Cost names the tokens of every request the CLI made, its side
    questions included (the server reports 1000 in / 50 out a turn, 10 / 5 a side
    question), and a price where the CLI gives one."""
    side = [request for request in server.requests if request.api and not request.turn]
    tokens_in = 1000 * len(server.turns) + 10 * len(side)
    tokens_out = 50 * len(server.turns) + 5 * len(side)
    cost = project.entries()[-1].fields["Cost"]
    assert f"{tokens_in:,} tokens in / {tokens_out:,} out" in cost
    assert cost.startswith("$") is priced, cost


def cost_of(project: Project) -> str:
    """The status entry's ``Cost`` line: ``$0.01, 3,200 tokens in / 180 out, model``."""
    return project.entries()[-1].fields["Cost"]


@pytest.mark.timeout(240)
def test_claude_preset_runs_the_verify_itself_on_the_chosen_model_and_the_tick_commits(
    tmp_path: Path,
) -> None:
    project, marker, verify = project_for(tmp_path, "src/a.py")
    script = [
        Call("Write", {"file_path": str(project.root / "src/a.py"), "content": "A = 1\n"}),
        Call("Bash", {"command": verify, "description": "Run the task's verify"}),
        Call("Bash", {"command": "git commit -qam sneaky", "description": "Commit"}),
        Say("Done: src/a.py is written and the verify passed."),
    ]
    with ModelServer(script) as server:
        launch = claude(server.url, tmp_path / "home", "")
        del launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]  # the preset sets it
        # The user's arguments go before --disallowedTools, which takes every value after it.
        args = "--agent-args=--append-system-prompt 'Mind the MEMENTO-ARGS marker.'"
        result = tick(project, "claude", launch, "--model", "claude-haiku-4-5", args)

    assert_done(project, result, "src/a.py")
    assert marker.read_text() == "verified\nverified\n"
    assert_spend_recorded(project, server, priced=True)
    answer = str(server.turns[2].body["messages"][-1])
    assert "Permission" not in answer and "requires approval" not in answer
    # The git rules still hold after the user's arguments.
    refused = str(server.turns[3].body["messages"][-1])
    assert "Permission to use Bash with command git commit -qam sneaky has been denied" in refused
    assert {turn.model for turn in server.turns} == {"claude-haiku-4-5"}
    assert "MEMENTO-ARGS marker" in str(server.turns[0].body["system"])
    # Its price, tokens and model are in the status entry (the amounts are claude's report).
    assert re.fullmatch(
        r"\$[\d.]+, [\d,]+ tokens in / [\d,]+ out, claude-haiku-4-5", cost_of(project)
    )
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
        launch = gemini(server.url, tmp_path / "home", "")
        result = tick(project, "gemini", launch, "--model", "gemini-2.5-pro")

    assert_done(project, result, "src/a.py")
    assert marker.read_text() == "verified\nverified\n"
    assert_spend_recorded(project, server, priced=False)  # the router's questions counted
    # The chosen model, and no router's side question on another.
    assert [turn.model for turn in server.requests] == ["gemini-2.5-pro"] * 3
    assert re.fullmatch(r"[\d,]+ tokens in / [\d,]+ out, gemini-2.5-pro", cost_of(project))
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
        launch = aider(server.url, tmp_path / "home", prompt)
        result = tick(project, "aider", launch, "--model", "openai/gpt-4.1-mini")

    assert_done(project, result, "lib/a.py")
    assert marker.read_text() == "verified\nverified\n"
    assert len(server.turns) == 1  # the test passed: nothing to send back
    assert_spend_recorded(project, server, priced=True)
    assert server.turns[0].body["model"] == "gpt-4.1-mini"
    assert re.fullmatch(
        r"\$[\d.]+, [\d,]+ tokens in / [\d,]+ out, openai/gpt-4.1-mini", cost_of(project)
    )
    # memento's own files, named in the prompt as off limits, stay out of aider's chat.
    (log,) = (project.root / "logs").glob("tick_*.log")
    added = [line for line in log.read_text().splitlines() if line.startswith("Added ")]
    assert added == ["Added lib/a.py to the chat."]


@pytest.mark.timeout(240)
def test_codex_preset_runs_the_verify_itself_in_its_sandbox_and_the_tick_commits(
    tmp_path: Path,
) -> None:
    project, marker, verify = project_for(tmp_path, "src/a.py")
    patch = "*** Begin Patch\n*** Add File: src/a.py\n+A = 1\n*** End Patch\n"
    script = [
        Call("apply_patch", {"input": patch}, custom=True),
        Call("exec_command", {"cmd": verify}),
        Say("Done: src/a.py is written and the verify passed.", 1200, 80),
    ]
    with ModelServer(script) as server:
        # The provider is the user's: an entry in $CODEX_HOME/config.toml, whose default
        # model here is another than the one chosen.
        launch = codex(server.url, tmp_path / "home", "")
        config = tmp_path / "home" / ".codex" / "config.toml"
        config.write_text(config.read_text().replace('model = "gpt-5.5"', 'model = "gpt-6.2-sol"'))
        result = tick(project, "codex", launch, "--model", "gpt-5.5")

    assert_done(project, result, "src/a.py")
    assert marker.read_text() == "verified\nverified\n"
    assert server.played == 3
    assert server.outbound == []
    assert [turn.model for turn in server.turns] == ["gpt-5.5"] * 3
    assert cost_of(project) == "3,200 tokens in / 180 out, gpt-5.5"


@pytest.mark.timeout(300)
def test_openclaw_preset_runs_one_headless_turn_in_the_repository_and_the_tick_commits(
    tmp_path: Path,
) -> None:
    project, marker, verify = project_for(tmp_path, "src/a.py")
    script = [
        Call("write", {"path": "src/a.py", "content": "A = 1\n"}),
        Call("exec", {"command": verify}),
        Say("Done: src/a.py is written and the verify passed.", 1200, 80),
    ]
    home = tmp_path / "home"
    with ModelServer(script) as server:
        launch = openclaw(server.url, home, "", project.root)
        # The provider and the default model are the user's: their openclaw.json, here
        # named by OPENCLAW_CONFIG_PATH. No `openclaw agents add` beforehand.
        launch.env["OPENCLAW_CONFIG_PATH"] = str(home / "openclaw.json")
        result = tick(project, "openclaw", launch, "--model", "scripted/claude-opus-4-6")

    assert_done(project, result, "src/a.py")
    assert marker.read_text() == "verified\nverified\n"
    assert server.played == 3
    assert server.outbound == []
    assert [turn.model for turn in server.turns] == ["claude-opus-4-6"] * 3
    # The price as openclaw reports it (3,200 in, 180 out at $3/$15 a million), not rounded:
    # the spend ledger adds these up.
    assert cost_of(project) == "$0.0123, 3,200 tokens in / 180 out, scripted/claude-opus-4-6"
    assert project.plan().settings.spend_total.render() == "$0.0123, 3200 in, 180 out"


@pytest.mark.timeout(240)
def test_aider_finds_mementos_identity_on_a_machine_whose_git_names_nobody(
    tmp_path: Path,
) -> None:
    # As under cron: no user.name/user.email in any git config, only GIT_AUTHOR_* and
    # GIT_COMMITTER_* in the environment. On its own, aider then writes `user.name = Your
    # Name` into .git/config (test_aider.py), which fails the task.
    project, _, _ = project_for(tmp_path, "lib/a.py")
    project.git("config", "--unset", "user.name")
    project.git("config", "--unset", "user.email")
    config = (project.root / ".git" / "config").read_bytes()
    answer = "lib/a.py\n```\n<<<<<<< SEARCH\n=======\nA = 1\n>>>>>>> REPLACE\n```\n"
    with ModelServer([Say(answer)]) as server:
        launch = aider(server.url, tmp_path / "home", tmp_path / "unused.md")
        (tmp_path / "home" / ".gitconfig").unlink()
        for role in ("AUTHOR", "COMMITTER"):
            launch.env[f"GIT_{role}_NAME"] = "Cron Job"
            launch.env[f"GIT_{role}_EMAIL"] = "cron@example.com"
        result = tick(project, "aider", launch)

    assert_done(project, result, "lib/a.py")
    assert (project.root / ".git" / "config").read_bytes() == config
    assert project.git("log", "-1", "--format=%an <%ae>").strip() == "Cron Job <cron@example.com>"
