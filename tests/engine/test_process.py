"""``run_in_group``: a command runs in its own process group, its output is kept and logged,
and nothing it started outlives it: not on exit, not on timeout, not on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from memento_gh.engine.agents.process import KEEP_HEAD, run_in_group
from memento_gh.errors import UserError
from testing.agents import scripted_argv, scripted_env
from testing.processes import alive

ROOT = Path(__file__).resolve().parents[2]


def wait_for(path: Path, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


@pytest.fixture
def prompt(tmp_path: Path) -> Path:
    path = tmp_path / "prompt.md"
    path.write_text("# Task T-1\nWrite src/a.py.\n", encoding="utf-8")
    return path


class Fake(NamedTuple):
    argv: list[str]
    env: dict[str, str]


def fake(prompt: Path, *actions: dict[str, object]) -> Fake:
    """The fake agent's command line and environment, doing ``actions``."""
    return Fake(scripted_argv(prompt, "T-1"), scripted_env(actions=list(actions)))


def test_exit_code_and_interleaved_output_are_returned_and_logged(
    tmp_path: Path, prompt: Path
) -> None:
    run = fake(prompt, {"print": "to stdout"}, {"stderr": "to stderr"}, {"exit": 3})
    log = tmp_path / "logs" / "deep" / "tick.log"

    result = run_in_group(run.argv, cwd=tmp_path, env=run.env, timeout=10, log=log)

    assert result.exit_code == 3
    assert not result.timed_out
    assert result.output == "fake agent: task T-1, 3 action(s)\nto stdout\nto stderr\n"
    assert log.read_text() == result.output
    assert 0 < result.duration < 10


def test_the_log_is_appended_to(tmp_path: Path) -> None:
    log = tmp_path / "tick.log"
    log.write_text("agent said:\n")

    run_in_group(["echo", "verify said"], cwd=tmp_path, env=None, timeout=10, log=log)

    assert log.read_text() == "agent said:\nverify said\n"


def test_stdin_is_the_given_file(tmp_path: Path, prompt: Path) -> None:
    saved = tmp_path / "stdin.txt"
    run = fake(prompt, {"save_stdin": str(saved)})

    run_in_group(run.argv, cwd=tmp_path, env=run.env, timeout=10, stdin=prompt)

    assert saved.read_text() == prompt.read_text()


def test_without_a_stdin_file_the_process_reads_dev_null_not_a_terminal(tmp_path: Path) -> None:
    result = run_in_group(
        ["sh", "-c", "readlink /proc/self/fd/0; cat; echo end"],
        cwd=tmp_path,
        env=None,
        timeout=5,
    )

    assert result.output == "/dev/null\nend\n"
    assert result.exit_code == 0


def test_a_shell_line_runs_in_the_given_folder_with_the_given_environment(tmp_path: Path) -> None:
    result = run_in_group(
        'pwd && echo "$GREETING" | tr a-z A-Z',
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "GREETING": "hello"},
        timeout=5,
        shell=True,
    )

    assert result.output == f"{tmp_path}\nHELLO\n"


def test_the_timeout_kills_the_command_and_the_grandchild_it_left_in_its_group(
    tmp_path: Path, prompt: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    run = fake(prompt, {"print": "working"}, {"spawn_sleeper": str(pidfile)}, {"sleep": 600})

    started = time.monotonic()
    result = run_in_group(run.argv, cwd=tmp_path, env=run.env, timeout=1, grace=30)
    elapsed = time.monotonic() - started

    assert result.timed_out
    assert result.exit_code is None
    # Generous upper bounds, for a busy machine: what they tell apart is 30 s away.
    assert 1 <= result.duration < 15
    assert elapsed < 20  # SIGTERM was enough: SIGKILL would have come after 1 + 30 s
    assert "working" in result.output
    assert not alive(int(pidfile.read_text()))


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_period(
    tmp_path: Path, prompt: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    run = fake(prompt, {"ignore_sigterm": True}, {"spawn_sleeper": str(pidfile)}, {"sleep": 600})

    started = time.monotonic()
    result = run_in_group(run.argv, cwd=tmp_path, env=run.env, timeout=0.5, grace=1)
    elapsed = time.monotonic() - started

    assert result.timed_out
    assert 1.5 <= elapsed < 30  # the grace period, then SIGKILL; a busy machine may be slow
    assert not alive(int(pidfile.read_text()))


def test_a_background_process_left_behind_by_a_finished_command_is_killed(
    tmp_path: Path, prompt: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    run = fake(prompt, {"spawn_sleeper": str(pidfile)}, {"print": "done"})

    started = time.monotonic()
    result = run_in_group(run.argv, cwd=tmp_path, env=run.env, timeout=30, grace=1)

    # The sleeper holds the output pipe open; the run still ends when the command does (and
    # not at the timeout, 30 s: the bound leaves a busy machine room).
    assert time.monotonic() - started < 20
    assert result.exit_code == 0
    assert not result.timed_out
    assert result.output.endswith("done\n")
    assert not alive(int(pidfile.read_text()))


def test_ctrl_c_in_the_caller_kills_the_whole_group(tmp_path: Path, prompt: Path) -> None:
    child_pidfile = tmp_path / "child.pid"
    grandchild_pidfile = tmp_path / "grandchild.pid"
    env = scripted_env(
        actions=[
            {"write_pid": str(child_pidfile)},
            {"spawn_sleeper": str(grandchild_pidfile)},
            {"sleep": 600},
        ]
    )
    caller = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from memento_gh.engine.agents.process import run_in_group
        argv = {scripted_argv(prompt, "T-1")!r}
        try:
            run_in_group(argv, cwd=Path({str(tmp_path)!r}), env=os.environ, timeout=600, grace=1)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
        """
    )
    # The caller is a process of its own, so that its Ctrl-C cannot reach pytest.
    with subprocess.Popen(
        [sys.executable, "-c", caller],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    ) as memento:
        wait_for(grandchild_pidfile)
        child = int(child_pidfile.read_text())
        grandchild = int(grandchild_pidfile.read_text())
        assert alive(child)
        assert alive(grandchild)

        memento.send_signal(signal.SIGINT)
        output, _ = memento.communicate(timeout=10)

    assert memento.returncode == 130
    assert output == "interrupted\n"
    assert not alive(child)
    assert not alive(grandchild)


def test_output_kept_in_memory_is_capped_but_the_log_has_everything(tmp_path: Path) -> None:
    lines = [f"line {number:06d} " + "x" * 90 for number in range(3000)]  # about 300 KB
    source = tmp_path / "big.txt"
    source.write_text("\n".join(lines) + "\n")
    log = tmp_path / "tick.log"

    result = run_in_group(
        ["cat", str(source)], cwd=tmp_path, env=None, timeout=10, log=log, keep=10_000
    )

    assert log.read_text() == source.read_text()
    assert len(result.output) < KEEP_HEAD + 10_000 + 200
    assert result.output.startswith("line 000000 ")
    assert result.output.endswith(lines[-1] + "\n")
    assert "bytes omitted; the log has all of them" in result.output


def test_a_program_that_does_not_exist_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"cannot start .no-such-agent-xyz.*on PATH"):
        run_in_group(["no-such-agent-xyz", "--help"], cwd=tmp_path, env=None, timeout=5)


def test_a_missing_working_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"in .*gone: No such file"):
        run_in_group(["true"], cwd=tmp_path / "gone", env=None, timeout=5)


def test_a_signal_from_elsewhere_is_reported_as_a_negative_exit_code(tmp_path: Path) -> None:
    result = run_in_group(["sh", "-c", "kill -9 $$"], cwd=tmp_path, env=None, timeout=5)

    assert result.exit_code == -9
    assert not result.timed_out
