"""``memento status`` and ``memento next`` through their command line (run in the test's
process, ``testing.cli.call_memento``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.cli import call_memento
from testing.plans import DEFAULT_FIELDS, DEFAULT_META, phase_block, plan_text, task_block

MIXED = plan_text(
    [
        phase_block(
            1,
            "Foundation",
            [
                task_block("T-101", "x", "db", "Setup schema"),
                task_block("T-102", "-", "auth", "Old login"),
                task_block(
                    "T-103", "!", "auth", "JWT tokens", fields={**DEFAULT_FIELDS, "retries": "3"}
                ),
            ],
        ),
        phase_block(
            2,
            "Integration",
            [
                task_block(
                    "T-201",
                    "~",
                    "api",
                    "Wire the routes",
                    fields={**DEFAULT_FIELDS, "claimed": "2025-01-15T14:35:00Z runner-7"},
                ),
                task_block("T-202", " ", "api", "Rate limits"),
            ],
            parallel=True,
            depends=[],
        ),
        phase_block(3, "Polish", [task_block("T-301", " ", "docs", "Docs")], depends=[1]),
    ],
    meta={**DEFAULT_META, "total_ticks": "7"},
    title="Shop",
)


def write_plan(root: Path, text: str, plan_dir: str = "docs") -> Path:
    path = root / plan_dir / "MASTER_PLAN.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def only_task_plan(marker: str, mode: str = "auto", retries: str = "0") -> str:
    fields = {**DEFAULT_FIELDS, "retries": retries}
    return plan_text(
        [
            phase_block(
                1, "Base", [task_block("T-101", "x"), task_block("T-102", marker, fields=fields)]
            ),
            phase_block(2, "Top", [task_block("T-201", "x")], depends=[1]),
        ],
        meta={**DEFAULT_META, "tick_mode": mode},
    )


def test_status_json_reports_the_numbers(tmp_path: Path) -> None:
    write_plan(tmp_path, MIXED)

    done = call_memento("status", "--json", cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")
    data = json.loads(done.stdout)
    assert data["schema"] == 1
    assert data["plan"] == str(Path("docs", "MASTER_PLAN.md"))
    counts = {key: data[key] for key in ("total", "completed", "skipped", "blocked", "running")}
    assert counts == {"total": 6, "completed": 1, "skipped": 1, "blocked": 1, "running": 1}
    assert (data["pending"], data["ticks"], data["errors"], data["mode"]) == (2, 7, 0, "auto")
    assert [(p["name"], p["done"], p["total"]) for p in data["phases"]] == [
        ("Phase 1", 2, 3),
        ("Phase 2", 0, 2),
        ("Phase 3", 0, 1),
    ]
    running = next(task for task in data["tasks"] if task["id"] == "T-201")
    assert running["claimed"] == {"at": "2025-01-15T14:35:00Z", "worker": "runner-7"}
    assert data["next"] == {
        "task": "T-202",
        "reason": "ready",
        "message": "T-202 is next (Phase 2: Integration)",
    }


def test_status_json_keeps_non_ascii_text_readable(tmp_path: Path) -> None:
    write_plan(
        tmp_path, plan_text([phase_block(1, "基础", [task_block("T-1", "x")])], title="Café")
    )

    done = call_memento("status", "--json", cwd=tmp_path)

    assert done.returncode == 0
    assert "基础" in done.stdout
    assert "🎉 ALL TASKS COMPLETE" in done.stdout
    assert json.loads(done.stdout)["title"] == "MASTER_PLAN: Café"


def test_next_json_is_the_next_part_of_status(tmp_path: Path) -> None:
    write_plan(tmp_path, MIXED)

    nxt = call_memento("next", "--json", cwd=tmp_path)
    status = call_memento("status", "--json", cwd=tmp_path)

    assert nxt.returncode == 0
    assert json.loads(nxt.stdout) == json.loads(status.stdout)["next"]
    assert json.loads(nxt.stdout)["task"] == "T-202"


def test_status_text_names_blocked_and_running_tasks(tmp_path: Path) -> None:
    write_plan(tmp_path, MIXED)

    done = call_memento("status", cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == "MASTER_PLAN: Shop"
    assert lines[1] == "mode auto · 1/6 done, 1 skipped (33%) · 1 blocked · 1 running · 7 ticks"
    assert "  T-103 (retries 3/3) JWT tokens" in lines
    assert "  T-201 (claimed 2025-01-15T14:35:00Z by runner-7) Wire the routes" in lines
    assert lines.index("Blocked:") < lines.index("  T-103 (retries 3/3) JWT tokens")
    assert lines.index("Running:") < lines.index(
        "  T-201 (claimed 2025-01-15T14:35:00Z by runner-7) Wire the routes"
    )
    assert any(
        line.startswith("Phase 1: Foundation") and "1/3, 1 skipped" in line for line in lines
    )
    assert lines[-1] == "Next: T-202 is next (Phase 2: Integration)"
    assert "\033[" not in done.stdout


def test_next_names_the_task(tmp_path: Path) -> None:
    write_plan(tmp_path, MIXED)

    done = call_memento("next", cwd=tmp_path)

    assert (done.returncode, done.stdout) == (0, "T-202 is next (Phase 2: Integration)\n")


@pytest.mark.parametrize(
    ("plan", "expected"),
    [
        (
            only_task_plan(" ", mode="paused"),
            "nothing to run: tick_mode is paused; `memento resume` sets it to auto",
        ),
        (
            only_task_plan(" ", mode="stopped"),
            "nothing to run: tick_mode is stopped; `memento resume` sets it to auto",
        ),
        (only_task_plan("-"), "nothing to run: 🎉 ALL TASKS COMPLETE"),
        (
            only_task_plan("!", retries="3"),
            "nothing to run: ⚠️ PIPELINE BLOCKED — Phase 1 has unresolved [!] tasks (T-102)",
        ),
        (
            only_task_plan(" ", retries="3"),
            "nothing to run: T-102 used all 3 retries; `memento retry T-102` lets it run again",
        ),
    ],
    ids=["paused", "stopped", "all-complete", "pipeline-blocked", "retries-exhausted"],
)
def test_next_says_why_nothing_runs(tmp_path: Path, plan: str, expected: str) -> None:
    write_plan(tmp_path, plan)

    done = call_memento("next", cwd=tmp_path)
    status = call_memento("status", cwd=tmp_path)

    assert (done.returncode, done.stdout, done.stderr) == (0, expected + "\n", "")
    assert status.stdout.splitlines()[-1] == "Next: nothing — " + expected.split(": ", 1)[1]


def test_dash_c_selects_the_repository(tmp_path: Path) -> None:
    write_plan(tmp_path / "repo", MIXED)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    done = call_memento("-C", tmp_path / "repo", "status", "--json", cwd=elsewhere)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] == 6


def test_plan_dir_option_and_environment_select_the_folder(tmp_path: Path) -> None:
    write_plan(tmp_path, only_task_plan("x"), plan_dir="docs")
    write_plan(tmp_path, MIXED, plan_dir="planning")

    default = call_memento("status", "--json", cwd=tmp_path, env={"MEMENTO_PLAN_DIR": ""})
    option = call_memento("--plan-dir", "planning", "status", "--json", cwd=tmp_path)
    environ = call_memento("status", "--json", cwd=tmp_path, env={"MEMENTO_PLAN_DIR": "planning"})
    both = call_memento(
        "--plan-dir", "docs", "status", "--json", cwd=tmp_path, env={"MEMENTO_PLAN_DIR": "planning"}
    )

    assert [json.loads(done.stdout)["total"] for done in (default, option, environ, both)] == [
        3,
        6,
        6,
        3,
    ]
    assert json.loads(option.stdout)["plan"] == str(Path("planning", "MASTER_PLAN.md"))


def test_dash_c_and_plan_dir_combine(tmp_path: Path) -> None:
    write_plan(tmp_path / "repo", MIXED, plan_dir="planning")

    done = call_memento("-C", tmp_path / "repo", "--plan-dir", "planning", "next", cwd=tmp_path)

    assert (done.returncode, done.stdout) == (0, "T-202 is next (Phase 2: Integration)\n")


@pytest.mark.parametrize("command", ["status", "next"])
def test_no_plan_is_a_user_error(tmp_path: Path, command: str) -> None:
    done = call_memento(command, cwd=tmp_path)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("memento: error: ")
    assert str(Path("docs", "MASTER_PLAN.md")) in done.stderr
    assert "`memento init`" in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_plan_folder_in_place_of_the_file_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "docs" / "MASTER_PLAN.md").mkdir(parents=True)

    done = call_memento("status", cwd=tmp_path)

    assert done.returncode == 1
    assert done.stderr.startswith("memento: error: ")
    assert "directory" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_plan_with_errors_still_shows_its_status(tmp_path: Path) -> None:
    broken = only_task_plan(" ").replace("  - verify: `true`\n", "", 1)  # T-101 loses verify
    write_plan(tmp_path, broken.replace("- max_retries: 3", "- max_retries: lots"))

    text = call_memento("status", cwd=tmp_path)
    data = call_memento("status", "--json", cwd=tmp_path)
    validate = call_memento("validate", cwd=tmp_path)

    assert validate.stdout.count(": error: ") == 2
    assert text.returncode == 0
    assert "the plan has 2 errors; run `memento validate`" in text.stdout
    assert "T-102 is next" in text.stdout
    assert json.loads(data.stdout)["errors"] == 2


def test_one_error_is_one_error(tmp_path: Path) -> None:
    write_plan(tmp_path, only_task_plan(" ").replace("- max_retries: 3", "- max_retries: lots"))

    done = call_memento("status", cwd=tmp_path)

    assert "the plan has 1 error; run `memento validate`" in done.stdout


def test_a_valid_plan_mentions_no_errors(tmp_path: Path) -> None:
    write_plan(tmp_path, MIXED)

    done = call_memento("status", cwd=tmp_path)

    assert "error" not in done.stdout


ONE_SKIPPED = plan_text(
    [
        phase_block(
            1,
            "Foundation",
            [
                task_block("T-101", "x", "db", "Setup schema"),
                task_block("T-102", "x", "db", "Indexes"),
                task_block("T-103", "-", "auth", "Old login"),
                task_block("T-104", "x", "auth", "JWT tokens"),
            ],
        )
    ],
    meta={**DEFAULT_META, "total_ticks": "5"},
    title="Shop",
)


@pytest.mark.timeout(60)
def test_a_skipped_task_is_counted_apart_from_the_done_ones(tmp_path: Path) -> None:
    write_plan(tmp_path, ONE_SKIPPED)

    text = call_memento("status", cwd=tmp_path).stdout.splitlines()
    data = json.loads(call_memento("status", "--json", cwd=tmp_path).stdout)

    assert text[1] == "mode auto · 3/4 done, 1 skipped (100%) · 0 blocked · 0 running · 5 ticks"
    assert any(line.startswith("Phase 1: Foundation") and "3/4, 1 skipped" in line for line in text)
    assert (data["completed"], data["skipped"], data["total"]) == (3, 1, 4)
    [phase] = data["phases"]
    assert (phase["done"], phase["skipped"], phase["total"]) == (4, 1, 4)
