"""Provider limits read from each real CLI's final error (the texts are our own captures of
claude 2.1.197, codex 0.171.0, gemini 0.61.0, aider 0.86.2 and openclaw 2026.9.6 against
``testing/model_server.py``; ``testing/AGENT_FINDINGS.md``), and what must not read as one."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from memento_gh.engine.agents.limits import Limit, provider_limit

pytestmark = pytest.mark.timeout(10)

NOW = datetime(2026, 12, 1, 21, 30, 5, tzinfo=timezone.utc)


def claude_result(text: str, status: int | None, *, is_error: bool = True) -> str:
    report = {
        "type": "result",
        "subtype": "success",
        "is_error": is_error,
        "api_error_status": status,
        "duration_ms": 205,
        "num_turns": 1,
        "result": text,
        "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "modelUsage": {},
        "permission_denials": [],
    }
    return json.dumps(report) + "\n"


CODEX_WARNING = (
    "WARNING: proceeding, even though we could not create PATH aliases: Refusing to create "
    'helper binaries under temporary dir "/tmp"\n'
)


def codex_failed(message: str) -> str:
    return (
        '{"type":"thread.started","thread_id":"01a23365-c1f1-70b2-8ac9-a39dfd2d28a3"}\n'
        '{"type":"turn.started"}\n'
        + json.dumps({"type": "error", "message": message}, ensure_ascii=False)
        + "\n"
        + json.dumps({"type": "turn.failed", "error": {"message": message}}, ensure_ascii=False)
        + "\n"
        + CODEX_WARNING
    )


def gemini_error(message: str, code: int) -> str:
    trace = (
        "    at async GeminiChat.streamWithRetries (file:///tools/gemini/bundle/chunk.js:332079:29)\n"
        "    at async main (file:///tools/gemini/bundle/gemini.js:17627:5) {\n"
        "  cause: {\n"
        f"    code: {code},\n"
        "    message: 'You exceeded your current quota, please check your plan and billing "
        "details.',\n"
        "    details: [ [Object], [Object] ]\n"
        "  },\n"
        "  retryDelayMs: 1000,\n"
        f"  status: {code}\n"
        "}\n"
    )
    report = {
        "session_id": "7049c57f-0930-45e9-a28f-69116b6c6fcb",
        "error": {"type": "Error", "message": message, "code": code},
    }
    return trace + json.dumps(report, indent=2) + "\n"


AIDER_RATE_LIMITED = "The API provider has rate limited you. Try again later or check your quotas."
AIDER_RETRY = (
    "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for\n"
    "requests. Please try again in 1s.\n"
    "The API provider has rate limited you. Try again later or check your quotas.\n"
    "Retrying in 32.0 seconds...\n"
)


def aider_gave_up(error: str, last: str) -> str:
    return (
        "Aider v0.86.2\nModel: openai/gpt-4.1 with diff edit format\n"
        "Git repo: .git with 1 files\nRepo-map: disabled\n" + AIDER_RETRY + error + last + "\n"
    )


def openclaw_failed(message: str) -> str:
    envelope = {
        "ok": False,
        "status": "error",
        "final": "",
        "payloads": [],
        "model": None,
        "provider": None,
        "sessionId": "1b0f51aa-8857-4b8b-9170-fe0433dbfc2d",
        "error": {"message": message, "kind": "exception"},
    }
    return (
        json.dumps(envelope, indent=2, ensure_ascii=False)
        + '\n[diagnostic] lane task error: lane=main durationMs=4966 error="'
        + message
        + '"\n'
        + message
        + "\n"
    )


def read(
    agent: str, exit_code: int | None, output: str, *, timed_out: bool = False
) -> Limit | None:
    return provider_limit(agent, exit_code, timed_out, output, now=NOW)


REPLIES = [
    pytest.param(
        "claude",
        1,
        claude_result(
            "API Error: Request rejected (429) · This request would exceed your "
            "organization's rate limit. Please try again later.",
            429,
        ),
        "API Error: Request rejected (429) · This request would exceed your organization's "
        "rate limit. Please try again later.",
        id="claude-429",
    ),
    pytest.param(
        "claude",
        1,
        claude_result(
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try "
            "again in a moment. If it persists, check your inference gateway "
            "(127.0.0.1:39965).",
            529,
        ),
        "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try "
        "again in a moment. If it persists, check your inference gateway (127.0.0.1:39965).",
        id="claude-529",
    ),
    pytest.param(
        "claude",
        1,
        claude_result(
            "API Error: Repeated 529 Overloaded errors. The API is at capacity — this is "
            "usually temporary. Try again in a moment.",
            None,
        ),
        "API Error: Repeated 529 Overloaded errors. The API is at capacity — this is usually "
        "temporary. Try again in a moment.",
        id="claude-repeated-529",
    ),
    pytest.param(
        "codex",
        1,
        codex_failed("exceeded retry limit, last status: 429 Too Many Requests"),
        "exceeded retry limit, last status: 429 Too Many Requests",
        id="codex-429",
    ),
    pytest.param(
        "codex",
        1,
        codex_failed("Selected model is at capacity. Please try a different model."),
        "Selected model is at capacity. Please try a different model.",
        id="codex-503",
    ),
    pytest.param(
        "gemini",
        247,
        gemini_error("The model is overloaded. Please try again later.", 503),
        "The model is overloaded. Please try again later.",
        id="gemini-503",
    ),
    pytest.param(
        "gemini",
        173,
        gemini_error("You have exhausted your daily quota on this model.", 429),
        "You have exhausted your daily quota on this model.",
        id="gemini-daily",
    ),
    pytest.param(
        "aider",
        0,
        aider_gave_up(
            "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your\n"
            "current quota, please check your plan and billing details.\n",
            "The API provider has rate limited you. Try again later or check your quotas.",
        ),
        "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your current "
        "quota, please check your plan and billing details. The API provider has rate "
        "limited you. Try again later or check your quotas.",
        id="aider-quota",
    ),
    pytest.param(
        "aider",
        0,
        aider_gave_up(
            "litellm.ServiceUnavailableError: ServiceUnavailableError: OpenAIException - The\n"
            "server is overloaded. Please try again later.\n",
            "The API provider's servers are down or overloaded.",
        ),
        "litellm.ServiceUnavailableError: ServiceUnavailableError: OpenAIException - The "
        "server is overloaded. Please try again later. The API provider's servers are down "
        "or overloaded.",
        id="aider-503",
    ),
    pytest.param(
        "openclaw",
        1,
        openclaw_failed("⚠️ API rate limit reached. Please try again later."),
        "⚠️ API rate limit reached. Please try again later.",
        id="openclaw-429",
    ),
    pytest.param(
        "openclaw",
        1,
        openclaw_failed("The AI service is temporarily overloaded. Please try again in a moment."),
        "The AI service is temporarily overloaded. Please try again in a moment.",
        id="openclaw-529",
    ),
]


@pytest.mark.parametrize(("agent", "exit_code", "output", "words"), REPLIES)
def test_each_clis_limit_is_read_with_its_words(
    agent: str, exit_code: int, output: str, words: str
) -> None:
    assert read(agent, exit_code, output) == Limit(words)


@pytest.mark.parametrize(("agent", "exit_code", "output", "words"), REPLIES)
def test_the_command_agent_knows_every_shape(
    agent: str, exit_code: int, output: str, words: str
) -> None:
    found = read("command", exit_code, output)
    assert found is not None and found.words == words


def test_claudes_plan_limit_says_when_it_resets() -> None:
    found = read(
        "claude", 1, claude_result("You've hit your session limit · resets 9:57pm (UTC)", 429)
    )
    assert found == Limit(
        "You've hit your session limit · resets 9:57pm (UTC)",
        datetime(2026, 12, 1, 21, 57, tzinfo=timezone.utc),
        "resets 9:57pm (UTC)",
    )
    assert found.when == "2026-12-01T21:57:00Z (resets 9:57pm (UTC))"


def test_a_reset_time_already_past_today_is_tomorrows() -> None:
    found = read("claude", 1, claude_result("You've hit your weekly limit · resets 7am (UTC)", 429))
    assert found is not None
    assert found.retry_at == datetime(2026, 12, 2, 7, 0, tzinfo=timezone.utc)


def test_a_reset_in_a_named_zone_is_turned_into_utc() -> None:
    text = "You've hit your Opus limit · resets Dec 8, 3pm (Europe/Paris)"
    found = read("claude", 1, claude_result(text, 429))
    assert found is not None
    assert found.retry_at == datetime(2026, 12, 8, 14, 0, tzinfo=timezone.utc)
    assert found.retry_words == "resets Dec 8, 3pm (Europe/Paris)"


def test_a_reset_in_a_zone_unknown_here_keeps_the_agents_words() -> None:
    found = read(
        "claude", 1, claude_result("You've hit your session limit · resets 9pm (Mars/Olympus)", 429)
    )
    assert found is not None
    assert (found.retry_at, found.when) == (None, "resets 9pm (Mars/Olympus)")


def test_codex_says_when_to_try_again_in_the_machines_local_time() -> None:
    message = (
        "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
        "https://chatgpt.com/settings/usage to purchase more credits or try again at 9:57 PM."
    )
    found = read("codex", 1, codex_failed(message))
    assert found == Limit(
        message, datetime(2026, 12, 1, 21, 57, tzinfo=timezone.utc), "try again at 9:57 PM"
    )
    seven_hours_behind = timezone(timedelta(hours=-7))
    later = provider_limit(
        "codex", 1, False, codex_failed(message), now=NOW, local=seven_hours_behind
    )
    assert later is not None
    # 21:30 UTC is 14:30 there: 9:57 PM there is 04:57 UTC the next day.
    assert later.retry_at == datetime(2026, 12, 2, 4, 57, tzinfo=timezone.utc)


def test_codex_names_the_day_when_the_limit_resets_on_another_one() -> None:
    # Seen with codex 0.171 at 23:16 UTC, its plan's limit resetting an hour later.
    message = (
        "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
        "https://chatgpt.com/settings/usage to purchase more credits or try again at "
        "Dec 2nd, 2026 12:16 AM."
    )
    found = read("codex", 1, codex_failed(message))
    assert found == Limit(
        message,
        datetime(2026, 12, 2, 0, 16, tzinfo=timezone.utc),
        "try again at Dec 2nd, 2026 12:16 AM",
    )


def test_gemini_suggests_a_delay() -> None:
    message = (
        "You exceeded your current quota, please check your plan and billing details.\n"
        "Suggested retry after 1s."
    )
    found = read("gemini", 173, gemini_error(message, 429))
    assert found == Limit(
        "You exceeded your current quota, please check your plan and billing details. "
        "Suggested retry after 1s.",
        NOW + timedelta(seconds=1),
        "retry after 1s",
    )


def test_aiders_rate_limit_reads_the_providers_delay() -> None:
    error = (
        "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for\n"
        "requests. Please try again in 1s.\n"
    )
    output = aider_gave_up(error, AIDER_RATE_LIMITED)
    found = read("aider", 0, output)
    assert found == Limit(
        "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for "
        "requests. Please try again in 1s. " + AIDER_RATE_LIMITED,
        NOW + timedelta(seconds=1),
        "try again in 1s",
    )


def test_a_long_message_is_cut() -> None:
    found = read("codex", 1, codex_failed("usage limit " + "x" * 1000))
    assert found is not None and len(found.words) == 300 and found.words.endswith("…")


NOT_LIMITS = [
    pytest.param(
        "claude", 1, claude_result("API Error: 500 Internal server error", 500), id="claude-500"
    ),
    pytest.param(
        "claude",
        1,
        claude_result("Not logged in · Please run /login", None),
        id="claude-logged-out",
    ),
    pytest.param(
        "claude",
        0,
        claude_result(
            "Done: the client now retries on HTTP 429 (rate limit) and 529 overloaded.",
            None,
            is_error=False,
        ),
        id="claude-task-about-rate-limits",
    ),
    pytest.param(
        "claude",
        1,
        "Error: You've hit your session limit, says the verify\n",
        id="claude-no-result-json",
    ),
    pytest.param(
        "codex",
        1,
        '{"type":"item.completed","item":{"type":"command_execution","aggregated_output":'
        '"HTTP 429 Too Many Requests: rate limit exceeded","exit_code":1}}\n'
        + codex_failed("stream disconnected before completion"),
        id="codex-verify-printed-429",
    ),
    pytest.param(
        "codex",
        0,
        '{"type":"item.completed","item":{"type":"agent_message","text":"I added a rate limit '
        'of 429 per quota window."}}\n{"type":"turn.completed","usage":{"input_tokens":1}}\n',
        id="codex-task-about-rate-limits",
    ),
    pytest.param("gemini", 41, gemini_error("Invalid auth method selected.", 400), id="gemini-400"),
    pytest.param(
        "gemini",
        0,
        json.dumps({"response": "Rate limit of 429 per minute added.", "stats": {}}) + "\n",
        id="gemini-task-about-rate-limits",
    ),
    pytest.param(
        "aider",
        0,
        "Running: pytest -q\nE   assert resp.status == 429, 'rate limited'\n"
        "The API provider has rate limited you, says the test\n",
        id="aider-verify-output",
    ),
    pytest.param(
        "aider",
        0,
        "Tokens: 900 sent, 40 received. Cost: $0.0021 message, $0.0021 session.\n"
        "Applied edit to ratelimit.py\n",
        id="aider-done",
    ),
    pytest.param(
        "openclaw",
        1,
        openclaw_failed("Unknown model: anthropic/claude-sonnet-4-5"),
        id="openclaw-model",
    ),
    pytest.param(
        "command", 1, "rate limit exceeded: 429 Too Many Requests\n", id="command-plain-text"
    ),
]


@pytest.mark.parametrize(("agent", "exit_code", "output"), NOT_LIMITS)
def test_other_failures_and_words_about_limits_are_no_limit(
    agent: str, exit_code: int, output: str
) -> None:
    assert read(agent, exit_code, output) is None


@pytest.mark.parametrize(("agent", "exit_code", "output", "words"), REPLIES)
def test_a_timeout_is_no_limit(agent: str, exit_code: int, output: str, words: str) -> None:
    assert read(agent, None, output, timed_out=True) is None
    assert read(agent, exit_code, output, timed_out=True) is None
