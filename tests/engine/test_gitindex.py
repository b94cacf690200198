"""git's index as an agent may leave it: the index from before put back, the flags the
agent added named, the committed blobs read, and index entries made afresh so that git reads
the files again. Real git in temporary repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from memento_gh.engine.wall import gitindex
from memento_gh.engine.wall.gitindex import ASSUME_UNCHANGED, SKIP_WORKTREE, Blob, KeptIndex
from memento_gh.workspace import Workspace
from testing.repos import commit_all, git, init_repo, write

pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    for name in ("a.txt", "b.txt", "c.txt"):
        write(root, name, f"{name}\n")
    write(root, "run.sh", "echo run\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("a.txt")
    commit_all(root, "base")
    return root


def kept(root: Path) -> KeptIndex:
    return KeptIndex(root, Workspace(root).index_file)


def test_the_index_comes_back_and_only_the_flags_the_agent_added_are_named(repo: Path) -> None:
    git(repo, "update-index", "--skip-worktree", "a.txt")  # the user's own
    index = kept(repo)
    git(repo, "update-index", "--skip-worktree", "b.txt")
    git(repo, "update-index", "--assume-unchanged", "c.txt")
    write(repo, "c.txt", "hidden\n")

    report = index.put_back()

    assert report.flags == ((ASSUME_UNCHANGED, "c.txt"), (SKIP_WORKTREE, "b.txt"))
    assert report.unreadable is None
    assert git(repo, "ls-files", "-v").splitlines() == [
        "S a.txt",
        "H b.txt",
        "H c.txt",
        "H link",
        "H run.sh",
    ]
    assert git(repo, "status", "--porcelain") == " M c.txt\n"


def test_an_untouched_index_needs_no_git(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = kept(repo)
    write(repo, "a.txt", "changed, as an agent does\n")
    monkeypatch.setenv("PATH", "")  # any git process would fail

    assert index.put_back() == gitindex.IndexReport()


def test_an_index_git_cannot_read_is_named_and_put_back(repo: Path) -> None:
    index = kept(repo)
    (repo / ".git/index").write_bytes(b"DIRC not an index")

    report = index.put_back()

    assert report.unreadable is not None and "index" in report.unreadable
    assert git(repo, "status", "--porcelain") == ""


def test_a_file_holds_its_blob_only_with_the_same_bytes_and_mode(repo: Path) -> None:
    entries = gitindex.blobs(repo, "HEAD", ["a.txt", "run.sh", "link", "missing"])
    assert set(entries) == {"a.txt", "run.sh", "link"}
    assert [entries[path].mode for path in ("a.txt", "run.sh", "link")] == [
        "100644",
        "100755",
        "120000",
    ]
    assert all(gitindex.same_as(repo / path, blob) for path, blob in entries.items())

    write(repo, "a.txt", "a.txt \n")
    (repo / "run.sh").chmod(0o644)
    (repo / "link").unlink()
    (repo / "link").symlink_to("b.txt")
    assert not any(gitindex.same_as(repo / path, blob) for path, blob in entries.items())
    assert not gitindex.same_as(repo / "gone", entries["a.txt"])


def test_blobs_of_many_paths_come_from_one_listing_of_the_tree(repo: Path) -> None:
    names = [f"many/{index:03}.txt" for index in range(250)]
    for name in names:
        write(repo, name, f"{name}\n")
    commit_all(repo, "many")

    entries = gitindex.blobs(repo, "HEAD", [*names, "a.txt", "many", "nothing.txt"])

    assert set(entries) == {*names, "a.txt"}
    assert entries["a.txt"] == Blob("100644", git(repo, "rev-parse", "HEAD:a.txt").strip())


def test_a_fresh_entry_makes_git_read_the_file_an_old_one_hid(repo: Path) -> None:
    git(repo, "update-index", "--assume-unchanged", "a.txt")
    write(repo, "a.txt", "hidden\n")
    assert git(repo, "status", "--porcelain") == ""

    gitindex.refresh(repo, gitindex.blobs(repo, "HEAD", ["a.txt"]))

    assert git(repo, "status", "--porcelain") == " M a.txt\n"
    assert git(repo, "ls-files", "-v", "a.txt") == "H a.txt\n"


def test_a_rebuilt_index_holds_the_commit_without_flags(repo: Path) -> None:
    git(repo, "update-index", "--skip-worktree", "a.txt")
    write(repo, "a.txt", "hidden\n")

    gitindex.rebuild(repo, git(repo, "rev-parse", "HEAD").strip())

    assert git(repo, "status", "--porcelain") == " M a.txt\n"
