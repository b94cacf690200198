"""The ``memento`` command line: one table of commands, parsing, dispatch, one error handler."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, NoReturn, TextIO, cast

from memento_gh import __version__
from memento_gh.durations import parse_duration
from memento_gh.errors import UserError
from memento_gh.layout import Layout, find_root

#: What ``--every`` takes, shown with a mistake.
INTERVAL_EXAMPLES = "30s, 5m, 1h or 1.5s (0s runs ticks back to back)"


class Command(NamedTuple):
    """One ``memento`` command: its name and line in the help, the options its parser adds,
    and the module whose ``run(args, layout)`` carries it out (imported when it runs)."""

    name: str
    summary: str
    add_options: Callable[[argparse.ArgumentParser], None]
    module: str
    description: str | None = None
    #: The command ends the process and holds a whole plan's objects (see ``program``).
    quick_exit: bool = False


# -- the options of each command ------------------------------------------------------------


def _init_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        help="the repository (default: ., when it is the top of its git repository)",
    )
    parser.add_argument("--name", help="project name for the templates (default: folder name)")
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite files that exist; write into a subfolder of a git repository",
    )
    parser.add_argument(
        "--workers",
        default="1",
        metavar="N",
        help="workers that share the memento branch: the workflow runs N jobs per tick "
        "(default: 1, at most 20)",
    )


def _validate_options(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument(
        "--check-verify",
        action="store_true",
        help="also warn where a pending task's verify program is found on PATH inside "
        "memento's own environment, or not at all (verify runs with memento's PATH)",
    )
    parser.add_argument(
        "--run-verify",
        action="store_true",
        help="also run each pending or blocked task's verify here, and warn where it passes "
        "already: such a verify cannot tell the task done from not done",
    )


def _hook_options(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(title="actions", dest="action", metavar="ACTION", required=True)
    install = actions.add_parser(
        "install",
        help="write the hook into the folder git runs hooks from",
        description="Write memento's pre-commit hook into this repository's hooks folder "
        "(core.hooksPath when set). A hook that is not memento's is left as it is.",
    )
    install.add_argument(
        "--force", action="store_true", help="replace a pre-commit hook that is not memento's"
    )
    actions.add_parser(
        "uninstall",
        help="remove memento's hook (another hook is left as it is)",
        description="Remove memento's pre-commit hook from this repository's hooks folder; a "
        "hook that is not memento's is left as it is.",
    )


def _json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the documented JSON shape")


def _tick_options(parser: argparse.ArgumentParser) -> None:
    # Here, not above: it loads the agents for their names (about 8 ms, measured after the
    # plan's modules), which `status`, `validate` and the controls never need.
    from memento_gh.commands.tick_options import add_tick_options

    add_tick_options(parser)


def _run_options(parser: argparse.ArgumentParser) -> None:
    _every(
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
    _tick_options(parser)


def _schedule_options(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(title="actions", dest="action", metavar="ACTION", required=True)
    install = actions.add_parser(
        "install",
        help="add (or replace) the line: a tick every DURATION",
        description="Add this repository's line to the crontab, or replace it: `memento tick` "
        "with the tick options given, every DURATION, its output appended to logs/cron.log.",
    )
    _every(
        install,
        "how often cron runs a tick: minutes that divide an hour (1m … 30m) "
        "or hours that divide a day (1h … 24h)",
    )
    _tick_options(install)
    remove = actions.add_parser(
        "uninstall",
        aliases=["remove"],
        help="take the line out of the crontab (as `hook uninstall` takes the hook out)",
        description="Take this repository's line out of the crontab; other lines stay as they are.",
    )
    show = actions.add_parser(
        "show",
        help="print the line and when it fires next",
        description="Print this repository's crontab line and when it fires next.",
    )
    for action, verb, default in (
        (install, "edit", "`crontab -l` / `crontab -`"),
        (remove, "edit", "`crontab -l` / `crontab -`"),
        (show, "read", "`crontab -l`"),
    ):
        action.add_argument(
            "--crontab",
            metavar="FILE",
            help=f"a crontab file to {verb} instead of yours (default: $MEMENTO_CRONTAB, "
            f"else {default})",
        )


def _every(parser: argparse.ArgumentParser, summary: str) -> None:
    parser.add_argument(
        "--every", type=interval_arg, required=True, metavar="DURATION", help=summary
    )


def interval_arg(text: str) -> float:
    """``--every``'s value in seconds; a mistake is a usage error (exit 2)."""
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


def _wait_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for a running tick to release the lock (default: 30)",
    )


def _task_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="the task ID, e.g. T-201")
    _wait_option(parser)


def _skip_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="the task ID, e.g. T-201")
    parser.add_argument("--why", default="", help="the reason, kept in the status log")
    _wait_option(parser)


def _note_options(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--task", help="the task the note is for")
    target.add_argument("--global", dest="for_all", action="store_true", help="for every task")
    parser.add_argument("text", help="the note (Markdown)")
    _wait_option(parser)


def _plan_options(parser: argparse.ArgumentParser) -> None:
    from memento_gh.commands.tick_options import AGENT_FLAGS, add_tick_options

    actions = parser.add_subparsers(title="actions", dest="action", metavar="ACTION", required=True)
    draft = actions.add_parser(
        "draft",
        help="draft the plan from a spec",
        description="Run the architect on a spec: it writes a proposed plan, memento validates "
        "it (and prompts it again with the problems, up to --rounds), and only a valid plan is "
        "written and committed. An existing plan is never replaced (but the untouched example "
        "of `memento init`).",
    )
    draft.add_argument("--spec", required=True, metavar="FILE", help="the spec; - reads stdin")
    revise = actions.add_parser(
        "revise",
        help="propose changes to pending or blocked tasks, as a diff",
        description="Run the architect on the plan (e.g. a blocked task): its proposal is "
        "accepted only if it validates, leaves [x] and [-] tasks byte for byte, reuses no task "
        "ID and keeps depends satisfiable. Prints the diff; --apply writes and commits it.",
    )
    revise.add_argument("--task", metavar="T-ID", help="the task to revise (e.g. a blocked one)")
    revise.add_argument("--why", metavar="TEXT", help="what is wrong, for the architect")
    revise.add_argument("--apply", action="store_true", help="write the revision and commit it")
    for action in (draft, revise):
        action.add_argument(
            "--rounds",
            type=int,
            default=3,
            metavar="N",
            help="runs of the architect to get a valid proposal (default: 3)",
        )
        add_tick_options(action, only=AGENT_FLAGS)


def _demo_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", type=Path, help="where to create it (default: a new temporary folder)"
    )


def _memory_options(parser: argparse.ArgumentParser) -> None:
    _json_option(parser)
    parser.add_argument("--all", action="store_true", help="list archived records too")
    parser.add_argument(
        "--archive",
        action="store_true",
        help="move records not verified within memory_stale_after to the archive, and commit",
    )
    _wait_option(parser)


def _learn_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=("decision", "preference"), help="what to record")
    parser.add_argument(
        "key", metavar="TOPIC|CATEGORY", help="a decision's topic or a preference's category"
    )
    parser.add_argument("text", metavar="TEXT", help="what was decided, or what is preferred")
    evidence = parser.add_mutually_exclusive_group(required=True)
    evidence.add_argument(
        "--evidence", metavar="FILE", help="a file in the repository that shows it"
    )
    evidence.add_argument("--evidence-cmd", metavar="COMMAND", help="a command that shows it")
    parser.add_argument(
        "--confidence", choices=("high", "medium", "low"), default="high", help="(default: high)"
    )
    parser.add_argument("--task", help="the task it came from (default: none, 'global')")
    parser.add_argument(
        "--module", action="append", metavar="NAME", help="a module it is about (repeatable)"
    )
    parser.add_argument("--why", help="a decision's reason")
    parser.add_argument("--context", help="a decision's background")
    parser.add_argument("--options", help="the alternatives a decision weighed")
    _wait_option(parser)


def _github_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check",
        action="store_true",
        help="read the set-up (the token, issues, the pull request, push-token, the branch's "
        "protection), print the checklist and change nothing; exit 1 when something fails",
    )


def _dashboard_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=_port, default=8765, help="port; 0 picks a free one (default: 8765)"
    )
    parser.add_argument("--open", action="store_true", help="open the page in a web browser")
    from memento_gh.commands.tick_options import AGENT_FLAGS, add_tick_options

    # The architect's agent: with one, a blocked task offers "Propose a revision".
    add_tick_options(parser, only=AGENT_FLAGS)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 0 to 65535")
    return int(text)


def _no_options(parser: argparse.ArgumentParser) -> None:
    """A command configured by its environment alone."""


# -- the commands ---------------------------------------------------------------------------

#: Every command, in the order of the help's listing.
COMMANDS = (
    Command(
        "init",
        "create the plan files, worker prompt, workflow and hook config",
        _init_options,
        "memento_gh.commands.init",
        description="Scaffold memento in a repository. Existing files are kept unless --force.",
    ),
    Command(
        "validate",
        "check the plan, project map and notes",
        _validate_options,
        "memento_gh.commands.validate",
        description="Check MASTER_PLAN.md, PROJECT_MAP.md, HUMAN_NOTES.md and the lessons in "
        "docs/memory/ (known-issues.md, decisions.md, preferences.md), or the FILES given. "
        "Prints one 'path:line: error|warning: message' line per problem; exits 1 on any error.",
        quick_exit=True,
    ),
    Command(
        "status",
        "progress overall and per phase, blocked and running tasks",
        _json_option,
        "memento_gh.commands.status",
        description="Progress overall and per phase, blocked and running tasks.",
    ),
    Command(
        "next",
        "the task the next tick would pick, or why none",
        _json_option,
        "memento_gh.commands.status",
        description="The task the next tick would pick, or why none.",
    ),
    Command(
        "tick",
        "run one tick: pick a task, run the agent, guard, verify, commit or roll back",
        _tick_options,
        "memento_gh.commands.tick",
        description="Run one tick on this repository. The agent only edits files; memento checks "
        "the change, runs the task's verify command and commits or rolls back.",
        quick_exit=True,
    ),
    Command(
        "run",
        "tick in a foreground loop, every DURATION, until stopped",
        _run_options,
        "memento_gh.commands.run",
        description="Run a tick every DURATION in this process, for machines without cron (Ctrl-C "
        "or SIGTERM stops it). Each tick's line goes to stdout and logs/cron.log; a tick that "
        "fails on an invalid plan or a dirty tree is reported and the loop goes on.",
    ),
    Command(
        "schedule",
        "install, remove or show the crontab line that ticks this repository",
        _schedule_options,
        "memento_gh.commands.schedule",
        description="Manage the line of your crontab that runs `memento tick` for this repository "
        "(other lines are left as they are).",
    ),
    Command(
        "pause",
        "set tick_mode: paused (ticks do nothing until resume)",
        _wait_option,
        "memento_gh.commands.control",
        description="Set tick_mode: paused; ticks do nothing until `memento resume`.",
    ),
    Command(
        "resume",
        "set tick_mode: auto (and clear the failed-tick count)",
        _wait_option,
        "memento_gh.commands.control",
        description="Set tick_mode: auto, and clear the failed-tick count the circuit breaker "
        "reads.",
    ),
    Command(
        "stop",
        "set tick_mode: stopped",
        _wait_option,
        "memento_gh.commands.control",
        description="Set tick_mode: stopped; ticks do nothing until `memento resume`.",
    ),
    Command(
        "retry",
        "give a task its retries back ([!] -> [ ], retries: 0)",
        _task_options,
        "memento_gh.commands.control",
        description="Give a task its retries back: [!] (or [-]) becomes [ ] with retries: 0, "
        "so the next tick can pick it. Leave a note first (`memento note --task`) to tell the "
        "worker what it needs.",
    ),
    Command(
        "skip",
        "mark a task [-] so the plan moves on without it",
        _skip_options,
        "memento_gh.commands.control",
        description="Mark a pending or blocked task [-] (skipped): tasks and phases that depend "
        "on it go on without it. --why is kept in TICK_STATUS.md.",
    ),
    Command(
        "note",
        "leave a note for the worker in HUMAN_NOTES.md (a task, or global)",
        _note_options,
        "memento_gh.commands.control",
        description="Leave a note in HUMAN_NOTES.md for the worker of one task (--task T-ID) "
        "or of every task (--global). The worker reads it in its prompt; the note is marked "
        "[NOTE:READ] once its task succeeds.",
    ),
    Command(
        "plan",
        "draft the plan from a spec, or revise it, with an agent as architect",
        _plan_options,
        "memento_gh.commands.plan",
        description="The architect: an agent that drafts docs/MASTER_PLAN.md from a spec or "
        "revises it, behind the same wall as a worker. Nothing lands that does not validate.",
    ),
    Command(
        "hook",
        "install or remove the plain git pre-commit hook that validates the plan files",
        _hook_options,
        "memento_gh.commands.hook",
        description="Install or remove memento's git pre-commit hook, which runs `memento "
        "validate --index` on the staged plan, map, notes and lesson files (for repositories "
        "that do not use the pre-commit framework).",
    ),
    Command(
        "demo",
        "run a sample project to completion offline, with a scripted agent",
        _demo_options,
        "memento_gh.commands.demo",
        description="Create a small sample project (a git repository with a plan of six tasks) "
        "and run ticks with a built-in scripted agent, no LLM needed, until the plan rests: a "
        "success, a failure and retry, a guard violation rolled back, a blocked task unblocked by "
        "a note and `memento retry`, and completion.",
    ),
    Command(
        "memory",
        "list the lessons in docs/memory/ with their task, evidence and age",
        _memory_options,
        "memento_gh.commands.memory",
        description="List the known issues, decisions and preferences workers are given, with "
        "each record's task, module, evidence, confidence and last-verified time.",
    ),
    Command(
        "learn",
        "record a decision or a preference for later workers",
        _learn_options,
        "memento_gh.commands.memory",
        description="Add a decision (by topic) or a preference (by category) to docs/memory/; "
        "learning the same topic or category again updates its record.",
    ),
    Command(
        "dashboard",
        "serve a local web page that shows the plan and steers it",
        _dashboard_options,
        "memento_gh.commands.dashboard",
        description="Serve the dashboard (status, controls, progress, tasks, tick timeline, "
        "notes) until Ctrl-C. It listens on this machine only unless --host says otherwise.",
    ),
    Command(
        "github",
        "run one step of the GitHub Action (reads the workflow's environment)",
        _github_options,
        "memento_gh.commands.github",
        description="What action.yml runs: route the workflow event, check out the memento "
        "branch, apply controls, tick, push, sync the issues and the dashboard. Configured by the "
        "runner's GITHUB_* variables and the action's MEMENTO_* inputs.",
    ),
)


def find_command(name: str | None) -> Command | None:
    return next((command for command in COMMANDS if command.name == name), None)


# -- parsing and dispatch -------------------------------------------------------------------


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``memento``: with ``command``'s parser alone when one is named (a command
    line that names its command needs no other), else with them all (for the help's
    listing, ``--version`` and argparse's suggestions for a mistake)."""
    parser = argparse.ArgumentParser(
        prog="memento",
        description="Run a coding agent one guarded, verified, committed tick at a time against "
        "docs/MASTER_PLAN.md.",
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
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    chosen = find_command(command)
    for each in COMMANDS if chosen is None else (chosen,):
        sub = subparsers.add_parser(each.name, help=each.summary, description=each.description)
        each.add_options(sub)
        sub.set_defaults(command=each.name)
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
            return word if find_command(word) is not None else None
    return None


def _dispatch(args: argparse.Namespace) -> int:
    command = find_command(args.command)
    if command is None:
        raise AssertionError(f"the command {args.command!r} has a parser but no entry")
    _check_folder(args.directory)
    run: Callable[[argparse.Namespace, Layout], int] = importlib.import_module(command.module).run
    # From a subfolder, as git does; init and demo write where they are told.
    here = command.name in ("init", "demo")
    root = args.directory if here else find_root(args.directory, args.plan_dir)
    return run(args, Layout(root, args.plan_dir))


def _check_folder(directory: Path) -> None:
    """``-C``'s folder must be there: every command would otherwise report what it finds
    missing inside it (no plan, no repository) and hide the mistake."""
    try:
        if directory.is_dir():
            return
        missing = not directory.exists()
    except OSError:  # a name too long for the file system, say
        missing = True
    why = "the folder does not exist" if missing else "not a folder"
    raise UserError(f"-C {directory}: {why}; give -C the folder of your repository")


def program() -> NoReturn:
    """The ``memento`` executable: ``main``, then the exit.

    After a tick or a validation the interpreter would free, one by one, the objects of the
    whole plan and of every module before the process ends: about 11 ms of a 1,000-task
    tick. Everything the command wrote is closed by then and stdout and stderr are flushed
    here, so those two commands (``quick_exit`` in ``COMMANDS``) end the process at once.
    ``main`` itself returns, for callers in the same process (tests)."""
    code = main()
    command = find_command(chosen_command(sys.argv[1:]))
    if command is not None and command.quick_exit:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        with _redacted_output():
            try:
                return _main(argv)
            finally:
                # Output is block-buffered into a pipe: flush it here, so that a reader that
                # went away (`memento status | head -1`) shows up below, not at exit.
                sys.stdout.flush()
    except BrokenPipeError:
        # The reader has what it wanted; there is nothing to report, and nobody to report it to.
        _discard_stdout()
        return 1


@contextlib.contextmanager
def _redacted_output() -> Iterator[None]:
    """Credentials out of everything memento prints while ``main`` runs: a verify's first
    output line in a failure, a value quoted in an error. Under cron that output is
    ``logs/cron.log``, which nothing else redacts. (memento's own subprocesses never write
    to these streams: git's and the agent's output is captured.)"""
    from memento_gh.redact import RedactingText, Redactor

    redactor = Redactor.from_environ(os.environ)
    kept = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, RedactingText(kept[0], redactor))
    sys.stderr = cast(TextIO, RedactingText(kept[1], redactor))
    if os.environ.get("GITHUB_ACTIONS") == "true":  # a GitHub Actions runner
        from memento_gh.runner_text import RunnerText  # no text but memento's own commands

        sys.stdout = cast(TextIO, RunnerText(sys.stdout))
        sys.stderr = cast(TextIO, RunnerText(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = kept


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
        from memento_gh.crash import crash_message  # the crash path alone pays for it

        print(crash_message(error), file=sys.stderr)
        return 3


if __name__ == "__main__":
    program()
