"""Guards: given a task and the agent's change, these are the limits it broke (seed §4.2, §5)."""

from __future__ import annotations

import pytest

from memento_gh.changes import FileChange
from memento_gh.engine.guards import (
    BINARY_CHANGE_LINES,
    DIFF_TOO_LARGE,
    FILE_TOO_LARGE,
    GUARD_FILE,
    OUTSIDE_CONTEXT,
    PROTECTED,
    Room,
    Violation,
    check_guards,
    diff_lines,
    protected_paths,
    show_sizes,
)
from memento_gh.plan.model import Task
from memento_gh.plan.scanner import parse
from testing.plans import SEED_PLAN, phase_block, plan_text, task_block

PROTECTED_DOCS = protected_paths("docs")


def seed_task(task_id: str) -> Task:
    found = parse(SEED_PLAN).task(task_id)
    assert found is not None
    return found


def make_task(context: str, guard: str | None = None) -> Task:
    fields = {"verify": "`true`", "context_files": context}
    if guard is not None:
        fields["guard_files"] = guard
    plan = parse(plan_text([phase_block(1, "One", [task_block("T-1", fields=fields)])]))
    return plan.tasks[0]


def modified(path: str, added: int = 1, removed: int = 1) -> FileChange:
    return FileChange(path, "modified", added, removed, binary=False)


def check(changes: list[FileChange], task: Task, limit: int = 200) -> list[tuple[str, str | None]]:
    found = check_guards(changes, task, max_diff_lines=limit, protected=PROTECTED_DOCS)
    return [(violation.rule, violation.path) for violation in found]


# The seed's T-101: context [src/db/schema.ts, src/db/migrations/], guard [src/auth/*].
SEED_T101_CASES = [
    ("schema edited", [modified("src/db/schema.ts")], []),
    ("new migration", [FileChange("src/db/migrations/002.sql", "untracked", 5, 0, False)], []),
    ("nested migration", [modified("src/db/migrations/v2/003.sql")], []),
    ("guard file", [modified("src/auth/jwt.ts")], [(GUARD_FILE, "src/auth/jwt.ts")]),
    ("outside", [modified("src/db/queries.ts")], [(OUTSIDE_CONTEXT, "src/db/queries.ts")]),
    (
        "deleted outside",
        [FileChange("src/routes/users.ts", "deleted", 0, 30, False)],
        [(OUTSIDE_CONTEXT, "src/routes/users.ts")],
    ),
    (
        "deleted guard",
        [FileChange("src/auth/index.ts", "deleted", 0, 3, False)],
        [(GUARD_FILE, "src/auth/index.ts")],
    ),
    (
        "renamed out of context",
        [FileChange("src/db/migrations/001.sql", "renamed", 0, 0, False, "src/db/old.sql")],
        [(OUTSIDE_CONTEXT, "src/db/old.sql")],
    ),
    (
        "renamed into a guard file",
        [FileChange("src/auth/schema.ts", "renamed", 0, 0, False, "src/db/schema.ts")],
        [(GUARD_FILE, "src/auth/schema.ts")],
    ),
    (
        "renamed within context",
        [FileChange("src/db/migrations/b.sql", "renamed", 0, 0, False, "src/db/migrations/a.sql")],
        [],
    ),
    (
        "plan edited",
        [modified("docs/MASTER_PLAN.md")],
        [(PROTECTED, "docs/MASTER_PLAN.md")],
    ),
    (
        "workflow added",
        [FileChange(".github/workflows/x.yml", "untracked", 9, 0, False)],
        [(PROTECTED, ".github/workflows/x.yml")],
    ),
    (
        "two problems, sorted by path",
        [modified("src/z.ts"), modified("src/auth/a.ts"), modified("src/db/schema.ts")],
        [(GUARD_FILE, "src/auth/a.ts"), (OUTSIDE_CONTEXT, "src/z.ts")],
    ),
]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [case[1:] for case in SEED_T101_CASES],
    ids=[case[0] for case in SEED_T101_CASES],
)
def test_seed_task_t101(changes: list[FileChange], expected: list[tuple[str, str]]) -> None:
    assert check(changes, seed_task("T-101")) == expected


def test_no_change_breaks_nothing() -> None:
    assert check([], seed_task("T-101")) == []


@pytest.mark.parametrize(
    "path",
    [
        "docs/MASTER_PLAN.md",
        "docs/PROJECT_MAP.md",
        "docs/TICK_STATUS.md",
        "docs/HUMAN_NOTES.md",
        "docs/STATE.md",
        "docs/memory/decisions.md",
        ".memento/worker_prompt.md",
        ".memento_ignore",
        ".memento_cleanignore",
        ".github/workflows/memento.yml",
        ".git/hooks/pre-commit",
    ],
)
def test_protected_beats_context(path: str) -> None:
    """Even a task whose context_files allow everything may not change memento's files."""
    assert check([modified(path)], make_task("[**]")) == [(PROTECTED, path)]


@pytest.mark.parametrize(
    "path", ["docs/api.md", "docs/memory.md", "src/MASTER_PLAN.md", "github/x.yml", "memento.py"]
)
def test_look_alikes_of_protected_files_are_not_protected(path: str) -> None:
    assert check([modified(path)], make_task("[**]")) == []


def test_protected_beats_guard_files_too_one_violation_per_path() -> None:
    task = make_task("[docs/]", guard="[docs/*]")
    assert check([modified("docs/MASTER_PLAN.md")], task) == [(PROTECTED, "docs/MASTER_PLAN.md")]


def test_guard_file_beats_context() -> None:
    task = make_task("[src/]", guard="[src/core/*]")
    assert check([modified("src/core/a.py")], task) == [(GUARD_FILE, "src/core/a.py")]
    assert check([modified("src/app/a.py")], task) == []


def test_a_task_without_context_files_may_change_nothing() -> None:
    task = make_task("[]")
    assert check([modified("src/a.py")], task) == [(OUTSIDE_CONTEXT, "src/a.py")]


@pytest.mark.parametrize(
    ("plan_dir", "expected"),
    [
        ("docs", "docs/MASTER_PLAN.md"),
        ("docs/", "docs/MASTER_PLAN.md"),
        ("plans/memento", "plans/memento/MASTER_PLAN.md"),
        (".", "MASTER_PLAN.md"),
        ("", "MASTER_PLAN.md"),
        ("./docs", "docs/MASTER_PLAN.md"),
    ],
)
def test_protected_paths_follow_the_plan_directory(plan_dir: str, expected: str) -> None:
    paths = protected_paths(plan_dir)
    assert expected in paths
    assert ".memento/" in paths
    assert ".github/" in paths
    assert ".git/" in paths
    assert any(path.endswith("memory/") for path in paths)


def test_protected_paths_for_a_plan_at_the_root_protect_root_files() -> None:
    changes = [modified("MASTER_PLAN.md"), modified("memory/known-issues.md")]
    found = check_guards(
        changes, make_task("[**]"), max_diff_lines=200, protected=protected_paths(".")
    )
    assert [violation.rule for violation in found] == [PROTECTED, PROTECTED]


DIFF_SIZE_CASES = [
    ("at the limit", [modified("src/a.py", 150, 50)], 200, False),
    ("one over", [modified("src/a.py", 150, 51)], 200, True),
    ("summed over files", [modified("src/a.py", 60, 0), modified("src/b.py", 0, 41)], 100, True),
    ("a deletion counts", [FileChange("src/a.py", "deleted", 0, 101, False)], 100, True),
    ("a new file counts", [FileChange("src/n.py", "untracked", 101, 0, False)], 100, True),
    (
        "a pure rename is free",
        [FileChange("src/b.py", "renamed", 0, 0, False, "src/a.py")],
        0,
        False,
    ),
    ("binary counts", [FileChange("src/logo.png", "modified", 0, 0, True)], 0, True),
    (
        "binary counts a little",
        [FileChange("src/logo.png", "modified", 0, 0, True), modified("src/a.py", 99, 0)],
        100,
        False,
    ),
]


@pytest.mark.parametrize(
    ("changes", "limit", "too_large"),
    [case[1:] for case in DIFF_SIZE_CASES],
    ids=[case[0] for case in DIFF_SIZE_CASES],
)
def test_diff_size(changes: list[FileChange], limit: int, too_large: bool) -> None:
    found = check(changes, make_task("[src/]"), limit=limit)
    assert found == ([(DIFF_TOO_LARGE, None)] if too_large else [])


def test_diff_lines_counts_lines_and_binary_files() -> None:
    changes = [
        modified("a.py", 3, 2),
        FileChange("b.png", "modified", 0, 0, True),
        FileChange("c.bin", "deleted", 0, 0, True),
    ]
    assert diff_lines(changes) == 5 + 2 * BINARY_CHANGE_LINES


MB = 1000**2


def sized(
    changes: list[FileChange], sizes: dict[str, int], limit: int = 200, max_file_size: int = 5 * MB
) -> list[Violation]:
    return check_guards(
        changes,
        make_task("[src/]"),
        max_diff_lines=limit,
        protected=PROTECTED_DOCS,
        max_file_size=max_file_size,
        sizes=sizes,
    )


def binary(path: str, kind: str = "untracked") -> FileChange:
    return FileChange(path, kind, 0, 0, True)


def test_a_file_above_max_file_size_names_its_size_the_limit_and_the_fix() -> None:
    found = sized([modified("src/big.py", 10, 0)], {"src/big.py": 20 * MB})
    assert found == [
        Violation(
            FILE_TOO_LARGE,
            "src/big.py",
            "src/big.py is 20 MB, more than max_file_size (5 MB): keep files that large out of "
            "the repository, or raise max_file_size in the plan's Meta",
        )
    ]


@pytest.mark.parametrize(
    ("change", "size", "rules"),
    [
        pytest.param(modified("src/a.py"), 5 * MB, [], id="at the limit"),
        pytest.param(modified("src/a.py"), 5 * MB + 1, [FILE_TOO_LARGE], id="one byte over"),
        pytest.param(
            FileChange("src/b.py", "renamed", 0, 0, False, "src/a.py"),
            6 * MB,
            [FILE_TOO_LARGE],
            id="a rename's new path",
        ),
        pytest.param(modified("lib/a.py"), 6 * MB, [OUTSIDE_CONTEXT], id="a path rule first"),
        pytest.param(
            FileChange("src/a.py", "deleted", 0, 3, False), 6 * MB, [], id="never a deletion"
        ),
    ],
)
def test_file_size(change: FileChange, size: int, rules: list[str]) -> None:
    found = sized([change], {change.path: size})
    assert [violation.rule for violation in found] == rules


def test_sizes_that_round_alike_are_shown_exactly() -> None:
    assert show_sizes(5 * MB + 1, 5 * MB) == ("5,000,001 bytes", "5,000,000 bytes")
    assert show_sizes(1_250_000, 512, 1) == ("1.2 MB", "512 bytes", "1 byte")


@pytest.mark.parametrize(
    ("size", "lines"),
    [(0, 1), (1, 1), (25_000, 1), (25_001, 2), (2 * MB, 80), (5 * MB, 200), (20 * MB, 800)],
)
def test_a_binary_file_counts_one_line_per_started_25_kB_by_default(size: int, lines: int) -> None:
    assert Room().binary_lines(size) == lines
    assert diff_lines([binary("src/x.bin")], {"src/x.bin": size}) == lines


def test_a_binary_of_max_file_size_takes_the_whole_change() -> None:
    alone = sized([binary("src/x.bin")], {"src/x.bin": 5 * MB})
    with_a_line = sized([binary("src/x.bin"), modified("src/a.py", 1, 0)], {"src/x.bin": 5 * MB})
    assert alone == []
    assert [violation.rule for violation in with_a_line] == [DIFF_TOO_LARGE]
    assert with_a_line[0].message == (
        "the change has 201 changed lines (+1 -0, 1 binary file of 5 MB counted as 200 lines), "
        "more than max_diff_lines (200): a possible full-file rewrite"
    )


def test_a_plan_that_allows_larger_files_counts_each_binary_less() -> None:
    sizes = {f"src/{index}.bin": 2 * MB for index in range(3)}
    changes = [binary(path) for path in sizes]
    assert [violation.rule for violation in sized(changes, sizes)] == [DIFF_TOO_LARGE]
    assert sized(changes, sizes, max_file_size=50 * MB) == []
    assert diff_lines(changes, sizes, Room(200, 50 * MB)) == 3 * 8


def test_the_size_violation_comes_after_the_path_violations() -> None:
    found = check([modified("src/a.py", 300, 0), modified("lib/b.py")], make_task("[src/]"))
    assert found == [(OUTSIDE_CONTEXT, "lib/b.py"), (DIFF_TOO_LARGE, None)]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            modified("src/auth/jwt.py"),
            Violation(
                GUARD_FILE,
                "src/auth/jwt.py",
                "src/auth/jwt.py is a guard file of T-1 (guard_files: src/auth/*) "
                "and it was modified",
            ),
        ),
        (
            FileChange("lib/x.py", "deleted", 0, 4, False),
            Violation(
                OUTSIDE_CONTEXT,
                "lib/x.py",
                "lib/x.py is outside the context_files of T-1 and it was deleted",
            ),
        ),
        (
            FileChange("lib/new.py", "untracked", 4, 0, False),
            Violation(
                OUTSIDE_CONTEXT,
                "lib/new.py",
                "lib/new.py is outside the context_files of T-1 and it was created",
            ),
        ),
        (
            FileChange("src/app.py", "renamed", 0, 0, False, "lib/app.py"),
            Violation(
                OUTSIDE_CONTEXT,
                "lib/app.py",
                "lib/app.py is outside the context_files of T-1 and it was renamed to src/app.py",
            ),
        ),
        (
            modified("docs/TICK_STATUS.md"),
            Violation(
                PROTECTED,
                "docs/TICK_STATUS.md",
                "docs/TICK_STATUS.md is one of memento's own files (docs/TICK_STATUS.md), "
                "which no task may change, and it was modified",
            ),
        ),
        (
            modified("src/a.py", 180, 30),
            Violation(
                DIFF_TOO_LARGE,
                None,
                "the change has 210 changed lines (+180 -30), more than max_diff_lines (200): "
                "a possible full-file rewrite",
            ),
        ),
    ],
)
def test_messages_name_the_path_and_the_reason(change: FileChange, expected: Violation) -> None:
    task = make_task("[src/]", guard="[src/auth/*]")
    found = check_guards([change], task, max_diff_lines=200, protected=PROTECTED_DOCS)
    assert found == [expected]


def test_the_size_message_counts_binary_files() -> None:
    changes = [FileChange("a.png", "added", 0, 0, True), FileChange("b.png", "added", 0, 0, True)]
    found = check_guards(changes, make_task("[**]"), max_diff_lines=1, protected=())
    assert found[0].message.startswith("the change has 2 changed lines (+0 -0, 2 binary files)")


def test_a_path_appearing_twice_is_reported_once() -> None:
    changes = [
        FileChange("lib/b.py", "renamed", 0, 0, False, "lib/a.py"),
        FileChange("lib/a.py", "untracked", 3, 0, False),
    ]
    found = check(changes, make_task("[src/]"))
    assert found == [(OUTSIDE_CONTEXT, "lib/a.py"), (OUTSIDE_CONTEXT, "lib/b.py")]


def test_a_nested_repository_is_checked_as_a_whole_directory() -> None:
    nested = FileChange("src/vendor/", "modified", 0, 0, False)
    assert check([nested], make_task("[src/vendor/]")) == []
    assert check([nested], make_task("[src/vendor/a.py]")) == [(OUTSIDE_CONTEXT, "src/vendor/")]
    assert check([nested], make_task("[src/]", guard="[src/vendor]")) == [
        (GUARD_FILE, "src/vendor/")
    ]


def test_the_bytes_of_the_files_a_change_adds_or_changes_are_held_to_max_diff_bytes() -> None:
    """Text and binary alike, each at its whole size; a deleted file holds nothing."""
    changes = [
        FileChange("src/a.txt", "untracked", 1, 0, False),
        FileChange("src/b.bin", "modified", 0, 0, True),
        FileChange("src/gone.txt", "deleted", 0, 1, False),
    ]
    sizes = {"src/a.txt": 700, "src/b.bin": 400}
    task = make_task("[src/]")

    found = check_guards(
        changes, task, max_diff_lines=200, protected=(), sizes=sizes, max_diff_bytes=1000
    )
    within = check_guards(
        changes, task, max_diff_lines=200, protected=(), sizes=sizes, max_diff_bytes=1100
    )

    assert [violation.rule for violation in found] == ["diff_too_many_bytes"]
    assert found[0].message.startswith(
        "the files the change adds or changes hold 1.1 kB (2 files, the largest src/a.txt), "
        "more than max_diff_bytes (1 kB)"
    )
    assert within == []
