"""The real agent CLIs, each run directly (not through memento) in a temp git repository
against the scripted model server. They are slow (each starts a real CLI), and a CLI that is
not installed fails its tests: ``scripts/setup`` installs them all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testing.model_server import Request

#: What the task asks for, and the command its verify would be: it writes the marker only
#: when the file is there with the right content, so the marker proves the order too.
TASK = "Create hello.txt containing the line `hi`, then run the verify: {verify}"
VERIFY = "grep -qx hi hello.txt && echo verified > verify.marker"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit, its own identity, and nothing else."""
    return make_repo(tmp_path / "repo")


def make_repo(path: Path) -> Path:
    """A git repository at ``path`` with one commit, its own identity, and nothing else."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Repo Owner")
    git(path, "config", "user.email", "owner@example.com")
    (path / "README.md").write_text("# A project\n")
    git(path, "add", "README.md")
    git(path, "commit", "-qm", "Start")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The CLI's home folder: its config goes here, never into the real one."""
    path = tmp_path / "home"
    path.mkdir()
    return path


def sent(requests: list[Request], text: str) -> bool:
    """Whether any of these requests carried ``text`` (in its JSON body)."""
    return any(text in request.text for request in requests)


class AnyText:
    """Equal to any text that contains ``part``: for lists of answers in assertions."""

    def __init__(self, part: str) -> None:
        self.part = part

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.part in other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<text containing {self.part!r}>"
