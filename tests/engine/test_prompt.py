"""The worker prompt: this task's slice of the plan, its notes and its files, and nothing more."""

from __future__ import annotations

import re

import pytest

from memento_gh.engine.prompt import (
    BINARY,
    MISSING,
    OVER_BUDGET,
    TOO_LARGE,
    ContextFile,
    build_prompt,
    fenced,
    notes_for,
    task_block,
)
from memento_gh.formats.notes import parse_notes
from memento_gh.plan.model import Plan, Task
from memento_gh.plan.scanner import parse
from testing.plans import SEED_PLAN, large_plan, phase_block, plan_text
from testing.plans import task_block as plan_task_block

SYSTEM = "# memento worker\n\nYou are the worker of one memento tick.\n"

NOTES_TEXT = """\
# HUMAN NOTES

## Active Notes

### [NOTE] 2025-01-15T15:00:00Z → T-101
Use UUID primary keys.
> already quoted line

### [NOTE] 2025-01-15T15:10:00Z → global
Prefer small migrations.

### [NOTE] 2025-01-15T15:20:00Z → T-102
Rotate the JWT secret monthly.

### [NOTE:READ] 2025-01-15T14:00:00Z → T-101
An old instruction that was already followed.

## Archive

### [NOTE] 2025-01-10T10:00:00Z → T-101
Archived and no longer relevant.
"""

MODULE_ENTRY = """\
### [MODULE:database]
- Purpose: PostgreSQL connection and schema management
- Entry: src/db/index.ts"""


def seed_plan() -> Plan:
    return parse(SEED_PLAN)


def seed_task(plan: Plan, task_id: str = "T-101") -> Task:
    found = plan.task(task_id)
    assert found is not None
    return found


def prompt_for(
    plan: Plan,
    task_id: str = "T-101",
    *,
    context: list[ContextFile] | None = None,
    notes: str = NOTES_TEXT,
    module_entry: str | None = MODULE_ENTRY,
    lessons: tuple[str, ...] = (),
) -> str:
    task = seed_task(plan, task_id)
    return build_prompt(
        system=SYSTEM,
        task_block=task_block(plan, task),
        task=task,
        module_entry=module_entry,
        notes=parse_notes(notes).notes,
        context=context if context is not None else [],
        lessons=lessons,
    )


def test_the_prompt_starts_with_the_system_prompt_and_holds_the_task_block() -> None:
    plan = seed_plan()
    prompt = prompt_for(plan)
    assert prompt.startswith(SYSTEM + "\n## Your task\n")
    block = task_block(plan, seed_task(plan))
    assert block.startswith("- [ ] `T-101` [MODULE:database] Setup PostgreSQL schema\n")
    assert block.endswith("  - retries: 0")
    assert block in prompt


def test_the_task_block_is_exact_including_crlf_free_field_lines() -> None:
    plan = parse(SEED_PLAN.replace("\n", "\r\n"))
    block = task_block(plan, seed_task(plan, "T-201"))
    seed_lines = SEED_PLAN.split("\n")
    first = seed_lines.index("- [ ] `T-201` [MODULE:auth] Connect auth middleware to database")
    assert block.split("\n") == seed_lines[first : first + 6]
    assert block.endswith("  - retries: 0")
    assert "\r" not in block


def test_the_prompt_spells_out_verify_and_the_allowed_and_forbidden_files() -> None:
    prompt = prompt_for(seed_plan())
    assert '```sh\ncd src && npm test -- --grep "db-schema" && echo PASS\n```' in prompt
    allowed = prompt.split("### Files you may change")[1].split("### Files you must not")[0]
    assert "- `src/db/schema.ts`" in allowed
    assert "- `src/db/migrations/`: everything below this directory" in allowed
    forbidden = prompt.split("### Files you must not touch")[1].split("## Module")[0]
    assert "- `src/auth/*`" in forbidden


def test_a_task_without_guard_files_says_so() -> None:
    prompt = prompt_for(seed_plan(), "T-301", module_entry=None)
    forbidden = prompt.split("### Files you must not touch")[1].split("## Module")[0]
    assert "None besides memento's own files." in forbidden


def test_the_module_entry_or_a_line_saying_there_is_none() -> None:
    plan = seed_plan()
    assert MODULE_ENTRY in prompt_for(plan)
    without = prompt_for(plan, module_entry=None)
    assert "PROJECT_MAP.md has no entry for [MODULE:database]." in without
    assert "Purpose:" not in without


def test_a_task_without_a_module_says_so() -> None:
    text = SEED_PLAN.replace("`T-101` [MODULE:database] ", "`T-101` ")
    prompt = prompt_for(parse(text), module_entry=None)
    assert "The task names no module." in prompt


def test_notes_for_this_task_and_global_are_in_quoted_with_time_and_target() -> None:
    prompt = prompt_for(seed_plan())
    assert "### Note of 2025-01-15T15:00:00Z for T-101" in prompt
    assert "> Use UUID primary keys.\n> > already quoted line" in prompt
    assert "### Note of 2025-01-15T15:10:00Z for every task (global)" in prompt
    assert "> Prefer small migrations." in prompt


def test_other_tasks_notes_read_notes_and_archived_notes_are_left_out() -> None:
    prompt = prompt_for(seed_plan())
    assert "Rotate the JWT secret" not in prompt
    assert "already followed" not in prompt
    assert "Archived and no longer relevant" not in prompt
    assert "T-102" not in prompt


def test_without_notes_the_prompt_says_there_are_none() -> None:
    prompt = prompt_for(seed_plan(), notes="# HUMAN NOTES\n\n## Active Notes\n")
    assert "No unread notes for this task." in prompt


def test_notes_for_selects_unread_active_notes_for_the_task_or_global() -> None:
    selected = notes_for(parse_notes(NOTES_TEXT).notes, "T-101")
    assert [(note.time, note.target) for note in selected] == [
        ("2025-01-15T15:00:00Z", "T-101"),
        ("2025-01-15T15:10:00Z", "global"),
    ]


def test_the_prompt_never_holds_other_tasks_or_the_meta() -> None:
    prompt = prompt_for(seed_plan())
    for other in ("T-102", "T-201", "T-301", "Implement JWT", "Generate API documentation"):
        assert other not in prompt
    assert "## Meta" not in prompt
    assert "circuit_breaker_threshold" not in prompt


@pytest.mark.parametrize("builder", ["large_plan", "plan_text"])
def test_prompt_bytes_do_not_grow_with_the_number_of_tasks(builder: str) -> None:
    """The issue's bar: a 10,000-task plan gives the same prompt as a 10-task plan."""

    def prompt_of(n_tasks: int) -> str:
        if builder == "large_plan":
            plan = parse(large_plan(n_tasks))
        else:
            phases = [phase_block(1, "Only", [_block(index) for index in range(n_tasks)])]
            plan = parse(plan_text(phases))
        task = plan.tasks[7]
        context = [ContextFile("src/mod_7/a.py", 12, "print('hi')\n", "")]
        return build_prompt(
            system=SYSTEM,
            task_block=task_block(plan, task),
            task=task,
            module_entry=None,
            notes=parse_notes(NOTES_TEXT.replace("T-101", task.id)).notes,
            context=context,
        )

    small, large = prompt_of(10), prompt_of(10_000)
    assert len(large.encode()) <= len(small.encode()) * 1.05
    if builder == "plan_text":
        assert large == small
    else:
        # large_plan marks its first half done, so only the task's box differs
        assert large.replace("- [x] ", "- [ ] ") == small.replace("- [x] ", "- [ ] ")
    assert "T-00009" not in large
    assert "T-09999" not in large


def _block(index: int) -> str:
    return plan_task_block(
        f"T-{index + 1:05d}",
        module=f"mod_{index % 17}",
        description=f"Step {index}",
        fields={"verify": f"`pytest tests/test_{index}.py`", "context_files": f"[src/m{index}/]"},
    )


def test_a_context_file_with_backtick_fences_is_fenced_safely() -> None:
    content = "# Readme\n\n````python\nprint('x')\n````\n\n```\nplain\n```\nend `code`\n"
    prompt = prompt_for(seed_plan(), context=[ContextFile("README.md", 80, content, "")])
    section = prompt.split("### `README.md`\n\n")[1]
    assert section.startswith("`````\n" + content + "`````")
    # no line of the content closes the fence early
    fence_lines = [line for line in section.splitlines() if re.fullmatch(r"`{5,}", line)]
    assert len(fence_lines) == 2


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("plain\n", "```\nplain\n```"),
        ("no newline", "```\nno newline\n```"),
        ("", "```\n```"),
        ("a ``` b\n", "````\na ``` b\n````"),
        ("``````\n", "```````\n``````\n```````"),
        ("~~~\n", "```\n~~~\n```"),
    ],
)
def test_fenced(content: str, expected: str) -> None:
    assert fenced(content) == expected


def test_files_without_content_say_why() -> None:
    context = [
        ContextFile("src/db/schema.ts", 0, None, MISSING),
        ContextFile("src/db/migrations/", 0, None, MISSING),
        ContextFile("assets/logo.png", 2048, None, BINARY),
        ContextFile("data/huge.sql", 900_000, None, TOO_LARGE),
        ContextFile("src/z.ts", 1000, None, OVER_BUDGET),
    ]
    prompt = prompt_for(seed_plan(), context=context)
    assert "### `src/db/schema.ts`\n\nmissing: you may create it\n" in prompt
    assert "### `src/db/migrations/`\n\nNo file here yet: you may create files" in prompt
    assert "### `assets/logo.png`\n\nbinary file: content not shown (2048 bytes)" in prompt
    assert "### `data/huge.sql`\n\ntoo large to show" in prompt
    assert "### `src/z.ts`\n\nomitted: over the prompt budget" in prompt


def test_files_are_listed_in_path_order_whatever_the_input_order() -> None:
    files = [ContextFile("b.py", 2, "b\n", ""), ContextFile("a.py", 2, "a\n", "")]
    forward = prompt_for(seed_plan(), context=files)
    assert forward == prompt_for(seed_plan(), context=files[::-1])
    assert forward.index("### `a.py`") < forward.index("### `b.py`")


def test_a_path_with_backticks_or_a_newline_is_shown_as_data() -> None:
    files = [ContextFile("odd`name.py", 2, "x\n", ""), ContextFile("new\nline.py", 2, "y\n", "")]
    prompt = prompt_for(seed_plan(), context=files)
    assert "### ``odd`name.py``" in prompt
    assert "### `'new\\nline.py'`" in prompt


def test_without_context_files_the_files_section_says_so() -> None:
    prompt = prompt_for(seed_plan(), context=[])
    assert prompt.endswith("## Files\n\nNo file matches the task's context_files yet.\n")


def test_lessons_appear_only_when_given() -> None:
    plan = seed_plan()
    assert "## Lessons" not in prompt_for(plan)
    prompt = prompt_for(plan, lessons=("Run migrations in a transaction.", "Two\nlines"))
    assert (
        "## Lessons from earlier ticks\n\n- Run migrations in a transaction.\n- Two\n  lines"
        in (prompt)
    )


def test_the_prompt_is_deterministic() -> None:
    context = [ContextFile("src/db/schema.ts", 4, "abc\n", "")]
    assert prompt_for(seed_plan(), context=context) == prompt_for(seed_plan(), context=context)


def test_a_task_without_verify_says_memento_will_fail_it() -> None:
    text = SEED_PLAN.replace(
        '  - verify: `cd src && npm test -- --grep "db-schema" && echo PASS`\n', ""
    )
    prompt = prompt_for(parse(text))
    assert "no readable `verify` command" in prompt


# -- the notes' budget -----------------------------------------------------------------------


def notes_file(*notes: tuple[str, str, str]) -> str:
    """HUMAN_NOTES.md with (time, target, text) notes, in that order."""
    parts = ["# HUMAN NOTES\n\n## Active Notes\n"]
    for time, target, text in notes:
        parts.append(f"\n### [NOTE] {time} → {target}\n{text}\n")
    return "".join(parts) + "\n## Archive\n"


def big(label: str, size: int = 20_000) -> str:
    """A note of ``size`` characters that starts with ``label``, on lines of 100."""
    text = (label + " " + "x" * size)[:size]
    return "\n".join(text[start : start + 100] for start in range(0, size, 100))


def notes_part(prompt: str) -> str:
    return prompt.split("## Notes from humans")[1].split("\n## ", maxsplit=1)[0]


def test_five_large_global_notes_stay_within_the_notes_budget_and_the_newest_is_shown() -> None:
    # Global notes are never marked read: every prompt would carry them all, whole.
    budget = 8 * 1024
    notes = [(f"2025-01-1{day}T10:00:00Z", "global", big(f"NOTE-{day}")) for day in range(1, 6)]
    without = prompt_for(seed_plan(), notes=notes_file())

    prompt = prompt_for(seed_plan(), notes=notes_file(*notes))

    assert len(prompt.encode()) <= len(without.encode()) + budget
    section = notes_part(prompt)
    assert "### Note of 2025-01-15T10:00:00Z for every task (global)" in section
    assert "> NOTE-5 xxx" in section  # the newest, cut to fit
    assert "NOTE-1" not in section
    assert "4 more notes are not shown here" in section
    assert "`docs/HUMAN_NOTES.md`" in section


def test_the_tasks_own_notes_come_first_then_the_global_ones_newest_first() -> None:
    text = notes_file(
        ("2025-01-11T10:00:00Z", "global", "global, old"),
        ("2025-01-12T10:00:00Z", "T-101", "own, old"),
        ("2025-01-13T10:00:00Z", "global", "global, new"),
        ("2025-01-14T10:00:00Z", "T-101", "own, new"),
    )

    section = notes_part(prompt_for(seed_plan(), notes=text))

    order = ["own, new", "own, old", "global, new", "global, old"]
    assert [section.index(f"> {words}") for words in order] == sorted(
        section.index(f"> {words}") for words in order
    )
    assert "not shown here" not in section


def test_notes_that_do_not_fit_are_left_out_whole_and_counted() -> None:
    own = ("2025-01-10T10:00:00Z", "T-101", big("OWN", 3_000))
    fits = ("2025-01-12T10:00:00Z", "global", big("FITS", 3_000))
    older = [(f"2025-01-0{day}T10:00:00Z", "global", big(f"OLD-{day}", 3_000)) for day in (1, 2)]

    section = notes_part(prompt_for(seed_plan(), notes=notes_file(own, fits, *older)))

    assert "> OWN xxx" in section and "> FITS xxx" in section
    assert "OLD-2" in section and "cut" in section  # cut to fill what is left
    assert "OLD-1" not in section
    assert "1 more note is not shown here" in section
    assert len(section.encode()) <= 8 * 1024


def test_a_cut_note_stays_quoted_and_says_where_the_rest_is() -> None:
    wide = "\n".join("ü" * 99 for _ in range(300))  # two bytes a character
    text = notes_file(("2025-01-10T10:00:00Z", "T-101", wide))

    section = notes_part(prompt_for(seed_plan(), notes=text))

    body = section.split("### Note of 2025-01-10T10:00:00Z for T-101")[1]
    quoted, _, after = body.strip("\n").partition("\n\n")
    assert all(line.startswith(">") for line in quoted.splitlines())
    assert after.startswith("(This note is cut here") and "`docs/HUMAN_NOTES.md`" in after
    assert len(section.encode()) <= 8 * 1024


def test_the_pointer_names_the_notes_file_where_the_plan_is() -> None:
    plan = seed_plan()
    task = seed_task(plan)
    notes = [(f"2025-01-1{day}T10:00:00Z", "global", big(f"N{day}")) for day in range(1, 4)]

    prompt = build_prompt(
        system=SYSTEM,
        task_block=task_block(plan, task),
        task=task,
        module_entry=None,
        notes=parse_notes(notes_file(*notes)).notes,
        context=[],
        notes_file="planning/HUMAN_NOTES.md",
    )

    assert "read them in `planning/HUMAN_NOTES.md`" in prompt
