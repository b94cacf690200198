"""The demo's worker: a scripted stand-in for a coding agent, with no LLM and no network.

``memento demo`` runs it through the ``command`` agent as
``python .../memento_gh/demo/agent.py PROMPT_FILE TASK_ID`` in the sample project's root. Like a
real worker it knows only what the prompt tells it: the ``retries`` line of its task block
says which attempt this is, the notes section carries what humans told it, and the files
section shows the code it builds on. What it does with that is scripted per task (see
:mod:`memento_gh.demo.project` for the story). It imports nothing but the standard library,
so it runs as a plain script too.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

_RETRIES = re.compile(r"^[ \t]*- retries:[ \t]*(\d+)[ \t]*$", re.MULTILINE)
_NOTES_HEADING = "## Notes from humans"
_NAMED_FUNCTION = re.compile(r"function[ \t]+`([A-Za-z_][A-Za-z0-9_]*)`")
_DEFINED_ENTRY = re.compile(r"^def ([A-Za-z_][A-Za-z0-9_]*)\(argv\)", re.MULTILINE)

ADD = '''

def add(a, b):
    """a + b"""
    return a + b
'''

SUBTRACT_WITH_A_BUG = '''

def subtract(a, b):
    """a - b"""
    return a + b
'''

SUBTRACT = '''

def subtract(a, b):
    """a - b"""
    return a - b
'''

MULTIPLY = '''

def multiply(a, b):
    """a * b"""
    return a * b
'''

CLI = '''\
"""The command line of calc: ``python -m calc add 2 3`` prints 5."""

from calc import core

OPERATIONS = {{"add": core.add, "subtract": core.subtract, "multiply": core.multiply}}


def {name}(argv):
    """Run ``OPERATION A B``: print the result and return 0, or 2 on a usage error."""
    if len(argv) != 3 or argv[0] not in OPERATIONS:
        print("usage: python -m calc add|subtract|multiply A B")
        return 2
    print(OPERATIONS[argv[0]](_number(argv[1]), _number(argv[2])))
    return 0


def _number(word):
    try:
        return int(word)
    except ValueError:
        return float(word)
'''

MAIN = '''\
"""``python -m calc OPERATION A B``."""

import sys

from calc.cli import {name}

raise SystemExit({name}(sys.argv[1:]))
'''

README = """\
# calc

A tiny calculator, built one task at a time by `memento demo`'s scripted worker.

## How to run

```sh
python -m calc add 2 3        # 5
python -m calc subtract 5 3   # 2
python -m calc multiply 4 3   # 12
```
"""


class Prompt:
    """What the worker reads in its prompt."""

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def attempt(self) -> int:
        """1 for the first attempt; the task block's ``retries`` counts the failed ones."""
        found = _RETRIES.search(self.text)
        return 1 + (int(found.group(1)) if found else 0)

    @property
    def notes(self) -> str:
        """The notes section's text, unquoted; "" when the prompt has none."""
        start = self.text.find(_NOTES_HEADING)
        if start < 0:
            return ""
        section = self.text[start + len(_NOTES_HEADING) :]
        end = re.search(r"^## ", section, re.MULTILINE)
        section = section[: end.start()] if end else section
        lines = section.splitlines()
        return "\n".join(line[1:].lstrip() if line.startswith(">") else line for line in lines)


def say(task_id: str, text: str) -> None:
    print(f"worker {task_id}: {text}", flush=True)


def append(path: str, text: str) -> None:
    with Path(path).open("a", encoding="utf-8") as stream:
        stream.write(text)


def write(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


# -- one function per task --------------------------------------------------------------


def t101(prompt: Prompt) -> int:
    append("calc/core.py", ADD)
    say("T-101", "added add(a, b) to calc/core.py")
    return 0


def t102(prompt: Prompt) -> int:
    if prompt.attempt == 1:
        # The classic slip: a copy of add() with the name changed and the body not.
        append("calc/core.py", SUBTRACT_WITH_A_BUG)
        say("T-102", "added subtract(a, b) to calc/core.py (copied from add)")
    else:
        append("calc/core.py", SUBTRACT)
        say("T-102", f"attempt {prompt.attempt}: added subtract(a, b), written from scratch")
    return 0


def t103(prompt: Prompt) -> int:
    append("calc/core.py", MULTIPLY)
    if prompt.attempt == 1:
        # Another classic: "fixing" the test instead of the code. tests/ is a guard file.
        test = Path("tests/test_multiply.py")
        test.write_text(test.read_text(encoding="utf-8") + "# checked by the worker\n", "utf-8")
        say("T-103", "added multiply(a, b) and tidied tests/test_multiply.py")
    else:
        say("T-103", f"attempt {prompt.attempt}: added multiply(a, b), tests left alone")
    return 0


def t201(prompt: Prompt) -> int:
    named = _NAMED_FUNCTION.search(prompt.notes)
    if named is None:
        say(
            "T-201",
            "I cannot finish this task: it asks for the entry function the release scripts "
            "call, and neither the task, the project map nor a note says what it is called. "
            "I will not guess. Please add a note for T-201 that names the function.",
        )
        return 0
    name = named.group(1)
    write("calc/cli.py", CLI.format(name=name))
    say("T-201", f"the note names the entry function {name}(); wrote calc/cli.py with it")
    return 0


def t202(prompt: Prompt) -> int:
    defined = _DEFINED_ENTRY.search(prompt.text)  # calc/cli.py, shown in the files section
    if defined is None:
        say("T-202", "calc/cli.py defines no entry function (name(argv)) to call")
        return 0
    name = defined.group(1)
    write("calc/__main__.py", MAIN.format(name=name))
    say("T-202", f"wrote calc/__main__.py, which calls calc.cli.{name}()")
    return 0


def t203(prompt: Prompt) -> int:
    write("README.md", README)
    say("T-203", "wrote README.md")
    return 0


SCRIPT: dict[str, Callable[[Prompt], int]] = {
    "T-101": t101,
    "T-102": t102,
    "T-103": t103,
    "T-201": t201,
    "T-202": t202,
    "T-203": t203,
}


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print("usage: agent.py PROMPT_FILE TASK_ID", file=sys.stderr)
        return 2
    prompt_file, task_id = argv
    prompt = Prompt(Path(prompt_file).read_text(encoding="utf-8"))
    if task_id not in prompt.text:
        print(f"the prompt is not about {task_id}", file=sys.stderr)
        return 2
    action = SCRIPT.get(task_id)
    if action is None:
        say(task_id, "the demo's worker has no script for this task")
        return 1
    return action(prompt)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
