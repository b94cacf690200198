"""``memento github``: what the GitHub Action runs (see memento_gh/github/action.py)."""

from __future__ import annotations

import argparse
import os
import signal
from types import FrameType

from memento_gh.layout import Layout


def run(args: argparse.Namespace, layout: Layout) -> int:
    from memento_gh.github import action

    if args.check:
        return action.check(os.environ)
    # A cancelled job sends SIGTERM: unwind like Ctrl-C so a running agent is stopped and
    # the next run recovers the claim.
    signal.signal(signal.SIGTERM, _interrupt)
    return action.run(os.environ, layout.root)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
