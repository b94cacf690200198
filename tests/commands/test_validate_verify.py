"""``memento validate --check-verify``: verify runs with the PATH memento is started with, so
a verify program that PATH finds inside memento's own environment (its venv), or does not
find at all, is a warning at the task's ``verify:`` line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from memento_gh.engine.agents.verify_path import path_problems, verify_programs
from memento_gh.plan.scanner import parse
from testing.cli import call_memento
from testing.repos import write

VENV_BIN = Path(sys.executable).parent
MISSING = "no-such-tool-4f2a"

PLAN = f"""# MASTER_PLAN: Demo

## Meta
- tick_mode: auto

## Phase 1: Foundation
<!-- parallel: false -->
<!-- depends: none -->

- [ ] `T-101` [MODULE:core] Tests with memento's python
  - verify: `python -m pytest -q`
  - context_files: [src/a.py]

- [ ] `T-102` [MODULE:core] A tool nobody installed
  - verify: `{MISSING} --check`
  - context_files: [src/a.py]

- [ ] `T-103` [MODULE:core] Shell words, system tools and memento itself
  - verify: `FOO=1 true && cd src && test -f a.py && memento validate || exit 1`
  - context_files: [src/a.py]

- [ ] `T-104` [MODULE:core] The second command of a line
  - verify: `cd src; pytest -q`
  - context_files: [src/a.py]

- [x] `T-105` [MODULE:core] Done: its verify never runs again
  - verify: `{MISSING}`
  - context_files: [src/a.py]
"""
LINES = PLAN.splitlines()


def verify_line(task: str) -> int:
    """The 1-based line of ``task``'s verify field."""
    start = next(number for number, line in enumerate(LINES) if f"`{task}`" in line)
    return start + 2


def check_verify(repo: Path, path: str, *args: str) -> tuple[int, list[str]]:
    done = call_memento("validate", *args, cwd=repo, env={"PATH": path})
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout.splitlines()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write(tmp_path, "docs/MASTER_PLAN.md", PLAN)
    return tmp_path


def system_path() -> str:
    return os.environ.get("PATH", "")


@pytest.mark.timeout(60)
def test_verify_programs_in_memento_s_environment_or_missing_are_warnings(repo: Path) -> None:
    assert sys.prefix != sys.base_prefix, "the tests run in a virtual environment"

    code, lines = check_verify(repo, f"{VENV_BIN}{os.pathsep}{system_path()}", "--check-verify")

    assert code == 0  # warnings only: PATH may differ where ticks run
    plan = "docs/MASTER_PLAN.md"
    assert [line.split(" verify: ")[0] for line in lines] == [
        f"{plan}:{verify_line('T-101')}: warning: T-101",
        f"{plan}:{verify_line('T-102')}: warning: T-102",
        f"{plan}:{verify_line('T-104')}: warning: T-104",
    ]
    assert f"`python` resolves to {VENV_BIN / 'python'}" in lines[0]
    assert f"inside memento's own environment ({sys.prefix})" in lines[0]
    assert f"`{MISSING}` is not found on PATH" in lines[1]
    assert f"`pytest` resolves to {VENV_BIN / 'pytest'}" in lines[2]
    for line in lines:
        assert "PATH" in line  # each names what to change


@pytest.mark.timeout(60)
def test_a_project_environment_first_on_path_is_fine(repo: Path, tmp_path: Path) -> None:
    project_bin = tmp_path / "project-venv" / "bin"
    for name in ("python", "pytest", MISSING):
        write(project_bin, name, "#!/bin/sh\nexit 0\n").chmod(0o755)
    path = f"{project_bin}{os.pathsep}{VENV_BIN}{os.pathsep}{system_path()}"

    code, lines = check_verify(repo, path, "--check-verify")

    assert (code, lines) == (0, [])


@pytest.mark.timeout(60)
def test_plain_validate_does_not_look_at_path(repo: Path) -> None:
    code, lines = check_verify(repo, f"{VENV_BIN}{os.pathsep}{system_path()}")

    assert (code, lines) == (0, [])


@pytest.mark.parametrize(
    ("command", "programs"),
    [
        ("python -m pytest -q", ["python"]),
        ("FOO=1 BAR=x pytest tests", ["pytest"]),
        ("cd src && make test", ["make"]),
        ("exec tox -e py", ["tox"]),
        ("./scripts/test.sh && .venv/bin/python -m pytest", []),
        ("if pytest -q; then true; else exit 1; fi", ["pytest"]),
        ("npm test 2>&1 | tee log; npm run lint", ["npm", "tee"]),
        ("(cd web && npx tsc --noEmit)", ["npx"]),
        ("pytest 'unbalanced", []),
    ],
)
def test_the_programs_a_verify_line_starts(command: str, programs: list[str]) -> None:
    assert verify_programs(command) == programs


def test_memento_installed_in_the_project_s_own_environment_is_not_a_warning(
    tmp_path: Path,
) -> None:
    """``pip install memento-gh`` into the project's ``.venv``: its python is the project's."""
    project_venv = tmp_path / ".venv"
    plan = parse(PLAN)

    def which(program: str) -> str:
        return str(project_venv / "bin" / program)

    inside = path_problems(plan, tmp_path, which=which, prefix=str(project_venv), base_prefix="/")
    outside = path_problems(
        plan, tmp_path / "elsewhere", which=which, prefix=str(project_venv), base_prefix="/"
    )

    assert inside == []
    assert [problem.message.split(" verify: ")[0] for problem in outside] == [
        "T-101",
        "T-102",
        "T-104",
    ]
