"""The dashboard's reads of the repository: the plan files, the tick logs and git (read-only).

Nothing here writes: changes go through ``memento_gh.controls.apply_control``. Git runs
through ``gitrun`` with a time limit (a page must not hang on a slow repository), and only
``log`` and ``show``, never a command that changes the repository.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Mapping
from contextlib import suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memento_gh import files, gitrun
from memento_gh.checks import check_plan_text
from memento_gh.cron import fields as cron
from memento_gh.dashboard import snapshot
from memento_gh.dashboard.writes import Rejected
from memento_gh.errors import UserError
from memento_gh.formats.status_log import ParsedEntry, parse_status
from memento_gh.layout import Layout, display
from memento_gh.lock import Busy, repo_lock
from memento_gh.plan.model import ERROR, Plan
from memento_gh.plan.scanner import parse

WORKFLOW = ".github/workflows/memento.yml"
MAX_LOG = 2 * 1024 * 1024  # bytes from the end of a tick log
MAX_DIFF = 1024 * 1024
GIT_TIMEOUT = 30
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")


def _watched(layout: Layout) -> list[Path]:
    return [
        layout.plan,
        layout.status,
        layout.notes,
        layout.project_map,
        layout.alert,
        layout.root / WORKFLOW,
    ]


def stamp(layout: Layout) -> str:
    """A version of everything the page shows, cheap enough to ask for every second: the
    files are replaced atomically, so a change always shows in their inode, size or time."""
    digest = hashlib.blake2b(digest_size=8)
    for path in _watched(layout):
        try:
            info = path.stat()
        except OSError:
            digest.update(b"-;")
            continue
        digest.update(f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns};".encode())
    return digest.hexdigest()


def load(layout: Layout, now: datetime) -> dict[str, Any]:
    """The page's state (``snapshot.build``) from the files as they are now."""
    version = stamp(layout)  # before reading: a change made meanwhile shows on the next poll
    plan, problems = check_plan_text(
        files.read_text(layout.plan), files.read_optional(layout.project_map)
    )
    data = snapshot.build(
        plan,
        display(layout.plan),
        errors=sum(1 for problem in problems if problem.severity == ERROR),
        status_text=files.read_optional(layout.status) or "",
        notes_text=files.read_optional(layout.notes) or "",
        schedules=[*schedules(layout), *crontab_schedules(layout, now)],
        alert=files.read_optional(layout.alert),
        now=now,
    )
    data["version"] = version
    return data


def read_plan(layout: Layout) -> Plan:
    return parse(files.read_text(layout.plan))


def schedules(layout: Layout) -> list[snapshot.Schedule]:
    """The cron lines of the memento workflow as pushed: GitHub runs a schedule only from
    the workflow on the remote's default branch, so one that was never pushed has none."""
    text = pushed_workflow(layout.root)
    if text is None:
        return []
    import yaml

    try:
        workflow = yaml.safe_load(text)
    except yaml.YAMLError:
        return []  # `memento validate` and actionlint report a broken workflow; not our page
    return [snapshot.Schedule(WORKFLOW, line) for line in cron.workflow_crons(workflow)]


def pushed_workflow(root: Path) -> str | None:
    """The memento workflow on ``origin``'s default branch (its ``HEAD``, as a clone knows
    it), else on the branch the current one pushes to; None when neither holds it."""
    for ref in ("refs/remotes/origin/HEAD", "@{upstream}"):
        found = _git_output(root, "show", f"{ref}:{WORKFLOW}")
        if found is not None:
            return found.decode("utf-8", errors="replace")
    return None


def crontab_schedules(
    layout: Layout, now: datetime, environ: Mapping[str, str] = os.environ
) -> list[snapshot.Schedule]:
    """This repository's line in the crontab (``memento schedule install``), if there is one;
    a machine without cron, or a crontab that cannot be read, just has no such schedule."""
    from memento_gh.cron import line as crontab
    from memento_gh.cron.table import crontab_for, repo_marker

    table = crontab_for(None, environ)
    try:
        line = crontab.find_line(table.read(), repo_marker(layout))
    except (UserError, OSError):
        return []
    if line is None:
        return []
    local = now.astimezone()
    return [
        snapshot.Schedule(
            table.name,
            crontab.schedule_of(line),
            local.tzname() or "local",
            local.tzinfo or timezone.utc,
        )
    ]


def lock_is_free(layout: Layout, wait: float) -> bool:
    """Whether the repository lock can be had within ``wait`` seconds (it is let go at once)."""
    try:
        with repo_lock(layout.lock, wait=wait):
            return True
    except Busy:
        return False


def tick_log(layout: Layout, name: str) -> str:
    """The end of a tick's log, ``logs/tick_<time>.log`` as its status entry names it."""
    folder = layout.logs.resolve()
    if not name or "\x00" in name or Path(name).is_absolute():
        raise Rejected(400, "give the log's path as the status entry names it: logs/tick_….log")
    path = (layout.root / name).resolve()
    if not path.is_relative_to(folder) or path == folder:
        raise Rejected(404, f"{name} is not in the logs folder")
    try:
        # Never waits: a FIFO there would hold the request (and its thread) for good.
        descriptor = files.open_regular(path, os.O_RDONLY)
    except UserError:
        problem = _not_a_file(path)
        raise Rejected(404, f"{name}: {problem}; remove it (memento's logs are files)") from None
    if descriptor is None:
        raise Rejected(
            404, f"no log {name} (logs are working files: another clone does not have them)"
        )
    with os.fdopen(descriptor, "rb") as stream:
        size = stream.seek(0, 2)
        stream.seek(max(0, size - MAX_LOG))
        data = stream.read()
    text = _ANSI.sub("", data.decode("utf-8", errors="replace"))
    cut = f"[the first {size - MAX_LOG:,} bytes are left out]\n" if size > MAX_LOG else ""
    return cut + text


def _not_a_file(path: Path) -> str:
    """Why ``files.open_regular`` refused ``path``."""
    with suppress(OSError):
        mode = path.lstat().st_mode
        if not stat.S_ISREG(mode):
            return f"not a regular file ({files.kind_of(mode)})"
    return "cannot open it (check its permissions)"


def find_entry(status_text: str, tick: int, task_id: str) -> ParsedEntry:
    for record in parse_status(status_text):
        if isinstance(record, ParsedEntry) and record.tick == tick and record.task_id == task_id:
            return record
    raise Rejected(404, f"no run of {task_id} in tick #{tick} in the status log")


def commit_diff(layout: Layout, tick: int, task_id: str) -> str:
    """``git show`` of the commit that recorded a task's run in a tick."""
    entry = find_entry(files.read_optional(layout.status) or "", tick, task_id)
    sha = entry.commit or _commit_of(layout.root, tick, task_id)
    if sha is None:
        raise Rejected(404, f"no commit records tick #{tick} of {task_id} on this branch")
    shown = _git_output(
        layout.root,
        "show",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--stat",
        "--patch",
        "--format=fuller",
        sha,
        "--",
    )
    if shown is None:
        raise Rejected(404, f"git cannot show commit {sha}")
    text = shown[:MAX_DIFF].decode("utf-8", errors="replace")
    if len(shown) > MAX_DIFF:
        text += f"\n[cut at {MAX_DIFF // 1024} KiB: run `git show {sha}` for the rest]\n"
    return text


def _commit_of(root: Path, tick: int, task_id: str) -> str | None:
    """The commit whose trailers name this tick and task (the entry cannot name its own)."""
    found = _git_output(
        root,
        "log",
        "-1",
        "--format=%H",
        "--all-match",
        f"--grep=^Memento-Tick: {tick}$",
        f"--grep=^Memento-Task: {task_id.replace('.', '[.]')}$",  # IDs may hold a dot
    )
    sha = (found or b"").decode().strip()
    return sha or None


def _git_output(root: Path, *args: str) -> bytes | None:
    """git's stdout, or None when it fails (not a repository, an unknown commit, no git,
    no answer within ``GIT_TIMEOUT`` seconds): the page then says what it cannot show."""
    try:
        done = gitrun.run(root, *args, timeout=GIT_TIMEOUT)
    except (UserError, OSError):
        return None
    return done.stdout if done.returncode == 0 else None
