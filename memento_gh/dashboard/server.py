"""The web adapter: Starlette routes for the page and its JSON API, served by uvicorn.

The only importer of Starlette and uvicorn. Reads go through ``repo``, writes through
``controls.apply_control`` after ``writes`` has checked who asks and what. Endpoints:

- ``GET /``: the page, with this run's token in a ``<meta>``;
- ``GET /static/app.js``, ``/static/style.css``;
- ``GET /api/version``: ``{"version"}``, a stamp of the files, polled by the page;
- ``GET /api/state``: everything the page shows (``snapshot.build``);
- ``GET /api/log?path=logs/tick_….log``: the end of a tick's log (text);
- ``GET /api/diff?tick=N&task=T-ID``: ``git show`` of the commit of that run (text);
- ``POST /api/controls/{pause|resume|stop|retry|skip|note}`` with a JSON body: see
  ``writes.read_order``; answers ``{"message", "version"}`` or ``{"error"}`` with a 4xx;
- ``POST /api/architect/{propose|apply|discard}`` (when the dashboard was given an agent):
  the architect proposes a revision of a task, answered with its diff, or the proposal is
  applied or discarded (``architect/flows.py``).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from importlib import resources
from typing import TYPE_CHECKING, Any, NamedTuple

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memento_gh.controls.apply import apply_control
from memento_gh.dashboard import first_paint, repo, writes
from memento_gh.dashboard.writes import Rejected
from memento_gh.errors import UserError
from memento_gh.layout import Layout
from memento_gh.plan.values import TASK_ID

#: How long a control waits for a running tick to let go of the lock before it gives up.
LOCK_WAIT = 2.0
POLL_MS = 2000
SECURITY_HEADERS = {
    # The page's own files only: no inline script, nothing fetched from elsewhere.
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}

if TYPE_CHECKING:
    from memento_gh.architect.run import AgentSettings

Clock = Callable[[], datetime]
Endpoint = Callable[[Request], Response]


def create_app(
    layout: Layout,
    token: str,
    hosts: writes.HostRule,
    clock: Clock,
    architect: AgentSettings | None = None,
) -> Starlette:
    dashboard = _Dashboard(layout, token, clock, architect)
    routes = [
        Route("/", _guarded(dashboard.page)),
        *[Route(f"/static/{name}", _guarded(dashboard.asset)) for name in ASSETS],
        Route("/api/version", _guarded(dashboard.version)),
        Route("/api/state", _guarded(dashboard.state)),
        Route("/api/log", _guarded(dashboard.log)),
        Route("/api/diff", _guarded(dashboard.diff)),
        Route("/api/controls/{action}", dashboard.control, methods=["POST"]),
        Route("/api/architect/{action}", dashboard.revision, methods=["POST"]),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(_Shield, hosts=hosts)],
        exception_handlers={HTTPException: _http_error},
    )


def serve(app: ASGIApp, sock: socket.socket) -> None:
    """Serve until Ctrl-C on a socket the caller has bound (so it knows the port first)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    uvicorn.Server(config).run(sockets=[sock])


class _Built(NamedTuple):
    data: dict[str, Any]
    body: bytes


class _Dashboard:
    def __init__(
        self, layout: Layout, token: str, clock: Clock, architect: AgentSettings | None
    ) -> None:
        self.layout = layout
        self.token = token
        self.clock = clock
        self.architect = architect
        self._state: _Built | None = None  # the last snapshot built, and its JSON
        folder = resources.files("memento_gh.dashboard") / "static"
        self.assets = {name: (folder / name).read_bytes() for name in ASSETS}
        template = (folder / "index.html").read_text(encoding="utf-8")
        # token_urlsafe's alphabet needs no HTML escaping
        self.html = (
            template.replace("@TOKEN@", token)
            .replace("@POLL_MS@", str(POLL_MS))
            .replace("@ARCHITECT@", "on" if architect else "")
        )

    def page(self, request: Request) -> Response:
        try:
            built: _Built | None = self._snapshot()
        except UserError:
            built = None  # no plan right now: the script's banner says why
        return HTMLResponse(first_paint.fill(self.html, built.data if built else None))

    def asset(self, request: Request) -> Response:
        name = request.url.path.rsplit("/", 1)[1]
        return Response(self.assets[name], media_type=ASSETS[name])

    def version(self, request: Request) -> Response:
        return JSONResponse({"version": repo.stamp(self.layout)})

    def state(self, request: Request) -> Response:
        return Response(self._snapshot().body, media_type="application/json")

    def _snapshot(self) -> _Built:
        """The page's state as the files are now, built again only when they changed: the
        same one for the page's first paint and for the script."""
        cached = self._state
        if cached is None or cached.data["version"] != repo.stamp(self.layout):
            data = repo.load(self.layout, self.clock())
            body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
            cached = self._state = _Built(data, body)
        return cached

    def log(self, request: Request) -> Response:
        return PlainTextResponse(repo.tick_log(self.layout, request.query_params.get("path", "")))

    def diff(self, request: Request) -> Response:
        tick, task = request.query_params.get("tick", ""), request.query_params.get("task", "")
        if not tick.isdigit() or not TASK_ID.fullmatch(task):
            raise Rejected(400, "ask for a run as ?tick=12&task=T-101")
        return PlainTextResponse(repo.commit_diff(self.layout, int(tick), task))

    def _check_write(self, request: Request) -> None:
        headers = request.headers
        writes.check_token(headers.get(writes.TOKEN_HEADER), self.token)
        writes.check_origin(
            headers.get("origin"), headers.get("host"), headers.get("sec-fetch-site")
        )
        writes.check_content_type(headers.get("content-type"))
        writes.check_length(headers.get("content-length"))

    async def control(self, request: Request) -> Response:
        try:
            self._check_write(request)
            order = writes.read_order(request.path_params["action"], await _body(request))
            message = await run_in_threadpool(self._apply, order)
        except Rejected as rejected:
            return _error(rejected.status, rejected.message)
        except UserError as error:
            return _error(409, str(error))
        except Exception as error:
            return _crash(error)
        return JSONResponse({"message": message, "version": repo.stamp(self.layout)})

    async def revision(self, request: Request) -> Response:
        try:
            self._check_write(request)
            asked = writes.read_revision_request(
                request.path_params["action"], await _body(request)
            )
            message, diff = await run_in_threadpool(self._revise, asked)
        except Rejected as rejected:
            return _error(rejected.status, rejected.message)
        except UserError as error:
            return _error(409, str(error))
        except Exception as error:
            return _crash(error)
        return JSONResponse({"message": message, "diff": diff, "version": repo.stamp(self.layout)})

    def _revise(self, asked: writes.RevisionRequest) -> tuple[str, str]:
        """What the architect did, in a sentence, and the diff it proposes ('' when none)."""
        from memento_gh.architect import flows

        if self.architect is None:
            raise Rejected(
                404, "this dashboard has no architect: start it with --agent or --agent-cmd"
            )
        if asked.action == "discard":
            gone = flows.discard_revision(self.layout)
            return ("discarded the proposed revision" if gone else "no revision to discard"), ""
        if asked.action == "apply":
            pending = flows.pending_revision(self.layout)
            if pending is None:
                raise Rejected(409, "no proposed revision to apply; propose one first")
            environ = dict(self.architect.environ)
            sha = flows.apply_revision(self.layout, pending, self.clock(), environ)
            return f"revised the plan ({pending.task}) (committed {sha[:7]})", ""
        task = repo.read_plan(self.layout).task(asked.task or "")
        if task is None or task.status != asked.seen:
            shown = task.status if task else "gone"
            raise Rejected(409, f"{asked.task} is {shown} now, not {asked.seen}; reload")
        proposed = flows.propose_revision(
            self.layout,
            self.architect,
            task=asked.task,
            why=asked.why or None,
            rounds=3,
            now=self.clock(),
        )
        return f"the architect proposes a revision of {asked.task}", proposed.diff

    def _apply(self, order: writes.Order) -> str:
        writes.check_against(repo.read_plan(self.layout), order)
        if not repo.lock_is_free(self.layout, LOCK_WAIT):
            raise Rejected(
                503, "a tick is running (it holds the repository lock); try again when it ends"
            )
        # apply_control re-reads the files under the lock: a change made since the check
        # above is kept, and a control that no longer makes sense is refused (409).
        return apply_control(self.layout, order.control, clock=self.clock, wait=LOCK_WAIT)


async def _body(request: Request) -> bytes:
    """The body, refused as soon as it outgrows the limit (whatever Content-Length said)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > writes.MAX_BODY:
            raise Rejected(413, writes.too_large())
    return bytes(body)


def _guarded(endpoint: Endpoint) -> Endpoint:
    """A read endpoint whose refusals and failures become JSON errors, never a traceback."""

    @wraps(endpoint)
    def answer(request: Request) -> Response:
        try:
            return endpoint(request)
        except Rejected as rejected:
            return _error(rejected.status, rejected.message)
        except UserError as error:  # the plan is missing or unreadable right now
            return _error(503, str(error))
        except Exception as error:
            return _crash(error)

    return answer


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _crash(error: Exception) -> Response:
    from memento_gh.crash import crash_message

    report = crash_message(error)
    print(report, file=sys.stderr, flush=True)
    return _error(500, report.splitlines()[0].removeprefix("memento: "))


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    return _error(error.status_code, error.detail)


class _Shield:
    """Every request: refuse a Host this server does not answer to (DNS rebinding), and give
    every response the headers that keep the page to itself."""

    def __init__(self, app: ASGIApp, hosts: writes.HostRule) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host")
        if not writes.host_allowed(host, self.hosts):
            refused = _error(400, f"this dashboard does not answer to the host {host!r}")
            refused.headers.update(SECURITY_HEADERS)
            await refused(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(SECURITY_HEADERS)
            await send(message)

        await self.app(scope, receive, send_secured)
