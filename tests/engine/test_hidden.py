"""The task's own files, stamped before the agent runs: found below each pattern's literal
prefix, links never followed, .git folders and memento's working files left out."""

from __future__ import annotations

from pathlib import Path

from memento_gh.engine.wall.hidden import stamp_files
from testing.repos import write


def test_the_files_the_patterns_match_are_stamped_and_nothing_else(tmp_path: Path) -> None:
    for name in (
        "src/a.py",
        "src/b.txt",
        "src/db/x.sql",
        "src/db/deep/y.sql",
        "src/db/.git/HEAD",
        "tests/test_a.py",
        "tests/test_b.py",
        "logs/tick.log",
        "docs/README.md",
    ):
        write(tmp_path, name, name)
    (tmp_path / "src/db/elsewhere").symlink_to(tmp_path / "docs", target_is_directory=True)
    patterns = ("src/*.py", "src/db/", "tests/test_a.py", "missing/", "**/*.log", "../up")

    stamps = stamp_files(tmp_path, patterns, skip=lambda path: path.startswith("logs/"))

    assert sorted(stamps) == [
        "src/a.py",
        "src/db/deep/y.sql",
        "src/db/elsewhere",
        "src/db/x.sql",
        "tests/test_a.py",
    ]
    assert stamps["src/a.py"] != stamps["tests/test_a.py"]
