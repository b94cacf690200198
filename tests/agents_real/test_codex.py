"""codex (OpenAI Codex CLI), for real: ``codex exec`` against the scripted Responses API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testing.model_server import Call, Fail, ModelServer, Say
from testing.real_agents import codex, run
from tests.agents_real.conftest import TASK, VERIFY, git, sent

pytestmark = pytest.mark.slow

PROMPT = TASK.format(verify=VERIFY)
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"


def events(stdout: str) -> list[dict[str, Any]]:
    """``--json`` prints one JSON event a line."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def tool_output(body: dict[str, Any]) -> str:
    """What codex sent back for the last tool call."""
    return str(body["input"][-1]["output"])


@pytest.mark.timeout(180)
def test_codex_writes_the_file_and_runs_the_verify(repo: Path, home: Path) -> None:
    script = [
        Call("apply_patch", {"input": PATCH}, custom=True),
        Call("exec_command", {"cmd": VERIFY}),
        Say("Done: hello.txt is written and the verify passed.", 1200, 80),
    ]
    with ModelServer(script) as server:
        finished = run(codex(server.url, home, PROMPT), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert (repo / "verify.marker").read_text() == "verified\n"
    assert server.played == 3
    assert sent(server.turns[:1], "Create hello.txt containing the line")
    tools = {tool.get("name") for tool in server.turns[0].body["tools"]}
    assert {"exec_command", "apply_patch"} <= tools
    assert server.outbound == []
    seen = events(finished.stdout)
    (completed,) = [event for event in seen if event["type"] == "turn.completed"]
    # One turn.completed for the whole exec: every request's tokens added up. No price.
    assert completed["usage"]["input_tokens"] == 3200
    assert completed["usage"]["output_tokens"] == 180
    messages = [e["item"]["text"] for e in seen if e.get("item", {}).get("type") == "agent_message"]
    assert messages == ["Done: hello.txt is written and the verify passed."]


@pytest.mark.timeout(180)
def test_codex_sandbox_keeps_git_read_only(repo: Path, home: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    script = [
        Call("apply_patch", {"input": PATCH}, custom=True),
        Call("exec_command", {"cmd": "git add -A && git commit -qm sneaky"}),
        Call("exec_command", {"cmd": "git commit -qam sneaky"}),
        Call("exec_command", {"cmd": "git status --short hello.txt > status.txt"}),
        Say("I could not commit."),
    ]
    with ModelServer(script) as server:
        finished = run(codex(server.url, home, PROMPT), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "status.txt").read_text() == "?? hello.txt\n"
    for turn in server.turns[2:4]:
        assert "index.lock': Read-only file system" in tool_output(turn.body)


@pytest.mark.timeout(120)
def test_a_429_ends_codex_with_exit_1_and_says_retry_limit(repo: Path, home: Path) -> None:
    # codex retries a 429 five times itself (the provider's request_max_retries),
    # waiting as retry-after says.
    with ModelServer([Fail("rate_limit", times=20)]) as server:
        finished = run(codex(server.url, home, PROMPT), repo, timeout=100)

    assert finished.returncode == 1
    failed = [event for event in events(finished.stdout) if event["type"] == "turn.failed"]
    assert failed == [
        {
            "type": "turn.failed",
            "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"},
        }
    ]
    assert len(server.turns) == 6


@pytest.mark.timeout(120)
def test_a_plan_usage_limit_ends_codex_at_once_and_says_when_to_try_again(
    repo: Path, home: Path
) -> None:
    with ModelServer([Fail("usage_limit", times=20)]) as server:
        finished = run(codex(server.url, home, PROMPT), repo, timeout=100)

    assert finished.returncode == 1
    (failed,) = [event for event in events(finished.stdout) if event["type"] == "turn.failed"]
    message = failed["error"]["message"]
    assert message.startswith("You’ve hit your usage limit.")
    assert " or try again at " in message
    assert len(server.turns) == 1


@pytest.mark.timeout(120)
def test_an_overloaded_model_ends_codex_with_exit_1(repo: Path, home: Path) -> None:
    with ModelServer([Fail("overloaded", times=100)]) as server:
        finished = run(codex(server.url, home, PROMPT), repo, timeout=100)

    assert finished.returncode == 1
    (failed,) = [event for event in events(finished.stdout) if event["type"] == "turn.failed"]
    assert failed["error"]["message"] == (
        "Selected model is at capacity. Please try a different model."
    )


@pytest.mark.timeout(120)
def test_codex_model_flag_reaches_the_request(repo: Path, home: Path) -> None:
    with ModelServer([Say("Nothing to do.")]) as server:
        finished = run(codex(server.url, home, PROMPT, model="gpt-5.6-sol"), repo, timeout=100)

    assert finished.returncode == 0, finished.output
    assert [turn.model for turn in server.turns] == ["gpt-5.6-sol"]
