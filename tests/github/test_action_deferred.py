"""A provider limit in the Action (issue #14, item 4): the run's output and job summary say
``deferred``, and however often it repeats, no "blocked" issue is opened. `memento github`
in-process: real git, the fake GitHub over HTTP, the scripted agent as a process."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.action_runs import ActionProject
from testing.fake_github import FakeGitHub
from tests.engine.test_tick_deferred import SESSION_LIMIT, claude_limited

pytestmark = pytest.mark.timeout(180)


def test_a_deferred_run_says_so_and_never_opens_a_blocked_issue(
    tmp_path: Path, github: FakeGitHub
) -> None:
    project = ActionProject(tmp_path, github)
    project.script({"T-101": claude_limited(SESSION_LIMIT)})

    # max_retries is 3: counted as failures, four runs would block T-101 and open its issue.
    runs = [project.run("schedule") for _ in range(4)]

    for result in runs:
        assert result.code == 0, result.said
        assert result.outputs["outcome"] == "deferred"
        assert result.outputs["task-id"] == "T-101"
        assert result.outputs["blocked"] == "0"
    summary = runs[-1].summary
    assert summary.startswith("## memento: deferred\n"), summary
    assert "| T-101 | ⏳ deferred |" in summary
    assert SESSION_LIMIT in summary
    assert "try again" in summary
    assert project.marker("T-101") == " "
    assert project.plan().settings.tick_mode == "auto"
    assert project.memento_issues("blocked") == []
