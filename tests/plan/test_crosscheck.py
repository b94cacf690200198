"""``crosscheck``: where a CommonMark reading (mistune) finds other checklist items than the
line scanner, the plan is reported at the line where the readings part."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memento_gh.plan.crosscheck import crosscheck
from memento_gh.plan.model import ERROR
from memento_gh.plan.scanner import parse
from testing.plans import SEED_PLAN, large_plan, phase_block, plan_text, task_block

PHASE = "## Phase 1: A\n<!-- depends: none -->\n\n"


def lines_and_severities(text: str) -> list[tuple[int, str]]:
    return [(problem.line, problem.severity) for problem in crosscheck(parse(text))]


def test_plain_plans_need_no_second_reading() -> None:
    plain = [
        SEED_PLAN,
        large_plan(120),
        plan_text([phase_block(1, "A", [task_block("T-1"), task_block("T-2", marker="~")])]),
    ]
    for text in plain:
        plan = parse(text)
        assert plan.unusual_chunks == ()
        assert crosscheck(plan) == []


def test_checking_a_plain_plan_does_not_import_mistune() -> None:
    script = (
        "import sys\n"
        "from memento_gh.plan.crosscheck import crosscheck\n"
        "from memento_gh.plan.scanner import parse\n"
        "from testing.plans import SEED_PLAN\n"
        "assert crosscheck(parse(SEED_PLAN)) == []\n"
        "print('mistune' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "False\n"


def test_a_block_quoted_task_is_one_markdown_reads_and_memento_does_not() -> None:
    text = PHASE + "- [ ] `T-1` real\n\n> - [ ] `T-2` quoted\n"
    plan = parse(text)

    assert [task.id for task in plan.tasks] == ["T-1"]
    problems = crosscheck(plan)
    assert [(problem.line, problem.severity) for problem in problems] == [(6, ERROR)]
    assert "'[ ] `T-2` quoted'" in problems[0].message


@pytest.mark.parametrize(
    ("html", "task_line"),
    [
        ("<div>\n", 5),
        ("<details>\n<summary>More</summary>\n", 6),
        ('<p align="center">\n', 5),
    ],
    ids=["div", "details", "p"],
)
def test_a_task_right_under_an_html_block_is_html_to_markdown(html: str, task_line: int) -> None:
    text = PHASE + html + "- [ ] `T-1` swallowed by the HTML block\n\n</div>\n"
    plan = parse(text)

    assert [task.id for task in plan.tasks] == ["T-1"]
    problems = crosscheck(plan)
    assert [(problem.line, problem.severity) for problem in problems] == [(task_line, ERROR)]
    assert "memento reads this line as a checklist item" in problems[0].message


def test_a_blank_line_after_the_html_block_ends_it() -> None:
    assert lines_and_severities(PHASE + "<div>\n\n- [ ] `T-1` a task to both\n\n</div>\n") == []


def test_a_task_indented_as_code_is_code_to_markdown() -> None:
    assert lines_and_severities(PHASE + "Some text.\n\n    - [ ] `T-1` code\n") == [(6, ERROR)]


def test_a_fence_indented_under_a_list_item_belongs_to_the_item() -> None:
    # Markdown: the fence is inside the item above, and the item ends at the next line at
    # the margin, which is a task. memento: the fence hides that line.
    text = PHASE + "- [ ] `T-1` a\n\n   ```\n- [ ] `T-2` hidden from memento\n   ```\n"
    plan = parse(text)

    assert [task.id for task in plan.tasks] == ["T-1"]
    problems = crosscheck(plan)
    assert [(problem.line, problem.severity) for problem in problems] == [(7, ERROR)]
    assert "'[ ] `T-2` hidden from memento'" in problems[0].message


def test_a_comment_opened_inside_a_task_ends_with_the_task_for_markdown() -> None:
    text = PHASE + "- [ ] `T-1` a\n  <!--\n- [ ] `T-2` at the margin\n  -->\n"

    assert lines_and_severities(text) == [(6, ERROR)]


def test_a_setext_underline_turns_a_task_into_a_heading() -> None:
    assert lines_and_severities(PHASE + "- [ ] `T-1` a\n  ---\n") == [(4, ERROR)]


@pytest.mark.parametrize(
    "body",
    [
        "- [ ] `T-1` a\n  - verify: `x`\n  - [ ] `T-2` nested\n    - verify: `y`\n",
        "  - [ ] `T-1` two spaces in\n",
        "-\t[ ] `T-1` tab after the bullet\n",
        "- [ ] `T-1` a\n\n```\n- [ ] `T-2` in a fence\n```\n\n<!--\n- [ ] `T-3`\n-->\n",
        "- [ ] `T-1` a\n  ```\n  - [ ] `T-2` in a fence inside the task\n  ```\n",
        "<div>\n\n- [ ] `T-1` after a blank line\n\n</div>\n",
    ],
    ids=["nested", "indented", "tab", "fence-and-comment", "fence-in-task", "html-then-blank"],
)
def test_unusual_markdown_both_readings_agree_on(body: str) -> None:
    plan = parse(PHASE + body)

    assert plan.unusual_chunks != ()
    assert crosscheck(plan) == []


def test_only_the_unusual_section_is_read_again() -> None:
    text = (
        PHASE
        + "- [ ] `T-1` plain\n\n"
        + "## Phase 2: B\n<!-- depends: Phase 1 -->\n\n> - [ ] `T-2` quoted\n\n"
        + "## Phase 3: C\n<!-- depends: Phase 2 -->\n\n- [ ] `T-3` plain\n"
    )
    plan = parse(text)

    assert plan.unusual_chunks == ((5, 10),)  # from the Phase 2 heading up to Phase 3
    assert lines_and_severities(text) == [(9, ERROR)]
