"""The surgical editor: given a plan and an edit, these are the exact bytes written."""

from __future__ import annotations

import pytest

from memento_gh.errors import UserError
from memento_gh.plan import editor
from memento_gh.plan.editor import DeleteLine, InsertLine, Splice
from memento_gh.plan.scanner import parse
from testing.plans import SEED_PLAN

# The case, byte for byte: a BOM, CRLF endings, a tab-indented task, emoji and CJK
# text, trailing spaces, a fence and a comment holding task-looking lines.
TRICKY = (
    "\ufeff# MASTER_PLAN: 迷宫 🚀\r\n"
    "\r\n"
    "## Meta\r\n"
    "- tick_mode: auto\t<!-- auto | paused | stopped -->\r\n"
    "- max_retries: 3  \r\n"
    "\r\n"
    "## Phase 1: 基础 Foundation ✅\r\n"
    "<!-- parallel: true -->\r\n"
    "<!-- depends: none -->\r\n"
    "\r\n"
    "- [x] `T-101` [MODULE:数据库] 建立 schema 🗄️  \r\n"
    "\t- verify: `pytest -q tests/db`\r\n"
    "\t- context_files: [src/db/*, 文档/设计.md]\r\n"
    "\t- retries: 0\r\n"
    "\r\n"
    "```markdown\r\n"
    "- [ ] `T-901` [MODULE:fake] inside a fence\r\n"
    "## Phase 9: not a phase\r\n"
    "```\r\n"
    "\r\n"
    "<!-- dropped for now:\r\n"
    "- [ ] `T-902` [MODULE:fake] inside a comment\r\n"
    "-->\r\n"
    "\r\n"
    "- [ ] `T-102` [MODULE:認証] JWT トークン 🔑\r\n"
    "  - verify: `pytest -q -k jwt`  \r\n"
    "  - context_files: [src/auth/jwt.py]\r\n"
    "\r\n"
    "## Phase 2: Polish\r\n"
    "<!-- parallel: false -->\r\n"
    "<!-- depends: Phase 1 -->\r\n"
    "\r\n"
    "- [ ] `T-201` [MODULE:docs] Write the 使用说明 📖\r\n"
)


def replaced(text: str, old: str, new: str) -> str:
    """``text`` with its only occurrence of ``old`` replaced."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_the_tricky_plan_reads_as_exactly_its_real_tasks() -> None:
    plan = parse(TRICKY)

    assert plan.problems == ()
    assert plan.text() == TRICKY
    assert [(task.id, task.marker, task.module) for task in plan.tasks] == [
        ("T-101", "x", "数据库"),
        ("T-102", " ", "認証"),
        ("T-201", " ", "docs"),
    ]
    assert [phase.task_ids for phase in plan.phases] == [("T-101", "T-102"), ("T-201",)]
    assert plan.by_id["T-101"].description == "建立 schema 🗄️"
    assert plan.by_id["T-101"].context_files == ("src/db/*", "文档/设计.md")
    assert plan.by_id["T-102"].verify == "pytest -q -k jwt"
    assert plan.meta["tick_mode"].value == "auto"
    assert plan.meta["max_retries"].value == "3"


def test_claiming_a_task_of_the_tricky_plan_changes_only_its_bytes() -> None:
    plan = parse(TRICKY)

    written = editor.apply(
        plan,
        [
            editor.set_status(plan, "T-102", "~"),
            editor.set_field(plan, "T-102", "claimed", "2025-01-15T14:35:00Z runner-1"),
            editor.set_meta(plan, "total_ticks", "7"),
        ],
    )

    expected = replaced(TRICKY, "- [ ] `T-102`", "- [~] `T-102`")
    expected = replaced(
        expected,
        "  - context_files: [src/auth/jwt.py]\r\n",
        "  - context_files: [src/auth/jwt.py]\r\n  - claimed: 2025-01-15T14:35:00Z runner-1\r\n",
    )
    expected = replaced(
        expected, "- max_retries: 3  \r\n", "- max_retries: 3  \r\n- total_ticks: 7\r\n"
    )
    assert written == expected


def test_failing_a_task_of_the_tricky_plan_changes_only_its_bytes() -> None:
    plan = parse(TRICKY)

    written = editor.apply(
        plan,
        [
            editor.set_status(plan, "T-101", "!"),
            editor.set_field(plan, "T-101", "retries", "3"),
            editor.set_field(plan, "T-101", "estimate", "10min"),
            editor.set_meta(plan, "tick_mode", "paused"),
        ],
    )

    expected = replaced(TRICKY, "- [x] `T-101`", "- [!] `T-101`")
    expected = replaced(expected, "\t- retries: 0\r\n", "\t- retries: 3\r\n\t- estimate: 10min\r\n")
    expected = replaced(expected, "- tick_mode: auto\t<!--", "- tick_mode: paused\t<!--")
    assert written == expected
    assert parse(written).by_id["T-101"].retries == 3


def test_removing_a_field_of_the_tricky_plan_removes_its_line_only() -> None:
    plan = parse(TRICKY)
    edit = editor.remove_field(plan, "T-101", "retries")
    assert edit is not None

    written = editor.apply(plan, [edit])

    assert written == replaced(TRICKY, "\t- retries: 0\r\n", "")


# -- set_status -----------------------------------------------------------------------------


def test_set_status_rewrites_the_one_marker_character() -> None:
    plan = parse(SEED_PLAN)

    written = editor.apply(plan, [editor.set_status(plan, "T-201", "x")])

    assert written == replaced(SEED_PLAN, "- [ ] `T-201`", "- [x] `T-201`")


def test_set_status_on_an_indented_star_bullet_task() -> None:
    text = "## Phase 1: A\n  * [X] `T-1` one\n"
    plan = parse(text)

    assert editor.apply(plan, [editor.set_status(plan, "T-1", " ")]) == (
        "## Phase 1: A\n  * [ ] `T-1` one\n"
    )


def test_set_status_refuses_unknown_markers_and_tasks() -> None:
    plan = parse(SEED_PLAN)

    with pytest.raises(ValueError, match="unknown status marker"):
        editor.set_status(plan, "T-101", "?")
    with pytest.raises(UserError, match="no task 'T-999' in the plan") as raised:
        editor.set_status(plan, "T-999", "x")
    assert "T-101, T-102, T-201, T-301" in str(raised.value)


# -- set_field / remove_field ---------------------------------------------------------------


def test_set_field_replaces_only_the_value_and_keeps_trailing_spaces() -> None:
    text = "## Phase 1: A\n- [ ] `T-1` one\n  - estimate:\t5min   \n  - retries: 0\n"
    plan = parse(text)

    written = editor.apply(plan, [editor.set_field(plan, "T-1", "estimate", "1h")])

    assert written == "## Phase 1: A\n- [ ] `T-1` one\n  - estimate:\t1h   \n  - retries: 0\n"


def test_filling_an_empty_field_adds_the_space_after_the_colon() -> None:
    text = "## Phase 1: A\n- [ ] `T-1` one\n  - retries:\n  - estimate: \n"
    plan = parse(text)

    written = editor.apply(
        plan,
        [
            editor.set_field(plan, "T-1", "retries", "2"),
            editor.set_field(plan, "T-1", "estimate", "5min"),
        ],
    )

    assert written == "## Phase 1: A\n- [ ] `T-1` one\n  - retries: 2\n  - estimate: 5min\n"
    assert parse(written).by_id["T-1"].retries == 2


def test_a_new_field_goes_after_the_last_field_with_the_same_indentation() -> None:
    text = "## Phase 1: A\n- [ ] `T-1` one\n    - verify: `true`\n    - retries: 0\n\n- [ ] `T-2`\n"
    plan = parse(text)

    written = editor.apply(plan, [editor.set_field(plan, "T-1", "estimate", "5min")])

    assert written == replaced(
        text, "    - retries: 0\n", "    - retries: 0\n    - estimate: 5min\n"
    )


def test_a_new_field_of_a_task_without_fields_is_indented_two_spaces_past_the_task() -> None:
    text = "## Phase 1: A\n- [ ] `T-1` one\n  - [ ] `T-2` nested\n- [ ] `T-3` three\n"
    plan = parse(text)

    written = editor.apply(
        plan,
        [
            editor.set_field(plan, "T-1", "retries", "1"),
            editor.set_field(plan, "T-2", "retries", "2"),
        ],
    )

    assert written == (
        "## Phase 1: A\n"
        "- [ ] `T-1` one\n"
        "  - retries: 1\n"
        "  - [ ] `T-2` nested\n"
        "    - retries: 2\n"
        "- [ ] `T-3` three\n"
    )
    assert [parse(written).by_id[task_id].retries for task_id in ("T-1", "T-2")] == [1, 2]


def test_a_new_last_line_of_a_file_without_final_newline_keeps_it_so() -> None:
    text = "## Phase 1: A\r\n- [ ] `T-1` one\r\n  - retries: 0"
    plan = parse(text)

    written = editor.apply(
        plan, [editor.set_field(plan, "T-1", "claimed", "2025-01-15T14:35:00Z w")]
    )

    assert written == (
        "## Phase 1: A\r\n- [ ] `T-1` one\r\n  - retries: 0\r\n  - claimed: 2025-01-15T14:35:00Z w"
    )


def test_a_new_line_in_a_crlf_file_ends_in_crlf() -> None:
    text = SEED_PLAN.replace("\n", "\r\n")
    plan = parse(text)

    written = editor.apply(plan, [editor.set_field(plan, "T-301", "depends", "[T-201]")])

    assert written == text + "  - depends: [T-201]\r\n"
    assert written.count("\r\n") == text.count("\r\n") + 1
    assert "\n" not in written.replace("\r\n", "")


def test_a_new_line_takes_the_ending_of_the_line_before_it_in_a_mixed_file() -> None:
    text = "## Phase 1: A\n- [ ] `T-1` one\r\n- [ ] `T-2` two\r- [ ] `T-3` three\n"
    plan = parse(text)

    written = editor.apply(
        plan,
        [
            editor.set_field(plan, "T-1", "retries", "1"),
            editor.set_field(plan, "T-2", "retries", "2"),
        ],
    )

    assert written == (
        "## Phase 1: A\n- [ ] `T-1` one\r\n  - retries: 1\r\n"
        "- [ ] `T-2` two\r  - retries: 2\r- [ ] `T-3` three\n"
    )


def test_remove_field_deletes_its_line_and_nothing_else() -> None:
    text = "## Phase 1: A\n- [~] `T-1` one\n  - claimed: 2025-01-15T14:35:00Z w\n  - retries: 0\n"
    plan = parse(text)
    edit = editor.remove_field(plan, "T-1", "claimed")

    assert edit == DeleteLine(2)
    assert editor.remove_field(plan, "T-1", "estimate") is None
    assert editor.apply(plan, [edit]) == replaced(text, "  - claimed: 2025-01-15T14:35:00Z w\n", "")


def test_deleting_the_last_line_of_a_file_without_final_newline() -> None:
    text = "## Phase 1: A\n- [~] `T-1` one\n  - claimed: 2025-01-15T14:35:00Z w"
    plan = parse(text)
    edit = editor.remove_field(plan, "T-1", "claimed")
    assert edit is not None

    assert editor.apply(plan, [edit]) == "## Phase 1: A\n- [~] `T-1` one\n"


def test_releasing_a_claim_in_one_apply() -> None:
    text = (
        "## Phase 1: A\n"
        "- [~] `T-1` one\n"
        "  - verify: `true`\n"
        "  - claimed: 2025-01-15T14:35:00Z w\n"
        "- [ ] `T-2` two\n"
    )
    plan = parse(text)
    removal = editor.remove_field(plan, "T-1", "claimed")
    assert removal is not None

    written = editor.apply(
        plan,
        [
            editor.set_status(plan, "T-1", " "),
            removal,
            editor.set_field(plan, "T-1", "retries", "1"),
        ],
    )

    assert written == (
        "## Phase 1: A\n- [ ] `T-1` one\n  - verify: `true`\n  - retries: 1\n- [ ] `T-2` two\n"
    )


def test_set_field_refuses_unknown_fields_and_line_breaks() -> None:
    plan = parse(SEED_PLAN)

    with pytest.raises(ValueError, match="unknown task field 'owner'"):
        editor.set_field(plan, "T-101", "owner", "me")
    for value in ("a\nb", "a\rb", "a\r\nb"):
        with pytest.raises(ValueError, match="must fit on one line"):
            editor.set_field(plan, "T-101", "estimate", value)


# -- set_meta -------------------------------------------------------------------------------


def test_set_meta_keeps_the_comment_after_the_value() -> None:
    plan = parse(SEED_PLAN)

    written = editor.apply(plan, [editor.set_meta(plan, "tick_mode", "paused")])

    assert written == replaced(
        SEED_PLAN,
        "- tick_mode: auto          <!--",
        "- tick_mode: paused        <!--",  # in its column (first-use issue, item 14)
    )


def test_filling_an_empty_meta_value_keeps_it_readable() -> None:
    text = "## Meta\n- tick_mode:\n- max_retries: <!-- per task -->\n"
    plan = parse(text)

    written = editor.apply(
        plan,
        [editor.set_meta(plan, "tick_mode", "auto"), editor.set_meta(plan, "max_retries", "3")],
    )

    assert written == "## Meta\n- tick_mode: auto\n- max_retries: 3 <!-- per task -->\n"
    assert {key: entry.value for key, entry in parse(written).meta.items()} == {
        "tick_mode": "auto",
        "max_retries": "3",
    }


def test_a_new_meta_key_goes_after_the_last_entry_with_its_bullet() -> None:
    text = "## Meta\n-  tick_mode: auto\n\n<!-- a note -->\n-  max_retries: 3\n\n## Phase 1: A\n"
    plan = parse(text)

    written = editor.apply(plan, [editor.set_meta(plan, "total_ticks", "1")])

    assert written == replaced(
        text, "-  max_retries: 3\n", "-  max_retries: 3\n-  total_ticks: 1\n"
    )


def test_a_new_meta_key_in_an_empty_meta_section_goes_under_the_heading() -> None:
    plan = parse("# Plan\n## Meta\n\n## Phase 1: A\n")

    written = editor.apply(plan, [editor.set_meta(plan, "tick_mode", "paused")])

    assert written == "# Plan\n## Meta\n- tick_mode: paused\n\n## Phase 1: A\n"


def test_set_meta_refuses_unknown_keys_and_a_plan_without_meta() -> None:
    with pytest.raises(ValueError, match="unknown Meta key 'tick'"):
        editor.set_meta(parse(SEED_PLAN), "tick", "auto")
    with pytest.raises(UserError, match="no '## Meta' section"):
        editor.set_meta(parse("## Phase 1: A\n"), "tick_mode", "auto")


# -- apply ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [SEED_PLAN, TRICKY, "a\rb", "\ufeff", "", "x"])
def test_applying_no_edits_gives_back_the_text(text: str) -> None:
    assert editor.apply(parse(text), []) == text


def test_splices_on_one_line_apply_right_to_left() -> None:
    plan = parse("abcdef\n")

    written = editor.apply(
        plan, [Splice(0, 0, 1, "A"), Splice(0, 4, 6, "EF!"), Splice(0, 2, 2, "+")]
    )

    assert written == "Ab+cdEF!\n"


def test_overlapping_splices_raise() -> None:
    plan = parse(SEED_PLAN)
    with pytest.raises(ValueError, match="overlapping edits on line 26"):
        editor.apply(
            plan, [editor.set_status(plan, "T-101", "x"), editor.set_status(plan, "T-101", "!")]
        )
    with pytest.raises(ValueError, match="overlapping edits on line 1"):
        editor.apply(parse("abcdef\n"), [Splice(0, 0, 3, "x"), Splice(0, 2, 4, "y")])


def test_several_lines_inserted_after_one_line_keep_their_order() -> None:
    plan = parse("a\nb")

    written = editor.apply(
        plan, [InsertLine(1, "c"), InsertLine(0, "a2"), InsertLine(1, "d"), DeleteLine(0)]
    )

    assert written == "a2\nb\nc\nd"


def test_deleting_the_line_between_a_lone_cr_and_an_empty_lf_line_joins_them() -> None:
    # The edit removes exactly the line's bytes; what is left, a CR then an LF, is one
    # CRLF to any reader, so the empty line is gone. Only files mixing CR and LF meet this.
    text = "## Phase 1: A\r- [~] `T-1` one\r  - claimed: 2025-01-15T14:35:00Z w\n\n"
    plan = parse(text)
    edit = editor.remove_field(plan, "T-1", "claimed")
    assert edit is not None

    written = editor.apply(plan, [edit])

    assert written == "## Phase 1: A\r- [~] `T-1` one\r\n"
    assert parse(written).eols == ("\r", "\r\n")
