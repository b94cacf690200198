"""The command line's conventions, through the real ``memento`` command.

Exit codes: 0 done, 1 the user's files or setup need a fix (``memento: error: ...``),
2 the command line itself is wrong (argparse's usage errors, and no command at all),
3 a bug in memento (one line on stderr, the traceback in a crash log), 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

import pytest

import memento_gh
from memento_gh import cli
from memento_gh.cli import build_parser, main
from memento_gh.crash import crash_message
from memento_gh.lock import repo_lock
from testing.cli import call_memento, run_memento
from testing.plans import large_plan, phase_block, plan_text, task_block

ANSI = re.compile(r"\033\[[0-9;]*m")


def subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


def write_plan(root: Path, text: str) -> Path:
    path = root / "docs" / "MASTER_PLAN.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def unusual_plan() -> str:
    """A valid plan with a nested list, which makes the validator ask mistune for a second
    reading (the only path that imports mistune)."""
    note = "Background:\n\n- first\n  - nested detail\n"
    return plan_text([phase_block(1, "Base", [note, task_block("T-1")])])


def test_the_known_commands_are_listed() -> None:
    assert {"init", "validate", "status", "next"} <= set(subcommands())


def test_help_shows_usage_and_every_command() -> None:
    done = run_memento("--help")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: memento ")
    for name in subcommands():
        assert re.search(rf"^\s+{name}\s", done.stdout, re.MULTILINE), name


@pytest.mark.parametrize("command", subcommands())
def test_every_command_has_help(command: str) -> None:
    done = run_memento(command, "--help")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"usage: memento {command}")


def test_version_is_the_package_version() -> None:
    done = run_memento("--version")

    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"memento {memento_gh.__version__}\n",
        "",
    )
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", memento_gh.__version__)


def test_python_dash_m_and_the_console_script_are_the_same_program() -> None:
    module = subprocess.run(
        [sys.executable, "-m", "memento_gh", "--version"],
        check=False,
        capture_output=True,
        text=True,
    )
    script = Path(sys.executable).with_name("memento")
    installed = subprocess.run([script, "--version"], check=False, capture_output=True, text=True)

    assert module.returncode == installed.returncode == 0
    assert module.stdout == installed.stdout == f"memento {memento_gh.__version__}\n"


def test_no_command_prints_the_help_and_exits_2(tmp_path: Path) -> None:
    done = run_memento(cwd=tmp_path)

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("usage: memento ")
    assert "status" in done.stderr
    assert "Traceback" not in done.stderr


def test_no_command_in_process_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("usage: memento ")


def test_an_unknown_command_is_a_usage_error() -> None:
    done = run_memento("frobnicate")

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("usage: memento ")
    assert "memento: error: argument COMMAND: invalid choice: 'frobnicate'" in done.stderr


def test_an_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    done = run_memento("status", "--jsn", cwd=tmp_path)

    assert done.returncode == 2
    assert "unrecognized arguments: --jsn" in done.stderr


def test_a_user_error_is_one_line_and_exit_1(tmp_path: Path) -> None:
    done = run_memento("validate", cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("memento: error: ")
    assert len(done.stderr.splitlines()) == 1


def test_a_plan_folder_name_too_long_for_the_file_system_is_a_user_error(tmp_path: Path) -> None:
    done = run_memento("--plan-dir", "d" * 300, "status", cwd=tmp_path)

    assert done.returncode == 1
    assert done.stderr.startswith("memento: error: ")
    assert "internal error" not in done.stderr


def test_an_internal_error_is_exit_3_with_a_crash_log(tmp_path: Path) -> None:
    """A broken environment: an old, incompatible mistune (the 0.8 API) shadows the declared
    one. Nothing the user can fix in their plan; memento must not dump a traceback."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "mistune.py").write_text(
        '__version__ = "0.8.4"\n\n\ndef markdown(text):\n    return text\n', encoding="utf-8"
    )
    repo = tmp_path / "repo"
    write_plan(repo, unusual_plan())
    logs = tmp_path / "tmp"
    logs.mkdir()

    done = run_memento("status", cwd=repo, env={"PYTHONPATH": str(shadow), "TMPDIR": str(logs)})

    assert (done.returncode, done.stdout) == (3, "")
    [log] = logs.glob("memento-crash-*.log")  # a name of its own (issue #27)
    assert done.stderr.splitlines() == [
        "memento: internal error: AttributeError: module 'mistune' has no attribute "
        f"'create_markdown' (details: {log})",
        "This is a bug in memento; please report it with that file.",
    ]
    report = log.read_text(encoding="utf-8")
    assert report.startswith(f"memento {memento_gh.__version__}\nargv: ")
    assert "Traceback (most recent call last)" in report
    assert "crosscheck.py" in report
    assert "AttributeError: module 'mistune' has no attribute 'create_markdown'" in report


def test_the_same_plan_works_with_the_real_mistune(tmp_path: Path) -> None:
    """The control for the test above: only the shadowing breaks it."""
    write_plan(tmp_path, unusual_plan())

    done = run_memento("status", cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")


def test_crash_message_without_a_writable_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the temporary folder is gone: no report can be written
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "gone"))
    try:
        {}["missing"]
    except KeyError as error:
        message = crash_message(error)

    assert message.splitlines() == [
        "memento: internal error: KeyError: 'missing'",
        "This is a bug in memento; please report it with the command you ran.",
    ]


def test_crash_message_keeps_to_one_line_per_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    try:
        raise ValueError("first line\nsecond line")
    except ValueError as error:
        message = crash_message(error)

    [log] = tmp_path.glob("memento-crash-*.log")
    assert message.splitlines()[0] == (
        f"memento: internal error: ValueError: first line second line (details: {log})"
    )
    assert "first line\nsecond line" in log.read_text("utf-8")


@pytest.mark.timeout(120)
def test_ctrl_c_is_exit_130_without_a_traceback(tmp_path: Path) -> None:
    """memento waits for the repository lock the test holds, so the interrupt is sure to
    arrive while a command runs. (The plan used to be a FIFO that memento blocked reading;
    memento opens no FIFO any more.)"""
    write_plan(tmp_path, plan_text([phase_block(1, "Base", [task_block("T-1")])]))
    lock = tmp_path / ".memento.lock"
    with repo_lock(lock):
        process = subprocess.Popen(
            [sys.executable, "-m", "memento_gh", "note", "--task", "T-1", "--wait", "60", "hi"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until_open(process.pid, lock)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=60)
        finally:
            process.kill()

    assert (process.returncode, out, err) == (130, "", "memento: interrupted\n")


def wait_until_open(pid: int, path: Path, timeout: float = 60) -> None:
    """Until process ``pid`` has ``path`` open (read from /proc/<pid>/fd)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with suppress(OSError):
            folder = Path(f"/proc/{pid}/fd")
            if any(entry.readlink() == path for entry in folder.iterdir()):
                return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} never opened {path}")


def bad_plan(root: Path) -> None:
    write_plan(
        root,
        plan_text([phase_block(1, "Base", [task_block("T-1", fields={"context_files": "[a]"})])]),
    )


def test_force_color_colours_validate_output(tmp_path: Path) -> None:
    bad_plan(tmp_path)

    done = run_memento("validate", cwd=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": "1"})

    assert done.returncode == 1
    assert "\033[31;1merror\033[0m" in done.stdout
    assert ANSI.sub("", done.stdout).count(": error: ") == 1


def test_no_color_wins_over_force_color(tmp_path: Path) -> None:
    """no-color.org: a set, non-empty NO_COLOR turns colour off whatever else says."""
    bad_plan(tmp_path)

    done = run_memento("validate", cwd=tmp_path, env={"NO_COLOR": "1", "FORCE_COLOR": "1"})

    assert done.returncode == 1
    assert ": error: " in done.stdout
    assert "\033[" not in done.stdout + done.stderr


def test_a_pipe_gets_no_colour_by_default(tmp_path: Path) -> None:
    bad_plan(tmp_path)

    done = run_memento("validate", cwd=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": ""})

    assert done.returncode == 1
    assert ": error: " in done.stdout
    assert "\033[" not in done.stdout + done.stderr


def test_force_color_colours_status(tmp_path: Path) -> None:
    write_plan(tmp_path, plan_text([phase_block(1, "Base", [task_block("T-1")])]))

    plain = run_memento("status", cwd=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": ""})
    colour = run_memento("status", cwd=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": "1"})

    assert "\033[1m" in colour.stdout
    assert ANSI.sub("", colour.stdout) == plain.stdout


def test_json_is_never_coloured(tmp_path: Path) -> None:
    write_plan(tmp_path, plan_text([phase_block(1, "Base", [task_block("T-1")])]))

    done = run_memento("status", "--json", cwd=tmp_path, env={"NO_COLOR": "", "FORCE_COLOR": "1"})

    assert "\033[" not in done.stdout


def shell_pipe(command: str, cwd: Path, reader: str = "head -1") -> tuple[str, str, int]:
    """Run ``memento <command> | <reader>`` in a real shell: the reader's output, memento's
    stderr and memento's exit status. Python's stdout is block-buffered, as for a user
    (PYTHONUNBUFFERED, which CI systems like to set, would hide the final flush)."""
    memento = f"{sys.executable} -m memento_gh {command}"
    script = f'{memento} 2>memento.err | {reader}; echo "memento=${{PIPESTATUS[0]}}" >&2'
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**environ, "NO_COLOR": "1", "TMPDIR": str(cwd)},
        timeout=120,
        check=False,
    )
    status = int(done.stderr.strip().rpartition("memento=")[2])
    return done.stdout, (cwd / "memento.err").read_text(encoding="utf-8"), status


def test_status_into_head(tmp_path: Path) -> None:
    write_plan(tmp_path, plan_text([phase_block(1, "Base", [task_block("T-1")])]))

    out, err, status = shell_pipe("status", tmp_path)

    assert (out, err, status) == ("MASTER_PLAN: Demo\n", "", 0)


def test_a_reader_that_stops_early_breaks_the_pipe_quietly(tmp_path: Path) -> None:
    """Far more output than a pipe holds: memento is still writing when head exits."""
    write_plan(tmp_path, large_plan(2000))

    out, err, status = shell_pipe("status --json", tmp_path)

    assert out == "{\n"
    assert err == ""
    assert status == 1


@pytest.mark.parametrize("command", ["status", "status --json", "next", "--help"])
def test_a_reader_that_reads_nothing_breaks_the_pipe_quietly(tmp_path: Path, command: str) -> None:
    """``true`` exits before memento writes: the write that fails is the last flush of
    stdout, which happens after the command returned."""
    write_plan(tmp_path, plan_text([phase_block(1, "Base", [task_block("T-1")])]))

    out, err, status = shell_pipe(command, tmp_path, reader="true")

    assert (out, err) == ("", "")
    assert status in (0, 1)


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["tick", "--agent-cmd", "true"], "tick"),
        (["-C", "repo", "--plan-dir", "plans", "status", "--json"], "status"),
        (["-Crepo", "--plan-dir=plans", "next"], "next"),
        (["--plan-dir", "tick", "validate"], "validate"),  # an option's value is no command
        (["--help"], None),
        (["--version"], None),
        (["--plan", "docs", "tick"], None),  # argparse's abbreviation: the full parser decides
        (["nope"], None),
        ([], None),
    ],
)
def test_only_the_named_commands_parser_is_built(argv: list[str], command: str | None) -> None:
    assert cli.chosen_command(argv) == command


def test_a_parser_built_for_one_command_parses_it_as_the_full_one_does() -> None:
    argv = ["-C", "repo", "tick", "--agent-cmd", "true", "--max-tasks", "2"]
    assert cli.build_parser("tick").parse_args(argv) == cli.build_parser().parse_args(argv)


# -- every command's help, and a folder that is not there ------------------------------------


def every_parser(
    parser: argparse.ArgumentParser | None = None, words: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    """The words that name each command and each action under one (``schedule install``),
    walking the parsers as ``memento`` builds them."""
    found: list[tuple[str, ...]] = []
    for action in (parser or build_parser())._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*words, name))
                found += every_parser(sub, (*words, name))
    return found


def description_of(help_text: str) -> str:
    """The paragraph argparse prints between the usage and the first list of options."""
    paragraphs = help_text.split("\n\n")
    if len(paragraphs) < 2 or paragraphs[1].rstrip().endswith(":"):
        return ""
    first_line = paragraphs[1].splitlines()[0]
    return "" if first_line.endswith(":") else paragraphs[1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("words", every_parser(), ids=" ".join)
def test_every_command_describes_itself_in_a_sentence(words: tuple[str, ...]) -> None:
    done = call_memento(*words, "--help")

    assert (done.returncode, done.stderr) == (0, "")
    description = description_of(done.stdout)
    assert description, f"`memento {' '.join(words)} --help` has no description"
    assert description[0].isupper(), description
    assert description.rstrip().endswith("."), description


@pytest.mark.timeout(60)
def test_help_says_what_the_command_agent_needs_and_where_validate_looks() -> None:
    tick = call_memento("tick", "--help").stdout
    validate = call_memento("validate", "--help").stdout
    show = call_memento("schedule", "show", "--help").stdout

    assert "command (with --agent-cmd)" in " ".join(tick.split())
    assert "docs/memory/" in validate
    assert "to edit" not in show
    assert "a crontab file to read" in " ".join(show.split())


#: The fewest words each command needs past its name, so that it gets to its folder.
MINIMAL_ARGS: dict[str, list[str]] = {
    "init": [],
    "validate": [],
    "status": [],
    "next": [],
    "tick": ["--agent-cmd", "true"],
    "run": ["--every", "1s", "--agent-cmd", "true"],
    "schedule": ["show"],
    "pause": [],
    "resume": [],
    "stop": [],
    "retry": ["T-101"],
    "skip": ["T-101"],
    "note": ["--global", "hello"],
    "demo": [],
    "memory": [],
    "learn": ["decision", "db", "Postgres", "--evidence", "README.md"],
    "dashboard": ["--port", "0"],
    "github": [],
    "hook": ["install"],
    "plan": ["revise", "--agent-cmd", "true"],
}


def test_the_table_of_minimal_arguments_names_every_command() -> None:
    assert sorted(MINIMAL_ARGS) == subcommands()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", sorted(MINIMAL_ARGS))
def test_a_folder_that_does_not_exist_is_named_for_every_command(
    tmp_path: Path, command: str
) -> None:
    missing = tmp_path / "nonexistent"

    done = call_memento("-C", missing, command, *MINIMAL_ARGS[command], cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"memento: error: -C {missing}: the folder does not exist; "
        "give -C the folder of your repository\n"
    )
    assert not missing.exists()


@pytest.mark.timeout(60)
def test_a_file_given_to_dash_c_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text("# not a folder\n", encoding="utf-8")

    done = call_memento("-C", "plan.md", "status", cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "memento: error: -C plan.md: not a folder; give -C the folder of your repository\n"
    )
