"""``memento validate`` through its command line, as a user, a hook or CI runs it.

A real ``memento`` process where its exit is what a test checks (validate ends its process
with ``os._exit``: the output must be flushed first, and the exit code be the result's);
elsewhere the same command line in this process (``testing.cli.call_memento``)."""

from __future__ import annotations

import random
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memento_gh.checks import check_plan_text
from memento_gh.commands.validate import fix_counters
from memento_gh.formats.notes import parse_notes
from memento_gh.formats.project_map import parse_project_map
from memento_gh.plan.model import ERROR, WARNING
from memento_gh.plan.scanner import parse, split_lines
from testing.cli import call_memento, run_memento
from testing.repos import git, init_repo, write

# Line 9 is total_tasks, 10 completed_tasks, 22 the task T-102, 23 its verify line.
PLAN = """\
# MASTER_PLAN: Demo

## Meta
- created: 2025-01-15
- tick_mode: auto          <!-- auto | paused | stopped -->
- max_retries: 3
- stale_lock_timeout: 15min
- clean_strategy: git-clean
- total_tasks: 3           <!-- 自动维护 (kept by the engine) -->
- completed_tasks: 1       <!-- 自动维护 -->

## Phase 1: Foundation
<!-- parallel: true -->
<!-- depends: none -->

- [x] `T-101` [MODULE:db] Setup schema 🎉
  - verify: `pytest -q tests/db`
  - context_files: [src/db/*]
  - estimate: 5min
  - retries: 0

- [ ] `T-102` [MODULE:auth] JWT tokens
  - verify: `pytest -q tests/auth`
  - context_files: [src/auth/*]

## Phase 2: Integration
<!-- parallel: false -->
<!-- depends: Phase 1 -->

- [ ] `T-201` [MODULE:auth] Connect auth to db
  - verify: `pytest -q tests/integration`
  - context_files: [src/auth/*, src/db/*]
  - depends: [T-102]
"""
MAP = "# PROJECT MAP: Demo\n\n## Module Registry\n\n### [MODULE:db]\n\n### [MODULE:auth]\n"
NOTES = "# HUMAN NOTES\n\n### [NOTE] 2025-01-15T15:00:00Z → T-201\nUse Redis.\n"
NO_VERIFY = PLAN.replace("  - verify: `pytest -q tests/auth`\n", "")
WRONG_TOTAL = PLAN.replace("total_tasks: 3 ", "total_tasks: 4 ")
PLAN_PATH = "docs/MASTER_PLAN.md"
PROBLEM_LINE = re.compile(r"(?P<path>[^:]+):(?P<line>\d+): (?P<severity>error|warning): \S.*")
MISSING_FILE_LINE = re.compile(r"(?P<path>[^:]+): error: \S.*")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder with a valid plan, map and notes under docs/."""
    root = tmp_path / "repo"
    write(root, PLAN_PATH, PLAN)
    write(root, "docs/PROJECT_MAP.md", MAP)
    write(root, "docs/HUMAN_NOTES.md", NOTES)
    return root


def assert_no_crash(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr
    assert "internal error" not in done.stderr


# -- output and exit codes -------------------------------------------------------------


def test_a_valid_repository_prints_nothing_and_exits_0(repo: Path) -> None:
    done = run_memento("validate", cwd=repo)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.timeout(60)
def test_a_task_model_and_meta_retry_model_are_valid_and_a_bad_one_names_its_line(
    repo: Path,
) -> None:
    with_models = PLAN.replace("- max_retries: 3\n", "- max_retries: 3\n- retry_model: opus\n")
    write(repo, PLAN_PATH, with_models.replace("  - retries: 0\n", "  - model: haiku\n"))
    assert call_memento("validate", cwd=repo).stdout == ""

    write(repo, PLAN_PATH, with_models.replace("  - retries: 0\n", "  - model: -x\n"))
    done = call_memento("validate", cwd=repo)

    assert done.returncode == 1
    assert done.stdout.startswith("docs/MASTER_PLAN.md:21: error: T-101 model: a model is one")


def test_warnings_alone_exit_0(repo: Path) -> None:
    write(repo, PLAN_PATH, WRONG_TOTAL)

    done = run_memento("validate", cwd=repo)

    assert done.returncode == 0
    assert done.stdout == (
        "docs/MASTER_PLAN.md:9: warning: total_tasks says '4' but the plan has 3; "
        "`memento validate --fix` rewrites it\n"
    )
    assert done.stderr == "0 errors, 1 warning\n"


def test_errors_exit_1_with_one_path_line_severity_message_line_each(repo: Path) -> None:
    write(repo, PLAN_PATH, NO_VERIFY)
    write(repo, "docs/PROJECT_MAP.md", MAP + "\n### [MODULE: api]\n")
    write(repo, "docs/HUMAN_NOTES.md", NOTES + "\n### [NOTE] now → T-102\n\n### [NOTE] x\n")

    done = run_memento("validate", cwd=repo)

    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert all(PROBLEM_LINE.fullmatch(line) for line in lines), lines
    found = [(m["path"], int(m["line"]), m["severity"]) for m in map(PROBLEM_LINE.match, lines)]
    assert found == [
        ("docs/MASTER_PLAN.md", 22, ERROR),
        ("docs/PROJECT_MAP.md", 9, ERROR),
        ("docs/HUMAN_NOTES.md", 6, ERROR),
        ("docs/HUMAN_NOTES.md", 8, ERROR),
    ]
    assert lines[0] == (
        "docs/MASTER_PLAN.md:22: error: T-102 has no 'verify:' line; every task needs one "
        "(a command whose exit code 0 proves it done)"
    )
    assert "note time: 'now' is not an ISO-8601 time" in lines[2]
    assert "malformed note header" in lines[3]
    assert done.stderr == "4 errors, 0 warnings\n"
    assert_no_crash(done)


def test_a_note_for_a_task_the_plan_lacks_is_a_warning_that_says_what_to_do(repo: Path) -> None:
    write(repo, "docs/HUMAN_NOTES.md", NOTES.replace("T-201", "T-999"))

    done = call_memento("validate", "docs/HUMAN_NOTES.md", cwd=repo)

    assert done.returncode == 0
    assert done.stdout == (
        "docs/HUMAN_NOTES.md:3: warning: this note is for T-999, which is not a task in "
        "MASTER_PLAN.md; correct its target or move it under '## Archive'\n"
    )


def test_paths_are_shown_as_given_relative_to_the_current_folder(repo: Path) -> None:
    write(repo, PLAN_PATH, WRONG_TOTAL)
    elsewhere = repo.parent / "elsewhere"
    elsewhere.mkdir()

    given_relative = call_memento("validate", "docs/MASTER_PLAN.md", cwd=repo)
    from_parent = call_memento("-C", "repo", "validate", cwd=repo.parent)
    absolute = call_memento("validate", repo / PLAN_PATH, cwd=elsewhere)

    assert given_relative.stdout.startswith("docs/MASTER_PLAN.md:9: warning: ")
    assert from_parent.stdout.startswith("repo/docs/MASTER_PLAN.md:9: warning: ")
    # outside the current folder a relative path would be '../repo/...': the path stays whole
    assert absolute.stdout.startswith(f"{repo / PLAN_PATH}:9: warning: ")


def test_file_arguments_are_relative_to_the_folder_given_with_C(repo: Path) -> None:
    write(repo, PLAN_PATH, NO_VERIFY)

    done = call_memento("-C", "repo", "validate", "docs/MASTER_PLAN.md", cwd=repo.parent)

    assert done.returncode == 1
    assert done.stdout.startswith("repo/docs/MASTER_PLAN.md:22: error: T-102 has no 'verify:'")


def test_plan_dir_points_at_another_folder(tmp_path: Path) -> None:
    write(tmp_path, "plans/MASTER_PLAN.md", WRONG_TOTAL)

    default = call_memento("validate", cwd=tmp_path)
    flag = call_memento("--plan-dir", "plans", "validate", cwd=tmp_path)
    environment = call_memento("validate", cwd=tmp_path, env={"MEMENTO_PLAN_DIR": "plans"})

    assert default.returncode == 1
    assert "docs/MASTER_PLAN.md: no plan here" in default.stderr
    for done in (flag, environment):
        assert done.returncode == 0
        assert done.stdout.startswith("plans/MASTER_PLAN.md:9: warning: total_tasks says '4'")


# -- files that are not there, not text, not memento's ---------------------------------


def test_no_plan_is_one_line_that_names_memento_init(tmp_path: Path) -> None:
    done = call_memento("validate", cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "memento: error: docs/MASTER_PLAN.md: no plan here; run `memento init` to create "
        "one, or pass -C/--plan-dir to point at it\n"
    )


def test_a_named_file_that_is_missing_is_an_error_line_of_its_own(repo: Path) -> None:
    (repo / "docs/HUMAN_NOTES.md").unlink()

    done = call_memento("validate", "docs/MASTER_PLAN.md", "docs/HUMAN_NOTES.md", cwd=repo)

    assert done.returncode == 1
    assert done.stdout == (
        "docs/HUMAN_NOTES.md: error: no such file; run `memento init` to create it\n"
    )
    assert MISSING_FILE_LINE.fullmatch(done.stdout.strip())


BROKEN_PLAN = PLAN.encode("utf-8").replace(b"auto", b"au\xfftoo", 1)


@pytest.mark.parametrize(
    ("name", "content", "line", "byte"),
    [
        pytest.param(PLAN_PATH, BROKEN_PLAN, 5, BROKEN_PLAN.index(b"\xff"), id="plan"),
        pytest.param("docs/HUMAN_NOTES.md", b"# HUMAN NOTES\n\n\xc3(\n", 3, 15, id="notes"),
        pytest.param("docs/PROJECT_MAP.md", b"\xfe\xff\x00#", 1, 0, id="map-utf16"),
    ],
)
def test_a_file_that_is_not_utf8_is_named_with_its_line(
    repo: Path, name: str, content: bytes, line: int, byte: int
) -> None:
    write(repo, name, content)

    done = call_memento("validate", cwd=repo)

    assert done.returncode == 1
    assert (
        f"{name}:{line}: error: the file is not valid UTF-8 (byte {byte}); save it as UTF-8\n"
        in done.stdout
    )
    assert "Traceback" not in done.stderr


def test_a_file_that_is_not_utf8_does_not_stop_the_check_of_the_others(repo: Path) -> None:
    write(repo, "docs/PROJECT_MAP.md", b"# PROJECT MAP\n\xff\n")
    write(repo, "docs/HUMAN_NOTES.md", b"# HUMAN NOTES\n\n### [NOTE] yesterday -> T-101\n")

    done = call_memento("validate", cwd=repo)

    assert done.returncode == 1
    assert "docs/PROJECT_MAP.md:2: error: the file is not valid UTF-8" in done.stdout
    assert "docs/HUMAN_NOTES.md:3: error: note time" in done.stdout
    assert_no_crash(done)


def test_a_file_memento_does_not_know_is_refused_with_the_names_it_knows(repo: Path) -> None:
    write(repo, "README.md", "# hello\n")

    done = call_memento("validate", "README.md", cwd=repo)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "memento: error: README.md: memento does not know this file; it checks "
        "MASTER_PLAN.md, PROJECT_MAP.md, HUMAN_NOTES.md\n"
    )


def test_a_folder_given_as_a_file_is_refused(repo: Path) -> None:
    (repo / "other" / "MASTER_PLAN.md").mkdir(parents=True)

    docs = call_memento("validate", "docs", cwd=repo)
    named_like_a_plan = call_memento("validate", "other/MASTER_PLAN.md", cwd=repo)
    fixed = call_memento("validate", "--fix", "other/MASTER_PLAN.md", cwd=repo)

    assert docs.returncode == 1
    assert docs.stderr.startswith("memento: error: docs: memento does not know this file")
    for done in (named_like_a_plan, fixed):
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == "memento: error: other/MASTER_PLAN.md: is a directory, not a file\n"


# -- --fix -------------------------------------------------------------------------------


def messy_plan(eol: str) -> bytes:
    """PLAN with wrong counters, odd bytes worth keeping, and a comment at the very end."""
    text = "\ufeff" + (
        PLAN.replace("total_tasks: 3 ", "total_tasks: 7 ")
        .replace("completed_tasks: 1 ", "completed_tasks: 0 ")
        .replace("Connect auth to db", "Connect auth to db  \t")  # trailing whitespace
        .replace("- [ ] `T-102`", "-   [ ] `T-102`")  # unusual spacing after the bullet
    )
    text += "\n<!-- kept: the end of the file, no final newline -->"
    return text.replace("\n", eol).encode("utf-8")


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_fix_rewrites_only_the_counter_values(repo: Path, eol: str) -> None:
    before = messy_plan(eol)
    write(repo, PLAN_PATH, before)
    expected = before.replace(
        f"- total_tasks: 7           <!-- 自动维护 (kept by the engine) -->{eol}".encode(),
        f"- total_tasks: 3           <!-- 自动维护 (kept by the engine) -->{eol}".encode(),
    ).replace(
        f"- completed_tasks: 0       <!-- 自动维护 -->{eol}".encode(),
        f"- completed_tasks: 1       <!-- 自动维护 -->{eol}".encode(),
    )
    # the expectation itself replaced both lines
    assert expected.count(b"total_tasks: 3 ") == expected.count(b"completed_tasks: 1 ") == 1

    fixed = call_memento("validate", "--fix", cwd=repo)

    assert (repo / PLAN_PATH).read_bytes() == expected
    assert fixed.returncode == 0
    assert fixed.stdout == (
        "docs/MASTER_PLAN.md:9: fixed total_tasks: 3\n"
        "docs/MASTER_PLAN.md:10: fixed completed_tasks: 1\n"
    )
    again = call_memento("validate", cwd=repo)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_fix_replaces_a_counter_that_is_not_a_number(repo: Path) -> None:
    # "many" takes three of the spaces before the comment, which keeps its column
    write(repo, PLAN_PATH, PLAN.replace("total_tasks: 3    ", "total_tasks: many "))
    before = call_memento("validate", cwd=repo)
    assert before.returncode == 1

    fixed = call_memento("validate", "--fix", cwd=repo)

    assert (repo / PLAN_PATH).read_text(encoding="utf-8") == PLAN
    assert (fixed.returncode, fixed.stdout) == (0, "docs/MASTER_PLAN.md:9: fixed total_tasks: 3\n")


def test_fix_leaves_a_right_plan_alone_and_still_reports_other_problems(repo: Path) -> None:
    write(repo, PLAN_PATH, NO_VERIFY.replace("total_tasks: 3 ", "total_tasks: 2 "))
    path = repo / PLAN_PATH

    fixed = call_memento("validate", "--fix", cwd=repo)

    assert fixed.returncode == 1
    assert fixed.stdout.splitlines() == [
        "docs/MASTER_PLAN.md:9: fixed total_tasks: 3",
        "docs/MASTER_PLAN.md:22: error: T-102 has no 'verify:' line; every task needs one "
        "(a command whose exit code 0 proves it done)",
    ]
    assert path.read_text(encoding="utf-8") == NO_VERIFY
    untouched = path.stat().st_mtime_ns

    again = call_memento("validate", "--fix", cwd=repo)

    assert again.returncode == 1
    assert "fixed" not in again.stdout
    assert path.stat().st_mtime_ns == untouched


def test_fix_cannot_be_combined_with_index(repo: Path) -> None:
    write(repo, PLAN_PATH, WRONG_TOTAL)

    done = call_memento("validate", "--fix", "--index", cwd=repo)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "memento: error: --fix rewrites files in the working tree; it cannot be used with --index\n"
    )
    assert (repo / PLAN_PATH).read_text(encoding="utf-8") == WRONG_TOTAL


# -- --index -----------------------------------------------------------------------------


def test_index_checks_what_is_staged_not_the_working_tree(repo: Path) -> None:
    init_repo(repo)
    git(repo, "add", "docs")
    write(repo, PLAN_PATH, NO_VERIFY)

    staged = call_memento("validate", "--index", cwd=repo)
    working = call_memento("validate", cwd=repo)

    assert (staged.returncode, staged.stdout, staged.stderr) == (0, "", "")
    assert working.returncode == 1
    assert working.stdout.startswith("docs/MASTER_PLAN.md:22: error: T-102 has no 'verify:'")

    git(repo, "add", PLAN_PATH)
    write(repo, PLAN_PATH, PLAN)

    staged = call_memento("validate", "--index", PLAN_PATH, cwd=repo)
    working = call_memento("validate", PLAN_PATH, cwd=repo)

    assert staged.returncode == 1
    assert staged.stdout.startswith("docs/MASTER_PLAN.md:22: error: T-102 has no 'verify:'")
    assert (working.returncode, working.stdout) == (0, "")


def test_index_reads_the_staged_map_for_the_module_check(repo: Path) -> None:
    init_repo(repo)
    write(repo, PLAN_PATH, PLAN.replace("[MODULE:db] Setup", "[MODULE:api] Setup"))
    git(repo, "add", "docs")
    write(repo, "docs/PROJECT_MAP.md", MAP + "\n### [MODULE:api]\n")

    staged = call_memento("validate", "--index", PLAN_PATH, cwd=repo)
    working = call_memento("validate", PLAN_PATH, cwd=repo)

    assert staged.stdout.startswith(
        "docs/MASTER_PLAN.md:16: warning: [MODULE:api] is not registered in PROJECT_MAP.md"
    )
    assert (working.returncode, working.stdout) == (0, "")


def test_index_names_a_file_that_is_not_staged(repo: Path) -> None:
    init_repo(repo)

    done = call_memento("validate", "--index", PLAN_PATH, cwd=repo)

    assert done.returncode == 1
    assert done.stdout == (
        "docs/MASTER_PLAN.md: error: not in git's index; `git add` it, or check the working "
        "tree without --index\n"
    )


def test_index_outside_a_git_repository_says_so(repo: Path) -> None:
    done = call_memento("validate", "--index", cwd=repo)

    assert (done.returncode, done.stdout) == (1, "")
    assert "not inside a git repository; run `git init` first" in done.stderr
    assert_no_crash(done)


# -- colour ------------------------------------------------------------------------------


def test_colour_only_when_forced_and_never_with_no_color(repo: Path) -> None:
    write(repo, PLAN_PATH, NO_VERIFY.replace("total_tasks: 3 ", "total_tasks: 4 "))

    plain = call_memento("validate", cwd=repo, env={"NO_COLOR": ""})
    forced = call_memento("validate", cwd=repo, env={"NO_COLOR": "", "FORCE_COLOR": "1"})
    refused = call_memento("validate", cwd=repo, env={"NO_COLOR": "1", "FORCE_COLOR": "1"})

    assert "\033[" not in plain.stdout  # a pipe is not a terminal
    assert "\033[" not in refused.stdout
    assert refused.stdout == plain.stdout
    assert "docs/MASTER_PLAN.md:9: \033[33;1mwarning\033[0m: total_tasks says '4'" in forced.stdout
    assert "docs/MASTER_PLAN.md:22: \033[31;1merror\033[0m: T-102 has no" in forced.stdout
    assert re.sub(r"\033\[[0-9;]*m", "", forced.stdout) == plain.stdout
    assert forced.returncode == plain.returncode == refused.returncode == 1


# -- bad input never crashes ---------------------------------------------------------------

PIECES = [
    "`",
    "[",
    "]",
    "-",
    "~",
    "!",
    ":",
    "#",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\ufeff",
    "\x00",
    "é",
    "🎉",
    "中",
    "```",
    "~~~~",
    "<!--",
    "-->",
    "    ",
    "> ",
    "1. ",
    "- [ ] ",
    "- [~] `T-301` [MODULE:",
    # whole lines: after a task line or a field line, a field line is the task's
    "\n## Phase 2: Again\n",
    "\n## Phase 3: More\n<!-- depends: Phase 2 -->\n",
    "\n<!-- depends: Phase 3 -->\n",
    "\n  - depends: [T-201]\n",
    "\n  - claimed: 9999-12-31T23:59:59-14:00 w\n",
    "\n  - retries: 99999999999999999999\n",
    "\n- total_tasks: -1\n",
    "\n- created: 0001-01-01T00:00:00+14:00\n",
    "\n## Meta\n",
    "\n<div>\n",
    "\n### [NOTE] 2025-01-15T15:00:00 → T-102\n",
    "\n### [MODULE:db]\n",
]


@st.composite
def mutated_plans(draw: st.DrawFn) -> str:
    """PLAN after a few random insertions, deletions and repeated lines."""
    text = PLAN
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "repeat-line", "any-character"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(PIECES)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        elif action == "repeat-line":
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            line = text[start : len(text) if end < 0 else end + 1]
            text = text[:start] + line + text[start:]
        else:
            text = text[:at] + draw(st.characters(codec="utf-8")) + text[at:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated_plans())
def test_mutated_plans_give_problems_never_exceptions(text: str) -> None:
    plan, problems = check_plan_text(text, text)
    parse_notes(text)
    parse_project_map(text)

    last_line = max(1, len(plan.lines))
    for problem in problems:
        assert 1 <= problem.line <= last_line, problem
        assert problem.severity in (ERROR, WARNING)
        # one problem, one output line, whatever the plan holds
        assert problem.message and problem.message.splitlines() == [problem.message]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated_plans())
def test_fixing_the_counters_of_a_mutated_plan_changes_only_their_values(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "MASTER_PLAN.md"
        path.write_bytes(text.encode("utf-8"))
        fix_counters(path)
        after = path.read_bytes().decode("utf-8")

    plan = parse(text)
    counters = {entry.line for key, entry in plan.meta.items() if key.endswith("_tasks")}
    old_lines, new_lines = split_lines(text), split_lines(after)
    assert old_lines[1] == new_lines[1]  # the same line endings, so the same lines
    for number, (old, new) in enumerate(zip(old_lines[0], new_lines[0], strict=True)):
        assert old == new or number in counters, (number, old, new)
    _, problems = check_plan_text(after, None)
    assert not [p for p in problems if p.severity == WARNING and " says " in p.message]


@pytest.mark.parametrize("seed", range(8))
def test_mutated_bytes_through_the_real_command_exit_0_or_1_without_a_traceback(
    repo: Path, seed: int
) -> None:
    chance = random.Random(seed)
    data = bytearray(PLAN.encode("utf-8"))
    for _ in range(chance.randint(1, 12)):
        at = chance.randrange(len(data) + 1)
        if chance.random() < 0.6:
            data[at:at] = chance.choice(
                [bytes([chance.randrange(256)]), b"\xff", b"\xc3", b"`", b"[", b"\r", b"-->"]
            )
        else:
            del data[at : at + chance.randint(1, 30)]
    write(repo, PLAN_PATH, bytes(data))
    args = ["validate", "--fix"] if seed % 2 else ["validate"]

    done = run_memento(*args, cwd=repo)

    assert_no_crash(done)
    assert done.returncode in (0, 1), done.stderr
    for line in done.stdout.splitlines():
        assert PROBLEM_LINE.fullmatch(line) or re.fullmatch(r"\S+:\d+: fixed \w+: \d+", line)
