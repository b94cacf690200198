"""The files memento writes can't be turned against it (issue #27, class 5), in real ticks:
``testing/agents/hostile.py`` does its task's work and meanwhile leaves a hard link, a
symbolic link, a folder or a FIFO where memento's log, lock or crash report goes. memento
never writes through any of them: the file they name keeps its bytes, and where memento
cannot do its work it stops with ``path: ...`` and the fix, never a traceback."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from memento_gh.crash import crash_message
from testing.agents import Action, hostile_command, hostile_env
from testing.ticks import Completed, Project, make_project, one_phase, plan_of

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.timeout(120)]

WORK: Action = {"write": "src/a.py", "text": "A = 1\n"}


def hostile_tick(project: Project, steps: list[Action], home: Path, **env: str) -> Completed:
    spec = hostile_env(steps, home=home, record=project.outside / "records")
    return project.memento("tick", "--agent-cmd", hostile_command(), env={**spec, **env})


def git_config(project: Project) -> bytes:
    return (project.root / ".git" / "config").read_bytes()


def refused(done: Completed, path: str, *words: str) -> None:
    """The command stopped with one clear line about ``path`` (as the repository's root
    names it): exit 1, no traceback."""
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith(f"memento: error: {path}: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


def test_a_hard_link_from_mementos_log_to_git_config_gets_no_line_appended_into_it(
    tmp_path: Path, isolated_git: Path
) -> None:
    project = make_project(tmp_path)
    before = git_config(project)
    link: Action = {"hardlink": "logs/memento.log", "to": ".git/config"}

    done = hostile_tick(project, [WORK, link], isolated_git)
    assert done.returncode == 0, done.stderr
    paused = project.memento("pause")
    skipped = project.memento("tick", "--agent-cmd", hostile_command())  # logs a line

    assert paused.returncode == 0, paused.stderr
    refused(skipped, "logs/memento.log", "hard link", "rm -r logs/memento.log")
    assert git_config(project) == before
    assert project.git("config", "--list")  # git still reads it
    assert project.marker("T-101") == "x"
    assert project.dirty() == []


def test_bookkeeping_written_through_a_planted_hard_link_replaces_the_name_not_the_file(
    tmp_path: Path, isolated_git: Path
) -> None:
    """The alert, STATE.md and the status log are written beside and renamed into place:
    a second name of .git/config planted at one is replaced, and .git/config keeps its
    bytes. (The agent's task blocks, so that the alert is written.)"""
    project = make_project(tmp_path, plan_of([one_phase()], max_retries="1"))
    before = git_config(project)
    steps: list[Action] = [
        {"write": "src/a.py", "text": "nothing = 0\n"},  # verify fails: T-101 blocks
        {"hardlink": ".memento_alert", "to": ".git/config"},
    ]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    assert project.marker("T-101") == "!"
    alert = project.root / ".memento_alert"
    assert "blocked_tasks: 1" in alert.read_text()
    assert alert.stat().st_nlink == 1
    assert git_config(project) == before


def test_a_folder_the_agent_leaves_in_place_of_the_lock_is_a_clear_error_not_a_crash(
    tmp_path: Path, isolated_git: Path
) -> None:
    """The lock is a working file (no rollback removes it): every later tick and control
    found a folder there, and crashed on it."""
    project = make_project(tmp_path)
    steps: list[Action] = [WORK, {"delete": ".memento.lock"}, {"write": ".memento.lock/x"}]

    first = hostile_tick(project, steps, isolated_git)
    assert first.returncode == 0, first.stderr
    later = [project.memento("tick", "--agent-cmd", hostile_command()), project.memento("pause")]

    for done in later:
        refused(done, ".memento.lock", "is a directory", "rm -r .memento.lock")
    assert project.marker("T-101") == "x"
    assert project.plan().settings.tick_mode == "auto"  # the pause did not run unlocked


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_fifo_or_link_in_place_of_the_lock_is_a_clear_error_and_never_opened(
    tmp_path: Path, kind: str
) -> None:
    """What a process that outlived the agent, or anyone else, may leave there; the agent
    itself gets it removed as a special file of its change (``special_files.py``)."""
    project = make_project(tmp_path)
    lock = project.root / ".memento.lock"
    if kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.symlink_to(project.root / ".git" / "config")
    before = git_config(project)

    for done in (project.tick(), project.memento("resume")):
        refused(done, ".memento.lock", "rm -r .memento.lock")
    assert git_config(project) == before
    assert project.marker("T-101") == " "


def test_a_link_planted_at_the_crash_reports_old_name_is_never_written_through(
    tmp_path: Path, isolated_git: Path
) -> None:
    """The agent links ``$TMPDIR/memento-crash.log`` (the name memento's crash report had)
    to .git/config, and the tick crashes on a figure of the agent's output (as a cost of
    1e300 did): .git/config keeps its bytes, and a report, where one is written, has a name
    of its own."""
    project = make_project(tmp_path)
    temp = tmp_path / "tmp"
    temp.mkdir()
    before = git_config(project)
    planted: list[Action] = [
        WORK,
        {"symlink": str(temp / "memento-crash.log"), "to": str(project.root / ".git/config")},
        {"print": '{"type": "result", "total_cost_usd": 1e300}'},
    ]
    spec = hostile_env(planted, home=isolated_git, record=project.outside / "records")
    argv = ("tick", "--agent-cmd", hostile_command())

    done = project.memento_process(*argv, env={**spec, "TMPDIR": str(temp)})

    assert "internal error" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert git_config(project) == before
    assert project.marker("T-101") == "x"


def test_the_crash_report_is_a_new_private_file_whatever_is_planted_in_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "config"
    target.write_text("[core]\n")
    (tmp_path / "memento-crash.log").symlink_to(target)
    os.link(target, tmp_path / "memento-crash-hard.log")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        raise RuntimeError("boom")
    except RuntimeError as error:
        first, second = crash_message(error), crash_message(error)

    assert target.read_text() == "[core]\n"
    reports = {line.split("(details: ")[1].split(")")[0] for line in (first, second)}
    assert len(reports) == 2  # a name of its own each time: none to plant a link at
    for report in map(Path, reports):
        assert report.parent == tmp_path and report.name.startswith("memento-crash-")
        found = report.lstat()
        assert stat.S_ISREG(found.st_mode) and found.st_nlink == 1
        assert stat.S_IMODE(found.st_mode) == 0o600
        assert "RuntimeError: boom" in report.read_text()
