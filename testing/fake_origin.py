"""GitHub's push policies on a bare origin, as a pre-receive hook (``install``).

- **Workflow files.** GitHub refuses a push made with a token that lacks the ``workflows``
  permission (the workflow's ``GITHUB_TOKEN`` never has it) when it creates or changes a file
  under ``.github/workflows/``, even when the commits are on another branch already: an
  update is judged by what it changes between the branch's old and new tips, a new branch by
  what its commits new to the repository change. The hook knows the token from the origin
  served over HTTP: ``repos.GitHttpServer`` sets ``FAKE_GITHUB_WORKFLOWS`` to ``no`` for a
  token without the permission. A push by path (a person's, in a test) sets nothing and is
  never refused.
- **Protected branches.** A branch named by ``git config fake.protected`` (a branch
  protection rule) or ``fake.ruleset`` (a ruleset's "Block force pushes") refuses a force
  push and its deletion, whoever pushes (``FakeGitHub.protect_branch`` writes them).

What the hook prints is GitHub's own text (git shows it after ``remote:``); git's status of
the refused ref reads "pre-receive hook declined", where GitHub's names its own hook.
"""

from __future__ import annotations

import sys
from pathlib import Path

WORKFLOWS_VARIABLE = "FAKE_GITHUB_WORKFLOWS"

_HOOK = """\
import os, subprocess, sys

ZERO = "0" * 40


def git(*args):
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    return done.stdout, done.returncode


def changed(old, new):
    if old != ZERO:
        return git("diff", "--name-only", old, new)[0].splitlines()
    files = []
    for rev in git("rev-list", new, "--not", "--all")[0].split():
        shown = git("diff-tree", "--no-commit-id", "--name-only", "-r", "-m", "--root", rev)
        files += shown[0].splitlines()
    return files


def protection(ref, old, new):
    branch = ref.removeprefix("refs/heads/")
    classic = branch in git("config", "--get-all", "fake.protected")[0].split()
    ruleset = branch in git("config", "--get-all", "fake.ruleset")[0].split()
    if not ref.startswith("refs/heads/") or old == ZERO or not (classic or ruleset):
        return []
    protected = " protected" if classic else ""
    if new == ZERO:
        broken = f"Cannot delete this{protected} branch"
    elif git("merge-base", "--is-ancestor", old, new)[1] != 0:
        broken = f"Cannot force-push to this{protected} branch"
    else:
        return []
    if classic:
        return [f"error: GH006: Protected branch update failed for {ref}.", f"error: {broken}"]
    return [f"error: GH013: Repository rule violations found for {ref}.", "", f"- {broken}", ""]


refused = False
for line in sys.stdin.read().splitlines():
    old, new, ref = line.split()
    said = protection(ref, old, new)
    if not said and new != ZERO and os.environ.get("FAKE_GITHUB_WORKFLOWS") == "no":
        workflows = [path for path in changed(old, new) if path.startswith(".github/workflows/")]
        if workflows:
            said = [
                "refusing to allow a GitHub App to create or update workflow "
                f"`{workflows[0]}` without `workflows` permission"
            ]
    for text in said:
        print(text, file=sys.stderr)
    refused = refused or bool(said)
sys.exit(1 if refused else 0)
"""


def install(bare: Path) -> Path:
    """Put GitHub's push policies into the bare repository ``bare`` (its pre-receive hook),
    and let it take pushes over HTTP; returns the hook."""
    hook = bare / "hooks" / "pre-receive"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(f"#!{sys.executable}\n{_HOOK}", encoding="utf-8")
    hook.chmod(0o755)
    config = bare / "config"
    text = config.read_text(encoding="utf-8")
    if "receivepack" not in text:
        config.write_text(text + "[http]\n\treceivepack = true\n", encoding="utf-8")
    return hook
