"""Path patterns: ``context_files``/``guard_files`` globs and ``.memento_ignore`` lines."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memento_gh.engine.globs import (
    first_match,
    ignore_matches,
    is_ignored,
    literal_prefix,
    matches,
    matches_any,
    normalize,
    parse_ignore,
    plan_segments,
)

PLAN_PATTERNS = [
    # a plain file name: that file, not its look-alikes
    ("src/db/schema.ts", "src/db/schema.ts", True),
    ("src/db/schema.ts", "src/db/schema.tsx", False),
    ("src/db/schema.ts", "src/db/schema", False),
    ("src/db/schema.ts", "lib/src/db/schema.ts", False),
    # a plain directory name, with or without the slash: everything below it
    ("src/db/migrations/", "src/db/migrations/001.sql", True),
    ("src/db/migrations/", "src/db/migrations/a/b/002.sql", True),
    ("src/db/migrations/", "src/db/migrations", False),
    ("src/db/migrations/", "src/db/migrations_old/001.sql", False),
    ("src/db/migrations", "src/db/migrations/001.sql", True),
    ("src/db/migrations", "src/db/migrations", True),
    ("src/db/migrations", "src/db/migrations.sql", False),
    # * ? [...] stay within one segment
    ("src/auth/*", "src/auth/jwt.py", True),
    ("src/auth/*", "src/auth/.env", True),
    ("src/auth/*", "src/auth/sub/jwt.py", False),
    ("src/auth/*", "src/auth", False),
    ("src/routes/*.ts", "src/routes/users.ts", True),
    ("src/routes/*.ts", "src/routes/users.tsx", False),
    ("src/routes/*.ts", "src/routes/v1/users.ts", False),
    ("src/*/index.ts", "src/db/index.ts", True),
    ("src/*/index.ts", "src/db/x/index.ts", False),
    ("src/file?.py", "src/file1.py", True),
    ("src/file?.py", "src/file10.py", False),
    ("src/file?.py", "src/file/.py", False),
    ("src/[ab].py", "src/a.py", True),
    ("src/[ab].py", "src/c.py", False),
    ("src/[!ab].py", "src/c.py", True),
    ("src/[!ab].py", "src/a.py", False),
    ("src/[a-c].py", "src/b.py", True),
    ("src/[a-c].py", "src/d.py", False),
    ("src/[ab.py", "src/[ab.py", True),  # an unclosed bracket is a literal
    ("src/a+b(1).py", "src/a+b(1).py", True),  # regex characters are literal
    ("src/a+b(1).py", "src/aab1.py", False),
    # ** is any number of segments, zero included
    ("src/**/test_*.py", "src/test_a.py", True),
    ("src/**/test_*.py", "src/a/b/test_a.py", True),
    ("src/**/test_*.py", "lib/test_a.py", False),
    ("**/conftest.py", "conftest.py", True),
    ("**/conftest.py", "tests/a/conftest.py", True),
    ("**/conftest.py", "tests/a/my_conftest.py", False),
    ("src/**", "src/a.py", True),
    ("src/**", "src/a/b/c.py", True),
    ("src/**", "src", False),
    ("src/**", "srcx/a.py", False),
    ("**", "any/thing.txt", True),
    ("src/a**b.py", "src/axxb.py", True),  # inside a segment ** is a plain *
    ("src/a**b.py", "src/a/b.py", False),
    # a last segment that is a plain name also covers a directory's contents
    ("src/*/migrations", "src/db/migrations/001.sql", True),
    ("**/fixtures", "tests/unit/fixtures/data.json", True),
    # a leading ./ or / is ignored; . is the whole repository
    ("./src/a.py", "src/a.py", True),
    ("/src/a.py", "src/a.py", True),
    ("src//a.py", "src/a.py", True),
    ("src/./a.py", "src/a.py", True),
    (".", "any/thing.txt", True),
    ("./", "README.md", True),
    # a path that leaves the repository matches nothing
    ("../outside.txt", "outside.txt", False),
    ("src/../x.py", "x.py", False),
    # a path ending in / is a directory taken whole (a nested repository)
    ("src/vendor", "src/vendor/", True),
    ("src/vendor/", "src/vendor/", True),
    ("src/", "src/vendor/", True),
    ("src/*", "src/vendor/", True),
    ("src/*.py", "src/vendor/", False),
    ("src/vendor/x.py", "src/vendor/", False),
    # case matters (POSIX)
    ("src/A.py", "src/a.py", False),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), PLAN_PATTERNS)
def test_plan_pattern(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


def test_a_path_given_with_dot_slash_is_the_same_path() -> None:
    assert matches("src/a.py", "./src/a.py")


def test_matches_any_and_first_match_name_the_pattern() -> None:
    patterns = ["src/db/schema.ts", "src/db/migrations/"]
    assert matches_any(patterns, "src/db/migrations/001.sql")
    assert not matches_any(patterns, "src/auth/jwt.ts")
    assert not matches_any([], "src/auth/jwt.ts")
    assert first_match(["docs/*", "src/*", "src/a.py"], "src/a.py") == "src/*"
    assert first_match(["docs/*"], "src/a.py") is None


@pytest.mark.parametrize(
    ("pattern", "prefix"),
    [
        ("src/db/*.sql", "src/db"),
        ("src/db/migrations/", "src/db/migrations"),
        ("./src/a.py", "src/a.py"),
        ("**/x.py", ""),
        ("src/**/x.py", "src"),
        ("src/[ab]/x.py", "src"),
        (".", ""),
        ("../x", None),
    ],
)
def test_literal_prefix_is_where_a_search_starts(pattern: str, prefix: str | None) -> None:
    assert literal_prefix(pattern) == prefix


IGNORE_PATTERNS = [
    # a name without a slash: at any depth, the path itself or a directory above it
    ("*.pyc", "a.pyc", True),
    ("*.pyc", "pkg/sub/a.pyc", True),
    ("*.pyc", "pkg/a.py", False),
    (".env", ".env", True),
    (".env", "service/.env", True),
    (".env", ".envrc", False),
    (".env.*", "service/.env.local", True),
    ("node_modules", "web/node_modules/react/index.js", True),
    # a trailing slash: directories only
    ("node_modules/", "node_modules/react/index.js", True),
    ("node_modules/", "web/node_modules/react/index.js", True),
    ("node_modules/", "node_modules", False),
    ("node_modules/", "node_modules/", True),
    ("build/", "src/build.py", False),
    # a slash at the start or in the middle anchors the pattern at the root
    ("/build", "build/out.js", True),
    ("/build", "src/build/out.js", False),
    ("doc/frotz", "doc/frotz/a.txt", True),
    ("doc/frotz", "sub/doc/frotz/a.txt", False),
    ("doc/*.txt", "doc/a.txt", True),
    ("doc/*.txt", "doc/sub/a.txt", False),
    # ** as in git
    ("**/foo", "foo", True),
    ("**/foo", "a/b/foo", True),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("abc/**", "abc/x/y", True),
    ("abc/**", "xabc/y", False),
    # escapes: a literal leading ! or #, a literal *
    ("\\!important.txt", "!important.txt", True),
    ("\\#notes", "#notes", True),
    ("a\\*b", "a*b", True),
    ("a\\*b", "axb", False),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), IGNORE_PATTERNS)
def test_ignore_pattern(pattern: str, path: str, expected: bool) -> None:
    assert ignore_matches(pattern, path) is expected


def test_ignore_matches_reads_a_negated_pattern_for_what_it_names() -> None:
    assert ignore_matches("!keep.log", "logs/keep.log")
    assert not ignore_matches("!keep.log", "logs/other.log")
    assert not ignore_matches("!", "anything")
    assert not ignore_matches("/", "anything")


@pytest.mark.parametrize(
    ("patterns", "path", "expected"),
    [
        (["*.log"], "app/debug.log", True),
        (["*.log", "!keep.log"], "app/keep.log", False),
        (["*.log", "!keep.log"], "app/debug.log", True),
        # the last matching line wins
        (["!keep.log", "*.log"], "app/keep.log", True),
        # a file below an excluded directory cannot be re-included (as in git)
        (["logs/", "!logs/keep.log"], "logs/keep.log", True),
        # but the directory's contents can be excluded and one file re-included
        (["logs/*", "!logs/keep.log"], "logs/keep.log", False),
        (["logs/*", "!logs/keep.log"], "logs/other.log", True),
        ([], "anything", False),
    ],
)
def test_is_ignored_reads_a_whole_ignore_file(
    patterns: list[str], path: str, expected: bool
) -> None:
    assert is_ignored(patterns, path) is expected


def test_parse_ignore_keeps_patterns_and_drops_comments_and_blanks() -> None:
    text = (
        "\ufeff# dependencies\n"
        "node_modules/\n"
        "\n"
        "   \n"
        "*.pyc   \n"
        "trailing\\ \n"
        "\\#literal-hash\n"
        "!keep.pyc\r\n"
    )
    assert parse_ignore(text) == [
        "node_modules/",
        "*.pyc",
        "trailing\\ ",
        "\\#literal-hash",
        "!keep.pyc",
    ]


def test_parse_ignore_reads_the_shipped_template() -> None:
    from importlib.resources import files

    text = files("memento_gh").joinpath("templates/memento_ignore").read_text("utf-8")
    patterns = parse_ignore(text)
    assert ".env" in patterns
    assert is_ignored(patterns, "web/node_modules/react/index.js")
    assert is_ignored(patterns, ".memento/worker_prompt.md")
    assert is_ignored(patterns, "pkg/__pycache__/mod.cpython-312.pyc")
    assert not is_ignored(patterns, "src/app.py")


# -- patterns without wildcards are matched by comparing strings -----------------------------

SEGMENT = st.sampled_from(["src", "db", "a.b", "x-y", "schema.ts", "文档", "a b", "..", ".", ""])


def regex_reading(pattern: str, path: str) -> bool:
    """What a plan pattern without wildcards meant as a regular expression: the name, and
    (unless only what lies below was asked for) everything below it."""
    segments = plan_segments(pattern)
    if segments is None:
        return False
    if not segments:
        regex = r"(?s).+"
    else:
        tail = "/.+" if normalize(pattern).endswith("/") else "(?:/.+)?"
        regex = "(?s)" + "/".join(map(re.escape, segments)) + tail
    clean = path[2:] if path.startswith("./") else path
    if clean.endswith("/"):
        directory = clean.rstrip("/")
        return bool(re.fullmatch(regex, directory) or re.fullmatch(regex, f"{directory}/\0"))
    return re.fullmatch(regex, clean) is not None


@given(
    st.lists(SEGMENT, min_size=1, max_size=4),
    st.sampled_from(["", "./", "/"]),
    st.sampled_from(["", "/"]),
    st.lists(SEGMENT, max_size=5),
    st.sampled_from(["", "/", "./"]),
)
def test_a_pattern_without_wildcards_matches_what_its_regex_matched(
    segments: list[str], lead: str, trail: str, path_segments: list[str], path_end: str
) -> None:
    pattern = lead + "/".join(segments) + trail
    path = "/".join(path_segments)
    path = "./" + path if path_end == "./" else path + path_end
    assert matches(pattern, path) is regex_reading(pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("docs/MASTER_PLAN.md", "docs/MASTER_PLAN.md", True),
        ("docs/MASTER_PLAN.md", "docs/MASTER_PLAN.md/x", True),
        ("docs/MASTER_PLAN.md", "docs/MASTER_PLAN.mdx", False),
        ("docs/MASTER_PLAN.md", "docs/MASTER_PLAN.md/", True),
        (".memento/", ".memento", False),
        (".memento/", ".memento/worker_prompt.md", True),
        (".memento/", ".memento/", True),
        ("docs/memory/", "docs/memory/\0", True),
    ],
)
def test_memento_own_files_as_literal_patterns(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected
