"""Spend on GitHub (issues #14 item 5, #18): the run's ``cost`` and ``tokens`` outputs, the
spend in the job summary and the dashboard issue, the 80% warning said once a day, and a
day over budget. Real git, the fake GitHub over HTTP through PyGithub, the scripted agent
printing claude's real cost report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.action_runs import ActionProject
from testing.agents import Action
from testing.fake_github import FakeGitHub
from testing.ticks import good, one_phase, plan_of, wrong

pytestmark = pytest.mark.timeout(120)


def claude_report(usd: float, tokens_in: int, tokens_out: int) -> Action:
    usage = {"inputTokens": tokens_in, "outputTokens": tokens_out, "costUSD": usd}
    report = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "Done.",
        "total_cost_usd": usd,
        "modelUsage": {"claude-opus-4-8": usage},
    }
    return {"print": json.dumps(report)}


def plain(markdown: str) -> str:
    """The text without Markdown's escapes and emphasis."""
    return markdown.replace("\\", "").replace("**", "")


def test_a_run_reports_its_cost_and_tokens_and_the_spend_so_far(
    tmp_path: Path, github: FakeGitHub
) -> None:
    project = ActionProject(tmp_path, github)
    project.script(
        {
            "T-101": [*good("T-101"), claude_report(0.0247, 3710, 185)],
            "T-102": [*good("T-102"), claude_report(0.01, 1000, 100)],
        }
    )

    first = project.run("schedule")
    second = project.run("schedule")

    assert (first.outputs["cost"], first.outputs["tokens"]) == ("0.0247", "3895")
    assert (second.outputs["cost"], second.outputs["tokens"]) == ("0.01", "1100")
    assert "This run's agent: $0.01, 1,100 tokens" in plain(second.summary)
    assert "total $0.0347, 4,995 tokens" in plain(second.summary)
    [dashboard] = project.memento_issues("dashboard")
    assert "total $0.0347, 4,995 tokens" in plain(dashboard["body"])


def test_the_dashboard_warns_once_a_day_at_80_percent_of_the_budget(
    tmp_path: Path, github: FakeGitHub
) -> None:
    plan = plan_of([one_phase()], budget_per_day="0.10")
    project = ActionProject(tmp_path, github, plan)
    project.script(
        {
            "T-101": [*good("T-101"), claude_report(0.05, 100, 10)],
            "T-102": [*good("T-102"), claude_report(0.035, 100, 10)],
            "T-103": [*good("T-103"), claude_report(0.001, 100, 10)],
        }
    )

    for _ in range(3):  # at 50%, 85% and 86% of the day's budget
        project.run("schedule")

    [dashboard] = project.memento_issues("dashboard")
    warnings = [
        plain(comment["body"])
        for comment in github.comments(dashboard["number"])
        if "budget_per_day" in plain(comment["body"])
    ]
    assert len(warnings) == 1, warnings
    assert "$0.085 is 85% of budget_per_day (0.10)" in warnings[0]
    assert "86% of budget_per_day" in plain(dashboard["body"])


def test_a_day_over_budget_ends_the_run_over_budget(tmp_path: Path, github: FakeGitHub) -> None:
    plan = plan_of([one_phase()], budget_per_day="0.05")
    project = ActionProject(tmp_path, github, plan)
    project.script(
        {
            "*": [*[], claude_report(0.06, 100, 10)],
            "T-101": [*good("T-101"), claude_report(0.06, 100, 10)],
        }
    )

    project.run("schedule")
    result = project.run("schedule")

    assert result.outputs["outcome"] == "over_budget"
    assert (result.outputs["cost"], result.outputs["tokens"]) == ("", "0")
    assert "raise budget_per_day (docs/MASTER_PLAN.md:" in plain(result.summary)
    assert project.marker("T-102") == " "


def test_a_task_over_its_budget_is_blocked_and_its_issue_says_so(
    tmp_path: Path, github: FakeGitHub
) -> None:
    plan = plan_of([one_phase()], budget_per_task="0.03")
    project = ActionProject(tmp_path, github, plan)
    project.script({"T-101": [*wrong("T-101"), claude_report(0.02, 100, 10)]})

    project.run("schedule")
    result = project.run("schedule")

    assert result.outputs["outcome"] == "blocked"
    assert project.marker("T-101") == "!"
    [issue] = project.memento_issues("blocked")
    assert "over budget: T-101 has cost $0.04, budget_per_task is $0.03" in plain(issue["body"])
