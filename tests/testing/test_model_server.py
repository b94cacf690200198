"""The scripted model server answers each API in its own shape, plays its script in order,
keeps side questions out of it, records every request and refuses to be a way out."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

from testing.model_server import Call, Fail, ModelServer, Say

TOOLS = [{"name": "Write", "input_schema": {"type": "object"}}]
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "write_file"}]}]


class Answer(NamedTuple):
    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)

    def events(self) -> list[tuple[str | None, Any]]:
        """The server-sent events: (event name or None, parsed data)."""
        found = []
        for block in self.text.strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines())
            data = fields["data"]
            found.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
        return found


def post(url: str, path: str, body: object) -> Answer:
    request = urllib.request.Request(
        f"{url}{path}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "x-api-key": "k"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw, status, got = response.read(), response.status, response.headers
    except urllib.error.HTTPError as error:
        raw, status, got = error.read(), error.code, error.headers
    return Answer(status, {k.lower(): v for k, v in got.items()}, raw.decode())


@pytest.fixture
def server() -> Iterator[ModelServer]:
    script = [
        Call("Write", {"file_path": "a.txt", "content": "hi"}, input_tokens=7, output_tokens=3),
        Say("All done.", input_tokens=11, output_tokens=2),
    ]
    with ModelServer(script) as running:
        yield running


def test_anthropic_streams_a_tool_call_then_text_with_usage(server: ModelServer) -> None:
    body = {
        "model": "claude-x",
        "stream": True,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "the task"}],
    }
    first = post(server.url, "/v1/messages?beta=true", body)
    second = post(server.url, "/v1/messages", body)

    assert first.status == 200
    assert first.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in first.events()]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    events = dict(first.events())
    assert events["content_block_start"]["content_block"]["name"] == "Write"
    delta = events["content_block_delta"]["delta"]
    assert delta["type"] == "input_json_delta"
    assert json.loads(delta["partial_json"]) == {"file_path": "a.txt", "content": "hi"}
    assert events["message_start"]["message"]["usage"]["input_tokens"] == 7
    assert events["message_delta"]["usage"] == {"output_tokens": 3}
    assert events["message_delta"]["delta"]["stop_reason"] == "tool_use"
    text = dict(second.events())["content_block_delta"]["delta"]
    assert text == {"type": "text_delta", "text": "All done."}
    assert [request.query for request in server.turns] == [{"beta": "true"}, {}]
    assert "the task" in server.turns[0].text
    assert server.turns[0].model == "claude-x"
    assert server.turns[0].headers["x-api-key"] == "k"


def test_anthropic_answers_whole_messages_when_not_streaming(server: ModelServer) -> None:
    answer = post(server.url, "/v1/messages", {"model": "m", "tools": TOOLS, "messages": []})

    message = answer.json()
    assert message["type"] == "message"
    assert message["content"] == [
        {
            "type": "tool_use",
            "id": message["content"][0]["id"],
            "name": "Write",
            "input": {"file_path": "a.txt", "content": "hi"},
        }
    ]
    assert message["usage"]["input_tokens"] == 7
    assert message["stop_reason"] == "tool_use"


def test_a_side_question_is_answered_without_moving_the_script(server: ModelServer) -> None:
    title = post(server.url, "/v1/messages", {"model": "haiku", "messages": []})
    turn = post(server.url, "/v1/messages", {"model": "m", "tools": TOOLS, "messages": []})

    assert title.json()["content"][0]["type"] == "text"
    assert turn.json()["content"][0]["name"] == "Write"
    assert server.played == 1
    assert [request.turn for request in server.requests] == [False, True]


def test_when_the_script_has_run_out_every_turn_is_answered_done(server: ModelServer) -> None:
    for _ in range(3):
        last = post(server.url, "/v1/messages", {"model": "m", "tools": TOOLS, "messages": []})

    assert last.json()["content"] == [{"type": "text", "text": "done"}]
    assert server.played == 2


def test_responses_stream_function_and_custom_tool_calls_and_usage() -> None:
    script = [
        Call("exec_command", {"cmd": "ls"}),
        Call("apply_patch", {"input": "*** Begin Patch\n"}, custom=True),
        Say("ok", input_tokens=5, output_tokens=1),
    ]
    with ModelServer(script) as server:
        answers = [post(server.url, "/v1/responses", {"model": "gpt", "input": []}) for _ in script]

    items = [dict(answer.events())["response.output_item.done"]["item"] for answer in answers]
    assert (items[0]["type"], items[0]["name"], json.loads(items[0]["arguments"])) == (
        "function_call",
        "exec_command",
        {"cmd": "ls"},
    )
    assert (items[1]["type"], items[1]["input"]) == ("custom_tool_call", "*** Begin Patch\n")
    assert items[2]["content"][0] == {"type": "output_text", "text": "ok", "annotations": []}
    completed = dict(answers[2].events())["response.completed"]["response"]
    assert completed["status"] == "completed"
    assert completed["usage"]["input_tokens"] == 5
    assert completed["usage"]["output_tokens"] == 1


def test_chat_completions_answer_whole_or_streamed_with_usage() -> None:
    with ModelServer([Say("edit block", 9, 4), Say("streamed", 9, 4)]) as server:
        whole = post(server.url, "/v1/chat/completions", {"model": "gpt", "messages": []})
        streamed = post(
            server.url,
            "/v1/chat/completions",
            {"model": "gpt", "stream": True, "stream_options": {"include_usage": True}},
        )

    assert whole.json()["choices"][0]["message"]["content"] == "edit block"
    assert whole.json()["usage"] == {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    chunks = [data for _, data in streamed.events()]
    assert chunks[0]["choices"][0]["delta"]["content"] == "streamed"
    assert chunks[1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[2]["usage"]["completion_tokens"] == 4
    assert chunks[3] == "[DONE]"


def test_gemini_answers_function_calls_in_sse_and_json_side_questions() -> None:
    with ModelServer([Call("write_file", {"file_path": "a"}), Say("bye")]) as server:
        path = "/v1beta/models/gemini-x"
        router = post(
            server.url,
            f"{path}:generateContent",
            {"contents": [], "generationConfig": {"responseJsonSchema": {}}},
        )
        streamed = post(
            server.url, f"{path}:streamGenerateContent?alt=sse", {"tools": GEMINI_TOOLS}
        )
        whole = post(server.url, f"{path}:generateContent", {"tools": GEMINI_TOOLS})

    verdict = json.loads(router.json()["candidates"][0]["content"]["parts"][0]["text"])
    assert verdict["next_speaker"] == "user"
    ((_, chunk),) = streamed.events()
    assert chunk["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "write_file", "args": {"file_path": "a"}}}
    ]
    assert chunk["usageMetadata"]["promptTokenCount"] == 1000
    assert whole.json()["candidates"][0]["content"]["parts"] == [{"text": "bye"}]
    assert [request.model for request in server.turns] == ["gemini-x", "gemini-x"]
    assert server.turns[0].query == {"alt": "sse"}


@pytest.mark.parametrize(
    ("path", "kind", "status", "error"),
    [
        ("/v1/messages", "rate_limit", 429, {"type": "rate_limit_error"}),
        ("/v1/messages", "overloaded", 529, {"type": "overloaded_error"}),
        ("/v1/messages", "usage_limit", 429, {"type": "rate_limit_error"}),
        ("/v1/responses", "rate_limit", 429, {"code": "rate_limit_exceeded"}),
        ("/v1/responses", "usage_limit", 429, {"type": "usage_limit_reached"}),
        ("/v1/responses", "overloaded", 503, {"code": "server_is_overloaded"}),
        ("/v1/chat/completions", "usage_limit", 429, {"code": "insufficient_quota"}),
        ("/v1beta/models/g:generateContent", "rate_limit", 429, {"status": "RESOURCE_EXHAUSTED"}),
        ("/v1beta/models/g:generateContent", "overloaded", 503, {"status": "UNAVAILABLE"}),
    ],
)
def test_each_fault_answers_in_its_apis_shape(
    path: str, kind: str, status: int, error: dict[str, str]
) -> None:
    with ModelServer([Fail(kind, times=2, retry_after=3), Say("recovered")]) as server:
        body = {"tools": GEMINI_TOOLS if "gemini" in path or path.startswith("/v1beta") else TOOLS}
        answers = [post(server.url, path, body) for _ in range(3)]

    assert [answer.status for answer in answers] == [status, status, 200]
    assert error.items() <= answers[0].json()["error"].items()
    assert answers[0].headers["retry-after"] == "3"
    assert "recovered" in answers[2].text


def test_a_plan_limit_carries_anthropics_unified_headers_and_gemini_a_daily_quota() -> None:
    with ModelServer([Fail("usage_limit"), Fail("usage_limit")]) as server:
        anthropic = post(server.url, "/v1/messages", {"tools": TOOLS})
        gemini = post(server.url, "/v1beta/models/g:generateContent", {"tools": GEMINI_TOOLS})

    assert anthropic.headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert int(anthropic.headers["anthropic-ratelimit-unified-reset"]) > 0
    (violation,) = gemini.json()["error"]["details"][0]["violations"]
    assert "PerDay" in violation["quotaId"]


def test_an_unknown_fault_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault 'quota'"):
        ModelServer([Fail("quota")])


def test_start_up_requests_get_minimal_answers_and_are_recorded(server: ModelServer) -> None:
    counted = post(server.url, "/v1/messages/count_tokens", {"messages": []})
    with urllib.request.urlopen(f"{server.url}/v1/models", timeout=10) as response:
        models = json.loads(response.read())

    assert counted.json() == {"input_tokens": 100}
    assert "claude-sonnet-4-5" in [model["id"] for model in models["data"]]
    assert server.paths() == ["POST /v1/messages/count_tokens", "GET /v1/models"]
    assert server.played == 0


def test_requests_for_other_hosts_are_recorded_as_outbound_and_refused(
    server: ModelServer,
) -> None:
    tunnel = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    tunnel.request("CONNECT", "telemetry.example.com:443")
    refused = tunnel.getresponse().status
    tunnel.close()
    plain = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    plain.request("GET", "http://updates.example.com/latest")
    also_refused = plain.getresponse().status
    plain.close()

    assert (refused, also_refused) == (403, 403)
    assert [request.path for request in server.outbound] == [
        "telemetry.example.com:443",
        "http://updates.example.com/latest",
    ]
