"""``call_memento`` runs a command line in this process as ``run_memento`` runs it in a
process of its own: the same exit code, stdout and stderr, and afterwards the process as it
was (folder, environment, SIGTERM handler, garbage collector)."""

from __future__ import annotations

import gc
import os
import signal
from pathlib import Path

import pytest

from testing.cli import call_memento, run_memento
from testing.ticks import good, make_project

COMMAND_LINES = [
    ("--version",),
    ("--help",),
    (),  # no command: the help on stderr, exit 2
    ("frobnicate",),  # argparse's usage error: SystemExit(2)
    ("status", "--jsn"),
    ("validate",),  # no plan: exit 1
    ("init", "--workers", "0"),
    ("-C", "repo", "status"),
    ("-C", "repo", "next", "--json"),
    ("-C", "repo", "validate"),
    ("-C", "repo", "retry", "T-999"),  # a user error: exit 1
]


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=" ".join)
def test_the_same_command_line_gives_the_same_result(tmp_path: Path, argv: tuple[str, ...]) -> None:
    make_project(tmp_path / "here")
    make_project(tmp_path / "there")
    folders = {"here": tmp_path / "here", "there": tmp_path / "there"}

    called = call_memento(*argv, cwd=folders["here"])
    ran = run_memento(*argv, cwd=folders["there"])

    assert (called.returncode, called.stdout, called.stderr) == (
        ran.returncode,
        ran.stdout,
        ran.stderr,
    )


def test_a_tick_in_this_process_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": good("T-101")})
    folder, environ = Path.cwd(), dict(os.environ)
    handler = signal.getsignal(signal.SIGTERM)
    assert gc.isenabled()

    done = project.tick(env={"MEMENTO_TEST_ONLY": "1"})

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "tick: ran — T-101 success", done.stdout
    assert project.marker("T-101") == "x"
    assert (Path.cwd(), dict(os.environ)) == (folder, environ)
    assert signal.getsignal(signal.SIGTERM) is handler
    assert gc.isenabled()


def test_what_only_a_process_of_its_own_can_do_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)

    with pytest.raises(ValueError, match="MEMENTO_CRASH_AT need memento in a process"):
        project.tick(env={"MEMENTO_CRASH_AT": "claimed"})
    with pytest.raises(ValueError, match="PYTHONPATH need memento in a process"):
        call_memento("status", cwd=project.root, env={"PYTHONPATH": str(tmp_path)})
