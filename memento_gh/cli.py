"""The ``memento`` command line: argument parsing and dispatch, one error handler."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeAlias

from memento_gh import __version__
from memento_gh.errors import UserError, crash_message
from memento_gh.layout import Layout

#: A command's entry point: the arguments as argparse read them and the plan's layout.
Command = Callable[[argparse.Namespace, Layout], int]

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _add_init(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "init",
        help="create the plan files, worker prompt, workflow and hook config",
        description="Scaffold memento in a repository. Existing files are kept unless --force.",
    )
    parser.add_argument("path", nargs="?", default=".", help="the repository (default: .)")
    parser.add_argument("--name", help="project name for the templates (default: folder name)")
    parser.add_argument("--force", action="store_true", help="overwrite files that exist")
    parser.add_argument(
        "--workers",
        default="1",
        metavar="N",
        help="workers that share the memento branch: the workflow runs N jobs per tick "
        "(default: 1, at most 20)",
    )
    parser.set_defaults(command="init")


def _add_validate(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "validate",
        help="check the plan, project map and notes",
        description="Check MASTER_PLAN.md, PROJECT_MAP.md and HUMAN_NOTES.md. Prints one "
        "'path:line: error|warning: message' line per problem; exits 1 on any error.",
    )
    parser.add_argument(
        "files", nargs="*", type=Path, help="files to check (default: the three under the plan dir)"
    )
    parser.add_argument(
        "--fix", action="store_true", help="rewrite the Meta counters that disagree with the tasks"
    )
    parser.add_argument(
        "--index",
        action="store_true",
        help="check the versions staged in git's index (for git hooks)",
    )
    parser.set_defaults(command="validate")


def _add_status(commands: Subcommands) -> None:
    for name, summary in (
        ("status", "progress overall and per phase, blocked and running tasks"),
        ("next", "the task the next tick would pick, or why none"),
    ):
        parser = commands.add_parser(name, help=summary, description=summary.capitalize() + ".")
        parser.add_argument("--json", action="store_true", help="print the documented JSON shape")
        parser.set_defaults(command=name)


def _add_tick(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "tick",
        help="run one tick: pick a task, run the agent, guard, verify, commit or roll back",
        description="Run one tick on this repository. The agent only edits files; memento "
        "checks the change, runs the task's verify command and commits or rolls back.",
    )
    add_tick_options(parser)
    parser.set_defaults(command="tick")


def add_tick_options(parser: argparse.ArgumentParser) -> None:
    """The options of one tick (``commands.tick_options``): ``tick``, ``run``, ``schedule``."""
    from memento_gh.commands import tick_options

    tick_options.add_tick_options(parser)


def _add_run(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "run",
        help="tick in a foreground loop, every DURATION, until stopped",
        description="Run a tick every DURATION in this process, for machines without cron "
        "(Ctrl-C or SIGTERM stops it). Each tick's line goes to stdout and logs/cron.log; a "
        "tick that fails on an invalid plan or a dirty tree is reported and the loop goes on.",
    )
    _add_every(
        parser,
        "time from the start of one tick to the start of the next; 0s runs "
        "them back to back (e.g. 30s, 5m, 1h)",
    )
    parser.add_argument(
        "--max-ticks", type=_positive, metavar="N", help="stop after N ticks (default: never)"
    )
    parser.add_argument(
        "--until-done",
        action="store_true",
        help="stop when no tick can change anything: the plan complete, blocked, out of "
        "retries, paused or stopped",
    )
    add_tick_options(parser)
    parser.set_defaults(command="run")


def _add_schedule(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "schedule",
        help="install, remove or show the crontab line that ticks this repository",
        description="Manage the line of your crontab that runs `memento tick` for this "
        "repository (other lines are left as they are).",
    )
    actions = parser.add_subparsers(title="actions", dest="action", metavar="ACTION", required=True)
    install = actions.add_parser(
        "install",
        help="add (or replace) the line: a tick every DURATION",
        description="Add this repository's line to the crontab, or replace it: `memento "
        "tick` with the tick options given, every DURATION, its output appended to "
        "logs/cron.log.",
    )
    _add_every(
        install,
        "how often cron runs a tick: minutes that divide an hour (1m … 30m) "
        "or hours that divide a day (1h … 24h)",
    )
    add_tick_options(install)
    actions.add_parser("remove", help="take the line out of the crontab")
    actions.add_parser("show", help="print the line and when it fires next")
    for action in actions.choices.values():
        action.add_argument(
            "--crontab",
            metavar="FILE",
            help="a crontab file to edit instead of yours (default: $MEMENTO_CRONTAB, "
            "else `crontab -l` / `crontab -`)",
        )
    parser.set_defaults(command="schedule")


def _add_every(parser: argparse.ArgumentParser, summary: str) -> None:
    parser.add_argument(
        "--every", type=interval_arg, required=True, metavar="DURATION", help=summary
    )


#: What ``--every`` takes, shown with a mistake.
INTERVAL_EXAMPLES = "30s, 5m, 1h or 1.5s (0s runs ticks back to back)"


def interval_arg(text: str) -> float:
    """``--every``'s value in seconds; a mistake is a usage error (exit 2)."""
    from memento_gh.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an interval; write a number and a unit: {INTERVAL_EXAMPLES}"
        ) from None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _add_demo(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "demo",
        help="run a sample project to completion offline, with a scripted agent",
        description="Create a small sample project (a git repository with a plan of six "
        "tasks) and run ticks with a built-in scripted agent, no LLM needed, until the plan "
        "rests: a success, a failure and retry, a guard violation rolled back, a blocked "
        "task unblocked by a note and `memento retry`, and completion.",
    )
    parser.add_argument(
        "path", nargs="?", type=Path, help="where to create it (default: a new temporary folder)"
    )
    parser.set_defaults(command="demo")


def _add_github(commands: Subcommands) -> None:
    commands.add_parser(
        "github",
        help="run one step of the GitHub Action (reads the workflow's environment)",
        description="What action.yml runs: route the workflow event, check out the memento "
        "branch, apply controls, tick, push, sync the issues and the dashboard. Configured "
        "by the runner's GITHUB_* variables and the action's MEMENTO_* inputs.",
    ).set_defaults(command="github")


def _add_dashboard(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "dashboard",
        help="serve a local web page that shows the plan and steers it",
        description="Serve the dashboard (status, controls, progress, tasks, tick timeline, "
        "notes) until Ctrl-C. It listens on this machine only unless --host says otherwise.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=_port, default=8765, help="port; 0 picks a free one (default: 8765)"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    parser.set_defaults(command="dashboard")


def _add_memory(commands: Subcommands) -> None:
    listing = commands.add_parser(
        "memory",
        help="list the lessons in docs/memory/ with their task, evidence and age",
        description="List the known issues, decisions and preferences workers are given, "
        "with each record's task, module, evidence, confidence and last-verified time.",
    )
    listing.add_argument("--json", action="store_true", help="print the documented JSON shape")
    listing.add_argument("--all", action="store_true", help="list archived records too")
    listing.add_argument(
        "--archive",
        action="store_true",
        help="move records not verified within memory_stale_after to the archive, and commit",
    )
    _add_wait(listing, "memory")
    learn = commands.add_parser(
        "learn",
        help="record a decision or a preference for later workers",
        description="Add a decision (by topic) or a preference (by category) to docs/memory/; "
        "learning the same topic or category again updates its record.",
    )
    learn.add_argument("kind", choices=("decision", "preference"), help="what to record")
    learn.add_argument(
        "key", metavar="TOPIC|CATEGORY", help="a decision's topic or a preference's category"
    )
    learn.add_argument("text", metavar="TEXT", help="what was decided, or what is preferred")
    evidence = learn.add_mutually_exclusive_group(required=True)
    evidence.add_argument(
        "--evidence", metavar="FILE", help="a file in the repository that shows it"
    )
    evidence.add_argument("--evidence-cmd", metavar="COMMAND", help="a command that shows it")
    learn.add_argument(
        "--confidence", choices=("high", "medium", "low"), default="high", help="(default: high)"
    )
    learn.add_argument("--task", help="the task it came from (default: none, 'global')")
    learn.add_argument(
        "--module", action="append", metavar="NAME", help="a module it is about (repeatable)"
    )
    learn.add_argument("--why", help="a decision's reason")
    learn.add_argument("--context", help="a decision's background")
    learn.add_argument("--options", help="the alternatives a decision weighed")
    _add_wait(learn, "learn")


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 0 to 65535")
    return int(text)


CONTROL_ACTIONS = ("pause", "resume", "stop", "retry", "skip", "note")


def _add_controls(commands: Subcommands) -> None:
    for action, summary in (
        ("pause", "set tick_mode: paused (ticks do nothing until resume)"),
        ("resume", "set tick_mode: auto (and clear the failed-tick count)"),
        ("stop", "set tick_mode: stopped"),
    ):
        parser = commands.add_parser(action, help=summary, description=summary + ".")
        _add_wait(parser, action)
    retry = commands.add_parser(
        "retry", help="give a task its retries back ([!] -> [ ], retries: 0)"
    )
    retry.add_argument("task", help="the task ID, e.g. T-201")
    _add_wait(retry, "retry")
    skip = commands.add_parser("skip", help="mark a task [-] so the plan moves on without it")
    skip.add_argument("task", help="the task ID, e.g. T-201")
    skip.add_argument("--why", default="", help="the reason, kept in the status log")
    _add_wait(skip, "skip")
    note = commands.add_parser(
        "note", help="leave a note for the worker in HUMAN_NOTES.md (a task, or global)"
    )
    target = note.add_mutually_exclusive_group(required=True)
    target.add_argument("--task", help="the task the note is for")
    target.add_argument("--global", dest="for_all", action="store_true", help="for every task")
    note.add_argument("text", help="the note (Markdown)")
    _add_wait(note, "note")


def _add_wait(parser: argparse.ArgumentParser, action: str) -> None:
    parser.add_argument(
        "--wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for a running tick to release the lock (default: 30)",
    )
    parser.set_defaults(command=action)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memento",
        description="Run a coding agent one guarded, verified, committed tick at a time "
        "against docs/MASTER_PLAN.md.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "-C",
        dest="directory",
        metavar="PATH",
        type=Path,
        default=Path(),
        help="run as if memento was started in PATH",
    )
    parser.add_argument(
        "--plan-dir",
        # An empty MEMENTO_PLAN_DIR counts as unset, as an empty NO_COLOR does.
        default=os.environ.get("MEMENTO_PLAN_DIR") or "docs",
        metavar="DIR",
        help="folder of the plan files, relative to the repository (default: docs, "
        "or $MEMENTO_PLAN_DIR)",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    # Building a parser costs: a run that names its command gets that command's alone
    # (help, version and mistakes get them all, for the full listing and suggestions).
    adders = ADDERS if command not in COMMAND_ADDERS else (COMMAND_ADDERS[command],)
    for add in adders:
        add(commands)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names after plain global options, or None when anything else
    comes first (``--help``, ``--version``, an abbreviation, a mistake)."""
    words = iter(argv)
    for word in words:
        if word in ("-C", "--plan-dir"):
            next(words, None)
        elif word.startswith("--plan-dir=") or (word.startswith("-C") and len(word) > 2):
            continue
        else:
            return word if word in COMMAND_ADDERS else None
    return None


#: What adds each command's parser, in the order of the help's listing.
ADDERS = (
    _add_init,
    _add_validate,
    _add_status,
    _add_tick,
    _add_run,
    _add_schedule,
    _add_controls,
    _add_demo,
    _add_memory,
    _add_dashboard,
    _add_github,
)
COMMAND_ADDERS = {
    "init": _add_init,
    "validate": _add_validate,
    "status": _add_status,
    "next": _add_status,
    "tick": _add_tick,
    "run": _add_run,
    "schedule": _add_schedule,
    **dict.fromkeys(CONTROL_ACTIONS, _add_controls),
    "demo": _add_demo,
    "memory": _add_memory,
    "learn": _add_memory,
    "dashboard": _add_dashboard,
    "github": _add_github,
}

#: Each command's module, imported only when that command runs (quick start for the others).
HANDLERS = {
    "init": "memento_gh.commands.init",
    "validate": "memento_gh.commands.validate",
    "status": "memento_gh.commands.status",
    "next": "memento_gh.commands.status",
    "tick": "memento_gh.commands.tick",
    "run": "memento_gh.commands.run",
    "schedule": "memento_gh.commands.schedule",
    "demo": "memento_gh.commands.demo",
    "memory": "memento_gh.commands.memory",
    "learn": "memento_gh.commands.memory",
    "dashboard": "memento_gh.commands.dashboard",
    "github": "memento_gh.commands.github",
    **dict.fromkeys(CONTROL_ACTIONS, "memento_gh.commands.control"),
}


def _dispatch(args: argparse.Namespace) -> int:
    import importlib

    layout = Layout(args.directory, args.plan_dir)
    name = getattr(args, "command", None)
    if name not in HANDLERS:
        raise AssertionError(f"the command {name!r} has a parser but no handler")
    handler: Command = importlib.import_module(HANDLERS[name]).run
    return handler(args, layout)


#: Commands whose process ends with them and that hold a whole plan's objects: the program
#: leaves without the interpreter's clean-up (see ``program``).
QUICK_EXIT = frozenset({"tick", "validate"})


def program() -> NoReturn:
    """The ``memento`` executable: ``main``, then the exit.

    After a tick or a validation the interpreter would free, one by one, the objects of the
    whole plan and of every module before the process ends: about 11 ms of a 1,000-task
    tick. Everything the command wrote is closed by then and stdout and stderr are flushed
    here, so those two commands end the process at once. ``main`` itself returns, for
    callers in the same process (tests)."""
    code = main()
    if chosen_command(sys.argv[1:]) in QUICK_EXIT:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            return _main(argv)
        finally:
            # Output is block-buffered into a pipe: flush it here, so that a reader that went
            # away (`memento status | head -1`) shows up below and not at interpreter exit.
            sys.stdout.flush()
    except BrokenPipeError:
        # The reader has what it wanted; there is nothing to report, and nobody to report it to.
        _discard_stdout()
        return 1


def _discard_stdout() -> None:
    """Point stdout at the null device, so the interpreter's own last flush cannot fail."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(chosen_command(words))
    args = parser.parse_args(words)
    if getattr(args, "command", None) is None:
        # No command is a command-line mistake like an unknown one (argparse: exit 2),
        # but the whole help is more use than argparse's one-line complaint.
        parser.print_help(sys.stderr)
        return 2
    try:
        return _dispatch(args)
    except UserError as error:
        print(f"memento: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("memento: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except Exception as error:
        print(crash_message(error), file=sys.stderr)
        return 3


if __name__ == "__main__":
    program()
