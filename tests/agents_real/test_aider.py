"""aider, for real: ``aider --message-file`` against the scripted Chat Completions API.

aider edits by answering with edit blocks (no tools), and has no shell of its own: its
``--test-cmd`` with ``--auto-test`` runs the verify after each edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.model_server import Fail, ModelServer, Say
from testing.real_agents import aider, run
from tests.agents_real.conftest import TASK, VERIFY, git, sent

pytestmark = pytest.mark.slow


def edit(path: str, text: str) -> str:
    """A SEARCH/REPLACE block (aider's ``diff`` edit format) that creates ``path``."""
    return f"{path}\n```\n<<<<<<< SEARCH\n=======\n{text}>>>>>>> REPLACE\n```\n"


@pytest.fixture
def prompt(tmp_path: Path) -> Path:
    path = tmp_path / "prompt.md"
    path.write_text(TASK.format(verify=VERIFY))
    return path


@pytest.mark.timeout(180)
def test_aider_writes_the_file_and_its_test_cmd_runs_the_verify(
    repo: Path, home: Path, prompt: Path
) -> None:
    with ModelServer([Say(edit("hello.txt", "hi\n"), 900, 40)]) as server:
        finished = run(aider(server.url, home, prompt, test_cmd=VERIFY), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert (repo / "hello.txt").read_text() == "hi\n"
    assert (repo / "verify.marker").read_text() == "verified\n"
    assert len(server.turns) == 1  # the verify passed: nothing to send back
    assert sent(server.turns, "Create hello.txt containing the line")
    assert server.turns[0].body["model"] == "gpt-4.1"
    assert server.outbound == []
    assert "Git repo: .git with 1 files" in finished.stdout
    # --no-stream: the provider's own counts (streamed, aider counts them itself). The
    # cost comes from litellm's price list.
    assert "Tokens: 900 sent, 40 received. Cost: $0.0021 message, $0.0021 session." in (
        finished.stdout
    )


@pytest.mark.timeout(180)
def test_aider_commits_nothing_and_runs_no_shell_command_it_suggests(
    repo: Path, home: Path, prompt: Path
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    answer = (
        edit("hello.txt", "hi\n")
        + "\nNow commit it:\n```bash\ngit add -A && git commit -qm sneaky\n```\n"
    )
    with ModelServer([Say(answer)]) as server:
        finished = run(aider(server.url, home, prompt), repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert git(repo, "rev-parse", "HEAD") == head
    # aider stages the files it creates (memento's own commit takes them from there), but
    # `git add -A` did not run: its own tag cache stays untracked.
    assert git(repo, "diff", "--cached", "--name-only") == "hello.txt"
    assert "?? .aider.tags.cache.v4/" in git(repo, "status", "--short")


@pytest.mark.timeout(180)
def test_a_file_in_a_new_folder_given_with_file_breaks_aiders_repo_detection(
    repo: Path, home: Path, prompt: Path
) -> None:
    # Why the preset must not pass --file for a path whose folder does not exist yet
    # (or must create the folder first): aider then works in the folder, outside git.
    with ModelServer([Say(edit("src/hello.txt", "hi\n"))]) as server:
        broken = run(
            aider(server.url, home, prompt, ["src/hello.txt"], test_cmd=VERIFY),
            repo,
            timeout=150,
        )
    assert "Git repo: none" in broken.stdout
    assert (repo / "src" / "src" / "hello.txt").read_text() == "hi\n"

    (repo / "src" / "src" / "hello.txt").unlink()
    (repo / "src" / "hello.txt").unlink()
    (repo / "src" / "src").rmdir()
    with ModelServer([Say(edit("src/hello.txt", "hi\n"))]) as server:
        fixed = run(
            aider(server.url, home, prompt, ["src/hello.txt"], test_cmd=VERIFY),
            repo,
            timeout=150,
        )
    assert "Git repo: .git with 1 files" in fixed.stdout
    assert (repo / "src" / "hello.txt").read_text() == "hi\n"


@pytest.mark.timeout(300)
def test_a_429_is_retried_for_two_minutes_then_aider_exits_0_saying_rate_limited(
    repo: Path, home: Path, prompt: Path
) -> None:
    # aider (litellm) retries with doubling waits up to 60 s, about two minutes in all, and
    # then ends as if it had finished: exit 0. Only the words tell.
    with ModelServer([Fail("rate_limit", times=100)]) as server:
        finished = run(aider(server.url, home, prompt), repo, timeout=280)

    assert finished.returncode == 0
    tail = finished.stdout.rsplit("Retrying in 32.0 seconds...", 1)[-1]
    assert " ".join(tail.split()) == (
        "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for "
        "requests. Please try again in 1s. "
        "The API provider has rate limited you. Try again later or check your quotas."
    )
    assert len(server.turns) == 27  # 9 tries by aider, each tried 3 times by the client


@pytest.mark.timeout(300)
def test_an_exhausted_quota_is_retried_too_and_aider_exits_0(
    repo: Path, home: Path, prompt: Path
) -> None:
    with ModelServer([Fail("usage_limit", times=100)]) as server:
        finished = run(aider(server.url, home, prompt), repo, timeout=280)

    assert finished.returncode == 0
    tail = finished.stdout.rsplit("Retrying in 32.0 seconds...", 1)[-1]
    assert " ".join(tail.split()) == (
        "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your "
        "current quota, please check your plan and billing details. "
        "The API provider has rate limited you. Try again later or check your quotas."
    )


@pytest.mark.timeout(180)
def test_aider_model_flag_reaches_the_request(repo: Path, home: Path, prompt: Path) -> None:
    with ModelServer([Say("Nothing to do.")]) as server:
        finished = run(
            aider(server.url, home, prompt, model="openai/gpt-4.1-mini"), repo, timeout=150
        )

    assert finished.returncode == 0, finished.output
    assert [turn.model for turn in server.turns] == ["gpt-4.1-mini"]


@pytest.mark.timeout(180)
def test_without_a_git_identity_aider_writes_one_into_the_repository_config(
    repo: Path, home: Path, prompt: Path
) -> None:
    # As under cron: git knows the author only from GIT_AUTHOR_* in the environment. aider
    # then sets user.name and user.email in .git/config, a change memento must expect.
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    with ModelServer([Say(edit("hello.txt", "hi\n"))]) as server:
        launch = aider(server.url, home, prompt)
        (home / ".gitconfig").unlink()
        identity = {"NAME": "Cron Job", "EMAIL": "cron@example.com"}
        for role in ("AUTHOR", "COMMITTER"):
            launch.env.update({f"GIT_{role}_{key}": value for key, value in identity.items()})
        finished = run(launch, repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert git(repo, "config", "--local", "user.name") == "Your Name"
    assert git(repo, "config", "--local", "user.email") == "you@example.com"
