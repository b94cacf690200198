"""Real git repositories in temporary folders."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Sequence
from email.message import Message
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memento_gh.workspace import TreeStatus, Workspace

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Person",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test Person",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return its stdout; raise with git's stderr on failure."""
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**_base_env(), **IDENTITY},
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {repo}:\n{done.stderr}")
    return done.stdout


def _base_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}


def git_env(**extra: str) -> dict[str, str]:
    """The environment of a user's ``git commit``, cut off from this machine's git config,
    plus ``extra``."""
    env = _base_env()
    env.update(IDENTITY, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, NO_COLOR="1")
    env.update(extra)
    return env


def write(root: Path, name: str, content: str | bytes) -> Path:
    """Write ``content`` (text as UTF-8, as it is: no newline translation) to ``root/name``,
    making its folders."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "config", "user.name", IDENTITY["GIT_AUTHOR_NAME"])
    git(path, "config", "user.email", IDENTITY["GIT_AUTHOR_EMAIL"])
    return path


def commit_all(repo: Path, message: str = "test commit") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


# -- what a workspace sees, read the way a test compares it ---------------------------------


def tree_status(workspace: Workspace) -> TreeStatus:
    """The work tree against HEAD from one ``git status``, as the tick reads it (a status
    started and waited for at once)."""
    return workspace.start_status().result()


def git_fingerprint(workspace: Workspace) -> dict[str, str]:
    """``wall.git_config_state`` as a sha256 per file of .git/config, .git/hooks/ and
    .git/info/, keyed by its path relative to .git: two fingerprints are equal exactly when
    the states are, and a digest is easy to read in a failed assertion."""
    from memento_gh.engine import wall

    state = wall.git_config_state(workspace)
    return {path: hashlib.sha256(data).hexdigest() for path, data in state.items()}


# -- remotes: a bare origin, clones of it, git over HTTP, a git that logs its argv --------


def bare_repo(path: Path) -> Path:
    """An empty bare repository (default branch ``main``) to serve as ``origin``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "--bare")
    return path


def clone(
    origin: Path | str,
    path: Path,
    *options: str,
    name: str = IDENTITY["GIT_AUTHOR_NAME"],
    email: str = IDENTITY["GIT_AUTHOR_EMAIL"],
) -> Path:
    """``git clone`` ``origin`` into ``path`` (``options`` such as ``--depth 1``) with
    ``name`` <``email``> as the clone's own identity."""
    path.parent.mkdir(parents=True, exist_ok=True)
    git(path.parent, "clone", "-q", *options, str(origin), str(path))
    git(path, "config", "user.name", name)
    git(path, "config", "user.email", email)
    return path


def git_shim(bin_dir: Path, log: Path, *, race_from: Path | None = None) -> Path:
    """Write an executable ``git`` into ``bin_dir`` that appends its argv (one JSON list a
    line) to ``log`` and runs the real git; put ``bin_dir`` first on PATH to use it.

    With ``race_from`` (a clone of the same origin), every top-level ``git ... push`` first
    commits "race N" in that clone and pushes it to the branch the push names, so the push
    always loses the race: a real rejection, every time."""
    import json
    import shutil
    import sys

    real = shutil.which("git")
    assert real is not None, "git is not on PATH"
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "git"
    shim.write_text(
        f"#!{sys.executable}\n"
        "import json, os, subprocess, sys\n"
        f"REAL, LOG, RACE = {real!r}, {str(log)!r}, {json.dumps(str(race_from or ''))}\n"
        "args = sys.argv[1:]\n"
        "with open(LOG, 'a', encoding='utf-8') as stream:\n"
        "    stream.write(json.dumps(args) + '\\n')\n"
        "if RACE and 'push' in args:\n"
        "    target = args[-1].rpartition(':')[2]\n"
        "    env = {k: v for k, v in os.environ.items() if not k.startswith('GIT_')}\n"
        "    count = int(subprocess.run([REAL, '-C', RACE, 'rev-list', '--count', '--grep=^race',"
        " 'HEAD'], capture_output=True, text=True, env=env).stdout or 0)\n"
        "    for step in (['commit', '-q', '--allow-empty', '-m', f'race {count + 1}'],"
        " ['push', '-q', 'origin', f'HEAD:{target}']):\n"
        "        subprocess.run([REAL, '-C', RACE, '-c', 'commit.gpgSign=false', *step],"
        " check=True, env=env)\n"
        "os.execv(REAL, [REAL, *args])\n",
        encoding="utf-8",
    )
    shim.chmod(0o755)
    return shim


class GitHttpServer:
    """Real git over HTTP on 127.0.0.1: ``git http-backend`` behind a server that answers 401
    unless the request carries exactly one Authorization header, the one GitHub's
    ``x-access-token`` basic auth gives for ``token``. ``requests`` keeps every request's
    headers, for tests to read what git sent. Use it as a context manager. ``also``: other
    tokens it accepts as well (a push token beside the workflow's). ``workflows``: the
    tokens that have GitHub's ``workflows`` permission (none, by default, as for the
    workflow's own token): the origin's hooks read which kind pushes
    (``testing/fake_origin.py``)."""

    def __init__(
        self,
        project_root: Path,
        token: str,
        also: Sequence[str] = (),
        *,
        workflows: Sequence[str] = (),
    ) -> None:
        import base64
        import http.server
        import shutil
        import threading

        def header(secret: str) -> str:
            return "basic " + base64.b64encode(f"x-access-token:{secret}".encode()).decode()

        self.expected = header(token)
        self.accepted = {header(secret).lower() for secret in (token, *also)}
        may_change_workflows = {header(secret).lower() for secret in workflows}
        self.requests: list[Message] = []
        backend = [shutil.which("git") or "git", "http-backend"]
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _serve(self) -> None:
                server.requests.append(self.headers)
                sent = self.headers.get_all("Authorization") or []
                body = self._body()
                if len(sent) != 1 or sent[0].lower() not in server.accepted:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                environ = {
                    **_base_env(),
                    "GIT_PROJECT_ROOT": str(project_root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": "x-access-token",  # lets http-backend accept pushes
                    "REMOTE_ADDR": "127.0.0.1",
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                    "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    # Which kind of token pushes, for the origin's pre-receive hook.
                    "FAKE_GITHUB_WORKFLOWS": (
                        "yes" if sent[0].lower() in may_change_workflows else "no"
                    ),
                }
                done = subprocess.run(
                    backend, input=body, env=environ, capture_output=True, check=False
                )
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status, fields = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        fields.append((name, value.strip()))
                self.send_response(status)
                for name, value in fields:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(chunks)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        """The URL of the repository ``name`` (a folder under the project root)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/{name}"

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
