"""What real ticks make of a real runner's output: a failed doctest is summarised by its
example, expected and got, the status log keeps those lines with their indentation, the
lesson learned from its fix has a signature of that failure (not of doctest's boilerplate),
and a verify whose runner could not even start credits no file with the fix."""

from __future__ import annotations

import re
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memento_gh.dashboard.repo import load
from memento_gh.formats import memory
from memento_gh.layout import Layout
from testing.plans import phase_block
from testing.ticks import Project, make_project, plan_of, task

pytestmark = pytest.mark.timeout(120)

KNOWN = "docs/memory/known-issues.md"
PYTHON = shlex.quote(sys.executable)
CORE = '''\
"""Small statistics."""


def mean(values):
    """The arithmetic mean.

    >>> mean([1, 2, 3, 4])
    2.5
    """
    return sum(values) {op} len(values)
'''
TEST_FILE = "from stats.core import mean\n\n\ndef test_mean():\n    assert mean([2]) == 2\n"


def empty_memory() -> dict[str, str]:
    return {
        f"docs/memory/{name}": memory.empty_file(kind) for kind, name in memory.FILE_NAMES.items()
    }


def stats_project(tmp_path: Path, verify: str) -> Project:
    """A package ``stats`` with a doctest, and one task on it checked by ``verify``."""
    fields = {"verify": f"`{verify}`", "context_files": "[stats/core.py, tests/]"}
    plan = plan_of([phase_block(1, "Core", [task("T-101", **fields)])], total_tasks="1")
    files = {
        "stats/__init__.py": "",
        "stats/core.py": CORE.format(op="-"),
        **empty_memory(),
    }
    return make_project(tmp_path, plan, files=files)


def known_issues(project: Project) -> tuple[memory.Record, ...]:
    text = (project.root / KNOWN).read_text(encoding="utf-8")
    return memory.parse_memory(text, memory.KNOWN_ISSUE).active()


def test_a_failed_doctest_is_told_by_its_example_and_its_fix_is_learned_by_it(
    tmp_path: Path,
) -> None:
    proj = stats_project(tmp_path, f"{PYTHON} -m doctest stats/core.py")
    proj.script(
        {
            "T-101": {
                "attempts": [
                    [{"write": "stats/core.py", "text": CORE.format(op="//")}],
                    [{"write": "stats/core.py", "text": CORE.format(op="/")}],
                ]
            }
        }
    )

    assert proj.tick().returncode == 0  # the doctest fails
    [failed] = proj.entries()
    assert re.fullmatch(
        r"verify exited with code 1: \S*stats/core\.py:7 in core\.mean — "
        r"mean\(\[1, 2, 3, 4\]\): expected 2\.5, got 2",
        failed.error_analysis or "",
    ), failed.error_analysis
    head = failed.verify_head or ""
    assert "Failed example:\n    mean([1, 2, 3, 4])\nExpected:\n    2.5\nGot:\n    2" in head
    assert "*****" not in head

    assert proj.tick().returncode == 0  # it passes: the failure becomes a lesson
    [record] = known_issues(proj)
    assert record.key is not None
    assert "Failed example" not in record.key
    assert "expected {n}" in record.key, record.key
    assert "stats/core.py" in (record.value("Fix") or "")


def test_a_runner_that_was_not_installed_teaches_nothing_about_the_files(
    tmp_path: Path,
) -> None:
    # The verify's runner is a module on PYTHONPATH outside the repository: missing at the
    # first tick (the interpreter on PATH lacks it), there at the second.
    site = tmp_path / "site"
    site.mkdir()
    proj = stats_project(tmp_path, f"PYTHONPATH={site} {PYTHON} -m checkrunner tests")
    proj.script({"T-101": [{"write": "tests/test_core.py", "text": TEST_FILE}]})

    assert proj.tick().returncode == 0
    [failed] = proj.entries()
    assert "No module named checkrunner" in (failed.error_analysis or "")
    (site / "checkrunner.py").write_text("print('1 passed')\n", encoding="utf-8")
    assert proj.tick().returncode == 0

    assert [entry.outcome for entry in proj.entries()] == ["failed", "success"]
    assert known_issues(proj) == ()  # tests/test_core.py did not fix a missing runner


UNIT_TEST = """\
import unittest

from stats.core import mean


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
"""


def test_a_unittest_run_that_passed_is_told_by_its_result_line(tmp_path: Path) -> None:
    proj = stats_project(tmp_path, f"{PYTHON} -m unittest tests.test_core")
    proj.script(
        {
            "T-101": [
                {"write": "stats/core.py", "text": CORE.format(op="/")},
                {"write": "tests/__init__.py", "text": ""},
                {"write": "tests/test_core.py", "text": UNIT_TEST},
            ]
        }
    )

    assert proj.tick().returncode == 0

    [passed] = proj.entries()
    assert passed.outcome == "success"
    assert re.fullmatch(r"Ran 1 test in [\d.]+s\nOK", passed.verify_head or ""), passed.verify_head
    state = load(Layout(proj.root), datetime.now(timezone.utc))
    [row] = [record for record in state["timeline"] if record["kind"] == "tick"]
    assert re.fullmatch(r"Ran 1 test in [\d.]+s: OK", row["summary"]), row
    assert re.fullmatch(r"Ran 1 test in [\d.]+s: OK", state["tasks"][0]["last"]["summary"])
