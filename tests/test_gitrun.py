"""The one way memento runs git, against real repositories in temporary folders."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from memento_gh import gitrun
from memento_gh.errors import UserError
from memento_gh.gitrun import GitError
from testing.repos import commit_all, git, init_repo

pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    (root / "a.txt").write_text("a\n")
    commit_all(root, "base")
    return root


def plant(path: Path, marker: Path) -> None:
    """An executable script at ``path`` that leaves ``marker`` behind when it runs."""
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_run_gives_back_the_exit_code_and_both_streams(repo: Path) -> None:
    done = gitrun.run(repo, "rev-parse", "--verify", "no-such-ref")
    assert done.returncode != 0
    assert done.stdout == b""
    assert b"fatal:" in done.stderr


def test_check_gives_stdout_and_stdin_reaches_git(repo: Path) -> None:
    sha = gitrun.check(repo, "hash-object", "--stdin", stdin=b"a\n").decode().strip()
    assert sha == git(repo, "rev-parse", "HEAD:a.txt").strip()
    assert gitrun.check(repo, "cat-file", "blob", "HEAD:a.txt") == b"a\n"


def test_output_is_stdout_without_its_newline_or_empty_on_failure(repo: Path) -> None:
    assert gitrun.output(repo, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD").strip()
    assert gitrun.output(repo, "rev-parse", "--verify", "no-such-ref") == ""


def test_a_failure_names_the_command_the_folder_and_gits_first_fatal_line(
    repo: Path, tmp_path: Path
) -> None:
    # git says two fatal lines here; the first is the one that says what is wrong
    gone = tmp_path / "gone.git"
    with pytest.raises(GitError) as raised:
        gitrun.check(repo, "ls-remote", str(gone))
    assert str(raised.value) == (
        f"git ls-remote failed in {repo}: '{gone}' does not appear to be a git repository. "
        "Is the repository healthy (`git status`)?"
    )


def test_a_failure_skips_the_explanations_before_the_fatal_line(tmp_path: Path) -> None:
    root = tmp_path / "anonymous"
    root.mkdir()
    git(root, "init", "-q")  # no identity anywhere: git explains at length, then gives up
    with pytest.raises(GitError) as raised:
        gitrun.check(root, "commit", "--allow-empty", "-m", "x", config=["user.useConfigOnly=1"])
    assert str(raised.value) == (
        f"git commit failed in {root}: no email was given and auto-detection is disabled. "
        "Is the repository healthy (`git status`)?"
    )


def test_a_failure_without_fatal_lines_takes_the_first_line_of_stdout(repo: Path) -> None:
    with pytest.raises(GitError, match=r"git commit failed in .*: On branch main\. Is the"):
        gitrun.check(repo, "commit", "-q", "-m", "nothing to commit")


def test_config_settings_apply_to_the_one_command(repo: Path) -> None:
    assert gitrun.output(repo, "config", "memento.test", config=["memento.test=yes"]) == "yes"
    assert gitrun.output(repo, "config", "memento.test") == ""


def test_numbered_settings_in_env_count_after_those_already_set(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "memento.first")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "from the caller")
    extra = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "memento.second",
        "GIT_CONFIG_VALUE_0": "from memento",
        "GIT_TERMINAL_PROMPT": "0",
    }
    listing = gitrun.check(repo, "config", "--get-regexp", r"^memento\.", env=extra)
    assert listing.decode().splitlines() == [
        "memento.first from the caller",
        "memento.second from memento",
    ]
    assert os.environ["GIT_CONFIG_COUNT"] == "1"  # only git's environment has both


def test_no_hook_and_no_fsmonitor_command_ever_runs(repo: Path, tmp_path: Path) -> None:
    for name in ("pre-commit", "post-commit", "reference-transaction"):
        plant(repo / ".git/hooks" / name, tmp_path / f"ran-{name}")
    plant(tmp_path / "fsmonitor.sh", tmp_path / "ran-fsmonitor")
    git(repo, "config", "core.fsmonitor", str(tmp_path / "fsmonitor.sh"))
    (repo / "a.txt").write_text("changed\n")

    gitrun.check(repo, "status", "--porcelain")
    gitrun.check(repo, "commit", "-q", "-am", "unhooked")
    gitrun.start(repo, "status", "--porcelain").wait()

    assert sorted(path.name for path in tmp_path.glob("ran-*")) == []
    git(repo, "commit", "-q", "--allow-empty", "-m", "hooked")  # plain git runs them all
    assert sorted(path.name for path in tmp_path.glob("ran-*")) == [
        "ran-fsmonitor",
        "ran-post-commit",
        "ran-pre-commit",
        "ran-reference-transaction",
    ]


def test_pathspecs_are_literal_names(repo: Path) -> None:
    assert git(repo, "ls-files", "--", "*.txt") == "a.txt\n"  # a pattern to plain git
    assert gitrun.output(repo, "ls-files", "--", "*.txt") == ""  # no file has that name
    (repo / "*.txt").write_text("x\n")
    gitrun.check(repo, "add", "--", "*.txt")
    assert gitrun.output(repo, "diff", "--cached", "--name-only") == "*.txt"


def test_a_started_command_can_be_waited_for_twice(repo: Path) -> None:
    started = gitrun.start(repo, "rev-parse", "HEAD")
    first = started.wait()
    assert first.returncode == 0
    assert started.wait() == first


@pytest.mark.parametrize("start", [False, True])
def test_a_missing_folder_is_named(tmp_path: Path, start: bool) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(UserError, match=f"^{re.escape(str(missing))}: no such folder$"):
        gitrun.start(missing, "status") if start else gitrun.run(missing, "status")


def test_a_file_given_as_the_folder_is_named(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(UserError, match=f"^{re.escape(str(file))}: not a folder$"):
        gitrun.run(file, "status")


def test_no_git_on_path_says_to_install_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-bin"))
    with pytest.raises(UserError, match="git is not installed or not on PATH; install git"):
        gitrun.run(repo, "status")


def test_a_command_that_takes_too_long_is_killed_and_a_git_error(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = tmp_path / "bin" / "git"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GitError, match=r"git log failed in .*: no answer in 0\.2 seconds"):
        gitrun.run(repo, "log", timeout=0.2)


# -- the wall around the agent: no configuration of the user's, no credentials ---------------


def test_git_reads_no_configuration_or_attributes_file_of_the_users_own(
    repo: Path, tmp_path: Path, isolated_git: Path
) -> None:
    # what a hostile agent can write, as the same user, between two git commands of memento's
    filter = tmp_path / "filter.sh"
    filter.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran-filter'}\ncat\n")
    filter.chmod(0o755)
    (isolated_git / ".gitconfig").write_text(
        f'[filter "wall"]\n\tclean = {filter}\n\tsmudge = {filter}\n'
        f"[core]\n\tfsmonitor = {filter}\n\thooksPath = {tmp_path}\n"
    )
    (isolated_git / ".config/git").mkdir(parents=True)
    (isolated_git / ".config/git/attributes").write_text("* filter=wall\n")
    (repo / "a.txt").write_text("changed\n")

    gitrun.check(repo, "status", "--porcelain")
    gitrun.check(repo, "add", "a.txt")
    gitrun.check(repo, "checkout-index", "-f", "a.txt")

    assert not (tmp_path / "ran-filter").exists()
    assert gitrun.check(repo, "cat-file", "blob", ":a.txt") == b"changed\n"
    git(repo, "add", "--renormalize", "a.txt")  # the user's own git runs the filter
    assert (tmp_path / "ran-filter").exists()


def test_no_git_gets_a_token_and_only_network_commands_keep_the_ways_to_credentials(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GITHUB_TOKEN", "MEMENTO_GITHUB_TOKEN", "INPUT_GITHUB-TOKEN"):
        monkeypatch.setenv(name, "ghs_secret")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-kept")
    # a filter of the repository's own (git-lfs is one): it runs, and sees git's environment
    recorded = tmp_path / "filter-env"
    git(repo, "config", "filter.keep.clean", f"env > {recorded}; cat")
    (repo / ".git/info/attributes").write_text("*.txt filter=keep\n")
    (repo / "a.txt").write_text("changed\n")
    upload = tmp_path / "upload-pack.sh"
    upload.write_text(f'#!/bin/sh\nenv > {tmp_path / "network-env"}\nexec git-upload-pack "$@"\n')
    upload.chmod(0o755)

    gitrun.check(repo, "add", "a.txt")
    gitrun.check(repo, "ls-remote", f"--upload-pack={upload}", str(repo))

    local = recorded.read_text()
    network = (tmp_path / "network-env").read_text()
    assert "ghs_secret" not in local and "ghs_secret" not in network
    assert "SSH_AUTH_SOCK" not in local and "SSH_AUTH_SOCK=" in network
    assert "ANTHROPIC_API_KEY=sk-kept" in local


def test_user_settings_gives_every_file_of_the_users_in_gits_order(
    repo: Path, isolated_git: Path
) -> None:
    (isolated_git / ".gitconfig").write_text(
        '[user]\n\tname = Global Name\n[url "git@example.com:"]\n\tinsteadOf = https://example.com/\n'
    )
    git(repo, "config", "user.name", "Local Name")

    found = gitrun.user_settings(repo, r"^user\.name$|^url\.")

    assert found == [
        gitrun.Setting("global", "user.name", "Global Name"),
        gitrun.Setting("global", "url.git@example.com:.insteadof", "https://example.com/"),
        gitrun.Setting("local", "user.name", "Local Name"),
    ]
    assert gitrun.user_settings(repo, r"^no\.such$") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the repository to another user needs root")
@pytest.mark.timeout(60)
def test_a_repository_another_user_owns_works_where_the_users_own_config_trusts_it(
    repo: Path, tmp_path: Path, isolated_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a container job: the checkout belongs to the runner's user, actions/checkout added it
    # to safe.directory in the global file, and memento runs as root
    monkeypatch.setattr(gitrun, "_SAFE_FOLDERS", {}, raising=False)
    (isolated_git / ".gitconfig").write_text(
        f"[safe]\n\tdirectory = {repo}\n[core]\n\tfsmonitor = {tmp_path / 'absent'}\n"
    )
    for path in [repo, *repo.rglob("*")]:
        os.lchown(path, 4242, 4242)

    assert gitrun.check(repo, "rev-parse", "--show-toplevel").strip() == os.fsencode(repo)
    started = gitrun.start(repo, "status", "--porcelain")
    assert started.wait().returncode == 0
    assert gitrun.check(repo, "status", "--porcelain") == b""


@pytest.mark.timeout(30)
def test_reading_the_users_settings_never_hangs_on_a_fifo_for_a_gitconfig(
    repo: Path, isolated_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = b"[user]\n\tname = Kept Name\n"
    (isolated_git / ".gitconfig").write_bytes(kept)
    assert gitrun.global_config() == b"\n" + kept  # no XDG file, then ~/.gitconfig
    (isolated_git / ".gitconfig").unlink()
    os.mkfifo(isolated_git / ".gitconfig")  # whoever opens it to read waits for a writer
    monkeypatch.setattr(gitrun, "_SETTINGS_TIMEOUT", 0.5)

    assert gitrun.global_config() == b"\n"
    found = gitrun.user_settings(repo, r"^user\.name$", kept=kept)
    assert found[0] == gitrun.Setting("global", "user.name", "Kept Name")
    with pytest.raises(UserError, match=r"not a regular file.*replace it"):
        gitrun.user_settings(repo, r"^user\.name$")
