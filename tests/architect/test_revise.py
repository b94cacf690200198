"""``memento plan revise``: a scripted architect edits the plan's proposal; memento refuses
what a revision may not change, prints the diff, and ``--apply`` lands it as one commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.agents import Action, scripted_command
from testing.ticks import Completed, Project, make_project, one_phase, plan_of, task

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("isolated_git")]

PROPOSAL = "$MEMENTO_PROPOSAL_FILE"
PLAN = plan_of(
    [one_phase(task("T-101", "x"), task("T-102", "!", retries="3"), task("T-103"))],
    completed_tasks="1",
)


def replace(old: str, new: str) -> Action:
    return {"replace": PROPOSAL, "old": old, "new": new}


#: Split the blocked T-102: it is dropped ([-]) and T-104 does its work.
SPLIT = [
    replace("- [!] `T-102`", "- [-] `T-102`"),
    {"append": PROPOSAL, "text": "\n" + task("T-104")},
]


def blocked_project(tmp_path: Path, actions: list[Action]) -> Project:
    project = make_project(tmp_path, PLAN)
    project.script({"architect": actions})
    return project


def revise(project: Project, *args: str) -> Completed:
    argv = ("plan", "revise", "--task", "T-102", "--agent-cmd", scripted_command(), *args)
    return project.memento(*argv)


def test_a_revision_prints_its_diff_and_changes_nothing_without_apply(tmp_path: Path) -> None:
    project = blocked_project(tmp_path, SPLIT)
    head = project.head()
    done = revise(project)
    assert done.returncode == 0, done.stderr
    assert "-- [!] `T-102`" in done.stdout and "+- [-] `T-102`" in done.stdout
    assert "+- [ ] `T-104`" in done.stdout
    assert project.head() == head
    assert project.plan_path.read_text(encoding="utf-8") == PLAN


def test_an_applied_revision_lands_as_one_commit(tmp_path: Path) -> None:
    project = blocked_project(tmp_path, SPLIT)
    head = project.head()
    done = revise(project, "--apply", "--why", "T-102 is too big")
    assert done.returncode == 0, done.stderr
    assert project.git("rev-list", f"{head}..HEAD").split() == [project.head()]
    assert project.subjects()[0] == "memento: revise plan (T-102)"
    assert project.committed_files() == {"docs/MASTER_PLAN.md"}
    plan = project.plan()
    assert project.marker("T-102") == "-"
    assert plan.task("T-104") is not None
    assert plan.meta["total_tasks"].value == "4"
    assert "last_architect_edit" in plan.meta
    before = PLAN.splitlines()
    after = project.plan_path.read_text(encoding="utf-8").splitlines()
    t101 = [line for line in before if "T-101" in line or "src/a.py" in line]
    assert all(line in after for line in t101)
    assert project.dirty() == []


@pytest.mark.parametrize(
    ("actions", "reason"),
    [
        (
            [replace("Write module A", "Write module AA")],
            "T-101 is [x] and must stay byte for byte",
        ),
        (
            [replace("Write module B", "Write module Z")],
            "T-102 now names another task",
        ),
        (
            [
                replace(
                    "  - context_files: [src/c.py]",
                    "  - context_files: [src/c.py]\n  - depends: T-102",
                )
            ],
            "T-103 depends on T-102, which stays blocked",
        ),
    ],
    ids=["changes-a-done-task", "reuses-an-id", "breaks-depends"],
)
def test_a_revision_that_breaks_a_rule_is_refused_with_the_reason(
    tmp_path: Path, actions: list[Action], reason: str
) -> None:
    project = blocked_project(tmp_path, actions)
    head = project.head()
    done = revise(project, "--apply", "--rounds", "1")
    assert done.returncode == 1
    assert reason in done.stderr
    assert "nothing landed" in done.stderr
    assert project.head() == head
    assert project.plan_path.read_text(encoding="utf-8") == PLAN


def test_a_revision_that_edits_the_plan_itself_is_rolled_back(tmp_path: Path) -> None:
    project = blocked_project(
        tmp_path, [*SPLIT, {"replace": "docs/MASTER_PLAN.md", "old": "[!]", "new": "[ ]"}]
    )
    done = revise(project, "--apply")
    assert done.returncode == 1
    assert "docs/MASTER_PLAN.md" in done.stderr and "rolled back" in done.stderr
    assert project.plan_path.read_text(encoding="utf-8") == PLAN
    assert project.dirty() == []
