"""The memento branch kept in step with its base branch, in git.

Two moves, both before a tick, so the agent works on current code and the pull request
stays mergeable:

- ``merge_in``: the base moved (people pushed to it), so it is merged into the branch as a
  plain merge commit (a fast-forward when the branch has nothing of its own). A conflict
  is aborted: nothing is committed, and the caller stops ticking until a person resolves it.
- ``replay_onto``: the pull request was merged (a merge commit, a squash or a rebase). The
  branch restarts from the base, and the commits it made after the merged head (GitHub
  says which commit was merged, so nothing is guessed from patch ids) are cherry-picked
  onto it, oldest first; so nothing merged comes back in the next pull request.
"""

from __future__ import annotations

import os
from pathlib import Path

from memento_gh import gitrun

#: Commits memento makes here, whatever the repository's configuration says.
_COMMIT_CONFIG = ("commit.gpgSign=false", "merge.autoStash=false", "rerere.enabled=false")


def commits_since(root: Path, ref: str) -> list[tuple[str, str]]:
    """(SHA, subject) of each commit on HEAD that ``ref`` lacks, oldest first, merges
    left out."""
    text = gitrun.output(
        root, "log", "--reverse", "--no-merges", "--format=%H%x00%s", f"{ref}..HEAD"
    )
    found = []
    for line in text.splitlines():
        sha, _, subject = line.partition("\0")
        found.append((sha, subject))
    return found


def lacks(root: Path, ref: str) -> bool:
    """True when ``ref`` has commits HEAD lacks (the base moved)."""
    return gitrun.output(root, "rev-list", "--count", f"HEAD..{ref}") not in ("", "0")


def holds(root: Path, sha: str) -> bool:
    """True when commit ``sha`` is in HEAD's history (False when git does not know it)."""
    return gitrun.run(root, "merge-base", "--is-ancestor", sha, "HEAD").returncode == 0


def merge_in(root: Path, ref: str, message: str) -> tuple[str, ...]:
    """Merge ``ref`` into HEAD: () when merged, else the conflicting files (aborted)."""
    done = gitrun.run(
        root, "merge", "-q", "--no-edit", "--no-verify", "-m", message, ref, config=_COMMIT_CONFIG
    )
    if done.returncode == 0:
        return ()
    files = _conflicted(root)
    gitrun.run(root, "merge", "--abort")
    if not files:
        raise gitrun.failure(root, "merge", done)
    return files


def replay_onto(root: Path, onto: str, after: str) -> tuple[str, ...]:
    """Restart HEAD's branch from ``onto`` and cherry-pick the commits made after ``after``
    that ``onto`` lacks: () when done, else the conflicting files (the branch is put back
    as it was)."""
    start = gitrun.output(root, "rev-parse", "HEAD")
    picks = gitrun.output(
        root, "rev-list", "--reverse", "--no-merges", f"{after}..HEAD", f"^{onto}"
    ).split()
    gitrun.check(root, "reset", "-q", "--hard", onto)
    for sha in picks:
        done = gitrun.run(
            root,
            "cherry-pick",
            "--allow-empty",
            "--keep-redundant-commits",
            sha,
            config=_COMMIT_CONFIG,
        )
        if done.returncode != 0:
            files = _conflicted(root) or (gitrun.reason(done),)
            gitrun.run(root, "cherry-pick", "--abort")
            gitrun.check(root, "reset", "-q", "--hard", start)
            return files
    return ()


def _conflicted(root: Path) -> tuple[str, ...]:
    done = gitrun.run(root, "diff", "--name-only", "--diff-filter=U", "-z")
    return tuple(name for name in os.fsdecode(done.stdout).split("\0") if name)
