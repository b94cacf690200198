"""Why a task run failed, each reason in its own field of the status entry (first-use issue,
item 4): an agent that exits non-zero is an "Agent Failure" carrying the last line it said,
a tick that died is "Tick Died", a change that no longer applies on a shared branch is a
"Conflict", and "Guard Violations" holds only the rules the change broke. Real ticks, real
git, fake agents that are real processes."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from memento_gh.dashboard.snapshot import build
from memento_gh.engine.agents.presets import last_words
from memento_gh.formats.status_log import ParsedEntry, parse_status
from testing.agents import AGENTS_DIR
from testing.ticks import GUARD, Project, good, make_project
from testing.workers import Pool
from tests.engine.test_shared import FIRST, RacingBranch, pool, push_edit, tick

__all__ = ["pool"]  # the fixture of a pool of workers sharing a branch

LOGIN = "Not logged in · Please run /login"


def last_entry(project: Project) -> ParsedEntry:
    entries = project.entries()
    assert entries, project.status_path.read_text(encoding="utf-8")
    return entries[-1]


def logged_out_claude(project: Project) -> dict[str, str]:
    """PATH with a ``claude`` that is not logged in (``testing/agents/logged_out.py``)."""
    bin_dir = project.outside / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(AGENTS_DIR / "logged_out.py")
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.timeout(60)
def test_an_agent_that_exits_1_is_an_agent_failure_with_its_last_line(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script(
        {
            "T-101": [
                {"print": "Reading the task..."},
                {"stderr": LOGIN},
                {"print": "   "},
                {"print": "──────────"},
                {"exit": 1},
            ]
        }
    )

    done = project.tick()

    assert done.returncode == 0, done.stdout + done.stderr
    entry = last_entry(project)
    assert entry.outcome == "failed"
    assert entry.fields["Agent Failure"] == f"the agent exited with code 1: {LOGIN}"
    assert "Guard Violations" not in entry.fields
    assert entry.error_analysis == f"the agent exited with code 1: {LOGIN}"
    assert f"failed: the agent exited with code 1: {LOGIN}" in done.stdout
    # the dashboard shows the reason under its own name
    snapshot = build(
        project.plan(),
        "docs/MASTER_PLAN.md",
        errors=0,
        status_text=project.status_path.read_text(encoding="utf-8"),
        notes_text="",
        schedules=[],
        alert=None,
        now=entry.time,
    )
    last = next(task["last"] for task in snapshot["tasks"] if task["id"] == "T-101")
    assert last["agent_failure"] == f"the agent exited with code 1: {LOGIN}"
    assert last["violations"] is None


@pytest.mark.timeout(60)
def test_claude_not_logged_in_says_so_in_the_status_entry(tmp_path: Path) -> None:
    """The ``claude`` preset asks for JSON output: the message is the result object's."""
    project = make_project(tmp_path)
    path = logged_out_claude(project)

    done = project.memento("tick", "--agent", "claude", env=path)

    assert done.returncode == 0, done.stdout + done.stderr
    entry = last_entry(project)
    assert entry.fields["Agent Failure"] == f"the agent exited with code 1: {LOGIN}"
    assert "Guard Violations" not in entry.fields
    assert LOGIN in done.stdout


@pytest.mark.timeout(60)
def test_an_agent_that_says_nothing_is_an_agent_failure_with_its_code(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": [{"exit": 3}]})
    # the fake agent's own first line is its only output: that is what it said last
    project.tick()

    entry = last_entry(project)
    assert entry.fields["Agent Failure"].startswith("the agent exited with code 3")
    assert "Guard Violations" not in entry.fields


@pytest.mark.timeout(60)
def test_a_guard_violation_of_a_failed_agent_keeps_its_own_field(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    actions = [*good("T-101"), {"write": GUARD, "text": "G = 2\n"}, {"stderr": "oops"}, {"exit": 2}]
    project.script({"T-101": actions})

    project.tick()

    entry = last_entry(project)
    assert entry.fields["Agent Failure"] == "the agent exited with code 2: oops"
    assert GUARD in entry.fields["Guard Violations"]
    assert "exited" not in entry.fields["Guard Violations"]
    analysis = entry.error_analysis or ""
    assert "the agent exited with code 2: oops" in analysis and GUARD in analysis


@pytest.mark.timeout(120)
def test_a_tick_that_died_is_a_tick_died_field_not_a_guard_violation(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": good("T-101")})
    killed = project.tick_process(env={"MEMENTO_CRASH_AT": "claimed"})
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr

    recovered = project.tick()

    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    died = next(entry for entry in project.entries() if entry.outcome == "failed")
    assert died.fields["Tick Died"] == "the previous tick died while running this task"
    assert "Guard Violations" not in died.fields
    assert "Agent Failure" not in died.fields
    assert project.marker("T-101") == "x"


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (f"Working...\n{LOGIN}\n\n", LOGIN),
        ("Error: model overloaded\n\x1b[2m──────────\x1b[0m\n  \n", "Error: model overloaded"),
        (
            '{"type": "result", "is_error": true, "result": "Credit balance is too low"}\n',
            "Credit balance is too low",
        ),
        ('{"error": {"message": "invalid api key"}}\n', "invalid api key"),
        ("{not json at all\n", "{not json at all"),
        (  # openclaw agent exec --json: a pretty-printed envelope, after its log lines
            '[agent] run ended\n{\n  "ok": false,\n  "status": "error",\n  "error": {\n'
            '    "message": "API rate limit reached.",\n    "kind": "exception"\n  }\n}\n',
            "API rate limit reached.",
        ),
        ("  spaced   out \t words  \n", "spaced out words"),
        ("x" * 400 + "\n", "x" * 299 + "…"),
        ("\n  \n-----\n", None),
        ("", None),
    ],
)
def test_the_agents_last_words_are_its_last_line_that_says_something(
    output: str, said: str | None
) -> None:
    assert last_words(output) == said


@pytest.mark.timeout(120)
def test_a_change_that_no_longer_applies_is_a_conflict(pool: Pool) -> None:
    def overwrite(root: Path) -> None:
        (root / "out" / f"{FIRST}.txt").write_text("a human got there first\n")

    branch = RacingBranch(
        pool.clones[0], {2: lambda: push_edit(pool, 1, overwrite, "a human writes it")}
    )

    result = tick(pool, 0, branch)

    assert [(o.task_id, o.outcome) for o in result.tasks] == [(FIRST, "failed")]
    entries = [
        r for r in parse_status(pool.show("docs/TICK_STATUS.md")) if isinstance(r, ParsedEntry)
    ]
    failed = entries[-1]
    assert failed.task_id == FIRST and failed.outcome == "failed"
    assert "no longer applies" in failed.fields["Conflict"]
    assert "Guard Violations" not in failed.fields
