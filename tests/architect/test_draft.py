"""``memento plan draft``: a scripted architect writes a proposal file, memento validates it,
re-prompts it with the validator's messages, and lands only a valid plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.agents import Action, scripted_command
from testing.ticks import Completed, Project, make_project, one_phase, plan_of, task

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("isolated_git")]

SPEC = "# Demo\n\nThree modules, A, B and C, each a file holding its letter.\n"
GOOD = plan_of([one_phase()], total_tasks="99")
#: T-102 without its verify line: an error at the line of T-102's task line.
BAD = GOOD.replace(
    "  - verify: `grep -q B src/b.py || { echo 'src/b.py has no B'; exit 1; }`\n", ""
)
PROPOSAL = "$MEMENTO_PROPOSAL_FILE"


def without_plan(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    project.git("rm", "-q", "docs/MASTER_PLAN.md")
    project.git("commit", "-qm", "no plan yet")
    (project.outside / "spec.md").write_text(SPEC, encoding="utf-8")
    return project


def architect(project: Project, rounds: list[list[Action]]) -> None:
    project.script({"architect": {"attempts": rounds}})


def draft(project: Project, *args: str) -> Completed:
    spec = str(project.outside / "spec.md")
    return project.memento(
        "plan",
        "draft",
        "--spec",
        spec,
        "--agent-cmd",
        scripted_command(),
        *args,
        env={"MEMENTO_TEST_PROMPTS": str(project.outside)},
    )


def writes(text: str, round_number: int) -> list[Action]:
    return [
        {"save_prompt": f"{PROMPTS}/{round_number}.md"},
        {"write": PROPOSAL, "text": text},
    ]


PROMPTS = "$MEMENTO_TEST_PROMPTS"


def test_a_valid_draft_lands_with_counters_the_engine_computed(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    architect(project, [writes(GOOD, 1)])
    done = draft(project)
    assert done.returncode == 0, done.stderr
    plan = project.plan()
    assert [t.id for t in plan.tasks] == ["T-101", "T-102", "T-103"]
    assert plan.meta["total_tasks"].value == "3"
    assert project.subjects()[0] == "memento: draft plan"
    assert project.dirty() == []
    prompt = (project.outside / "1.md").read_text(encoding="utf-8")
    assert SPEC in prompt
    # the format's rules come from the validator's table, the tree from git
    assert "every task needs a `verify:`" in prompt
    assert "src/guard.py" in prompt


def test_a_draft_with_errors_is_reprompted_with_the_messages_and_lands_once_fixed(
    tmp_path: Path,
) -> None:
    project = without_plan(tmp_path)
    architect(project, [writes(BAD, 1), writes(GOOD, 2)])
    done = draft(project)
    assert done.returncode == 0, done.stderr
    assert project.agent_runs() == {"architect": 2}
    second = (project.outside / "2.md").read_text(encoding="utf-8")
    line = BAD.splitlines().index(next(row for row in BAD.splitlines() if "`T-102`" in row)) + 1
    assert f"proposal.md:{line}: error: T-102 has no 'verify:' line" in second
    assert project.plan().task("T-102") is not None


def test_a_draft_still_invalid_after_the_rounds_never_lands_and_says_why(
    tmp_path: Path,
) -> None:
    project = without_plan(tmp_path)
    architect(project, [writes(BAD, 1)])
    done = draft(project, "--rounds", "2")
    assert done.returncode == 1
    assert project.agent_runs() == {"architect": 2}
    assert not project.plan_path.exists()
    assert "T-102 has no 'verify:' line" in done.stderr
    assert "after 2 rounds" in done.stderr


def test_a_phase_whose_verify_commands_the_repository_lacks_is_refused(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    no_tool = plan_of(
        [
            one_phase(
                task("T-101", verify="`no-such-test-tool src/a.py`"),
                task("T-102", verify="`pytest tests/missing_test.py`"),
            )
        ]
    )
    architect(project, [writes(no_tool, 1)])
    done = draft(project, "--rounds", "1")
    assert done.returncode == 1
    assert "Phase 1 has no verify that runs a test command this repository has" in done.stderr
    assert not project.plan_path.exists()


def test_an_existing_plan_is_never_overwritten(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project.outside / "spec.md").write_text(SPEC, encoding="utf-8")
    before = project.plan_path.read_bytes()
    architect(project, [writes(GOOD, 1)])
    done = draft(project)
    assert done.returncode == 1
    assert "memento plan revise" in done.stderr
    assert project.plan_path.read_bytes() == before
    assert project.agent_runs() == {}


def test_the_untouched_example_plan_of_init_is_replaced(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    assert project.memento("init", ".").returncode == 0
    project.git("add", "-A")
    project.git("commit", "-qm", "init")
    architect(project, [writes(GOOD, 1)])
    done = draft(project)
    assert done.returncode == 0, done.stderr
    assert project.plan().task("T-103") is not None


def test_an_architect_that_edits_anything_but_the_proposal_is_rolled_back(
    tmp_path: Path,
) -> None:
    project = without_plan(tmp_path)
    architect(
        project,
        [
            [
                {"write": PROPOSAL, "text": GOOD},
                {"write": "src/a.py", "text": "A = 1\n"},
                {"replace": "src/guard.py", "old": "G = 1", "new": "G = 2"},
            ]
        ],
    )
    done = draft(project)
    assert done.returncode == 1
    assert "src/a.py" in done.stderr and "src/guard.py" in done.stderr
    assert "rolled back" in done.stderr
    assert not (project.root / "src/a.py").exists()
    assert (project.root / "src/guard.py").read_text(encoding="utf-8") == "G = 1\n"
    assert not project.plan_path.exists()


def test_the_proposal_file_is_named_in_the_environment_and_the_template(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    spec = str(project.outside / "spec.md")
    template = f"cp {project.outside / 'good.md'} {{proposal_file}}"
    (project.outside / "good.md").write_text(GOOD, encoding="utf-8")
    done = project.memento("plan", "draft", "--spec", spec, "--agent-cmd", template)
    assert done.returncode == 0, done.stderr
    assert project.plan().task("T-101") is not None
    assert ".git/memento/" in done.stdout
