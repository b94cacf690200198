"""``run_verify``: the task's verify line runs in a shell in the repository; its exit code
decides, its first lines explain, and a timeout stops it and everything it started."""

from __future__ import annotations

import os
import time
from pathlib import Path

from memento_gh.engine.agents.verify import output_head, run_verify
from testing.processes import alive

ENV = {"PATH": os.environ["PATH"]}


def test_a_passing_command_passes(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("A = 1\n")

    result = run_verify(
        'test -f src/a.py && grep -q "A = 1" src/a.py && echo PASS',
        cwd=tmp_path,
        env=ENV,
        timeout=10,
    )

    assert result.passed
    assert result.exit_code == 0
    assert not result.timed_out
    assert result.head == "PASS"


def test_a_failing_command_reports_its_code_and_first_meaningful_lines(tmp_path: Path) -> None:
    script = (
        r"printf '\n   \n  FAILED tests/test_a.py::test_one  \n"
        r"\033[31mAssertionError: 1 != 2\033[0m\n\nline 3\nline 4\nline 5\nline 6\n"
        r"line 7\nline 8\nline 9\n' >&2;"
        " exit 4"
    )

    result = run_verify(script, cwd=tmp_path, env=ENV, timeout=10)

    assert not result.passed
    assert result.exit_code == 4
    assert result.head == (  # eight lines, their indentation kept
        "  FAILED tests/test_a.py::test_one\nAssertionError: 1 != 2\n"
        "line 3\nline 4\nline 5\nline 6\nline 7\nline 8"
    )
    assert "line 9" in result.output


def test_head_lines_are_cut_to_300_characters() -> None:
    head = output_head("x" * 1000 + "\nshort\n")

    first, second = head.split("\n")
    assert len(first) == 300
    assert first.endswith("…")
    assert second == "short"


def test_a_command_without_output_has_an_empty_head(tmp_path: Path) -> None:
    result = run_verify("false", cwd=tmp_path, env=ENV, timeout=10)

    assert result.exit_code == 1
    assert result.head == ""


def test_the_timeout_stops_the_command_and_its_background_jobs(tmp_path: Path) -> None:
    pidfile = tmp_path / "server.pid"
    command = f"echo starting; sleep 600 & echo $! > {pidfile}; sleep 600"

    started = time.monotonic()
    result = run_verify(command, cwd=tmp_path, env=ENV, timeout=1, grace=1)

    assert time.monotonic() - started < 30  # the sleeps take 600 s: room for a busy machine
    assert result.timed_out
    assert result.exit_code is None
    assert not result.passed
    assert result.head == "starting"
    assert not alive(int(pidfile.read_text()))


def test_verify_output_goes_to_the_tick_log_after_the_agent_output(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "tick.log"
    log.parent.mkdir()
    log.write_text("agent output\n")

    run_verify("echo verify output", cwd=tmp_path, env=ENV, timeout=10, log=log)

    assert log.read_text() == "agent output\nverify output\n"
