"""The documentation's relative links lead somewhere: every link from README.md,
CONTRIBUTING.md, docs/ and benchmarks/README.md to a file of this repository names a file or
folder that exists, and every ``#anchor`` names a heading of the page it points into, as
GitHub makes a heading's anchor (lowercase, spaces to ``-``, punctuation dropped, ``-1``,
``-2`` for repeats)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest
from pre_commit.clientlib import load_manifest

from memento_gh import layout
from memento_gh.markdown import CodeTracker
from memento_gh.scaffold import WORKFLOW, support_scaffold

ROOT = Path(__file__).resolve().parents[1]
#: ``[text](target)`` and ``![alt](target)``, the target up to a space (a title may follow).
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
#: ``[label]: target``, a reference definition.
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_COMMENT = re.compile(r"<!--.*?-->")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


class Link(NamedTuple):
    page: Path
    line: int
    target: str


def pages() -> list[Path]:
    """The documentation, the README first. Should this repository run memento on itself
    (its workflow's plan-dir is docs), memento's own files there are not pages."""
    docs = ROOT / "docs"
    return [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "benchmarks" / "README.md",
        *sorted(page for page in docs.rglob("*.md") if not memento_file(page.relative_to(docs))),
    ]


def memento_file(path: Path) -> bool:
    """One of the files memento keeps in its plan folder (layout.py names them)."""
    own = (layout.PLAN_NAME, layout.MAP_NAME, layout.NOTES_NAME, layout.STATUS_NAME)
    return path.name in (*own, layout.STATE_NAME) or path.parts[0] == layout.MEMORY_FOLDER


def prose(text: str) -> list[tuple[int, str]]:
    """The numbered lines of a page that are Markdown, not code: fenced blocks and HTML
    comments left out."""
    tracker = CodeTracker()
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        was_open = tracker.open
        tracker.step(number, line.lstrip())
        if not was_open and not tracker.open:
            found.append((number, HTML_COMMENT.sub("", line)))
    return found


def links(page: Path) -> list[Link]:
    found = []
    for number, line in prose(page.read_text(encoding="utf-8")):
        text = CODE_SPAN.sub("", line)
        targets = [m.group(1) for m in INLINE_LINK.finditer(text)]
        reference = REFERENCE.match(text)
        if reference:
            targets.append(reference.group(1))
        found.extend(Link(page, number, target) for target in targets)
    return found


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text: its Markdown markup rendered away, lowercase,
    every character but letters, digits, ``-``, ``_`` and spaces dropped, spaces to ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    kept = "".join(
        char
        for char in text
        if char in " -_" or unicodedata.category(char)[0] in "LNM" or char.isalnum()
    )
    return kept.replace(" ", "-")


@functools.cache
def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated one also as ``name-1``, ``name-2``."""
    seen: Counter[str] = Counter()
    found = set()
    for _, line in prose(page.read_text(encoding="utf-8")):
        heading = HEADING.match(line)
        if heading is None:
            continue
        name = anchor(heading.group(2))
        found.add(f"{name}-{seen[name]}" if seen[name] else name)
        seen[name] += 1
    return found


def broken(link: Link, root: Path) -> str | None:
    """Why a link leads nowhere, or None when it resolves (or names another site)."""
    if SCHEME.match(link.target) or link.target.startswith("//"):
        return None
    path, _, fragment = link.target.partition("#")
    target = (link.page.parent / path).resolve() if path else link.page
    if not target.exists():
        return f"{path} does not exist"
    if root not in (target, *target.parents):
        return f"{path} is outside the repository"
    if fragment and target.suffix == ".md" and fragment not in anchors(target):
        return f"{target.relative_to(root)} has no heading #{fragment}"
    return None


def problems(files: list[Path], root: Path = ROOT) -> list[str]:
    """``path:line: target: why`` for each link of ``files`` that leads nowhere."""
    return [
        f"{link.page.relative_to(root)}:{link.line}: {link.target}: {why}"
        for page in files
        for link in links(page)
        if (why := broken(link, root)) is not None
    ]


def test_every_relative_link_of_the_documentation_resolves() -> None:
    assert problems(pages()) == []


def test_no_hook_takes_a_page_of_the_documentation_for_a_plan_file() -> None:
    """This repository's docs/ is documentation, in the folder memento's plan files use by
    default: no hook of .pre-commit-hooks.yaml (each runs `memento validate` on the files it
    matches) takes a page for a plan, map, notes or lesson file."""
    documentation = [page.relative_to(ROOT).as_posix() for page in pages()]
    hooks = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))

    assert [
        (hook["id"], path)
        for hook in hooks
        for path in documentation
        if re.search(hook["files"], path)
    ] == []


def test_every_page_but_the_readme_is_linked_from_another() -> None:
    """A page nobody links to is a page nobody reads."""
    linked = {
        (link.page.parent / link.target.partition("#")[0]).resolve()
        for page in pages()
        for link in links(page)
        if not SCHEME.match(link.target) and link.target.partition("#")[0]
    }
    assert [page.relative_to(ROOT) for page in pages()[1:] if page not in linked] == []


# -- the checker itself -----------------------------------------------------------------------


def test_a_link_to_a_missing_file_or_heading_is_reported_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "plan.md").write_text("# The plan\n\n## Meta keys (defaults)\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# memento\n\n"
        "See [the plan](docs/plan.md#meta-keys-defaults) and [its keys](docs/plan.md#meta).\n"
        "The [old page](docs/plan-format.md), [here](#memento), [there](#nowhere).\n"
        "[ref]: docs/missing.md\n"
    )

    assert problems([page], tmp_path) == [
        "README.md:3: docs/plan.md#meta: docs/plan.md has no heading #meta",
        "README.md:4: docs/plan-format.md: docs/plan-format.md does not exist",
        "README.md:4: #nowhere: README.md has no heading #nowhere",
        "README.md:5: docs/missing.md: docs/missing.md does not exist",
    ]


def test_links_in_code_and_to_other_sites_are_not_checked(tmp_path: Path) -> None:
    page = tmp_path / "README.md"
    page.write_text(
        "# memento\n\n"
        "[pre-commit](https://pre-commit.com), `[not](a-link.md)`, [mail](mailto:a@b.c)\n\n"
        "```markdown\n[inside](a-fence.md)\n```\n"
        "<!-- [inside](a-comment.md) -->\n"
    )

    assert problems([page], tmp_path) == []


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Quick start", "quick-start"),
        ("Use it on GitHub", "use-it-on-github"),
        ("The files `memento init` writes", "the-files-memento-init-writes"),
        ("Spend, budgets & the day's limit", "spend-budgets--the-days-limit"),
        ("Step 1: [a link](x.md) to `memento_gh/`", "step-1-a-link-to-memento_gh"),
        ("Phase 2 — Überblick", "phase-2--überblick"),
    ],
)
def test_anchors_follow_githubs_rules(heading: str, expected: str) -> None:
    assert anchor(heading) == expected


def test_a_repeated_heading_gets_a_numbered_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Setup\n\n## Setup\n\n```\n# Setup\n```\n")

    assert anchors(page) == {"setup", "setup-1"}


# -- one list of permissions ------------------------------------------------------------------


def job_permissions(text: str) -> list[str]:
    """The lines of the first ``permissions:`` mapping written as a block (the job's, since
    the workflow's own is ``permissions: {}``), each with its comment, indentation dropped."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.strip() == "permissions:")
    indent = len(lines[start]) - len(lines[start].lstrip())
    found = []
    for line in lines[start + 1 :]:
        if not line.strip() or len(line) - len(line.lstrip()) <= indent:
            break
        found.append(line.strip())
    return found


def words(text: str) -> str:
    """A text's words, comment marks and line breaks left out."""
    return " ".join(text.replace("#", " ").split())


def test_the_readme_lists_the_permissions_the_workflow_asks_for_with_its_reasons() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    checklist = readme[readme.index("## Set up on GitHub") :]
    listed = job_permissions(checklist)

    assert [line.split(" #")[0] for line in listed] == [
        "contents: write",
        "issues: write",
        "pull-requests: write",
        "checks: read",
        "statuses: write",
    ]
    assert all(" # " in line for line in listed), "each permission says why"
    assert "Allow GitHub Actions to create and approve pull requests" in checklist
    for workers in (1, 3):
        template = support_scaffold("docs", workers)[WORKFLOW]
        assert job_permissions(template) == listed
        assert "Allow GitHub Actions to create and approve pull requests" in words(template)
    own = (ROOT / ".github" / "workflows" / "memento.yml").read_text(encoding="utf-8")
    assert job_permissions(own) == listed


def test_the_set_up_checklist_names_each_setting_as_the_template_and_the_messages_do() -> None:
    """Where to click is said one way (``github/guidance.py``, which every message about a
    GitHub refusal takes its words from): the README's checklist and the template say the
    same (issue #29)."""
    from memento_gh.github import guidance

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    checklist = words(
        readme[readme.index("## Set up on GitHub") : readme.index("## Documentation")]
    )
    everywhere = (
        guidance.SECRETS,
        guidance.WORKFLOW_PERMISSIONS,
        guidance.PULLS_SETTING,
        guidance.CONTENTS_PERMISSION,
        guidance.WORKFLOWS_PERMISSION,
        guidance.PUSH_TOKEN_INPUT,
    )
    for phrase in (*everywhere, guidance.ISSUES_SETTING, guidance.BRANCH_RULES, guidance.RULESETS):
        assert phrase in checklist, phrase
    template = words(support_scaffold("docs", 1)[WORKFLOW])
    for phrase in everywhere:
        assert phrase in template, phrase
    assert "memento github --check" in checklist
