"""A small memento project in a real git repository, and real ``memento`` runs on it.

``make_project`` commits a plan of three tasks, each asking for one file that holds one word
(``T-101``: ``src/a.py`` containing ``A``), a guard file, the notes and the status log. A
test scripts the fake agent (``testing/agents/scripted.py``) per task, runs ``memento tick``
with the command line a user would type, and reads the real state back: the plan, the status
log, the notes, ``git log`` and the working tree.

``Project.tick`` and ``Project.memento`` run the command in the test's own process
(``testing.cli.call_memento``); ``tick_process``, ``memento_process`` and ``start_tick``
start a real ``memento`` process, for a test about the process itself: a kill, a signal, a
lock held by another process, a crash point (``MEMENTO_CRASH_AT``), its exit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from memento_gh.formats.notes import Note, parse_notes
from memento_gh.formats.status_log import Event, ParsedEntry, Record, parse_status
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from testing.agents import Action, Script, scripted_command, scripted_env, write_script
from testing.cli import call_memento, run_memento
from testing.plans import meta_block, phase_block, task_block
from testing.repos import commit_all, git, init_repo, write

#: Meta of the project's plan; a test overrides what it is about.
META: Mapping[str, str] = {
    "created": "2025-01-15",
    "tick_mode": "auto",
    "max_retries": "3",
    "max_tasks_per_tick": "1",
    "max_diff_lines": "200",
    "stale_lock_timeout": "15min",
    "circuit_breaker_threshold": "5",
    "blocked_ratio_limit": "0.5",
    "clean_ignore": ".memento_cleanignore",
    "status_max_entries": "50",
    "agent_timeout": "60s",
    "verify_timeout": "30s",
    "total_ticks": "0",
    "total_tasks": "3",
    "completed_tasks": "0",
    "consecutive_failed_ticks": "0",
}
#: Each task asks for one file holding one word.
TASK_FILES: Mapping[str, tuple[str, str]] = {
    "T-101": ("src/a.py", "A"),
    "T-102": ("src/b.py", "B"),
    "T-103": ("src/c.py", "C"),
    "T-104": ("src/d.py", "D"),
}
GITIGNORE = "logs/\n.memento.lock\n.memento_alert\n"
CLEANIGNORE = "# kept by every rollback\n.env\nnode_modules/\n"
NOTES = "# HUMAN NOTES\n\n## Active Notes\n\n---\n\n## Archive\n"
STATUS = "# TICK STATUS LOG\n"
GUARD = "src/guard.py"

#: memento's variables a developer may have set; a test run must not pick them up.
UNSET = (
    "MEMENTO_AGENT",
    "MEMENTO_AGENT_CMD",
    "MEMENTO_PLAN_DIR",
    "MEMENTO_CRASH_AT",
    "MEMENTO_MODEL",
    "MEMENTO_AGENT_ARGS",
)

Completed = subprocess.CompletedProcess[str]


def task(task_id: str, marker: str = " ", **fields: str) -> str:
    """The block of ``task_id`` (see ``TASK_FILES``); keyword arguments replace or add fields."""
    path, word = TASK_FILES[task_id]
    chosen = {
        "verify": f"`grep -q {word} {path} || {{ echo '{path} has no {word}'; exit 1; }}`",
        "context_files": f"[{path}]",
        "guard_files": f"[{GUARD}]",
        "estimate": "1min",
        "retries": "0",
        **fields,
    }
    return task_block(task_id, marker, "core", f"Write module {word}", fields=chosen)


def plan_of(phases: Sequence[str], **meta: str) -> str:
    blocks = ["# MASTER_PLAN: Demo\n", meta_block({**META, **meta}), "---\n", *phases]
    return "\n".join(blocks)


def one_phase(*tasks: str) -> str:
    """Phase 1 with ``tasks`` (default: T-101, T-102 and T-103)."""
    chosen = tasks or tuple(task(task_id) for task_id in ("T-101", "T-102", "T-103"))
    return phase_block(1, "Core", chosen, parallel=True)


def good(task_id: str) -> list[Action]:
    """The actions of an agent that does ``task_id`` right."""
    path, word = TASK_FILES[task_id]
    return [{"write": path, "text": f"{word} = 1\n"}]


def wrong(task_id: str) -> list[Action]:
    """The actions of an agent that writes the file without the word verify looks for."""
    path, _ = TASK_FILES[task_id]
    return [{"write": path, "text": "nothing = 0\n"}]


class Project:
    """A repository at ``root`` and a folder ``outside`` it for scripts, pids and dumps."""

    def __init__(self, root: Path, outside: Path) -> None:
        self.root = root
        self.outside = outside
        self.script_path = outside / "script.json"

    @property
    def plan_path(self) -> Path:
        return self.root / "docs" / "MASTER_PLAN.md"

    @property
    def status_path(self) -> Path:
        return self.root / "docs" / "TICK_STATUS.md"

    @property
    def notes_path(self) -> Path:
        return self.root / "docs" / "HUMAN_NOTES.md"

    # -- running --------------------------------------------------------------------------

    def script(self, script: Script) -> None:
        """What the fake agent does, per task (see ``scripted.py``); runs are counted."""
        write_script(self.script_path, script)

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        script = self.script_path if self.script_path.exists() else None
        env = scripted_env(script=script, state=self.outside / "runs.json")
        # memento reads an empty variable as unset: the caller's own settings stay out
        env.update(dict.fromkeys(UNSET, ""))
        return {**env, **(extra or {})}

    def tick(self, *args: str, env: Mapping[str, str] | None = None) -> Completed:
        """``memento tick`` with the fake agent, in this process."""
        return self.memento("tick", "--agent-cmd", scripted_command(), *args, env=env)

    def tick_process(
        self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> Completed:
        """``memento tick`` with the fake agent, in a process of its own (killed after
        ``timeout`` seconds: ``subprocess.TimeoutExpired``)."""
        argv = ("tick", "--agent-cmd", scripted_command(), *args)
        return self.memento_process(*argv, env=env, timeout=timeout)

    def start_tick(self, *args: str) -> subprocess.Popen[str]:
        """A tick started in the background (read its output with ``communicate``)."""
        argv = [sys.executable, "-m", "memento_gh", "tick", "--agent-cmd", scripted_command()]
        return subprocess.Popen(
            [*argv, *args],
            cwd=self.root,
            env={**self.env(), "NO_COLOR": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def memento(self, *args: str, env: Mapping[str, str] | None = None) -> Completed:
        """``memento ARGS`` in the repository, in this process."""
        return call_memento(*args, cwd=self.root, env=self.env(env))

    def memento_process(
        self, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> Completed:
        """``memento ARGS`` in the repository, in a process of its own."""
        return run_memento(*args, cwd=self.root, env=self.env(env), timeout=timeout)

    def agent_runs(self) -> dict[str, int]:
        """How often the fake agent ran each task scripted with ``attempts``."""
        state = self.outside / "runs.json"
        return json.loads(state.read_text(encoding="utf-8")) if state.exists() else {}

    # -- reading --------------------------------------------------------------------------

    def plan(self) -> Plan:
        return parse(self.plan_path.read_text(encoding="utf-8"))

    def marker(self, task_id: str) -> str:
        found = self.plan().task(task_id)
        assert found is not None, f"{task_id} is not in the plan"
        return found.marker

    def records(self) -> list[Record]:
        return parse_status(self.status_path.read_text(encoding="utf-8"))

    def entries(self) -> list[ParsedEntry]:
        return [record for record in self.records() if isinstance(record, ParsedEntry)]

    def events(self) -> list[str]:
        return [record.text for record in self.records() if isinstance(record, Event)]

    def notes(self) -> tuple[Note, ...]:
        return parse_notes(self.notes_path.read_text(encoding="utf-8")).notes

    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def subjects(self) -> list[str]:
        """Commit subjects, newest first."""
        return self.git("log", "--format=%s").splitlines()

    def message(self, rev: str = "HEAD") -> str:
        return self.git("log", "-1", "--format=%B", rev)

    def committed_files(self, rev: str = "HEAD") -> set[str]:
        listing = self.git("show", "--name-only", "--format=", rev)
        return set(listing.split())

    def dirty(self) -> list[str]:
        """``git status --porcelain`` lines: what differs from HEAD, ignored files aside."""
        return self.git("status", "--porcelain", "--untracked-files=all").splitlines()

    def ever_committed(self, path: str) -> bool:
        return bool(self.git("log", "--all", "--format=%H", "--", path).strip())


def trailers(project: Project, rev: str = "HEAD") -> str:
    """The trailers of commit ``rev`` (``Memento-Task: T-101``...), one a line."""
    return project.git("log", "-1", "--format=%(trailers:only,unfold)", rev).strip()


def make_project(
    tmp_path: Path,
    plan: str | None = None,
    *,
    files: Mapping[str, str | bytes] | None = None,
    gitignore: bool = True,
) -> Project:
    """A committed repository holding ``plan`` (default: the three tasks of ``TASK_FILES``),
    the guard file, empty notes and status log, ``.memento_cleanignore`` and, unless
    ``gitignore`` is False, a ``.gitignore`` of memento's working files."""
    root = init_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    contents: dict[str, str | bytes] = {
        "docs/MASTER_PLAN.md": plan if plan is not None else plan_of([one_phase()]),
        "docs/HUMAN_NOTES.md": NOTES,
        "docs/TICK_STATUS.md": STATUS,
        GUARD: "G = 1\n",
        ".memento_cleanignore": CLEANIGNORE,
        **({".gitignore": GITIGNORE} if gitignore else {}),
        **(files or {}),
    }
    for name, content in contents.items():
        write(root, name, content)
    commit_all(root, "project")
    return Project(root, outside)
