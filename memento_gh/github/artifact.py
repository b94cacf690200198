"""The run's logs as one artifact: what this run wrote under ``logs/`` (the tick log with the
agent's and verify's output, the prompts), redacted into a folder of their own under
RUNNER_TEMP, which the action's next step uploads with actions/upload-artifact.

A run starts on a new runner, so ``logs/`` holds only what it wrote; on a runner that keeps
its workspace, files older than the run are left out.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from memento_gh import files
from memento_gh.engine.records import TaskOutcome
from memento_gh.errors import UserError
from memento_gh.github import issue_texts, reconcile

FOLDER = "memento-logs"
#: Lines of the verify output a blocked task's issue shows inline.
TAIL_LINES = 30
#: A file's last this many bytes at most go into the artifact (an agent may write a huge
#: file under logs/; what ended a run is at the end of its log).
MAX_FILE_BYTES = 100 * 1000**2


class Place(NamedTuple):
    """Where this run's artifact goes, what it is called, where a person finds it, and
    when the run started (what ``logs/`` held before is not the run's)."""

    folder: Path
    name: str
    url: str | None
    since: float = 0.0


def place(env: Mapping[str, str], worker: str, run_url: str | None) -> Place | None:
    """The artifact of this run (named by run, attempt and worker), or None off Actions."""
    temp, run_id = env.get("RUNNER_TEMP"), env.get("GITHUB_RUN_ID")
    if not temp or not run_id:
        return None
    attempt = env.get("GITHUB_RUN_ATTEMPT") or "1"
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"memento-logs-{run_id}-{attempt}-{worker}")
    url = f"{run_url}#artifacts" if run_url else None
    return Place(Path(temp) / FOLDER, name, url, time.time())


def stage(logs: Path, target: Path, redact: Callable[[str], str], since: float) -> list[str]:
    """Copy the files under ``logs`` written at or after ``since`` (a time.time()) into
    ``target``, redacted whatever the plan's ``redact_logs`` says; returns their names.

    The agent may have left links, FIFOs or devices there, or swap a file for a link while
    this runs: each folder is opened without following a link (``os.fwalk``) and each file
    by name in its folder, never through a link (``files.open_regular``), so what is copied
    is a regular file under ``logs`` and nothing else."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    copied: list[str] = []
    if not logs.is_dir():
        return copied  # (a link to a folder is walked as nothing: fwalk never follows it)
    for folder, _, names, folder_fd in os.fwalk(logs, follow_symlinks=False):
        for name in names:
            data = _recent_tail(name, folder_fd, since)
            if data is None:
                continue
            relative = (Path(folder) / name).relative_to(logs)
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            text = data.decode("utf-8", errors="surrogateescape")
            (target / relative).write_bytes(redact(text).encode("utf-8", errors="surrogateescape"))
            copied.append(relative.as_posix())
    return sorted(copied)


def _recent_tail(name: str, folder_fd: int, since: float) -> bytes | None:
    """The last ``MAX_FILE_BYTES`` of regular file ``name`` in the open folder, when it was
    written at or after ``since``; None for anything else (a link, a FIFO, an older file)."""
    try:
        descriptor = files.open_regular(Path(name), os.O_RDONLY, dir_fd=folder_fd)
    except UserError:
        return None  # not a regular file: never the run's log
    if descriptor is None:
        return None
    try:
        found = os.fstat(descriptor)
        if found.st_mtime < since - 1:
            return None
        os.lseek(descriptor, max(0, found.st_size - MAX_FILE_BYTES), os.SEEK_SET)
        data = bytearray()
        while len(data) < MAX_FILE_BYTES:
            chunk = os.read(descriptor, min(1 << 20, MAX_FILE_BYTES - len(data)))
            if not chunk:
                break
            data += chunk
        return bytes(data)
    finally:
        os.close(descriptor)


def stage_run(logs: Path, where: Place | None, redact: Callable[[str], str]) -> Place | None:
    """``stage`` for this run's artifact, when it has one: None when nothing is to upload."""
    if where is None or not stage(logs, where.folder, redact, where.since):
        return None
    return where


def outputs(where: Place | None) -> dict[str, str]:
    """The step's outputs the upload step reads."""
    return {
        "artifact-name": where.name if where else "",
        "logs-dir": str(where.folder) if where else "",
    }


def tail(output: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of a command's output, blank ones at its end left out."""
    return "\n".join(output.rstrip().splitlines()[-lines:])


def blocked_replies(
    tasks: Sequence[TaskOutcome], issues: Mapping[str, str], where: Place | None
) -> list[reconcile.Reply]:
    """A comment on the issue of each task this run blocked: the artifact's link and the end
    of the verify output. ``issues``: the issues' URLs by task (``…/issues/<number>``)."""
    replies: list[reconcile.Reply] = []
    for task in tasks:
        url = issues.get(task.task_id)
        number = url.rsplit("/", 1)[-1] if url else ""
        if task.outcome != "blocked" or not number.isdigit():
            continue
        body = issue_texts.blocked_run_comment(
            task.task_id,
            tail(task.verify_output),
            where.name if where else None,
            where.url if where else None,
        )
        replies.append(reconcile.Reply(int(number), body))
    return replies
