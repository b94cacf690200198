"""``memento demo``: the real command, run in a subprocess, builds the sample project to the end.

One run (module fixture) is read by most tests: its exit code and output, and what it left
in the project's folder — the plan, the tick log, the notes and git's history. That run has
no network at all where ``unshare -rn`` works (a user + network namespace with no interface
up), and a fresh HOME without any git identity, as on a new machine. Where ``unshare`` is not
allowed, the run uses the machine's network; the demo opens no socket either way (the test
sandbox this was written in lets only package registries answer).
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import NamedTuple

import pytest

from memento_gh.checks import check_plan_text
from memento_gh.demo import agent, project
from memento_gh.formats.notes import parse_notes
from memento_gh.formats.status_log import Event, ParsedEntry, parse_status
from memento_gh.plan.model import DONE
from memento_gh.plan.scanner import parse
from testing.wheel import install_from_wheel

REPO = Path(__file__).resolve().parent.parent
TASKS = ("T-101", "T-102", "T-103", "T-201", "T-202", "T-203")


class Run(NamedTuple):
    folder: Path
    code: int
    out: str
    err: str
    offline: bool


def offline_prefix() -> list[str]:
    """``unshare -rn`` when this machine lets an unprivileged user make a network namespace."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    done = subprocess.run([unshare, "-rn", "true"], capture_output=True, check=False)
    return [unshare, "-rn"] if done.returncode == 0 else []


def base_env() -> dict[str, str]:
    """This environment without git, colour or memento settings (a git hook running pytest
    sets GIT_INDEX_FILE, for one)."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("GIT_", "MEMENTO_")) and name != "FORCE_COLOR"
    }


def clean_env(home: Path) -> dict[str, str]:
    """:func:`base_env` with a new, empty HOME: no git identity, as on a new machine."""
    env = base_env()
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1", NO_COLOR="1"
    )
    return env


def memento(
    *args: str, cwd: Path, env: dict[str, str], prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "memento_gh", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=folder,
        env=base_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Run:
    base = tmp_path_factory.mktemp("demo")
    folder = base / "calc demo"  # a space in the path: every command line must quote it
    prefix = offline_prefix()
    done = memento("demo", str(folder), cwd=base, env=clean_env(base / "home"), prefix=prefix)
    return Run(folder, done.returncode, done.stdout, done.stderr, bool(prefix))


def entries(folder: Path) -> list[ParsedEntry]:
    text = (folder / "docs" / "TICK_STATUS.md").read_text(encoding="utf-8")
    return [record for record in parse_status(text) if isinstance(record, ParsedEntry)]


def outcomes_by_task(folder: Path) -> dict[str, list[str | None]]:
    found: dict[str, list[str | None]] = {}
    for entry in entries(folder):
        assert entry.task_id is not None
        found.setdefault(entry.task_id, []).append(entry.outcome)
    return found


# -- the run ------------------------------------------------------------------------------


def test_the_demo_exits_0_with_every_task_done_and_a_valid_plan(demo: Run) -> None:
    assert demo.code == 0, demo.out + demo.err
    assert demo.err == ""
    plan = parse((demo.folder / "docs" / "MASTER_PLAN.md").read_text(encoding="utf-8"))
    assert [(task.id, task.marker) for task in plan.tasks] == [(id_, DONE) for id_ in TASKS]
    assert plan.settings.completed_tasks == 6
    assert plan.settings.total_ticks == 10

    validate = memento("validate", cwd=demo.folder, env=clean_env(demo.folder.parent / "h2"))
    assert (validate.returncode, validate.stdout, validate.stderr) == (0, "", "")


def test_the_tick_log_tells_the_whole_story(demo: Run) -> None:
    assert outcomes_by_task(demo.folder) == {
        "T-101": ["success"],
        "T-102": ["failed", "success"],
        "T-103": ["failed", "success"],
        "T-201": ["failed", "blocked", "success"],
        "T-202": ["success"],
        "T-203": ["success"],
    }
    first = {}
    for entry in entries(demo.folder):
        first.setdefault(entry.task_id, entry)
    assert first["T-102"].exit_code == 1
    assert "subtract(5, 3)" in (first["T-102"].verify_head or "")
    # T-103's first attempt broke a guard: rolled back, and its verify never ran.
    guard = first["T-103"]
    assert "tests/test_multiply.py" in guard.fields["Guard Violations"]
    assert "guard file" in guard.fields["Guard Violations"]
    assert guard.fields["Files Modified"] == "(rolled back)"
    assert guard.exit_code is None
    blocked = [entry for entry in entries(demo.folder) if entry.outcome == "blocked"]
    assert [entry.task_id for entry in blocked] == ["T-201"]
    assert blocked[0].escalation
    # The worker asked for a note and changed nothing: no verify could prove that done.
    assert "the agent changed nothing" in (blocked[0].error_analysis or "")
    assert blocked[0].exit_code is None


def test_all_tasks_complete_is_written_once_at_the_end(demo: Run) -> None:
    text = (demo.folder / "docs" / "TICK_STATUS.md").read_text(encoding="utf-8")
    records = parse_status(text)
    events = [record.text for record in records if isinstance(record, Event)]
    assert events == ["🎉 ALL TASKS COMPLETE"]
    assert isinstance(records[-1], Event)
    assert text.count("ALL TASKS COMPLETE") == 1


def test_the_human_note_reached_t201_and_is_marked_read(demo: Run) -> None:
    notes = parse_notes((demo.folder / "docs" / "HUMAN_NOTES.md").read_text(encoding="utf-8"))
    assert [(note.target, note.read) for note in notes.notes] == [("T-201", True)]
    assert notes.notes[0].text == project.HUMAN_NOTE
    assert "### [NOTE:READ]" in (demo.folder / "docs" / "HUMAN_NOTES.md").read_text("utf-8")


def test_git_history_has_a_commit_per_run_and_control_with_trailers(demo: Run) -> None:
    log = git(demo.folder, "log", "--reverse", "--format=%s%n%b%x1e")
    commits = [block.strip("\n") for block in log.split("\x1e") if block.strip()]
    steps = []
    for commit in commits[1:]:
        subject, *body = commit.split("\n")
        trailers = dict(line.split(": ", 1) for line in body if re.match(r"Memento-\w+: ", line))
        if "Memento-Control" in trailers:
            steps.append((trailers["Memento-Control"], subject.rsplit(" ", 1)[-1]))
        elif "Memento-Task" in trailers:
            kind = re.match(r"memento: (complete|\S+ (failed|blocked))", subject)
            assert kind is not None, subject
            steps.append((trailers["Memento-Task"], kind.group(2) or kind.group(1)))
            assert trailers["Memento-Tick"].isdigit()
        else:
            steps.append(("event", subject))
    assert commits[0].startswith("Start calc")
    assert steps == [
        ("T-101", "complete"),
        ("T-102", "failed"),
        ("T-102", "complete"),
        ("T-103", "failed"),
        ("T-103", "complete"),
        ("T-201", "failed"),
        ("T-201", "blocked"),
        ("note", "T-201"),
        ("retry", "T-201"),
        ("T-201", "complete"),
        ("T-202", "complete"),
        ("T-203", "complete"),  # its commit says 🎉 ALL TASKS COMPLETE too
    ]
    assert git(demo.folder, "status", "--porcelain") == ""


def test_the_built_project_works(demo: Run) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "calc", "multiply", "4", "3"],
        cwd=demo.folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "12\n")
    core = (demo.folder / "calc" / "core.py").read_text(encoding="utf-8")
    assert "return a - b" in core
    assert "return a + b" in core  # add's; the buggy subtract of the first attempt is gone
    assert core.count("def subtract") == 1
    test = (demo.folder / "tests" / "test_multiply.py").read_text(encoding="utf-8")
    assert test == project.scaffold(sys.executable, date.today())["tests/test_multiply.py"]


def test_the_output_shows_each_step_as_it_happens(demo: Run) -> None:
    out = demo.out
    steps = [
        "Tick #001: T-101",
        "  success: verify passed",
        "Tick #002: T-102",
        "  failed: verify exited with code 1: test_subtract",
        "T-102 is [ ] again with retries: 1",
        "Tick #004: T-103",
        "tests/test_multiply.py is a guard file of T-103",
        "worker: added multiply(a, b) and tidied tests/test_multiply.py",
        "Tick #007: T-201",
        "  blocked: the agent changed nothing",
        "T-201 is [!] after 2 attempts",
        "$ memento note --task T-201 ",
        "note for T-201 added (committed ",
        "$ memento retry T-201",
        "retry T-201 (committed ",
        "Tick #008: T-201",
        "worker: the note names the entry function run()",
        "Tick #010: T-203",
        "🎉 ALL TASKS COMPLETE",
        "$ memento status",
        "6/6 done (100%)",
        "The plan is complete: 6/6 tasks in 10 ticks.",
        f"The project is in {shlex.quote(str(demo.folder))}, with 13 commits.",
    ]
    at = 0
    for step in steps:
        found = out.find(step, at)
        assert found >= 0, f"{step!r} missing after position {at} of:\n{out}"
        at = found + len(step)
    assert "Traceback" not in out


def test_the_run_had_no_network(demo: Run) -> None:
    """The namespace the demo ran in really has no network: a connection fails there."""
    prefix = offline_prefix()
    if not demo.offline or not prefix:
        pytest.skip("unshare -rn is not allowed here; the demo ran with the machine's network")
    probe = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=5)\n"
        "except OSError as error:\n"
        "    print(error.errno)\n"
    )
    done = subprocess.run(
        [*prefix, sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(errno.ENETUNREACH)  # no route: no interface is up
    assert demo.code == 0


# -- refusing a folder in use -------------------------------------------------------------


def test_a_non_empty_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me\n", encoding="utf-8")

    done = memento("demo", "mine", cwd=tmp_path, env=clean_env(tmp_path / "home"))

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "memento: error: mine is not empty; give `memento demo` a new or empty folder "
        "(or none: it then makes a temporary one)\n"
    )
    assert [path.name for path in folder.iterdir()] == ["notes.txt"]


def test_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("", encoding="utf-8")

    done = memento("demo", "taken", cwd=tmp_path, env=clean_env(tmp_path / "home"))

    assert done.returncode == 1
    assert "taken is a file; give `memento demo` a new or empty folder" in done.stderr


def test_without_a_folder_it_makes_a_temporary_one(tmp_path: Path) -> None:
    env = clean_env(tmp_path / "home")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env["TMPDIR"] = str(temp)

    done = memento("demo", cwd=tmp_path, env=env)

    assert done.returncode == 0, done.stdout + done.stderr
    [made] = temp.iterdir()
    assert made.name.startswith("memento-demo-")
    assert f"Project: {made}" in done.stdout
    assert (made / ".git").is_dir()


# -- the parts --------------------------------------------------------------------------


def test_the_sample_plan_validates_without_a_problem() -> None:
    files = project.scaffold("/opt/my python/bin/python3", date(2025, 1, 15))
    plan, problems = check_plan_text(files["docs/MASTER_PLAN.md"], files["docs/PROJECT_MAP.md"])

    assert problems == []
    assert [task.id for task in plan.tasks] == list(TASKS)
    assert plan.settings.max_retries == 2
    task = plan.task("T-101")
    assert task is not None
    assert task.verify is not None
    assert shlex.split(task.verify) == [
        "/opt/my python/bin/python3",
        "-B",
        "tests/check.py",
        "tests.test_add",
    ]


def test_the_sample_project_names_no_file_of_this_repository() -> None:
    """Self-contained: nothing in the scaffold points into memento's checkout or testing/."""
    for path, text in project.scaffold(sys.executable, date(2025, 1, 15)).items():
        assert str(REPO) not in text.replace(sys.executable, ""), path
        assert "testing" not in text, path


def write_prompt(folder: Path, retries: int, notes: str = "") -> Path:
    prompt = folder / "prompt.md"
    notes_section = notes or "No unread notes for this task."
    prompt.write_text(
        "# worker\n\n## Your task\n\nDo this one task, T-201.\n\n```markdown\n"
        "- [~] `T-201` [MODULE:cli] Add calc/cli.py\n"
        f"  - retries: {retries}\n```\n\n"
        f"## Notes from humans\n\n{notes_section}\n\n## Files\n\nNone.\n",
        encoding="utf-8",
    )
    return prompt


def test_the_worker_reads_the_attempt_and_the_notes_from_the_prompt(tmp_path: Path) -> None:
    note = "### Note of 2025-01-15T15:00:00Z for T-201\n\n> Name the entry\n> function `go`."
    read = agent.Prompt(write_prompt(tmp_path, 1, note).read_text(encoding="utf-8"))

    assert read.attempt == 2
    assert "function `go`." in read.notes
    assert "Files" not in read.notes


def test_the_worker_of_t201_does_nothing_without_the_note_and_uses_its_name_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)

    assert agent.main([str(write_prompt(tmp_path, 0)), "T-201"]) == 0
    assert not (tmp_path / "calc").exists()
    assert "add a note for T-201" in capsys.readouterr().out

    note = "### Note\n\n> Name the entry function `go`, please."
    assert agent.main([str(write_prompt(tmp_path, 0, note)), "T-201"]) == 0
    assert "def go(argv):" in (tmp_path / "calc" / "cli.py").read_text(encoding="utf-8")


def test_the_worker_refuses_a_prompt_about_another_task(tmp_path: Path) -> None:
    assert agent.main([str(write_prompt(tmp_path, 0)), "T-999"]) == 2


# -- from a built wheel -----------------------------------------------------------------


@pytest.mark.slow
def test_the_demo_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    """Build a wheel from a copy of the source (pip fetches the build backend), install it
    without dependencies into a fresh virtual environment that borrows only the dependencies
    from this one, and run the installed ``memento demo`` offline: the package carries
    everything the demo needs."""
    bin_dir = install_from_wheel(tmp_path)

    env = clean_env(tmp_path / "home")
    done = subprocess.run(
        [*offline_prefix(), bin_dir / "memento", "demo", tmp_path / "project"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "The plan is complete: 6/6 tasks in 10 ticks." in done.stdout
