"""The tick against an agent that fills the repository (the wall around the agent: file size
and binary changes are limited). ``max_file_size`` bounds every file the change adds or
changes; ``max_diff_lines`` counts a binary file by its size, so that no number of binary
files below the size limit fits in one change either."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testing.agents import Action, tamper_command, tamper_env
from testing.ticks import Project, good, make_project, one_phase, plan_of, task

MB = 1000**2
DATA = "src/data.bin"


def data_project(tmp_path: Path, files: dict[str, str] | None = None, **meta: str) -> Project:
    """T-101 may write ``src/a.py``, ``src/data.bin`` and anything below ``src/data/``."""
    t101 = task("T-101", context_files=f"[src/a.py, {DATA}, src/data/]")
    plan = plan_of([one_phase(t101, task("T-102"))], total_tasks="2", **meta)
    return make_project(tmp_path, plan, files=files)


def tamper_tick(project: Project, steps: list[Action]) -> Any:
    done = project.memento("tick", "--agent-cmd", tamper_command(), env=tamper_env(steps))
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def rolled_back_because(project: Project, phrase: str, *paths: str) -> None:
    entry = project.entries()[-1]
    assert entry.task_id == "T-101" and entry.outcome == "failed", entry
    assert phrase in (entry.error_analysis or ""), entry.error_analysis
    for path in paths:
        assert not (project.root / path).exists(), path
        assert not project.ever_committed(path), path


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("meta", "step", "message"),
    [
        pytest.param(
            {},
            {"blob": DATA, "size": 20 * MB},
            f"{DATA} is 20 MB, more than max_file_size (5 MB)",
            id="a 20 MB binary, the default limit",
        ),
        pytest.param(
            {"max_file_size": "1MB"},
            {"long_lines": DATA, "lines": 12, "width": 100_000},
            f"{DATA} is 1.2 MB, more than max_file_size (1 MB)",
            id="a text of few lines, the plan's limit",
        ),
    ],
)
def test_a_file_above_max_file_size_fails_the_task_and_goes(
    tmp_path: Path, meta: dict[str, str], step: Action, message: str
) -> None:
    project = data_project(tmp_path, **meta)

    tamper_tick(project, [*good("T-101"), step])

    rolled_back_because(project, message, DATA)


@pytest.mark.timeout(60)
def test_a_tracked_file_that_grows_past_max_file_size_fails_the_task(tmp_path: Path) -> None:
    project = data_project(tmp_path, {"src/a.py": "A = 0\n"}, max_file_size="100kB")

    tamper_tick(project, [{"long_lines": "src/a.py", "lines": 2, "width": 100_000}])

    rolled_back_because(project, "src/a.py is 200 kB, more than max_file_size (100 kB)")
    assert (project.root / "src/a.py").read_text(encoding="utf-8") == "A = 0\n"


@pytest.mark.timeout(60)
def test_binary_files_below_the_size_limit_count_in_the_diff_guard(tmp_path: Path) -> None:
    """Three binaries of 2 MB: each below max_file_size, together more than one change may
    hold (a binary of max_file_size counts as max_diff_lines lines)."""
    project = data_project(tmp_path)
    blobs = [{"blob": f"src/data/part_{index}.bin", "size": 2 * MB} for index in range(3)]

    tamper_tick(project, [*good("T-101"), *blobs])

    rolled_back_because(
        project,
        "the change has 241 changed lines (+1 -0, 3 binary files of 6 MB counted as 240 lines), "
        "more than max_diff_lines (200)",
        *(str(blob["blob"]) for blob in blobs),
    )


@pytest.mark.timeout(60)
def test_long_lined_text_files_below_every_other_limit_are_held_to_max_diff_bytes(
    tmp_path: Path,
) -> None:
    """Ten text files of 4.9 MB, one line each: each below max_file_size, ten lines in all
    under max_diff_lines; the 49 MB they hold is more than one change may bring (issue
    #27, class 6)."""
    project = data_project(tmp_path)
    texts = [
        {"long_lines": f"src/data/part_{index}.txt", "lines": 1, "width": 4_900_000}
        for index in range(10)
    ]

    tamper_tick(project, [*good("T-101"), *texts])

    rolled_back_because(
        project,
        "the files the change adds or changes hold 49 MB (11 files, the largest "
        "src/data/part_0.txt), more than max_diff_bytes (10 MB)",
        *(str(text["long_lines"]) for text in texts),
    )
    assert project.dirty() == []


@pytest.mark.timeout(60)
def test_max_diff_bytes_counts_binary_files_with_the_text_ones(tmp_path: Path) -> None:
    """Under the plan's own 1 MB: a binary of 600 kB (24 lines' worth) and a text of 500 kB
    on two lines pass every other limit, not this one."""
    project = data_project(tmp_path, max_diff_bytes="1MB")
    steps: list[Action] = [
        *good("T-101"),
        {"blob": DATA, "size": 600_000},
        {"long_lines": "src/data/notes.txt", "lines": 2, "width": 250_000},
    ]

    tamper_tick(project, steps)

    rolled_back_because(project, "more than max_diff_bytes (1 MB)", DATA, "src/data/notes.txt")


@pytest.mark.timeout(60)
def test_a_change_within_max_diff_bytes_lands(tmp_path: Path) -> None:
    project = data_project(tmp_path, max_diff_bytes="1MB")
    steps: list[Action] = [
        *good("T-101"),
        {"long_lines": "src/data/notes.txt", "lines": 2, "width": 200_000},
    ]

    tamper_tick(project, steps)

    assert project.marker("T-101") == "x"
    assert "src/data/notes.txt" in project.committed_files()
