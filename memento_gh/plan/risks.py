"""Tasks that hand the work tree, or a shell, to whoever is on the other end of the network:
warnings of the plan's checks (``rules.DOWNLOADED_CODE``, ``rules.UNGUARDED_TREE``). Pure.

A task's verify runs on every tick with memento's environment, in the repository memento
commits from; a plan that pipes a download into a shell runs whatever that server sends
then. A task whose context is the whole tree and that names no guard file may change any
file. Both are valid plans (a person may mean them) and only warnings; the architect's
proposals say them where a person approves (``github/architect.py``, ``commands/plan.py``).
"""

from __future__ import annotations

import functools
import re

from memento_gh.plan import rules
from memento_gh.plan.model import Plan, Problem, Task

_FETCHERS = ("curl", "wget", "fetch", "http", "https", "aria2c", "iwr", "Invoke-WebRequest")
_FETCH = r"(?:\S*/)?(?:" + "|".join(map(re.escape, _FETCHERS)) + r")"
_RUNNERS = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?(?:env\s+)?"
    r"(?:sh|bash|zsh|dash|ksh|fish|python[\d.]*|perl|ruby|node|php|pwsh|powershell|iex|source|\.)"
)
#: A download piped into a program that runs what it reads (options only after it: ``sh -s
#: --``, not ``python -c CODE`` nor ``python script.py``, which run code of their own);
#: read by process substitution (``bash <(curl …)``); or run by command substitution
#: (``sh -c "$(curl …)"``, ``eval``).
_DOWNLOAD_AND_RUN = (
    rf"(?<![\w.-]){_FETCH}\b[^;&]*?\|\s*{_RUNNERS}(?:\s+-(?!c(?:\s|$))\S*)*\s*(?=$|[;&|)])"
    rf"|(?<![\w.-]){_RUNNERS}\s+(?:-\S+\s+)*<\(\s*{_FETCH}\b"
    rf"|(?:(?<![\w.-]){_RUNNERS}\s+-c|\beval)\s+[\"']?(?:\$\(|`)\s*{_FETCH}\b"
)
#: A downloader's word anywhere in a text: the cheap look before the pattern above.
_FETCH_WORDS = tuple({fetcher.lower() for fetcher in _FETCHERS} - {"https"})
#: ``context_files`` patterns that take in every file of the work tree.
WHOLE_TREE = frozenset({".", "./", "*", "**", "**/*", "/", "./*", "./**", "./**/*"})
_TREE_STARTS = (".", "*", "/")


def risk_problems(plan: Plan) -> list[Problem]:
    """The warnings of every task that runs downloaded code or may change the whole tree
    unguarded. Every tick validates the plan: the fields' raw text of all tasks is looked
    at with a few substring searches first, and a task's fields are parsed only when some
    task may hold such a thing (valgrind, a 1,000-task plan without any: 4M instructions
    instead of 16M)."""
    tasks = plan.tasks
    fetching = _may_fetch("\n".join([task.raw("verify") or "" for task in tasks]))
    whole = _may_name_whole_tree("\n".join([task.raw("context_files") or "" for task in tasks]))
    if not fetching and not whole:
        return []
    found: list[Problem] = []
    for task in tasks:
        fetched = downloads_and_runs(task.verify or "") if fetching else None
        if fetched:
            found.append(_downloaded_code(task, fetched))
        if whole and unguarded_tree(task):
            found.append(_unguarded_tree(task))
    return found


def downloads_and_runs(command: str) -> str | None:
    """The part of ``command`` that runs code it downloads (``curl … | sh``), or None."""
    if not _may_fetch(command):  # most verifies: no pattern run
        return None
    found = _download_and_run().search(command)
    return found[0] if found else None


@functools.cache
def _download_and_run() -> re.Pattern[str]:
    """Compiled on first use: it takes longer to compile (about 5 ms) than every tick's
    look at a 1,000-task plan whose verifies fetch nothing."""
    return re.compile(_DOWNLOAD_AND_RUN)


def _may_fetch(text: str) -> bool:
    """Whether ``text`` names a downloader at all (a few substring searches: no pattern)."""
    lowered = text.lower()
    return any(word in lowered for word in _FETCH_WORDS)


def _may_name_whole_tree(lists: str) -> bool:
    """Whether raw ``context_files`` lists (one a line) may hold a whole-tree item: every
    one starts, after the list's ``[`` or a ``,``, with ``.``, ``*`` or ``/``. (Some that
    do are no such item, ``[./src]``: those tasks' lists are parsed to be sure.)"""
    bare = lists
    for noise in (" ", "\t", "'", '"', "`"):
        bare = bare.replace(noise, "")
    return bare.startswith(_TREE_STARTS) or any(
        before + start in bare for before in "[,\n" for start in _TREE_STARTS
    )


def unguarded_tree(task: Task) -> bool:
    """Whether ``task`` may change any file of the work tree and names no guard file."""
    return not task.guard_files and any(
        pattern.strip() in WHOLE_TREE for pattern in task.context_files
    )


def _downloaded_code(task: Task, part: str) -> Problem:
    field = task.fields.get("verify")
    line = field.line if field is not None else task.line
    shown = part if len(part) <= 60 else part[:59] + "…"
    return rules.DOWNLOADED_CODE.problem(
        line + 1,
        f"{task.id}'s verify downloads code and runs it (`{shown}`): every tick would run "
        "whatever that server sends then, with the repository's files at hand; put the "
        "check into the repository and run it from there",
    )


def _unguarded_tree(task: Task) -> Problem:
    field = task.fields.get("context_files")
    line = field.line if field is not None else task.line
    return rules.UNGUARDED_TREE.problem(
        line + 1,
        f"{task.id} may change every file of the work tree (context_files "
        f"[{', '.join(task.context_files)}]) and has no guard_files: name the folders it "
        "works in, or guard the files it must leave alone (its tests, the build, CI)",
    )


def risks_added(before: Plan | None, after: Plan) -> list[Problem]:
    """The warnings of ``after`` that ``before`` (the plan a proposal replaces) did not
    have: what an architect's proposal would bring in, for the person who approves it."""
    known = {problem.message for problem in risk_problems(before)} if before else set()
    return [problem for problem in risk_problems(after) if problem.message not in known]
