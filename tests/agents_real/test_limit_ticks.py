"""A provider limit through a real ``memento tick --agent <preset>``: the real CLI (found on
PATH as ``.tools/bin/<cli>``) against the scripted model server, which answers every request
with a 429 or a spent usage limit. The tick ends ``deferred``: no retry counted, the
breaker's count unmoved, the plan still ``auto``, the claim released, and the status entry
holds the CLI's own words (and when to try again, where it says). Each CLI's own retries are
capped so that the test is short; aider's cannot be (``AGENT_FINDINGS.md``), so its test
waits out its nine tries, about 70 s."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memento_gh.formats.status_log import ParsedEntry
from testing.model_server import Fail, ModelServer
from testing.real_agents import aider, claude, codex, gemini, openclaw
from testing.ticks import Project
from tests.agents_real.test_ticks import project_for, tick

pytestmark = pytest.mark.slow


def assert_deferred(project: Project, result: subprocess.CompletedProcess[str]) -> ParsedEntry:
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    (entry,) = project.entries()
    assert entry.outcome == "deferred", said
    plan = project.plan()
    task = plan.task("T-101")
    assert task is not None
    assert (task.marker, task.retries, task.claimed) == (" ", 0, None)
    assert plan.settings.tick_mode == "auto"
    assert plan.settings.consecutive_failed_ticks == 0
    assert project.dirty() == []
    assert "tick: ran — T-101 deferred" in result.stdout
    return entry


# Aider's test first: the longest starts first when pytest-xdist hands tests out in order.
@pytest.mark.timeout(300)
def test_aider_at_a_spent_quota_exits_0_and_the_tick_is_deferred(tmp_path: Path) -> None:
    project, _, _ = project_for(tmp_path, "src/a.py")
    home = tmp_path / "home"
    with ModelServer([Fail("usage_limit", times=100)]) as server:
        # client_retries=0: one request a try (its settings file sits in its home), not three.
        launch = aider(server.url, home, tmp_path / "unused.md", client_retries=0)
        result = tick(project, "aider", launch)

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"] == (
        "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your "
        "current quota, please check your plan and billing details. "
        "The API provider has rate limited you. Try again later or check your quotas."
    )
    assert len(server.turns) >= 9


@pytest.mark.timeout(240)
def test_claude_at_a_429_is_deferred(tmp_path: Path) -> None:
    project, _, _ = project_for(tmp_path, "src/a.py")
    with ModelServer([Fail("rate_limit", times=10)]) as server:
        result = tick(project, "claude", claude(server.url, tmp_path / "home", "", max_retries=0))

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"] == (
        "API Error: Request rejected (429) · This request would exceed your organization's "
        "rate limit. Please try again later."
    )
    assert len(server.turns) == 1


@pytest.mark.timeout(240)
def test_claude_at_its_plan_limit_is_deferred_until_it_resets(tmp_path: Path) -> None:
    project, _, _ = project_for(tmp_path, "src/a.py")
    with ModelServer([Fail("usage_limit", times=10)]) as server:
        launch = claude(server.url, tmp_path / "home", "", subscription=True)
        result = tick(project, "claude", launch)

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"].startswith("You've hit your session limit · resets ")
    assert entry.fields["Try Again"].endswith("(UTC))")


@pytest.mark.timeout(240)
def test_codex_at_its_usage_limit_is_deferred_with_when_to_try_again(tmp_path: Path) -> None:
    project, _, _ = project_for(tmp_path, "src/a.py")
    with ModelServer([Fail("usage_limit", times=20)]) as server:
        result = tick(project, "codex", codex(server.url, tmp_path / "home", "", retries=0))

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"].startswith("You’ve hit your usage limit.")
    assert " (try again at " in entry.fields["Try Again"]
    assert len(server.turns) == 1


@pytest.mark.timeout(240)
def test_codex_at_a_429_is_deferred(tmp_path: Path) -> None:
    project, _, _ = project_for(tmp_path, "src/a.py")
    with ModelServer([Fail("rate_limit", times=20)]) as server:
        result = tick(project, "codex", codex(server.url, tmp_path / "home", "", retries=0))

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"] == (
        "exceeded retry limit, last status: 429 Too Many Requests"
    )
    assert len(server.turns) == 1


@pytest.mark.timeout(240)
def test_gemini_at_a_429_is_deferred_and_says_its_suggested_delay(tmp_path: Path) -> None:
    project, _, _ = project_for(tmp_path, "src/a.py")
    with ModelServer([Fail("rate_limit", times=20, retry_after=1)]) as server:
        launch = gemini(server.url, tmp_path / "home", "", max_attempts=1)
        result = tick(project, "gemini", launch)

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"] == (
        "You exceeded your current quota, please check your plan and billing details. "
        "Suggested retry after 1s."
    )
    assert entry.fields["Try Again"].endswith("Z (retry after 1s)")
    assert len(server.turns) == 1


@pytest.mark.timeout(240)
def test_gemini_at_its_daily_quota_is_deferred(tmp_path: Path) -> None:
    project, _, _ = project_for(tmp_path, "src/a.py")
    with ModelServer([Fail("usage_limit", times=20)]) as server:
        result = tick(project, "gemini", gemini(server.url, tmp_path / "home", ""))

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"] == "You have exhausted your daily quota on this model."


@pytest.mark.timeout(300)
def test_openclaw_at_a_429_is_deferred_with_its_retries_bounded_through_agent_args(
    tmp_path: Path,
) -> None:
    # openclaw's retries are a session setting in its state folder (AGENT_FINDINGS.md); the
    # user's --agent-args name that folder.
    project, _, _ = project_for(tmp_path, "src/a.py")
    home = tmp_path / "home"
    with ModelServer([Fail("rate_limit", times=100)]) as server:
        launch = openclaw(server.url, home, "", project.root, max_retries=1)
        launch.env["OPENCLAW_CONFIG_PATH"] = str(home / "openclaw.json")
        state = f"--agent-args=--state-dir {home / 'openclaw-state'}"
        result = tick(project, "openclaw", launch, state)

    entry = assert_deferred(project, result)
    assert entry.fields["Provider Limit"] == "⚠️ API rate limit reached. Please try again later."
    assert len(server.turns) == 2
