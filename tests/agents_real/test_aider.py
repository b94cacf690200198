"""aider, for real: ``aider --message-file`` against the scripted Chat Completions API.

aider edits by answering with edit blocks (no tools), and has no shell of its own: its
``--test-cmd`` with ``--auto-test`` runs the verify after each edit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from testing.model_server import Fail, ModelServer, Say
from testing.real_agents import Finished, aider, run
from tests.agents_real.conftest import TASK, VERIFY, git, make_repo, sent

pytestmark = pytest.mark.slow


def edit(path: str, text: str) -> str:
    """A SEARCH/REPLACE block (aider's ``diff`` edit format) that creates ``path``."""
    return f"{path}\n```\n<<<<<<< SEARCH\n=======\n{text}>>>>>>> REPLACE\n```\n"


@pytest.fixture
def prompt(tmp_path: Path) -> Path:
    path = tmp_path / "prompt.md"
    path.write_text(TASK.format(verify=VERIFY))
    return path


def rate_limited(tmp_path: Path, fault: str) -> tuple[Finished, int]:
    """aider run against a server that answers every request with ``fault``: how it ended,
    and how many requests it made."""
    repo = make_repo(tmp_path / fault / "repo")
    prompt = tmp_path / fault / "prompt.md"
    prompt.write_text(TASK.format(verify=VERIFY))
    with ModelServer([Fail(fault, times=100)]) as server:
        launch = aider(server.url, tmp_path / fault / "home", prompt, client_retries=0)
        finished = run(launch, repo, timeout=250)
    return finished, len(server.turns)


def last_words(finished: Finished) -> str:
    """What aider printed after its last wait, on one line (it wraps at 80 columns)."""
    return " ".join(finished.stdout.rsplit("Retrying in 32.0 seconds...", 1)[-1].split())


# First in the file, so the suite's longest test starts first (pytest-xdist hands tests out
# in order) and the other worker runs the rest meanwhile: aider's own 64 s of waits have no
# setting (RETRY_TIMEOUT in aider/models.py).
@pytest.mark.timeout(300)
def test_a_429_or_a_spent_quota_is_retried_for_a_minute_then_aider_exits_0(
    tmp_path: Path,
) -> None:
    # aider tries 9 times, waiting 0.25 s doubling to 32 s, and then ends as if it had
    # finished: exit 0. Only its words tell. The two cases run side by side: both wait.
    with ThreadPoolExecutor(2) as pool:
        cases = pool.map(partial(rate_limited, tmp_path), ["rate_limit", "usage_limit"])
        (limited, limited_requests), (spent, spent_requests) = cases

    assert (limited.returncode, spent.returncode) == (0, 0), limited.output + spent.output
    # client_retries=0: one request a try.
    assert (limited_requests, spent_requests) == (9, 9)
    assert last_words(limited) == (
        "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for "
        "requests. Please try again in 1s. "
        "The API provider has rate limited you. Try again later or check your quotas."
    )
    assert last_words(spent) == (
        "litellm.RateLimitError: RateLimitError: OpenAIException - You exceeded your "
        "current quota, please check your plan and billing details. "
        "The API provider has rate limited you. Try again later or check your quotas."
    )


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
def test_aider_on_the_chosen_model_commits_nothing_and_runs_no_shell_command_it_suggests(
    repo: Path, home: Path, prompt: Path
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    answer = (
        edit("hello.txt", "hi\n")
        + "\nNow commit it:\n```bash\ngit add -A && git commit -qm sneaky\n```\n"
    )
    with ModelServer([Say(answer)]) as server:
        launch = aider(server.url, home, prompt, model="openai/gpt-4.1-mini")
        finished = run(launch, repo, timeout=150)

    assert finished.returncode == 0, finished.output
    assert [turn.model for turn in server.turns] == ["gpt-4.1-mini"]
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
