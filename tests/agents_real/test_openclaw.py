"""openclaw, for real: ``openclaw agent exec`` (on the Node 24 that scripts/setup installs for
it) against the scripted Anthropic API, named as a provider in its config file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testing.model_server import Call, Fail, ModelServer, Say
from testing.real_agents import executable, openclaw, run
from tests.agents_real.conftest import TASK, VERIFY, git, sent

pytestmark = pytest.mark.slow

PROMPT = TASK.format(verify=VERIFY)


def envelope(stdout: str) -> dict[str, Any]:
    """``--json`` prints one JSON object, the agent-exec envelope."""
    value = json.loads(stdout)
    assert isinstance(value, dict)
    return value


def help_text(*command: str) -> str:
    return subprocess.run(
        [executable("openclaw"), *command, "--help"],
        check=True,
        capture_output=True,
        text=True,
        timeout=100,
    ).stdout


@pytest.mark.timeout(120)
def test_openclaw_agent_has_the_flags_the_preset_uses() -> None:
    agent = help_text("agent")
    for flag in ("--local", "--agent <id>", "--session-id <id>", "--message-file <path>"):
        assert flag in agent
    for flag in ("--json", "--timeout <seconds>", "--model <id>", "--thinking <level>"):
        assert flag in agent
    # The one-shot command: no agent to add first, the repository as its working directory.
    one_shot = help_text("agent", "exec")
    for flag in ("--message-file <path>", "--cwd <dir>", "--model <provider/model>"):
        assert flag in one_shot
    for flag in ("--config <path>", "--isolated", "--auth-env-only", "--json"):
        assert flag in one_shot


@pytest.mark.timeout(240)
def test_openclaw_writes_the_file_and_runs_the_verify(repo: Path, home: Path) -> None:
    script = [
        Call("write", {"path": "hello.txt", "content": "hi\n"}),
        Call("exec", {"command": VERIFY}),
        Say("Done: hello.txt is written and the verify passed.", 1200, 80),
    ]
    with ModelServer(script) as server:
        finished = run(openclaw(server.url, home, PROMPT, repo), repo, timeout=200)

    assert finished.returncode == 0, finished.output
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert (repo / "verify.marker").read_text() == "verified\n"
    assert server.played == 3
    assert sent(server.turns[:1], "Create hello.txt containing the line")
    tools = {tool["name"] for tool in server.turns[0].body["tools"]}
    assert {"write", "edit", "apply_patch", "exec", "read"} <= tools
    assert server.outbound == []
    report = envelope(finished.stdout)
    assert (report["ok"], report["status"]) == (True, "ok")
    assert report["final"] == "Done: hello.txt is written and the verify passed."
    assert (report["provider"], report["model"]) == ("scripted", "claude-sonnet-4-6")
    assert report["usage"]["input"] == 3200
    assert report["usage"]["output"] == 180
    # The price comes from the config's model entry: $3 / $15 per million tokens.
    assert report["costUsd"] == report["usage"]["cost"]["total"] == pytest.approx(0.0123)


@pytest.mark.timeout(240)
def test_openclaw_has_no_rule_against_git_commit_so_memento_must_check_head(
    repo: Path, home: Path
) -> None:
    # Its exec permissions are allow-lists (tools.exec.mode), with no deny rule for a
    # command: out of the box the agent commits.
    head = git(repo, "rev-parse", "HEAD")
    script = [
        Call("write", {"path": "hello.txt", "content": "hi\n"}),
        Call("exec", {"command": "git add -A && git commit -qm sneaky"}),
        Say("Committed."),
    ]
    with ModelServer(script) as server:
        finished = run(openclaw(server.url, home, PROMPT, repo), repo, timeout=200)

    assert finished.returncode == 0, finished.output
    assert git(repo, "rev-parse", "HEAD~1") == head
    assert git(repo, "log", "-1", "--format=%s") == "sneaky"


@pytest.mark.timeout(240)
def test_openclaw_model_flag_reaches_the_request(repo: Path, home: Path) -> None:
    with ModelServer([Say("Nothing to do.")]) as server:
        finished = run(
            openclaw(server.url, home, PROMPT, repo, model="claude-opus-4-6"), repo, timeout=200
        )

    assert finished.returncode == 0, finished.output
    assert [turn.model for turn in server.turns] == ["claude-opus-4-6"]
    assert envelope(finished.stdout)["model"] == "claude-opus-4-6"


@pytest.mark.timeout(400)
def test_a_429_ends_openclaw_with_exit_1_after_three_minutes_of_retries(
    repo: Path, home: Path
) -> None:
    # Ten attempts, waits growing to 30 s; not configurable in openclaw.json.
    with ModelServer([Fail("rate_limit", times=100)]) as server:
        finished = run(openclaw(server.url, home, PROMPT, repo), repo, timeout=350)

    assert finished.returncode == 1
    report = envelope(finished.stdout)
    assert (report["ok"], report["status"]) == (False, "error")
    assert report["error"] == {
        "message": "⚠️ API rate limit reached. Please try again later.",
        "kind": "exception",
    }
    assert "reason=rate_limit" in finished.stderr
    assert len(server.turns) == 10
