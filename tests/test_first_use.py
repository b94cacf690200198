"""A new user's first hour, with the real ``memento`` command line as a process each step.

``memento demo`` first; then, on a project laid out like a real public one (a package whose
docstrings are doctests, a ``tests`` folder for pytest, a ``pyproject.toml``, a README), what
the README's quick start says: ``memento init``, write a plan, ``memento validate``, commit,
``memento tick`` (a scripted agent stands in for the coding agent), a task that ends blocked
``[!]`` because it needs a fact only a human has, ``memento note`` and ``memento retry``, and
the tick that finishes the plan. Every step is read back from the files and from git.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memento_gh.formats import memory
from memento_gh.formats.notes import parse_notes
from memento_gh.formats.status_log import Event, ParsedEntry, parse_status
from memento_gh.plan.scanner import parse
from testing.agents import Script, scripted_command, scripted_env, write_script

pytestmark = pytest.mark.timeout(600)

Completed = subprocess.CompletedProcess[str]
KNOWN = "docs/memory/known-issues.md"

# -- the project: a small more-itertools --------------------------------------------------

PYPROJECT = """\
[project]
name = "moreiter"
version = "0.1.0"
description = "More routines for operating on iterables, beyond itertools"
requires-python = ">=3.9"
"""
README = "# moreiter\n\nMore routines for operating on iterables.\n\n    python -m pytest\n"
INIT = "from moreiter.more import *  # noqa: F403\n"
MORE_HEAD = '''\
"""More routines for operating on iterables, beyond itertools."""

from itertools import islice

__all__ = [{names}]


def take(n, iterable):
    """Return the first *n* items of *iterable* as a list.

        >>> take(3, range(10))
        [0, 1, 2]

    """
    return list(islice(iterable, n))


def chunked(iterable, n):
    """Break *iterable* into lists of length *n*.

        >>> list(chunked([1, 2, 3, 4, 5, 6], 3))
        [[1, 2, 3], [4, 5, 6]]

    """
    iterator = iter(iterable)
    return iter(lambda: take(n, iterator), [])
'''
FIRST = '''

def first(iterable, default=None):
    """Return the first item of *iterable*, or *default* if it is empty.

        >>> first([0, 1, 2])
        0
        >>> first([], 'some default')
        'some default'

    """
    return next(iter(iterable), default)
'''
WINDOWED = '''

def windowed(seq, n):
    """Return a sliding window of width *n* over *seq*.

        >>> list(windowed([1, 2, 3, 4, 5], 3))
        [(1, 2, 3), (2, 3, 4), (3, 4, 5)]

    """
    items = list(seq)
    return ({window} for i in range(len(items) - n + 1))
'''
TESTS = """\
from moreiter import chunked, take


def test_take_stops_early():
    assert take(5, [1, 2]) == [1, 2]


def test_chunked_keeps_the_rest():
    assert list(chunked("abcde", 2)) == [["a", "b"], ["c", "d"], ["e"]]
"""
TEST_FIRST = """\
from moreiter import first


def test_first_of_an_iterator():
    assert first(iter("xyz")) == "x"
"""


def more(*functions: str, names: str = '"take", "chunked"') -> str:
    return MORE_HEAD.format(names=names) + "".join(functions)


WINDOWS_AS_LISTS = WINDOWED.format(window="items[i : i + n]")
WINDOWS_AS_TUPLES = WINDOWED.format(window="tuple(items[i : i + n])")
ALL_THREE = '"take", "chunked", "first"'
ALL_FOUR = '"take", "chunked", "first", "windowed"'

PHASES = """\
## Phase 1: More routines
<!-- parallel: false -->
<!-- depends: none -->

- [ ] `T-101` [MODULE:more] Add `first(iterable, default=None)` to moreiter/more.py, with a doctest
  - verify: `python -m doctest moreiter/more.py && python -m pytest -q -p no:cacheprovider tests`
  - context_files: [moreiter/more.py, tests/]
  - guard_files: [pyproject.toml]
  - estimate: 10min
  - retries: 0

- [ ] `T-102` [MODULE:more] Add `windowed(seq, n)` to moreiter/more.py, with a doctest
  - verify: `python -m doctest moreiter/more.py && python -m pytest -q -p no:cacheprovider tests`
  - context_files: [moreiter/more.py]
  - guard_files: [pyproject.toml, tests/]
  - depends: T-101
  - estimate: 10min
  - retries: 0
"""
MODULES = """\
### [MODULE:more]
- Purpose: the routines, each with a doctest in its docstring
- Entry: moreiter/more.py
- Key interfaces: take, chunked and what the plan adds
- Notes: exported from moreiter/__init__.py through __all__

"""
NOTE = "A window is a tuple, as in more-itertools: `(1, 2, 3)`, not a list."


# -- running things -----------------------------------------------------------------------


def user_env(home: Path, script: Path) -> dict[str, str]:
    """A user's shell: their own HOME, the project's Python first on PATH (its venv active),
    no memento or git variables from this test run; the fake agent's script."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("GIT_", "MEMENTO_", "PYTEST_")) and name != "FORCE_COLOR"
    }
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return scripted_env(script=script, state=script.with_suffix(".runs.json"), environ=env)


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> Completed:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300
    )


class User:
    """Someone at a shell in ``root``: ``memento …``, ``git …``, ``python …``."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env

    def memento(self, *args: str, cwd: Path | None = None) -> Completed:
        done = run([sys.executable, "-m", "memento_gh", *args], cwd or self.root, self.env)
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        return done

    def tick(self) -> Completed:
        done = self.memento("tick", "--agent", "command", "--agent-cmd", scripted_command())
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def git(self, *args: str) -> str:
        done = run(["git", *args], self.root, self.env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def sh(self, command: str) -> Completed:
        return run(["sh", "-c", command], self.root, self.env)

    def write(self, name: str, text: str) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def read(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8")

    def marker(self, task_id: str) -> str:
        task = parse(self.read("docs/MASTER_PLAN.md")).task(task_id)
        assert task is not None
        return task.marker

    def entries(self) -> list[ParsedEntry]:
        records = parse_status(self.read("docs/TICK_STATUS.md"))
        return [record for record in records if isinstance(record, ParsedEntry)]

    def events(self) -> list[str]:
        records = parse_status(self.read("docs/TICK_STATUS.md"))
        return [record.text for record in records if isinstance(record, Event)]


@pytest.fixture
def user(tmp_path: Path) -> User:
    """A clone of the project, tests green, with a git identity, as a user has it."""
    root = tmp_path / "moreiter"
    script = write_script(tmp_path / "agent" / "script.json", {})
    person = User(root, user_env(tmp_path / "home", script))
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        "moreiter/__init__.py": INIT,
        "moreiter/more.py": more(),
        "tests/test_more.py": TESTS,
    }
    for name, text in files.items():
        person.write(name, text)
    person.git("init", "-q", "-b", "main")
    person.git("config", "user.name", "Ann Example")
    person.git("config", "user.email", "ann@example.com")
    person.git("add", "-A")
    person.git("commit", "-qm", "moreiter 0.1.0")
    return person


def script(user: User, tasks: Script) -> None:
    write_script(Path(user.env["MEMENTO_FAKE_SCRIPT"]), tasks)


# -- the path -----------------------------------------------------------------------------


def test_the_demo_runs_first_as_the_quick_start_says(user: User, tmp_path: Path) -> None:
    done = user.memento("demo", str(tmp_path / "demo"), cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "ALL TASKS COMPLETE" in done.stdout
    assert (tmp_path / "demo" / "docs" / "MASTER_PLAN.md").is_file()


def test_init_plan_validate_tick_note_retry_on_a_real_project_layout(user: User) -> None:
    # The project's own checks pass before memento is added: its doctests and its tests.
    baseline = user.sh("python -m doctest moreiter/more.py && python -m pytest -q tests")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr

    # memento init: the scaffold, and next steps
    done = user.memento("init")
    assert done.returncode == 0, done.stderr
    assert "memento validate" in done.stdout

    # Write the plan: the example phase replaced by ours, the module registered in the map.
    plan = user.read("docs/MASTER_PLAN.md")
    user.write("docs/MASTER_PLAN.md", plan[: plan.index("## Phase 1")] + PHASES)
    project_map = user.read("docs/PROJECT_MAP.md")
    start = project_map.index("### [MODULE:docs]")
    end = project_map.index("## File Tree")
    user.write("docs/PROJECT_MAP.md", project_map[:start] + MODULES + project_map[end:])
    fixed = user.memento("validate", "--fix")  # total_tasks follows the new plan
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    checked = user.memento("validate")
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
    status = user.memento("status")
    assert "0/2 done" in status.stdout, status.stdout
    assert "T-101" in user.memento("next").stdout
    user.git("add", "-A")
    user.git("commit", "-qm", "Add memento")

    # T-101 succeeds at the first tick: the change and the plan in one commit.
    as_lists = {"write": "moreiter/more.py", "text": more(FIRST, WINDOWS_AS_LISTS, names=ALL_FOUR)}
    as_tuples = {
        "write": "moreiter/more.py",
        "text": more(FIRST, WINDOWS_AS_TUPLES, names=ALL_FOUR),
    }
    save_prompt = {"save_prompt": str(user.root.parent / "agent" / "T-102.md")}
    script(
        user,
        {
            "T-101": [
                {"write": "moreiter/more.py", "text": more(FIRST, names=ALL_THREE)},
                {"write": "tests/test_first.py", "text": TEST_FIRST},
            ],
            # A list for a window, until a note says it is a tuple: max_retries (3) times.
            "T-102": {"attempts": [*[[as_lists]] * 3, [save_prompt, as_tuples]]},
        },
    )
    user.tick()
    assert user.marker("T-101") == "x"
    assert "tests/test_first.py" in user.git("show", "--name-only", "--format=", "HEAD")
    assert user.git("status", "--porcelain") == ""

    # T-102 fails its doctest until it is blocked: each failure told by doctest's own lines.
    for _ in range(3):
        if user.marker("T-102") == "!":
            break
        user.tick()
    assert user.marker("T-102") == "!"
    failed = [entry for entry in user.entries() if entry.task_id == "T-102"]
    assert failed, user.read("docs/TICK_STATUS.md")
    for entry in failed:
        assert re.search(
            r"verify exited with code 1: \S*moreiter/more\.py:\d+ in more\.windowed — "
            r"list\(windowed\(\[1, 2, 3, 4, 5\], 3\)\): expected \[\(1, 2, 3\), .* got "
            r"\[\[1, 2, 3\], ",
            entry.error_analysis or "",
        ), entry.error_analysis
        assert "Expected:\n    [(1, 2, 3), (2, 3, 4), (3, 4, 5)]\nGot:\n" in (
            entry.verify_head or ""
        )
    assert "windowed" not in user.read("moreiter/more.py")  # every failure rolled back
    assert user.git("status", "--porcelain") == ""

    # The human tells the worker what it could not know, and gives the task its retries back.
    noted = user.memento("note", "--task", "T-102", NOTE)
    assert noted.returncode == 0, noted.stderr
    retried = user.memento("retry", "T-102")
    assert retried.returncode == 0, retried.stderr
    assert user.marker("T-102") == " "
    again = user.memento("retry", "T-102")  # nothing left to change: said, and no error
    assert again.returncode == 0, again.stderr
    # One blocked task of two tripped the circuit breaker (blocked_ratio_limit 0.3): the
    # plan is paused, and memento says how to go on.
    assert "`memento resume`" in user.memento("next").stdout
    resumed = user.memento("resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "T-102" in user.memento("next").stdout

    user.tick()
    assert user.marker("T-102") == "x"
    prompt = (user.root.parent / "agent" / "T-102.md").read_text(encoding="utf-8")
    assert "A window is a tuple, as in more-itertools" in prompt
    [note] = parse_notes(user.read("docs/HUMAN_NOTES.md")).notes
    assert note.read
    assert "🎉 ALL TASKS COMPLETE" in user.events()
    # What the fix taught: doctest's failure, not its boilerplate, as the lesson's signature.
    lessons = memory.parse_memory(user.read(KNOWN), memory.KNOWN_ISSUE).active()
    assert [record.value("Task") for record in lessons] == ["T-102"]
    assert "in more.windowed — list(windowed(" in (lessons[0].key or "")

    # The project is what the plan asked for, its own checks green, the tree clean.
    final = user.sh("python -m doctest moreiter/more.py && python -m pytest -q tests")
    assert final.returncode == 0, final.stdout + final.stderr
    assert "2/2 done" in user.memento("status").stdout
    assert user.memento("validate").returncode == 0
    assert user.git("status", "--porcelain") == ""
    assert shlex.split(user.git("log", "--format=%s", "-1"))[0].startswith("memento")
