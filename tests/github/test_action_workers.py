"""`memento github` with several workers on the branch (`workers` > 1), in-process against
real parts: controls are pushed before anything else, and re-applied on the new tip when
another worker pushed first; the tick shares the branch; a dry run pushes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memento_gh import remote
from memento_gh.formats.notes import parse_notes
from memento_gh.github.settings import Settings
from testing.action_runs import TOKEN, ActionProject, BusyGitHub, OtherWorker
from testing.repos import git
from testing.ticks import good

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

WORKER_2 = {"MEMENTO_WORKERS": "3", "MEMENTO_WORKER_ID": "worker-2"}
NOTE = {"MEMENTO_COMMAND": "note", "MEMENTO_TEXT": "Use Redis for the sessions."}


@pytest.fixture
def github() -> Iterator[BusyGitHub]:
    with BusyGitHub("octo/project", TOKEN) as server:
        server.set_permission("alice", "admin")
        yield server


@pytest.fixture
def project(tmp_path: Path, github: BusyGitHub) -> ActionProject:
    return ActionProject(tmp_path, github)


class Waits:
    """A shared branch that tries ``attempts`` times and records its waits instead of
    sleeping: how often a run found the branch moved."""

    def __init__(self, attempts: int = 5) -> None:
        self.attempts = attempts
        self.waits: list[float] = []
        self.made = 0

    def __call__(self, root: Path, settings: Settings) -> remote.SharedBranch:
        self.made += 1
        return remote.SharedBranch(
            root,
            branch=settings.branch,
            token=settings.token,
            attempts=self.attempts,
            sleep=self.waits.append,
        )


def refuse(root: Path, settings: Settings) -> remote.SharedBranch:
    raise AssertionError("this run must not share the branch")


def notes(project: ActionProject) -> list[str]:
    return [note.text for note in parse_notes(project.show("docs/HUMAN_NOTES.md")).active()]


def test_a_control_lands_once_when_another_worker_pushed_first(
    project: ActionProject, github: BusyGitHub
) -> None:
    project.create_branch()
    other = OtherWorker(project)
    # While the run reads the comments (after it fetched the branch, before it pushes its
    # note), another worker's note lands on the branch.
    github.meanwhile.append(lambda: other.note("The other worker's note."))
    shared = Waits()

    result = project.run("workflow_dispatch", env={**WORKER_2, **NOTE}, share=shared)

    assert result.code == 0, result.said
    assert other.pushed == 1 and len(shared.waits) == 1  # rejected once, landed the second time
    assert result.outputs["outcome"] == "controls"
    texts = notes(project)
    assert sum("Use Redis" in text for text in texts) == 1
    assert sum("other worker" in text for text in texts) == 1
    assert project.subjects().count("memento: note") == 2  # the other's and ours, once each
    assert result.summary.count("Applied: note for global added") == 1
    assert "**Worker:** `worker-2` · ran no task" in result.summary


def test_a_missed_comment_is_caught_up_once_though_the_branch_moved_meanwhile(
    project: ActionProject, github: BusyGitHub
) -> None:
    project.run("workflow_dispatch", env={"MEMENTO_COMMAND": "pause"})  # makes the dashboard
    [dashboard] = project.memento_issues("dashboard")
    github.add_comment(dashboard["number"], "Keep the API stable.", author="alice")
    other = OtherWorker(project)
    github.meanwhile.append(lambda: other.note("The other worker's note."))
    shared = Waits()

    resume, pause = ({**WORKER_2, "MEMENTO_COMMAND": word} for word in ("resume", "pause"))
    first = project.run("workflow_dispatch", env=resume, share=shared)
    second = project.run("workflow_dispatch", env=pause, share=shared)

    assert (first.code, second.code) == (0, 0), first.said + second.said
    assert len(shared.waits) == 1
    assert sum("Keep the API stable" in text for text in notes(project)) == 1
    assert project.plan().settings.tick_mode == "paused"


def test_a_branch_that_never_stops_moving_ends_the_run_with_a_line_not_a_traceback(
    project: ActionProject, github: BusyGitHub
) -> None:
    project.create_branch()
    other = OtherWorker(project)
    github.meanwhile.extend(lambda n=n: other.note(f"Busy note {n}.") for n in range(3))
    shared = Waits(attempts=3)

    result = project.run("workflow_dispatch", env={**WORKER_2, **NOTE}, share=shared)

    assert result.code == 0, result.said
    assert result.outputs["outcome"] == "push-conflict"
    assert len(shared.waits) == 2  # between the three attempts
    assert not any("Use Redis" in text for text in notes(project))
    assert project.subjects().count("memento: note") == 3  # the other worker's only
    assert "the memento branch moved 3 times" in result.summary
    assert any(line.startswith("::warning::memento could not push") for line in result.said)
    assert github.issues() == []  # nothing to bring in line: this run changed nothing


def test_one_worker_shares_nothing(project: ActionProject) -> None:
    project.script({"T-101": good("T-101")})
    result = project.run("schedule", env={"MEMENTO_WORKERS": "1"}, share=refuse)
    assert result.code == 0, result.said
    assert project.marker("T-101") == "x"
    assert "**Worker:** `actions-1001` · ran T-101" in result.summary


def test_a_dry_run_of_several_workers_ticks_here_and_pushes_nothing(
    project: ActionProject, github: BusyGitHub
) -> None:
    project.script({"T-101": good("T-101")})
    env = {**WORKER_2, "MEMENTO_DRY_RUN": "true"}
    result = project.run("schedule", env=env, share=refuse)
    assert result.code == 0, result.said
    assert result.outputs["outcome"] == "success"
    assert "memento" not in git(project.origin, "branch", "--list", "memento")
    assert github.issues() == []


# -- needs the engine's shared tick (claims pushed before the agent starts) ------------------


def test_a_worker_pushes_its_claim_before_the_agent_starts_and_then_its_result(
    project: ActionProject,
) -> None:
    project.create_branch()
    # The agent records the origin's branch as it is while the agent works.
    seen = ["--git-dir", str(project.origin), "branch", "-f", "seen-by-agent", "memento"]
    project.script({"T-101": [{"git": seen}, *good("T-101")]})
    shared = Waits()

    result = project.run("schedule", env=WORKER_2, share=shared)

    assert result.code == 0, result.said
    assert shared.made == 1
    while_working = project.show("docs/MASTER_PLAN.md", branch="seen-by-agent")
    assert "[~] `T-101`" in while_working
    assert "claimed: " in while_working and " worker-2" in while_working
    assert project.marker("T-101") == "x"
    assert result.outputs["outcome"] == "success"
    assert "**Worker:** `worker-2` · ran T-101" in result.summary
