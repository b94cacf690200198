"""Which programs a task's ``verify`` line would start, and where PATH finds them.

``verify`` runs in a shell with the PATH memento itself was started with. When memento's own
virtual environment is active, ``python`` or ``pytest`` in a verify line are memento's, not
the project's, and the tests fail with "No module named ..." for a reason no retry fixes.
``memento validate --check-verify`` reports that, and programs PATH does not find at all.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from memento_gh.plan.model import RESOLVED, WARNING, Plan, Problem, Task

#: Words that separate the simple commands of a shell line.
SEPARATORS = frozenset({"&&", "||", ";", ";;", "|", "&", "|&", "(", ")"})
#: Words before a command's program: reserved words and prefixes that run the next word.
PREFIXES = frozenset({"if", "then", "else", "elif", "while", "until", "do", "!", "{", "time"})
PASS_ON = frozenset({"exec", "command", "nohup"})
#: Shell builtins (and reserved words ending a compound command): never looked up on PATH.
# fmt: off
BUILTINS = frozenset({
    ".", ":", "[", "alias", "bg", "break", "cd", "continue", "echo", "eval", "exit", "export",
    "false", "fg", "fi", "done", "esac", "getopts", "hash", "jobs", "kill", "printf", "pushd",
    "popd", "pwd", "read", "readonly", "return", "set", "shift", "source", "test", "times",
    "trap", "true", "type", "ulimit", "umask", "unalias", "unset", "wait", "}",
})
# fmt: on

MEMENTO = "memento"
#: A program named by a path, or by a word only the shell can read (``$TOOL``, a glob): PATH
#: is not where it is found, or what it is cannot be known before the shell runs it.
_UNKNOWABLE = re.compile(r"[/$`*?\[~]")

Which = Callable[[str], "str | None"]


def verify_programs(command: str) -> list[str]:
    """The programs ``command`` starts by name (looked up on PATH), in order, once each:
    the first word of each simple command, after variable assignments, reserved words and
    ``exec``/``command``; builtins, programs named by a path and words the shell
    expands (``$TOOL``, globs) are left out."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []  # an unbalanced quote: the shell will say so when verify runs
    programs: list[str] = []
    expecting = True
    for word in words:
        if word in SEPARATORS:
            expecting = True
        elif expecting and not (word in PREFIXES or word in PASS_ON or _assigns(word)):
            expecting = False
            if word not in BUILTINS and not _UNKNOWABLE.search(word) and word not in programs:
                programs.append(word)
    return programs


def unrunnable_verify(task: Task, path: str, where: str) -> str | None:
    """Why ``task``'s verify cannot pass with ``path`` as its PATH, in one line, or None:
    a program it starts by name is on none of PATH's folders (the shell would answer 127,
    after the agent's run). ``where`` is the verify line (``path:line``)."""
    command = task.verify
    if command is None:
        return None
    missing = [name for name in verify_programs(command) if shutil.which(name, path=path) is None]
    if not missing:
        return None
    return (
        f"{task.id} verify runs `{missing[0]}`, which is not on the PATH verify gets, so it "
        f"would fail after the agent's run; install it (on GitHub: in the workflow's set-up "
        f"step, before memento's) or correct the verify line at {where}; nothing was claimed"
    )


def _assigns(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isidentifier()


def path_problems(
    plan: Plan,
    root: Path,
    *,
    which: Which = shutil.which,
    prefix: str = sys.prefix,
    base_prefix: str = sys.base_prefix,
) -> list[Problem]:
    """A warning at the ``verify:`` line of each task still to run whose program resolves
    inside memento's own virtual environment (``prefix``), or is not found at all.

    An environment inside the repository (``root``) counts as the project's own: memento
    installed into the project's ``.venv`` shares it with the tests on purpose."""
    own = _own_environment(prefix, base_prefix, root)
    problems = []
    for task in plan.tasks:
        if task.marker in RESOLVED or task.verify is None or "verify" not in task.fields:
            continue
        for program in verify_programs(task.verify):
            message = _program_problem(program, which(program), own)
            if message is not None:
                line = task.fields["verify"].line + 1
                problems.append(Problem(line, WARNING, f"{task.id} verify: {message}"))
    return problems


def _own_environment(prefix: str, base_prefix: str, root: Path) -> Path | None:
    """memento's virtual environment, unless there is none or it is the project's."""
    if prefix == base_prefix:
        return None
    own = Path(prefix).resolve()
    return None if own.is_relative_to(root.resolve()) else own


def _program_problem(program: str, found: str | None, own: Path | None) -> str | None:
    if program == MEMENTO:
        return None  # memento's own environment is the right one for memento
    if found is None:
        return (
            f"`{program}` is not found on PATH; verify runs with the PATH memento is started "
            "with, so install it or start memento with its folder on PATH"
        )
    if own is not None and Path(found).parent.resolve().is_relative_to(own):
        return (
            f"`{program}` resolves to {found}, inside memento's own environment ({own}): "
            "verify runs with the PATH memento is started with, so it would get memento's "
            "packages, not your project's; put your project's environment first on PATH "
            "(or deactivate memento's) before running memento, or name the program by its "
            "path in verify"
        )
    return None
