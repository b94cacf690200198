"""An HTTP listener on 127.0.0.1 standing in for an attacker's server, for the tests of the
wall around the agent: an agent that redirects memento's push (a push URL, a rewrite, a
proxy) sends it here, and the test reads what arrived.

It answers every request as a git server that wants credentials does (401 with a Basic
challenge), so a git that has any to give sends them, and keeps each request's method,
target and headers. Use it as a context manager."""

from __future__ import annotations

import base64
import http.server
import threading
from typing import NamedTuple


class Request(NamedTuple):
    method: str
    target: str
    headers: list[tuple[str, str]]

    def carries(self, secret: str) -> bool:
        """True when ``secret``, as it is or as git's basic credentials, is in a header."""
        encoded = base64.b64encode(f"x-access-token:{secret}".encode()).decode()
        return any(secret in value or encoded in value for _, value in self.headers)


class Listener:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def do_CONNECT(self) -> None:
                self._answer()

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _answer(self) -> None:
                listener.requests.append(
                    Request(self.command, self.path, list(self.headers.items()))
                )
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
