"""Whether a run can prove its task done (``engine/proof.py``), through real ticks: a run
whose agent changed nothing fails unless the task needs no change; with ``verify_first``, a
run whose verify passes before the agent fails, and what verify wrote then is not the
agent's change; a verify whose program is nowhere on PATH is refused before the claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento_gh.changes import FileChange
from memento_gh.engine import proof
from memento_gh.engine.agents.verify_path import verify_programs
from memento_gh.engine.records import VerifyResult
from memento_gh.plan.scanner import parse
from testing.ticks import good, make_project, one_phase, plan_of, task

pytestmark = pytest.mark.usefixtures("isolated_git")


def plan_task(**fields: str) -> str:
    return plan_of([one_phase(task("T-101", **fields))])


def test_a_run_that_changes_nothing_fails_and_one_that_needs_none_passes(tmp_path: Path) -> None:
    project = make_project(tmp_path / "one", plan_task(verify="`true`"))
    project.script({"T-101": []})
    done = project.tick()
    assert "failed: the agent changed nothing" in done.stdout, done.stdout + done.stderr
    assert project.marker("T-101") == " "
    [entry] = project.entries()
    assert entry.exit_code is None  # verify did not run

    other = make_project(tmp_path / "two", plan_task(verify="`true`", needs_change="false"))
    other.script({"T-101": []})
    assert "success: verify passed" in other.tick().stdout
    assert other.marker("T-101") == "x"


def test_verify_first_undoes_what_verify_wrote_before_the_agent(tmp_path: Path) -> None:
    # verify writes a file outside the task's context_files: were it the agent's change, a
    # guard would reject the run.
    verify = "`echo run >> made-by-verify.txt; grep -q A src/a.py`"
    plan = plan_of([one_phase(task("T-101", verify=verify))], verify_first="true")
    project = make_project(tmp_path, plan)
    project.script({"T-101": good("T-101")})

    done = project.tick()

    assert "success: verify passed" in done.stdout, done.stdout + done.stderr
    assert project.committed_files() >= {"src/a.py"}
    assert "made-by-verify.txt" not in project.committed_files()


def test_verify_first_fails_a_verify_that_passes_before_the_agent(tmp_path: Path) -> None:
    plan = plan_of([one_phase(task("T-101", verify="`true`"))], verify_first="true")
    project = make_project(tmp_path, plan)
    ran = project.outside / "ran"
    project.script({"T-101": [{"touch": str(ran)}, *good("T-101")]})

    done = project.tick()

    assert "failed: verify passed before the agent ran (verify_first)" in done.stdout
    assert not ran.exists()
    found = project.plan().task("T-101")
    assert found is not None and (found.marker, found.retries) == (" ", 1)
    assert project.dirty() == []


def test_a_verify_program_nowhere_on_path_is_refused_before_the_claim(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_task(verify="`pytestt -q tests`"))
    project.script({"T-101": good("T-101")})
    before = project.git("rev-parse", "HEAD")

    done = project.tick()

    assert done.returncode == 1
    assert done.stderr.startswith("memento: error: T-101 verify runs `pytestt`")
    assert "docs/MASTER_PLAN.md:" in done.stderr and "nothing was claimed" in done.stderr
    assert project.git("rev-parse", "HEAD") == before
    assert project.dirty() == []


@pytest.mark.parametrize(
    ("command", "programs"),
    [
        ("python -m pytest -q && mypy src", ["python", "mypy"]),
        ("${RUNNER:-pytest} -q", []),  # only the shell knows what it names
        ("$PYTHON -m pytest", []),
        ("./scripts/check && .venv/bin/python -m pytest", []),  # paths, not PATH
        ("cd sub && make test", ["make"]),
        ("FOO=1 exec tox -e py", ["tox"]),
    ],
)
def test_the_programs_verify_starts_by_name(command: str, programs: list[str]) -> None:
    assert verify_programs(command) == programs


def test_the_decisions_on_values() -> None:
    plan = parse(plan_task(verify="`true`", needs_change="false"))
    relaxed = plan.task("T-101")
    strict = parse(plan_task(verify="`true`")).task("T-101")
    assert relaxed is not None and strict is not None
    change = FileChange("src/a.py", "modified", 1, 0, binary=False)
    assert proof.nothing_changed([], strict) == proof.NOTHING_CHANGED
    assert proof.nothing_changed([change], strict) is None
    assert proof.nothing_changed([], relaxed) is None
    passed = VerifyResult(0, False, 0.1, "", "")
    failed = passed._replace(exit_code=1)
    assert proof.passed_before_the_agent(failed) is None
    assert "cannot tell this task done" in (proof.passed_before_the_agent(passed) or "")


def test_a_needs_change_that_does_not_read_is_a_plan_error() -> None:
    from memento_gh.plan.validate import validate_plan

    problems = validate_plan(parse(plan_task(verify="`true`", needs_change="nope")))
    assert any("needs_change" in problem.message for problem in problems), problems
