"""``memento schedule install|remove|show``: the crontab line that ticks a repository.

Every test runs the real command line (in the test's process, ``Project.memento``) on a real
git repository. The crontab is a file
named by ``--crontab`` or ``$MEMENTO_CRONTAB`` (never the real user's), or, for the
``crontab -l`` / ``crontab -`` path, a small fake ``crontab`` executable that keeps its table
in a file. The line installed is then run as cron would run it, by ``sh -c``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memento_gh.cron import line as crontab
from testing.agents import scripted_command
from testing.browser import start_dashboard
from testing.ticks import Completed, Project, good, make_project, one_phase, plan_of, task

THEIRS = (
    b"SHELL=/bin/sh\n"
    b"MAILTO=ann@example.com\n"
    b"# m h  dom mon dow   command\n"
    b"0 3 * * * /usr/bin/backup --all   \n"
    b"\n"
    b"*/5 * * * * cd /elsewhere && memento tick # memento-gh /elsewhere\n"
    b"@reboot /usr/bin/true"
)


@pytest.fixture(autouse=True)
def agents_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The agents these lines name, on PATH: `schedule install` looks for the agent there."""
    folder = tmp_path / "agents"
    folder.mkdir()
    for name in ("my-agent", "claude"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path)


def schedule(project: Project, *args: str, table: Path | None = None) -> Completed:
    """``memento schedule ARGS`` with the crontab file ``table`` (default: outside/crontab)."""
    chosen = table or project.outside / "crontab"
    return project.memento("schedule", *args, env={"MEMENTO_CRONTAB": str(chosen)})


def install(project: Project, every: str = "5m", *options: str) -> Completed:
    return schedule(project, "install", "--every", every, "--agent-cmd", "my-agent", *options)


def our_lines(table: Path, project: Project) -> list[str]:
    mark = crontab.marker(str(project.root.resolve()))
    text = table.read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.endswith(mark)]


def test_install_twice_leaves_one_line(project: Project) -> None:
    table = project.outside / "crontab"
    first = install(project, "5m")
    second = install(project, "10m")

    assert (first.returncode, first.stderr) == (0, "")
    assert "installed in" in first.stdout
    assert (second.returncode, second.stderr) == (0, "")
    assert "updated in" in second.stdout
    [line] = our_lines(table, project)
    assert line.startswith("*/10 * * * * ")
    assert line in second.stdout
    assert re.search(r"^next tick: \d{4}-\d\d-\d\d \d\d:\d0 ", second.stdout, re.MULTILINE)
    assert "API key" in second.stdout


def test_install_and_remove_leave_the_users_lines_byte_for_byte(project: Project) -> None:
    table = project.outside / "crontab"
    table.write_bytes(THEIRS)

    installed = install(project)
    after_install = table.read_bytes()
    removed = schedule(project, "remove")

    assert installed.returncode == 0
    assert after_install.startswith(THEIRS + b"\n*/5 * * * * cd ")
    assert (removed.returncode, removed.stderr) == (0, "")
    assert "removed the line for" in removed.stdout
    assert table.read_bytes() == THEIRS + b"\n"  # cron needs the newline the last line lacked


def test_remove_when_there_is_no_line_says_so(project: Project) -> None:
    table = project.outside / "crontab"
    table.write_bytes(THEIRS)

    done = schedule(project, "remove")

    assert (done.returncode, done.stderr) == (0, "")
    assert f"no memento line for {project.root.resolve()}" in done.stdout
    assert table.read_bytes() == THEIRS


@pytest.mark.parametrize("every", ["7m", "90m", "5h", "30s", "0s", "1.5m"])
def test_an_interval_cron_cannot_keep_is_refused(project: Project, every: str) -> None:
    table = project.outside / "crontab"
    table.write_bytes(THEIRS)

    done = install(project, every)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("memento: error: cron cannot run a tick every ")
    assert "memento run --every" in done.stderr and "5m" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert table.read_bytes() == THEIRS


def test_a_malformed_interval_is_a_usage_error(project: Project) -> None:
    done = install(project, "five minutes")

    assert done.returncode == 2
    assert "argument --every: 'five minutes' is not an interval; write a number and a unit" in (
        done.stderr
    )
    assert not (project.outside / "crontab").exists()


def test_install_without_an_agent_or_a_plan_is_refused(project: Project, tmp_path: Path) -> None:
    no_agent = schedule(project, "install", "--every", "5m")
    (tmp_path / "empty").mkdir()
    no_plan = Project(tmp_path / "empty", project.outside)
    planless = install(no_plan)

    assert no_agent.returncode == 1
    assert "no agent chosen; pass --agent" in no_agent.stderr
    assert planless.returncode == 1
    assert "run `memento init` first" in planless.stderr
    assert not (project.outside / "crontab").exists()


def test_the_tick_options_go_into_the_line_even_from_the_environment(project: Project) -> None:
    done = project.memento(
        "schedule",
        "install",
        "--every",
        "1h",
        "--worker-id",
        "night-shift",
        "--max-tasks",
        "2",
        "--crontab",
        str(project.outside / "crontab"),
        env={"MEMENTO_AGENT": "claude"},
    )

    assert done.returncode == 0, done.stderr
    [line] = our_lines(project.outside / "crontab", project)
    words = shlex.split(cron_command(line), comments=True)
    tick = words.index("tick")
    assert words[tick - 2 : tick] == ["--plan-dir", "docs"]
    assert words[tick + 1 : words.index(">>")] == [
        "--agent",
        "claude",
        "--worker-id",
        "night-shift",
        "--max-tasks",
        "2",
    ]
    assert Path(words[tick - 3]).is_absolute()  # cron's PATH does not know where memento is


def test_show_prints_the_line_and_when_it_fires(project: Project) -> None:
    install(project, "15m")
    shown = schedule(project, "show")
    other = schedule(project, "show", table=project.outside / "other")

    [line] = our_lines(project.outside / "crontab", project)
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout.splitlines()[0] == line
    assert re.fullmatch(
        r"next tick: \d{4}-\d\d-\d\d \d\d:(00|15|30|45) .*", shown.stdout.splitlines()[1]
    )
    assert (other.returncode, other.stderr) == (0, "")
    assert f"no memento line for {project.root.resolve()}" in other.stdout


def test_the_crontab_option_wins_over_the_variable(project: Project) -> None:
    chosen = project.outside / "chosen"
    done = project.memento(
        "schedule",
        "install",
        "--every",
        "5m",
        "--agent-cmd",
        "my-agent",
        "--crontab",
        str(chosen),
        env={"MEMENTO_CRONTAB": str(project.outside / "ignored")},
    )

    assert done.returncode == 0, done.stderr
    assert len(our_lines(chosen, project)) == 1
    assert not (project.outside / "ignored").exists()


# -- the line works -------------------------------------------------------------------------


def cron_command(line: str) -> str:
    """What cron hands to ``sh -c`` for ``line``: the command after the five time fields,
    with ``\\%`` read as ``%`` (a bare ``%`` would end the command)."""
    command = line.split(None, 5)[5]
    assert re.search(r"(?<!\\)%", command) is None, "a bare % would cut the command short"
    return command.replace("\\%", "%")


def run_as_cron(project: Project, **env: str) -> subprocess.CompletedProcess[str]:
    """``memento schedule install``, then its line run as cron runs it: by ``sh -c`` in
    cron's own environment (no PATH worth the name, no virtualenv, in the home folder),
    plus ``env``."""
    done = project.memento(
        "schedule",
        "install",
        "--every",
        "5m",
        "--agent-cmd",
        scripted_command(),
        env={"MEMENTO_CRONTAB": str(project.outside / "crontab")},
    )
    assert done.returncode == 0, done.stderr
    [line] = our_lines(project.outside / "crontab", project)
    cron_env = {
        "HOME": str(project.outside),
        "SHELL": "/bin/sh",
        "PATH": "/usr/bin:/bin",
        "MEMENTO_FAKE_SCRIPT": str(project.script_path),
        "MEMENTO_FAKE_STATE": str(project.outside / "runs.json"),
        **env,
    }
    return subprocess.run(
        ["/bin/sh", "-c", cron_command(line)],
        cwd=project.outside,
        env=cron_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_installed_line_ticks_the_repository_as_cron_would(tmp_path: Path) -> None:
    # A folder name the shell must have quoted and cron must not cut at its %.
    project = make_project(tmp_path / "it's 100% mine")
    project.script({"T-101": good("T-101")})

    ran = run_as_cron(project)

    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "", "")
    assert project.marker("T-101") == "x"
    log = (project.root / "logs" / "cron.log").read_text(encoding="utf-8")
    assert "tick: ran — T-101 success" in log


# -- the real crontab command ---------------------------------------------------------------


def fake_crontab(bin_dir: Path, table: Path) -> None:
    """A ``crontab`` that keeps the table in a file: ``-l`` prints it (or says there is none,
    exit 1, as cron does), ``-`` replaces it with stdin."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "crontab"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"TABLE = {str(table)!r}\n"
        "if sys.argv[1:] == ['-l']:\n"
        "    if not os.path.exists(TABLE):\n"
        "        sys.exit(print('no crontab for ann', file=sys.stderr) or 1)\n"
        "    sys.stdout.write(open(TABLE).read())\n"
        "elif sys.argv[1:] == ['-']:\n"
        "    open(TABLE, 'w').write(sys.stdin.read())\n"
        "else:\n"
        "    sys.exit(print('usage: crontab [-l | -]', file=sys.stderr) or 2)\n",
        encoding="utf-8",
    )
    script.chmod(0o755)


def test_without_a_file_the_crontab_command_is_used(project: Project) -> None:
    table = project.outside / "spool"
    fake_crontab(project.outside / "bin", table)
    env = {
        "MEMENTO_CRONTAB": "",
        "PATH": f"{project.outside / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }

    first = project.memento("schedule", "install", "--every", "5m", "--agent", "claude", env=env)
    shown = project.memento("schedule", "show", env=env)
    removed = project.memento("schedule", "remove", env=env)

    assert (first.returncode, first.stderr) == (0, "")
    assert "installed in your crontab" in first.stdout
    assert shown.stdout.startswith("*/5 * * * * cd ")
    assert removed.returncode == 0
    assert table.read_text(encoding="utf-8") == ""


def test_without_cron_installed_the_error_names_the_fix(project: Project) -> None:
    empty = project.outside / "no-bin"
    empty.mkdir()

    done = project.memento("schedule", "show", env={"MEMENTO_CRONTAB": "", "PATH": str(empty)})

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "memento: error: the `crontab` command is not installed; install cron (e.g. "
        "`sudo apt install cron`), or keep `memento run --every 5m` running in the foreground "
        "instead\n"
    )


# -- the dashboard --------------------------------------------------------------------------


def test_the_dashboard_shows_when_the_crontab_line_fires(project: Project) -> None:
    table = project.outside / "crontab"
    assert install(project, "30m").returncode == 0

    with start_dashboard(project.root, env={"MEMENTO_CRONTAB": str(table)}) as dashboard:
        state = dashboard.get("/api/state").json()

    assert state["schedule"]["cron"] == "*/30 * * * *"
    assert state["schedule"]["source"] == str(table)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:(00|30):00Z", state["schedule"]["at"])


def test_the_dashboard_without_cron_has_no_schedule(project: Project, tmp_path: Path) -> None:
    empty = tmp_path / "no-bin"
    empty.mkdir()
    env = {"MEMENTO_CRONTAB": "", "PATH": f"{empty}{os.pathsep}{Path(sys.executable).parent}"}

    with start_dashboard(project.root, env=env) as dashboard:
        answer = dashboard.get("/api/state")

    assert answer.status == 200
    assert answer.json()["schedule"] is None


#: Text in a common key's shape, and a value cron's environment holds under a secret's name.
SHAPED_KEY = "sk-ant-api03-" + "Q7" * 20
PLANTED = "planted-deploy-secret-4711"


@pytest.mark.timeout(120)
def test_a_credential_the_tick_prints_never_reaches_cron_log(tmp_path: Path) -> None:
    """A failing verify's first output line is printed in the tick's report, which the
    crontab line appends to logs/cron.log."""
    verify = f"`echo {SHAPED_KEY} {PLANTED}; exit 1`"
    project = make_project(tmp_path, plan_of([one_phase(task("T-101", verify=verify))]))
    project.script({"T-101": good("T-101")})

    ran = run_as_cron(project, DEPLOY_TOKEN=PLANTED)

    assert ran.returncode == 0, ran.stderr
    log = (project.root / "logs" / "cron.log").read_text(encoding="utf-8")
    assert "T-101 failed" in log and "*** ***" in log
    assert SHAPED_KEY[:20] not in log and PLANTED not in log
