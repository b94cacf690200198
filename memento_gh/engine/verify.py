"""Run a task's ``verify`` command: a shell line written by the plan's author.

It runs with ``/bin/sh -c`` in the repository root, in its own process group, with the same
timeout and kill rules as the agent (see :mod:`memento_gh.engine.process`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from memento_gh.engine.process import DEFAULT_GRACE, run_in_group
from memento_gh.engine.records import VerifyResult

HEAD_LINES = 5
HEAD_WIDTH = 300
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def run_verify(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float | None,
    log: Path | IO[bytes] | None = None,
    grace: float = DEFAULT_GRACE,
) -> VerifyResult:
    result = run_in_group(
        command, cwd=cwd, env=env, timeout=timeout, log=log, shell=True, grace=grace
    )
    return VerifyResult(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=result.duration,
        output=result.output,
        head=output_head(result.output),
    )


def output_head(output: str, lines: int = HEAD_LINES, width: int = HEAD_WIDTH) -> str:
    """The first ``lines`` non-blank lines of ``output``, without colour codes, each trimmed
    and cut to ``width`` characters (an ellipsis marks a cut)."""
    head: list[str] = []
    plain = _ESCAPES.sub("", output) if "\x1b" in output else output
    for line in plain.splitlines():
        text = line.strip()
        if not text:
            continue
        head.append(text if len(text) <= width else text[: width - 1] + "…")
        if len(head) == lines:
            break
    return "\n".join(head)
