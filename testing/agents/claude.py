#!/usr/bin/env python3
"""A fake ``claude`` for ``memento tick --agent claude``: put it on PATH as ``claude``.

The ``claude`` preset runs ``claude -p INSTRUCTION --output-format json ...`` with the prompt
on stdin. This reads the prompt, finds the task it claims (``- [~] `T-ID```), runs
``scripted.py`` (beside it) on the prompt and that task, so ``MEMENTO_FAKE_ACTIONS`` or
``MEMENTO_FAKE_SCRIPT`` say what it does, and prints a Claude Code JSON result. It imports
nothing but the standard library.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPTED = Path(__file__).resolve().with_name("scripted.py")


def main() -> int:
    prompt = sys.stdin.read()
    claimed = re.search(r"- \[~\] `([^`]+)`", prompt)
    if claimed is None:
        print("fake claude: no claimed task in the prompt", file=sys.stderr)
        return 2
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as saved:
        saved.write(prompt)
    try:
        done = subprocess.run(
            [sys.executable, str(SCRIPTED), saved.name, claimed.group(1)], check=False
        )
    finally:
        Path(saved.name).unlink()
    failed = done.returncode != 0
    print(json.dumps({"type": "result", "is_error": failed, "total_cost_usd": 0.01}))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
