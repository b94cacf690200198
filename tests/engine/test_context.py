"""Gathering a task's context_files from a real work tree: matches, ignores, caps, misses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memento_gh.engine.context import gather_context, read_ignore_file
from memento_gh.engine.guards import protected_paths
from memento_gh.engine.prompt import (
    BINARY,
    IGNORED,
    MISSING,
    OVER_BUDGET,
    PROTECTED,
    SYMLINK,
    TOO_LARGE,
    ContextFile,
)
from memento_gh.files import NotUtf8


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))


def listing(found: list[ContextFile]) -> list[tuple[str, str]]:
    return [(item.path, item.note) for item in found]


@pytest.fixture
def seed_repo(tmp_path: Path) -> Path:
    write(
        tmp_path,
        {
            "src/db/schema.ts": "export const users = 'users';\n",
            "src/db/index.ts": "export {};\n",
            "src/db/migrations/001.sql": "CREATE TABLE users ();\n",
            "src/db/migrations/v2/002.sql": "ALTER TABLE users;\n",
            "src/auth/jwt.ts": "// jwt\n",
            "src/routes/users.ts": "// users\n",
            "src/routes/index.ts": "// index\n",
            "src/routes/users.test.tsx": "// test\n",
            ".git/config": "[core]\n",
            "README.md": "# demo\n",
        },
    )
    return tmp_path


def test_the_seed_task_gets_its_file_and_everything_below_its_directory(seed_repo: Path) -> None:
    found = gather_context(seed_repo, ["src/db/schema.ts", "src/db/migrations/"], [])
    assert found == [
        ContextFile("src/db/migrations/001.sql", 23, "CREATE TABLE users ();\n", ""),
        ContextFile("src/db/migrations/v2/002.sql", 19, "ALTER TABLE users;\n", ""),
        ContextFile("src/db/schema.ts", 30, "export const users = 'users';\n", ""),
    ]


def test_wildcards_stay_in_one_segment_and_results_are_sorted_and_deduped(
    seed_repo: Path,
) -> None:
    found = gather_context(seed_repo, ["src/routes/*.ts", "src/routes/index.ts", "src/*"], [])
    assert [item.path for item in found] == ["src/routes/index.ts", "src/routes/users.ts"]


def test_double_star_walks_the_tree_but_never_git(seed_repo: Path) -> None:
    found = gather_context(seed_repo, ["**"], [])
    paths = [item.path for item in found]
    assert "README.md" in paths
    assert "src/db/migrations/v2/002.sql" in paths
    assert not any(path.startswith(".git/") for path in paths)
    assert paths == sorted(paths)


def test_a_named_git_file_is_never_read(seed_repo: Path) -> None:
    found = gather_context(seed_repo, [".git/config", "sub/.git/HEAD"], [])
    assert listing(found) == [(".git/config", PROTECTED), ("sub/.git/HEAD", PROTECTED)]
    assert all(item.content is None for item in found)


def test_a_file_that_does_not_exist_yet_is_listed_as_missing(seed_repo: Path) -> None:
    found = gather_context(seed_repo, ["src/db/queries.ts", "src/cache/", "./src/new/mod.py"], [])
    assert found == [
        ContextFile("src/cache/", 0, None, MISSING),
        ContextFile("src/db/queries.ts", 0, None, MISSING),
        ContextFile("src/new/mod.py", 0, None, MISSING),
    ]


def test_an_empty_named_directory_is_listed_so_the_agent_may_fill_it(tmp_path: Path) -> None:
    (tmp_path / "src" / "empty").mkdir(parents=True)
    assert listing(gather_context(tmp_path, ["src/empty"], [])) == [("src/empty/", MISSING)]


def test_a_wildcard_pattern_that_matches_nothing_lists_nothing(seed_repo: Path) -> None:
    assert gather_context(seed_repo, ["src/none/*.ts", "lib/**/x.py", "src/*.md"], []) == []


def test_a_pattern_that_leaves_the_repository_reads_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(tmp_path, {"secret.txt": "s3cret\n", "repo/a.txt": "a\n"})
    assert gather_context(repo, ["../secret.txt", "../*"], []) == []


def test_ignored_files_are_skipped_and_a_named_one_is_marked(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".env": "TOKEN=x\n",
            "app.py": "print()\n",
            "app.pyc": b"\x00\x01",
            "node_modules/react/index.js": "module.exports = 1;\n",
            "web/node_modules/vue/index.js": "module.exports = 2;\n",
            "web/main.js": "import vue;\n",
        },
    )
    ignore = [".env", "*.pyc", "node_modules/"]
    found = gather_context(tmp_path, ["**", ".env", "node_modules/react/"], ignore)
    assert listing(found) == [
        (".env", IGNORED),
        ("app.py", ""),
        ("node_modules/react/", IGNORED),
        ("web/main.js", ""),
    ]
    assert all("TOKEN" not in (item.content or "") for item in found)


def test_negated_ignore_lines_re_include_files(tmp_path: Path) -> None:
    write(tmp_path, {"logs/keep.log": "kept\n", "logs/other.log": "dropped\n"})
    found = gather_context(tmp_path, ["logs/"], ["logs/*", "!logs/keep.log"])
    assert listing(found) == [("logs/keep.log", "")]


def test_the_shipped_ignore_file_protects_secrets_and_caches(tmp_path: Path) -> None:
    from importlib.resources import files

    template = files("memento_gh").joinpath("templates/memento_ignore").read_text("utf-8")
    write(
        tmp_path,
        {
            ".memento_ignore": template,
            ".env.local": "KEY=1\n",
            ".venv/lib/site.py": "x\n",
            "pkg/__pycache__/m.cpython-312.pyc": b"\x00",
            "pkg/m.py": "x = 1\n",
        },
    )
    ignore = read_ignore_file(tmp_path / ".memento_ignore")
    found = gather_context(tmp_path, ["**"], ignore)
    assert [item.path for item in found] == [".memento_ignore", "pkg/m.py"]


def test_excluded_paths_are_memento_s_own_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "docs/MASTER_PLAN.md": "- [ ] `T-1` the whole plan\n",
            "docs/memory/decisions.md": "decided\n",
            "docs/api.md": "# API\n",
        },
    )
    exclude = protected_paths("docs")
    found = gather_context(
        tmp_path, ["docs/*", "docs/MASTER_PLAN.md", "docs/memory"], [], exclude=exclude
    )
    assert listing(found) == [
        ("docs/MASTER_PLAN.md", PROTECTED),
        ("docs/api.md", ""),
        ("docs/memory/", PROTECTED),
    ]
    assert all("the whole plan" not in (item.content or "") for item in found)


def test_binary_files_are_detected_by_a_nul_byte_or_bad_utf8(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "img.png": b"\x89PNG\r\n\x1a\n\x00\x00",
            "latin1.txt": "caf\xe9\n".encode("latin-1"),
            "late_nul.txt": b"a" * 9000 + b"\x00",
            "utf8.txt": "café 日本\n",
        },
    )
    found = gather_context(tmp_path, ["*"], [])
    assert listing(found) == [
        ("img.png", BINARY),
        ("late_nul.txt", ""),  # a NUL beyond the first 8 KiB decodes as text
        ("latin1.txt", BINARY),
        ("utf8.txt", ""),
    ]
    assert found[0].size == 10
    assert found[3].content == "café 日本\n"


def test_text_is_kept_byte_for_byte(tmp_path: Path) -> None:
    write(tmp_path, {"crlf.txt": b"\xef\xbb\xbfone\r\ntwo\r\n\tthree  \r\n"})
    (found,) = gather_context(tmp_path, ["crlf.txt"], [])
    assert found.content == "\ufeffone\r\ntwo\r\n\tthree  \r\n"


def test_a_file_over_the_per_file_cap_is_listed_without_content(tmp_path: Path) -> None:
    write(tmp_path, {"big.txt": "x" * 101, "fits.txt": "y" * 100})
    found = gather_context(tmp_path, ["*.txt"], [], per_file_cap=100)
    assert found == [
        ContextFile("big.txt", 101, None, TOO_LARGE),
        ContextFile("fits.txt", 100, "y" * 100, ""),
    ]


def test_files_over_the_total_budget_are_listed_as_omitted(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "a" * 60, "b.txt": "b" * 60, "c.txt": "c" * 30, "d.txt": "d" * 20})
    found = gather_context(tmp_path, ["*.txt"], [], total_cap=100)
    assert listing(found) == [
        ("a.txt", ""),
        ("b.txt", OVER_BUDGET),  # 120 > 100
        ("c.txt", ""),  # 90: a later, smaller file still fits
        ("d.txt", OVER_BUDGET),  # 110 > 100
    ]
    assert found[1].content is None
    assert sum(len(item.content or "") for item in found) <= 100


def test_binary_and_too_large_files_cost_no_budget(tmp_path: Path) -> None:
    write(tmp_path, {"a.bin": b"\x00" * 50, "b.txt": "b" * 80, "c.txt": "c" * 40})
    found = gather_context(tmp_path, ["*"], [], per_file_cap=70, total_cap=40)
    assert listing(found) == [("a.bin", BINARY), ("b.txt", TOO_LARGE), ("c.txt", "")]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_symbolic_links_are_read_only_when_they_point_inside(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(tmp_path, {"outside.txt": "secret\n", "repo/real.txt": "real\n", "repo/d/x.txt": "x\n"})
    (repo / "inside_link.txt").symlink_to(repo / "real.txt")
    (repo / "outside_link.txt").symlink_to(tmp_path / "outside.txt")
    (repo / "dir_link").symlink_to(repo / "d")
    found = gather_context(repo, ["*", "dir_link/"], [])
    assert listing(found) == [
        ("dir_link", SYMLINK),  # listed, never followed
        ("inside_link.txt", ""),
        ("outside_link.txt", SYMLINK),
        ("real.txt", ""),
    ]
    assert found[1].content == "real\n"
    assert listing(gather_context(repo, ["dir_link/"], [])) == [("dir_link/", SYMLINK)]
    assert all(item.content != "secret\n" for item in found)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_link_to_a_hidden_file_does_not_reveal_it(tmp_path: Path) -> None:
    write(tmp_path, {".env": "TOKEN=x\n", ".git/config": "[core]\n", "docs/STATE.md": "s\n"})
    (tmp_path / "env_link").symlink_to(tmp_path / ".env")
    (tmp_path / "git_link").symlink_to(tmp_path / ".git" / "config")
    (tmp_path / "state_link").symlink_to(tmp_path / "docs" / "STATE.md")
    found = gather_context(tmp_path, ["*_link"], [".env"], exclude=protected_paths("docs"))
    assert listing(found) == [("env_link", SYMLINK), ("git_link", SYMLINK), ("state_link", SYMLINK)]


def test_read_ignore_file(tmp_path: Path) -> None:
    ignore = tmp_path / ".memento_ignore"
    assert read_ignore_file(ignore) == []
    ignore.write_text("# secrets\n.env\n\nnode_modules/\n!keep.env\n", encoding="utf-8")
    assert read_ignore_file(ignore) == [".env", "node_modules/", "!keep.env"]


def test_an_ignore_file_that_is_not_utf8_is_an_error_with_its_line(tmp_path: Path) -> None:
    ignore = tmp_path / ".memento_ignore"
    ignore.write_bytes(b".env\ncaf\xe9\n")
    with pytest.raises(NotUtf8) as raised:
        read_ignore_file(ignore)
    assert raised.value.line == 2
