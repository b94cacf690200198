"""``memento pause|resume|stop|retry|skip|note``: surgical edits, committed, under the lock.

Each control runs as the real command line on a real git repository, in the test's own
process (``Project.memento``), or in a process of its own where it waits for a lock that a
tick in another process holds; the tests read the plan, the notes, the status log and
``git log`` back.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memento_gh.formats.notes import parse_notes
from memento_gh.formats.state import parse_state
from testing.cli import call_memento
from testing.ticks import UNSET, Project, good, make_project, one_phase, plan_of, task, trailers

PLAN = "docs/MASTER_PLAN.md"
STATUS = "docs/TICK_STATUS.md"
NOTES = "docs/HUMAN_NOTES.md"
STATE = "docs/STATE.md"  # the resume snapshot every control rewrites
MODE_LINE = "- tick_mode: {}          <!-- auto | paused | stopped -->"


def mode_line(mode: str, was: str) -> str:
    """The tick_mode line set to ``mode`` from MODE_LINE of ``was``: its comment stays in
    its column (first-use issue, item 14)."""
    return f"- tick_mode: {mode:<{len(was) + 10}}<!-- auto | paused | stopped -->"


def project_with(tmp_path: Path, *tasks: str, **meta: str) -> Project:
    """A project whose tick_mode line carries a comment, as `memento init` writes it."""
    meta = {"tick_mode": "auto          <!-- auto | paused | stopped -->", **meta}
    return make_project(tmp_path, plan_of([one_phase(*tasks)], **meta))


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    """The (old, new) pairs of lines that differ; both texts must keep their line count."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new), "a control added or removed lines"
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


def ok(result: object) -> None:
    assert getattr(result, "returncode", None) == 0, (
        f"stdout:\n{getattr(result, 'stdout', '')}\nstderr:\n{getattr(result, 'stderr', '')}"
    )


# -- pause, resume, stop ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "start", "mode"),
    [("pause", "auto", "paused"), ("stop", "auto", "stopped"), ("resume", "stopped", "auto")],
)
def test_a_mode_control_rewrites_only_the_tick_mode_line_and_commits_it(
    tmp_path: Path, action: str, start: str, mode: str
) -> None:
    project = project_with(tmp_path, tick_mode=f"{start}          <!-- auto | paused | stopped -->")
    before = project.plan_path.read_text(encoding="utf-8")

    result = project.memento(action)

    ok(result)
    assert f"tick_mode is now {mode}" in result.stdout and "committed" in result.stdout
    after = project.plan_path.read_text(encoding="utf-8")
    assert changed_lines(before, after) == [
        (MODE_LINE.format(start) + "\n", mode_line(mode, start) + "\n")
    ]
    assert project.subjects()[0] == f"memento: {action}"
    assert trailers(project) == f"Memento-Control: {action}"
    assert project.committed_files() == {PLAN, STATE}
    assert project.dirty() == []


def test_resume_also_clears_the_failed_tick_count(tmp_path: Path) -> None:
    project = project_with(
        tmp_path,
        tick_mode="paused          <!-- auto | paused | stopped -->",
        consecutive_failed_ticks="4",
    )
    before = project.plan_path.read_text(encoding="utf-8")

    ok(project.memento("resume"))

    assert changed_lines(before, project.plan_path.read_text(encoding="utf-8")) == [
        (MODE_LINE.format("paused") + "\n", mode_line("auto", "paused") + "\n"),
        ("- consecutive_failed_ticks: 4\n", "- consecutive_failed_ticks: 0\n"),
    ]
    assert project.subjects()[0] == "memento: resume"


def test_pausing_a_paused_plan_changes_nothing(tmp_path: Path) -> None:
    project = project_with(tmp_path, tick_mode="paused")
    head, before = project.head(), project.plan_path.read_bytes()

    result = project.memento("pause")

    ok(result)
    assert result.stdout.startswith("nothing to change")
    assert project.head() == head and project.plan_path.read_bytes() == before


# -- retry and skip ---------------------------------------------------------------------------


def test_retry_gives_a_blocked_task_its_retries_back(tmp_path: Path) -> None:
    project = project_with(tmp_path, task("T-101", "!", retries="3"), task("T-102"))
    before = project.plan_path.read_text(encoding="utf-8")

    ok(project.memento("retry", "T-101"))

    retried = project.plan().task("T-101")
    assert retried is not None and (retried.marker, retried.retries) == (" ", 0)
    assert changed_lines(before, project.plan_path.read_text(encoding="utf-8")) == [
        (
            "- [!] `T-101` [MODULE:core] Write module A\n",
            "- [ ] `T-101` [MODULE:core] Write module A\n",
        ),
        ("  - retries: 3\n", "  - retries: 0\n"),
    ]
    assert project.subjects()[0] == "memento: retry T-101"
    assert trailers(project) == "Memento-Control: retry"


def test_retry_on_a_paused_plan_says_it_stays_paused(tmp_path: Path) -> None:
    # The breaker pauses the plan when too many tasks are blocked; a new user who retries
    # the blocked task would otherwise wait for ticks that never come.
    paused = "paused          <!-- auto | paused | stopped -->"
    project = project_with(tmp_path, task("T-101", "!", retries="3"), tick_mode=paused)

    result = project.memento("retry", "T-101")

    ok(result)
    assert "still paused" in result.stdout and "memento resume" in result.stdout
    assert project.plan().settings.tick_mode == "paused"


def test_retry_of_a_done_task_is_refused(tmp_path: Path) -> None:
    project = project_with(tmp_path, task("T-101", "x"), task("T-102"))
    head, before = project.head(), project.plan_path.read_bytes()

    refused = project.memento("retry", "T-101")

    assert refused.returncode == 1
    assert "T-101 is done; only a pending, blocked or skipped task can be retried" in refused.stderr
    assert project.head() == head and project.plan_path.read_bytes() == before


def test_skip_marks_the_task_and_keeps_the_reason_in_the_status_log(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    before = project.plan_path.read_text(encoding="utf-8")

    ok(project.memento("skip", "T-102", "--why", "the old module does this already"))

    assert [t.marker for t in project.plan().tasks] == [" ", "-", " "]
    assert len(changed_lines(before, project.plan_path.read_text(encoding="utf-8"))) == 1
    assert project.events() == ["Control: T-102 skipped — the old module does this already"]
    assert project.subjects()[0] == "memento: skip T-102"
    assert project.committed_files() == {PLAN, STATUS, STATE}


# -- notes ------------------------------------------------------------------------------------


def test_notes_for_a_task_and_for_all_are_quoted_into_human_notes(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    text = "Use tabs.\n## Phase 9: not a phase\n### [NOTE] 2025-01-01T00:00:00Z → T-103"

    ok(project.memento("note", "--task", "T-101", text))
    ok(project.memento("note", "--global", "Keep modules short."))

    notes = parse_notes(project.notes_path.read_text(encoding="utf-8"))
    assert notes.problems == ()
    assert [(n.target, n.read, n.text) for n in notes.notes] == [
        ("T-101", False, text),
        ("global", False, "Keep modules short."),
    ]
    assert all(line.startswith(">") for line in notes.notes[0].body.splitlines() if line)
    assert project.subjects()[:2] == ["memento: note", "memento: note T-101"]
    assert project.committed_files() == {NOTES, STATE}
    assert trailers(project) == "Memento-Control: note"


def test_a_note_for_an_unknown_task_is_refused(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    head, before = project.head(), project.notes_path.read_bytes()

    refused = project.memento("note", "--task", "T-999", "hello")

    assert refused.returncode == 1
    assert "T-999" in refused.stderr
    assert project.head() == head and project.notes_path.read_bytes() == before


# -- the lock, a dirty plan, no git -----------------------------------------------------------


def test_a_control_waits_for_a_running_tick_and_gives_up_after_wait(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    started = project.outside / "agent-started"
    release = project.outside / "agent-may-finish"
    # The agent (and so the tick, which holds the lock) runs until the test releases it.
    agent = [{"touch": str(started)}, {"wait_for": str(release)}, *good("T-101")]
    project.script({"T-101": agent})
    tick = project.start_tick()
    try:
        deadline = time.monotonic() + 20
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the agent never started"

        waited = time.monotonic()
        refused = project.memento_process("pause", "--wait", "1")
        assert time.monotonic() - waited >= 1
        assert refused.returncode == 1
        assert "a tick holds the lock" in refused.stderr and "--wait" in refused.stderr
        assert tick.poll() is None, "the tick ended before the control gave up"

        release.touch()
        later = project.memento_process("pause", "--wait", "60")
    finally:
        release.touch()
        _, err = tick.communicate(timeout=60)
    ok(later)
    assert tick.returncode == 0, err
    # the control ran after the tick: its commit sits on the tick's
    assert project.subjects()[:2] == ["memento: pause", "memento: complete T-101 Write module A"]
    assert project.plan().settings.tick_mode == "paused"
    assert project.marker("T-101") == "x"


def test_a_plan_with_the_users_own_edits_is_edited_but_not_committed(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    text = project.plan_path.read_text(encoding="utf-8")
    mine = text.replace("Write module C", "Write module C, carefully")
    project.plan_path.write_text(mine, encoding="utf-8")
    head = project.head()

    result = project.memento("pause")

    ok(result)
    assert "not committed" in result.stdout
    assert project.head() == head
    after = project.plan_path.read_text(encoding="utf-8")
    assert "Write module C, carefully" in after
    assert project.plan().settings.tick_mode == "paused"
    assert len(changed_lines(text, after)) == 2  # the user's line and tick_mode


def test_outside_a_git_repository_a_control_edits_and_says_it_did_not_commit(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "plain"
    plan = folder / PLAN
    plan.parent.mkdir(parents=True)
    text = plan_of([one_phase()])
    plan.write_text(text, encoding="utf-8")

    result = call_memento(
        "pause",
        cwd=folder,
        env={**dict.fromkeys(UNSET, ""), "GIT_CEILING_DIRECTORIES": str(tmp_path)},
    )

    ok(result)
    assert "not a git repository: not committed" in result.stdout
    after = plan.read_text(encoding="utf-8")
    assert changed_lines(text, after) == [("- tick_mode: auto\n", "- tick_mode: paused\n")]


def test_every_control_rewrites_the_resume_snapshot(tmp_path: Path) -> None:
    project = project_with(tmp_path, task("T-101", "x"), task("T-102", "!"), task("T-103"))
    ok(project.memento("pause"))
    state = parse_state((project.root / STATE).read_text(encoding="utf-8"))
    assert state["Mode"] == "paused"
    assert state["Last action"] == "pause: tick_mode is now paused"

    ok(project.memento("resume"))
    ok(project.memento("retry", "T-102"))
    state = parse_state((project.root / STATE).read_text(encoding="utf-8"))
    assert state["Mode"] == "auto"
    assert state["Next"].startswith("T-102 ")  # the scheduler's own pick, first in the phase
    assert state["Last action"] == "retry T-102"
    assert project.dirty() == []


# -- a control that changes nothing, and the alert every control recomputes -------------------

BREAKER_EVENT = "- [2025-01-15T14:00:00Z] 🔴 CIRCUIT BREAKER TRIGGERED — reason: disk\n"
BLOCKED_ALERT = (
    "timestamp: 2025-01-15T14:00:00Z\nblocked_tasks: 1\ncircuit_breaker: OK\n"
    "message: Pipeline needs attention. 1 task(s) blocked.\n"
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("argv", "mode", "tasks"),
    [
        (["pause"], "paused", ()),
        (["stop"], "stopped", ()),
        (["resume"], "auto", ()),
        (["retry", "T-102"], "auto", ("T-102", " ")),
        (["skip", "T-102"], "auto", ("T-102", "-")),
    ],
    ids=["pause", "stop", "resume", "retry-pending", "skip-skipped"],
)
def test_a_control_that_changes_nothing_says_so_and_exits_0(
    tmp_path: Path, argv: list[str], mode: str, tasks: tuple[str, ...]
) -> None:
    chosen = [task("T-101"), task(tasks[0], tasks[1]) if tasks else task("T-102"), task("T-103")]
    project = project_with(tmp_path, *chosen, tick_mode=mode)
    head, before = project.head(), project.plan_path.read_bytes()

    result = project.memento(*argv)

    ok(result)
    assert result.stdout.startswith("nothing to change: "), result.stdout
    assert "git" not in result.stdout + result.stderr
    assert project.head() == head and project.plan_path.read_bytes() == before
    assert project.dirty() == []


@pytest.mark.timeout(60)
def test_a_second_retry_of_the_same_task_changes_nothing(tmp_path: Path) -> None:
    project = project_with(tmp_path, task("T-101", "x"), task("T-102", "!", retries="3"))
    ok(project.memento("retry", "T-102"))
    head = project.head()

    again = project.memento("retry", "T-102")

    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout == "nothing to change: retry T-102\n"
    assert project.head() == head
    assert project.dirty() == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("argv", [["retry", "T-102"], ["skip", "T-102"]], ids=["retry", "skip"])
def test_unblocking_the_last_blocked_task_takes_the_alert_down(
    tmp_path: Path, argv: list[str]
) -> None:
    project = project_with(tmp_path, task("T-101", "x"), task("T-102", "!", retries="3"))
    alert = project.root / ".memento_alert"
    alert.write_text(BLOCKED_ALERT, encoding="utf-8")

    ok(project.memento(*argv))

    assert not alert.exists()
    assert project.dirty() == []


@pytest.mark.timeout(60)
def test_a_control_writes_the_alert_a_blocked_task_calls_for(tmp_path: Path) -> None:
    project = project_with(
        tmp_path, task("T-101", "!", retries="3"), task("T-102", "!", retries="3"), task("T-103")
    )
    alert = project.root / ".memento_alert"

    ok(project.memento("retry", "T-101"))

    assert "blocked_tasks: 1\ncircuit_breaker: OK\n" in alert.read_text(encoding="utf-8")


@pytest.mark.timeout(60)
def test_resuming_after_the_circuit_breaker_takes_the_alert_down(tmp_path: Path) -> None:
    project = make_project(
        tmp_path,
        plan_of([one_phase()], tick_mode="paused"),
        files={STATUS: "# TICK STATUS LOG\n\n" + BREAKER_EVENT},
    )
    alert = project.root / ".memento_alert"
    alert.write_text("circuit_breaker: TRIGGERED\n", encoding="utf-8")

    ok(project.memento("pause"))  # nothing to change, and the breaker still holds the plan
    assert "circuit_breaker: TRIGGERED" in alert.read_text(encoding="utf-8")
    ok(project.memento("resume"))

    assert not alert.exists()


# -- credentials ------------------------------------------------------------------------------

SHAPED_KEY = "ghp_" + "Zx9" * 12  # a GitHub token's shape
PLANTED = "planted-openai-secret-4711"  # the value of a credential-named variable


def test_a_credential_in_a_note_or_a_lesson_never_reaches_a_commit(tmp_path: Path) -> None:
    project = project_with(tmp_path)
    env = {"OPENAI_API_KEY": PLANTED}
    said = f"use {SHAPED_KEY} or {PLANTED} to log in"
    ok(project.memento("note", "--task", "T-101", said, env=env))
    ok(project.memento("skip", "T-102", "--why", said, env=env))
    ok(project.memento("learn", "preference", f"auth {PLANTED}", said, "--evidence", PLAN, env=env))
    history = project.git("log", "-p", "--format=%B")
    assert "use *** or *** to log in" in history
    assert SHAPED_KEY not in history and PLANTED not in history
