"""The architect's prompts: what it is asked, the plan format and rules (from the
validator's table), the repository's files, the project map and the lessons, and on a
second round the problems of its last proposal."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memento_gh import files, gitrun
from memento_gh.layout import MEMORY_FILE_NAMES, MEMORY_FOLDER, Layout
from memento_gh.plan.guide import format_guide

#: The most paths of the file tree a prompt lists, and characters of each file it quotes.
TREE_LIMIT = 400
FILE_LIMIT = 20_000

DRAFT_ROLE = (
    "You are memento's architect. Turn the spec below into a plan of phases and small tasks "
    "that coding agents carry out one at a time. Each task must be provable by its verify "
    "command; in every phase at least one verify must run a test command this repository "
    "really has (a program on PATH or a file in the tree, and paths that exist or that a "
    "task creates)."
)
REVISE_ROLE = (
    "You are memento's architect. Revise the plan below so that its work can go on: split "
    "a blocked task into smaller ones, rewrite a verify or context_files that cannot work, "
    "or add a missing task. Rules of a revision: [x] and [-] tasks stay byte for byte; a "
    "task is never deleted (mark it [-], e.g. `[-] (split into T-205, T-206)`) and its ID "
    "is never given to another task; new tasks take new IDs; a task you unblock goes back "
    "to [ ] with retries: 0; Meta stays as it is."
)


def draft_prompt(layout: Layout, spec: str, proposal: Path, problems: Sequence[str]) -> str:
    parts = [DRAFT_ROLE, _where(proposal), "## The spec\n\n" + spec.rstrip() + "\n"]
    return _assemble(layout, parts, problems)


def revise_prompt(
    layout: Layout,
    plan: str,
    proposal: Path,
    problems: Sequence[str],
    *,
    task: str | None,
    why: str | None,
) -> str:
    ask = f"Revise the plan for {task}" if task else "Revise the plan"
    parts = [REVISE_ROLE, _where(proposal) + " It holds the plan as it is now; edit it."]
    parts.append(f"## What is asked\n\n{ask}." + (f" Why: {why}" if why else ""))
    parts.append(f"## The plan now\n\n```markdown\n{plan}```\n")
    status = files.read_optional(layout.status)
    if status:
        parts.append("## The status log (latest last)\n\n" + status[-FILE_LIMIT:])
    return _assemble(layout, parts, problems)


def _where(proposal: Path) -> str:
    return (
        f"Write the whole plan, as Markdown, into the file {proposal} with your own file "
        "tool (its path is also in the variable MEMENTO_PROPOSAL_FILE). It is memento's "
        "scratch file at the top of the repository, kept out of git and removed after your "
        "run; it must be a regular file. Change no other file: anything else you change is "
        "undone and the run is refused."
    )


def _assemble(layout: Layout, parts: list[str], problems: Sequence[str]) -> str:
    if problems:
        parts.append(
            "## Your last proposal has problems; fix every one\n\n"
            + "".join(f"- {problem}\n" for problem in problems)
        )
    parts.append(format_guide())
    parts.append("## The repository's files\n\n" + _tree(layout.root))
    for title, path in _context_files(layout):
        text = files.read_optional(path)
        if text:
            parts.append(f"## {title}\n\n{text[:FILE_LIMIT]}")
    return "\n\n".join(parts) + "\n"


def _tree(root: Path) -> str:
    listing = gitrun.check(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    paths = [path for path in listing.decode("utf-8", "replace").split("\0") if path]
    shown = "".join(f"- {path}\n" for path in paths[:TREE_LIMIT])
    more = len(paths) - TREE_LIMIT
    return shown + (f"- ... and {more} more\n" if more > 0 else "")


def _context_files(layout: Layout) -> list[tuple[str, Path]]:
    found = [("PROJECT_MAP.md", layout.project_map)]
    lessons = layout.docs / MEMORY_FOLDER
    found += [(f"Lessons: {name}", lessons / name) for name in MEMORY_FILE_NAMES]
    return found
