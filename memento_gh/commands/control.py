"""``memento pause|resume|stop|retry|skip|note``: steer the plan from the command line."""

from __future__ import annotations

import argparse

from memento_gh.controls.apply import apply_control
from memento_gh.controls.model import Control
from memento_gh.layout import Layout


def run(args: argparse.Namespace, layout: Layout) -> int:
    action = args.command
    if action == "note":
        control = Control("note", None if args.for_all else args.task, args.text)
    else:
        control = Control(action, getattr(args, "task", None), getattr(args, "why", ""))
    print(apply_control(layout, control, wait=args.wait))
    return 0
