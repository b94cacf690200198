"""Memory in real ticks: a failure that a later pass fixes becomes one known-issue record,
a retry that fails the same way is told about it, an unrelated task is not, and STATE.md in
every commit names the task the scheduler will pick next."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from memento_gh.formats import memory, memory_learning
from memento_gh.formats.state import parse_state
from testing.plans import phase_block, task_block
from testing.ticks import GUARD, Project, good, make_project, plan_of, task, wrong

KNOWN = "docs/memory/known-issues.md"
MATCHED = "your task's last run failed like this"


def failing_verify(path: str, word: str) -> str:
    """A verify that fails with a named error, the kind of line a signature is made of."""
    return f"`grep -q {word} {path} || {{ echo 'AssertionError: {path} is not done'; exit 1; }}`"


def project(tmp_path: Path) -> Project:
    tasks = [
        task("T-101", verify=failing_verify("src/a.py", "A")),
        task("T-102", verify=failing_verify("src/b.py", "B")),
        task_block(
            "T-104",
            " ",
            "ui",
            "Write module D",
            fields={
                "verify": failing_verify("src/d.py", "D"),
                "context_files": "[src/d.py]",
                "guard_files": f"[{GUARD}]",
                "estimate": "1min",
                "retries": "0",
            },
        ),
    ]
    plan = plan_of([phase_block(1, "Core", tasks, parallel=True)], total_tasks="3")
    empty = {
        f"docs/memory/{name}": memory.empty_file(kind) for kind, name in memory.FILE_NAMES.items()
    }
    return make_project(tmp_path, plan, files=empty)


def known_issues(project: Project) -> tuple[memory.Record, ...]:
    text = (project.root / KNOWN).read_text(encoding="utf-8")
    return memory.parse_memory(text, memory.KNOWN_ISSUE).active()


def next_in_state(project: Project) -> str:
    state = parse_state((project.root / "docs/STATE.md").read_text(encoding="utf-8"))
    return state["Next"].split(" ", 1)[0]


def test_a_failure_fixed_later_is_one_known_issue_and_a_matching_retry_is_told(
    tmp_path: Path,
) -> None:
    proj = project(tmp_path)
    prompts = tmp_path / "outside" / "prompts"
    proj.script(
        {
            "T-101": {"attempts": [wrong("T-101"), good("T-101")]},
            "T-102": {
                "attempts": [
                    [{"save_prompt": str(prompts / "T-102-1.md")}, *wrong("T-102")],
                    [{"save_prompt": str(prompts / "T-102-2.md")}, *good("T-102")],
                ]
            },
            "T-104": [
                {"save_prompt": str(prompts / "T-104.md")},
                {"write": "src/d.py", "text": "D\n"},
            ],
        }
    )

    assert proj.tick().returncode == 0  # T-101 fails
    assert known_issues(proj) == ()
    assert next_in_state(proj) == "T-101"  # its retry comes first
    assert proj.tick().returncode == 0  # T-101 passes: the failure becomes a lesson
    [record] = known_issues(proj)
    assert record.value("Task") == "T-101"
    assert "AssertionError" in (record.key or "")
    assert "{path}" in record.key  # the path is no part of the signature
    assert proj.dirty() == []  # the lesson was committed with the tick
    assert KNOWN in proj.committed_files()
    assert next_in_state(proj) == "T-102"

    assert proj.tick().returncode == 0  # T-102 fails the same way, in another file
    first = (prompts / "T-102-1.md").read_text(encoding="utf-8")
    assert proj.tick().returncode == 0  # its retry is told about the known issue
    retry = (prompts / "T-102-2.md").read_text(encoding="utf-8")
    # the same module's lesson was there before; now it is the retry's own failure
    assert "Known issue" in first
    assert MATCHED not in first
    assert MATCHED in retry
    [record] = known_issues(proj)  # the same error elsewhere: the same record, seen twice
    assert record.value("Seen") == "2"

    assert proj.tick().returncode == 0  # T-104, of another module, never failed
    unrelated = (prompts / "T-104.md").read_text(encoding="utf-8")
    assert "Known issue" not in unrelated
    assert "is not done. Root cause" not in unrelated
    assert next_in_state(proj) == "none"


def test_state_follows_every_tick_and_is_committed(tmp_path: Path) -> None:
    proj = project(tmp_path)
    proj.script({"T-101": good("T-101"), "T-102": good("T-102"), "T-104": []})
    expected = ["T-102", "T-104", "T-104"]  # T-104 fails once (max_retries 3) and comes again
    for wanted in expected:
        assert proj.tick().returncode == 0
        assert next_in_state(proj) == wanted
        assert "docs/STATE.md" in proj.committed_files()
        assert proj.dirty() == []


def test_a_tick_archives_lessons_nobody_verified_for_memory_stale_after(tmp_path: Path) -> None:
    long_ago = datetime.now(timezone.utc) - timedelta(days=60)
    lesson = memory_learning.Lesson(
        memory.PREFERENCE, "Style", "Short functions", memory.Evidence("command", "ruff check")
    )
    stale, _ = memory_learning.learn(memory.empty_file(memory.PREFERENCE), lesson, long_ago)
    plan = plan_of([phase_block(1, "Core", [task("T-101")], parallel=True)], total_tasks="1")
    proj = make_project(tmp_path, plan, files={"docs/memory/preferences.md": stale})
    proj.script({"T-101": [{"save_prompt": str(tmp_path / "prompt.md")}, *good("T-101")]})

    assert proj.tick().returncode == 0

    text = (proj.root / "docs/memory/preferences.md").read_text(encoding="utf-8")
    [record] = memory.parse_memory(text, memory.PREFERENCE).records
    assert record.archived
    assert "Short functions" not in (tmp_path / "prompt.md").read_text(encoding="utf-8")
    assert proj.subjects()[0] == "memento: archive stale lessons"
    assert proj.dirty() == []
