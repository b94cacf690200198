#!/usr/bin/env python3
"""A fake ``aider`` for ``memento tick --agent aider``: put it on PATH as ``aider``.

The aider preset runs ``aider --message-file PROMPT ... --test-cmd VERIFY --auto-test``.
Like aider 0.86 (its ``aider/run_cmd.py``), this does its work, prints its usage report,
then runs the test command through the shell and prints what it prints live, into its own
output, after the report. The work is ``hostile.py``'s steps (``MEMENTO_HOSTILE``), run on
the prompt file and the task it claims (``- [~] `T-ID```); the report's price is
``MEMENTO_FAKE_AIDER_COST`` (USD, default 0.60). It imports nothing but the standard library.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HOSTILE = Path(__file__).resolve().with_name("hostile.py")


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def main(argv: list[str]) -> int:
    prompt = option(argv, "--message-file")
    if prompt is None:
        print("fake aider: no --message-file", file=sys.stderr)
        return 2
    claimed = re.search(r"- \[~\] `([^`]+)`", Path(prompt).read_text(encoding="utf-8"))
    task = [claimed.group(1)] if claimed else []
    done = subprocess.run([sys.executable, str(HOSTILE), prompt, *task], check=False)
    if done.returncode != 0:
        return done.returncode
    cost = float(os.environ.get("MEMENTO_FAKE_AIDER_COST") or "0.60")
    print("Applied edit to the files of the task", flush=True)
    print(f"Tokens: 900 sent, 40 received. Cost: ${cost:.2f} message, ${cost:.2f} session.")
    sys.stdout.flush()
    test = option(argv, "--test-cmd")
    if test is not None:
        # As aider does: the shell, stderr into stdout, newlines read universally, each
        # piece printed as it comes.
        child = subprocess.Popen(
            test,
            shell=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert child.stdout is not None
        for chunk in iter(lambda: child.stdout.read(1), ""):  # type: ignore[union-attr]
            print(chunk, end="", flush=True)
        child.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
