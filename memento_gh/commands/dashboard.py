"""``memento dashboard``: serve the local web dashboard until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import secrets
import socket
import sys
from datetime import datetime, timezone
from typing import NoReturn

from memento_gh.errors import UserError
from memento_gh.layout import Layout, display

INSTALL_HINT = "pip install 'memento-gh[dashboard]'"


def run(args: argparse.Namespace, layout: Layout) -> int:
    try:
        from memento_gh.dashboard import server, writes
    except ModuleNotFoundError as error:
        _missing(error)

    if not layout.plan.is_file():
        raise UserError(
            f"{display(layout.plan)}: no plan here; run `memento init` to create one, "
            "or pass -C/--plan-dir to point at it"
        )
    sock = _bind(args.host, args.port)
    port = sock.getsockname()[1]
    url = f"http://{_url_host(args.host)}:{port}/"
    if not writes.is_loopback(args.host):
        print(
            f"memento dashboard: warning: listening on {args.host}, not only on this machine: "
            f"anyone who can reach port {port} can read the plan and its logs",
            file=sys.stderr,
        )
    print(f"memento dashboard: {url} (Ctrl-C to stop)", flush=True)
    if args.open:
        import webbrowser

        webbrowser.open(url)  # the socket is listening: the browser's request waits for us
    architect = None
    if args.agent or args.agent_cmd:
        from memento_gh.commands.plan import agent_settings

        architect = agent_settings(args, layout)
    app = server.create_app(
        layout,
        secrets.token_urlsafe(32),
        writes.host_rule(args.host, socket.gethostname()),
        lambda: datetime.now(timezone.utc),
        architect,
    )
    # uvicorn re-raises the Ctrl-C it stopped on; for a server, stopping is how it ends.
    with contextlib.suppress(KeyboardInterrupt):
        server.serve(app, sock)
    print("memento dashboard: stopped", flush=True)
    return 0


def _missing(error: ModuleNotFoundError) -> NoReturn:
    """The web packages are an extra: say how to install them (anything else is a bug)."""
    if (error.name or "").split(".")[0] in ("starlette", "uvicorn"):
        raise UserError(
            f"the dashboard needs Starlette and uvicorn, which are not installed: {INSTALL_HINT}"
        ) from None
    raise error


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a sentence on why there is none (port taken, unknown host)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise UserError(
            f"cannot listen on {host!r}: {error.strerror}; try --host 127.0.0.1"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as error:
        sock.close()
        hint = "; pick another with --port" if port else ""
        raise UserError(f"cannot listen on {host} port {port}: {error.strerror}{hint}") from None
    return sock


def _url_host(host: str) -> str:
    """A host a browser on this machine can open: wildcard binds are reached on loopback."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host
