"""`memento github` runs with a hostile agent, as on a runner under attack: the origin served
over HTTP on 127.0.0.1 wants the token, the token sits in memento's own environment (and so,
but for memento's scrubbing, in every child's), and a listener stands in for the attacker's
server. ``attacked_run`` runs one such run; ``leaked`` finds the token in what it left."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import NamedTuple, Protocol

from memento_gh.errors import UserError
from testing.action_runs import TOKEN, ActionProject, RunResult
from testing.attacker import Listener
from testing.repos import GitHttpServer, git

#: The token as git's basic credentials carry it (``x-access-token:TOKEN``).
ENCODED_TOKEN = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()


class Attacked(NamedTuple):
    """What one run did: its result (or the error it stopped with), and the requests the
    origin and the attacker's listener saw."""

    result: RunResult | UserError
    origin_requests: int
    attacker_requests: list[str]

    @property
    def ran(self) -> RunResult:
        assert isinstance(self.result, RunResult), self.result
        return self.result


class SetsEnv(Protocol):
    """pytest's ``monkeypatch``: sets a variable of this process for the test alone."""

    def setenv(self, name: str, value: str) -> None: ...


@contextmanager
def attacker() -> Iterator[Listener]:
    with Listener() as listener:
        yield listener


def attacked_run(
    project: ActionProject,
    listener: Listener,
    monkeypatch: SetsEnv,
    event: str = "schedule",
    env: Mapping[str, str] | None = None,
) -> Attacked:
    """One run of ``event`` with ``env``, pushing to the origin over HTTP with the token."""
    git(project.origin, "config", "http.receivepack", "true")
    monkeypatch.setenv("MEMENTO_GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    before = len(listener.requests)
    with GitHttpServer(project.origin.parent, TOKEN) as served:
        result: RunResult | UserError
        try:
            result = project.run(event, env=env, origin_url=served.url(project.origin.name))
        except UserError as error:
            result = error
    seen = [f"{r.method} {r.target}" for r in listener.requests[before:]]
    return Attacked(result, len(served.requests), seen)


def leaked(text: str) -> bool:
    """Whether ``text`` holds the token, as it is or as git's basic credentials."""
    return TOKEN in text or ENCODED_TOKEN in text


def pushed_files(project: ActionProject, branch: str = "memento") -> dict[str, str]:
    """Every file on the origin's ``branch``, by path."""
    names = git(project.origin, "ls-tree", "-r", "--name-only", branch).splitlines()
    return {name: project.show(name, branch) for name in names}
