"""A scripted model server, served over real HTTP on 127.0.0.1, for the real agent CLIs.

It speaks enough of four model APIs for claude, codex, gemini and aider to carry out one
task each, as they do against the real providers:

==================================================  ==========================================
``POST /v1/messages`` (``stream`` or not)           Anthropic Messages: claude
``POST /v1/responses`` (SSE)                        OpenAI Responses: codex
``POST /v1/chat/completions`` (``stream`` or not)   OpenAI Chat Completions: aider (litellm)
``POST /v1beta/models/M:generateContent``           Gemini, and ``:streamGenerateContent``
                                                    (``?alt=sse``): gemini-cli
==================================================  ==========================================

Each request that asks the model for its next step is a *turn*: the server answers it with
the next step of its script, in that API's own shape, with the usage (input and output
tokens) in that API's own fields. A step is one of

- :class:`Call`: call the tool ``name`` (as the CLI names it in the tools it sends) with
  these arguments; ``custom=True`` sends a Responses ``custom_tool_call`` (codex's freeform
  ``apply_patch``) whose input is the text ``arguments["input"]``;
- :class:`Say`: answer with text (aider edits files by answering with edit blocks);
- :class:`Fail`: answer an error instead: ``"rate_limit"`` (HTTP 429), ``"overloaded"``
  (Anthropic's 529, a 503 elsewhere) or ``"usage_limit"`` (each provider's quota shape:
  Anthropic's rejected unified limit, OpenAI's ``usage_limit_reached``, Gemini's daily
  ``RESOURCE_EXHAUSTED``). ``times`` answers it to that many requests in a row.

When the script has run out, every turn is answered with the text ``done``.

The CLIs also ask side questions that are not the agent's next step: claude a title for the
session, gemini which model to route to and whether the model or the user speaks next. An
Anthropic or Gemini request is a side question when it offers no tools (or, for Gemini,
asks for a JSON answer); every Responses and Chat Completions request is a turn (codex asks
no side questions, aider sends no tools). Side questions get a short answer of their own and
leave the script where it is. Whatever else a CLI asks at start-up (model lists,
counting tokens, version checks, telemetry) is answered minimally; every request is
recorded (:attr:`ModelServer.requests`), so a test can see what went where.

In a test::

    script = [Call("Write", {"file_path": "a.txt", "content": "hi"}), Say("All done.")]
    with ModelServer(script) as server:
        ...  # ANTHROPIC_BASE_URL=server.url claude -p ...
    assert "the task" in json.dumps(server.turns[0].body)
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import uuid
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

JSON = dict[str, Any]

FAULTS = ("rate_limit", "overloaded", "usage_limit")
# What the model lists name, for the CLIs that ask which models there are.
MODELS = (
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "gpt-5-codex",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
)
# A usage limit's reset, as the providers give it: an hour from now.
RESET_SECONDS = 3600


class Call(NamedTuple):
    """A turn that calls one tool."""

    name: str
    arguments: JSON
    custom: bool = False
    input_tokens: int = 1000
    output_tokens: int = 50


class Say(NamedTuple):
    """A turn that answers with text."""

    text: str
    input_tokens: int = 1000
    output_tokens: int = 50


class Fail(NamedTuple):
    """A turn answered with an error: one of :data:`FAULTS`, ``times`` requests in a row."""

    kind: str
    times: int = 1
    retry_after: int = 0


Step = Call | Say | Fail


class Request(NamedTuple):
    """One request as the server got it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case
    body: Any  # the JSON body, or the text when it is not JSON, or None
    api: str  # "anthropic", "responses", "chat", "gemini", or "" for anything else
    turn: bool  # answered with a step of the script (or the final ``done``)

    @property
    def text(self) -> str:
        """The whole body as text, for ``"the prompt" in request.text``."""
        return self.body if isinstance(self.body, str) else json.dumps(self.body)

    @property
    def model(self) -> str:
        """The model the request names (Gemini names it in the path)."""
        if self.api == "gemini":
            return self.path.rsplit("/", 1)[-1].split(":", 1)[0]
        return str(self.body.get("model", "")) if isinstance(self.body, dict) else ""


class Answer(NamedTuple):
    """One HTTP answer: the status, the body (JSON value, or SSE text) and headers."""

    status: int
    body: Any
    headers: dict[str, str] = {}  # noqa: RUF012 - NamedTuple default, never mutated
    sse: bool = False


class ModelServer:
    """A model provider for the agent CLIs, playing ``script``, behind a real HTTP server."""

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.script: list[Step] = list(script)
        for step in self.script:
            if isinstance(step, Fail) and step.kind not in FAULTS:
                raise ValueError(f"unknown fault {step.kind!r}: one of {', '.join(FAULTS)}")
        self.host = host
        self.port = port
        self.requests: list[Request] = []
        self._played = 0  # steps of the script answered so far
        self._failed = 0  # requests the current Fail step has answered
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- the server ------------------------------------------------------------------------

    def start(self) -> ModelServer:
        if self._server is None:
            server = _Server((self.host, self.port), _Handler)
            server.model = self
            self.port = server.server_address[1]
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever, args=(0.05,), name="model-server", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is not None:
            server.shutdown()
            if thread is not None:
                thread.join(timeout=5)
            server.server_close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The root URL, without a path (``ANTHROPIC_BASE_URL``)."""
        return f"http://{self.host}:{self.port}"

    # -- what tests read -------------------------------------------------------------------

    @property
    def turns(self) -> list[Request]:
        """The requests answered with a step of the script (or the final ``done``)."""
        with self._lock:
            return [request for request in self.requests if request.turn]

    @property
    def played(self) -> int:
        """How many steps of the script have been answered."""
        with self._lock:
            return self._played

    @property
    def outbound(self) -> list[Request]:
        """The requests for other hosts, that came here through the proxy variables."""
        with self._lock:
            return [r for r in self.requests if r.method == "CONNECT" or "://" in r.path]

    def paths(self) -> list[str]:
        with self._lock:
            return [f"{request.method} {request.path}" for request in self.requests]

    # -- answering -------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        headers = {name.lower(): value for name, value in headers.items()}
        if method == "CONNECT" or target.startswith(("http://", "https://")):
            # A request meant for another host, sent here as to a proxy (the tests set
            # HTTPS_PROXY to this server): nothing may leave the machine.
            with self._lock:
                self.requests.append(Request(method, target, {}, headers, None, "", False))
            return Answer(403, {"error": "nothing leaves this machine"})
        parts = urlsplit(target)
        path, query = parts.path, dict(parse_qsl(parts.query))
        body = _decode(raw, headers)
        api = _api(method, path)
        turn = bool(api) and isinstance(body, dict) and self._is_turn(api, body)
        with self._lock:
            self.requests.append(Request(method, path, query, headers, body, api, turn))
            step = self._next_step() if turn else None
        if not api:
            return _housekeeping(method, path)
        assert isinstance(body, dict)
        if step is None and not turn:
            return _SIDE_ANSWERS[api](body, path, query)
        if isinstance(step, Fail):
            return _fault(api, step)
        return _ANSWERS[api](step or Say("done"), body, path, query)

    def _is_turn(self, api: str, body: JSON) -> bool:
        if api == "anthropic":
            return bool(body.get("tools"))
        if api == "gemini":
            config = body.get("generationConfig") or {}
            return bool(body.get("tools")) and "responseJsonSchema" not in config
        # codex asks no side questions (and some models get their tools inside the input);
        # aider sends no tools at all.
        return True

    def _next_step(self) -> Step | None:
        """The step for this turn (under the lock); None once the script has run out."""
        if self._played >= len(self.script):
            return None
        step = self.script[self._played]
        if isinstance(step, Fail):
            self._failed += 1
            if self._failed >= step.times:
                self._failed = 0
                self._played += 1
            return step
        self._played += 1
        return step


def _decode(raw: bytes, headers: dict[str, str]) -> Any:
    encoding = headers.get("content-encoding", "")
    if encoding == "gzip":
        raw = gzip.decompress(raw)
    elif encoding == "deflate":
        raw = zlib.decompress(raw)
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _api(method: str, path: str) -> str:
    if method != "POST":
        return ""
    if path.endswith("/messages") and not path.endswith("count_tokens"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    return ""


def _sse(events: Iterable[tuple[str | None, Any]]) -> str:
    """Server-sent events: ``event:`` lines where the API names its events."""
    chunks = []
    for name, data in events:
        line = f"event: {name}\n" if name else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        chunks.append(f"{line}data: {payload}\n\n")
    return "".join(chunks)


def _ident(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def _stamp() -> int:
    return int(time.time())


# -- Anthropic Messages --------------------------------------------------------------------


def _anthropic(step: Call | Say, body: JSON, path: str, query: dict[str, str]) -> Answer:
    model = str(body.get("model", "claude"))
    usage = {
        "input_tokens": step.input_tokens,
        "output_tokens": step.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    ident = _ident("msg")
    if isinstance(step, Call):
        block: JSON = {"type": "tool_use", "id": f"toolu_{ident}", "name": step.name}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": step.text}
        stop = "end_turn"
    if not body.get("stream"):
        content = dict(block, input=step.arguments) if isinstance(step, Call) else block
        message = {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [content],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        return Answer(200, message)
    start: JSON = {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": dict(usage, output_tokens=1),
    }
    if isinstance(step, Call):
        opening = dict(block, input={})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step.arguments)}
    else:
        opening = dict(block, text="")
        delta = {"type": "text_delta", "text": step.text}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": opening},
        ),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": step.output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return Answer(200, _sse(events), sse=True)


def _anthropic_side(body: JSON, path: str, query: dict[str, str]) -> Answer:
    return _anthropic(
        Say('{"title": "Scripted task", "isNewTopic": false}', 10, 5), body, path, query
    )


# -- OpenAI Responses ----------------------------------------------------------------------


def _responses(step: Call | Say, body: JSON, path: str, query: dict[str, str]) -> Answer:
    ident = _ident("resp")
    model = str(body.get("model", "gpt"))
    if isinstance(step, Call):
        call_id = f"call_{ident}"
        if step.custom:
            item: JSON = {
                "type": "custom_tool_call",
                "id": f"ctc_{ident}",
                "status": "completed",
                "call_id": call_id,
                "name": step.name,
                "input": str(step.arguments.get("input", "")),
            }
        else:
            item = {
                "type": "function_call",
                "id": f"fc_{ident}",
                "status": "completed",
                "call_id": call_id,
                "name": step.name,
                "arguments": json.dumps(step.arguments),
            }
        deltas: list[tuple[str | None, Any]] = []
    else:
        item = {
            "type": "message",
            "id": f"msg_{ident}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}],
        }
        deltas = [
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": step.text,
                },
            )
        ]
    usage = {
        "input_tokens": step.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": step.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": step.input_tokens + step.output_tokens,
    }
    response = {
        "id": ident,
        "object": "response",
        "created_at": _stamp(),
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    done = dict(response, status="completed", output=[item], usage=usage)
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": response}),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
        *deltas,
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": done}),
    ]
    if not body.get("stream", True):
        return Answer(200, done)
    return Answer(200, _sse(events), sse=True)


def _responses_side(body: JSON, path: str, query: dict[str, str]) -> Answer:
    return _responses(Say("Scripted task", 10, 5), body, path, query)


# -- OpenAI Chat Completions ---------------------------------------------------------------


def _chat(step: Call | Say, body: JSON, path: str, query: dict[str, str]) -> Answer:
    ident = _ident("chatcmpl")
    model = str(body.get("model", "gpt"))
    usage = {
        "prompt_tokens": step.input_tokens,
        "completion_tokens": step.output_tokens,
        "total_tokens": step.input_tokens + step.output_tokens,
    }
    message: JSON = {"role": "assistant", "content": None}
    if isinstance(step, Call):
        message["tool_calls"] = [
            {
                "id": f"call_{ident}",
                "type": "function",
                "function": {"name": step.name, "arguments": json.dumps(step.arguments)},
            }
        ]
        finish = "tool_calls"
    else:
        message["content"] = step.text
        finish = "stop"
    base = {"id": ident, "created": _stamp(), "model": model}
    if not body.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        return Answer(200, dict(base, object="chat.completion", choices=[choice], usage=usage))
    chunk = dict(base, object="chat.completion.chunk")
    delta: JSON = {"role": "assistant"}
    if isinstance(step, Call):
        delta["tool_calls"] = [dict(message["tool_calls"][0], index=0)]
    else:
        delta["content"] = step.text
    events: list[tuple[str | None, Any]] = [
        (None, dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
        (None, dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
    ]
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, dict(chunk, choices=[], usage=usage)))
    events.append((None, "[DONE]"))
    return Answer(200, _sse(events), sse=True)


def _chat_side(body: JSON, path: str, query: dict[str, str]) -> Answer:
    return _chat(Say("ok", 10, 5), body, path, query)


# -- Gemini --------------------------------------------------------------------------------


def _gemini(step: Call | Say, body: JSON, path: str, query: dict[str, str]) -> Answer:
    model = path.rsplit("/", 1)[-1].split(":", 1)[0]
    if isinstance(step, Call):
        part: JSON = {"functionCall": {"name": step.name, "args": step.arguments}}
    else:
        part = {"text": step.text}
    answer = {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": step.input_tokens,
            "candidatesTokenCount": step.output_tokens,
            "totalTokenCount": step.input_tokens + step.output_tokens,
        },
        "modelVersion": model,
        "responseId": f"gemini-{_stamp()}",
    }
    if path.endswith(":streamGenerateContent"):
        if query.get("alt") == "sse":
            return Answer(200, _sse([(None, answer)]), sse=True)
        return Answer(200, [answer])
    return Answer(200, answer)


def _gemini_side(body: JSON, path: str, query: dict[str, str]) -> Answer:
    # gemini-cli's side questions ask for JSON: who speaks next, which model to route to,
    # whether the session loops. One answer with every field they read serves them all.
    verdict = {
        "reasoning": "The scripted model has finished its turn.",
        "next_speaker": "user",
        "model_choice": "flash",
        "complexity_reasoning": "A scripted task.",
        "complexity_score": 1,
        "is_loop": False,
        "confidence": 0.0,
    }
    return _gemini(Say(json.dumps(verdict), 10, 5), body, path, query)


_ANSWERS = {"anthropic": _anthropic, "responses": _responses, "chat": _chat, "gemini": _gemini}
_SIDE_ANSWERS = {
    "anthropic": _anthropic_side,
    "responses": _responses_side,
    "chat": _chat_side,
    "gemini": _gemini_side,
}


# -- faults --------------------------------------------------------------------------------


def _fault(api: str, fault: Fail) -> Answer:
    reset = _stamp() + RESET_SECONDS
    headers = {"retry-after": str(fault.retry_after)}
    if api == "anthropic":
        return _anthropic_fault(fault.kind, reset, headers)
    if api == "gemini":
        return _gemini_fault(fault.kind, fault.retry_after, headers)
    return _openai_fault(fault.kind, reset, headers, chat=api == "chat")


def _anthropic_fault(kind: str, reset: int, headers: dict[str, str]) -> Answer:
    if kind == "overloaded":
        error = {"type": "overloaded_error", "message": "Overloaded"}
        return Answer(529, {"type": "error", "error": error}, headers)
    if kind == "usage_limit":
        # A subscription's limit: the unified rate-limit headers say rejected, and when.
        headers = dict(
            headers,
            **{
                "anthropic-ratelimit-unified-status": "rejected",
                "anthropic-ratelimit-unified-reset": str(reset),
                "anthropic-ratelimit-unified-representative-claim": "five_hour",
                "anthropic-ratelimit-unified-5h-status": "rejected",
                "anthropic-ratelimit-unified-5h-reset": str(reset),
            },
        )
    error = {
        "type": "rate_limit_error",
        "message": "This request would exceed your organization's rate limit. "
        "Please try again later.",
    }
    return Answer(429, {"type": "error", "error": error}, headers)


def _openai_fault(kind: str, reset: int, headers: dict[str, str], *, chat: bool) -> Answer:
    if kind == "overloaded":
        error: JSON = {
            "message": "The server is overloaded. Please try again later.",
            "type": "server_error",
            "code": "server_is_overloaded",
            "param": None,
        }
        return Answer(503, {"error": error}, headers)
    if kind == "usage_limit" and chat:
        # An API key's quota: what Chat Completions answers when the credit is spent.
        error = {
            "message": "You exceeded your current quota, please check your plan and billing "
            "details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
        return Answer(429, {"error": error}, headers)
    if kind == "usage_limit":
        # A ChatGPT plan's limit, as codex gets it.
        error = {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "plan_type": "plus",
            "resets_at": reset,
            "resets_in_seconds": RESET_SECONDS,
        }
        return Answer(429, {"error": error}, headers)
    error = {
        "message": "Rate limit reached for requests. Please try again in 1s.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    return Answer(429, {"error": error}, headers)


def _gemini_fault(kind: str, retry_after: int, headers: dict[str, str]) -> Answer:
    if kind == "overloaded":
        error: JSON = {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
        return Answer(503, {"error": error}, headers)
    quota = (
        "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
        if kind == "usage_limit"
        else "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    )
    error = {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/"
                        "generate_content_free_tier_requests",
                        "quotaId": quota,
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after}s"},
        ],
    }
    return Answer(429, {"error": error}, headers)


# -- everything else -----------------------------------------------------------------------


def _housekeeping(method: str, path: str) -> Answer:
    """Model lists, token counts and anything else: a minimal answer of the right kind."""
    if path.endswith("/count_tokens"):
        return Answer(200, {"input_tokens": 100})
    if path.endswith(":countTokens"):
        return Answer(200, {"totalTokens": 100})
    if method == "GET" and path.rstrip("/").endswith("/models"):
        data = [
            {"id": name, "object": "model", "type": "model", "display_name": name}
            for name in MODELS
        ]
        gemini = [{"name": f"models/{name}"} for name in MODELS]
        return Answer(200, {"data": data, "object": "list", "models": gemini, "has_more": False})
    return Answer(200, {})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: ModelServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30  # an idle keep-alive connection frees its thread

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else self._chunked()
        answer = self.server.model.handle(self.command, self.path, dict(self.headers), raw)
        if answer.sse:
            payload = str(answer.body).encode("utf-8")
            kind = "text/event-stream; charset=utf-8"
        else:
            payload = json.dumps(answer.body).encode("utf-8")
            kind = "application/json"
        self.send_response(answer.status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _chunked(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return b""
        chunks: list[bytes] = []
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if not size:
                self.rfile.readline()
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _serve

    def do_CONNECT(self) -> None:
        """A tunnel through this server as a proxy: recorded as outbound, and refused."""
        self.server.model.handle("CONNECT", self.path, dict(self.headers), b"")
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: :attr:`ModelServer.requests` is the log."""
