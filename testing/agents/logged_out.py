#!/usr/bin/env python3
"""A coding agent's command line whose user is not logged in, for the status log's tests.

Installed on PATH as ``claude`` (or any agent's name), it reads its input, prints a line of
progress, then says ``Not logged in · Please run /login`` as Claude Code does, and exits 1.
Given ``--output-format json`` (as memento's ``claude`` preset asks) it says so in the result
object that format prints, with ``is_error`` set, the way Claude Code reports a failure
there. It imports nothing but the standard library.
"""

from __future__ import annotations

import json
import sys

MESSAGE = "Not logged in · Please run /login"


def main(argv: list[str]) -> int:
    if not sys.stdin.isatty():
        sys.stdin.read()
    print("Checking the credentials...", flush=True)
    if "--output-format" in argv and argv[argv.index("--output-format") + 1 :][:1] == ["json"]:
        result = {"type": "result", "subtype": "success", "is_error": True, "result": MESSAGE}
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(MESSAGE, file=sys.stderr)
    print("", flush=True)
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
