"""The worker's prompt for one task: memento picks the task, the agent only does it.

The prompt holds the system prompt, the task's own lines of the plan, its ``verify`` command,
the files it may and may not change, why its last run failed when it did (at most
``LAST_ATTEMPT_BUDGET`` bytes), its module's ``PROJECT_MAP.md`` entry, the unread notes
for it or for every task (at most ``NOTES_BUDGET`` bytes of them), and the content of its
``context_files`` - never the rest of the plan, so its size does not grow with the plan. A
pure function: the same inputs give the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from memento_gh.engine.globs import has_wildcards, normalize
from memento_gh.plan.model import Plan, Task

if TYPE_CHECKING:  # the notes module is imported only when there are notes to show
    from memento_gh.formats.notes import Note

#: ``ContextFile.note`` values; "" means the content is there.
BINARY = "binary"
TOO_LARGE = "too large"
MISSING = "missing"
IGNORED = "ignored"
PROTECTED = "protected"
OVER_BUDGET = "omitted: over the prompt budget"
UNREADABLE = "unreadable"
SYMLINK = "symlink"
SPECIAL = "special"

_NOTE_TEXT = {
    BINARY: "binary file: content not shown",
    TOO_LARGE: "too large to show: read the parts you need",
    MISSING: "missing: you may create it",
    IGNORED: "excluded from the prompt by .memento_ignore: content not shown",
    PROTECTED: "one of memento's own files: content not shown, and you must not change it",
    OVER_BUDGET: "omitted: over the prompt budget; read it yourself if you need it",
    UNREADABLE: "unreadable: content not shown",
    SYMLINK: "symbolic link: content not shown",
    SPECIAL: "not a regular file (a FIFO, socket or device): content not shown",
}
_BACKTICK_RUN = re.compile(r"`+")

#: The most bytes (UTF-8) of the prompt's notes section. Global notes stay unread (every
#: task must see them), so without a bound each prompt would carry every one of them whole.
#: The task's own notes come first, then the global ones, each newest first; a note that
#: does not fit whole is cut to what room is left, the rest are left out, and a line says
#: how many and where to read them.
NOTES_BUDGET = 8 * 1024
#: Less room than this left for a note that does not fit: leave it out rather than cut it.
_LEAST_CUT = 512
NOTES_FILE = "docs/HUMAN_NOTES.md"
#: The most bytes (UTF-8) of the prompt's account of the task's last, failed run: why it
#: failed, and the first lines of verify's output, cut to fit.
LAST_ATTEMPT_BUDGET = 2048
#: The most bytes of the error analysis in it; the verify output gets the rest.
_ANALYSIS_BYTES = 600
#: Less room than this left for verify's output: leave it out rather than cut it.
_LEAST_EXCERPT = 64
STATUS_FILE = "docs/TICK_STATUS.md"


class ContextFile(NamedTuple):
    """One file of the task's context: its content, or the reason it is not shown.

    A ``path`` ending in ``/`` is a directory named by ``context_files`` that holds no file
    yet (note ``missing``)."""

    path: str
    size: int  # bytes on disk (0 when missing)
    content: str | None
    note: str  # "" | BINARY | TOO_LARGE | MISSING | IGNORED | PROTECTED | OVER_BUDGET | ...


class LastAttempt(NamedTuple):
    """The task's last run when it failed, as its status entry tells it: a retry's worker
    should know what went wrong."""

    tick: int
    analysis: str  # the error analysis: one line
    verify: str  # the first lines of verify's output ("" when it did not run)
    exit_code: int | None  # verify's
    log: str | None = None  # the tick's log file, with the whole output


def task_block(plan: Plan, task: Task) -> str:
    """The task's lines exactly as the plan has them: its task line and its field lines."""
    return "\n".join(plan.lines[task.line : task.end + 1])


def notes_for(notes: Iterable[Note], task_id: str) -> list[Note]:
    """The notes a worker on ``task_id`` must see: unread, active, for it or ``global``."""
    from memento_gh.formats.notes import GLOBAL

    return [
        note
        for note in notes
        if not note.read and not note.archived and note.target in (task_id, GLOBAL)
    ]


def build_prompt(
    *,
    system: str,
    task_block: str,
    task: Task,
    module_entry: str | None,
    notes: Sequence[Note],
    context: Sequence[ContextFile],
    lessons: Sequence[str] = (),
    max_diff_lines: int | None = None,
    notes_file: str = NOTES_FILE,
    last_attempt: LastAttempt | None = None,
    status_file: str = STATUS_FILE,
) -> str:
    """``notes_file``: where the notes are, from the repository root (the notes section
    points there for the notes it leaves out); ``status_file`` likewise for the status log,
    which has the entry of ``last_attempt``."""
    sections = [
        system.strip("\n"),
        _task_section(task_block, task, max_diff_lines),
        _last_attempt_section(last_attempt, status_file) if last_attempt else "",
        _module_section(task, module_entry),
        _notes_section(notes_for(notes, task.id) if notes else [], task.id, notes_file),
    ]
    if lessons:
        sections.append(_lessons_section(lessons))
    sections.append(_files_section(context))
    return "\n\n".join(section for section in sections if section) + "\n"


def fenced(content: str, info: str = "") -> str:
    """``content`` in a backtick fence longer than any backtick run inside it."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    body = content if content.endswith("\n") or not content else content + "\n"
    return f"{fence}{info}\n{body}{fence}"


def _task_section(block: str, task: Task, max_diff_lines: int | None) -> str:
    lines = [
        "## Your task",
        "",
        f"Do this one task, {task.id}. Its lines in the plan, exactly as written there:",
        "",
        fenced(block.strip("\n"), "markdown"),
        "",
        "### Verify",
        "",
    ]
    if task.verify:
        lines += [
            "memento runs this command from the repository root after you exit; "
            "exit code 0 means the task is done, anything else means it failed:",
            "",
            fenced(task.verify, "sh"),
        ]
    else:
        lines.append("The task has no readable `verify` command, so memento will fail it.")
    lines += ["", "### Files you may change (context_files)", ""]
    if task.context_files:
        lines.append("Create, change or delete only paths that these patterns match:")
        lines.append("")
        lines += [f"- {_code(pattern)}{_pattern_gloss(pattern)}" for pattern in task.context_files]
    else:
        lines.append("None: the task lists no context_files, so any change fails it.")
    lines += ["", "### Files you must not touch (guard_files)", ""]
    if task.guard_files:
        lines += [f"- {_code(pattern)}{_pattern_gloss(pattern)}" for pattern in task.guard_files]
    else:
        lines.append("None besides memento's own files.")
    if max_diff_lines is not None:
        lines += [
            "",
            "### Size",
            "",
            f"memento rejects a change of more than {max_diff_lines} added plus removed lines.",
        ]
    return "\n".join(lines)


def _pattern_gloss(pattern: str) -> str:
    text = normalize(pattern)
    if text in ("", ".", "./"):
        return ": the whole repository"
    if text.endswith("/"):
        return ": everything below this directory"
    last = text.rsplit("/", 1)[-1]
    if last == "**" or has_wildcards(last):
        return ""
    return ": this file, or everything below it if it is a directory"


def _last_attempt_section(last: LastAttempt, status_file: str) -> str:
    """Why the task's last run failed, and the first lines of verify's output, within
    ``LAST_ATTEMPT_BUDGET`` bytes (the output is cut to fit, or left out)."""
    where = f"its entry is in {_code(status_file)}"
    if last.log:
        where += f", its whole output in {_code(last.log)}"
    section = (
        "## Your last attempt\n\n"
        f"This task's last run, in tick #{last.tick:03d}, failed and its change was rolled "
        f"back ({where}). Do not fail the same way. Why it failed:\n\n"
        + fenced(_cut_bytes(last.analysis, _ANALYSIS_BYTES), "text")
    )
    excerpt = last.verify.strip("\n")
    code = "" if last.exit_code is None else f" (exit code {last.exit_code})"
    label = f"\n\nThe first lines of verify's output{code}:\n\n"
    while excerpt:
        block = label + fenced(excerpt, "text")
        over = _size(section + block) - LAST_ATTEMPT_BUDGET
        if over <= 0:
            return section + block
        room = _size(excerpt) - over
        excerpt = _cut_bytes(excerpt, room) if room >= _LEAST_EXCERPT else ""
    return section


def _cut_bytes(text: str, most: int) -> str:
    """``text`` in at most ``most`` bytes of UTF-8, an ellipsis marking a cut."""
    if _size(text) <= most:
        return text
    kept = text.encode("utf-8")[: max(0, most - _size("…"))].decode("utf-8", "ignore")
    return kept.rstrip() + "…"


def _module_section(task: Task, entry: str | None) -> str:
    if task.module is None:
        return "## Module\n\nThe task names no module."
    if entry is None or not entry.strip():
        return f"## Module\n\nPROJECT_MAP.md has no entry for [MODULE:{task.module}]."
    return (
        f"## Module\n\nThe entry for [MODULE:{task.module}] in PROJECT_MAP.md:\n\n{entry.strip()}"
    )


def _notes_section(notes: Sequence[Note], task_id: str, notes_file: str) -> str:
    """The notes, within ``NOTES_BUDGET`` bytes: the task's own first, then the global
    ones, each newest first."""
    if not notes:
        return "## Notes from humans\n\nNo unread notes for this task."
    head = (
        "## Notes from humans\n\n"
        "Follow these notes; they are newer than the plan. Each note's text is quoted below."
    )
    ordered = _newest_first(notes, task_id)
    room = NOTES_BUDGET - _size(head) - _size(_left_out(len(ordered), notes_file))
    blocks: list[str] = []
    for note in ordered:
        block = _note_block(note)
        if _size(block) > room:
            if room >= _LEAST_CUT:
                blocks.append(_cut(block, room, notes_file))
            break
        blocks.append(block)
        room -= _size(block)
    left_out = len(ordered) - len(blocks)
    return head + "".join(blocks) + (_left_out(left_out, notes_file) if left_out else "")


def _newest_first(notes: Sequence[Note], task_id: str) -> list[Note]:
    """The task's own notes, then the others (the global ones), each newest first; of two
    notes of one time, the later in the file first."""
    own = [note for note in reversed(notes) if note.target == task_id]
    others = [note for note in reversed(notes) if note.target != task_id]

    def newest(group: list[Note]) -> list[Note]:
        return sorted(group, key=lambda note: note.time, reverse=True)

    return newest(own) + newest(others)


def _note_block(note: Note) -> str:
    from memento_gh.formats.notes import GLOBAL

    target = "every task (global)" if note.target == GLOBAL else note.target
    # The file holds the text quoted (memento writes notes so): quote the text, not the quote.
    return f"\n\n### Note of {note.time} for {target}\n\n{_quoted(note.text)}"


def _cut(block: str, room: int, notes_file: str) -> str:
    """The first ``room`` bytes of a note's block, ending with where to read the rest.
    Every line of the note is quoted, so a cut anywhere leaves it quoted."""
    tail = f"\n\n(This note is cut here: read it whole in {_code(notes_file)}.)"
    kept = block.encode("utf-8")[: room - _size(tail)].decode("utf-8", "ignore")
    return kept.rstrip() + tail


def _left_out(count: int, notes_file: str) -> str:
    notes = "1 more note is" if count == 1 else f"{count} more notes are"
    them = "it" if count == 1 else "them"
    return (
        f"\n\n{notes} not shown here ({NOTES_BUDGET // 1024} KB of notes at most: the "
        f"task's own first, then global ones, newest first); read {them} in {_code(notes_file)}."
    )


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _quoted(text: str) -> str:
    lines = text.split("\n") if text else ["(empty note)"]
    return "\n".join(f"> {line}".rstrip() for line in lines)


def _lessons_section(lessons: Sequence[str]) -> str:
    items = [
        "- " + "\n  ".join(lesson.strip("\n").split("\n")) for lesson in lessons if lesson.strip()
    ]
    return "\n".join(["## Lessons from earlier ticks", "", *items])


def _files_section(context: Sequence[ContextFile]) -> str:
    if not context:
        return "## Files\n\nNo file matches the task's context_files yet."
    parts = ["## Files", "", "The files of the task's context_files, as they are now."]
    for item in sorted(context, key=lambda file: file.path):
        parts += ["", f"### {_code(item.path)}", ""]
        if item.content is not None and not item.note:
            parts.append(fenced(item.content))
        elif item.path.endswith("/"):
            parts.append("No file here yet: you may create files in this directory.")
        else:
            size = f" ({item.size} bytes)" if item.size else ""
            parts.append(_NOTE_TEXT.get(item.note, item.note or "content not shown") + size)
    return "\n".join(parts)


def _code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks or line breaks it holds."""
    shown = text if text.isprintable() else repr(text)
    longest = max((len(run) for run in _BACKTICK_RUN.findall(shown)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{ticks}{pad}{shown}{pad}{ticks}"
