"""The demo's sample project: ``calc``, a tiny Python calculator, and the plan that builds it.

Pure: :func:`scaffold` returns every file of the project by its path. Two phases, six tasks,
each chosen to show one part of a tick when the scripted worker (:mod:`.agent`) runs it:

- T-101 succeeds at once;
- T-102 fails its verify on the first attempt (a bug) and succeeds on the retry;
- T-103 touches a guard file on its first attempt (rolled back) and behaves on the retry;
- T-201 needs a fact only a human has (the entry function's name): it ends ``[!]`` until a
  note gives the name and ``memento retry`` gives the task its retries back;
- T-202 and T-203 succeed, and the plan is complete.

The verify commands run the project's tests with the Python that runs the demo (its path
goes into the plan), so nothing but the standard library and a POSIX shell is needed.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from datetime import date
from pathlib import PurePosixPath

from memento_gh.layout import MAP_NAME, NOTES_NAME, PLAN_NAME, STATUS_NAME
from memento_gh.plan.scanner import parse
from memento_gh.plan.validate import counted
from memento_gh.scaffold import (
    META_DEFAULTS,
    fill,
    gitignore_with_ours,
    meta_section,
    plan_paths,
    support_scaffold,
    template,
)

NAME = "calc"
#: What only the human knows, and tells the worker of T-201 in a note.
ENTRY_POINT = "run"
HUMAN_NOTE = (
    f"The release scripts call `calc.cli.{ENTRY_POINT}(argv)`: name the entry function "
    f"`{ENTRY_POINT}`. It takes the words after `python -m calc`, prints the result and "
    "returns 0."
)
BLOCKED_TASK = "T-201"

#: Meta values the demo changes: two attempts per task keep it short, a minute is plenty
#: for each command, and a nearly full disk should not stop a demo.
META_OVERRIDES: Mapping[str, str] = {
    "max_retries": "2",
    "agent_timeout": "1min",
    "verify_timeout": "1min",
    "min_free_disk": "10MB",
}

_PLAN = """\
# MASTER_PLAN: calc (memento demo)

<!-- The plan of `memento demo`: six tasks that build calc, a tiny calculator, worked by a
scripted worker that needs no LLM. The verify commands run the project's tests with the
Python that ran the demo. -->

## Meta
@META@

---

## Phase 1: Arithmetic
<!-- parallel: false -->
<!-- depends: none -->

- [ ] `T-101` [MODULE:core] Add add(a, b) to calc/core.py
  - verify: `@CHECK@ tests.test_add`
  - context_files: [calc/core.py]
  - guard_files: [tests/*]
  - estimate: 5min
  - retries: 0

- [ ] `T-102` [MODULE:core] Add subtract(a, b) to calc/core.py
  - verify: `@CHECK@ tests.test_subtract`
  - context_files: [calc/core.py]
  - guard_files: [tests/*]
  - estimate: 5min
  - retries: 0

- [ ] `T-103` [MODULE:core] Add multiply(a, b) to calc/core.py
  - verify: `@CHECK@ tests.test_multiply`
  - context_files: [calc/core.py]
  - guard_files: [tests/*]
  - estimate: 5min
  - retries: 0

## Phase 2: Command line and docs
<!-- parallel: false -->
<!-- depends: Phase 1 -->

- [ ] `T-201` [MODULE:cli] Add calc/cli.py with the entry function the release scripts call
  - verify: `@CHECK@ tests.test_cli`
  - context_files: [calc/cli.py, calc/core.py]
  - guard_files: [tests/*]
  - estimate: 10min
  - retries: 0

- [ ] `T-202` [MODULE:cli] Add calc/__main__.py so that "python -m calc add 2 3" prints 5
  - verify: `@CHECK@ tests.test_main`
  - context_files: [calc/__main__.py, calc/cli.py]
  - guard_files: [tests/*]
  - depends: [T-201]
  - estimate: 5min
  - retries: 0

- [ ] `T-203` [MODULE:docs] Write README.md: what calc does and how to run it
  - verify: `grep -q 'python -m calc' README.md`
  - context_files: [README.md]
  - guard_files: [calc/*, tests/*]
  - estimate: 5min
  - retries: 0
"""

_MAP = """\
# PROJECT MAP: calc (memento demo)

## Architecture Overview
calc is a tiny calculator in Python, standard library only: arithmetic in calc/core.py,
a command line in calc/cli.py and calc/__main__.py, tests in tests/ (one module per task,
run by tests/check.py).

## Module Registry

### [MODULE:core]
- Purpose: the arithmetic: add, subtract, multiply
- Entry: calc/core.py
- Key interfaces: add(a, b), subtract(a, b), multiply(a, b)
- Notes: plain functions on numbers; the tests in tests/ are the specification

### [MODULE:cli]
- Purpose: the command line, `python -m calc add 2 3`
- Entry: calc/cli.py, calc/__main__.py
- Key interfaces: the entry function the release scripts call (ask the team for its name)
- Notes: the entry function takes argv like ["add", "2", "3"] and prints the result

### [MODULE:docs]
- Purpose: the README
- Entry: README.md
- Key interfaces: none
- Notes: say what calc does and show `python -m calc add 2 3`

## File Tree

```text
calc/
├── __init__.py
├── core.py           # the arithmetic
├── cli.py            # the entry function
└── __main__.py       # python -m calc
tests/
├── check.py          # runs one test module, names the failure on its first line
└── test_*.py         # one module per task
@PLAN_DIR_SLASH@
├── MASTER_PLAN.md    # the plan memento works from
├── PROJECT_MAP.md    # this file
├── TICK_STATUS.md    # one entry per task run, written by memento
└── HUMAN_NOTES.md    # notes for the worker
```

## Conventions
- Standard library only; tests are unittest modules under tests/, one per task.
"""

_CHECK = '''\
"""Run one test module; the first line of output says what failed (memento shows it)."""

import io
import os
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# No bytecode caches here or in the programs the tests start: see verify_prefix in memento.
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"


def main(name):
    suite = unittest.defaultTestLoader.loadTestsFromName(name)
    result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)
    problems = result.failures + result.errors
    for test, trace in problems:
        print(f"{test.id().rsplit('.', 1)[-1]}: {trace.strip().splitlines()[-1]}")
    if problems or not result.testsRun:
        return 1
    print(f"ok: {result.testsRun} test(s) in {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
'''

_TESTS = {
    "tests/test_add.py": """\
import unittest

from calc.core import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5, "add(2, 3)")
        self.assertEqual(add(-1, 1), 0, "add(-1, 1)")
""",
    "tests/test_subtract.py": """\
import unittest

from calc.core import subtract


class SubtractTest(unittest.TestCase):
    def test_subtract(self):
        self.assertEqual(subtract(5, 3), 2, "subtract(5, 3)")
        self.assertEqual(subtract(3, 5), -2, "subtract(3, 5)")
""",
    "tests/test_multiply.py": """\
import unittest

from calc.core import multiply


class MultiplyTest(unittest.TestCase):
    def test_multiply(self):
        self.assertEqual(multiply(4, 3), 12, "multiply(4, 3)")
        self.assertEqual(multiply(-2, 3), -6, "multiply(-2, 3)")
""",
    "tests/test_cli.py": f"""\
import contextlib
import io
import unittest

from calc.cli import {ENTRY_POINT}


class CliTest(unittest.TestCase):
    def test_prints_the_result(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = {ENTRY_POINT}(["multiply", "4", "3"])
        self.assertEqual((code, out.getvalue().strip()), (0, "12"))
""",
    "tests/test_main.py": """\
import subprocess
import sys
import unittest
from pathlib import Path


class MainTest(unittest.TestCase):
    def test_python_m_calc(self):
        done = subprocess.run(
            [sys.executable, "-m", "calc", "add", "2", "3"],
            cwd=Path(__file__).resolve().parent.parent,
            capture_output=True,
            text=True,
        )
        last = (done.stderr.strip().splitlines() or [""])[-1]
        self.assertEqual(done.stdout.strip(), "5", last)
""",
}

_SOURCES = {
    "calc/__init__.py": '"""calc: a tiny calculator, built one memento task at a time."""\n',
    "calc/core.py": '"""The arithmetic of calc."""\n',
}

#: Bytecode the verify commands leave behind must not count as anyone's change.
_EXTRA_IGNORES = ("__pycache__/", "*.pyc")


def verify_prefix(python: str) -> str:
    """The start of every test verify command: ``python`` (quoted) running tests/check.py.

    ``-B``: a rollback restores a source file, but not the bytecode cached from the rejected
    version; a retry written within the same second at the same size would be judged by
    that stale bytecode. Writing none keeps every verify honest."""
    return f"{shlex.quote(python)} -B tests/check.py"


def plan_text(python: str, today: date) -> str:
    raw = fill(_PLAN, {"META": "", "CHECK": verify_prefix(python)})
    values = {
        **META_DEFAULTS,
        **META_OVERRIDES,
        "created": today.isoformat(),
        "last_architect_edit": today.isoformat(),
    }
    values.update({key: str(count) for key, count in counted(parse(raw)).items()})
    return fill(_PLAN, {"META": meta_section(values), "CHECK": verify_prefix(python)})


def scaffold(python: str, today: date, plan_dir: str = "docs") -> dict[str, str]:
    """Every file of the sample project, by its POSIX path relative to the repository."""
    docs = PurePosixPath(plan_dir)
    words = {**plan_paths(plan_dir), "NAME": NAME}
    support = support_scaffold(plan_dir)
    # The demo never runs on GitHub: no workflow.
    support = {path: text for path, text in support.items() if not path.startswith(".github/")}
    gitignore, _ = gitignore_with_ours(None)
    gitignore += "\n".join(_EXTRA_IGNORES) + "\n"
    return {
        (docs / PLAN_NAME).as_posix(): plan_text(python, today),
        (docs / MAP_NAME).as_posix(): fill(_MAP, words),
        (docs / STATUS_NAME).as_posix(): fill(template(STATUS_NAME), words),
        (docs / NOTES_NAME).as_posix(): fill(template(NOTES_NAME), words),
        **support,
        ".gitignore": gitignore,
        "tests/__init__.py": "",
        "tests/check.py": _CHECK,
        **_TESTS,
        **_SOURCES,
    }
