"""A secret memento knows leaves the runner in no common encoding either (issue #27, class 11):
the agent's provider key and memento's token, printed by the task's verify (which the agent
wrote) as base64, as hex, with a space inside, or inside a basic-auth header, reach neither
the pushed history nor the issue, its comments, the job summary nor the logs artifact.
(What the run prints is redacted by the command line's own streams: ``test_redact.py``.)

Real `memento github` runs: the origin over HTTP wants the token, a listener stands in for
the attacker, and the agent is ``testing/agents/hostile.py``."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from testing.action_runs import TOKEN, ActionProject
from testing.agents import hostile_command, hostile_env
from testing.fake_github import FakeGitHub
from testing.hostile_runs import attacked_run, attacker
from testing.repos import git
from testing.ticks import good, one_phase, plan_of, task

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.timeout(120)]

KEY = "sk-ant-api03-" + "Enc0d3d" * 8 + "-AA"
#: verify prints the key and the token it can read, in every encoding, then fails.
PRINTS = (
    "import base64, os, sys;"
    "k = os.environ['ANTHROPIC_API_KEY'].encode();"
    "t = os.environ.get('LEAKED_TOKEN', '').encode();"
    "print('b64', base64.b64encode(k).decode());"
    "print('hex', k.hex(), k.hex().upper());"
    "print('spaced', k[:9].decode(), k[9:].decode());"
    "print('header', base64.b64encode(b'x-api-key:' + k).decode());"
    "print('urlsafe', base64.urlsafe_b64encode(b'ab' + k).decode());"
    "print('token', base64.b64encode(t).decode(), t.hex());"
    "sys.exit(1)"
)


def encodings(secret: str) -> list[str]:
    """The long parts of ``secret``'s encodings any of the prints above would show."""
    data = secret.encode()
    return [
        base64.b64encode(data).decode()[:20],
        base64.b64encode(b"x-api-key:" + data).decode()[16:36],
        base64.urlsafe_b64encode(b"ab" + data).decode()[4:24],
        data.hex()[:20],
        data.hex().upper()[:20],
        secret[9:29],
    ]


def test_a_key_or_token_printed_encoded_reaches_no_published_text(
    tmp_path: Path, github: FakeGitHub, isolated_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verify = f'`python3 -c "{PRINTS}"`'
    plan = plan_of([one_phase(task("T-101", verify=verify), task("T-102"))], max_retries="1")
    project = ActionProject(tmp_path, github, plan)
    env = {
        "ANTHROPIC_API_KEY": KEY,
        "MEMENTO_AGENT_CMD": hostile_command(),
        **hostile_env(good("T-101"), home=isolated_git, record=project.outside / "records"),
    }
    # a copy of the token where verify can read it, as a hostile agent may find one (its
    # name is no forge's: memento's scrubbing lets it through to verify)
    monkeypatch.setenv("LEAKED_TOKEN", TOKEN)

    with attacker() as listener:
        run = attacked_run(project, listener, monkeypatch, env=env)

    result = run.ran
    assert result.code == 0, result.said
    assert project.marker("T-101") == "!"
    [blocked] = project.memento_issues("blocked")
    status = project.show("docs/TICK_STATUS.md")
    assert "b64 ***" in status or "b64 ***" in blocked["body"]  # verify's output is there
    published = {
        "history": git(project.origin, "log", "-p", "--all"),
        "summary": result.summary,
        "issues": "\n".join(issue["title"] + issue["body"] for issue in github.issues()),
        "comments": "\n".join(comment["body"] for comment in github.comments()),
        "logs": _staged_logs(project),
    }
    for secret in (KEY, TOKEN):
        for encoded in encodings(secret):
            assert [name for name, text in published.items() if encoded in text] == [], encoded
    assert run.attacker_requests == []
    assert project.marker("T-102") == " "


def _staged_logs(project: ActionProject) -> str:
    checkout = project.tmp / f"run-{project.runs}" / "checkout" / "logs"
    return "".join(path.read_text("utf-8", "replace") for path in sorted(checkout.rglob("*.*")))
