"""What a verify command's output says: the summary of each runner's real output, the
excerpt kept of it, and the lines that are only a runner's boilerplate.

The corpus in ``tests/verify_outputs/`` holds real outputs with the summary expected of
each; the runners installed here (pytest, unittest and doctest always) are also run for
real on a small project, so that a change in what they print shows up here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memento_gh.formats.runner_output import excerpt, is_boilerplate, runner_missing, summary

pytestmark = pytest.mark.timeout(120)

CORPUS = Path(__file__).resolve().parents[1] / "verify_outputs"

#: (file, exit code, summary): the line a status entry's analysis and the dashboard show.
CASES = [
    ("pytest-assert", 1, "FAILED tests/test_core.py::test_mean - assert 2 == 2.5"),
    ("pytest-q-assert", 1, "FAILED tests/test_core.py::test_mean - assert 2 == 2.5"),
    (
        "pytest-import-error",
        2,
        "ERROR tests/test_import.py: ModuleNotFoundError: No module named 'stats.median'",
    ),
    ("pytest-pass", 0, "1 passed, 1 deselected in 0.77s"),
    (
        "unittest-fail",
        1,
        "ERROR: test_ratio (tests.test_unit.MeanTest.test_ratio) — ZeroDivisionError: "
        "division by zero (and 1 more)",
    ),
    ("unittest-pass", 0, "Ran 1 test in 0.000s: OK"),
    ("unittest-pass-q", 0, "Ran 1 test in 0.000s: OK"),
    (
        "doctest-fail",
        1,
        "/home/ann/stats/stats/core.py:7 in core.mean — mean([1, 2, 3, 4]): expected 2.5, "
        "got 2 (and 1 more)",
    ),
    (
        "cargo-test-fail",
        101,
        "tests::adds_two_numbers FAILED — panicked at src/lib.rs:11:9: assertion "
        "`left == right` failed",
    ),
    (
        "cargo-test-fail-verbose",
        101,
        "tests::adds_two_numbers FAILED — panicked at src/lib.rs:11:9: assertion "
        "`left == right` failed",
    ),
    (
        "cargo-compile-error",
        101,
        "src/lib.rs:2:9: error[E0425]: cannot find value `c` in this scope",
    ),
    (
        "cargo-test-pass",
        0,
        "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; "
        "finished in 0.00s",
    ),
    (
        "go-test-fail",
        1,
        "--- FAIL: TestMean (0.00s) — stats_test.go:8: Mean([1 2 3 4]) = 2, want 2.5",
    ),
    (
        "go-test-fail-verbose",
        1,
        "--- FAIL: TestMean (0.00s) — stats_test.go:8: Mean([1 2 3 4]) = 2, want 2.5",
    ),
    ("go-build-fail", 1, "./stats.go:4:9: undefined: total"),
    ("go-test-pass", 0, "ok example.com/stats 0.002s"),
    (
        "tsc",
        2,
        "src/stats.ts(4,3): error TS2322: Type 'string' is not assignable to type 'number'. "
        "(and 1 more)",
    ),
    (
        "tsc-pretty",
        2,
        "src/stats.ts:4:3 - error TS2322: Type 'string' is not assignable to type 'number'. "
        "(and 1 more)",
    ),
    ("eslint", 1, "/home/ann/shop/src/stats.js:9:10: error: 'total' is not defined [no-undef]"),
    (
        "mypy",
        1,
        'src/stats.py:4: error: Incompatible return value type (got "str", expected "float") '
        "[return-value]",
    ),
    ("python-traceback", 1, "ValueError: the median of nothing"),
    ("python-no-module", 1, "/home/ann/.venvs/memento/bin/python: No module named pytestx"),
    ("sh-not-found", 127, "sh: 1: pytestx: not found"),
    ("shell-echo", 1, "src/a.py has no A"),
    ("shell-pass", 0, "PASS"),
]


def corpus(name: str) -> str:
    return (CORPUS / f"{name}.txt").read_text(encoding="utf-8")


def test_every_file_of_the_corpus_has_a_case() -> None:
    assert sorted(path.stem for path in CORPUS.glob("*.txt")) == sorted(c[0] for c in CASES)


@pytest.mark.parametrize(("name", "code", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_summary_is_the_runners_failure_line(name: str, code: int, expected: str) -> None:
    found = summary(corpus(name), code)

    assert found == expected
    assert code == 0 or not is_boilerplate(found)


def test_no_output_has_an_empty_summary() -> None:
    assert summary("", 1) == summary("\n \n", 0) == ""


@pytest.mark.parametrize(
    ("name", "code", "lines"),
    [
        (
            "doctest-fail",
            1,
            [
                'File "/home/ann/stats/stats/core.py", line 7, in core.mean',
                "Failed example:",
                "    mean([1, 2, 3, 4])",
                "Expected:",
                "    2.5",
                "Got:",
                "    2",
            ],
        ),
        (
            "pytest-assert",
            1,
            [
                "    def test_mean():",
                ">       assert mean([1, 2, 3, 4]) == 2.5",
                "E       assert 2 == 2.5",
                "E        +  where 2 = mean([1, 2, 3, 4])",
                "tests/test_core.py:5: AssertionError",
                "FAILED tests/test_core.py::test_mean - assert 2 == 2.5",
            ],
        ),
        ("unittest-pass-q", 0, ["Ran 1 test in 0.000s", "OK"]),
        (
            "python-traceback",
            1,
            [
                '  File "/home/ann/stats/check.py", line 2, in main',
                '    raise ValueError("the median of nothing")',
                "ValueError: the median of nothing",
            ],
        ),
    ],
    ids=["doctest", "pytest", "unittest-pass", "traceback"],
)
def test_the_excerpt_starts_at_the_failure_and_keeps_indentation(
    name: str, code: int, lines: list[str]
) -> None:
    kept = excerpt(corpus(name), code).splitlines()

    assert kept[: len(lines)] == lines
    assert len(kept) <= 8
    assert not any(re.fullmatch(r"\s*([*=_-])\1{2,}\s*", line) for line in kept)  # no rules


@pytest.mark.parametrize(
    "line",
    [
        "Failed example:",
        "Expected:",
        "Got:",
        "***Test Failed*** 2 failures.",
        "1 items had failures:",
        "Traceback (most recent call last):",
        "FAILED (failures=1, errors=1)",
        "Ran 3 tests in 0.001s",
        "1 failed, 1 passed in 0.98s",
        "=========================== short test summary info ============================",
        "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
        "error: test failed, to rerun pass `--lib`",
        "FAIL\texample.com/stats\t0.002s",
        "✖ 2 problems (1 error, 1 warning)",
        "**********************************************************************",
    ],
)
def test_a_runners_boilerplate_is_known(line: str) -> None:
    assert is_boilerplate(line)


@pytest.mark.parametrize(
    ("output", "command", "code", "fixed", "missing"),
    [
        ("/v/bin/python3: No module named pytest", "python -m pytest -q", 1, ["tests/a.py"], True),
        ("/v/bin/python3: No module named pytest", "pytest -q", 1, ["tests/a.py"], True),
        ("sh: 1: pytest: not found", "pytest -q", 127, ["tests/a.py"], True),
        # the task's own module, created by the fix: a failure of the code, worth learning
        ("No module named calc", "python -m calc 4 3", 1, ["calc/__main__.py"], False),
        ("sh: 1: ./check.sh: not found", "./check.sh", 127, ["check.sh"], False),
        # a module of the project the test imports: not the runner
        ("E   ModuleNotFoundError: No module named 'stats.median'", "pytest", 1, [], False),
        ("AssertionError: 2 != 2.5", "python -m unittest", 1, ["stats/core.py"], False),
    ],
)
def test_a_runner_that_could_not_start_is_the_environments_fault(
    output: str, command: str, code: int, fixed: list[str], missing: bool
) -> None:
    assert runner_missing(output, command, code, fixed) is missing


# -- the runners themselves ---------------------------------------------------------------

CORE = '''\
"""Small statistics."""


def mean(values):
    """The arithmetic mean.

    >>> mean([1, 2, 3, 4])
    2.5
    """
    return sum(values) // len(values)
'''
PYTEST_FILE = (
    "from stats.core import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3, 4]) == 2.5\n"
)
UNITTEST_FILE = """\
import unittest

from stats.core import mean


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
"""


@pytest.fixture
def stats(tmp_path: Path) -> Path:
    """A package with a doctest that fails, and a pytest and a unittest test of it."""
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "stats" / "core.py").write_text(CORE, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tests" / "test_pytest.py").write_text(PYTEST_FILE, encoding="utf-8")
    (tmp_path / "tests" / "test_unit.py").write_text(UNITTEST_FILE, encoding="utf-8")
    return tmp_path


def run(command: list[str], cwd: Path) -> tuple[str, int]:
    done = subprocess.run(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=90,
        check=False,
    )
    return done.stdout, done.returncode


@pytest.mark.parametrize(
    ("command", "pattern", "shown"),
    [
        (
            ["-m", "pytest", "-p", "no:cacheprovider", "tests/test_pytest.py"],
            r"FAILED tests/test_pytest\.py::test_mean - assert 2 == 2\.5",
            "E       assert 2 == 2.5",
        ),
        (
            ["-m", "unittest", "tests.test_unit"],
            r"FAIL: test_mean \(tests\.test_unit\.MeanTest(\.test_mean)?\) — "
            r"AssertionError: 2 != 2\.5",
            "AssertionError: 2 != 2.5",
        ),
        (
            ["-m", "doctest", "stats/core.py"],
            r"\{dir\}/stats/core\.py:7 in core\.mean — mean\(\[1, 2, 3, 4\]\): expected 2\.5, "
            r"got 2",
            "Got:\n    2",
        ),
    ],
    ids=["pytest", "unittest", "doctest"],
)
def test_python_runners_for_real(stats: Path, command: list[str], pattern: str, shown: str) -> None:
    output, code = run([sys.executable, *command], stats)

    assert code != 0, output
    assert re.fullmatch(pattern, summary(output, code).replace(str(stats), "{dir}")), output
    assert shown in excerpt(output, code)


def test_python_runners_that_pass_for_real(stats: Path) -> None:
    core = stats / "stats" / "core.py"
    core.write_text(CORE.replace("//", "/"), encoding="utf-8")

    pytest_out, pytest_code = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_pytest.py"],
        stats,
    )
    unit_out, unit_code = run([sys.executable, "-m", "unittest", "-q", "tests.test_unit"], stats)
    doc_out, doc_code = run([sys.executable, "-m", "doctest", "stats/core.py"], stats)

    assert (pytest_code, unit_code, doc_code) == (0, 0, 0)
    assert re.fullmatch(r"1 passed in [\d.]+s", summary(pytest_out, 0)), pytest_out
    assert re.fullmatch(r"Ran 1 test in [\d.]+s: OK", summary(unit_out, 0)), unit_out
    assert summary(doc_out, 0) == ""


CARGO_LIB = """\
pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_two_numbers() {
        assert_eq!(add(1, 2), 3);
    }
}
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_cargo_test_for_real(tmp_path: Path) -> None:
    crate = tmp_path / "calc"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n', encoding="utf-8"
    )
    (crate / "src" / "lib.rs").write_text(CARGO_LIB, encoding="utf-8")
    env = {"CARGO_TARGET_DIR": str(tmp_path / "target"), "CARGO_TERM_COLOR": "never"}

    done = subprocess.run(
        ["cargo", "test", "--offline", "-q"],
        cwd=crate,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=280,
        check=False,
    )

    assert done.returncode == 101, done.stdout
    assert summary(done.stdout, done.returncode) == (
        "tests::adds_two_numbers FAILED — panicked at src/lib.rs:11:9: assertion "
        "`left == right` failed"
    )
    assert "  left: -1" in excerpt(done.stdout, done.returncode)


GO_TEST = """\
package stats

import "testing"

func TestMean(t *testing.T) {
	if got := Mean([]float64{1, 2, 3, 4}); got != 2.5 {
		t.Errorf("Mean([1 2 3 4]) = %v, want 2.5", got)
	}
}
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
def test_go_test_for_real(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/stats\n\ngo 1.20\n", encoding="utf-8")
    (tmp_path / "stats.go").write_text(
        "package stats\n\nfunc Mean(v []float64) float64 { return v[0] }\n", encoding="utf-8"
    )
    (tmp_path / "stats_test.go").write_text(GO_TEST, encoding="utf-8")

    output, code = run(["go", "test", "./..."], tmp_path)

    assert code == 1, output
    assert summary(output, code) == (
        "--- FAIL: TestMean (0.00s) — stats_test.go:7: Mean([1 2 3 4]) = 1, want 2.5"
    )
