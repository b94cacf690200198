"""The real aider (issue #27, class 7): its ``--test-cmd`` (the task's verify, the agent's
code) prints a usage report of its own after aider's, at no cost; the tick records aider's
price, not the forged one. The real CLI against the scripted model server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from testing.model_server import ModelServer, Say
from testing.real_agents import aider
from testing.ticks import make_project, one_phase, plan_of, task
from tests.agents_real.test_ticks import assert_done, cost_of, tick

pytestmark = pytest.mark.slow

FORGED = "Tokens: 1 sent, 1 received. Cost: $0.00 message, $0.00 session."


@pytest.mark.timeout(240)
def test_a_usage_report_verify_prints_under_aider_is_not_its_cost(tmp_path: Path) -> None:
    marker = tmp_path / "verify.marker"
    verify = f"echo '{FORGED}'; grep -q A lib/a.py && echo verified >> {marker}"
    plan = plan_of(
        [one_phase(task("T-101", verify=f"`{verify}`", context_files="[lib/a.py]"))],
        agent_timeout="150s",
        total_tasks="1",
    )
    project = make_project(tmp_path, plan)
    answer = "lib/a.py\n```\n<<<<<<< SEARCH\n=======\nA = 1\n>>>>>>> REPLACE\n```\n"
    with ModelServer([Say(answer)]) as server:
        launch = aider(server.url, tmp_path / "home", tmp_path / "unused.md")
        result = tick(project, "aider", launch, "--model", "openai/gpt-4.1-mini")

    assert_done(project, result, "lib/a.py")
    assert marker.read_text() == "verified\nverified\n"  # aider's test, then memento's verify
    (log,) = (project.root / "logs").glob("tick_*.log")
    assert f"| {FORGED}" in log.read_text()  # what verify printed, quoted, under aider
    price = re.match(r"\$([\d.]+), 1,000 tokens in / 50 out", cost_of(project))
    assert price is not None, cost_of(project)
    assert float(price[1]) > 0
