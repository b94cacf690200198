"""The README's quick start, and the hooks section of docs/plan-format.md, work as written.

The shell blocks are read from the pages themselves, by the heading of their section, and run
with bash in a fresh temporary repository, with this checkout's installed ``memento`` on PATH
and no network (any download goes to a closed port). The one line not run is the install
(``pip install git+…``): this test runs the memento already installed. ``$EDITOR`` keeps
the example plan ``memento init`` writes (it runs as it is), and ``claude`` is a fake on PATH
(``testing/agents/claude.py``) that does what the example task asks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pre_commit.clientlib import load_manifest

from memento_gh.scaffold import HOOKS_REPO, HOOKS_REV
from testing.agents import AGENTS_DIR
from testing.repos import commit_all, git, git_env, init_repo, write

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The page that holds the hooks' section (moved out of the README when it was split).
PLAN_FORMAT = ROOT / "docs" / "plan-format.md"
VENV_BIN = Path(sys.executable).parent
#: The install line of a block: the test runs the memento this checkout installed.
INSTALL = re.compile(r"^\s*pipx? install ")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*(\S*)")
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$")
OFFLINE = {
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "PIP_NO_INDEX": "1",
}
HELLO = "# Hello\n\nA one-paragraph introduction.\n"
VALID_PLAN_LINE = "  - verify: `test -s docs/HELLO.md`\n"


def section(title: str, page: Path = README) -> list[str]:
    """A page's lines under the heading ``title``, up to the next heading of its level or
    above (headings inside fenced code are not headings)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[str] | None = None
    level = 0
    fence = ""
    for line in lines:
        opened = FENCE.match(line)
        if fence:
            fence = "" if opened and line.strip() == fence else fence
        elif opened:
            fence = opened.group(1)
        else:
            heading = HEADING.match(line)
            if heading and found is not None and len(heading.group(1)) <= level:
                break
            if heading and heading.group(2) == title:
                found, level = [], len(heading.group(1))
                continue
        if found is not None:
            found.append(line)
    assert found is not None, f"{page.relative_to(ROOT)} has no heading {title!r}"
    return found


def blocks(title: str, language: str, page: Path = README) -> list[str]:
    """The fenced ``language`` blocks of a page's section, in order."""
    found: list[str] = []
    current: list[str] | None = None
    fence = ""
    for line in section(title, page):
        opened = FENCE.match(line)
        if not fence and opened:
            fence, current = opened.group(1), [] if opened.group(2) == language else None
        elif fence and line.strip() == fence:
            if current is not None:
                found.append("\n".join(current) + "\n")
            fence, current = "", None
        elif current is not None:
            current.append(line)
    return found


def environment(tmp_path: Path) -> dict[str, str]:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    claude = fake_bin / "claude"
    if not claude.exists():
        claude.symlink_to(AGENTS_DIR / "claude.py")
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    return git_env(
        PATH=os.pathsep.join([str(fake_bin), str(VENV_BIN), os.environ.get("PATH", "")]),
        EDITOR="true",
        TMPDIR=str(temporary),
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PRE_COMMIT_COLOR="never",
        MEMENTO_FAKE_ACTIONS=json.dumps([{"write": "docs/HELLO.md", "text": HELLO}]),
        MEMENTO_FAKE_STATE=str(tmp_path / "runs.json"),
        **OFFLINE,
    )


def run_block(block: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The block as a bash script that stops at the first failing command."""
    script = "".join(line for line in block.splitlines(keepends=True) if not INSTALL.match(line))
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=240,
    )


def a_project(path: Path) -> Path:
    """A user's repository: a package, its tests, a README, one commit."""
    repo = init_repo(path)
    write(repo, "README.md", "# shop\n")
    write(repo, "shop/__init__.py", '"""The shop."""\n')
    write(repo, "tests/test_shop.py", "import shop\n")
    commit_all(repo, "the project")
    return repo


def commit_invalid_plan(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    plan = repo / "docs" / "MASTER_PLAN.md"
    plan.write_text(plan.read_text(encoding="utf-8").replace(VALID_PLAN_LINE, ""), "utf-8")
    git(repo, "add", "-A")
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "commit", "-m", "a plan without verify"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=120,
    )


# -- quick start ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_quick_start_demo_runs_as_written(tmp_path: Path) -> None:
    first = blocks("Quick start", "bash")[0]
    assert INSTALL.search(first), "the quick start begins with the install"

    done = run_block(first, tmp_path, environment(tmp_path))

    assert done.returncode == 0, done.stdout
    assert "ALL TASKS COMPLETE" in done.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_quick_start_on_your_own_repository_runs_as_written(tmp_path: Path) -> None:
    [own] = blocks("Quick start", "bash")[1:]
    repo = a_project(tmp_path / "shop")
    env = environment(tmp_path)

    done = run_block(own, repo, env)

    assert done.returncode == 0, done.stdout
    assert ": warning: " not in done.stdout  # validate and --check-verify find nothing
    log = git(repo, "log", "--format=%s")
    assert log.splitlines()[:2] == [
        "memento: complete T-101 Create docs/HELLO.md with a one-paragraph introduction to shop",
        "Add memento",
    ]
    assert (repo / "docs" / "HELLO.md").read_text(encoding="utf-8") == HELLO
    assert git(repo, "status", "--porcelain") == ""
    # the hook the quick start installed blocks an invalid plan
    blocked = commit_invalid_plan(repo, env)
    assert blocked.returncode != 0
    assert "T-101 has no 'verify:' line" in blocked.stdout


# -- hooks ------------------------------------------------------------------------------------


def scaffolded(tmp_path: Path, env: dict[str, str]) -> Path:
    repo = a_project(tmp_path / "repo")
    done = subprocess.run(
        ["memento", "init"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return repo


def hook_blocks() -> list[str]:
    found = blocks("Hooks", "bash", PLAN_FORMAT)
    assert len(found) == 2, "the pre-commit block and the plain hook's block"
    return found


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("which", [0, 1], ids=["pre-commit", "plain-git-hook"])
def test_each_hook_block_installs_a_hook_that_blocks_an_invalid_plan(
    tmp_path: Path, which: int
) -> None:
    env = environment(tmp_path)
    repo = scaffolded(tmp_path, env)

    done = run_block(hook_blocks()[which], repo, env)

    assert done.returncode == 0, done.stdout
    blocked = commit_invalid_plan(repo, env)
    assert blocked.returncode != 0, blocked.stdout
    no_verify = r"docs/MASTER_PLAN\.md:\d+: error: T-101 has no 'verify:' line"
    assert re.search(no_verify, blocked.stdout)
    assert "CalledProcessError" not in blocked.stdout


def readme_configs() -> list[dict[str, Any]]:
    return [dict(yaml.safe_load(block)) for block in blocks("Hooks", "yaml", PLAN_FORMAT)]


def test_the_local_config_in_the_readme_is_the_one_init_writes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    done = subprocess.run(
        [sys.executable, "-m", "memento_gh", "init"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text(encoding="utf-8"))

    local, _ = readme_configs()

    assert local == written


def test_the_remote_config_in_the_readme_names_the_published_hooks_and_this_release() -> None:
    _, remote = readme_configs()
    published = [hook["id"] for hook in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))]

    [repo] = remote["repos"]
    assert (repo["repo"], repo["rev"]) == (HOOKS_REPO, HOOKS_REV)
    assert [hook["id"] for hook in repo["hooks"]] == published
