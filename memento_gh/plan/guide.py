"""The plan's format and rules as text for whoever writes a plan: the architect's prompt.

Made from the validator's own tables (its rules, the task fields, the markers, the Meta
keys), so the guide says what ``memento validate`` checks and cannot drift from it."""

from __future__ import annotations

from memento_gh.plan.meta import META_KEYS
from memento_gh.plan.model import MARKERS, REQUIRED_FIELDS, TASK_FIELDS
from memento_gh.plan.rules import RULES

#: What a task looks like; the rules below say what must hold.
EXAMPLE = """\
# MASTER_PLAN: <project>

## Meta
- created: 2026-01-15
- tick_mode: auto
- max_retries: 3

---

## Phase 1: <name>
<!-- parallel: false -->
<!-- depends: none -->

- [ ] `T-101` [MODULE:core] <one small change an agent can make in one run>
  - verify: `python -m pytest -q tests/test_core.py`
  - context_files: [src/core.py, tests/test_core.py]
  - guard_files: [src/api/*]
  - estimate: 10min
  - retries: 0

## Phase 2: <name>
<!-- parallel: true -->
<!-- depends: Phase 1 -->

- [ ] `T-201` [MODULE:api] <...>
  - verify: `...`
  - context_files: [...]
  - depends: T-101
"""


def format_guide() -> str:
    """The plan format, its markers, fields, Meta keys and rules, as Markdown."""
    parts = ["## The plan format\n", "```markdown\n" + EXAMPLE + "```\n"]
    parts.append("Task markers: " + ", ".join(f"`[{m}]` {name}" for m, name in MARKERS.items()))
    parts.append(
        "\nTask fields (one `  - key: value` line each): "
        + ", ".join(
            f"`{key}`" + (" (required)" if key in REQUIRED_FIELDS else "") for key in TASK_FIELDS
        )
    )
    parts.append(
        "\nMeta keys: " + "; ".join(f"`{key.name}` ({key.help})" for key in META_KEYS.values())
    )
    parts.append("\n## The rules `memento validate` checks\n")
    parts += [f"- {rule.text} ({rule.severity})" for rule in RULES]
    return "\n".join(parts) + "\n"
