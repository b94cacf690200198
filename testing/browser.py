"""The real dashboard in a subprocess, a real HTTP client for it, and a real headless Chromium.

``start_dashboard`` runs ``memento dashboard --port 0`` exactly as a user would and reads the
URL it prints; ``Client`` speaks HTTP/1.1 to it with ``http.client`` (every header under the
test's control: Host, Origin, Content-Length); ``launch_chromium`` starts Debian's Chromium
through Playwright, which never downloads a browser of its own here.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

_URL = re.compile(r"memento dashboard: (http://\S+/)")
_TOKEN = re.compile(r'<meta name="memento-token" content="([^"]+)">')
START_TIMEOUT = 30.0


def chromium_path() -> str | None:
    """Chromium as Debian installs it (``scripts/setup`` does), or ``$MEMENTO_CHROMIUM``."""
    debian = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    return os.environ.get("MEMENTO_CHROMIUM") or shutil.which("chromium") or debian


def launch_chromium(playwright: Playwright) -> Browser:
    path = chromium_path()
    if path is None:
        raise RuntimeError("no Chromium: run scripts/setup (apt-get install chromium)")
    return playwright.chromium.launch(executable_path=path, headless=True)


class Answer(NamedTuple):
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


class Dashboard:
    """A running ``memento dashboard`` (a context manager: leaving it stops the server)."""

    def __init__(self, process: subprocess.Popen[str], url: str, stderr: list[str]) -> None:
        self.process = process
        self.url = url
        self._stderr = stderr
        match = re.match(r"http://([^/]+)/", url)
        assert match
        self.netloc = match.group(1)
        page = self.get("/")
        found = _TOKEN.search(page.text)
        assert found, page.text[:500]
        self.token = found.group(1)

    @property
    def origin(self) -> str:
        return f"http://{self.netloc}"

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        host, port = self.netloc.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            chosen = {"Host": self.netloc, **(headers or {})}
            if body is not None and "Content-Length" not in chosen:
                chosen["Content-Length"] = str(len(body))
            for name, value in chosen.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            return Answer(response.status, dict(response.getheaders()), response.read())
        finally:
            connection.close()

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> Answer:
        return self.request("GET", path, headers=headers)

    def post(
        self,
        path: str,
        data: Any = None,
        *,
        raw: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """A write as the page sends it (token, Origin, JSON); ``headers`` override those."""
        body = raw if raw is not None else json.dumps({} if data is None else data).encode()
        chosen = {
            "Content-Type": "application/json",
            "Origin": self.origin,
            "X-Memento-Token": self.token,
            **(headers or {}),
        }
        return self.request("POST", path, body, {k: v for k, v in chosen.items() if v})

    def stop(self) -> str:
        """Stop the server as Ctrl-C would; returns what it wrote to stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return "".join(self._stderr)

    def __enter__(self) -> Dashboard:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def start_dashboard(
    root: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    memento: Sequence[str] = (sys.executable, "-m", "memento_gh"),
) -> Dashboard:
    """``memento -C root dashboard --port 0 ARGS`` in a subprocess, once it listens;
    ``memento``: the command line that starts memento (default: this checkout's)."""
    process = subprocess.Popen(
        [*memento, "-C", str(root), "dashboard", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )
    assert process.stdout is not None and process.stderr is not None
    stderr: list[str] = []
    threading.Thread(target=_drain, args=(process.stderr, stderr), daemon=True).start()
    line = _first_line(process)
    match = _URL.search(line)
    if match is None:
        process.kill()
        process.wait()
        raise AssertionError(f"the dashboard did not start: {line!r} {''.join(stderr)!r}")
    threading.Thread(target=_drain, args=(process.stdout, []), daemon=True).start()
    return Dashboard(process, match.group(1), stderr)


def _first_line(process: subprocess.Popen[str]) -> str:
    """The first line of stdout, or '' if the process ends or says nothing in time."""
    stream = process.stdout
    assert stream is not None
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    return found[0] if found else ""


def _drain(stream: Any, into: list[str]) -> None:
    for line in stream:
        into.append(line)
