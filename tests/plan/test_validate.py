"""The plan's rules: given a plan with one defect, this is the problem, at this line.

Every row below starts from ``BASE`` (which has no problem at all) and changes one thing, so
the problems a row expects are the whole answer: a rule that fires where it should not, or a
defect reported twice or as something it is not, fails the row.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import pytest

from memento_gh.checks import check_plan_text
from memento_gh.plan.model import ERROR, WARNING, Plan, Problem
from memento_gh.plan.scanner import parse
from memento_gh.plan.validate import validate_plan

# Line numbers of BASE: 3 ## Meta, 4 created, 5 tick_mode, 6 max_retries,
# 7 stale_lock_timeout, 8 clean_strategy, 9 total_tasks, 10 completed_tasks,
# 12 ## Phase 1, 13 parallel, 14 depends, 16 T-101 (17 verify, 18 context_files, 19 estimate,
# 20 retries), 22 T-102 (23 verify, 24 context_files), 26 ## Phase 2, 27 parallel,
# 28 depends, 30 T-201 (31 verify, 32 context_files, 33 depends).
BASE = """\
# MASTER_PLAN: Demo

## Meta
- created: 2025-01-15
- tick_mode: auto          <!-- auto | paused | stopped -->
- max_retries: 3
- stale_lock_timeout: 15min
- clean_strategy: git-clean
- total_tasks: 3           <!-- kept by the engine -->
- completed_tasks: 1       <!-- kept by the engine -->

## Phase 1: Foundation
<!-- parallel: true -->
<!-- depends: none -->

- [x] `T-101` [MODULE:db] Setup schema
  - verify: `pytest -q tests/db`
  - context_files: [src/db/*]
  - estimate: 5min
  - retries: 0

- [ ] `T-102` [MODULE:auth] JWT tokens
  - verify: `pytest -q tests/auth`
  - context_files: [src/auth/*]

## Phase 2: Integration
<!-- parallel: false -->
<!-- depends: Phase 1 -->

- [ ] `T-201` [MODULE:auth] Connect auth to db
  - verify: `pytest -q tests/integration`
  - context_files: [src/auth/*, src/db/*]
  - depends: [T-102]
"""
MAP = """\
# PROJECT MAP: Demo

## Module Registry

### [MODULE:db]
- Purpose: the schema

### [MODULE:auth]
- Purpose: tokens
"""
T102_FIELDS = "  - context_files: [src/auth/*]\n"  # the last line of T-102 (line 24)


def problems_of(text: str, map_text: str | None = MAP) -> list[Problem]:
    _, problems = check_plan_text(text, map_text)
    return problems


def with_defect(old: str, new: str) -> str:
    assert BASE.count(old) == 1, f"{old!r} must occur once in BASE"
    return BASE.replace(old, new)


class Expected(NamedTuple):
    line: int
    severity: str
    fragment: str


def one(line: int, severity: str, fragment: str) -> list[Expected]:
    return [Expected(line, severity, fragment)]


def assert_problems(problems: list[Problem], expected: list[Expected]) -> None:
    shown = "\n".join(f"{p.line}: {p.severity}: {p.message}" for p in problems)
    for problem in problems:  # one problem is one line of output, whatever the plan holds
        assert problem.message.splitlines() == [problem.message], problem
    assert len(problems) == len(expected), f"got:\n{shown}"
    for want in expected:
        matches = [
            problem
            for problem in problems
            if (problem.line, problem.severity) == (want.line, want.severity)
            and want.fragment in problem.message
        ]
        assert len(matches) == 1, f"no single problem like {want} in:\n{shown}"


def test_the_base_plan_has_no_problem_at_all() -> None:
    assert problems_of(BASE) == []
    assert problems_of(BASE, map_text=None) == []
    assert parse(BASE).problems == ()


def test_a_task_may_name_its_model_and_meta_the_model_of_retries() -> None:
    text = with_defect("retries: 0", "model: `openai/gpt-4.1`").replace(
        "- max_retries: 3\n", "- max_retries: 3\n- retry_model: claude-opus-4-8[1m]\n"
    )
    plan = parse(text)

    assert problems_of(text) == []
    assert [task.model for task in plan.tasks] == ["openai/gpt-4.1", None, None]
    assert plan.settings.retry_model == "claude-opus-4-8[1m]"
    none = with_defect("- max_retries: 3", "- retry_model: none")
    assert parse(none).settings.retry_model is None


def test_problems_come_sorted_by_line() -> None:
    text = with_defect("- max_retries: 3", "- max_retries: three").replace(
        "  - verify: `pytest -q tests/auth`\n", ""
    )
    lines = [problem.line for problem in problems_of(text)]
    assert lines == [6, 22]


ROWS = [
    # -- required fields -------------------------------------------------------------------
    pytest.param(
        "  - verify: `pytest -q tests/auth`\n",
        "",
        one(22, ERROR, "T-102 has no 'verify:' line"),
        id="missing-verify",
    ),
    pytest.param(
        T102_FIELDS,
        "",
        one(22, ERROR, "T-102 has no 'context_files:' line"),
        id="missing-context_files",
    ),
    # -- task lines -------------------------------------------------------------------------
    pytest.param(
        "- [ ] `T-201`",
        "- [ ] `T-101`",
        one(30, ERROR, "duplicate task ID T-101 (first at line 16)"),
        id="duplicate-task-id",
    ),
    pytest.param(
        "- [ ] `T-201`",
        "- [ ] `T-102`",
        [
            Expected(30, ERROR, "duplicate task ID T-102 (first at line 22)"),
            # the second T-102 keeps its 'depends: [T-102]'; no cycle through the first one
            Expected(33, ERROR, "T-102 depends on itself"),
        ],
        id="duplicate-task-id-named-by-itself",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "- [?] `T-103` [MODULE:auth] Refresh tokens\n",
        one(25, ERROR, "unknown status marker '[?]'; use [ ] pending"),
        id="unknown-status-marker",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "- [\x85] `T-103` [MODULE:auth] Refresh tokens\n",
        one(25, ERROR, "unknown status marker '[\\x85]'; use [ ] pending"),
        id="unknown-status-marker-that-breaks-lines",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "- [ ] T-103 [MODULE:auth] Refresh tokens\n",
        one(25, ERROR, "malformed task line; write '- [ ] `T-101` [MODULE:name] description'"),
        id="task-id-without-backticks",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "- [ ]\n",
        one(25, ERROR, "malformed task line"),
        id="bare-checkbox",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "- [ ] `103` [MODULE:auth] Refresh tokens\n",
        one(25, ERROR, "task ID '103' must start with a letter"),
        id="task-id-starting-with-digit",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "1. [ ] `T-103` [MODULE:auth] Refresh tokens\n",
        one(25, ERROR, "write tasks as bullet items ('- [ ] ...'), not numbered"),
        id="numbered-task",
    ),
    pytest.param(
        "## Phase 1: Foundation",
        "- [ ] `T-001` [MODULE:db] Stray\n\n## Phase 1: Foundation",
        one(12, ERROR, "this task is not inside a phase; move it under a '## Phase N: Title'"),
        id="task-outside-a-phase",
    ),
    # -- modules -----------------------------------------------------------------------------
    pytest.param(
        "[MODULE:auth] JWT",
        "[MODULE:payments] JWT",
        one(22, WARNING, "[MODULE:payments] is not registered in PROJECT_MAP.md; add a "),
        id="module-not-in-map",
    ),
    pytest.param(
        "[MODULE:auth] JWT",
        "[MODULE: auth] JWT",
        one(22, ERROR, "malformed module tag; write [MODULE:name]"),
        id="malformed-module-tag",
    ),
    pytest.param(
        "[MODULE:auth] JWT",
        "[MODULE:] JWT",
        one(22, ERROR, "T-102 has an empty [MODULE:] tag"),
        id="empty-module-tag",
    ),
    pytest.param(
        "[MODULE:auth] JWT",
        "JWT",
        one(22, WARNING, "T-102 names no module; add [MODULE:name]"),
        id="no-module-tag",
    ),
    # -- task fields -------------------------------------------------------------------------
    pytest.param(
        "  - estimate: 5min\n",
        "  - estimat: 5min\n",
        one(19, WARNING, "unknown task field 'estimat'; did you mean 'estimate'?"),
        id="unknown-field-with-suggestion",
    ),
    pytest.param(
        "  - estimate: 5min\n",
        "  - owner: bob\n",
        one(19, WARNING, "unknown task field 'owner'"),
        id="unknown-field",
    ),
    pytest.param(
        "  - estimate: 5min\n",
        "  - estimate: 5min\n  - estimate: 10min\n",
        one(20, ERROR, "T-101 has a second 'estimate' line (first at line 19); keep one"),
        id="duplicate-field",
    ),
    pytest.param(
        "`pytest -q tests/db`",
        "pytest -q tests/db",
        one(17, ERROR, "T-101 verify: write the command as a code span, e.g. `pytest -q`"),
        id="verify-not-a-code-span",
    ),
    pytest.param(
        "`pytest -q tests/db`",
        "` `",
        one(17, ERROR, "T-101 verify: the command is empty"),
        id="verify-empty",
    ),
    pytest.param(
        "[src/db/*]",
        "[src/db/*",
        one(18, ERROR, "T-101 context_files: the list '[src/db/*' has no closing ']'"),
        id="context_files-unclosed-list",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "  - guard_files: src/db/*]\n",
        one(25, ERROR, "T-102 guard_files: the list 'src/db/*]' has no opening '['"),
        id="guard_files-unopened-list",
    ),
    pytest.param(
        "estimate: 5min",
        "estimate: soon",
        one(19, ERROR, "T-101 estimate: 'soon' is not a duration; write e.g. 30s, 15min"),
        id="estimate-not-a-duration",
    ),
    pytest.param(
        "  - estimate: 5min\n",
        "  - timeout: 5 fortnights\n",
        one(19, ERROR, "T-101 timeout: unknown time unit 'fortnights'"),
        id="timeout-unknown-unit",
    ),
    pytest.param(
        "retries: 0",
        "retries: x",
        one(20, ERROR, "T-101 retries: 'x' is not a whole number"),
        id="retries-not-a-number",
    ),
    pytest.param(
        "retries: 0",
        "retries: -1",
        one(20, ERROR, "T-101 retries: -1 is too small"),
        id="retries-negative",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "  - retries: 3\n",
        one(22, WARNING, "T-102 has used 3 of 3 retries and will not be picked"),
        id="retries-exhausted",
    ),
    pytest.param(
        "retries: 0",
        "model: --dangerously-skip-permissions",
        one(20, ERROR, "T-101 model: a model is one word of letters, digits and _ . : @ / + -"),
        id="model-an-option",
    ),
    pytest.param(
        "retries: 0",
        "model: claude opus",
        one(20, ERROR, "such as claude-sonnet-4-6 or openai/gpt-4.1, not 'claude opus'"),
        id="model-two-words",
    ),
    # -- task depends ------------------------------------------------------------------------
    pytest.param(
        "depends: [T-102]",
        "depends: [T-999]",
        one(33, ERROR, "T-201 depends on T-999, which is not a task in this plan"),
        id="depends-on-missing-task",
    ),
    pytest.param(
        "depends: [T-102]",
        "depends: [T-201]",
        one(33, ERROR, "T-201 depends on itself"),
        id="depends-on-itself",
    ),
    pytest.param(
        "depends: [T-102]",
        "depends: [T-102, 7up]",
        one(33, ERROR, "T-201 depends: '7up' is not a task ID like T-101"),
        id="depends-malformed-id",
    ),
    # -- running / claimed -------------------------------------------------------------------
    pytest.param(
        "- [ ] `T-102`",
        "- [~] `T-102`",
        one(22, ERROR, "T-102 is [~] running but has no 'claimed: <time> <worker>' line"),
        id="running-without-claimed",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "  - claimed: 2025-01-15T14:35:00Z runner-1\n",
        one(25, WARNING, "T-102 has a 'claimed:' line but is not [~]; remove the line"),
        id="claimed-on-pending-task",
    ),
    pytest.param(
        "- [ ] `T-102` [MODULE:auth] JWT tokens\n",
        "- [~] `T-102` [MODULE:auth] JWT tokens\n  - claimed: runner-1\n",
        one(23, ERROR, "T-102 claimed: write claimed as '<ISO-8601 UTC time> <worker-id>'"),
        id="claimed-without-time",
    ),
    pytest.param(
        "- [ ] `T-102` [MODULE:auth] JWT tokens\n",
        "- [~] `T-102` [MODULE:auth] JWT tokens\n  - claimed: 2025-02-30T10:00:00Z runner-1\n",
        one(23, ERROR, "T-102 claimed: '2025-02-30T10:00:00Z' is not an ISO-8601 time"),
        id="claimed-impossible-date",
    ),
    # -- Meta --------------------------------------------------------------------------------
    pytest.param(
        "## Meta\n",
        "## Settings\n",
        one(1, ERROR, "the plan has no '## Meta' section; add one"),
        id="no-meta-section",
    ),
    pytest.param(
        "## Phase 1: Foundation",
        "## Meta\n\n## Phase 1: Foundation",
        one(12, ERROR, "a second ## Meta section (the first is at line 3); merge them"),
        id="second-meta-section",
    ),
    pytest.param(
        "- max_retries: 3",
        "- max_retry: 3",
        one(6, ERROR, "unknown Meta key 'max_retry'; did you mean 'max_retries'?"),
        id="meta-unknown-key-with-suggestion",
    ),
    pytest.param(
        "- max_retries: 3",
        "- colour: blue",
        one(6, ERROR, "unknown Meta key 'colour'; known keys: created, last_architect_edit,"),
        id="meta-unknown-key",
    ),
    pytest.param(
        "- max_retries: 3\n",
        "- max_retries: 3\n- max_retries: 5\n",
        one(7, ERROR, "Meta key 'max_retries' appears twice (first at line 6); keep one"),
        id="meta-duplicate-key",
    ),
    pytest.param(
        "stale_lock_timeout: 15min",
        "stale_lock_timeout: fifteen minutes",
        one(7, ERROR, "Meta stale_lock_timeout: 'fifteen minutes' is not a duration"),
        id="meta-duration-malformed",
    ),
    pytest.param(
        "stale_lock_timeout: 15min",
        "stale_lock_timeout: 15mo",
        one(7, ERROR, "Meta stale_lock_timeout: unknown time unit 'mo' in '15mo'; use s, min"),
        id="meta-duration-unknown-unit",
    ),
    pytest.param(
        "max_retries: 3",
        "max_retries: three",
        one(6, ERROR, "Meta max_retries: 'three' is not a whole number"),
        id="meta-int-malformed",
    ),
    pytest.param(
        "max_retries: 3",
        "max_retries: 0",
        one(6, ERROR, "Meta max_retries: 0 is too small; the least allowed is 1"),
        id="meta-int-too-small",
    ),
    pytest.param(
        "- max_retries: 3",
        "- retry_model: -m",
        one(6, ERROR, "Meta retry_model: a model is one word of letters, digits"),
        id="meta-retry_model-an-option",
    ),
    pytest.param(
        "tick_mode: auto ",
        "tick_mode: running ",
        one(5, ERROR, "Meta tick_mode: 'running' is not one of auto | paused | stopped"),
        id="meta-tick_mode",
    ),
    pytest.param(
        "clean_strategy: git-clean",
        "clean_strategy: rm-rf",
        one(8, ERROR, "Meta clean_strategy: 'rm-rf' is not one of git-clean | git-stash"),
        id="meta-clean_strategy",
    ),
    pytest.param(
        "created: 2025-01-15",
        "created: last week",
        one(4, ERROR, "Meta created: 'last week' is not an ISO-8601 time"),
        id="meta-created-not-a-date",
    ),
    pytest.param(
        "created: 2025-01-15",
        "created: 0001-01-01T00:00:00+14:00",
        one(4, ERROR, "Meta created: '0001-01-01T00:00:00+14:00' is out of range"),
        id="meta-created-out-of-range",
    ),
    pytest.param(
        "- max_retries: 3",
        "- blocked_ratio_limit: 150%",
        one(6, ERROR, "Meta blocked_ratio_limit: '150%' is outside 0..1"),
        id="meta-ratio-out-of-range",
    ),
    pytest.param(
        "- max_retries: 3",
        "- min_free_disk: plenty",
        one(6, ERROR, "Meta min_free_disk: 'plenty' is not a size; write e.g. 500MB"),
        id="meta-size-malformed",
    ),
    pytest.param(
        "- max_retries: 3",
        "- max_file_size: huge",
        one(6, ERROR, "Meta max_file_size: 'huge' is not a size; write e.g. 500MB or 2GiB"),
        id="meta-file-size-malformed",
    ),
    pytest.param(
        "- max_retries: 3",
        "- max_file_size: 0MB",
        one(6, ERROR, "Meta max_file_size: '0MB' would allow no file at all; write e.g. 5MB"),
        id="meta-file-size-zero",
    ),
    # -- counters ----------------------------------------------------------------------------
    pytest.param(
        "total_tasks: 3",
        "total_tasks: 4",
        one(9, WARNING, "total_tasks says '4' but the plan has 3; `memento validate --fix`"),
        id="total_tasks-disagrees",
    ),
    pytest.param(
        "completed_tasks: 1",
        "completed_tasks: 0",
        one(10, WARNING, "completed_tasks says '0' but the plan has 1; `memento validate --fix`"),
        id="completed_tasks-disagrees",
    ),
    pytest.param(
        "completed_tasks: 1",
        "completed_tasks: one",
        [
            Expected(10, ERROR, "Meta completed_tasks: 'one' is not a whole number"),
            Expected(10, WARNING, "completed_tasks says 'one' but the plan has 1"),
        ],
        id="completed_tasks-not-a-number",
    ),
    pytest.param(
        "completed_tasks: 1",
        "completed_tasks: 1\x1e1",
        [
            Expected(10, ERROR, "Meta completed_tasks: '1\\x1e1' is not a whole number"),
            Expected(10, WARNING, "completed_tasks says '1\\x1e1' but the plan has 1"),
        ],
        id="completed_tasks-with-a-line-breaking-character",
    ),
    # -- phases ------------------------------------------------------------------------------
    pytest.param(
        "depends: Phase 1 -->",
        "depends: Phase 7 -->",
        one(28, ERROR, "Phase 2 depends on Phase 7, which does not exist"),
        id="phase-depends-on-missing-phase",
    ),
    pytest.param(
        "depends: Phase 1 -->",
        "depends: the first one -->",
        one(28, ERROR, "depends: 'the first one' is not a phase; write '<!-- depends: Phase 1"),
        id="phase-depends-malformed",
    ),
    pytest.param(
        "<!-- depends: Phase 1 -->\n",
        "",
        one(26, WARNING, "Phase 2 has no '<!-- depends: ... -->' line"),
        id="phase-without-depends",
    ),
    pytest.param(
        "<!-- depends: Phase 1 -->\n",
        "<!-- depends: Phase 1 -->\n<!-- depends: none -->\n",
        one(29, ERROR, "Phase 2 sets depends twice"),
        id="phase-depends-twice",
    ),
    pytest.param(
        "parallel: false",
        "parallel: maybe",
        one(27, ERROR, "parallel must be true or false, not 'maybe'"),
        id="phase-parallel-malformed",
    ),
    pytest.param(
        "<!-- parallel: false -->\n",
        "<!-- parallel: false -->\n<!-- parallel: true -->\n",
        one(28, ERROR, "Phase 2 sets parallel twice"),
        id="phase-parallel-twice",
    ),
    pytest.param(
        "## Phase 2: Integration",
        "## Phase 1: Integration",
        one(26, ERROR, "Phase 1 is declared twice (first at line 12); give each phase its own"),
        id="duplicate-phase",
    ),
    pytest.param(
        "  - depends: [T-102]\n",
        "  - depends: [T-102]\n\n## Phase three: Polish\n",
        one(35, ERROR, "'Phase three: Polish' is not a phase heading; write '## Phase N: Title'"),
        id="phase-heading-without-number",
    ),
    # -- blocks that hide the rest of the plan ----------------------------------------------
    pytest.param(
        "  - depends: [T-102]\n",
        "  - depends: [T-102]\n\n```\nnever closed\n",
        one(35, ERROR, "this code fence is never closed, so nothing after it is read"),
        id="unclosed-code-fence",
    ),
    pytest.param(
        "  - depends: [T-102]\n",
        "  - depends: [T-102]\n\n<!-- a note\nnever closed\n",
        one(35, ERROR, "this HTML comment is never closed, so nothing after it is read"),
        id="unclosed-html-comment",
    ),
    # -- the scanner against a CommonMark reading (mistune) -------------------------------
    pytest.param(
        "- [ ] `T-102` [MODULE:auth] JWT tokens\n",
        "<div>\n- [ ] `T-102` [MODULE:auth] JWT tokens\n",
        one(23, ERROR, "memento reads this line as a checklist item but a Markdown renderer"),
        id="crosscheck-task-inside-html-block",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "\n<pre>\n",
        # CommonMark's <pre> block runs to </pre>: Phase 2 and T-201 would be inside it
        one(26, ERROR, "Markdown reads the block that starts here (HTML such as <pre>"),
        id="crosscheck-html-block-left-open",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "> - [ ] `T-103` [MODULE:auth] Quoted\n",
        one(25, ERROR, "a Markdown renderer reads '[ ] `T-103` [MODULE:auth] Quoted' here as"),
        id="crosscheck-task-in-a-quote",
    ),
    pytest.param(
        T102_FIELDS,
        T102_FIELDS + "  ```\n  unclosed fence inside the item\n",
        [
            # the scanner reads the rest as code, so T-201 is gone for it ...
            Expected(9, WARNING, "total_tasks says '3' but the plan has 2"),
            Expected(25, ERROR, "this code fence is never closed"),
            # ... but CommonMark ends the fence with its list item, and reads T-201
            Expected(32, ERROR, "a Markdown renderer reads '[ ] `T-201` [MODULE:auth]"),
        ],
        id="crosscheck-fence-closed-by-its-list-item",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), ROWS)
def test_one_defect_one_problem(old: str, new: str, expected: list[Expected]) -> None:
    assert_problems(problems_of(with_defect(old, new)), expected)


def test_a_task_in_an_indented_code_block_is_one_memento_reads_and_markdown_does_not() -> None:
    text = with_defect(
        "<!-- depends: none -->\n\n",
        "<!-- depends: none -->\n\n    - [ ] `T-103` [MODULE:db] Hidden in code\n\n",
    )
    assert_problems(
        problems_of(text),
        [
            Expected(9, WARNING, "total_tasks says '3' but the plan has 4"),
            Expected(16, ERROR, "T-103 has no 'verify:' line"),
            Expected(16, ERROR, "T-103 has no 'context_files:' line"),
            Expected(16, ERROR, "memento reads this line as a checklist item but a Markdown"),
        ],
    )


def test_the_module_check_needs_a_map_and_ignores_modules_in_its_code_blocks() -> None:
    text = with_defect("[MODULE:auth] JWT", "[MODULE:payments] JWT")
    assert problems_of(text, map_text=None) == []
    fenced = MAP + "\n```\n### [MODULE:payments]\n```\n"
    assert_problems(problems_of(text, fenced), one(22, WARNING, "[MODULE:payments] is not"))
    registered = MAP + "\n### [MODULE:payments]\n"
    assert problems_of(text, registered) == []


def test_validate_plan_alone_does_not_crosscheck() -> None:
    """The mistune reading is ``crosscheck``'s; ``check_plan_text`` runs both."""
    text = with_defect(
        "- [ ] `T-102` [MODULE:auth] JWT tokens\n",
        "<div>\n- [ ] `T-102` [MODULE:auth] JWT tokens\n",
    )
    assert validate_plan(parse(text), {"db", "auth"}) == []
    assert len(problems_of(text)) == 1


def test_a_comment_after_a_meta_value_is_not_part_of_the_value() -> None:
    text = with_defect("tick_mode: auto ", "tick_mode: paused?")
    [problem] = problems_of(text)
    assert "'paused?' is not one of" in problem.message
    assert "<!--" not in problem.message


# -- dependency cycles ------------------------------------------------------------------


def waits_on(plan: Plan, node: str, other: str) -> bool:
    """The edge ``node → other`` of a cycle message: a task waits on the tasks it names and
    on the phases its phase depends on; a phase waits on its tasks and the phases it names."""
    phases = {phase.name: phase for phase in plan.phases}
    task = plan.task(node)
    if task is not None:
        phase = plan.phase_of(task)
        return other in task.depends or other in (f"Phase {n}" for n in phase.depends or ())
    phase = phases[node]
    return other in phase.task_ids or other in (f"Phase {n}" for n in phase.depends or ())


def cycle_in(plan: Plan, problem: Problem) -> list[str]:
    prefix = "dependency cycle: "
    assert problem.severity == ERROR
    assert problem.message.startswith(prefix), problem.message
    path = problem.message[len(prefix) :].split(" → ")
    assert path[0] == path[-1], "a cycle ends where it starts"
    for node, following in itertools.pairwise(path):
        assert waits_on(plan, node, following), f"{node} does not wait on {following}"
    return path


def test_two_phases_that_depend_on_each_other() -> None:
    text = with_defect("<!-- depends: none -->", "<!-- depends: Phase 2 -->")
    plan = parse(text)
    [problem] = problems_of(text)
    assert problem.message == "dependency cycle: Phase 1 → Phase 2 → Phase 1"
    assert problem.line == 14  # the first line of the cycle: Phase 1's depends
    cycle_in(plan, problem)


THREE_TASKS = """\
# MASTER_PLAN: Ring

## Meta
- tick_mode: auto

## Phase 1: Ring
<!-- depends: none -->

- [ ] `T-1` [MODULE:a] first
  - verify: `true`
  - context_files: [a]
  - depends: [T-3]
- [ ] `T-2` [MODULE:a] second
  - verify: `true`
  - context_files: [a]
  - depends: [T-1]
- [ ] `T-3` [MODULE:a] third
  - verify: `true`
  - context_files: [a]
  - depends: [T-2]
- [ ] `T-4` [MODULE:a] outside the ring, waiting on it
  - verify: `true`
  - context_files: [a]
  - depends: [T-3]
"""


def test_three_tasks_in_a_ring() -> None:
    plan = parse(THREE_TASKS)
    [problem] = problems_of(THREE_TASKS, map_text=None)
    path = cycle_in(plan, problem)
    assert sorted(path[:-1]) == ["T-1", "T-2", "T-3"]
    assert problem.line == 12  # T-1's depends line, the first of the three


def test_a_task_waiting_on_a_later_phase_that_waits_on_its_own_phase() -> None:
    text = with_defect("  - retries: 0\n", "  - retries: 0\n  - depends: [T-201]\n")
    plan = parse(text)
    [problem] = problems_of(text)
    path = cycle_in(plan, problem)
    assert set(path) == {"T-101", "T-201", "Phase 1"}
    assert problem.line == 14


def test_an_empty_phase_still_closes_a_cycle() -> None:
    text = with_defect("<!-- depends: none -->", "<!-- depends: Phase 3 -->") + (
        "\n## Phase 3: Empty\n<!-- depends: Phase 2 -->\n"
    )
    plan = parse(text)
    [problem] = problems_of(text)
    path = cycle_in(plan, problem)
    assert {"Phase 1", "Phase 2", "Phase 3"} <= set(path)


def test_depending_on_earlier_work_is_no_cycle() -> None:
    # T-201 (Phase 2) already depends on T-102 (Phase 1); add a chain inside Phase 2 too.
    text = BASE.replace("total_tasks: 3", "total_tasks: 4") + (
        "\n- [ ] `T-202` [MODULE:db] After T-201 and T-101\n"
        "  - verify: `true`\n"
        "  - context_files: [src/db/*]\n"
        "  - depends: [T-201, T-101]\n"
    )
    assert problems_of(text) == []
