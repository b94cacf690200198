"""Credentials never leave the runner: an agent that prints its environment and a verify that
prints a key leave neither in the memento branch's history, the issues, their comments, the
job summary nor (unless the plan turns it off) the local logs.

In-process runs of `memento github` (testing/action_runs.py): real git with a bare origin,
the fake GitHub over HTTP through PyGithub, the scripted agent as a process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.action_runs import ActionProject
from testing.fake_github import FakeGitHub
from testing.repos import git
from testing.ticks import one_phase, plan_of, task

pytestmark = pytest.mark.timeout(120)

#: An agent's API key, handed to the agent as it must be.
ANTHROPIC = "sk-ant-api03-" + "Pl4nt3d" * 8 + "-AA"
#: A key-shaped value in a variable whose name says nothing: found by its format.
GITHUB_SHAPED = "ghp_" + "Pl4nt3dT0k3n" * 3
#: A credential found by its variable's name only.
PASSWORD = "correct-horse-battery-staple"
PLANTED = (ANTHROPIC, GITHUB_SHAPED, PASSWORD)
ENV = {
    "ANTHROPIC_API_KEY": ANTHROPIC,
    "BUILD_NOTE": GITHUB_SHAPED,
    "DATABASE_PASSWORD": PASSWORD,
}
#: T-101's verify prints the key-shaped value and the password, then fails.
LEAKY_VERIFY = '`echo "verify sees $BUILD_NOTE and $DATABASE_PASSWORD"; exit 1`'


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub("octo/project", "ghs_test_token_0123456789") as server:
        yield server


def leaky_project(tmp_path: Path, github: FakeGitHub, **meta: str) -> ActionProject:
    plan = plan_of([one_phase(task("T-101", verify=LEAKY_VERIFY))], max_retries="1", **meta)
    project = ActionProject(tmp_path, github, plan)
    project.script(
        {
            "T-101": [
                {"print_env": True},
                {"print": f"my key is {ANTHROPIC}, twice: {ANTHROPIC}"},
                {"write": "src/a.py", "text": "nothing = 0\n"},
            ]
        }
    )
    return project


def logs_text(project: ActionProject) -> str:
    logs = project.tmp / f"run-{project.runs}" / "checkout" / "logs"
    return "".join(path.read_text("utf-8", "replace") for path in sorted(logs.rglob("*.*")))


def test_no_planted_key_reaches_the_branch_the_issues_the_summary_or_the_logs(
    tmp_path: Path, github: FakeGitHub
) -> None:
    project = leaky_project(tmp_path, github)
    result = project.run("schedule", env=ENV)
    assert result.code == 0, result.said
    assert project.marker("T-101") == "!"
    history = git(project.origin, "log", "-p", "--all")
    [blocked] = project.memento_issues("blocked")
    published = [
        history,
        result.summary,
        *(issue["title"] + issue["body"] for issue in github.issues()),
        *(comment["body"] for comment in github.comments()),
    ]
    logs = logs_text(project)
    assert "verify sees ***" in logs  # the verify's output is there, redacted
    assert "ANTHROPIC_API_KEY=***" in logs  # and so is the agent's
    for key in PLANTED:
        assert all(key not in text for text in published), key
        assert key not in logs, key
    assert "TICK STATUS" in history and blocked["body"]


def test_redact_logs_false_keeps_the_keys_in_the_local_logs_only(
    tmp_path: Path, github: FakeGitHub
) -> None:
    project = leaky_project(tmp_path, github, redact_logs="false")
    result = project.run("schedule", env=ENV)
    assert result.code == 0, result.said
    logs = logs_text(project)
    assert all(key in logs for key in PLANTED)
    history = git(project.origin, "log", "-p", "--all")
    assert all(key not in history for key in PLANTED)


def test_the_run_stages_its_logs_as_an_artifact_and_the_blocked_issue_links_to_it(
    tmp_path: Path, github: FakeGitHub
) -> None:
    project = leaky_project(tmp_path, github, redact_logs="false")
    temp = tmp_path / "runner-temp"
    env = {**ENV, "RUNNER_TEMP": str(temp), "GITHUB_RUN_ATTEMPT": "2"}
    result = project.run("schedule", env=env)
    assert result.code == 0, result.said
    run_id = 1000 + project.runs
    name = f"memento-logs-{run_id}-2-actions-{run_id}"
    assert result.outputs["artifact-name"] == name
    staged = Path(result.outputs["logs-dir"])
    assert staged == temp / "memento-logs"
    names = sorted(path.name for path in staged.iterdir())
    assert any(n.startswith("tick_") and n.endswith(".log") for n in names), names
    assert any(n.endswith(".prompt-T-101.md") for n in names), names
    staged_text = "".join(path.read_text("utf-8") for path in staged.iterdir())
    assert "verify sees ***" in staged_text and "fake agent: task T-101" in staged_text
    assert all(key not in staged_text for key in PLANTED)  # redacted, though the logs are not
    artifacts = f"{github.web_url}/octo/project/actions/runs/{run_id}#artifacts"
    assert f"[{name}]({artifacts})" in result.summary
    [blocked] = project.memento_issues("blocked")
    [comment] = github.comments(blocked["number"])
    assert f"[{name}]({artifacts})" in comment["body"]
    assert "<details><summary>The last lines of the verify output</summary>" in comment["body"]
    assert "verify sees *** and ***" in comment["body"]


def test_a_run_off_actions_stages_no_artifact(tmp_path: Path, github: FakeGitHub) -> None:
    project = leaky_project(tmp_path, github)
    result = project.run("schedule", env=ENV)  # no RUNNER_TEMP
    assert result.outputs["artifact-name"] == ""
    assert "#artifacts" not in result.summary
