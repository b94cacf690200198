"""claude (Claude Code), for real: ``claude -p`` against the scripted Anthropic API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.model_server import Call, Fail, ModelServer, Say
from testing.real_agents import claude, run
from tests.agents_real.conftest import TASK, VERIFY, AnyText, git, sent

pytestmark = pytest.mark.slow

PROMPT = TASK.format(verify=VERIFY)


def result(stdout: str) -> dict[str, object]:
    """``--output-format json`` prints one JSON object: the result."""
    value = json.loads(stdout)
    assert isinstance(value, dict)
    return value


@pytest.mark.timeout(180)
def test_claude_writes_the_file_and_runs_the_verify(repo: Path, home: Path) -> None:
    script = [
        Call("Write", {"file_path": str(repo / "hello.txt"), "content": "hi\n"}),
        Call("Bash", {"command": VERIFY, "description": "Run the verify"}),
        Say("Done: hello.txt is written and the verify passed.", 1200, 80),
    ]
    with ModelServer(script) as server:
        finished = run(claude(server.url, home, PROMPT), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert (repo / "verify.marker").read_text() == "verified\n"
    assert server.played == 3
    assert sent(server.turns[:1], "Create hello.txt containing the line")
    tools = {tool["name"] for tool in server.turns[0].body["tools"]}
    assert {"Write", "Edit", "Bash", "Read"} <= tools
    assert server.outbound == []
    report = result(finished.stdout)
    assert report["is_error"] is False
    assert report["result"] == "Done: hello.txt is written and the verify passed."
    # usage counts the main loop; modelUsage every call, as total_cost_usd does.
    assert report["usage"]["input_tokens"] == 3200  # type: ignore[index]
    assert report["usage"]["output_tokens"] == 180  # type: ignore[index]
    (model_usage,) = report["modelUsage"].values()  # type: ignore[attr-defined]
    assert model_usage["inputTokens"] == 3200
    assert model_usage["outputTokens"] == 180
    assert model_usage["costUSD"] == report["total_cost_usd"] > 0


@pytest.mark.timeout(180)
def test_claude_refuses_git_commit_and_push_but_runs_other_commands(repo: Path, home: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    script = [
        Call("Write", {"file_path": str(repo / "hello.txt"), "content": "hi\n"}),
        Call("Bash", {"command": "git add -A && git commit -qm sneaky", "description": "c"}),
        Call("Bash", {"command": "git commit -qam sneaky", "description": "c"}),
        Call("Bash", {"command": "git push origin main", "description": "p"}),
        Call("Bash", {"command": "git status --short hello.txt > status.txt", "description": "s"}),
        Say("I could not commit."),
    ]
    with ModelServer(script) as server:
        finished = run(claude(server.url, home, PROMPT), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "status.txt").read_text() == "?? hello.txt\n"
    refused = [
        "git add -A && git commit -qm sneaky",
        "git commit -qam sneaky",
        "git push origin main",
    ]
    answers = [json.dumps(turn.body["messages"][-1]) for turn in server.turns[2:5]]
    assert answers == [
        AnyText(f"Permission to use Bash with command {command} has been denied.")
        for command in refused
    ]
    denied = [
        denial["tool_input"]["command"] for denial in result(finished.stdout)["permission_denials"]
    ]  # type: ignore[attr-defined]
    assert len(denied) == 3


@pytest.mark.timeout(120)
def test_a_429_from_an_api_key_ends_claude_with_exit_1_and_says_rate_limit(
    repo: Path, home: Path
) -> None:
    # CLAUDE_CODE_MAX_RETRIES=1 keeps this short: by default claude retries ten times,
    # about three minutes, before it gives up with the same words.
    with ModelServer([Fail("rate_limit", times=10)]) as server:
        finished = run(claude(server.url, home, PROMPT, max_retries=1), repo, timeout=100)

    assert finished.returncode == 1
    report = result(finished.stdout)
    assert report["is_error"] is True
    assert report["api_error_status"] == 429
    assert report["result"] == (
        "API Error: Request rejected (429) · This request would exceed your "
        "organization's rate limit. Please try again later."
    )
    assert len(server.turns) == 2


@pytest.mark.timeout(120)
def test_a_529_overloaded_ends_claude_with_exit_1(repo: Path, home: Path) -> None:
    with ModelServer([Fail("overloaded", times=10)]) as server:
        finished = run(claude(server.url, home, PROMPT, max_retries=1), repo, timeout=100)

    assert finished.returncode == 1
    report = result(finished.stdout)
    assert report["api_error_status"] == 529
    assert str(report["result"]).startswith(
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary"
    )


@pytest.mark.timeout(120)
def test_a_plan_usage_limit_ends_claude_at_once_and_says_when_it_resets(
    repo: Path, home: Path
) -> None:
    # Only a subscription (OAuth token) reads the unified rate-limit headers; it does not
    # retry a rejected limit, whatever CLAUDE_CODE_MAX_RETRIES says.
    with ModelServer([Fail("usage_limit", times=10)]) as server:
        finished = run(claude(server.url, home, PROMPT, subscription=True), repo, timeout=100)

    assert finished.returncode == 1
    report = result(finished.stdout)
    assert report["api_error_status"] == 429
    assert str(report["result"]).startswith("You've hit your session limit · resets ")
    assert len(server.turns) == 1
    assert server.turns[0].headers["authorization"] == "Bearer sk-ant-oat01-scripted"


@pytest.mark.timeout(120)
def test_claude_model_flag_reaches_the_request(repo: Path, home: Path) -> None:
    with ModelServer([Say("Nothing to do.")]) as server:
        finished = run(
            claude(server.url, home, PROMPT, model="claude-haiku-4-5"), repo, timeout=100
        )

    assert finished.returncode == 0, finished.output
    assert [turn.model for turn in server.turns] == ["claude-haiku-4-5"]
    assert list(result(finished.stdout)["modelUsage"]) == ["claude-haiku-4-5"]  # type: ignore[call-overload]


@pytest.mark.timeout(120)
def test_without_nonessential_traffic_off_claude_calls_home_and_asks_for_a_title(
    repo: Path, home: Path
) -> None:
    # Why CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: without it claude contacts
    # api.anthropic.com whatever ANTHROPIC_BASE_URL says, and asks the model for a session
    # title, which total_cost_usd and modelUsage count but usage does not.
    with ModelServer([Say("Nothing to do.")]) as server:
        launch = claude(server.url, home, PROMPT)
        del launch.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]
        finished = run(launch, repo, timeout=100)

    assert finished.returncode == 0, finished.output
    assert {request.path for request in server.outbound} == {"api.anthropic.com:443"}
    (title,) = [request for request in server.requests if request.api and not request.turn]
    assert "Write the title" in title.text
    report = result(finished.stdout)
    (model_usage,) = report["modelUsage"].values()  # type: ignore[attr-defined]
    assert report["usage"]["input_tokens"] == 1000  # type: ignore[index]
    assert model_usage["inputTokens"] == 1010  # the title's 10 tokens too
    assert model_usage["costUSD"] == report["total_cost_usd"]
