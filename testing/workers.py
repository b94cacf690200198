"""A pool of workers sharing one branch: a bare ``origin``, a clone per worker, and real
``memento`` processes ticking in each with ``--push``.

The agent is ``testing/agents/sleepy.py``: it sleeps, writes ``out/<task>.txt`` and logs
each run outside the repositories, so that a test can count executions per task and see
which ran at once. ``History`` reads the shared branch's commits back, oldest first: every
claim, result and reset, with its trailers.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import NamedTuple

from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from testing import ticks
from testing.agents import AGENTS_DIR
from testing.plans import meta_block, phase_block, task_block
from testing.repos import bare_repo, clone, commit_all, git, init_repo, write

SLEEPY = AGENTS_DIR / "sleepy.py"
BRANCH = "main"
#: The tick tests' Meta, with room in the status log for a whole pool's results.
META: Mapping[str, str] = {**ticks.META, "status_max_entries": "500", "total_tasks": "0"}
GITIGNORE = "logs/\n.memento.lock\n.memento_alert\n"


def task_ids(count: int, phase: int = 1) -> list[str]:
    return [f"T-{phase}{index:03d}" for index in range(1, count + 1)]


def pool_task(task_id: str, retries: int = 0) -> str:
    path = f"out/{task_id}.txt"
    fields = {
        "verify": f"`test -s {path}`",
        "context_files": f"[{path}]",
        "estimate": "1min",
        "retries": str(retries),
    }
    return task_block(task_id, " ", "core", f"Write {path}", fields=fields)


def pool_plan(phases: Sequence[tuple[int, bool]], retries: int = 0, **meta: str) -> str:
    """A plan of phases given as (task count, parallel), each depending on the one before;
    each task may be retried ``retries`` times."""
    blocks = []
    total = 0
    for number, (count, parallel) in enumerate(phases, start=1):
        tasks = [pool_task(task_id, retries) for task_id in task_ids(count, number)]
        depends = [number - 1] if number > 1 else []
        blocks.append(phase_block(number, f"Phase {number}", tasks, parallel, depends))
        total += count
    chosen = {**META, "total_tasks": str(total), **meta}
    return "\n".join(["# MASTER_PLAN: Pool\n", meta_block(chosen), "---\n", *blocks])


class Commit(NamedTuple):
    subject: str
    task: str | None
    worker: str | None
    tick: int | None
    time: float


class History:
    """The shared branch's commits, oldest first."""

    def __init__(self, commits: Sequence[Commit]) -> None:
        self.commits = list(commits)

    def of_kind(self, prefix: str) -> list[Commit]:
        return [commit for commit in self.commits if commit.subject.startswith(prefix)]

    def claims(self) -> Counter[str]:
        return Counter(c.task for c in self.of_kind("memento: claim ") if c.task)

    def completions(self) -> Counter[str]:
        return Counter(c.task for c in self.of_kind("memento: complete ") if c.task)

    def overlaps(self, tasks: set[str]) -> list[tuple[str, str]]:
        """Pairs of ``tasks`` whose claims were open at once: a claim of one landed before
        the result (or reset) of another."""
        open_claims: set[str] = set()
        found: list[tuple[str, str]] = []
        for commit in self.commits:
            subject = commit.subject
            if subject.startswith("memento: reset stale claim on "):
                open_claims -= set(subject.rpartition(" on ")[2].split(", "))
            elif commit.task in tasks and subject.startswith("memento: claim "):
                found += [(other, commit.task) for other in sorted(open_claims)]
                open_claims.add(commit.task)
            elif commit.task in tasks:
                open_claims.discard(commit.task)
        return found


class Pool:
    """A bare origin holding a plan, and a clone per worker."""

    def __init__(
        self,
        folder: Path,
        plan: str,
        workers: int,
        *,
        agent_seconds: float,
        meet_seconds: float | None = None,
        memento: Sequence[str] = (sys.executable, "-m", "memento_gh"),
    ) -> None:
        """``workers`` clones of an origin holding ``plan``; each agent run sleeps
        ``agent_seconds``, and with ``meet_seconds`` the first run waits that long at most
        for a second one to start (``SLEEPY_MEET`` of ``testing/agents/sleepy.py``).
        ``memento`` is the command that starts memento (an installed one, for a benchmark)."""
        self.folder = folder
        self.memento = list(memento)
        self.origin = bare_repo(folder / "origin.git")
        self.log = folder / "agent-runs.log"
        self.agent_seconds = agent_seconds
        self.meet_seconds = meet_seconds
        seed = init_repo(folder / "seed")
        files = {
            "docs/MASTER_PLAN.md": plan,
            "docs/TICK_STATUS.md": "# TICK STATUS LOG\n",
            "docs/HUMAN_NOTES.md": "# HUMAN NOTES\n\n## Active Notes\n\n---\n\n## Archive\n",
            ".gitignore": GITIGNORE,
            "out/.keep": "",
        }
        for name, text in files.items():
            write(seed, name, text)
        commit_all(seed, "the plan")
        git(seed, "branch", "-M", BRANCH)
        git(seed, "remote", "add", "origin", str(self.origin))
        git(seed, "push", "-q", "origin", BRANCH)
        self.clones = [
            clone(self.origin, folder / f"worker-{index}") for index in range(1, workers + 1)
        ]

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("MEMENTO_", "GIT_"))
        }
        env.update(NO_COLOR="1", SLEEPY_LOG=str(self.log), SLEEPY_SECONDS=str(self.agent_seconds))
        if self.meet_seconds is not None:
            env["SLEEPY_MEET"] = str(self.meet_seconds)
        return {**env, **(extra or {})}

    def agent_command(self) -> str:
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(SLEEPY))} {{task_id}} {{repo}}"

    def start(
        self, index: int, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """``memento run --push`` in worker ``index``'s clone (1-based), until the plan rests."""
        argv = [
            *self.memento,
            "run",
            "--every",
            "0.2s",
            "--until-done",
            "--push",
            "--worker-id",
            f"w{index}",
            "--agent-cmd",
            self.agent_command(),
            *args,
        ]
        return subprocess.Popen(
            argv,
            cwd=self.clones[index - 1],
            env=self.env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def run_all(self, timeout: float, *args: str) -> list[str]:
        """Start every worker at once and wait for all; their outputs, in worker order."""
        started = [self.start(index, *args) for index in range(1, len(self.clones) + 1)]
        return [finish(process, timeout) for process in started]

    def history(self) -> History:
        listing = git(
            self.origin,
            "log",
            "--reverse",
            "--format=%s%x1f%(trailers:key=Memento-Task,valueonly)%x1f"
            "%(trailers:key=Memento-Worker,valueonly)%x1f"
            "%(trailers:key=Memento-Tick,valueonly)%x1f%ct%x1e",
            BRANCH,
        )
        commits = []
        for record in listing.split("\x1e"):
            if not record.strip():
                continue
            subject, task, worker, tick, stamp = record.strip("\n").split("\x1f")
            number = int(tick) if tick.strip() else None
            commits.append(
                Commit(subject, task.strip() or None, worker.strip() or None, number, float(stamp))
            )
        return History(commits)

    def plan(self) -> Plan:
        return parse(self.show("docs/MASTER_PLAN.md"))

    def show(self, path: str) -> str:
        return git(self.origin, "show", f"{BRANCH}:{path}")

    def age_claim(self, task_id: str, by: timedelta) -> None:
        """Move the claim of ``task_id`` on the branch ``by`` into the past, as if its worker
        had claimed the task that much earlier: one commit, pushed. Call it while no worker
        runs, or it races them."""
        scratch = clone(self.origin, self.folder / f"aging-{task_id}")
        path = scratch / "docs" / "MASTER_PLAN.md"
        text = path.read_text(encoding="utf-8")
        task = parse(text).task(task_id)
        assert task is not None and task.claimed is not None, f"{task_id} is not claimed"
        older = task.claimed._replace(at=task.claimed.at - by)
        line = f"  - claimed: {task.claimed.render()}\n"
        assert text.count(line) == 1, f"no single claim line for {task_id}"
        path.write_text(text.replace(line, f"  - claimed: {older.render()}\n"), encoding="utf-8")
        commit_all(scratch, f"test: {task_id} claimed {by} earlier")
        git(scratch, "push", "-q", "origin", f"HEAD:{BRANCH}")

    def runs(self) -> Counter[str]:
        """How often the agent started on each task."""
        if not self.log.exists():
            return Counter()
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return Counter(line.split()[1] for line in lines if line.startswith("start "))


def finish(process: subprocess.Popen[str], timeout: float) -> str:
    """Wait for ``process``; kill its whole group and fail when it outlives ``timeout``."""
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        raise AssertionError(f"a worker ran past {timeout}s:\n{out}") from None
    return out


def wait_for(predicate: object, timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate()`` until it is true or ``timeout`` seconds pass."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
