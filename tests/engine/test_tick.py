"""``memento tick`` as specified (DESIGN "The tick", seed §4 and §7), through the real CLI.

Every test runs real ticks on a real git repository, with the fake agent
``testing/agents/scripted.py`` as the ``--agent-cmd``, and reads the real state back: the
plan, TICK_STATUS.md, HUMAN_NOTES.md, ``git log`` and the working tree. A tick runs in the
test's process (``Project.tick``), or in a process of its own where the test counts its git
processes through PATH or starts two ticks at once.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from memento_gh.formats.status_log import ESCALATION, ParsedEntry
from memento_gh.plan.scanner import parse
from memento_gh.plan.values import format_time
from testing.agents import Action
from testing.plans import phase_block
from testing.processes import alive, group_alive
from testing.repos import git_shim
from testing.ticks import (
    GUARD,
    NOTES,
    Project,
    good,
    make_project,
    one_phase,
    plan_of,
    task,
    trailers,
    wrong,
)

PLAN = "docs/MASTER_PLAN.md"
STATUS = "docs/TICK_STATUS.md"
STATE = "docs/STATE.md"  # the resume snapshot, rewritten with every bookkeeping commit
BOOKKEEPING = {PLAN, STATUS, "docs/HUMAN_NOTES.md", STATE}
WORKING_FILES = ("logs/", ".memento.lock", ".memento_alert")
KEPT = {".env": "SECRET=do-not-lose\n", "node_modules/x/index.js": "module.exports = 1\n"}
ENTRY_FIELDS = {
    "Task",
    "Status",
    "Verify Output",
    "Duration",
    "Files Modified",
    "Diff Size",
    "Git Commit",
    "Log",
}


def last_entry(project: Project) -> ParsedEntry:
    entries = project.entries()
    assert entries, project.status_path.read_text(encoding="utf-8")
    return entries[-1]


def ran(result: Any) -> None:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def only_working_files(lines: Sequence[str]) -> bool:
    return all(line[3:].startswith(WORKING_FILES) for line in lines)


def write_kept_files(project: Project) -> None:
    """Untracked files .memento_cleanignore protects, as a developer has them."""
    for name, text in KEPT.items():
        path = project.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# -- the git processes of a tick ---------------------------------------------------------------


def git_commands(log: Path) -> list[str]:
    """The git subcommand of each logged run (its first argument that is not an option)."""
    found = []
    for line in log.read_text(encoding="utf-8").splitlines():
        args = json.loads(line)
        while args and (args[0] in ("-c", "-C") or args[0].startswith("--")):
            args = args[2:] if args[0] in ("-c", "-C") else args[1:]
        found.append(args[0] if args else "")
    return found


def test_a_tick_asks_git_only_what_it_needs(tmp_path: Path) -> None:
    """A success that adds one file: where the repository is and one status before the agent
    (at the same time), one after it, the change with its line counts, the untracked files
    without the kept ones, staging the new file, the commit. No separate HEAD, identity or
    numstat calls."""
    project = make_project(tmp_path, plan_of([one_phase()]))
    project.script({"T-101": good("T-101")})
    log = tmp_path / "git-argv.log"
    shim = git_shim(tmp_path / "bin", log)

    result = project.tick_process(env={"PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"})

    ran(result)
    assert project.subjects()[0] == "memento: complete T-101 Write module A"
    commands = git_commands(log)
    # where the repository is, and the status before the agent: started together
    assert sorted(commands[:2]) == ["rev-parse", "status"]
    # the folders git ignores, listed while the prompt is built: the walk for special files
    # the agent may leave (engine/wall/special_files.py) skips them
    assert commands[2:] == ["ls-files", "status", "diff", "ls-files", "add", "commit"]


def test_a_tick_whose_agent_changes_nothing_runs_no_diff(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase()]))
    project.script({"T-101": []})
    log = tmp_path / "git-argv.log"
    shim = git_shim(tmp_path / "bin", log)

    result = project.tick_process(env={"PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"})

    ran(result)
    assert project.subjects()[0].startswith("memento: T-101 failed")
    commands = git_commands(log)
    # and the folders git ignores, listed before the agent (engine/wall/special_files.py)
    assert sorted(commands[:4]) == ["ls-files", "rev-parse", "status", "status"]
    assert "diff" not in commands[:5], commands  # the status said the agent changed nothing


# -- success -----------------------------------------------------------------------------------

NOTES_FOR_TASKS = NOTES.replace(
    "## Active Notes\n\n",
    "## Active Notes\n\n"
    "### [NOTE] 2025-01-15T15:00:00Z → T-101\nName the constant A.\n\n"
    "### [NOTE] 2025-01-15T15:10:00Z → global\nKeep modules short.\n\n"
    "### [NOTE] 2025-01-15T15:20:00Z → T-102\nB comes later.\n\n",
)


def test_a_verified_task_is_one_commit_of_the_agents_files_and_the_bookkeeping(
    tmp_path: Path,
) -> None:
    # No .gitignore: memento itself must keep logs/ and .memento.lock out of the commit.
    plan = plan_of([one_phase()], total_tasks="7")
    project = make_project(
        tmp_path, plan, files={"docs/HUMAN_NOTES.md": NOTES_FOR_TASKS}, gitignore=False
    )
    prompt = project.outside / "prompt.md"
    project.script(
        {"T-101": [{"save_prompt": str(prompt)}, *good("T-101"), {"print": "agent says hello"}]}
    )
    start = project.head()

    result = project.tick()

    ran(result)
    assert project.git("rev-list", "--count", f"{start}..HEAD").strip() == "1"
    assert project.subjects()[0] == "memento: complete T-101 Write module A"
    assert trailers(project) == "Memento-Task: T-101\nMemento-Tick: 1"
    assert project.committed_files() == {"src/a.py", *BOOKKEEPING}
    assert project.git("show", "HEAD:src/a.py") == "A = 1\n"
    assert only_working_files(project.dirty()), project.dirty()
    assert any(line.startswith("?? logs/") for line in project.dirty())

    plan_now = project.plan()
    done = plan_now.task("T-101")
    assert done is not None and done.marker == "x" and done.claimed is None
    assert [t.marker for t in plan_now.tasks] == ["x", " ", " "]
    settings = plan_now.settings
    assert (settings.total_ticks, settings.completed_tasks, settings.total_tasks) == (1, 1, 3)
    assert settings.consecutive_failed_ticks == 0

    entry = last_entry(project)
    assert set(entry.fields) >= ENTRY_FIELDS, entry.fields
    assert (entry.tick, entry.task_id, entry.outcome, entry.exit_code) == (1, "T-101", "success", 0)
    assert entry.task == "T-101 [MODULE:core] Write module A"
    assert entry.fields["Files Modified"] == "src/a.py (+1 -0)"
    assert entry.fields["Diff Size"] == "1 line"
    assert "memento: complete T-101 Write module A" in entry.fields["Git Commit"]
    assert entry.error_analysis is None and not entry.escalation
    log = project.root / entry.fields["Log"]
    assert "agent says hello" in log.read_text(encoding="utf-8")

    read = {note.target: note.read for note in project.notes()}
    assert read == {"T-101": True, "global": False, "T-102": False}
    # the agent saw its task, its notes and the global ones; not the other tasks' notes
    seen = prompt.read_text(encoding="utf-8")
    assert "`T-101`" in seen and "Name the constant A." in seen and "Keep modules short." in seen
    assert "B comes later." not in seen and "`T-102`" not in seen


def test_a_claude_style_json_result_puts_the_cost_in_the_status_entry(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    result = {"total_cost_usd": 0.5, "usage": {"input_tokens": 1200, "output_tokens": 450}}
    project.script({"T-101": [*good("T-101"), {"claude_result": result}]})

    ran(project.tick())

    assert last_entry(project).fields["Cost"] == "$0.50, 1,200 tokens in / 450 out"


def test_the_agent_gets_no_token_but_its_api_key(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    dump = project.outside / "env.json"
    project.script({"T-101": [{"dump_env": str(dump)}, *good("T-101")]})
    secrets = {
        "GITHUB_TOKEN": "ghs_secret1",
        "GH_TOKEN": "ghs_secret2",
        "ACTIONS_RUNTIME_TOKEN": "secret3",
        "INPUT_GITHUB-TOKEN": "secret4",
        "ANTHROPIC_API_KEY": "sk-ant-kept",
    }

    ran(project.tick(env=secrets))

    seen = json.loads(dump.read_text(encoding="utf-8"))
    assert seen["ANTHROPIC_API_KEY"] == "sk-ant-kept"
    leaked = [name for name in secrets if name != "ANTHROPIC_API_KEY" and name in seen]
    assert leaked == []
    assert not any(value.startswith(("ghs_", "secret")) for value in seen.values())
    assert project.marker("T-101") == "x"


# -- failure: retries, then blocked ------------------------------------------------------------


def test_a_failing_verify_is_retried_then_blocked_and_only_bookkeeping_is_committed(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path, files={"docs/HUMAN_NOTES.md": NOTES_FOR_TASKS})
    project.script({"T-101": wrong("T-101")})

    for attempt, marker, outcome in ((1, " ", "failed"), (2, " ", "failed"), (3, "!", "blocked")):
        before = project.head()
        ran(project.tick())
        failed = project.plan().task("T-101")
        assert failed is not None
        assert (failed.marker, failed.retries, failed.claimed) == (marker, attempt, None)
        entry = last_entry(project)
        assert set(entry.fields) >= {*ENTRY_FIELDS, "Error Analysis"}, entry.fields
        assert (entry.tick, entry.outcome, entry.retry, entry.max_retries) == (
            attempt,
            outcome,
            attempt,
            3,
        )
        assert entry.exit_code == 1
        assert entry.verify_head == "src/a.py has no A"
        assert "src/a.py has no A" in (entry.error_analysis or "")
        assert entry.fields["Files Modified"] == "(rolled back)"
        assert entry.fields["Git Commit"] == "(none — rollback)"
        assert project.git("rev-list", "--count", f"{before}..HEAD").strip() == "1"
        assert project.committed_files() == {PLAN, STATUS, STATE}
        assert f"T-101 {outcome} (retry {attempt}/3)" in project.subjects()[0]
        assert trailers(project) == f"Memento-Task: T-101\nMemento-Tick: {attempt}"
        assert project.dirty() == []
        assert not (project.root / "src/a.py").exists()

    assert not project.ever_committed("src/a.py")
    assert not any(note.read for note in project.notes())  # a failed task has not used its note
    entries = project.entries()
    assert [e.escalation for e in entries] == [False, False, True]
    # The seed's words, then what to do about it (#30).
    assert entries[-1].fields["Escalation"].startswith(f"{ESCALATION}: tell the worker")
    settings = project.plan().settings
    assert (settings.consecutive_failed_ticks, settings.total_ticks) == (3, 3)
    assert settings.tick_mode == "auto"  # below circuit_breaker_threshold 5 and the ratio


# -- every kind of failure rolls back ----------------------------------------------------------


class Rollback(NamedTuple):
    actions: list[Action]
    reason: str  # a phrase of the entry's error analysis
    meta: Mapping[str, str] = {}
    fields: Mapping[str, str] = {}


ROLLBACKS = {
    "verify fails": Rollback(wrong("T-101"), "src/a.py has no A"),
    "guard file": Rollback([*good("T-101"), {"write": GUARD, "text": "G = 2\n"}], GUARD),
    "outside context_files": Rollback(
        [*good("T-101"), {"write": "src/other.py", "text": "O = 1\n"}], "src/other.py"
    ),
    "plan edited": Rollback(
        [*good("T-101"), {"replace": PLAN, "old": "- [ ] `T-102`", "new": "- [x] `T-102`"}],
        PLAN,
    ),
    "status log edited": Rollback(
        [*good("T-101"), {"append": STATUS, "text": "\nall good, trust me\n"}], STATUS
    ),
    "workflow written": Rollback(
        [*good("T-101"), {"write": ".github/workflows/x.yml", "text": "on: push\n"}], ".github/"
    ),
    "untracked junk": Rollback([*good("T-101"), {"junk": 3, "dir": "build"}], "build/junk_0.tmp"),
    "tracked file deleted": Rollback([*good("T-101"), {"delete": GUARD}], GUARD),
    "diff too large": Rollback(
        [{"write": "src/a.py", "text": "A = 1\n" * 30}], "max_diff_lines", {"max_diff_lines": "10"}
    ),
    "agent crashes": Rollback([*good("T-101"), {"exit": 3}], "exited with code 3"),
    "agent moves HEAD": Rollback(
        [*good("T-101"), {"git": ["add", "src/a.py"]}, {"git": ["commit", "-qm", "sneaky"]}],
        "moved HEAD",
    ),
    "agent plants a hook": Rollback(
        [*good("T-101"), {"write": ".git/hooks/post-commit", "text": "#!/bin/sh\n"}],
        "hooks",
    ),
    "agent hangs": Rollback(
        [*good("T-101"), {"sleep": 60}],
        "agent_timeout",
        {"agent_timeout": "2s"},
    ),
    "verify hangs": Rollback(
        good("T-101"), "timeout", fields={"verify": "`sleep 60`", "timeout": "2s"}
    ),
}


@pytest.mark.parametrize("kind", list(ROLLBACKS))
def test_every_failure_rolls_back_to_head_and_spares_cleanignored_files(
    tmp_path: Path, kind: str
) -> None:
    case = ROLLBACKS[kind]
    tasks = [task("T-101", **case.fields), task("T-102"), task("T-103")]
    plan = plan_of([one_phase(*tasks)], **case.meta)
    project = make_project(tmp_path, plan)
    write_kept_files(project)
    project.script({"T-101": case.actions})
    start = project.head()
    started = time.monotonic()

    ran(project.tick())

    assert time.monotonic() - started < 45  # the hangs sleep 60 s: room for a busy machine
    entry = last_entry(project)
    assert entry.outcome == "failed", entry
    assert case.reason in (entry.error_analysis or ""), entry.error_analysis
    assert entry.fields["Files Modified"] == "(rolled back)"
    failed = project.plan().task("T-101")
    assert failed is not None and (failed.marker, failed.retries) == (" ", 1)
    assert [t.marker for t in project.plan().tasks] == [" ", " ", " "]
    # one commit on top of the start, holding the bookkeeping only
    assert project.git("rev-parse", "HEAD~1").strip() == start
    assert project.committed_files() == {PLAN, STATUS, STATE}
    assert project.subjects()[1:] == ["project"]
    # the tree is HEAD again, but for the files .memento_cleanignore keeps
    assert sorted(project.dirty()) == ["?? .env", "?? node_modules/x/index.js"]
    for name, text in KEPT.items():
        assert (project.root / name).read_text(encoding="utf-8") == text
    assert not (project.root / "src/a.py").exists()
    assert (project.root / GUARD).read_text(encoding="utf-8") == "G = 1\n"
    assert project.git("show", f"{start}:{PLAN}") != project.plan_path.read_text()
    assert project.git("show", f"HEAD:{PLAN}") == project.plan_path.read_text(encoding="utf-8")


def test_a_deleted_tracked_file_comes_back_byte_for_byte(tmp_path: Path) -> None:
    data = b"\x00\x01binary\r\nCRLF line\r\n\xff\xfeno final newline"
    project = make_project(tmp_path, files={"tools/run.sh": data})
    (project.root / "tools/run.sh").chmod(0o755)
    project.git("add", "tools/run.sh")
    project.git("commit", "-qm", "executable")
    project.script({"T-101": [*good("T-101"), {"delete": "tools/run.sh"}]})

    ran(project.tick())

    restored = project.root / "tools/run.sh"
    assert restored.read_bytes() == data
    assert restored.stat().st_mode & stat.S_IXUSR
    assert "tools/run.sh" in (last_entry(project).error_analysis or "")
    assert project.dirty() == []


def test_a_hung_agent_is_killed_with_every_process_it_started(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], agent_timeout="2s"))
    sleeper = project.outside / "sleeper.pid"
    agent = project.outside / "agent.pid"
    project.script(
        {
            "T-101": [
                *good("T-101"),
                {"write_pid": str(agent)},
                {"spawn_sleeper": str(sleeper)},
                {"sleep": 3600},
            ]
        }
    )
    started = time.monotonic()

    ran(project.tick())

    assert time.monotonic() - started < 60  # the agent sleeps an hour: room for a busy machine
    # the grandchild ignores SIGTERM and its parent is gone: only a group kill reaches it
    assert not alive(int(sleeper.read_text(encoding="utf-8")))
    assert not alive(int(agent.read_text(encoding="utf-8")))
    entry = last_entry(project)
    assert "agent_timeout" in (entry.error_analysis or "")
    assert entry.fields["Verify Output"] == "(not run)"
    assert project.marker("T-101") == " " and project.dirty() == []


def test_a_hung_verify_is_killed_with_its_children_and_logged_as_timed_out(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "outside" / "verify.pid"
    hanging = task("T-101", verify=f"`echo $$ > {pidfile}; sleep 60`", timeout="2s")
    project = make_project(tmp_path, plan_of([one_phase(hanging, task("T-102"))]))
    project.script({"T-101": good("T-101")})
    started = time.monotonic()

    ran(project.tick())

    assert time.monotonic() - started < 45  # verify sleeps 60 s: room for a busy machine
    assert not group_alive(int(pidfile.read_text(encoding="utf-8")))  # the shell and its sleep
    entry = last_entry(project)
    assert entry.outcome == "failed" and entry.exit_code is None
    assert "(timed out)" in entry.fields["Verify Output"]
    assert "verify ran past its timeout" in (entry.error_analysis or "")
    assert not (project.root / "src/a.py").exists()


def test_files_the_cleanignore_keeps_are_not_the_agents_change_nor_committed(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    write_kept_files(project)
    installed = {"write": "node_modules/y/index.js", "text": "module.exports = 2\n"}
    project.script({"T-101": [*good("T-101"), installed]})

    ran(project.tick())

    assert last_entry(project).outcome == "success"
    assert project.committed_files() == {"src/a.py", PLAN, STATUS, STATE}
    assert not project.ever_committed(".env")
    assert not project.ever_committed("node_modules")
    assert sorted(project.dirty()) == [
        "?? .env",
        "?? node_modules/x/index.js",
        "?? node_modules/y/index.js",
    ]


# -- the repository lock -----------------------------------------------------------------------


def test_two_ticks_started_together_run_one_task_and_the_other_changes_nothing(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    runs = project.outside / "runs.log"
    # The running tick's agent holds the lock until the other tick has given up (it logs the
    # skip), and for a minute if it never does: however busy the machine, the two overlap.
    slow = {"append": str(runs), "text": "run\n"}, {"wait_for": "logs/memento.log"}
    project.script({"T-101": [*slow, *good("T-101")], "T-102": [*slow, *good("T-102")]})
    start = project.head()

    ticks = [project.start_tick(), project.start_tick()]
    outputs = [tick.communicate(timeout=60) for tick in ticks]

    assert [tick.returncode for tick in ticks] == [0, 0], outputs
    skipped = [out for out, _ in outputs if "Tick skipped" in out]
    assert len(skipped) == 1, outputs
    assert runs.read_text(encoding="utf-8") == "run\n"
    assert [t.marker for t in project.plan().tasks] == ["x", " ", " "]
    assert project.plan().settings.total_ticks == 1
    assert project.git("rev-list", "--count", f"{start}..HEAD").strip() == "1"
    assert len(project.entries()) == 1
    assert only_working_files(project.dirty())
    log = (project.root / "logs" / "memento.log").read_text(encoding="utf-8")
    assert "Tick skipped: another tick holds the lock" in log


# -- the circuit breaker -----------------------------------------------------------------------

BREAKER = "🔴 CIRCUIT BREAKER TRIGGERED — reason: "


def breaker_events(project: Project) -> list[str]:
    return [event for event in project.events() if event.startswith(BREAKER)]


def assert_paused_and_committed(project: Project) -> None:
    assert project.plan().settings.tick_mode == "paused"
    assert project.subjects()[0] == "memento: circuit breaker paused the plan"
    assert project.dirty() == []
    assert "circuit_breaker: TRIGGERED" in (project.root / ".memento_alert").read_text()


def test_failing_ticks_in_a_row_trip_the_breaker_until_resume(tmp_path: Path) -> None:
    plan = plan_of([one_phase()], circuit_breaker_threshold="2", max_retries="5")
    project = make_project(tmp_path, plan)
    project.script({"T-101": {"attempts": [wrong("T-101"), wrong("T-101"), good("T-101")]}})

    ran(project.tick())
    assert project.plan().settings.tick_mode == "auto"
    assert project.plan().settings.consecutive_failed_ticks == 1
    assert breaker_events(project) == []

    ran(project.tick())
    assert project.plan().settings.consecutive_failed_ticks == 2
    assert breaker_events(project) == [
        BREAKER + "2 ticks in a row failed (circuit_breaker_threshold is 2)"
    ]
    assert_paused_and_committed(project)

    # a paused plan's tick is skipped and changes nothing
    head, plan_text, status_text = (
        project.head(),
        project.plan_path.read_bytes(),
        project.status_path.read_bytes(),
    )
    skipped = project.tick()
    ran(skipped)
    assert "Tick skipped: mode=paused" in skipped.stdout
    assert project.head() == head
    assert project.plan_path.read_bytes() == plan_text
    assert project.status_path.read_bytes() == status_text
    assert project.agent_runs() == {"T-101": 2}

    resumed = project.memento("resume")
    ran(resumed)
    settings = project.plan().settings
    assert (settings.tick_mode, settings.consecutive_failed_ticks) == ("auto", 0)
    assert project.subjects()[0] == "memento: resume"

    ran(project.tick())
    assert project.marker("T-101") == "x"
    assert project.agent_runs() == {"T-101": 3}
    assert not (project.root / ".memento_alert").exists()


def test_too_many_blocked_tasks_trip_the_breaker(tmp_path: Path) -> None:
    phase = one_phase(task("T-101"), task("T-102"))
    project = make_project(tmp_path, plan_of([phase], max_retries="1", blocked_ratio_limit="0.3"))
    project.script({"T-101": wrong("T-101")})

    ran(project.tick())

    assert project.marker("T-101") == "!"
    assert breaker_events(project) == [
        BREAKER + "1 of 2 tasks are blocked, more than blocked_ratio_limit 30%"
    ]
    assert_paused_and_committed(project)
    assert "blocked_tasks: 1" in (project.root / ".memento_alert").read_text()


def test_too_little_free_disk_trips_the_breaker_before_any_agent_runs(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], min_free_disk="1000TB"))
    project.script({"T-101": {"attempts": [good("T-101")]}})

    ran(project.tick())

    [event] = breaker_events(project)
    assert "MB of disk free, less than min_free_disk 1000000000 MB" in event
    assert_paused_and_committed(project)
    assert project.agent_runs() == {}
    assert [t.marker for t in project.plan().tasks] == [" ", " ", " "]


def test_a_git_failure_pauses_the_plan_and_says_what_git_said(tmp_path: Path) -> None:
    # A git process that died (here: the agent) left its lock: git cannot commit any more.
    project = make_project(tmp_path)
    lock = {"touch": ".git/index.lock"}
    project.script({"T-101": {"attempts": [[*good("T-101"), lock], good("T-101")]}})

    failed = project.tick()

    assert failed.returncode == 1
    assert "git add failed" in failed.stderr and "index.lock" in failed.stderr
    assert project.subjects() == ["project"]  # nothing half-committed
    assert project.plan().settings.tick_mode == "paused"
    [event] = breaker_events(project)
    assert event.startswith(BREAKER + "git failed: git add failed") and "index.lock" in event
    assert "circuit_breaker: TRIGGERED" in (project.root / ".memento_alert").read_text()

    still_broken = project.tick()
    assert still_broken.returncode == 1 and "index.lock" in still_broken.stderr
    assert project.subjects() == ["project"]
    assert project.agent_runs() == {"T-101": 1}

    # Once git works again, the next tick undoes the half-done task and counts the attempt.
    (project.root / ".git" / "index.lock").unlink()
    ran(project.tick())
    assert project.subjects() == [  # newest first
        "memento: complete T-101 Write module A",
        "memento: T-101 failed (retry 1/3)",
        "project",
    ]
    assert project.git("status", "--porcelain") == ""


# -- stale claims ------------------------------------------------------------------------------


def test_a_stale_claim_is_reset_and_the_task_runs_again(tmp_path: Path) -> None:
    claimed = task("T-101", "~", claimed="2020-01-01T00:00:00Z worker-that-died")
    project = make_project(tmp_path, plan_of([one_phase(claimed, task("T-102"), task("T-103"))]))
    project.script({"T-101": good("T-101")})

    ran(project.tick())

    assert "Stale [~] detected on T-101, reset to [ ]" in project.events()
    reset_commit = project.subjects().index("memento: reset stale claim on T-101")
    reset = project.git("show", f"HEAD~{reset_commit}:{PLAN}")
    reset_task = parse(reset).task("T-101")
    assert reset_task is not None and (reset_task.marker, reset_task.claimed) == (" ", None)
    assert project.marker("T-101") == "x"  # picked again in the same tick
    assert project.dirty() == []


def test_a_fresh_claim_of_another_worker_is_left_alone_and_not_picked(tmp_path: Path) -> None:
    moment = format_time(datetime.now(timezone.utc) - timedelta(minutes=2))
    claimed = task("T-101", "~", claimed=f"{moment} other-worker")
    project = make_project(tmp_path, plan_of([one_phase(claimed, task("T-102"), task("T-103"))]))
    project.script({"T-101": good("T-101"), "T-102": good("T-102")})
    block = claimed.splitlines()

    ran(project.tick())

    assert not any(event.startswith("Stale") for event in project.events())
    assert [t.marker for t in project.plan().tasks] == ["~", "x", " "]
    text = project.plan_path.read_text(encoding="utf-8").splitlines()
    start = text.index(block[0])
    assert text[start : start + len(block)] == block
    assert not (project.root / "src/a.py").exists()


# -- when there is nothing to do ---------------------------------------------------------------


def test_all_tasks_complete_is_written_once(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase(task("T-101"))], total_tasks="1"))
    project.script({"T-101": good("T-101")})
    ran(project.tick())

    for _ in range(2):
        result = project.tick()
        ran(result)

    assert project.events().count("🎉 ALL TASKS COMPLETE") == 1
    assert project.subjects()[:2] == [  # said in the commit that completed the plan
        "memento: complete T-101 Write module A",
        "project",
    ]
    assert "ALL TASKS COMPLETE" in result.stdout
    assert project.dirty() == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("max_tasks", ["1", "2"])
def test_the_tick_that_completes_the_last_task_says_so_in_its_own_commit(
    tmp_path: Path, max_tasks: str
) -> None:
    project = make_project(
        tmp_path,
        plan_of([one_phase(task("T-101", "x"), task("T-102"))], max_tasks_per_tick=max_tasks),
    )
    project.script({"T-102": good("T-102")})

    result = project.tick()

    ran(result)
    assert project.subjects()[:2] == ["memento: complete T-102 Write module B", "project"]
    assert project.events() == ["🎉 ALL TASKS COMPLETE"]
    committed = project.git("show", "HEAD:docs/TICK_STATUS.md")
    assert committed.rstrip().endswith("🎉 ALL TASKS COMPLETE")
    assert "- Next: none — 🎉 ALL TASKS COMPLETE" in project.git("show", "HEAD:docs/STATE.md")
    assert "🎉 ALL TASKS COMPLETE" in result.stdout
    assert project.dirty() == []

    idle = project.tick()
    ran(idle)
    assert project.subjects()[0] == "memento: complete T-102 Write module B"
    assert project.events() == ["🎉 ALL TASKS COMPLETE"]


def test_pipeline_blocked_is_written_once(tmp_path: Path) -> None:
    phases = [
        one_phase(task("T-101")),
        phase_block(2, "Later", [task("T-102")], parallel=False, depends=[1]),
    ]
    project = make_project(
        tmp_path, plan_of(phases, max_retries="1", blocked_ratio_limit="0.9", total_tasks="2")
    )
    project.script({"T-101": wrong("T-101")})
    ran(project.tick())
    assert project.marker("T-101") == "!"
    after_block = project.head()

    for _ in range(3):
        ran(project.tick())

    line = "⚠️ PIPELINE BLOCKED — Phase 1 has unresolved [!] tasks (T-101)"
    assert project.events() == [line]
    assert project.git("rev-list", "--count", f"{after_block}..HEAD").strip() == "1"
    assert project.marker("T-102") == " "


# -- several tasks in one tick -----------------------------------------------------------------


def test_max_tasks_per_tick_runs_tasks_back_to_back_in_one_tick(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], max_tasks_per_tick="2"))
    project.script({task_id: good(task_id) for task_id in ("T-101", "T-102", "T-103")})

    ran(project.tick())

    assert [t.marker for t in project.plan().tasks] == ["x", "x", " "]
    first, second = project.entries()
    assert (first.tick, first.task_id, first.continuation) == (1, "T-101", None)
    assert (second.tick, second.task_id, second.continuation) == (1, "T-102", (2, 2))
    assert project.subjects()[:2] == [
        "memento: complete T-102 Write module B",
        "memento: complete T-101 Write module A",
    ]
    assert trailers(project, "HEAD") == "Memento-Task: T-102\nMemento-Tick: 1"
    assert trailers(project, "HEAD~1") == "Memento-Task: T-101\nMemento-Tick: 1"
    assert project.committed_files("HEAD~1") == {"src/a.py", PLAN, STATUS, STATE}
    assert project.committed_files("HEAD") == {"src/b.py", PLAN, STATUS, STATE}
    settings = project.plan().settings
    assert (settings.total_ticks, settings.completed_tasks) == (1, 2)


def test_a_task_whose_estimate_would_outlast_the_claim_is_not_started(tmp_path: Path) -> None:
    # After T-101 the tick has used some seconds: T-102's 10min no longer fit in 10min.
    tasks = [task("T-101"), task("T-102", estimate="10min"), task("T-103")]
    plan = plan_of([one_phase(*tasks)], max_tasks_per_tick="3", stale_lock_timeout="10min")
    project = make_project(tmp_path, plan)
    project.script({"T-101": good("T-101"), "T-102": {"attempts": [good("T-102")]}})

    ran(project.tick())

    assert [t.marker for t in project.plan().tasks] == ["x", " ", " "]
    assert project.agent_runs() == {}
    assert len(project.entries()) == 1


# -- refusals ----------------------------------------------------------------------------------


def test_a_dirty_tree_refuses_the_tick_and_changes_nothing(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.script({"T-101": {"attempts": [good("T-101")]}})
    (project.root / GUARD).write_text("G = 'my work in progress'\n", encoding="utf-8")
    head, plan_bytes = project.head(), project.plan_path.read_bytes()

    refused = project.tick()

    assert refused.returncode == 1
    assert GUARD in refused.stderr and "uncommitted" in refused.stderr
    assert project.head() == head and project.plan_path.read_bytes() == plan_bytes
    assert project.status_path.read_text(encoding="utf-8") == "# TICK STATUS LOG\n"
    assert project.dirty() == [f" M {GUARD}"]
    assert (project.root / GUARD).read_text() == "G = 'my work in progress'\n"
    assert project.agent_runs() == {}


def test_an_invalid_plan_refuses_the_tick_with_path_and_line(tmp_path: Path) -> None:
    broken = "".join(line for line in task("T-102").splitlines(True) if "verify" not in line)
    plan = plan_of([one_phase(task("T-101"), broken, task("T-103"))])
    project = make_project(tmp_path, plan)
    project.script({"T-101": {"attempts": [good("T-101")]}})
    line = plan.splitlines().index("- [ ] `T-102` [MODULE:core] Write module B") + 1
    head, plan_bytes = project.head(), project.plan_path.read_bytes()

    refused = project.tick()

    assert refused.returncode == 1
    assert f"docs/MASTER_PLAN.md:{line}: error: T-102 has no 'verify:' line" in refused.stderr
    assert project.head() == head and project.plan_path.read_bytes() == plan_bytes
    assert project.dirty() == [] and project.agent_runs() == {}


# -- after the tasks: alert and rotation -------------------------------------------------------


def test_the_alert_file_is_written_while_a_task_is_blocked_and_removed_when_clear(
    tmp_path: Path,
) -> None:
    project = make_project(
        tmp_path, plan_of([one_phase()], max_retries="1", blocked_ratio_limit="0.9")
    )
    project.script({"T-101": {"attempts": [wrong("T-101"), good("T-101")]}})
    alert = project.root / ".memento_alert"

    ran(project.tick())
    assert project.marker("T-101") == "!"
    text = alert.read_text(encoding="utf-8")
    assert "blocked_tasks: 1" in text and "circuit_breaker: OK" in text

    ran(project.memento("retry", "T-101"))
    ran(project.tick())

    assert project.marker("T-101") == "x"
    assert not alert.exists()


def test_the_status_log_is_rotated_into_the_archive_at_status_max_entries(
    tmp_path: Path,
) -> None:
    tasks = [task(task_id) for task_id in ("T-101", "T-102", "T-103", "T-104")]
    plan = plan_of(
        [one_phase(*tasks)], status_max_entries="3", max_tasks_per_tick="2", total_tasks="4"
    )
    project = make_project(tmp_path, plan)
    project.script({task_id: good(task_id) for task_id in ("T-101", "T-102", "T-103", "T-104")})

    ran(project.tick())
    assert not (project.root / "logs/status_archive").exists()
    ran(project.tick())

    [archive] = (project.root / "logs/status_archive").glob("TICK_STATUS_*.md")
    archived = archive.read_text(encoding="utf-8")
    assert "T-101 [MODULE:core] Write module A" in archived
    # the newest three records: the last two entries and the completion they brought
    assert [entry.task_id for entry in project.entries()] == ["T-103", "T-104"]
    assert project.events() == ["🎉 ALL TASKS COMPLETE"]
    assert "T-102 [MODULE:core] Write module B" in archived
    assert "T-101" not in project.status_path.read_text(encoding="utf-8")
    assert project.subjects()[0] == "memento: rotate the tick status log"
    assert project.dirty() == []


def test_several_failures_in_one_tick_count_as_one_failed_tick(tmp_path: Path) -> None:
    # seed §7.4: the breaker counts ticks that failed, not tasks
    plan = plan_of([one_phase()], max_tasks_per_tick="2", circuit_breaker_threshold="2")
    project = make_project(tmp_path, plan)
    project.script({"T-101": wrong("T-101"), "T-102": wrong("T-102")})

    ran(project.tick())

    assert [(e.task_id, e.outcome) for e in project.entries()] == [
        ("T-101", "failed"),
        ("T-102", "failed"),
    ]
    settings = project.plan().settings
    assert (settings.consecutive_failed_ticks, settings.tick_mode) == (1, "auto")
    assert breaker_events(project) == []
