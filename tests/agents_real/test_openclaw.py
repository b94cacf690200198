"""openclaw, for real: ``openclaw agent exec`` (on the Node 24 that scripts/setup installs for
it) against the scripted Anthropic API, named as a provider in its config file."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memento_gh.engine.agents.presets import agent_argv
from memento_gh.plan.scanner import parse
from testing.model_server import Call, Fail, ModelServer, Say
from testing.plans import phase_block, plan_text, task_block
from testing.real_agents import executable, openclaw, run
from tests.agents_real.conftest import TASK, VERIFY, git, sent

pytestmark = pytest.mark.slow

PROMPT = TASK.format(verify=VERIFY)


def envelope(stdout: str) -> dict[str, Any]:
    """``--json`` prints one JSON object, the agent-exec envelope."""
    value = json.loads(stdout)
    assert isinstance(value, dict)
    return value


def help_text(*command: str) -> str:
    return subprocess.run(
        [executable("openclaw"), *command, "--help"],
        check=True,
        capture_output=True,
        text=True,
        timeout=100,
    ).stdout


@pytest.mark.timeout(120)
def test_openclaw_agent_exec_has_every_flag_the_preset_passes(tmp_path: Path) -> None:
    task = parse(plan_text([phase_block(1, "Core", [task_block("T-101")])])).tasks[0]
    argv = agent_argv(
        "openclaw", None, prompt_file=tmp_path / "p.md", task=task, repo=tmp_path, timeout=60
    )
    assert argv[:3] == ["openclaw", "agent", "exec"]
    one_shot = help_text("agent", "exec")
    assert "Run one isolated headless embedded agent turn" in one_shot
    flags = [item for item in argv if item.startswith("--")]
    assert flags  # the preset's own: --message-file, --cwd, --json, --timeout
    for flag in flags:
        assert re.search(rf"^\s+{re.escape(flag)}\b", one_shot, re.MULTILINE), flag
    # What a user may add, and the model the preset names as --model <provider/model>.
    for flag in ("--model <provider/model>", "--config <path>", "--isolated", "--thinking"):
        assert flag in one_shot


# Each openclaw run spends 15-20 s of CPU starting (a dozen worker threads load its
# modules), so one run shows three things: the file and the verify, the model chosen, and
# that nothing stops `git commit`.
@pytest.mark.timeout(240)
def test_openclaw_on_the_chosen_model_writes_runs_the_verify_and_may_commit(
    repo: Path, home: Path
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    script = [
        Call("write", {"path": "hello.txt", "content": "hi\n"}),
        Call("exec", {"command": VERIFY}),
        # Its exec permissions are allow-lists (tools.exec.mode), with no deny rule for a
        # command: out of the box the agent commits, and memento's HEAD check must catch it.
        Call("exec", {"command": "git add hello.txt && git commit -qm sneaky"}),
        Say("Done: hello.txt is written and the verify passed.", 1200, 80),
    ]
    with ModelServer(script) as server:
        launch = openclaw(server.url, home, PROMPT, repo, model="claude-opus-4-6")
        finished = run(launch, repo, timeout=200)

    assert finished.returncode == 0, finished.output
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert (repo / "verify.marker").read_text() == "verified\n"
    assert git(repo, "rev-parse", "HEAD~1") == head
    assert git(repo, "log", "-1", "--format=%s") == "sneaky"
    assert server.played == 4
    assert sent(server.turns[:1], "Create hello.txt containing the line")
    assert [turn.model for turn in server.turns] == ["claude-opus-4-6"] * 4
    tools = {tool["name"] for tool in server.turns[0].body["tools"]}
    assert {"write", "edit", "apply_patch", "exec", "read"} <= tools
    assert server.outbound == []
    report = envelope(finished.stdout)
    assert (report["ok"], report["status"]) == (True, "ok")
    assert report["final"] == "Done: hello.txt is written and the verify passed."
    assert (report["provider"], report["model"]) == ("scripted", "claude-opus-4-6")
    assert report["usage"]["input"] == 4200
    assert report["usage"]["output"] == 230
    # The price comes from the config's model entry: $3 / $15 per million tokens.
    assert report["costUsd"] == report["usage"]["cost"]["total"] == pytest.approx(0.01605)


@pytest.mark.timeout(240)
def test_a_429_ends_openclaw_with_exit_1_once_its_retries_are_spent(repo: Path, home: Path) -> None:
    # By default nine retries, waits growing to 30 s: three minutes. The session setting
    # retry.provider.maxRetries bounds them (openclaw.json has no key for it).
    with ModelServer([Fail("rate_limit", times=100)]) as server:
        finished = run(openclaw(server.url, home, PROMPT, repo, max_retries=1), repo, timeout=200)

    assert finished.returncode == 1
    report = envelope(finished.stdout)
    assert (report["ok"], report["status"]) == (False, "error")
    assert report["error"] == {
        "message": "⚠️ API rate limit reached. Please try again later.",
        "kind": "exception",
    }
    assert "reason=rate_limit" in finished.stderr
    assert "transient same-model retry 1/1 " in finished.stderr
    assert len(server.turns) == 2
