"""The tick against an agent that hides its change from git (the wall around the agent: every
changed path is found whatever git's index says of it).

``testing/agents/tamper.py`` plays the agent. T-101's verify runs a guarded check script,
``tests/check.sh``, which sources ``tests/lib.sh`` (tracked, outside T-101's context_files
and guards). The agent writes a wrong ``src/a.py`` and neuters the check or its library,
then hides that from git: an index flag, a forged index entry, sparse checkout, file data
git trusts. Each tick must fail, put every file back as committed, clear what hid it, and
leave the check as it was, so that the next tick's verify still catches the wrong file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from testing.agents import Action, tamper_command, tamper_env
from testing.ticks import Project, make_project, one_phase, plan_of, task, wrong

CHECK = "tests/check.sh"  # a guard file of T-101: the check its verify runs
LIB = "tests/lib.sh"  # tracked, neither a guard nor a context file of T-101
COMMITTED = {
    CHECK: ". tests/lib.sh\ncheck_a\n",
    LIB: "check_a() { grep -q A src/a.py || { echo 'src/a.py has no A'; exit 1; }; }\n",
}
NEUTERED = {CHECK: "exit 0\n", LIB: "check_a() { :; }\n"}
WRONG_A: Action = {"write": "src/a.py", "text": "nothing = 0\n"}
TARGETS = pytest.mark.parametrize(
    "target", [CHECK, LIB], ids=["guard file", "outside context_files"]
)


def checked_project(tmp_path: Path, config: Sequence[tuple[str, str]] = ()) -> Project:
    t101 = task("T-101", verify=f"`sh {CHECK}`", guard_files=f"[{CHECK}]")
    plan = plan_of([one_phase(t101, task("T-102"))], total_tasks="2")
    project = make_project(tmp_path, plan, files=COMMITTED)
    for key, value in config:
        project.git("config", key, value)
    # A checkout an hour old, as git's index knows it: no entry is racily clean (git would
    # read such a file again whatever its cached data says).
    hour_ago = time.time() - 3600
    for path in project.git("ls-files", "-z").split("\0"):
        if path:
            os.utime(project.root / path, (hour_ago, hour_ago))
    project.git("update-index", "--refresh")
    if config:  # ... and refreshed before this second: git compares change times in seconds
        time.sleep(1 - time.time() % 1 + 0.01)
    return project


def tamper_tick(project: Project, steps: Sequence[Action], *, own_process: bool = False) -> Any:
    args = ("tick", "--agent-cmd", tamper_command())
    if own_process:
        return project.memento_process(*args, env=tamper_env(steps))
    return project.memento(*args, env=tamper_env(steps))


def ran(result: Any) -> None:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def failed_because(project: Project, *phrases: str) -> None:
    entry = project.entries()[-1]
    assert entry.task_id == "T-101" and entry.outcome == "failed", entry
    for phrase in phrases:
        assert phrase in (entry.error_analysis or ""), entry.error_analysis


def assert_as_committed(project: Project) -> None:
    """The check and its library as committed, no index flag left, nothing else dirty, and
    the next tick's verify catches a wrong ``src/a.py`` again."""
    for path, text in COMMITTED.items():
        assert (project.root / path).read_text(encoding="utf-8") == text, path
    assert not (project.root / "src/a.py").exists()
    tags = {line[:2] for line in project.git("ls-files", "-v").splitlines()}
    assert tags == {"H "}, project.git("ls-files", "-v")
    assert [line for line in project.dirty() if "logs/" not in line] == []
    project.script({"T-101": wrong("T-101")})
    ran(project.tick())
    failed_because(project, "verify exited with code 1: src/a.py has no A")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flag", ["skip-worktree", "assume-unchanged"])
@TARGETS
def test_a_change_behind_an_index_flag_fails_and_is_put_back(
    tmp_path: Path, flag: str, target: str
) -> None:
    project = checked_project(tmp_path)
    steps = [WRONG_A, {"flag": flag, "path": target}, {"write": target, "text": NEUTERED[target]}]

    ran(tamper_tick(project, steps))

    failed_because(project, f"the agent set {flag} on {target}")
    assert_as_committed(project)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("in_place", [False, True], ids=["new index file", "written in place"])
@TARGETS
def test_a_forged_index_entry_hides_no_change(tmp_path: Path, target: str, in_place: bool) -> None:
    """No flag at all: the index keeps the committed blob id with the new file's cached data,
    which git trusts; even ``git checkout-index -f`` would leave the file as it is."""
    project = checked_project(tmp_path)
    steps = [WRONG_A, {"forge": target, "text": NEUTERED[target], "in_place": in_place}]

    ran(tamper_tick(project, steps))

    failed_because(project, target)
    assert_as_committed(project)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flag", ["skip-worktree", "assume-unchanged"])
def test_a_flag_the_user_set_hides_no_change_to_a_guard_file(tmp_path: Path, flag: str) -> None:
    """The flag was there before the tick: memento compares the guarded file itself."""
    project = checked_project(tmp_path)
    project.git("update-index", f"--{flag}", "--", CHECK)
    steps = [WRONG_A, {"write": CHECK, "text": NEUTERED[CHECK]}]

    ran(tamper_tick(project, steps))

    failed_because(project, f"{CHECK} is a guard file of T-101")
    assert_as_committed(project)


@pytest.mark.timeout(120)
@TARGETS
def test_file_data_git_would_trust_hides_no_change(tmp_path: Path, target: str) -> None:
    """The repository's configuration compares only size and modification time, which the
    agent puts back after writing a text of the same length."""
    project = checked_project(
        tmp_path, [("core.checkStat", "minimal"), ("core.trustctime", "false")]
    )
    neutered = (NEUTERED[target].rstrip("\n") + " #").ljust(len(COMMITTED[target]) - 1, "#")
    steps = [WRONG_A, {"restat": target, "text": neutered + "\n"}]

    ran(tamper_tick(project, steps))

    failed_because(project, target)
    assert_as_committed(project)


@pytest.mark.timeout(120)
def test_sparse_checkout_hides_no_file(tmp_path: Path) -> None:
    """git removes the checks from the work tree and marks them skip-worktree."""
    project = checked_project(tmp_path)
    steps = [WRONG_A, {"sparse": ["/*", "!/tests/"]}]

    ran(tamper_tick(project, steps))

    failed_because(project, f"the agent set skip-worktree on {CHECK}")
    assert_as_committed(project)


@pytest.mark.timeout(120)
def test_a_tick_killed_by_its_agent_leaves_no_hidden_change(tmp_path: Path) -> None:
    """The tick that knew the index before the agent is gone: the next one recovers."""
    project = checked_project(tmp_path)
    hide = {"flag": "skip-worktree", "path": CHECK}
    steps = [WRONG_A, hide, {"write": CHECK, "text": NEUTERED[CHECK]}, {"kill_tick": True}]

    killed = tamper_tick(project, steps, own_process=True)

    assert killed.returncode == -9, killed
    project.script({"T-101": wrong("T-101")})
    ran(project.tick())  # recovers the dead tick, then runs T-101 again
    failed_because(project, "verify exited with code 1: src/a.py has no A")
    for path, text in COMMITTED.items():
        assert (project.root / path).read_text(encoding="utf-8") == text, path
    tags = {line[:2] for line in project.git("ls-files", "-v").splitlines()}
    assert tags == {"H "}
