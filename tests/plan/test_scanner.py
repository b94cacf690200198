"""``parse``: given this plan text, these are the phases, tasks, Meta and problems."""

from __future__ import annotations

import pytest

from memento_gh.plan.model import ERROR, Plan
from memento_gh.plan.rules import SYNTAX
from memento_gh.plan.scanner import parse, split_lines
from testing.plans import SEED_PLAN, large_plan, phase_block, plan_text, task_block


def ids(plan: Plan) -> list[str]:
    return [task.id for task in plan.tasks]


def in_phase(body: str) -> str:
    """``body`` as the content of Phase 1 of an otherwise plain plan."""
    return "## Phase 1: Only\n<!-- depends: none -->\n\n" + body


def errors(plan: Plan) -> list[tuple[int, str]]:
    return [(problem.line, problem.message) for problem in plan.problems]


# -- the seed's example plan ----------------------------------------------------------------


def test_the_seed_example_plan_reads_as_the_seed_describes_it() -> None:
    plan = parse(SEED_PLAN)

    assert plan.problems == ()
    assert plan.title == "MASTER_PLAN: <ProjectName>"
    assert ids(plan) == ["T-101", "T-102", "T-201", "T-301"]
    assert [(phase.number, phase.title) for phase in plan.phases] == [
        (1, "Foundation"),
        (2, "Integration"),
        (3, "Polish"),
    ]
    assert [phase.parallel for phase in plan.phases] == [True, False, True]
    assert [phase.depends for phase in plan.phases] == [(), (1,), (2,)]
    assert [phase.task_ids for phase in plan.phases] == [
        ("T-101", "T-102"),
        ("T-201",),
        ("T-301",),
    ]
    t101 = plan.by_id["T-101"]
    assert (t101.marker, t101.status, t101.module) == (" ", "pending", "database")
    assert t101.description == "Setup PostgreSQL schema"
    assert t101.verify == 'cd src && npm test -- --grep "db-schema" && echo PASS'
    assert t101.context_files == ("src/db/schema.ts", "src/db/migrations/")
    assert t101.guard_files == ("src/auth/*",)
    assert (t101.estimate, t101.retries) == (300, 0)
    assert plan.by_id["T-301"].guard_files == ()
    assert plan.by_id["T-201"].estimate == 600
    assert plan.phase_of(plan.by_id["T-201"]).number == 2


def test_the_seed_meta_values_stop_before_their_comments() -> None:
    plan = parse(SEED_PLAN)

    assert len(plan.meta) == 15
    assert plan.meta["tick_mode"].value == "auto"
    assert plan.meta["stale_lock_timeout"].value == "15min"
    assert plan.meta["status_archive_dir"].value == "logs/status_archive/"
    assert plan.meta["total_tasks"].value == "15"
    assert plan.settings.stale_lock_timeout == 15 * 60
    assert plan.settings.max_tasks_per_tick == 2
    line = plan.lines[plan.meta["max_retries"].line]
    assert line[plan.meta["max_retries"].start : plan.meta["max_retries"].end] == "3"


def test_plain_plans_have_no_section_that_needs_a_second_reading() -> None:
    assert parse(SEED_PLAN).unusual_chunks == ()
    assert parse(large_plan(250)).unusual_chunks == ()


# -- lines and line endings -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "lines", "eols"),
    [
        ("a\nb\n", ["a", "b"], ["\n", "\n"]),
        ("a\nb", ["a", "b"], ["\n", ""]),
        ("a\r\nb\r\n", ["a", "b"], ["\r\n", "\r\n"]),
        ("a\rb\r", ["a", "b"], ["\r", "\r"]),
        ("a\r\r\nb\n\r", ["a", "", "b", ""], ["\r", "\r\n", "\n", "\r"]),
        ("\n\n", ["", ""], ["\n", "\n"]),
        ("a\x0bb\x0cc\x1cd\x85e\u2028f\u2029g\n", ["a\x0bb\x0cc\x1cd\x85e\u2028f\u2029g"], ["\n"]),
        ("a\x85b\r\nc", ["a\x85b", "c"], ["\r\n", ""]),
    ],
    ids=["lf", "no-final-newline", "crlf", "cr", "mixed", "blank", "unicode-breaks", "u+crlf"],
)
def test_lines_split_only_at_cr_and_lf(text: str, lines: list[str], eols: list[str]) -> None:
    assert split_lines(text) == (lines, eols)
    plan = parse(text)
    assert (list(plan.lines), list(plan.eols)) == (lines, eols)
    assert plan.text() == text


def test_characters_other_tools_split_lines_at_stay_inside_a_task_line() -> None:
    text = in_phase("- [ ] `T-1` [MODULE:core] one\u2028two\x85three\x0cfour\n  - retries: 2\n")
    plan = parse(text)

    assert plan.by_id["T-1"].description == "one\u2028two\x85three\x0cfour"
    assert plan.by_id["T-1"].retries == 2
    assert plan.text() == text


def test_a_bom_is_kept_and_is_not_part_of_the_title() -> None:
    text = "\ufeff# MASTER_PLAN: Demo\n" + in_phase("- [ ] `T-1` one\n")
    plan = parse(text)

    assert plan.bom
    assert plan.title == "MASTER_PLAN: Demo"
    assert plan.lines[0] == "# MASTER_PLAN: Demo"
    assert plan.text() == text


def test_a_file_without_final_newline_keeps_its_last_field() -> None:
    text = in_phase("- [ ] `T-1` one\n  - verify: `true`\n  - retries: 4")
    plan = parse(text)

    assert plan.eols[-1] == ""
    assert plan.by_id["T-1"].retries == 4
    assert plan.by_id["T-1"].end == len(plan.lines) - 1
    assert plan.text() == text


def test_an_empty_file_is_an_empty_plan() -> None:
    plan = parse("")
    assert (plan.tasks, plan.phases, plan.problems, plan.text()) == ((), (), (), "")


# -- phases ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "number", "title"),
    [
        ("## Phase 1: Foundation", 1, "Foundation"),
        ("## Phase 2 - Integration", 2, "Integration"),
        ("## Phase 3. Polish", 3, "Polish"),
        ("## phase 4: lower case", 4, "lower case"),
        ("## PHASE 5 — Dash", 5, "Dash"),
        ("## Phase 6：全角コロン", 6, "全角コロン"),
        ("## Phase 7", 7, ""),
        ("## Phase 8:No space", 8, "No space"),
        ("##   Phase 9:  Padded  ", 9, "Padded"),
        ("## Phase 10: Closed ##", 10, "Closed"),
        ("## Phase 11: Port to C#", 11, "Port to C#"),
        ("## Phase 12: C# bindings #", 12, "C# bindings"),
        ("##\tPhase 13:\tTabs", 13, "Tabs"),
        ("## Phase 014: Zero-padded", 14, "Zero-padded"),
        ("## Phase 15: 🚀 Launch", 15, "🚀 Launch"),
    ],
)
def test_phase_heading_variants(heading: str, number: int, title: str) -> None:
    plan = parse(f"{heading}\n<!-- depends: none -->\n- [ ] `T-1` one\n")

    assert plan.problems == ()
    assert [(phase.number, phase.title) for phase in plan.phases] == [(number, title)]
    assert plan.phases[0].task_ids == ("T-1",)


@pytest.mark.parametrize("heading", ["## Phase one: Words", "## Phase 1a: Glued", "## Phase"])
def test_a_heading_that_starts_like_a_phase_but_is_not_one_is_an_error(heading: str) -> None:
    plan = parse(f"{heading}\n- [ ] `T-1` one\n")

    assert plan.phases == ()
    assert plan.problems[0].line == 1
    assert "is not a phase heading" in plan.problems[0].message


def test_other_level_two_headings_end_the_phase() -> None:
    plan = parse(in_phase("- [ ] `T-1` one\n\n## Phases overview\n\n- [ ] `T-2` two\n"))

    assert ids(plan) == ["T-1"]
    assert plan.problems[0].line == 8
    assert "not inside a phase" in plan.problems[0].message


def test_a_level_three_heading_ends_the_task_but_not_the_phase() -> None:
    plan = parse(
        in_phase("- [ ] `T-1` one\n### Notes\n  - retries: 9\n- [ ] `T-2` two\n  - retries: 1\n")
    )

    assert ids(plan) == ["T-1", "T-2"]
    assert "retries" not in plan.by_id["T-1"].fields
    assert plan.by_id["T-2"].retries == 1
    assert plan.phases[0].task_ids == ("T-1", "T-2")


@pytest.mark.parametrize(
    ("comments", "parallel", "depends"),
    [
        ("<!-- parallel: true -->\n<!-- depends: none -->", True, ()),
        ("<!--parallel:false-->\n<!--depends:Phase 1-->", False, (1,)),
        ("<!-- depends: Phase 1, Phase 2 -->\n<!-- parallel: yes -->", True, (1, 2)),
        ("<!-- parallel: NO -->\n<!-- depends: 1, phase 2 -->", False, (1, 2)),
        ("", None, None),
    ],
)
def test_phase_settings_comments(
    comments: str, parallel: bool | None, depends: tuple[int, ...] | None
) -> None:
    plan = parse(f"## Phase 3: Later\n{comments}\n\n- [ ] `T-1` one\n")

    assert plan.problems == ()
    assert (plan.phases[0].parallel, plan.phases[0].depends) == (parallel, depends)


@pytest.mark.parametrize(
    ("comments", "line", "message"),
    [
        ("<!-- parallel: maybe -->", 2, "parallel must be true or false"),
        ("<!-- depends: the first one -->", 2, "is not a phase"),
        ("<!-- parallel: true -->\n<!-- parallel: true -->", 3, "sets parallel twice"),
        ("<!-- depends: none -->\n<!-- depends: Phase 1 -->", 3, "sets depends twice"),
    ],
)
def test_bad_phase_settings_are_errors_at_their_line(
    comments: str, line: int, message: str
) -> None:
    plan = parse(f"## Phase 2: Two\n{comments}\n- [ ] `T-1` one\n")

    assert [(problem.line, problem.severity) for problem in plan.problems] == [(line, ERROR)]
    assert message in plan.problems[0].message


def test_a_phase_number_used_twice_is_an_error_at_the_second() -> None:
    plan = parse("## Phase 1: A\n- [ ] `T-1` a\n## Phase 1: B\n- [ ] `T-2` b\n")

    assert errors(plan) == [
        (3, "Phase 1 is declared twice (first at line 1); give each phase its own number")
    ]


# -- tasks ----------------------------------------------------------------------------------


def test_a_task_line_and_its_fields() -> None:
    plan = parse(
        in_phase(
            "- [~] `T-7` [MODULE:认证] 登录 🔑 with `code`  \n"
            "  - verify: `pytest -q`   \n"
            "  - context_files: [src/a.py, `b c/*`]\n"
            "  - depends: [T-1, T-2]\n"
            "  - claimed: 2025-01-15T14:35:00Z runner-1\n"
            "  - timeout: 1h30min\n"
        )
    )

    task = plan.by_id["T-7"]
    assert (task.marker, task.status, task.module) == ("~", "running", "认证")
    assert task.description == "登录 🔑 with `code`"
    assert task.title == "T-7 [MODULE:认证] 登录 🔑 with `code`"
    assert task.verify == "pytest -q"
    assert task.raw("verify") == "`pytest -q`"
    assert task.context_files == ("src/a.py", "b c/*")
    assert task.depends == ("T-1", "T-2")
    assert task.claimed is not None
    assert task.claimed.worker == "runner-1"
    assert task.timeout == 5400
    assert (task.line, task.end, task.marker_col) == (3, 8, 3)
    verify = task.fields["verify"]
    assert plan.lines[verify.line][verify.start : verify.end] == "`pytest -q`"


@pytest.mark.parametrize(
    ("box", "marker", "status"),
    [
        (" ", " ", "pending"),
        ("x", "x", "done"),
        ("X", "x", "done"),
        ("!", "!", "blocked"),
        ("~", "~", "running"),
        ("-", "-", "skipped"),
    ],
)
def test_the_five_markers(box: str, marker: str, status: str) -> None:
    task = parse(in_phase(f"- [{box}] `T-1` one\n")).tasks[0]
    assert (task.marker, task.status) == (marker, status)


@pytest.mark.parametrize(
    ("line", "module", "description"),
    [
        ("- [ ] `T-1`", None, ""),
        ("- [ ] `T-1` no module", None, "no module"),
        ("- [ ] `T-1` [MODULE:db]", "db", ""),
        ("- [ ] `T-1`\t[MODULE:db]\tTabbed", "db", "Tabbed"),
        ("* [ ] `T-1` [MODULE:db] star bullet", "db", "star bullet"),
        ("+ [ ] `T-1` [MODULE:db] plus bullet", "db", "plus bullet"),
    ],
)
def test_task_line_variants(line: str, module: str | None, description: str) -> None:
    plan = parse(in_phase(line + "\n"))

    assert plan.problems == ()
    assert [(task.id, task.module, task.description) for task in plan.tasks] == [
        ("T-1", module, description)
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("- [ ] T-1 no backticks", "malformed task line"),
        ("- [ ]`T-1` glued", None),
        ("- [?] `T-1` what", "unknown status marker"),
        ("- [ ] `1-T` digit first", "task ID '1-T' must start with a letter"),
        ("1. [ ] `T-1` numbered", "not numbered"),
        ("2) [x] `T-1` numbered", "not numbered"),
    ],
)
def test_task_lines_memento_cannot_read_are_errors_at_their_line(
    line: str, message: str | None
) -> None:
    plan = parse(in_phase("- [ ] `T-0` fine\n\n" + line + "\n\n- [ ] `T-2` fine\n"))

    assert ids(plan) == ["T-0", "T-2"]
    if message is None:  # not a checkbox item at all: plain text
        assert plan.problems == ()
        return
    assert [(problem.line, problem.severity) for problem in plan.problems] == [(6, ERROR)]
    assert message in plan.problems[0].message


def test_a_module_tag_with_a_space_is_an_error_on_a_task_still_read() -> None:
    plan = parse(in_phase("- [ ] `T-1` [MODULE: db] spaced tag\n"))

    assert ids(plan) == ["T-1"]
    assert plan.by_id["T-1"].module is None
    assert errors(plan) == [(4, "malformed module tag; write [MODULE:name] with no spaces")]


def test_a_task_before_any_phase_is_an_error() -> None:
    plan = parse("# Plan\n\n## Meta\n- tick_mode: auto\n\n- [ ] `T-1` [MODULE:a] early\n")

    assert plan.tasks == ()
    assert errors(plan) == [
        (6, "this task is not inside a phase; move it under a '## Phase N: Title' heading")
    ]


def test_checklist_items_outside_phases_that_are_not_tasks_are_fine() -> None:
    plan = parse("# Plan\n\n## Notes\n- [ ] buy milk\n- [x] done thing\n")

    assert (plan.tasks, plan.problems) == ((), ())
    assert plan.checkbox_lines == (3, 4)


def test_a_second_field_with_the_same_key_is_an_error_and_the_first_counts() -> None:
    plan = parse(in_phase("- [ ] `T-1` one\n  - retries: 1\n  - retries: 2\n"))

    assert plan.by_id["T-1"].retries == 1
    assert errors(plan) == [(6, "T-1 has a second 'retries' line (first at line 5); keep one")]


@pytest.mark.parametrize(
    "field_line",
    [
        "  - retries: 3",
        "    - retries: 3",
        "\t- retries: 3",
        " \t - retries: 3",
        "  - retries : 3 ",
        "  - retries:\t3\t",
        "  -  retries: 3",
    ],
)
def test_field_indentation_and_spacing(field_line: str) -> None:
    plan = parse(in_phase("- [ ] `T-1` one\n" + field_line + "\n"))

    found = plan.by_id["T-1"].fields["retries"]
    assert found.value == "3"
    assert field_line[found.start : found.end] == "3"


def test_an_empty_field_value_reads_as_empty() -> None:
    plan = parse(in_phase("- [ ] `T-1` one\n  - retries:\n  - estimate:   \n"))

    task = plan.by_id["T-1"]
    assert (task.raw("retries"), task.raw("estimate")) == ("", "")
    assert (task.retries, task.estimate) == (0, None)


def test_a_line_at_the_task_margin_ends_the_task() -> None:
    plan = parse(in_phase("- [ ] `T-1` one\nSome prose.\n  - retries: 3\n"))

    assert "retries" not in plan.by_id["T-1"].fields
    assert plan.by_id["T-1"].end == 3


def test_blank_lines_between_a_task_and_its_fields_keep_them_together() -> None:
    plan = parse(in_phase("- [ ] `T-1` one\n\n  - retries: 3\n\n\n  - estimate: 5min\n"))

    assert plan.by_id["T-1"].retries == 3
    assert plan.by_id["T-1"].estimate == 300


# -- code fences and HTML comments ----------------------------------------------------------


def test_task_looking_lines_in_a_fence_are_not_tasks() -> None:
    plan = parse(
        in_phase(
            "- [ ] `T-1` real\n"
            "\n"
            "```markdown\n"
            "- [ ] `T-2` [MODULE:x] in a fence\n"
            "## Phase 9: not a phase\n"
            "<!-- parallel: false -->\n"
            "```\n"
            "\n"
            "- [ ] `T-3` real\n"
        )
    )

    assert ids(plan) == ["T-1", "T-3"]
    assert [phase.number for phase in plan.phases] == [1]
    assert plan.phases[0].parallel is None
    assert plan.problems == ()


def test_a_tilde_fence_closes_only_with_a_run_at_least_as_long() -> None:
    plan = parse(
        in_phase(
            "~~~~ md\n"
            "- [ ] `T-1` inside\n"
            "~~~\n"
            "- [ ] `T-2` still inside\n"
            "```\n"
            "- [ ] `T-3` still inside\n"
            "~~~~~ \n"
            "- [ ] `T-4` real\n"
        )
    )

    assert ids(plan) == ["T-4"]
    assert plan.problems == ()


def test_a_closing_run_with_text_after_it_does_not_close_the_fence() -> None:
    plan = parse(in_phase("```\n- [ ] `T-1` inside\n``` not a closer\n```\n- [ ] `T-2` real\n"))

    assert ids(plan) == ["T-2"]


def test_backticks_in_a_backtick_fence_info_string_make_it_no_fence() -> None:
    plan = parse(in_phase("``` not `a` fence\n- [ ] `T-1` real\n"))

    assert ids(plan) == ["T-1"]
    assert plan.problems == ()


def test_backticks_in_a_tilde_fence_info_string_are_allowed() -> None:
    plan = parse(in_phase("~~~ a `tilde` fence\n- [ ] `T-1` inside\n~~~\n- [ ] `T-2` real\n"))

    assert ids(plan) == ["T-2"]


def test_an_indented_fence_inside_a_task_hides_its_lines_and_keeps_the_task_open() -> None:
    plan = parse(
        in_phase(
            "- [ ] `T-1` real\n"
            "  - verify: `true`\n"
            "  ```\n"
            "  - retries: 9\n"
            "  - [ ] `T-2` example\n"
            "  ```\n"
            "  - retries: 1\n"
        )
    )

    assert ids(plan) == ["T-1"]
    assert plan.by_id["T-1"].retries == 1
    assert plan.by_id["T-1"].end == 9


def test_a_task_in_a_multi_line_html_comment_is_not_a_task() -> None:
    plan = parse(
        in_phase(
            "<!-- dropped:\n"
            "- [ ] `T-1` [MODULE:x] commented out\n"
            "```\n"
            "-->\n"
            "- [ ] `T-2` real\n"
            "<!-- one line --> \n"
            "- [ ] `T-3` real\n"
        )
    )

    assert ids(plan) == ["T-2", "T-3"]
    assert plan.problems == ()


def test_only_the_arrow_closes_a_comment() -> None:
    plan = parse(in_phase("<!--\n-- ->\n- [ ] `T-1` inside\n--!>\n-->\n- [ ] `T-2` real\n"))

    assert ids(plan) == ["T-2"]


@pytest.mark.parametrize(
    ("opening", "what", "closer"),
    [
        ("```python", "code fence", "```"),
        ("~~~~", "code fence", "~~~~"),
        ("<!--", "HTML comment", "-->"),
    ],
)
def test_an_unclosed_block_is_a_problem_at_its_opening_line(
    opening: str, what: str, closer: str
) -> None:
    plan = parse(in_phase("- [ ] `T-1` real\n\n" + opening + "\n- [ ] `T-2` swallowed\n"))

    assert ids(plan) == ["T-1"]
    assert plan.problems == (
        SYNTAX.problem(
            6, f"this {what} is never closed, so nothing after it is read; close it with {closer}"
        ),
    )


# -- Meta -----------------------------------------------------------------------------------


def test_meta_values_exclude_comments_and_trailing_spaces() -> None:
    plan = parse(
        "## Meta\n"
        "- tick_mode: paused   <!-- auto | paused -->  \n"
        "- max_retries:\t5\t\n"
        "- clean_ignore: .ignore<!--glued-->\n"
        "- created:\n"
        "  - nested: not meta\n"
        "* star: not meta\n"
    )

    assert {key: entry.value for key, entry in plan.meta.items()} == {
        "tick_mode": "paused",
        "max_retries": "5",
        "clean_ignore": ".ignore",
        "created": "",
    }
    entry = plan.meta["tick_mode"]
    assert plan.lines[entry.line][entry.start : entry.end] == "paused"


def test_meta_problems() -> None:
    plan = parse("## Meta\n- max_retries: 3\n- max_retries: 4\n\n## Meta\n- tick_mode: auto\n")

    assert plan.meta["max_retries"].value == "3"
    assert [problem.line for problem in plan.problems] == [3, 5]
    assert "appears twice" in plan.problems[0].message
    assert "a second ## Meta section" in plan.problems[1].message


def test_a_meta_list_in_a_fence_is_not_meta() -> None:
    plan = parse("## Meta\n- tick_mode: auto\n```\n- tick_mode: stopped\n- max_retries: 9\n```\n")

    assert {key: entry.value for key, entry in plan.meta.items()} == {"tick_mode": "auto"}


# -- builders -------------------------------------------------------------------------------


def test_the_plan_builders_make_a_plan_that_reads_as_built() -> None:
    text = plan_text(
        [
            phase_block(1, "One", [task_block("T-1"), task_block("T-2", marker="x")]),
            phase_block(2, "Two", [task_block("T-3", fields={})], parallel=False, depends=[1]),
        ],
        eol="\r\n",
        bom=True,
        final_newline=False,
    )
    plan = parse(text)

    assert plan.problems == ()
    assert plan.text() == text
    assert plan.bom
    assert set(plan.eols) == {"\r\n", ""}
    assert ids(plan) == ["T-1", "T-2", "T-3"]
    assert [(phase.parallel, phase.depends) for phase in plan.phases] == [(True, ()), (False, (1,))]
    assert plan.by_id["T-1"].verify == "true"
    assert plan.by_id["T-3"].fields == {}


def test_large_plan_has_the_tasks_asked_for() -> None:
    plan = parse(large_plan(250, tasks_per_phase=100))

    assert plan.problems == ()
    assert len(plan.tasks) == 250
    assert [len(phase.task_ids) for phase in plan.phases] == [100, 100, 50]
    assert [phase.depends for phase in plan.phases] == [(), (1,), (2,)]
    assert {task.marker for task in plan.tasks} == {"x", " ", "!", "-"}
