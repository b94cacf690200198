"""``files.write_atomic``: the old file or the new one, never half, and nothing left beside."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memento_gh import files
from memento_gh.errors import UserError


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


def test_a_link_in_the_files_place_is_replaced_and_its_target_keeps_its_bytes_and_mode(
    tmp_path: Path,
) -> None:
    """The agent may leave a link where memento writes: a symbolic one to an executable, or
    a second name of ``.git/config``. Neither is written through, and the new file takes
    neither's mode."""
    target = tmp_path / "config"
    target.write_text("[core]\n")
    target.chmod(0o4755)
    (tmp_path / "STATE.md").symlink_to(target)
    os.link(target, tmp_path / ".memento_alert")

    files.write_atomic(tmp_path / "STATE.md", "state\n")
    files.write_atomic(tmp_path / ".memento_alert", "alert\n")

    assert target.read_text() == "[core]\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o4755
    for name in ("STATE.md", ".memento_alert"):
        found = (tmp_path / name).lstat()
        assert stat.S_ISREG(found.st_mode) and found.st_nlink == 1
        assert stat.S_IMODE(found.st_mode) == 0o644


@pytest.mark.parametrize("kind", ["hard link", "symbolic link", "folder", "FIFO"])
def test_a_log_is_appended_to_only_when_it_is_a_file_of_its_own(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "config"
    target.write_text("[core]\n")
    log = tmp_path / "logs" / "memento.log"
    log.parent.mkdir()
    if kind == "hard link":
        os.link(target, log)
    elif kind == "symbolic link":
        log.symlink_to(target)
    elif kind == "folder":
        log.mkdir()
    else:
        os.mkfifo(log)

    with pytest.raises(UserError) as refused:
        files.open_append(log)

    assert str(refused.value).startswith(f"{log}: ")
    assert f"rm -r {log}" in str(refused.value)
    assert target.read_text() == "[core]\n"


def test_a_file_where_the_logs_folder_goes_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("not a folder\n")

    with pytest.raises(UserError) as refused:
        files.open_append(tmp_path / "logs" / "memento.log")

    assert str(refused.value).startswith(f"{tmp_path / 'logs'}: cannot make the folder")
    assert f"rm {tmp_path / 'logs'}" in str(refused.value)
