"""The running marker, and recovery from a tick that died.

While a tick writes, ``.git/memento/running.json`` says so: which task it runs, and the tag
of the processes it starts. A marker found by a tick that holds the repository lock was
left by one that died (killed, out of memory, a power cut): the new tick stops what the dead
one left running, undoes its half-done work and counts the attempt the dead tick was making.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from memento_gh import files
from memento_gh.engine import wall
from memento_gh.engine.agents import process
from memento_gh.engine.tick.session import RUN_TAG, Session
from memento_gh.errors import UserError
from memento_gh.workspace import RollbackReport


class RunningMarker:
    def __init__(self, path: Path, worker: str, run_tag: str) -> None:
        self.path = path
        self.worker = worker
        self.run_tag = run_tag

    def write(
        self,
        task_id: str | None,
        tick: int | None,
        extra: Mapping[str, str | None],
        *,
        durable: bool = True,
    ) -> None:
        """Say that this tick is writing, and which task it runs (None: between tasks).
        ``extra`` is what the branch needs to recover (``base``/``claim`` when shared)."""
        fields = {"task": task_id, "tick": tick, "worker": self.worker, "run": self.run_tag}
        files.write_atomic(self.path, json.dumps({**fields, **extra}), durable=durable)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def read(self) -> dict[str, Any] | None:
        """What a dead tick's marker says ({} when it cannot be read); None: no marker."""
        try:
            data = files.read_bytes(self.path, limit=1 << 20)
            if data is None:
                return None
            found = json.loads(data)
        except (UserError, ValueError):  # a FIFO or worse in its place: a dead tick's too
            return {}
        return found if isinstance(found, dict) else {}


class Recovers(Protocol):
    def adopts(self, found: Mapping[str, Any]) -> bool: ...
    def recover(self, found: Mapping[str, Any], report: RollbackReport) -> None: ...


def recover_dead_tick(session: Session, marker: RunningMarker, branch: Recovers) -> bool:
    """Recover from the tick whose marker is left, if any: stop the agent or verify it left
    running, roll its work back, and let the branch count the attempt. True when there was
    such a tick. The marker stays until that is recorded: dying meanwhile is recovered the
    same way."""
    found = marker.read()
    if found is None or branch.adopts(found):
        return False
    tag = found.get("run")
    if isinstance(tag, str) and tag:
        groups = process.stop_tagged(RUN_TAG, tag)
        if groups:
            session.say(f"Stopped {len(groups)} process group(s) the dead tick left running")
    # The index the dead tick's agent found died with it: the one it left may hide files.
    wall.fresh_index(session.workspace)
    report = session.workspace.rollback(session.keep, label="dead-tick")
    branch.recover(found, report)
    marker.clear()
    return True
