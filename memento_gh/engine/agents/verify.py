"""Run a task's ``verify`` command: a shell line written by the plan's author.

It runs with ``/bin/sh -c`` in the repository root, in its own process group, with the same
timeout and kill rules as the agent (see :mod:`memento_gh.engine.agents.process`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import IO

from memento_gh.engine.agents.process import DEFAULT_GRACE, run_in_group
from memento_gh.engine.records import VerifyResult
from memento_gh.formats import runner_output

HEAD_LINES = runner_output.EXCERPT_LINES
HEAD_WIDTH = runner_output.LINE_CHARS


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
        head=output_head(result.output, exit_code=result.exit_code),
    )


def output_head(
    output: str, lines: int = HEAD_LINES, width: int = HEAD_WIDTH, *, exit_code: int | None = 1
) -> str:
    """The lines of ``output`` a status entry shows, at most ``lines``, each cut to
    ``width`` characters: where its runner reports the failure (or the last ones of a run
    that passed), indentation kept, colour codes and rules left out (``runner_output``)."""
    return runner_output.excerpt(output, exit_code, limit=lines, width=width)
