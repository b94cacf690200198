"""The workspace adapter against real git repositories in temporary folders.

Every test builds a repository with the git command line, lets ``Workspace`` act on it, and
reads the outcome back with the git command line: files on disk, the index, the log, stashes.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from memento_gh.changes import FileChange
from memento_gh.errors import UserError
from memento_gh.gitrun import GitError
from memento_gh.workspace import (
    RollbackReport,
    TreeStatus,
    Workspace,
    init_repository,
    start_status,
)
from testing.repos import commit_all, git, git_fingerprint, init_repo, tree_status, write

APP = b"one\ntwo\nthree\n"
LOGO = bytes(range(256)) * 4  # NUL bytes: binary to git
README = b"# demo\r\nwindows line endings\r\n"


def make_executable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, "README.md", README)
    write(root, "src/app.py", APP)
    write(root, "logo.bin", LOGO)
    write(root, ".gitignore", "*.log\n")
    commit_all(root, "base")
    return root


def numstat(root: Path, *args: str) -> dict[str, tuple[int, int, bool]]:
    """``git diff --numstat`` as {new path: (added, removed, binary)}."""
    fields = iter(git(root, "diff", "--numstat", "-z", "-M", *args).split("\0"))
    found = {}
    for record in fields:
        if not record:
            continue
        added, removed, path = record.split("\t", 2)
        if not path:
            next(fields)
            path = next(fields)
        binary = added == "-"
        found[path] = (0 if binary else int(added), 0 if binary else int(removed), binary)
    return found


def counts(changes: list[FileChange]) -> dict[str, tuple[int, int, bool]]:
    return {change.path: (change.added, change.removed, change.binary) for change in changes}


def status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


# -- opening -------------------------------------------------------------------------------


def test_the_root_is_the_top_of_the_work_tree_even_from_a_subfolder(repo: Path) -> None:
    assert Workspace(repo / "src").root == repo


def test_a_folder_outside_any_repository_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not inside a git repository; run `git init` first"):
        Workspace(tmp_path)


def test_head_and_branch(repo: Path) -> None:
    workspace = Workspace(repo)
    assert workspace.head() == git(repo, "rev-parse", "HEAD").strip()
    assert workspace.current_branch() == "main"
    git(repo, "checkout", "-q", "--detach")
    assert workspace.current_branch() is None


# -- changes -------------------------------------------------------------------------------


def test_a_fresh_checkout_has_no_changes(repo: Path) -> None:
    workspace = Workspace(repo)
    assert workspace.changes() == []
    assert workspace.is_clean()


def test_an_unstaged_edit_is_modified_with_its_line_counts(repo: Path) -> None:
    write(repo, "src/app.py", "one\n2\nthree\nfour\n")
    assert Workspace(repo).changes() == [FileChange("src/app.py", "modified", 2, 1, False)]


def test_staged_and_unstaged_edits_count_together_against_head(repo: Path) -> None:
    write(repo, "src/app.py", "one\ntwo\nthree\nfour\n")
    git(repo, "add", "src/app.py")
    write(repo, "src/app.py", "one\ntwo\nthree\nfour\nfive\n")
    assert Workspace(repo).changes() == [FileChange("src/app.py", "modified", 2, 0, False)]


def test_a_staged_new_file_is_added_and_an_unstaged_one_untracked(repo: Path) -> None:
    write(repo, "staged.py", "a\nb\n")
    git(repo, "add", "staged.py")
    write(repo, "loose.py", "a\nb\nno newline at the end")
    write(repo, "empty.txt", "")
    assert Workspace(repo).changes() == [
        FileChange("empty.txt", "untracked", 0, 0, False),
        FileChange("loose.py", "untracked", 3, 0, False),
        FileChange("staged.py", "added", 2, 0, False),
    ]


def test_deleted_files_count_their_lines_as_removed(repo: Path) -> None:
    (repo / "src/app.py").unlink()
    git(repo, "rm", "-q", "logo.bin")
    assert Workspace(repo).changes() == [
        FileChange("logo.bin", "deleted", 0, 0, True),
        FileChange("src/app.py", "deleted", 0, 3, False),
    ]


def test_a_staged_move_is_a_rename_with_its_old_path(repo: Path) -> None:
    git(repo, "mv", "src/app.py", "src/main.py")
    assert Workspace(repo).changes() == [
        FileChange("src/main.py", "renamed", 0, 0, False, old_path="src/app.py")
    ]


def test_binary_files_are_flagged_and_count_no_lines(repo: Path) -> None:
    write(repo, "logo.bin", LOGO + b"\0more")
    write(repo, "new.bin", b"GIF89a\0\1\2\n\n")
    assert Workspace(repo).changes() == [
        FileChange("logo.bin", "modified", 0, 0, True),
        FileChange("new.bin", "untracked", 0, 0, True),
    ]


def test_sizes_are_the_bytes_each_added_or_changed_path_holds_in_the_work_tree(
    repo: Path,
) -> None:
    write(repo, "logo.bin", LOGO + b"\0more")
    write(repo, "new/data.txt", "12345\n")
    (repo / "README.md").unlink()
    (repo / "src/app.py").unlink()
    (repo / "src/app.py").symlink_to("../logo.bin")
    workspace = Workspace(repo)

    assert workspace.sizes(workspace.changes()) == {
        "logo.bin": len(LOGO) + 5,
        "new/data.txt": 6,
        "src/app.py": len("../logo.bin"),
    }


def test_a_file_replaced_by_a_link_is_a_typechange(repo: Path) -> None:
    (repo / "src/app.py").unlink()
    (repo / "src/app.py").symlink_to("../README.md")
    changes = Workspace(repo).changes()
    assert [(change.path, change.kind) for change in changes] == [("src/app.py", "typechange")]
    assert counts(changes) == numstat(repo, "HEAD")


def test_paths_with_spaces_unicode_tabs_and_newlines_come_through_unquoted(repo: Path) -> None:
    names = ["dir with space/naïve 文件.txt", "tab\there.txt", "new\nline.txt", '"quoted".txt']
    for name in names:
        write(repo, name, "x\n")
    commit_all(repo)
    for name in names:
        write(repo, name, "x\ny\n")
    write(repo, "dir with space/ünïcode new.txt", "1\n2\n")
    assert Workspace(repo).changes() == sorted(
        [FileChange(name, "modified", 1, 0, False) for name in names]
        + [FileChange("dir with space/ünïcode new.txt", "untracked", 2, 0, False)]
    )


def test_every_file_of_a_new_folder_tree_is_listed(repo: Path) -> None:
    write(repo, "pkg/sub/deep/mod.py", "x\n")
    write(repo, "pkg/__init__.py", "")
    assert [change.path for change in Workspace(repo).changes()] == [
        "pkg/__init__.py",
        "pkg/sub/deep/mod.py",
    ]


def test_ignored_files_are_not_changes(repo: Path) -> None:
    write(repo, "debug.log", "noise\n")
    write(repo, "src/deep/trace.log", "noise\n")
    assert Workspace(repo).changes() == []


def test_untracked_files_matching_keep_can_be_left_out(repo: Path) -> None:
    write(repo, ".env", "SECRET=1\n")
    write(repo, "notes.txt", "x\n")
    write(repo, "src/app.py", "changed\n")
    workspace = Workspace(repo)
    assert [change.path for change in workspace.changes()] == [".env", "notes.txt", "src/app.py"]
    assert [change.path for change in workspace.changes(keep=[".env", "src/"])] == [
        "notes.txt",
        "src/app.py",  # tracked: keep patterns only spare untracked files
    ]


def test_on_an_unborn_branch_everything_is_added_or_untracked(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "fresh")
    write(root, "a.txt", "1\n2\n")
    git(root, "add", "a.txt")
    write(root, "b.txt", "1\n")
    workspace = Workspace(root)
    assert workspace.head() is None
    assert workspace.changes() == [
        FileChange("a.txt", "added", 2, 0, False),
        FileChange("b.txt", "untracked", 1, 0, False),
    ]
    assert not workspace.is_clean()


def test_line_counts_agree_with_git_numstat_for_every_kind_of_change(repo: Path) -> None:
    write(repo, "src/app.py", "zero\none\nthree\nfour")  # no newline at the end
    write(repo, "README.md", README.replace(b"windows", b"WINDOWS") + b"more\r\n")
    git(repo, "mv", "logo.bin", "logo-moved.bin")
    write(repo, "staged.txt", "s\n" * 5)
    git(repo, "add", "staged.txt")
    write(repo, "staged.txt", "s\n" * 7)
    write(repo, "new/no-newline.txt", "a\nb")
    write(repo, "new/crlf.txt", "a\r\nb\r\n")
    write(repo, "new/only-cr.txt", "a\rb\r")
    write(repo, "new/empty.txt", "")
    write(repo, "new/late-nul.txt", b"x\n" * 4500 + b"\0")  # NUL after byte 8000: text to git
    write(repo, "new/early-nul.bin", b"x\n" * 100 + b"\0")
    write(repo, "new/big.txt", "line\n" * 300_000)  # more than one read
    (repo / "new/link").symlink_to("crlf.txt")

    changes = Workspace(repo).changes()

    git(repo, "add", "-A")
    assert counts(changes) == numstat(repo, "--cached", "HEAD")
    assert len(changes) == 12


def test_untracked_counts_agree_with_git_numstat_on_an_unborn_branch(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "fresh")
    write(root, "a.txt", "1\n2")
    write(root, "b.bin", b"\0")
    write(root, "c/d.txt", "x\n" * 10)
    changes = Workspace(root).changes()
    git(root, "add", "-A")
    assert counts(changes) == numstat(root, "--cached")


# -- rollback ------------------------------------------------------------------------------


def test_rollback_restores_edited_and_deleted_tracked_files_byte_for_byte(repo: Path) -> None:
    write(repo, "src/app.py", "ruined\n")
    write(repo, "README.md", "lf now\n")
    git(repo, "add", "README.md")
    (repo / "logo.bin").unlink()
    report = Workspace(repo).rollback([], label="tick-1")
    assert report == RollbackReport(("README.md", "logo.bin", "src/app.py"), (), (), None)
    assert (repo / "src/app.py").read_bytes() == APP
    assert (repo / "README.md").read_bytes() == README
    assert (repo / "logo.bin").read_bytes() == LOGO
    assert status(repo) == ""


def test_rollback_deletes_untracked_files_and_the_folders_they_leave_empty(repo: Path) -> None:
    write(repo, "junk.txt", "x\n")
    write(repo, "gen/a/b/c.py", "x\n")
    (repo / "empty/nested").mkdir(parents=True)
    report = Workspace(repo).rollback([], label="tick-1")
    assert report.removed == ("gen/a/b/c.py", "junk.txt")
    assert sorted(path.name for path in repo.iterdir()) == [
        ".git",
        ".gitignore",
        "README.md",
        "logo.bin",
        "src",
    ]


def test_rollback_keeps_what_the_cleanignore_patterns_match(repo: Path) -> None:
    keep = ["# secrets and caches", "", ".env", "node_modules/", "*.local", "build/**"]
    spared = [
        ".env",
        "build/out/app.o",
        "services/api/.env",
        "settings.local",
        "src/conf/dev.local",
        "web/app/node_modules/lib/index.js",
    ]
    junk = ["src/build/x.o", "web/app/main.js"]  # "build/**" is anchored at the top
    for name in spared + junk:
        write(repo, name, "x\n")

    report = Workspace(repo).rollback(keep, label="tick-1")

    assert report.kept == tuple(spared)
    assert report.removed == tuple(junk)
    assert all((repo / name).read_text() == "x\n" for name in spared)
    assert not any((repo / name).exists() for name in junk)
    assert Workspace(repo).is_clean(keep)


def test_rollback_never_touches_ignored_files(repo: Path) -> None:
    write(repo, "debug.log", "keep me\n")
    write(repo, "deep/er/trace.log", "keep me\n")
    write(repo, "deep/er/junk.txt", "x\n")
    report = Workspace(repo).rollback([], label="tick-1")
    assert report.removed == ("deep/er/junk.txt",)
    assert report.kept == ()
    assert (repo / "debug.log").read_text() == "keep me\n"
    assert (repo / "deep/er/trace.log").read_text() == "keep me\n"


def test_rollback_unstages_staged_additions_and_removes_them_unless_kept(repo: Path) -> None:
    write(repo, "added.py", "x\n")
    write(repo, ".env", "SECRET=1\n")
    git(repo, "add", "-f", "added.py", ".env")
    report = Workspace(repo).rollback([".env"], label="tick-1")
    assert report.restored == (".env", "added.py")
    assert report.removed == ("added.py",)
    assert report.kept == (".env",)
    assert git(repo, "ls-files", "--stage", "added.py", ".env") == ""
    assert not (repo / "added.py").exists()
    assert (repo / ".env").read_text() == "SECRET=1\n"


def test_rollback_undoes_a_staged_rename_and_a_typechange(repo: Path) -> None:
    git(repo, "mv", "src/app.py", "src/main.py")
    (repo / "README.md").unlink()
    (repo / "README.md").symlink_to("logo.bin")
    report = Workspace(repo).rollback([], label="tick-1")
    assert report.restored == ("README.md", "src/app.py", "src/main.py")
    assert report.removed == ("src/main.py",)
    assert (repo / "src/app.py").read_bytes() == APP
    assert not (repo / "README.md").is_symlink()
    assert (repo / "README.md").read_bytes() == README
    assert status(repo) == ""


def test_rollback_puts_a_tracked_file_back_where_a_junk_folder_stood(repo: Path) -> None:
    (repo / "src/app.py").unlink()
    write(repo, "src/app.py/generated.py", "x\n")
    write(repo, "logo.bin", "a file now\n")
    (repo / "src").rename(repo / "src-moved")
    write(repo, "src", "a file where the folder was\n")
    report = Workspace(repo).rollback([], label="tick-1")
    assert report.stash is None
    assert (repo / "src/app.py").read_bytes() == APP
    assert (repo / "logo.bin").read_bytes() == LOGO
    assert status(repo) == ""


def test_rollback_leaves_a_nested_repository_alone_and_reports_it(repo: Path) -> None:
    """Like `git clean -fd`: a repository inside the tree carries its own history (and maybe
    kept or ignored files), so it is not deleted; git cannot stash it either."""
    (repo / "vendor/lib").mkdir(parents=True)
    git(repo / "vendor/lib", "init", "-q")
    write(repo, "vendor/lib/lib.py", "x\n")
    write(repo, "vendor/junk.py", "x\n")
    report = Workspace(repo).rollback([], label="tick-1")
    assert report.removed == ("vendor/junk.py",)
    assert report.stash is None
    assert report.left == ("vendor/lib/",)
    assert (repo / "vendor/lib/lib.py").read_text() == "x\n"
    assert git(repo, "stash", "list") == ""


def test_rollback_refuses_when_there_is_no_commit_to_return_to(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "fresh")
    write(root, "work.py", "precious\n")
    with pytest.raises(UserError, match=r"no commit to roll back to .*`git add -A && git commit`"):
        Workspace(root).rollback([], label="tick-1")
    assert (root / "work.py").read_text() == "precious\n"


def test_a_kept_file_where_a_tracked_file_belongs_goes_to_the_emergency_stash(
    repo: Path,
) -> None:
    """Restoring src/app.py would delete the folder that now stands there, and with it a
    file .memento_cleanignore protects; git stash saves that file before the restore."""
    (repo / "src/app.py").unlink()
    write(repo, "src/app.py/.env", "SECRET=1\n")
    write(repo, "src/app.py/junk.py", "x\n")
    write(repo, ".env", "ROOT=1\n")  # kept, and out of the stash's way

    report = Workspace(repo).rollback([".env"], label="tick-7-T-101")

    assert report == RollbackReport(
        restored=("src/app.py",),
        removed=("src/app.py/junk.py",),
        kept=(".env", "src/app.py/.env"),
        stash="memento-emergency-stash tick-7-T-101",
        left=(),
    )
    assert (repo / "src/app.py").read_bytes() == APP
    assert git(repo, "stash", "list", "--format=%s") == (
        "On main: memento-emergency-stash tick-7-T-101\n"
    )
    assert git(repo, "show", "stash@{0}^3:src/app.py/.env") == "SECRET=1\n"
    assert (repo / ".env").read_text() == "ROOT=1\n"
    assert status(repo) == "?? .env\n"


def test_what_even_the_stash_cannot_clean_is_reported_as_left(repo: Path) -> None:
    """An ignored file in the folder where src/app.py belongs: git never deletes it, so the
    file cannot come back; the report says so instead of pretending the tree is clean."""
    (repo / "src/app.py").unlink()
    write(repo, "src/app.py/cache.log", "ignored\n")

    report = Workspace(repo).rollback([], label="tick-8")

    assert report.stash == "memento-emergency-stash tick-8"
    assert report.left == ("src/app.py",)
    assert (repo / "src/app.py/cache.log").read_text() == "ignored\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""


# -- is_clean ------------------------------------------------------------------------------


def test_a_change_only_in_the_index_is_not_clean(repo: Path) -> None:
    write(repo, "src/app.py", "staged\n")
    git(repo, "add", "src/app.py")
    write(repo, "src/app.py", APP)
    workspace = Workspace(repo)
    assert workspace.changes() == []  # the work tree equals HEAD ...
    assert not workspace.is_clean()  # ... but the index does not


def test_untracked_files_are_clean_only_when_kept(repo: Path) -> None:
    write(repo, "settings.local", "x\n")
    workspace = Workspace(repo)
    assert not workspace.is_clean()
    assert workspace.is_clean(["*.local"])
    write(repo, "src/app.py", "x\n")
    assert not workspace.is_clean(["*.local", "src/"])


# -- status --------------------------------------------------------------------------------


def test_status_of_a_fresh_checkout_is_head_and_nothing_else(repo: Path) -> None:
    assert tree_status(Workspace(repo)) == TreeStatus(
        git(repo, "rev-parse", "HEAD").strip(), (), ()
    )


def test_status_names_every_path_that_differs_from_head(repo: Path) -> None:
    """The tick's one git process per check sees what ``changes`` sees: edits, staged and
    unstaged, deletions, both ends of a rename, untracked files (a nested repository as one
    entry), never ignored ones, and paths with any characters."""
    write(repo, "src/app.py", "edited\n")
    (repo / "README.md").unlink()
    (repo / "art").mkdir()
    git(repo, "mv", "logo.bin", "art/logo.bin")
    write(repo, "staged.py", "x\n")
    git(repo, "add", "staged.py")
    write(repo, "new dir/naïve\tname.txt", "x\n")
    write(repo, "debug.log", "ignored\n")
    (repo / "vendor/lib").mkdir(parents=True)
    git(repo / "vendor/lib", "init", "-q")
    write(repo, "vendor/lib/lib.py", "x\n")
    found = tree_status(Workspace(repo))
    assert found.head == git(repo, "rev-parse", "HEAD").strip()
    assert sorted(found.tracked) == [
        "README.md",
        "art/logo.bin",
        "logo.bin",
        "src/app.py",
        "staged.py",
    ]
    assert sorted(found.untracked) == ["new dir/naïve\tname.txt", "vendor/lib/"]
    changed = {change.path for change in Workspace(repo).changes()}
    changed |= {change.old_path for change in Workspace(repo).changes() if change.old_path}
    assert changed == set(found.paths)


def test_status_sees_a_change_only_in_the_index(repo: Path) -> None:
    write(repo, "src/app.py", "staged\n")
    git(repo, "add", "src/app.py")
    write(repo, "src/app.py", APP)
    assert tree_status(Workspace(repo)).tracked == ("src/app.py",)


def test_status_on_an_unborn_branch_has_no_head(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "fresh")
    write(root, "a.txt", "x\n")
    assert tree_status(Workspace(root)) == TreeStatus(None, (), ("a.txt",))


def test_a_status_started_early_gives_the_tree_as_it_was_asked(repo: Path) -> None:
    pending = Workspace(repo).start_status()
    write(repo, "late.py", "x\n")  # may or may not be seen: git was already looking
    found = pending.result()
    assert found.head == git(repo, "rev-parse", "HEAD").strip()
    assert found.tracked == ()
    pending.close()  # waiting twice is harmless


def test_a_status_started_from_a_subfolder_names_paths_from_the_top(repo: Path) -> None:
    write(repo, "src/app.py", "edited\n")
    write(repo, "docs/new.md", "x\n")
    found = start_status(repo / "src").result()
    assert found == TreeStatus(
        git(repo, "rev-parse", "HEAD").strip(), ("src/app.py",), ("docs/new.md",)
    )


def test_a_failed_status_is_a_git_error(repo: Path) -> None:
    write(repo, ".git/index", "not an index")
    with pytest.raises(GitError, match=r"git status failed .*Is the repository healthy"):
        tree_status(Workspace(repo))


# -- commit --------------------------------------------------------------------------------


def test_commit_keeps_the_message_bytes_and_its_trailers(repo: Path, tmp_path: Path) -> None:
    message = (
        "memento: complete T-101 Do it  \n\n\n# not a comment\n\n"
        "Memento-Task: T-101\nMemento-Tick: 12\n"
    )
    write(repo, "src/app.py", "x\n")
    sha = Workspace(repo).commit(message)
    assert sha == git(repo, "rev-parse", "HEAD").strip()
    raw = git(repo, "cat-file", "commit", sha)
    assert raw.split("\n\n", 1)[1] == message
    body = write(tmp_path, "body.txt", git(repo, "log", "-1", "--format=%B"))
    assert git(repo, "interpret-trailers", "--parse", str(body)) == (
        "Memento-Task: T-101\nMemento-Tick: 12\n"
    )


def test_commit_of_everything_takes_edits_additions_and_deletions(repo: Path) -> None:
    write(repo, "src/app.py", "x\n")
    write(repo, "new/file.py", "x\n")
    (repo / "logo.bin").unlink()
    Workspace(repo).commit("everything")
    assert git(repo, "show", "--name-status", "--format=", "HEAD").splitlines() == [
        "D\tlogo.bin",
        "A\tnew/file.py",
        "M\tsrc/app.py",
    ]
    assert status(repo) == ""


def test_commit_of_given_paths_leaves_everything_else_as_it_was(repo: Path) -> None:
    write(repo, "src/app.py", "mine\n")
    write(repo, "README.md", "not mine\n")
    write(repo, "wanted.txt", "mine\n")
    write(repo, "staged-by-someone.txt", "not mine\n")
    git(repo, "add", "staged-by-someone.txt")
    write(repo, "unwanted.txt", "not mine\n")

    Workspace(repo).commit("some", ["src/app.py", "wanted.txt"])

    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == [
        "src/app.py",
        "wanted.txt",
    ]
    assert sorted(status(repo).splitlines()) == [
        " M README.md",
        "?? unwanted.txt",
        "A  staged-by-someone.txt",
    ]


def test_commit_of_given_paths_takes_deletions_and_both_ends_of_a_rename(repo: Path) -> None:
    git(repo, "mv", "src/app.py", "src/main.py")
    (repo / "logo.bin").rename(repo / "assets-logo.bin")  # moved without telling git
    (repo / "README.md").unlink()
    paths = ["src/main.py", "src/app.py", "assets-logo.bin", "logo.bin", "README.md"]
    Workspace(repo).commit("moves", paths)
    assert sorted(git(repo, "show", "-M", "--name-status", "--format=", "HEAD").splitlines()) == [
        "D\tREADME.md",
        "R100\tlogo.bin\tassets-logo.bin",
        "R100\tsrc/app.py\tsrc/main.py",
    ]
    assert status(repo) == ""


def test_commit_paths_are_names_not_patterns_or_pathspec_magic(repo: Path) -> None:
    names = [":!README.md", "[ab].txt", "with space ü.txt"]  # ":!x" is git for "all but x"
    for name in names:
        write(repo, name, "literal\n")
    write(repo, "a.txt", "matches the pattern [ab].txt\n")
    write(repo, "src/app.py", "not named\n")
    Workspace(repo).commit("literal", names)
    assert git(repo, "show", "--name-only", "--format=", "-z", "HEAD").split("\0") == [
        *names,
        "",
    ]


def test_commit_runs_no_hooks_and_never_signs(repo: Path) -> None:
    hooks = repo / ".git/hooks"
    for name in ("pre-commit", "commit-msg", "prepare-commit-msg", "post-commit"):
        hook = write(hooks, name, f"#!/bin/sh\ntouch {repo / ('ran-' + name)}\nexit 1\n")
        make_executable(hook)
    git(repo, "config", "commit.gpgsign", "true")
    git(repo, "config", "gpg.program", "false")  # signing would fail the commit
    write(repo, "src/app.py", "x\n")

    sha = Workspace(repo).commit("unhooked\n")

    assert git(repo, "log", "-1", "--format=%B", sha) == "unhooked\n\n"
    assert "gpgsig" not in git(repo, "cat-file", "commit", sha)
    assert list(repo.glob("ran-*")) == []


def test_commit_of_paths_git_knows_takes_them_from_the_work_tree(repo: Path) -> None:
    write(repo, "src/app.py", "edited\n")
    (repo / "README.md").unlink()
    write(repo, "untouched.txt", "left alone\n")
    sha = Workspace(repo).commit("known", ["src/app.py", "README.md"], new=[])
    assert sha == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "show", "--name-status", "--format=", sha).split() == [
        "D",
        "README.md",
        "M",
        "src/app.py",
    ]
    assert "untouched.txt" in status(repo)


def test_commit_stages_the_new_paths_it_is_told_of(repo: Path) -> None:
    write(repo, "fresh.py", "x\n")
    write(repo, "src/app.py", "edited\n")
    sha = Workspace(repo).commit("new", ["fresh.py", "src/app.py"], new=["fresh.py"])
    assert git(repo, "show", "--name-status", "--format=", sha).split() == [
        "A",
        "fresh.py",
        "M",
        "src/app.py",
    ]


def test_commit_stages_a_new_path_it_was_not_told_of_and_still_commits(repo: Path) -> None:
    write(repo, "fresh.py", "x\n")
    sha = Workspace(repo).commit("surprise", ["fresh.py"], new=[])
    assert git(repo, "show", "--name-only", "--format=", sha).split() == ["fresh.py"]
    assert status(repo) == ""


def test_commit_returns_the_new_head_with_packed_refs_and_on_a_detached_head(
    repo: Path,
) -> None:
    git(repo, "pack-refs", "--all")
    write(repo, "src/app.py", "one\n")
    sha = Workspace(repo).commit("packed", ["src/app.py"])
    assert sha == git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    write(repo, "src/app.py", "two\n")
    detached = Workspace(repo).commit("detached", ["src/app.py"])
    assert detached == git(repo, "rev-parse", "HEAD").strip() != sha


def test_commit_uses_the_repository_identity(repo: Path) -> None:
    git(repo, "config", "user.name", "Ada Lovelace")
    git(repo, "config", "user.email", "ada@example.com")
    write(repo, "src/app.py", "x\n")
    sha = Workspace(repo).commit("mine")
    assert git(repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>", sha) == (
        "Ada Lovelace <ada@example.com> / Ada Lovelace <ada@example.com>\n"
    )


def test_commit_uses_the_global_identity(tmp_path: Path, isolated_git: Path) -> None:
    write(isolated_git, ".gitconfig", "[user]\n\tname = Global Person\n\temail = g@example.com\n")
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "a.txt", "x\n")
    sha = Workspace(root).commit("global")
    assert git(root, "log", "-1", "--format=%an <%ae>", sha) == "Global Person <g@example.com>\n"


def test_commit_falls_back_to_memento_when_no_identity_is_configured(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    assert git(root, "config", "--list", "--show-origin").count("user.") == 0
    write(root, "a.txt", "x\n")
    sha = Workspace(root).commit("first")
    assert git(root, "log", "-1", "--format=%an <%ae> / %cn <%ce>", sha) == (
        "memento <memento@localhost> / memento <memento@localhost>\n"
    )


def test_commit_with_nothing_to_commit_is_a_user_error(repo: Path) -> None:
    with pytest.raises(UserError, match=r"git commit failed .*Is the repository healthy"):
        Workspace(repo).commit("empty")


def test_a_stale_index_lock_becomes_a_user_error_naming_it(repo: Path) -> None:
    write(repo, ".git/index.lock", "")
    write(repo, "src/app.py", "x\n")
    with pytest.raises(UserError, match=r"git add failed .*index\.lock.*`git status`"):
        Workspace(repo).commit("locked")


# -- reset_soft ----------------------------------------------------------------------------


def test_reset_soft_undoes_the_agents_commit_and_keeps_its_change(repo: Path) -> None:
    workspace = Workspace(repo)
    before = workspace.head()
    assert before is not None
    write(repo, "src/app.py", "agent\n")
    commit_all(repo, "the agent committed")
    assert workspace.head() != before

    workspace.reset_soft(before)

    assert workspace.head() == before
    assert (repo / "src/app.py").read_text() == "agent\n"
    assert workspace.changes() == [FileChange("src/app.py", "modified", 1, 3, False)]


def test_reset_soft_to_an_unknown_commit_is_a_user_error(repo: Path) -> None:
    with pytest.raises(UserError, match=r"git reset failed .*Is the repository healthy"):
        Workspace(repo).reset_soft("0" * 40)


# -- git_fingerprint -----------------------------------------------------------------------


def test_the_fingerprint_covers_config_hooks_and_info(repo: Path) -> None:
    fingerprint = git_fingerprint(Workspace(repo))
    assert "config" in fingerprint
    assert "info/exclude" in fingerprint
    assert all(len(digest) == 64 for digest in fingerprint.values())


def test_the_fingerprint_ignores_commits_and_memento_scratch_files(repo: Path) -> None:
    workspace = Workspace(repo)
    before = git_fingerprint(workspace)
    write(repo, ".git/memento/running.json", "{}")
    write(repo, "src/app.py", "x\n")
    workspace.commit("ordinary work")
    assert git_fingerprint(workspace) == before


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(
            lambda repo: write(repo, ".git/hooks/pre-commit", "#!/bin/sh\n"), id="new-hook"
        ),
        pytest.param(
            lambda repo: (repo / ".git/hooks/pre-push.sample").rename(repo / ".git/hooks/pre-push"),
            id="sample-hook-enabled",
        ),
        pytest.param(lambda repo: git(repo, "config", "core.pager", "evil"), id="config"),
        pytest.param(
            lambda repo: write(repo, ".git/info/attributes", "* filter=evil\n"), id="info"
        ),
    ],
)
def test_the_fingerprint_changes_when_git_internals_are_tampered_with(
    repo: Path, tamper: Callable[[Path], object]
) -> None:
    workspace = Workspace(repo)
    before = git_fingerprint(workspace)
    tamper(repo)
    assert git_fingerprint(workspace) != before


def test_the_fingerprint_changes_when_a_hook_is_made_executable(repo: Path) -> None:
    hook = write(repo, ".git/hooks/post-checkout", "#!/bin/sh\n")
    hook.chmod(0o644)
    workspace = Workspace(repo)
    before = git_fingerprint(workspace)
    make_executable(hook)
    assert git_fingerprint(workspace) != before


def test_init_repository_makes_a_repository_whose_commits_need_no_identity(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "new"
    folder.mkdir()
    write(folder, "a.txt", "a\n")

    workspace = init_repository(folder)
    assert workspace.commit_count() == 0
    sha = workspace.commit("first\n")

    assert workspace.root.resolve() == folder.resolve()
    assert git(folder, "rev-parse", "HEAD").strip() == sha
    assert git(folder, "log", "--format=%an <%ae>|%s").strip() == (
        "memento <memento@localhost>|first"
    )
    assert workspace.commit_count() == 1


def test_init_repository_in_a_missing_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such folder"):
        init_repository(tmp_path / "missing")


@pytest.mark.parametrize("maintenance", [True, False])
def test_a_commit_runs_gits_automatic_maintenance_only_when_asked(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, maintenance: bool
) -> None:
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    write(repo, "a.txt", "changed\n")

    Workspace(repo).commit("change a", ["a.txt"], maintenance=maintenance)

    started = [line for line in trace.read_text().splitlines() if '"child_start"' in line]
    assert any('"maintenance"' in line for line in started) is maintenance
