"""Git, through GitPython: the only module that imports it."""

from __future__ import annotations

from pathlib import Path

import git

from memento_gh.errors import UserError
from memento_gh.files import decode_utf8


def open_repo(root: Path) -> git.Repo:
    try:
        return git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UserError(f"{root}: not inside a git repository; run `git init` first") from None


def read_staged(root: Path, path: Path) -> str | None:
    """The text of ``path`` as staged in git's index, or None when it is not in the index."""
    repo = open_repo(root)
    top = Path(repo.working_tree_dir or root).resolve()
    try:
        relative = path.resolve().relative_to(top).as_posix()
    except ValueError:
        raise UserError(f"{path}: outside the repository at {top}") from None
    try:
        data = repo.git.cat_file("blob", f":{relative}", stdout_as_string=False)
    except git.GitCommandError:
        return None
    assert isinstance(data, bytes)
    return decode_utf8(data, path)
