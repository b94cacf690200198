"""gemini (Gemini CLI), for real: ``gemini -p`` against the scripted Gemini API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from testing.model_server import Call, Fail, ModelServer, Say
from testing.real_agents import gemini, run
from tests.agents_real.conftest import TASK, VERIFY, git, sent

pytestmark = pytest.mark.slow

PROMPT = TASK.format(verify=VERIFY)


def last_json(text: str) -> dict[str, Any]:
    """The JSON object ``-o json`` prints last (on stdout, or on stderr after an error)."""
    start = text.rindex("\n{\n") + 1 if "\n{\n" in text else text.index("{")
    value = json.loads(text[start:])
    assert isinstance(value, dict)
    return value


def tool_answer(body: dict[str, Any]) -> dict[str, Any]:
    """What gemini sent back for the last tool call."""
    response = body["contents"][-1]["parts"][0]["functionResponse"]["response"]
    assert isinstance(response, dict)
    return response


@pytest.mark.timeout(180)
def test_gemini_writes_the_file_and_runs_the_verify(repo: Path, home: Path) -> None:
    script = [
        Call("write_file", {"file_path": "hello.txt", "content": "hi\n"}),
        Call("run_shell_command", {"command": VERIFY, "description": "Run the verify"}),
        Say("Done: hello.txt is written and the verify passed.", 1200, 80),
    ]
    with ModelServer(script) as server:
        finished = run(gemini(server.url, home, PROMPT), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert (repo / "verify.marker").read_text() == "verified\n"
    assert server.played == 3
    assert sent(server.turns[:1], "Create hello.txt containing the line")
    tools = {
        declaration["name"]
        for tool in server.turns[0].body["tools"]
        for declaration in tool.get("functionDeclarations", [])
    }
    assert {"write_file", "replace", "run_shell_command", "read_file"} <= tools
    assert server.outbound == []
    report = last_json(finished.stdout)
    assert report["response"] == "Done: hello.txt is written and the verify passed."
    # Tokens per model (the router's side question is a model of its own); no price.
    main = [
        usage["tokens"]
        for usage in report["stats"]["models"].values()
        if "main" in usage.get("roles", {})
    ]
    assert [(tokens["input"], tokens["candidates"]) for tokens in main] == [(3200, 180)]


@pytest.mark.timeout(180)
def test_gemini_policy_refuses_git_commit_and_push_but_runs_other_commands(
    repo: Path, home: Path
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    script = [
        Call("write_file", {"file_path": "hello.txt", "content": "hi\n"}),
        Call("run_shell_command", {"command": "git add -A && git commit -qm sneaky"}),
        Call("run_shell_command", {"command": "git commit -qam sneaky"}),
        Call("run_shell_command", {"command": "git push origin main"}),
        Call("run_shell_command", {"command": "git status --short hello.txt > status.txt"}),
        Say("I could not commit."),
    ]
    with ModelServer(script) as server:
        finished = run(gemini(server.url, home, PROMPT), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "status.txt").read_text() == "?? hello.txt\n"
    answers = [tool_answer(turn.body) for turn in server.turns[2:5]]
    assert answers == [{"error": "Tool execution denied by policy."}] * 3


@pytest.mark.timeout(120)
def test_a_per_minute_429_ends_gemini_with_exit_173_after_its_retries(
    repo: Path, home: Path
) -> None:
    # Exit 173 is 429 & 0xFF: gemini exits with the HTTP status. By default it makes ten
    # attempts, waiting up to 30 s between them (four minutes); general.maxAttempts bounds it.
    with ModelServer([Fail("rate_limit", times=20, retry_after=1)]) as server:
        finished = run(gemini(server.url, home, PROMPT, max_attempts=1), repo, timeout=100)

    assert finished.returncode == 173
    assert finished.stdout == ""
    assert last_json(finished.stderr)["error"] == {
        "type": "Error",
        "message": "You exceeded your current quota, please check your plan and billing "
        "details.\nSuggested retry after 1s.",
        "code": 429,
    }
    assert len(server.turns) == 1


@pytest.mark.timeout(120)
def test_a_daily_quota_ends_gemini_at_once_with_exit_173(repo: Path, home: Path) -> None:
    with ModelServer([Fail("usage_limit", times=20)]) as server:
        finished = run(gemini(server.url, home, PROMPT), repo, timeout=100)

    assert finished.returncode == 173
    assert "TerminalQuotaError: You have exhausted your daily quota on this model." in (
        finished.stderr
    )
    assert last_json(finished.stderr)["error"] == {
        "type": "Error",
        "message": "You have exhausted your daily quota on this model.",
        "code": 429,
    }
    assert len(server.turns) == 1


@pytest.mark.timeout(120)
def test_an_overloaded_model_ends_gemini_with_exit_247(repo: Path, home: Path) -> None:
    with ModelServer([Fail("overloaded", times=20)]) as server:
        finished = run(gemini(server.url, home, PROMPT, max_attempts=1), repo, timeout=100)

    assert finished.returncode == 247  # 503 & 0xFF
    assert last_json(finished.stderr)["error"]["message"] == (
        "The model is overloaded. Please try again later."
    )


@pytest.mark.timeout(120)
def test_gemini_model_flag_reaches_the_request_and_skips_the_router(repo: Path, home: Path) -> None:
    with ModelServer([Say("Nothing to do.")]) as server:
        finished = run(gemini(server.url, home, PROMPT, model="gemini-2.5-pro"), repo, timeout=100)

    assert finished.returncode == 0, finished.output
    assert [request.model for request in server.requests if request.api] == ["gemini-2.5-pro"]
    assert list(last_json(finished.stdout)["stats"]["models"]) == ["gemini-2.5-pro"]


@pytest.mark.timeout(120)
def test_without_skip_trust_gemini_exits_55_in_a_new_folder(repo: Path, home: Path) -> None:
    # Every new CI runner is such a folder: this is why the preset needs --skip-trust.
    with ModelServer([Say("Nothing to do.")]) as server:
        finished = run(gemini(server.url, home, PROMPT, trust=False), repo, timeout=100)

    assert finished.returncode == 55
    assert "Gemini CLI is not running in a trusted directory." in finished.stderr
    assert server.turns == []


@pytest.mark.timeout(120)
def test_without_its_settings_file_gemini_refuses_the_base_url_and_reports_usage_home(
    repo: Path, home: Path
) -> None:
    # GOOGLE_GEMINI_BASE_URL alone switches gemini's auth type: exit 41. And unless
    # privacy.usageStatisticsEnabled is false, it sends usage statistics to Google.
    with ModelServer([Say("Nothing to do.")]) as server:
        launch = gemini(server.url, home, PROMPT)
        (home / ".gemini" / "settings.json").unlink()
        refused = run(launch, repo, timeout=100)
    assert refused.returncode == 41
    assert last_json(refused.stderr)["error"]["message"] == "Invalid auth method selected."

    auth_only = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    with ModelServer([Say("Nothing to do.")]) as server:
        launch = gemini(server.url, home, PROMPT)
        (home / ".gemini" / "settings.json").write_text(json.dumps(auth_only))
        finished = run(launch, repo, timeout=100)
    assert finished.returncode == 0, finished.output
    assert {request.path for request in server.outbound} == {"play.googleapis.com:443"}
