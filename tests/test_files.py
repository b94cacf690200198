"""``files.write_atomic``: the old file or the new one, never half, and nothing left beside."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from memento_gh import files


def test_the_new_text_replaces_the_old_and_keeps_its_permissions(tmp_path: Path) -> None:
    path = tmp_path / "docs" / "MASTER_PLAN.md"
    path.parent.mkdir()
    path.write_text("old\n", encoding="utf-8")
    path.chmod(0o600)

    files.write_atomic(path, "new 漢字\r\n")

    assert path.read_bytes() == "new 漢字\r\n".encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["MASTER_PLAN.md"]


def test_a_new_file_and_its_folders_are_made_readable(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "TICK_STATUS.md"

    files.write_atomic(path, "# TICK STATUS LOG\n")

    assert path.read_text(encoding="utf-8") == "# TICK STATUS LOG\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    path.write_text("old\n", encoding="utf-8")

    with pytest.raises(UnicodeEncodeError):
        files.write_atomic(path, "half \udcff")  # a lone surrogate cannot be UTF-8

    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.md"]


def test_a_write_that_need_not_reach_the_disk_is_still_whole(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    path.write_text("old\n", encoding="utf-8")
    path.chmod(0o640)

    files.write_atomic(path, "claimed\n", durable=False)

    assert path.read_text(encoding="utf-8") == "claimed\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["plan.md"]
