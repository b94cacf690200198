"""Whether processes still run, read from ``/proc``: what the tests check after a kill."""

from __future__ import annotations

from pathlib import Path

#: The states of a process that has ended: a zombie waiting to be reaped, or dead.
ENDED = ("Z", "X")


def alive(pid: int) -> bool:
    """True while process ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ENDED


def group_alive(pgid: int) -> bool:
    """True while some process of process group ``pgid`` runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] not in ENDED:
            return True
    return False
