"""Real git repositories in temporary folders."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Person",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test Person",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` and return its stdout; raise with git's stderr on failure."""
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**_base_env(), **IDENTITY},
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {repo}:\n{done.stderr}")
    return done.stdout


def _base_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "config", "user.name", IDENTITY["GIT_AUTHOR_NAME"])
    git(path, "config", "user.email", IDENTITY["GIT_AUTHOR_EMAIL"])
    return path


def commit_all(repo: Path, message: str = "test commit") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()
