"""PROJECT_MAP.md: the module registry, one ``### [MODULE:name]`` section per module."""

from __future__ import annotations

import pytest

from memento_gh.formats.project_map import parse_project_map
from memento_gh.plan.model import ERROR

# The seed's example (§3.2), shortened, with a fenced example of a module heading.
MAP = """\
# PROJECT MAP: Demo

## Architecture Overview
Single-page game using Canvas API.

## Module Registry

### [MODULE:database]
- Purpose: PostgreSQL connection and schema management
- Entry: src/db/index.ts

#### Tables
- users, sessions

### [MODULE:auth]
- Purpose: JWT-based authentication
- Dependencies: [MODULE:database]

```markdown
### [MODULE:example]
- how a module entry looks
```

### [MODULE:routes]
- Purpose: Express route handlers

## File Tree (auto-maintained)
src/
"""


def test_modules_in_order_with_their_heading_lines() -> None:
    found = parse_project_map(MAP)

    assert found.problems == ()
    assert [(module.name, module.line + 1) for module in found.modules.values()] == [
        ("database", 8),
        ("auth", 15),
        ("routes", 24),
    ]


def test_an_entry_is_its_section_down_to_the_next_heading_of_its_level_or_above() -> None:
    modules = parse_project_map(MAP).modules

    assert modules["database"].entry == (
        "### [MODULE:database]\n"
        "- Purpose: PostgreSQL connection and schema management\n"
        "- Entry: src/db/index.ts\n"
        "\n"
        "#### Tables\n"
        "- users, sessions"
    )
    assert modules["auth"].entry == (
        "### [MODULE:auth]\n"
        "- Purpose: JWT-based authentication\n"
        "- Dependencies: [MODULE:database]\n"
        "\n"
        "```markdown\n"
        "### [MODULE:example]\n"
        "- how a module entry looks\n"
        "```"
    )
    assert modules["routes"].entry == "### [MODULE:routes]\n- Purpose: Express route handlers"


def test_a_module_heading_inside_a_code_block_registers_nothing() -> None:
    assert "example" not in parse_project_map(MAP).modules


def test_crlf_and_a_byte_order_mark_change_nothing() -> None:
    windows = parse_project_map("\ufeff" + MAP.replace("\n", "\r\n"))
    assert windows == parse_project_map(MAP)


def test_a_module_registered_twice_is_an_error_at_the_second() -> None:
    text = MAP + "\n### [MODULE:auth]\n- Purpose: again\n"
    found = parse_project_map(text)

    [problem] = found.problems
    assert (problem.line, problem.severity) == (MAP.count("\n") + 2, ERROR)
    assert problem.message == "module 'auth' is registered twice (first at line 15); keep one"
    assert found.modules["auth"].line + 1 == 15  # the first one counts


@pytest.mark.parametrize(
    "heading",
    [
        pytest.param("### [MODULE: payments]", id="space-after-colon"),
        pytest.param("### [MODULE:]", id="no-name"),
        pytest.param("### [MODULE:pay ments]", id="space-in-name"),
        pytest.param("### [MODULE:payments", id="no-closing-bracket"),
        pytest.param("### [MODULE:payments] and more", id="text-after-tag"),
        pytest.param("### [module:payments]", id="lowercase"),
        pytest.param("###[MODULE:payments]", id="no-space-after-hashes"),
    ],
)
def test_a_malformed_module_heading_is_an_error_at_its_line(heading: str) -> None:
    text = f"# PROJECT MAP\n\n## Module Registry\n\n{heading}\n- Purpose: money\n"
    found = parse_project_map(text)

    [problem] = found.problems
    assert (problem.line, problem.severity) == (5, ERROR)
    assert problem.message == "malformed module heading; write '### [MODULE:name]'"
    assert found.modules == {}


def test_problems_come_sorted_by_line() -> None:
    text = "### [MODULE:a]\n### [MODULE:b]\n### [MODULE:a]\n### [MODULE: c]\n"
    assert [problem.line for problem in parse_project_map(text).problems] == [3, 4]


def test_any_heading_level_from_two_registers_a_module() -> None:
    text = "## [MODULE:top]\ntop text\n#### [MODULE:deep]\ndeep text\n## Other\n"
    modules = parse_project_map(text).modules

    assert modules["top"].entry == "## [MODULE:top]\ntop text\n#### [MODULE:deep]\ndeep text"
    assert modules["deep"].entry == "#### [MODULE:deep]\ndeep text"
