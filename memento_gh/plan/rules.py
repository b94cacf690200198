"""The plan's rules: the table the architect's prompt shows (``plan/guide.py``), and the
only way the plan's checks make a problem (``Rule.problem``).

The scanner (``plan/scanner.py``), the validator (``plan/validate.py``) and the second
reading by a Markdown parser (``plan/crosscheck.py``) name the rule behind each problem
they report, so a check cannot report what the table does not say; ``tests/plan/
test_rules.py`` breaks every rule of the table in a plan of its own.
"""

from __future__ import annotations

from memento_gh.plan.model import ERROR, REQUIRED_FIELDS, WARNING, Rule

# In the order a plan is read: its form (the scanner), then what the validator checks.
SYNTAX = Rule(
    ERROR,
    "every line that looks like plan structure reads as the format above: one `## Phase N: "
    "Title` heading per phase number, at most one `parallel`, `depends` and `review` comment "
    "under it, tasks inside a phase as bullet items ``- [ ] `T-101` [MODULE:name] description`` "
    "with an ID of letters, digits, `.`, `_` and `-`, one line per field, and every code block "
    "and HTML comment closed",
)
RENDERED_ALIKE = Rule(
    ERROR,
    "a Markdown renderer reads the same tasks as memento: no task hidden in an open code "
    "block or HTML block, none that only an indented or numbered list makes",
)
META_SECTION = Rule(
    ERROR, "the plan has one `## Meta` section of `- key: value` lines, each key once"
)
META_VALUES = Rule(
    ERROR, "every Meta key is a known one, and its value reads as the key says (the keys above)"
)
PHASE_DEPENDS_LINE = Rule(
    WARNING,
    "every phase has a `<!-- depends: none -->` or `<!-- depends: Phase 1 -->` line under "
    "its heading",
)
PHASE_DEPENDS_EXIST = Rule(ERROR, "a phase depends only on phases that exist")
UNIQUE_IDS = Rule(ERROR, "every task has its own ID (`T-101`); no ID appears twice")
REQUIRED = Rule(
    ERROR,
    "every task needs a `"
    + "` line and a `".join(f"{key}:" for key in REQUIRED_FIELDS)
    + "` line: a command whose exit code 0 proves the task done, and the files the "
    "agent may read and change",
)
VALUES = Rule(ERROR, "every field value reads: verify is one `inline code` span, lists are [a, b]")
KNOWN_FIELDS = Rule(WARNING, "a task has no field but the task fields above")
TASK_DEPENDS = Rule(ERROR, "a task depends only on other tasks of the plan, never on itself")
MODULE_NAMED = Rule(WARNING, "every task names its module: `[MODULE:name]` right after its ID")
MODULE_NOT_EMPTY = Rule(ERROR, "a `[MODULE:]` tag is never empty")
MODULE_REGISTERED = Rule(
    WARNING, "a task's module has its `### [MODULE:name]` section in PROJECT_MAP.md"
)
CLAIMED = Rule(ERROR, "a [~] running task has a `claimed:` line (the engine writes it)")
CLAIM_ONLY_RUNNING = Rule(WARNING, "a task that is not [~] running has no `claimed:` line")
RETRIES_LEFT = Rule(WARNING, "a pending task has retries left (below max_retries)")
NO_CYCLES = Rule(ERROR, "no dependency cycle among phases and tasks")
COUNTERS = Rule(WARNING, "total_tasks and completed_tasks agree with the tasks (the engine counts)")
DOWNLOADED_CODE = Rule(
    WARNING,
    "a task's verify runs no code it downloads (`curl … | sh`, `bash <(wget …)`): the check "
    "lives in the repository",
)
UNGUARDED_TREE = Rule(
    WARNING,
    "a task whose context_files take in the whole tree (`[.]`, `[**]`) names guard_files",
)

#: Every rule, in the order above: the architect's prompt lists them so.
RULES = (
    SYNTAX,
    RENDERED_ALIKE,
    META_SECTION,
    META_VALUES,
    PHASE_DEPENDS_LINE,
    PHASE_DEPENDS_EXIST,
    UNIQUE_IDS,
    REQUIRED,
    VALUES,
    KNOWN_FIELDS,
    TASK_DEPENDS,
    MODULE_NAMED,
    MODULE_NOT_EMPTY,
    MODULE_REGISTERED,
    CLAIMED,
    CLAIM_ONLY_RUNNING,
    RETRIES_LEFT,
    NO_CYCLES,
    COUNTERS,
    DOWNLOADED_CODE,
    UNGUARDED_TREE,
)
