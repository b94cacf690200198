"""``memento plan draft`` and ``memento plan revise``: the architect, from the command line."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memento_gh import files
from memento_gh.errors import UserError
from memento_gh.layout import Layout

if TYPE_CHECKING:
    import argparse

    from memento_gh.architect.run import AgentSettings


def run(args: argparse.Namespace, layout: Layout) -> int:
    from memento_gh.architect import flows

    if args.rounds < 1:
        raise UserError(f"--rounds must be at least 1, not {args.rounds}")
    now = datetime.now(timezone.utc)
    settings = agent_settings(args, layout)
    if args.action == "draft":
        sha, outcome = flows.draft(
            layout, settings, _read_spec(args.spec), rounds=args.rounds, now=now
        )
        rounds = f"{outcome.rounds} round" + ("s" if outcome.rounds != 1 else "")
        print(f"drafted {layout.plan.relative_to(layout.root)} in {rounds} (committed {sha[:7]})")
        print(f"the architect's proposal: {outcome.proposal}")
        if _warn(layout, None, files.read_text(layout.plan)):
            print("read the warnings above before the first tick: the plan runs as it says")
        return 0
    before = files.read_optional(layout.plan)
    revision = flows.propose_revision(
        layout, settings, task=args.task, why=args.why, rounds=args.rounds, now=now
    )
    sys.stdout.write(revision.diff or "the architect proposed no change\n")
    if not revision.diff:
        flows.discard_revision(layout)
        return 0
    warned = _warn(layout, before, revision.text)
    if warned and args.apply:
        print(
            "not applied: --apply takes a revision without warnings only; read the diff and "
            "the warnings above, then apply it from the dashboard (`memento dashboard`)"
        )
        return 1
    if not args.apply:
        print("not applied; run again with --apply to write it, or apply it from the dashboard")
        return 0
    sha = flows.apply_revision(layout, revision, now, dict(os.environ))
    print(f"revised {layout.plan.relative_to(layout.root)} (committed {sha[:7]})")
    return 0


def _warn(layout: Layout, before: str | None, after: str) -> bool:
    """Say the warnings a draft or a revision brings into the plan (a verify that runs
    downloaded code, a task that may change the whole tree unguarded); True when any."""
    from memento_gh.plan.risks import risks_added
    from memento_gh.plan.scanner import parse

    found = risks_added(parse(before) if before is not None else None, parse(after))
    shown = layout.plan.relative_to(layout.root).as_posix()
    for problem in found:
        print(problem.at(shown).render())
    return bool(found)


def agent_settings(args: argparse.Namespace, layout: Layout) -> AgentSettings:
    """The agent ``tick`` would run, with the same options and checks."""
    from memento_gh.architect.run import AgentSettings
    from memento_gh.commands.tick import HOW_TO_CHOOSE
    from memento_gh.engine.agents.check import (
        check_agent,
        check_model,
        choose_agent,
        read_agent_args,
    )
    from memento_gh.plan.meta import Settings
    from memento_gh.plan.scanner import parse

    agent = choose_agent(args.agent, args.agent_cmd, HOW_TO_CHOOSE)
    check_agent(agent, args.agent_cmd, repo=layout.root, environ=os.environ)
    text = files.read_optional(layout.plan)
    timeout = (parse(text).settings if text else Settings()).agent_timeout
    model, extra = check_model(args.model), read_agent_args(args.agent_args)
    return AgentSettings(agent, args.agent_cmd, timeout, dict(os.environ), model, extra)


def _read_spec(name: str) -> str:
    if name == "-":
        spec = sys.stdin.read()
    else:
        from pathlib import Path

        spec = files.read_optional(Path(name), follow_links=True) or ""
        if not Path(name).is_file():
            raise UserError(f"--spec {name}: no such file; give the spec's path, or - for stdin")
    if not spec.strip():
        raise UserError(f"--spec {name}: the spec is empty; write what the project should do")
    return spec
