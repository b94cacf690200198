"""Redaction of a 50 MB log: memento's redactor beside the plain regex idioms it was chosen over.

    .venv/bin/python benchmarks/bench_redact.py [--rounds N] [--megabytes N] [--python PATH]

The log is ordinary lines (words, paths, task names, "sk-" and "gh" inside words) with a
GitHub token, an Anthropic key and a credential variable's value every 10,000 lines. Each
round times every way once, in turn, in the interpreter of memento installed by
`pip install .` (``installed.py``); the report gives medians, MB/s and the ratio to
memento's. The ways:

- ``lookbehind first``: one alternation of all patterns, each starting with its lookbehind
  (``(?<![A-Za-z0-9_])gh[pousr]_…``): the regex engine tries every position of the text;
- ``one alternation``: memento's patterns, each starting with a plain character (the
  engine skips to where one of them occurs), in one alternation: one pass;
- ``memento``: ``memento_gh.redact.Redactor``, the same patterns, one ``re.sub`` each.

Every way must give the same text; the benchmark checks it.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from installed import add_option, python_for

CHILD = r"""
import re, statistics, sys, time
from memento_gh import redact

megabytes, rounds = int(sys.argv[1]), int(sys.argv[2])
secret = "s3cr3t-value-of-a-database"
environ = {"DATABASE_PASSWORD": secret, "HOME": "/home/runner"}
keys = ["ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8", "sk-ant-api03-" + "Zq9" * 20, secret]
line = "2024-05-01T10:00:00Z INFO ran task-123 over /usr/lib/x.so: risk-free, 42 tests passed\n"
lines = [line] * (megabytes * 1_000_000 // len(line))
for index in range(0, len(lines), 10_000):
    lines[index] = f"token {keys[index // 10_000 % 3]} printed\n"
text = "".join(lines)

redactor = redact.Redactor.from_environ(environ)
literals = redactor.alternatives[: -len(redact._FORMATS)]
plain_first = [
    re.sub(r"^(.)\(\?<!(\[[^]]*\])\1\)", r"(?<!\2)\1", pattern) for pattern in redact._FORMATS
]
lookbehind_first = re.compile("|".join([*literals, *plain_first]))
alternation = re.compile("|".join(redactor.alternatives))
ways = {
    "lookbehind first": lambda: lookbehind_first.sub(redact._mask, text),
    "one alternation": lambda: alternation.sub(redact._mask, text),
    "memento": lambda: redactor.redact(text),
}
expected = redactor.redact(text)
assert not any(key in expected for key in keys)
samples = {name: [] for name in ways}
for _ in range(rounds):
    for name, way in ways.items():
        start = time.perf_counter()
        result = way()
        samples[name].append(time.perf_counter() - start)
        assert result == expected, name
chosen_median = statistics.median(samples["memento"])
print(f"{len(text) / 1e6:.0f} MB of log, {text.count(chr(10)):,} lines, median of {rounds} rounds")
print(f"{'way':<24}{'median s':>10}{'MB/s':>8}{'x memento':>11}")
for name, times in samples.items():
    median = statistics.median(times)
    speed = len(text) / 1e6 / median
    print(f"{name:<24}{median:>10.2f}{speed:>8.0f}{median / chosen_median:>11.2f}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--megabytes", type=int, default=50)
    add_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        python = python_for(args.python, Path(folder))
        done = subprocess.run(
            [str(python), "-c", CHILD, str(args.megabytes), str(args.rounds)],
            cwd=folder,
            check=False,
        )
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
