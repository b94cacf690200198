"""The memento branch on a shared remote, against real repositories in temporary folders.

A bare repository is ``origin``; the "runner" clone is where the action runs (its identity is
the GitHub Actions bot); the "human" clone is someone else pushing to the same branch. The
tests read the outcome back with the git command line: branches, logs, raw commits, files.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memento_gh.errors import UserError
from memento_gh.gitrun import GitError
from memento_gh.remote import (
    BACKOFF_BASE,
    BACKOFF_CAP,
    BOT_EMAIL,
    BOT_NAME,
    PushResult,
    jittered_backoff,
    prepare_branch,
    push,
    remote_auth_env,
    use_bot_identity,
)
from memento_gh.workspace import Workspace
from testing.repos import GitHttpServer, bare_repo, clone, commit_all, git, git_shim, write

TOKEN = "ghs_S3cretT0kenForTheTests000000000000"
HEADER = "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
PLAN = (
    "# MASTER_PLAN: Shop\n\n## Phase 1: Foundation\n\n"
    "- [ ] `T-101` [MODULE:db] Set up the schema\n"
    "- [ ] `T-102` [MODULE:auth] JWT tokens\n"
)
TICK_MESSAGE = "memento: complete T-101 Set up the schema\n\nMemento-Task: T-101\nMemento-Tick: 7\n"


pytestmark = pytest.mark.usefixtures("isolated_git")


def sha(repo: Path, ref: str) -> str:
    return git(repo, "rev-parse", ref).strip()


def remote_sha(origin: Path, branch: str) -> str | None:
    found = git(origin, "for-each-ref", "--format=%(objectname)", f"refs/heads/{branch}")
    return found.strip() or None


def subjects(repo: Path, ref: str) -> list[str]:
    return git(repo, "log", "--first-parent", "--format=%s", ref).splitlines()


def raw_commit(repo: Path, ref: str) -> tuple[str, str, str]:
    """(author line, committer name and email, message) exactly as git stores them."""
    headers, _, message = git(repo, "cat-file", "commit", ref).partition("\n\n")
    fields = dict(line.split(" ", 1) for line in headers.splitlines())
    committer = fields["committer"].rsplit(" ", 2)[0]
    return fields["author"], committer, message


def rebase_in_progress(repo: Path) -> bool:
    return any(
        (repo / git(repo, "rev-parse", "--git-path", name).strip()).exists()
        for name in ("rebase-merge", "rebase-apply")
    )


def use_shim(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def logged_argv(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


class Sleeps:
    """A ``sleep`` that records what it was asked to wait instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def tenths(attempt: int) -> float:
    return attempt / 10


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin whose default branch ``main`` holds the plan."""
    origin = bare_repo(tmp_path / "origin.git")
    seed = clone(origin, tmp_path / "seed")
    write(seed, "docs/MASTER_PLAN.md", PLAN)
    write(seed, "README.md", "# shop\n")
    commit_all(seed, "Add the plan")
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    return origin


@pytest.fixture
def runner(origin: Path, tmp_path: Path) -> Path:
    return clone(origin, tmp_path / "runner", name=BOT_NAME, email=BOT_EMAIL)


@pytest.fixture
def human(origin: Path, tmp_path: Path) -> Path:
    return clone(origin, tmp_path / "human", name="Hana Human", email="hana@example.com")


def start_memento(human: Path, message: str = "memento: claim T-101") -> str:
    """The human side creates ``memento`` on the remote with one commit on top of main."""
    git(human, "checkout", "-q", "-B", "memento", "origin/main")
    return human_commit(human, message)


def human_commit(human: Path, message: str, edit: Callable[[Path], None] | None = None) -> str:
    """Commit (an edit, or an empty commit) in the human clone and push it to memento."""
    if edit is not None:
        edit(human)
    head = commit_all(human, message)
    git(human, "push", "-q", "origin", "HEAD:refs/heads/memento")
    return head


def tick_commit(runner: Path, done: str = "T-101") -> str:
    """What a successful tick leaves in the runner: the plan edited, one commit with trailers,
    made through the workspace adapter as the tick makes it."""
    plan = runner / "docs/MASTER_PLAN.md"
    text = plan.read_text(encoding="utf-8").replace(f"- [ ] `{done}`", f"- [x] `{done}`")
    plan.write_text(text, encoding="utf-8")
    return Workspace(runner).commit(TICK_MESSAGE.replace("T-101", done))


def block_t101(root: Path) -> None:
    """The human marks T-101 blocked: the same line a tick marks done."""
    plan = root / "docs/MASTER_PLAN.md"
    plan.write_text(plan.read_text().replace("- [ ] `T-101`", "- [!] `T-101`"))


# -- remote_auth_env ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://github.com/shop/shop.git", "http.https://github.com/shop/shop.git.extraheader"),
        (
            "https://x-access-token:old@github.com/shop/shop",
            "http.https://github.com/shop/shop.extraheader",
        ),
        ("HTTP://127.0.0.1:8080/shop.git", "http.http://127.0.0.1:8080/shop.git.extraheader"),
        ("https://ghe.example.com", "http.https://ghe.example.com/.extraheader"),
    ],
)
def test_an_http_remote_gets_the_token_as_a_header_for_its_url(url: str, key: str) -> None:
    env = remote_auth_env(TOKEN, url)

    assert env == {
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_0": key,
        "GIT_CONFIG_VALUE_0": "",
        "GIT_CONFIG_KEY_1": key,
        "GIT_CONFIG_VALUE_1": HEADER,
        "GIT_CONFIG_KEY_2": "credential.helper",
        "GIT_CONFIG_VALUE_2": "",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
    }
    encoded = env["GIT_CONFIG_VALUE_1"].split()[-1]
    assert base64.b64decode(encoded).decode() == f"x-access-token:{TOKEN}"


@pytest.mark.parametrize(
    ("token", "url"),
    [
        (TOKEN, "/srv/git/shop.git"),
        (TOKEN, "../origin.git"),
        (TOKEN, "file:///srv/git/shop.git"),
        (TOKEN, "git@github.com:shop/shop.git"),
        (TOKEN, "ssh://git@github.com/shop/shop.git"),
        (None, "https://github.com/shop/shop.git"),
        ("", "https://github.com/shop/shop.git"),
    ],
)
def test_no_header_without_a_token_or_for_a_remote_that_is_not_http(
    token: str | None, url: str
) -> None:
    assert remote_auth_env(token, url) == {}


def test_git_itself_reads_the_header_from_the_environment(runner: Path) -> None:
    url = "https://github.com/shop/shop.git"
    git(runner, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic stale")
    git(runner, "config", "credential.helper", "store")

    done = subprocess.run(
        ["git", "config", "--get-regexp", r"^(http\..*\.extraheader|credential\.helper)$"],
        cwd=runner,
        env={**os.environ, **remote_auth_env(TOKEN, url)},
        capture_output=True,
        text=True,
        check=True,
    )

    # in the order git applies them: the stale header, then the empty value that drops it
    # and ours; the helper list is emptied after the configured helper
    assert done.stdout.splitlines() == [
        "http.https://github.com/.extraheader AUTHORIZATION: basic stale",
        "credential.helper store",
        f"http.{url}.extraheader ",
        f"http.{url}.extraheader {HEADER}",
        "credential.helper ",
    ]
    assert TOKEN not in (runner / ".git/config").read_text(encoding="utf-8")


# -- the bot identity -----------------------------------------------------------------------


def test_a_runner_without_an_identity_commits_as_the_bot(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, "a.txt", "a\n")

    use_bot_identity(repo)
    head = Workspace(repo).commit("first")

    assert git(repo, "config", "--local", "user.name").strip() == BOT_NAME
    assert git(repo, "config", "--local", "user.email").strip() == BOT_EMAIL
    assert raw_commit(repo, head)[0].startswith(f"{BOT_NAME} <{BOT_EMAIL}> ")


def test_the_checkouts_own_identity_is_kept_a_machine_wide_one_is_not(
    tmp_path: Path, isolated_git: Path
) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    git(partial, "init", "-q")
    git(partial, "config", "user.name", "Ann Owner")
    use_bot_identity(partial)

    global_identity = tmp_path / "global"
    global_identity.mkdir()
    git(global_identity, "init", "-q")
    write(isolated_git, ".gitconfig", "[user]\n\tname = Ann\n\temail = ann@example.com\n")
    use_bot_identity(global_identity)

    assert git(partial, "config", "--local", "user.name").strip() == "Ann Owner"
    assert git(partial, "config", "--local", "user.email").strip() == BOT_EMAIL
    # a self-hosted runner's global identity is its owner's: the action's commits are the bot's
    assert git(global_identity, "config", "--local", "user.name").strip() == BOT_NAME
    assert git(global_identity, "config", "--local", "user.email").strip() == BOT_EMAIL


# -- prepare_branch -------------------------------------------------------------------------


def test_a_missing_branch_is_created_from_the_default_branch(origin: Path, runner: Path) -> None:
    assert prepare_branch(runner) == "created memento from origin/main"

    assert git(runner, "symbolic-ref", "--short", "HEAD").strip() == "memento"
    assert sha(runner, "HEAD") == remote_sha(origin, "main")
    assert remote_sha(origin, "memento") is None  # created locally; the push publishes it


def test_the_default_branch_is_the_one_the_remote_names_now(
    origin: Path, runner: Path, human: Path
) -> None:
    git(human, "checkout", "-q", "-b", "trunk")
    trunk = commit_all(human, "trunk moves on")
    git(human, "push", "-q", "origin", "trunk")
    git(origin, "symbolic-ref", "HEAD", "refs/heads/trunk")  # renamed after runner cloned

    assert prepare_branch(runner) == "created memento from origin/trunk"
    assert sha(runner, "HEAD") == trunk


def test_a_missing_branch_is_created_from_a_named_base(
    origin: Path, runner: Path, human: Path
) -> None:
    git(human, "checkout", "-q", "-b", "release")
    release = commit_all(human, "release work")
    git(human, "push", "-q", "origin", "release")

    assert prepare_branch(runner, branch="bot", base="release") == "created bot from origin/release"
    assert git(runner, "symbolic-ref", "--short", "HEAD").strip() == "bot"
    assert sha(runner, "HEAD") == release


def test_an_existing_branch_is_checked_out_as_the_remote_has_it(
    origin: Path, runner: Path, human: Path
) -> None:
    remote_head = start_memento(human)
    git(runner, "checkout", "-q", "-b", "memento")
    stray = commit_all(runner, "left over from an earlier run")

    assert prepare_branch(runner) == f"checked out memento at {remote_head[:7]}"
    assert git(runner, "symbolic-ref", "--short", "HEAD").strip() == "memento"
    assert sha(runner, "HEAD") == remote_head
    assert git(runner, "branch", "--contains", stray).strip() == ""


def test_a_missing_base_branch_is_a_clear_error(runner: Path) -> None:
    with pytest.raises(UserError, match=r"the base branch 'develop' does not exist on origin"):
        prepare_branch(runner, base="develop")
    assert git(runner, "symbolic-ref", "--short", "HEAD").strip() == "main"


def test_a_missing_remote_is_a_clear_error(runner: Path) -> None:
    with pytest.raises(UserError, match=r"no remote named 'upstream'; add it with `git remote add"):
        prepare_branch(runner, remote="upstream")
    with pytest.raises(UserError, match=r"no remote named 'upstream'"):
        push(runner, remote="upstream")


def test_an_empty_remote_without_a_base_is_a_clear_error(tmp_path: Path) -> None:
    empty = bare_repo(tmp_path / "empty.git")
    runner = clone(empty, tmp_path / "runner")
    with pytest.raises(UserError, match=r"origin \(.*\) has no default branch \(is it empty\?\)"):
        prepare_branch(runner)


def test_an_unreachable_remote_names_it_and_never_shows_the_token(
    runner: Path, tmp_path: Path
) -> None:
    gone = f"https://{TOKEN}@127.0.0.1:9/{TOKEN}/shop.git"  # port 9: nothing listens
    git(runner, "remote", "set-url", "origin", gone)
    tick_commit(runner)

    for attempt in (lambda: prepare_branch(runner, token=TOKEN), lambda: push(runner, token=TOKEN)):
        with pytest.raises(GitError) as raised:
            attempt()
        message = str(raised.value)
        assert "origin (https://127.0.0.1:9/***/shop.git)" in message
        assert "Check the remote's URL" in message
        assert TOKEN not in message


# -- push -----------------------------------------------------------------------------------


def test_nothing_to_push(origin: Path, runner: Path, human: Path) -> None:
    start_memento(human)
    prepare_branch(runner)

    result = push(runner, sleep=Sleeps())

    assert result == PushResult(True, 0, False, sha(runner, "HEAD"), "")


def test_a_new_branch_is_pushed_in_one_attempt(origin: Path, runner: Path) -> None:
    prepare_branch(runner)
    head = tick_commit(runner)

    assert push(runner, sleep=Sleeps()) == PushResult(True, 1, False, head, "")
    assert remote_sha(origin, "memento") == head
    assert sha(runner, "refs/remotes/origin/memento") == head


def test_a_push_race_ends_with_both_commits_on_the_branch_in_order(
    origin: Path, runner: Path, human: Path
) -> None:
    start_memento(human)
    prepare_branch(runner)
    ours = tick_commit(runner)
    theirs = human_commit(
        human, "Add a note for T-102", lambda root: write(root, "docs/HUMAN_NOTES.md", "# n\n")
    )
    sleeps = Sleeps()

    result = push(runner, backoff=tenths, sleep=sleeps)

    assert result.pushed
    assert result.attempts == 2
    assert result.rebased
    assert result.reason == ""
    assert sleeps.calls == [0.1]
    assert result.head == sha(runner, "HEAD") == remote_sha(origin, "memento")
    assert subjects(origin, "memento")[:3] == [
        "memento: complete T-101 Set up the schema",
        "Add a note for T-102",
        "memento: claim T-101",
    ]
    assert sha(origin, "memento~1") == theirs
    author, committer, message = raw_commit(origin, "memento")
    assert (author, message) == raw_commit(runner, ours)[::2]  # same author, date, bytes
    assert message == TICK_MESSAGE
    assert committer == f"{BOT_NAME} <{BOT_EMAIL}>"
    assert raw_commit(origin, "memento~1")[0].startswith("Test Person <test@example.com> ")
    assert git(runner, "status", "--porcelain") == ""


def test_a_runner_without_an_identity_wins_a_race_as_the_bot(
    origin: Path, runner: Path, human: Path
) -> None:
    git(runner, "config", "--unset", "user.name")
    git(runner, "config", "--unset", "user.email")
    start_memento(human)
    prepare_branch(runner)
    tick_commit(runner)  # the workspace's fallback identity
    human_commit(human, "meanwhile")

    result = push(runner, backoff=tenths, sleep=Sleeps())

    assert (result.pushed, result.rebased) == (True, True)
    author, committer, _ = raw_commit(origin, "memento")
    assert author.startswith("memento <memento@localhost> ")
    assert committer == f"{BOT_NAME} <{BOT_EMAIL}>"


def test_a_rebase_conflict_leaves_the_local_branch_as_it_was(
    origin: Path, runner: Path, human: Path
) -> None:
    start_memento(human)
    prepare_branch(runner)
    ours = tick_commit(runner)  # `T-101` [ ] -> [x]
    theirs = human_commit(human, "Block T-101", block_t101)
    ours_plan = (runner / "docs/MASTER_PLAN.md").read_text()
    sleeps = Sleeps()

    result = push(runner, backoff=tenths, sleep=sleeps)

    assert (result.pushed, result.attempts, result.rebased, result.head) == (False, 1, False, ours)
    assert "docs/MASTER_PLAN.md" in result.reason
    assert "memento: complete T-101 Set up the schema" in result.reason
    assert "nothing was pushed" in result.reason
    assert sleeps.calls == [0.1]
    assert sha(runner, "HEAD") == ours
    assert git(runner, "symbolic-ref", "--short", "HEAD").strip() == "memento"
    assert not rebase_in_progress(runner)
    assert git(runner, "status", "--porcelain") == ""
    assert (runner / "docs/MASTER_PLAN.md").read_text() == ours_plan
    assert remote_sha(origin, "memento") == theirs


def test_a_conflict_after_an_earlier_rebase_puts_the_branch_back_where_push_found_it(
    origin: Path, runner: Path, human: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_memento(human)
    prepare_branch(runner)
    ours = tick_commit(runner)
    use_shim(git_shim(tmp_path / "bin", tmp_path / "argv.log", race_from=human).parent, monkeypatch)
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the second wait: someone blocks T-101 meanwhile
        waits.append(seconds)
        if len(waits) == 2:
            human_commit(human, "Block T-101", block_t101)

    result = push(runner, attempts=4, backoff=tenths, sleep=sleep)

    assert (result.pushed, result.attempts, result.rebased, result.head) == (False, 2, False, ours)
    assert "conflicts with origin/memento" in result.reason
    assert "docs/MASTER_PLAN.md" in result.reason
    assert waits == [0.1, 0.2]
    assert sha(runner, "HEAD") == ours
    assert git(runner, "symbolic-ref", "--short", "HEAD").strip() == "memento"
    assert not rebase_in_progress(runner)
    assert git(runner, "status", "--porcelain") == ""


def test_a_remote_that_refuses_the_branch_is_a_clear_error(origin: Path, runner: Path) -> None:
    hook = origin / "hooks/pre-receive"
    hook.write_text("#!/bin/sh\necho 'memento is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    prepare_branch(runner)
    head = tick_commit(runner)

    with pytest.raises(UserError, match=r"refused the push to memento: .*hook declined") as raised:
        push(runner, sleep=Sleeps())

    assert "branch protection rules" in str(raised.value)
    assert sha(runner, "HEAD") == head
    assert remote_sha(origin, "memento") is None


def test_a_branch_that_keeps_moving_is_given_up_after_the_attempts(
    origin: Path, runner: Path, human: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_memento(human)
    prepare_branch(runner)
    ours = tick_commit(runner)
    log = tmp_path / "argv.log"
    use_shim(git_shim(tmp_path / "bin", log, race_from=human).parent, monkeypatch)
    sleeps = Sleeps()

    result = push(runner, attempts=3, backoff=lambda attempt: 2.0**attempt, sleep=sleeps)

    assert (result.pushed, result.attempts, result.rebased) == (False, 3, True)
    assert "rejected 3 times (fetch first)" in result.reason
    assert sleeps.calls == [2.0, 4.0]
    assert sum("push" in argv for argv in logged_argv(log)) == 3
    assert subjects(origin, "memento")[:4] == ["race 3", "race 2", "race 1", "memento: claim T-101"]
    # the local commit, rebased onto what the last fetch saw, waits for the next run
    assert result.head == sha(runner, "HEAD") != ours
    assert subjects(runner, "HEAD")[:2] == ["memento: complete T-101 Set up the schema", "race 2"]


def test_a_shallow_checkout_creates_and_pushes_the_branch(origin: Path, tmp_path: Path) -> None:
    runner = clone(f"file://{origin}", tmp_path / "shallow", "--depth", "1")
    assert git(runner, "rev-parse", "--is-shallow-repository").strip() == "true"

    assert prepare_branch(runner) == "created memento from origin/main"
    head = tick_commit(runner)

    assert push(runner, sleep=Sleeps()) == PushResult(True, 1, False, head, "")
    assert sha(origin, "memento~1") == remote_sha(origin, "main")


def test_a_shallow_checkout_joins_an_older_branch_and_wins_a_race(
    origin: Path, human: Path, tmp_path: Path
) -> None:
    start_memento(human)  # from main as it was
    git(human, "checkout", "-q", "main")
    for number in range(3):
        commit_all(human, f"main moves on {number}")
    git(human, "push", "-q", "origin", "main")
    git(human, "checkout", "-q", "memento")
    runner = clone(f"file://{origin}", tmp_path / "shallow", "--depth", "1")

    assert prepare_branch(runner).startswith("checked out memento at ")
    tick_commit(runner)
    human_commit(human, "meanwhile, a note")

    result = push(runner, backoff=tenths, sleep=Sleeps())

    assert (result.pushed, result.attempts, result.rebased) == (True, 2, True)
    assert subjects(origin, "memento")[:3] == [
        "memento: complete T-101 Set up the schema",
        "meanwhile, a note",
        "memento: claim T-101",
    ]


# -- the token over real HTTP ---------------------------------------------------------------


@pytest.fixture
def served(origin: Path) -> Iterator[GitHttpServer]:
    git(origin, "config", "http.receivepack", "true")
    with GitHttpServer(origin.parent, TOKEN) as server:
        yield server


def test_the_token_reaches_the_server_and_nowhere_else(
    runner: Path,
    origin: Path,
    served: GitHttpServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = served.url(origin.name)
    git(runner, "remote", "set-url", "origin", url)
    # what a `persist-credentials: true` checkout and a user's helper would leave behind
    host = url.rsplit("/", 1)[0] + "/"
    git(runner, "config", f"http.{host}.extraheader", "AUTHORIZATION: basic c3RhbGU6dG9rZW4=")
    asked = tmp_path / "helper-was-asked"
    git(runner, "config", "credential.helper", f"!touch {asked}; echo")
    # a GIT_CONFIG_* setting of the caller's own still applies next to ours
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "http.userAgent")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "memento-test-agent")
    log = tmp_path / "argv.log"
    use_shim(git_shim(tmp_path / "bin", log).parent, monkeypatch)

    assert prepare_branch(runner, token=TOKEN) == "created memento from origin/main"
    head = tick_commit(runner)
    assert push(runner, token=TOKEN, sleep=Sleeps()) == PushResult(True, 1, False, head, "")

    assert remote_sha(origin, "memento") == head
    assert len(served.requests) >= 4  # ls-remote, fetch, push: each its own requests
    for request in served.requests:
        assert request.get_all("Authorization") == [HEADER.split(": ", 1)[1]]
        assert request["User-Agent"] == "memento-test-agent"
    argv = logged_argv(log)
    assert any("push" in args for args in argv)
    encoded = HEADER.split()[-1]
    assert not [args for args in argv if any(TOKEN in a or encoded in a for a in args)]
    for path in (runner / ".git").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert TOKEN.encode() not in data, path
            assert encoded.encode() not in data, path
    assert not asked.exists()


def test_a_refused_token_is_a_clear_error_without_the_token(
    runner: Path, origin: Path, served: GitHttpServer, tmp_path: Path
) -> None:
    wrong = "ghs_WrongTokenWrongTokenWrongToken0000"
    git(runner, "remote", "set-url", "origin", served.url(origin.name))
    asked = tmp_path / "helper-was-asked"
    git(runner, "config", "credential.helper", f"!touch {asked}; echo")

    with pytest.raises(UserError, match=r"the remote refused the credentials") as raised:
        prepare_branch(runner, token=wrong)

    assert "could not list the branches of origin (http://127.0.0.1:" in str(raised.value)
    assert wrong not in str(raised.value)
    assert not asked.exists()
    assert served.requests  # it did ask, with the wrong header


# -- the backoff ----------------------------------------------------------------------------


def test_the_backoff_grows_exponentially_within_bounds_and_jitters() -> None:
    for attempt in range(1, 12):
        window = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1))
        waits = [jittered_backoff(attempt) for _ in range(50)]
        assert all(window / 2 <= wait <= window for wait in waits)
        assert len(set(waits)) > 1
    assert jittered_backoff(30) <= BACKOFF_CAP


def test_a_shallow_checkout_rebases_onto_a_branch_started_from_an_older_main(
    origin: Path, human: Path, tmp_path: Path
) -> None:
    # two runs create memento at once: ours from main as it is now, in a depth-1 clone whose
    # history stops there; theirs from main as it was, so the fork point is beyond our depth
    older_main = sha(human, "origin/main")
    git(human, "checkout", "-q", "main")
    write(human, "src/app.py", "print('hello')\n")
    commit_all(human, "Add the app")
    git(human, "push", "-q", "origin", "main")
    runner = clone(f"file://{origin}", tmp_path / "shallow", "--depth", "1")
    prepare_branch(runner)
    tick_commit(runner)
    git(human, "checkout", "-q", "-b", "memento", older_main)
    human_commit(human, "Retitle", lambda root: write(root, "README.md", "# the shop\n"))

    result = push(runner, backoff=tenths, sleep=Sleeps())

    assert (result.pushed, result.attempts, result.rebased) == (True, 2, True)
    assert subjects(origin, "memento") == [
        "memento: complete T-101 Set up the schema",
        "Add the app",
        "Retitle",
        "Add the plan",
    ]
    assert git(origin, "show", "memento:src/app.py") == "print('hello')\n"
    assert git(origin, "show", "memento:README.md") == "# the shop\n"
