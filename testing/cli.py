"""Run the real ``memento`` command in a subprocess, as a user or a hook would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_memento(
    *args: str | Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "memento_gh", *map(str, args)],
        cwd=cwd,
        env=environ,
        input=input,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
