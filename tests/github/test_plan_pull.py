"""``/memento plan`` on an issue, end to end in-process against the fake GitHub: a scripted
architect drafts from the issue's body, and the plan lands on a branch of its own with one
pull request and a ``memento/plan`` status, or the issue says why not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memento_gh.github import render
from memento_gh.github.sync import GitHub
from memento_gh.plan.scanner import parse
from testing.action_runs import REPOSITORY, TOKEN, ActionProject, RunResult, comment_event
from testing.agents import Action
from testing.fake_github import FakeGitHub
from testing.plans import phase_block
from testing.repos import clone, git
from testing.ticks import one_phase, plan_of, task

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

BRANCH = "memento-plan/issue-{}"
PROPOSAL = "$MEMENTO_PROPOSAL_FILE"
SPEC = "Three modules, A, B and C, each a file holding its letter: `$(rm -rf ~)`.\n"
GOOD = plan_of([one_phase()], total_tasks="99")
#: T-102 without its verify line: an error on T-102's task line.
BAD = GOOD.replace(
    "  - verify: `grep -q B src/b.py || { echo 'src/b.py has no B'; exit 1; }`\n", ""
)
TWO_PHASES = plan_of(
    [
        one_phase(),
        phase_block(2, "More", [task("T-104")], parallel=False, depends=[1]),
    ],
    total_tasks="99",
)


@pytest.fixture
def project(tmp_path: Path, github: FakeGitHub) -> ActionProject:
    """A project whose main branch has no plan yet."""
    project = ActionProject(tmp_path, github)
    github.git_dir = project.origin  # the pull request's head is read there
    work = clone(project.origin, tmp_path / "unplanned", "-b", "main")
    git(work, "rm", "-q", "docs/MASTER_PLAN.md")
    git(work, "commit", "-qm", "no plan yet")
    git(work, "push", "-q", "origin", "main")
    return project


def architect(project: ActionProject, *rounds: list[Action]) -> None:
    project.script({"architect": {"attempts": list(rounds)}})


def writes(text: str) -> list[Action]:
    return [
        {"save_prompt": str(Path("$MEMENTO_TEST_OUT") / "prompt.md")},
        {"dump_env": str(Path("$MEMENTO_TEST_OUT") / "env.json")},
        {"write": PROPOSAL, "text": text},
    ]


def spec_issue(github: FakeGitHub, body: str = SPEC) -> dict[str, Any]:
    return github.add_issue("Build the demo", body, author="alice", association="OWNER")


def ask(
    project: ActionProject,
    issue: dict[str, Any],
    env: dict[str, str] | None = None,
    **who: str,
) -> RunResult:
    payload = comment_event(project.github, issue, "/memento plan", **who)
    extra = {"MEMENTO_TEST_OUT": str(project.outside), **(env or {})}
    return project.run("issue_comment", payload, env=extra)


def agent_runs(project: ActionProject) -> int:
    state = project.outside / "runs.json"
    return json.loads(state.read_text())["architect"] if state.exists() else 0


def branches(project: ActionProject) -> list[str]:
    return git(project.origin, "branch", "--format=%(refname:short)").split()


def ours(github: FakeGitHub, number: int) -> list[str]:
    return [c["body"] for c in github.comments(number) if render.is_generated(c["body"])]


def test_plan_opens_one_pull_request_with_the_plan_and_a_success_status(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = spec_issue(github)
    number = issue["number"]
    architect(project, writes(GOOD))
    result = ask(project, issue)
    assert result.code == 0, result.said
    assert result.outputs["outcome"] == "plan-drafted"
    branch = BRANCH.format(number)
    plan = parse(project.show("docs/MASTER_PLAN.md", branch))
    assert [t.id for t in plan.tasks] == ["T-101", "T-102", "T-103"]
    assert plan.meta["total_tasks"].value == "3"  # counted by the engine, not the agent
    assert project.subjects(branch)[0] == f"memento: draft plan (#{number})"
    assert "docs/MASTER_PLAN.md" not in git(project.origin, "ls-tree", "-r", "main")
    [pull] = github.pulls()
    assert (pull["head"]["ref"], pull["base"]["ref"], pull["draft"]) == (branch, "main", False)
    assert f"Drafted from #{number}" in pull["body"]
    assert "| Phase 1 | Core | yes | — | 3 |" in pull["body"]
    assert "memento" in {label["name"] for label in pull["labels"]}
    head = git(project.origin, "rev-parse", branch).strip()
    [status] = github.statuses(head)
    assert (status["context"], status["state"]) == ("memento/plan", "success")
    assert status["description"] == "The plan validates: 1 phase, 3 tasks"
    # readable back through the REST API, as ci-verify reads checks
    reader = GitHub(github.url, TOKEN, REPOSITORY, pace=False)
    assert [(c.name, c.conclusion) for c in reader.checks(head)] == [("memento/plan", "success")]
    # the issue's body reached the architect as data, inside its prompt file; no token did
    assert SPEC.strip() in (project.outside / "prompt.md").read_text(encoding="utf-8")
    agent_env = (project.outside / "env.json").read_text(encoding="utf-8")
    assert TOKEN not in agent_env
    [reaction] = github.state()["reactions"]
    assert reaction["content"] == "+1"


def test_a_refused_pull_request_leaves_the_draft_on_its_branch_and_one_answer(
    project: ActionProject, github: FakeGitHub
) -> None:
    github.set_policy(actions_may_open_pulls=False)  # GitHub's default (issue #29)
    issue = spec_issue(github)
    number = issue["number"]
    architect(project, writes(GOOD))
    result = ask(project, issue)
    assert result.code == 0, result.said
    assert result.outputs["outcome"] == "plan-pushed"
    branch = BRANCH.format(number)
    assert len(parse(project.show("docs/MASTER_PLAN.md", branch)).tasks) == 3
    assert github.pulls() == []
    [comment] = ours(github, number)
    assert "GitHub Actions is not permitted to create or approve pull requests." in comment
    assert "Allow GitHub Actions to create and approve pull requests" in comment
    assert f"compare/main...{branch}?expand=1" in comment
    assert not [line for line in result.said if line.startswith("::warning")]


def test_asking_again_updates_the_branch_and_the_pull_request_instead_of_a_second(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = spec_issue(github)
    number = issue["number"]
    architect(project, writes(GOOD), writes(TWO_PHASES))
    assert ask(project, issue).outputs["outcome"] == "plan-drafted"
    branch = BRANCH.format(number)
    first = git(project.origin, "rev-parse", branch).strip()
    second = ask(project, issue)
    assert second.outputs["outcome"] == "plan-drafted", second.said
    [pull] = github.pulls()
    assert "| Phase 2 | More | no | Phase 1 | 1 |" in pull["body"]
    head = git(project.origin, "rev-parse", branch).strip()
    assert git(project.origin, "rev-parse", f"{head}^").strip() == first  # on top: nothing lost
    assert project.subjects(branch)[:2] == [f"memento: draft plan (#{number})"] * 2
    assert len(parse(project.show("docs/MASTER_PLAN.md", branch)).tasks) == 4
    assert github.statuses(head)[0]["description"] == "The plan validates: 2 phases, 4 tasks"
    assert len(github.statuses(first)) == 1


def test_a_draft_that_stays_invalid_opens_no_pull_request_and_says_why_on_the_issue(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = spec_issue(github)
    number = issue["number"]
    architect(project, writes(BAD))
    result = ask(project, issue)
    assert result.code == 0, result.said
    assert result.outputs["outcome"] == "plan-invalid"
    assert agent_runs(project) == 3
    assert github.pulls() == []
    assert BRANCH.format(number) not in branches(project)
    [comment] = ours(github, number)
    line = BAD.splitlines().index(next(row for row in BAD.splitlines() if "`T-102`" in row)) + 1
    assert f"docs/MASTER_PLAN.md:{line}: error: T-102 has no 'verify:' line" in comment
    assert "after 3 rounds" in comment and "/memento plan" in comment
    assert ".memento_proposal" not in comment


def test_an_untrusted_commenters_plan_does_nothing(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = spec_issue(github)
    architect(project, writes(GOOD))
    result = ask(project, issue, author="mallory", association="NONE")
    assert result.outputs["outcome"] == "untrusted"
    assert agent_runs(project) == 0 and not (project.outside / "prompt.md").exists()
    assert github.pulls() == []
    assert BRANCH.format(issue["number"]) not in branches(project)
    assert ours(github, issue["number"]) == []


def test_a_plan_already_on_the_default_branch_is_refused_with_a_pointer_to_revise(
    tmp_path: Path, github: FakeGitHub
) -> None:
    project = ActionProject(tmp_path, github)  # main holds a plan
    issue = spec_issue(github)
    architect(project, writes(GOOD))
    before = git(project.origin, "rev-parse", "main").strip()
    result = ask(project, issue)
    assert result.outputs["outcome"] == "plan-refused"
    assert agent_runs(project) == 0
    [comment] = ours(github, issue["number"])
    assert "`docs/MASTER_PLAN.md` is already on `main`" in comment
    assert "/memento revise" in comment
    assert github.pulls() == []
    assert git(project.origin, "rev-parse", "main").strip() == before
    assert BRANCH.format(issue["number"]) not in branches(project)


def test_an_architect_that_changes_more_than_its_proposal_lands_nothing_and_says_so(
    project: ActionProject, github: FakeGitHub
) -> None:
    issue = spec_issue(github)
    architect(project, [{"write": "src/extra.py", "text": "X = 1\n"}, *writes(GOOD)])
    result = ask(project, issue)
    assert result.outputs["outcome"] == "plan-failed"
    [comment] = ours(github, issue["number"])
    assert "src/extra.py" in comment and "rolled back" in comment
    assert github.pulls() == []
    assert BRANCH.format(issue["number"]) not in branches(project)


def test_a_key_the_architect_writes_into_the_plan_never_reaches_github(
    project: ActionProject, github: FakeGitHub
) -> None:
    key = "sk-ant-api03-" + "Pl4nt3d" * 8 + "-AA"
    issue = spec_issue(github)
    architect(project, writes(GOOD.replace("## Phase 1: Core", f"## Phase 1: Core {key}")))
    result = ask(project, issue, env={"ANTHROPIC_API_KEY": key})
    assert result.outputs["outcome"] == "plan-drafted", result.said
    history = git(project.origin, "log", "-p", "--all")
    assert "## Phase 1: Core ***" in history and key not in history
    [pull] = github.pulls()
    assert key not in pull["body"] and "Core \\*\\*\\*" in pull["body"]
