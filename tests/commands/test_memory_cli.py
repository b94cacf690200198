"""``memento memory`` and ``memento learn`` through their command line (run in the test's
process, ``testing.cli.call_memento``), on real git repositories made by ``memento init``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memento_gh.formats.memory import DECISION, parse_memory
from memento_gh.formats.state import parse_state
from testing.cli import call_memento
from testing.repos import commit_all, git, init_repo

DECISIONS = "docs/memory/decisions.md"
RECORD_KEYS = {
    "kind",
    "key",
    "title",
    "text",
    "file",
    "line",
    "task",
    "modules",
    "evidence",
    "confidence",
    "last_verified",
    "seen",
    "archived",
    "stale",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with memento's files from ``memento init``, all committed."""
    root = init_repo(tmp_path / "repo")
    done = call_memento("init", "--name", "Shop", cwd=root)
    assert done.returncode == 0, done.stderr
    (root / "docs/adr").mkdir()
    (root / "docs/adr/001-sessions.md").write_text("# Sessions in Redis\n", encoding="utf-8")
    commit_all(root, "start")
    return root


def memento(repo: Path, *args: str) -> str:
    """Run memento, which must succeed with nothing on stderr; its stdout."""
    done = call_memento(*args, cwd=repo)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def memory_json(repo: Path, *args: str) -> dict[str, object]:
    data = json.loads(memento(repo, "memory", "--json", *args))
    assert isinstance(data, dict)
    return data


def records(repo: Path) -> list[dict[str, object]]:
    found = memory_json(repo)["records"]
    assert isinstance(found, list)
    return found


def last_commit(repo: Path) -> str:
    return git(repo, "log", "-1", "--format=%B")


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- init --------------------------------------------------------------------------------------


def test_init_writes_the_state_and_empty_memory_files_which_validate(repo: Path) -> None:
    state = parse_state((repo / "docs/STATE.md").read_text(encoding="utf-8"))
    assert state["Next"].startswith("T-101 [MODULE:docs] ")
    assert state["Last action"] == "memento init created the plan"
    for name in ("known-issues", "decisions", "preferences"):
        text = (repo / f"docs/memory/{name}.md").read_text(encoding="utf-8")
        assert text.startswith("# ") and "<!--" in text
    assert call_memento("validate", cwd=repo).stdout == ""
    assert git(repo, "status", "--porcelain") == ""


def test_init_describes_the_plan_it_keeps_not_its_example(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs/MASTER_PLAN.md").write_text(
        "# MASTER_PLAN: Mine\n\n## Meta\n- tick_mode: paused\n\n## Phase 1: One\n\n"
        "- [ ] `A-1` Mine\n  - verify: `true`\n  - context_files: [x]\n",
        encoding="utf-8",
    )
    assert call_memento("init", cwd=root).returncode == 0
    state = parse_state((root / "docs/STATE.md").read_text(encoding="utf-8"))
    assert state["Mode"] == "paused"
    assert state["Plan"] == "docs/MASTER_PLAN.md (MASTER_PLAN: Mine)"


# -- memento memory ----------------------------------------------------------------------------


def test_a_new_repository_has_no_lessons(repo: Path) -> None:
    out = memento(repo, "memory")
    assert out == (
        "Known issues (docs/memory/known-issues.md)\n  none\n"
        "Decisions (docs/memory/decisions.md)\n  none\n"
        "Preferences (docs/memory/preferences.md)\n  none\n\n0 active, 0 archived\n"
    )
    data = memory_json(repo)
    assert set(data) == {"schema", "folder", "now", "stale_after", "errors", "counts", "records"}
    assert (data["schema"], data["folder"], data["stale_after"], data["errors"]) == (
        1,
        "docs/memory",
        30 * 86400,
        0,
    )
    assert data["counts"] == {"active": 0, "archived": 0, "stale": 0}
    assert data["records"] == []


# -- memento learn -----------------------------------------------------------------------------


def test_a_decision_is_recorded_committed_and_listed(repo: Path) -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    out = memento(
        repo,
        "learn",
        "decision",
        "Session storage",
        "Keep sessions in Redis",
        "--evidence",
        "docs/adr/001-sessions.md",
        "--why",
        "it is already deployed",
        "--options",
        "Redis, PostgreSQL",
        "--task",
        "T-101",
        "--module",
        "docs",
        "--confidence",
        "medium",
    )

    assert out.startswith(f"learned decision 'Session storage': {DECISIONS}:7 (new record)")
    assert out.rstrip().endswith(")") and "(committed " in out
    assert last_commit(repo) == (
        "memento: learn decision Session storage\n\nMemento-Control: learn\n\n"
    )
    assert git(repo, "status", "--porcelain") == ""
    (record,) = records(repo)
    assert set(record) == RECORD_KEYS
    verified = datetime.fromisoformat(str(record.pop("last_verified")).replace("Z", "+00:00"))
    assert before <= verified <= datetime.now(timezone.utc)
    assert str(record.pop("title")).endswith(": Session storage")
    assert record == {
        "kind": "decision",
        "key": "Session storage",
        "text": "Keep sessions in Redis",
        "file": DECISIONS,
        "line": 7,
        "task": "T-101",
        "modules": ["docs"],
        "evidence": {"kind": "file", "value": "docs/adr/001-sessions.md"},
        "confidence": "medium",
        "seen": 1,
        "archived": False,
        "stale": False,
    }
    listed = memento(repo, "memory")
    assert "  line 7: " in listed
    assert (
        "    T-101 · module docs · confidence medium · verified " in listed
        and "evidence: file `docs/adr/001-sessions.md`" in listed
    )
    assert call_memento("validate", cwd=repo).stdout == ""


def test_the_same_topic_again_updates_its_record(repo: Path) -> None:
    memento(
        repo,
        "learn",
        "decision",
        "Session storage",
        "Redis",
        "--evidence-cmd",
        "redis-cli ping",
        "--why",
        "fast",
    )
    out = memento(
        repo, "learn", "decision", "session   STORAGE", "PostgreSQL", "--evidence-cmd", "psql -l"
    )

    assert "(updated the record of the same topic)" in out
    (record,) = records(repo)
    assert (record["key"], record["text"], record["evidence"]) == (
        "session STORAGE",
        "PostgreSQL",
        {"kind": "command", "value": "psql -l"},
    )
    text = (repo / DECISIONS).read_text(encoding="utf-8")
    assert "**Reason**" not in text  # the reason was the old decision's
    assert git(repo, "log", "--format=%s", "-2").splitlines() == [
        "memento: learn decision session STORAGE",
        "memento: learn decision Session storage",
    ]


def test_preferences_are_kept_one_per_category(repo: Path) -> None:
    memento(repo, "learn", "preference", "Code style", "black", "--evidence-cmd", "black --check .")
    memento(repo, "learn", "preference", "Commits", "small", "--evidence-cmd", "git log")
    memento(repo, "learn", "preference", "code style", "ruff format", "--evidence-cmd", "ruff")
    found = [(r["kind"], r["key"], r["text"], r["task"]) for r in records(repo)]
    assert found == [
        ("preference", "code style", "ruff format", "global"),
        ("preference", "Commits", "small", "global"),
    ]


LEARN = ("learn", "decision", "Sessions", "Redis")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (LEARN, 2, "one of the arguments --evidence --evidence-cmd is required"),
        (
            (*LEARN, "--evidence", "nope.md"),
            1,
            "--evidence nope.md: no such file in the repository",
        ),
        ((*LEARN, "--evidence", "../outside.md"), 1, "no such file in the repository"),
        ((*LEARN, "--evidence", "docs"), 1, "--evidence docs: no such file in the repository"),
        ((*LEARN, "--evidence-cmd", " "), 1, "--evidence-cmd is empty"),
        (("learn", "decision", " ", "Redis", "--evidence-cmd", "x"), 1, "the topic is empty"),
        (("learn", "decision", "S", "\n", "--evidence-cmd", "x"), 1, "the decision is empty"),
        (
            ("learn", "preference", "Style", "black", "--evidence-cmd", "x", "--why", "y"),
            1,
            "a preference has only its text; --why is for decisions",
        ),
        (
            (*LEARN, "--evidence-cmd", "x", "--task", "T-999"),
            1,
            "--task T-999: no such task in docs/MASTER_PLAN.md",
        ),
        ((*LEARN, "--evidence-cmd", "x", "--task", "not an id"), 1, "give a task ID like T-201"),
        ((*LEARN, "--evidence-cmd", "x", "--module", "a b"), 1, "--module 'a b': give one module"),
        ((*LEARN, "--evidence-cmd", "x", "--confidence", "sure"), 2, "invalid choice: 'sure'"),
        (("learn", "opinion", "x", "y", "--evidence-cmd", "x"), 2, "invalid choice: 'opinion'"),
    ],
)
def test_bad_input_is_a_sentence_and_changes_nothing(
    repo: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    (repo.parent / "outside.md").write_text("x\n", encoding="utf-8")
    before = (repo / DECISIONS).read_bytes()

    done = call_memento(*args, cwd=repo)

    assert (done.returncode, done.stdout) == (code, "")
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert (repo / DECISIONS).read_bytes() == before
    assert git(repo, "status", "--porcelain") == ""


def test_a_file_with_an_unclosed_fence_is_not_written(repo: Path) -> None:
    broken = (repo / DECISIONS).read_text(encoding="utf-8") + "\n```\n"
    (repo / DECISIONS).write_text(broken, encoding="utf-8")

    done = call_memento(*LEARN, "--evidence-cmd", "x", cwd=repo)

    assert done.returncode == 1
    assert done.stderr.startswith(f"memento: error: {DECISIONS}:5: this code fence")
    assert (repo / DECISIONS).read_text(encoding="utf-8") == broken


def test_a_file_with_other_changes_is_written_but_not_committed(repo: Path) -> None:
    path = repo / DECISIONS
    path.write_text(path.read_text(encoding="utf-8") + "\nA remark.\n", encoding="utf-8")
    out = memento(repo, *LEARN, "--evidence-cmd", "x")
    assert "(not committed: the file had other uncommitted changes)" in out
    assert last_commit(repo).startswith("start")
    assert len(parse_memory(path.read_text(encoding="utf-8"), DECISION).records) == 1


def test_outside_git_the_lesson_is_written_and_not_committed(tmp_path: Path) -> None:
    assert call_memento("init", cwd=tmp_path).returncode == 0
    out = memento(tmp_path, *LEARN, "--evidence-cmd", "x")
    assert out.endswith("(new record) (not a git repository: not committed)\n")


# -- staleness and the archive -----------------------------------------------------------------


def record_text(topic: str, verified: datetime) -> str:
    return (
        f"\n---\n\n## {verified:%Y-%m-%d}: {topic}\n\n**Decision**: {topic} it is\n"
        "**Task**: global\n**Evidence**: command `true`\n**Confidence**: high\n"
        f"**Last verified**: {stamp(verified)}\n"
    )


def test_stale_records_are_flagged_then_archived_and_committed(repo: Path) -> None:
    now = datetime.now(timezone.utc)
    path = repo / DECISIONS
    path.write_text(
        path.read_text(encoding="utf-8")
        + record_text("Old", now - timedelta(days=90))
        + record_text("New", now - timedelta(days=1)),
        encoding="utf-8",
    )
    commit_all(repo, "two decisions")

    listed = memento(repo, "memory")
    assert " Old [stale]\n" in listed
    assert "2 active, 0 archived; 1 stale: not verified within memory_stale_after" in listed
    assert [r["stale"] for r in records(repo)] == [True, False]

    out = memento(repo, "memory", "--archive")

    assert out.startswith("archived 1 record(s) (committed ")
    assert f"  {DECISIONS}: " in out and out.rstrip().endswith(": Old")
    assert last_commit(repo).startswith("memento: archive 1 stale lessons\n\n")
    assert "Memento-Control: archive-lessons" in last_commit(repo)
    assert memory_json(repo)["counts"] == {"active": 1, "archived": 1, "stale": 0}
    assert [(r["key"], r["archived"]) for r in records(repo)] == [("New", False), ("Old", True)]
    assert " Old" not in memento(repo, "memory")
    assert " Old [archived]\n" in memento(repo, "memory", "--all")
    assert "nothing to archive" in memento(repo, "memory", "--archive")
    assert call_memento("validate", cwd=repo).stdout == ""


def test_memory_stale_after_comes_from_the_plan(repo: Path) -> None:
    plan = repo / "docs/MASTER_PLAN.md"
    text = plan.read_text(encoding="utf-8")
    plan.write_text(text.replace("memory_stale_after: 30d", "memory_stale_after: 2h"), "utf-8")
    path = repo / DECISIONS
    verified = datetime.now(timezone.utc) - timedelta(hours=3)
    path.write_text(path.read_text(encoding="utf-8") + record_text("Recent", verified), "utf-8")

    data = memory_json(repo)

    assert data["stale_after"] == 7200
    assert [r["stale"] for r in records(repo)] == [True]


# -- the validator -----------------------------------------------------------------------------


def test_validate_reports_broken_memory_files_at_their_lines(repo: Path) -> None:
    path = repo / DECISIONS
    good = record_text("Cache", datetime(2025, 1, 15, tzinfo=timezone.utc))
    path.write_text(
        path.read_text(encoding="utf-8")
        + good.replace("**Confidence**: high", "**Confidence**: sure")
        + good.replace("**Evidence**: command `true`\n", ""),
        encoding="utf-8",
    )
    (repo / "docs/memory/preferences.md").write_text(
        "# Preferences\n\n**Preference**: tabs\n", encoding="utf-8"
    )

    done = call_memento("validate", cwd=repo)

    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{DECISIONS}:12: error: confidence 'sure' is not one of high, medium, low",
        f"{DECISIONS}:17: error: this decision has no **Evidence** line; add one",
        f"{DECISIONS}:17: error: this decision has the same topic as the one at line 7; "
        "merge them into one record",
        "docs/memory/preferences.md:3: error: this field belongs to no preference; put a "
        "'## title' heading (after a '---' line) above it",
    ]
    alone = call_memento("validate", "docs/memory/preferences.md", cwd=repo)
    assert (alone.returncode, alone.stdout.count("\n")) == (1, 1)

    data = memory_json(repo)
    assert data["errors"] == 4
    assert "the memory files have 4 errors; run `memento validate`" in memento(repo, "memory")
