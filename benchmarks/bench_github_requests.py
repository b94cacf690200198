"""GitHub API requests per `memento github` run, counted at the fake server.

    .venv/bin/python benchmarks/bench_github_requests.py

Each scenario runs the real action code in-process against real git repositories and the
fake GitHub REST server (real HTTP, the real PyGithub client), and counts the requests the
server answered during that run. Budgets (issue #4): a steady-state scheduled tick with
nothing new to sync makes at most 3 requests, a tick that blocks a task at most 8.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testing.action_runs import REPOSITORY, TOKEN, ActionProject, comment_event
from testing.fake_github import FakeGitHub
from testing.ticks import good, wrong

Scenario = Callable[[ActionProject, FakeGitHub], None]
BUDGETS = {"steady-state scheduled tick": 3, "scheduled tick that blocks a task": 8}


def measure(name: str, prepare: Scenario, measured: Scenario) -> tuple[str, int, str]:
    with tempfile.TemporaryDirectory() as folder, FakeGitHub(REPOSITORY, TOKEN) as github:
        github.set_permission("alice", "admin")
        github.set_policy(actions_may_open_pulls=True)  # set up as the README's checklist says
        project = ActionProject(Path(folder), github)
        prepare(project, github)
        github.reset_requests()
        measured(project, github)
        log = github.requests_log
        paths = ", ".join(f"{method} {path.split('?')[0]}" for method, path, _ in log)
        return name, github.request_count(), paths


def first_run(project: ActionProject, github: FakeGitHub) -> None:
    project.script({"T-101": good("T-101")})


def schedule(project: ActionProject, github: FakeGitHub) -> None:
    project.run("schedule")


def steady(project: ActionProject, github: FakeGitHub) -> None:
    first_run(project, github)
    project.run("schedule")
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})


def nearly_blocked(project: ActionProject, github: FakeGitHub) -> None:
    project.script({"T-101": wrong("T-101")})
    project.run("schedule")
    project.run("schedule")


def blocked(project: ActionProject, github: FakeGitHub) -> None:
    nearly_blocked(project, github)
    project.run("schedule")


def note_on_issue(project: ActionProject, github: FakeGitHub) -> None:
    [issue] = project.memento_issues("blocked")
    project.run("issue_comment", comment_event(github, issue, "Use a capital A."))


def main() -> int:
    rows = [
        measure("first scheduled tick on a new repository", first_run, schedule),
        measure("steady-state scheduled tick", steady, schedule),
        measure("scheduled tick that blocks a task", nearly_blocked, schedule),
        measure("comment on a blocked task's issue (a note)", blocked, note_on_issue),
    ]
    print(f"{'run':<46}{'requests':>9}  budget")
    for name, count, _ in rows:
        budget = BUDGETS.get(name)
        verdict = "" if budget is None else f"≤ {budget} {'ok' if count <= budget else 'OVER'}"
        print(f"{name:<46}{count:>9}  {verdict}")
    print()
    for name, _, paths in rows:
        print(f"{name}: {paths}")
    return 0 if all(count <= BUDGETS.get(name, count) for name, count, _ in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
