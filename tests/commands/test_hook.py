"""``memento hook install`` / ``memento hook uninstall``: the plain git pre-commit hook,
written from the installed package into the folder git runs hooks from, and real
``git commit`` runs through it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from memento_gh.cli import find_command
from testing.cli import call_memento
from testing.repos import git, git_env, init_repo, write
from testing.wheel import install_from_wheel

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT_HOOK = ROOT / "hooks" / "pre-commit"
VENV_BIN = Path(sys.executable).parent
OTHER_HOOK = "#!/bin/sh\necho 'my own checks'\n"

VALID_PLAN = """# MASTER_PLAN: Demo

## Meta
- tick_mode: auto

## Phase 1: Foundation
<!-- parallel: false -->
<!-- depends: none -->

- [ ] `T-101` [MODULE:core] Do it
  - verify: `true`
  - context_files: [src/a.py]
"""
INVALID_PLAN = VALID_PLAN.replace("  - verify: `true`\n", "")


def packaged_hook() -> str:
    return (resources.files("memento_gh") / "templates" / "pre-commit-hook").read_text("utf-8")


def hook(repo: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return call_memento("hook", *args, cwd=cwd or repo)


def commit(repo: Path) -> subprocess.CompletedProcess[str]:
    """A user's ``git commit``, with this checkout's ``memento`` on PATH."""
    env = git_env(PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "commit", "-m", "change"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


@pytest.mark.timeout(60)
def test_the_packaged_hook_is_the_one_kept_in_hooks_folder() -> None:
    assert packaged_hook() == CHECKOUT_HOOK.read_text(encoding="utf-8")


@pytest.mark.timeout(120)
def test_install_writes_the_hook_and_a_commit_of_an_invalid_plan_is_blocked(repo: Path) -> None:
    done = hook(repo, "install")

    assert done.returncode == 0, done.stderr
    installed = repo / ".git" / "hooks" / "pre-commit"
    assert installed.read_text(encoding="utf-8") == packaged_hook()
    assert os.access(installed, os.X_OK)
    assert "installed" in done.stdout
    assert ".git/hooks/pre-commit" in done.stdout

    write(repo, "docs/MASTER_PLAN.md", INVALID_PLAN)
    git(repo, "add", "-A")
    blocked = commit(repo)
    assert blocked.returncode != 0
    assert "docs/MASTER_PLAN.md:10: error: T-101 has no 'verify:' line" in blocked.stdout

    write(repo, "docs/MASTER_PLAN.md", VALID_PLAN)
    git(repo, "add", "-A")
    assert commit(repo).returncode == 0


@pytest.mark.timeout(120)
def test_the_hook_lets_a_plan_with_models_through_and_stops_a_model_that_is_an_option(
    repo: Path,
) -> None:
    assert hook(repo, "install").returncode == 0
    with_models = VALID_PLAN.replace(
        "- tick_mode: auto\n", "- tick_mode: auto\n- retry_model: opus\n"
    )
    write(repo, "docs/MASTER_PLAN.md", with_models + "  - model: openai/gpt-4.1\n")
    git(repo, "add", "-A")
    assert commit(repo).returncode == 0

    write(repo, "docs/MASTER_PLAN.md", with_models + "  - model: --yolo\n")
    git(repo, "add", "-A")
    blocked = commit(repo)
    assert blocked.returncode != 0
    assert "docs/MASTER_PLAN.md:14: error: T-101 model: a model is one word" in blocked.stdout


def test_install_without_memento_on_path_says_to_install_it_from_its_repository(
    repo: Path, tmp_path: Path
) -> None:
    """memento-gh is on no package index until its first release: the note names the
    install that works today."""
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "/usr/bin/git")

    done = call_memento("hook", "install", cwd=repo, env={"PATH": str(only_git)})

    assert done.returncode == 0, done.stderr
    assert "pipx install git+https://github.com/memento-gh/memento-gh" in done.stdout
    assert "pipx install memento-gh" not in done.stdout


@pytest.mark.timeout(60)
@pytest.mark.parametrize("configured", ["relative", "absolute"])
def test_install_honours_core_hooks_path_from_any_folder(
    repo: Path, tmp_path: Path, configured: str
) -> None:
    folder = ".githooks" if configured == "relative" else str(tmp_path / "shared hooks")
    git(repo, "config", "core.hooksPath", folder)
    (repo / "src").mkdir()

    done = hook(repo, "install", cwd=repo / "src")

    assert done.returncode == 0, done.stderr
    target = (repo / folder) if configured == "relative" else Path(folder)
    assert (target / "pre-commit").read_text(encoding="utf-8") == packaged_hook()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.timeout(60)
def test_install_twice_changes_nothing_and_says_so(repo: Path) -> None:
    hook(repo, "install")
    again = hook(repo, "install")

    assert again.returncode == 0, again.stderr
    assert "nothing to change" in again.stdout


@pytest.mark.timeout(60)
def test_install_updates_an_older_memento_hook_without_force(repo: Path) -> None:
    installed = write(repo, ".git/hooks/pre-commit", packaged_hook() + "# an older version\n")

    done = hook(repo, "install")

    assert done.returncode == 0, done.stderr
    assert "updated" in done.stdout
    assert installed.read_text(encoding="utf-8") == packaged_hook()


@pytest.mark.timeout(60)
def test_install_leaves_another_hook_untouched_and_force_replaces_it(repo: Path) -> None:
    other = write(repo, ".git/hooks/pre-commit", OTHER_HOOK)

    refused = hook(repo, "install")

    assert refused.returncode == 1
    assert other.read_text(encoding="utf-8") == OTHER_HOOK
    assert ".git/hooks/pre-commit" in refused.stderr
    assert "memento hook install --force" in refused.stderr
    assert "Traceback" not in refused.stderr

    forced = hook(repo, "install", "--force")

    assert forced.returncode == 0, forced.stderr
    assert "replaced" in forced.stdout
    assert other.read_text(encoding="utf-8") == packaged_hook()


@pytest.mark.timeout(120)
def test_install_leaves_the_pre_commit_framework_s_hook_and_points_to_its_config(
    repo: Path, tmp_path: Path
) -> None:
    write(repo, ".pre-commit-config.yaml", "repos: []\n")
    framework = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo,
        env=git_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home")),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert framework.returncode == 0, framework.stderr
    theirs = (repo / ".git" / "hooks" / "pre-commit").read_text(encoding="utf-8")

    refused = hook(repo, "install")

    assert refused.returncode == 1
    assert "pre-commit framework's hook" in refused.stderr
    assert ".pre-commit-config.yaml" in refused.stderr
    assert (repo / ".git" / "hooks" / "pre-commit").read_text(encoding="utf-8") == theirs


@pytest.mark.timeout(60)
def test_install_in_a_bare_repository_names_the_fix(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=60)

    done = hook(bare, "install")

    assert done.returncode == 1
    assert "not in a git work tree" in done.stderr
    assert not (bare / "hooks" / "pre-commit").exists()


@pytest.mark.timeout(60)
def test_uninstall_removes_only_memento_s_hook(repo: Path) -> None:
    installed = repo / ".git" / "hooks" / "pre-commit"
    hook(repo, "install")

    removed = hook(repo, "uninstall")
    assert removed.returncode == 0, removed.stderr
    assert "removed" in removed.stdout
    assert not installed.exists()

    nothing = hook(repo, "uninstall")
    assert nothing.returncode == 0
    assert "nothing to remove" in nothing.stdout

    write(repo, ".git/hooks/pre-commit", OTHER_HOOK)
    kept = hook(repo, "uninstall")
    assert kept.returncode == 0
    assert "not memento's" in kept.stdout
    assert installed.read_text(encoding="utf-8") == OTHER_HOOK


@pytest.mark.timeout(60)
def test_install_outside_a_repository_names_the_fix(tmp_path: Path) -> None:
    done = hook(tmp_path, "install")

    assert done.returncode == 1
    assert "git init" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_command_is_in_the_table_with_a_capitalised_description() -> None:
    command = find_command("hook")

    assert command is not None
    assert command.description is not None
    assert command.description[0].isupper()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_memento_of_an_installed_wheel_installs_the_hook(repo: Path, tmp_path: Path) -> None:
    """The hook comes with the package: nothing of memento's checkout is near this memento."""
    memento = install_from_wheel(tmp_path / "install") / "memento"

    done = subprocess.run(
        [memento, "hook", "install"],
        cwd=repo,
        env=git_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    installed = repo / ".git" / "hooks" / "pre-commit"
    assert installed.read_text(encoding="utf-8") == CHECKOUT_HOOK.read_text(encoding="utf-8")
    assert os.access(installed, os.X_OK)
