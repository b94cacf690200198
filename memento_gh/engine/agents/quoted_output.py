"""Run a shell command and pass its output on with every line quoted (``| `` in front).

aider's ``--test-cmd`` is how the aider preset runs a task's verify, and aider prints what
that command prints into its own output, live, after its usage report. verify runs the
agent's code: a line of it like ``Cost: $0.00 session.`` would pass for aider's report, and
the spend memento reads from that output (``cost_reports.py``). Quoted, no line verify
prints starts where aider's report does; aider still gets the whole output to show the
model.

Run as a program by path, with ``python -I``: then it imports nothing from the repository
the command runs in (not even a planted ``memento_gh`` package). Standard library only.

    python -I quoted_output.py COMMAND
"""

from __future__ import annotations

import subprocess
import sys

QUOTE = b"| "
_PIECE = 1 << 16


def quoted(line: bytes) -> bytes:
    """One line of output (its ``\\n`` kept), quoted; a lone carriage return inside it,
    which aider's reading of the output turns into a line break, starts a quoted line too."""
    body, newline = (line[:-1], b"\n") if line.endswith(b"\n") else (line, b"")
    body = body.removesuffix(b"\r")
    return QUOTE + body.replace(b"\r", b"\n" + QUOTE) + newline


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: quoted_output.py COMMAND", file=sys.stderr)
        return 2
    child = subprocess.Popen(
        ["/bin/sh", "-c", argv[0]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output = child.stdout
    assert output is not None
    out = sys.stdout.buffer
    # At most _PIECE bytes at a time: a piece of a longer line is quoted in the middle of
    # the line, which starts no line.
    for line in iter(lambda: output.readline(_PIECE), b""):
        out.write(quoted(line))
        out.flush()
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
