"""``memento init``: given a folder, these files appear, validate clean, and nothing a user
already has is lost."""

from __future__ import annotations

import json
import subprocess
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from memento_gh import __version__
from memento_gh.plan.meta import META_KEYS, Settings
from memento_gh.plan.scanner import parse
from memento_gh.scaffold import (
    HOOKS_REPO,
    fill,
    gitignore_with_ours,
    plan_scaffold,
)
from testing.cli import call_memento
from testing.repos import init_repo

PROJECT = Path(__file__).resolve().parents[2]
SCAFFOLD = (
    "docs/MASTER_PLAN.md",
    "docs/PROJECT_MAP.md",
    "docs/TICK_STATUS.md",
    "docs/HUMAN_NOTES.md",
    ".memento/worker_prompt.md",
    ".memento_ignore",
    ".memento_cleanignore",
    ".github/workflows/memento.yml",
    ".pre-commit-config.yaml",
    ".gitignore",
)
OUR_IGNORES = ("logs/", ".memento.lock", ".memento_alert", ".aider*")


def init(
    *args: str | Path, before: tuple[str | Path, ...] = (), cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``memento [before...] init [args...]``, which must succeed."""
    done = call_memento(*before, "init", *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (as None), by relative path."""
    return {
        path.relative_to(root).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


def workflow(root: Path) -> dict[Any, Any]:
    loaded = yaml.safe_load((root / ".github/workflows/memento.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


# -- a new repository ------------------------------------------------------------------------


def test_init_in_an_empty_folder_creates_every_file(tmp_path: Path) -> None:
    done = init(tmp_path)

    for relative in SCAFFOLD:
        assert (tmp_path / relative).is_file(), relative
        assert f"created {relative}\n" in done.stdout
    assert (tmp_path / "logs").is_dir()
    assert list((tmp_path / "logs").iterdir()) == []
    assert "created logs/\n" in done.stdout
    assert (tmp_path / "docs/TICK_STATUS.md").read_text(encoding="utf-8") == "# TICK STATUS LOG\n"
    assert done.stderr == ""


def test_a_missing_folder_is_created(tmp_path: Path) -> None:
    target = tmp_path / "new" / "project"
    init(target)
    assert (target / "docs/MASTER_PLAN.md").is_file()


def test_the_new_plan_validates_without_a_word(tmp_path: Path) -> None:
    init(tmp_path)
    done = call_memento("-C", tmp_path, "validate")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_status_reads_the_new_plan(tmp_path: Path) -> None:
    init(tmp_path)
    done = call_memento("-C", tmp_path, "status", "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert (status["total"], status["completed"], status["pending"]) == (2, 0, 2)
    assert status["next"]["task"] == "T-101"


def test_meta_lists_every_key_with_its_default(tmp_path: Path) -> None:
    before = date.today()
    init(tmp_path)
    plan = parse((tmp_path / "docs/MASTER_PLAN.md").read_text(encoding="utf-8"))

    assert list(plan.meta) == list(META_KEYS)
    assert plan.settings == Settings(total_tasks=2)
    assert plan.meta["created"].value in (before.isoformat(), date.today().isoformat())
    assert plan.meta["last_architect_edit"].value == plan.meta["created"].value
    for entry in plan.meta.values():
        assert plan.lines[entry.line].rstrip().endswith("-->"), entry.key


def test_the_example_phase_and_tasks_are_complete() -> None:
    plan = parse(plan_scaffold("demo", date(2025, 1, 15), "docs")["docs/MASTER_PLAN.md"])

    [phase] = plan.phases
    assert (phase.number, phase.parallel, phase.depends) == (1, False, ())
    assert [task.id for task in plan.tasks] == ["T-101", "T-102"]
    for task in plan.tasks:
        assert task.module == "docs"
        assert set(task.fields) == {"verify", "context_files", "guard_files", "estimate", "retries"}
        assert task.context_files == ("docs/HELLO.md",)
        assert task.retries == 0
    assert "Replace this phase" in "\n".join(plan.lines)


def test_the_example_tasks_can_really_be_verified(tmp_path: Path) -> None:
    init(tmp_path)
    plan = parse((tmp_path / "docs/MASTER_PLAN.md").read_text(encoding="utf-8"))
    verifies = [task.verify for task in plan.tasks]

    def passes(command: str | None) -> bool:
        assert command is not None
        return subprocess.run(command, shell=True, cwd=tmp_path, check=False).returncode == 0

    assert [passes(command) for command in verifies] == [False, False]
    (tmp_path / "docs/HELLO.md").write_text("Hello.\n", encoding="utf-8")
    assert [passes(command) for command in verifies] == [True, False]
    (tmp_path / "docs/HELLO.md").write_text("Hello.\n\n## How to run\nmake\n", encoding="utf-8")
    assert [passes(command) for command in verifies] == [True, True]


def test_the_notes_file_explains_the_note_format_without_holding_a_note(tmp_path: Path) -> None:
    init(tmp_path)
    text = (tmp_path / "docs/HUMAN_NOTES.md").read_text(encoding="utf-8")

    assert "### [NOTE] <ISO time> → T-201|global" in text
    assert text.index("<!--") < text.index("[NOTE]") < text.index("-->")
    assert text.index("## Active Notes") < text.index("\n---\n") < text.index("## Archive")


def test_the_map_registers_the_module_of_the_example_tasks(tmp_path: Path) -> None:
    init(tmp_path)
    text = (tmp_path / "docs/PROJECT_MAP.md").read_text(encoding="utf-8")

    for heading in ("## Architecture Overview", "## Module Registry", "### [MODULE:docs]"):
        assert f"\n{heading}\n" in text
    assert "\n## File Tree" in text
    assert "\n## Conventions\n" in text


def test_the_worker_prompt_names_the_rules_the_engine_enforces(tmp_path: Path) -> None:
    init(tmp_path, before=("--plan-dir", "planning"))
    prompt = (tmp_path / ".memento/worker_prompt.md").read_text(encoding="utf-8")

    for needle in ("context_files", "guard_files", "verify", "planning/MASTER_PLAN.md", ".git/"):
        assert needle in prompt
    assert "docs/MASTER_PLAN.md" not in prompt
    assert "@" not in prompt


def test_the_ignore_lists_protect_what_they_should(tmp_path: Path) -> None:
    init(tmp_path)
    ignore = (tmp_path / ".memento_ignore").read_text(encoding="utf-8").splitlines()
    keep = (tmp_path / ".memento_cleanignore").read_text(encoding="utf-8").splitlines()

    assert {".git/", "node_modules/", "logs/", ".venv/", "__pycache__/"} <= set(ignore)
    assert {".env", "node_modules/", ".venv/", "vendor/"} <= set(keep)


# -- the workflow and the hooks ----------------------------------------------------------------


# The workflow's shape, its linting and its run under act: tests/test_workflows.py.


def config_text(root: Path) -> str:
    return (root / ".pre-commit-config.yaml").read_text(encoding="utf-8")


def test_the_pre_commit_config_uses_hooks_this_project_defines(tmp_path: Path) -> None:
    init(tmp_path)
    config = yaml.safe_load((tmp_path / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    defined = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))

    [repo] = config["repos"]
    # Until a release exists, the hooks run the installed memento (item 7 of "first use").
    assert repo["repo"] == "local"
    # the remote form, for after a release, in a comment
    assert f"#   - repo: {HOOKS_REPO}\n#     rev: v{__version__}\n" in config_text(tmp_path)
    used = [hook["id"] for hook in repo["hooks"]]
    assert used == ["memento-plan", "memento-map", "memento-notes", "memento-memory"]
    assert set(used) <= {hook["id"] for hook in defined}


def test_an_existing_pre_commit_config_is_untouched_and_the_snippet_printed(
    tmp_path: Path,
) -> None:
    mine = "repos:\n  - repo: https://github.com/psf/black\n    rev: 24.1.0\n    hooks:\n"
    mine += "      - id: black\n"
    (tmp_path / ".pre-commit-config.yaml").write_text(mine, encoding="utf-8")

    done = init(tmp_path)

    assert (tmp_path / ".pre-commit-config.yaml").read_text(encoding="utf-8") == mine
    assert "- repo: local" in done.stdout
    snippet = done.stdout.split("'repos:' key:\n\n", 1)[1].split("\n\n", 1)[0]
    pasted = yaml.safe_load(mine + snippet)
    assert [repo["repo"] for repo in pasted["repos"]] == [
        "https://github.com/psf/black",
        "local",
    ]


def test_a_pre_commit_config_with_our_hooks_is_kept_without_a_snippet(tmp_path: Path) -> None:
    init(tmp_path)
    again = init(tmp_path)
    assert "kept .pre-commit-config.yaml\n" in again.stdout
    assert "repos:" not in again.stdout


# -- keeping what is there ---------------------------------------------------------------------


def test_a_second_init_keeps_every_byte(tmp_path: Path) -> None:
    init(tmp_path)
    before = snapshot(tmp_path)

    again = init(tmp_path)

    assert snapshot(tmp_path) == before
    assert "created" not in again.stdout
    assert "replaced" not in again.stdout
    for relative in SCAFFOLD:
        assert f"kept {relative}\n" in again.stdout


def test_a_changed_plan_is_kept_and_force_replaces_it(tmp_path: Path) -> None:
    init(tmp_path)
    plan = tmp_path / "docs/MASTER_PLAN.md"
    fresh = plan.read_bytes()
    plan.write_bytes(b"# MASTER_PLAN: mine\n")

    kept = init(tmp_path)
    assert plan.read_bytes() == b"# MASTER_PLAN: mine\n"
    assert "--force" in kept.stdout

    forced = init(tmp_path, "--force")
    assert plan.read_bytes() == fresh
    assert "replaced docs/MASTER_PLAN.md\n" in forced.stdout
    assert "kept docs/PROJECT_MAP.md\n" in forced.stdout


def test_force_leaves_an_existing_pre_commit_config_alone(tmp_path: Path) -> None:
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n", encoding="utf-8")
    init(tmp_path, "--force")
    assert (tmp_path / ".pre-commit-config.yaml").read_text(encoding="utf-8") == "repos: []\n"


def test_gitignore_keeps_user_lines_and_crlf_and_gains_ours_once(tmp_path: Path) -> None:
    mine = b"node_modules/\r\n# my notes\r\n*.log"
    (tmp_path / ".gitignore").write_bytes(mine)

    first = init(tmp_path)
    after_first = (tmp_path / ".gitignore").read_bytes()
    init(tmp_path)

    assert (tmp_path / ".gitignore").read_bytes() == after_first
    assert after_first.startswith(mine + b"\r\n")
    assert b"\n" not in after_first.replace(b"\r\n", b"")
    lines = after_first.decode().split("\r\n")
    for line in OUR_IGNORES:
        assert lines.count(line) == 1
    assert (
        "updated .gitignore (added logs/, .memento.lock, .memento_alert, .aider*)" in first.stdout
    )


def test_gitignore_lines_the_user_wrote_differently_are_not_repeated() -> None:
    text, added = gitignore_with_ours("/logs\n.memento.lock\n")
    assert added == [".memento_alert", ".aider*"]
    assert text == "/logs\n.memento.lock\n# memento's working files\n.memento_alert\n.aider*\n"
    assert gitignore_with_ours(text) == (text, [])
    assert gitignore_with_ours(None)[0].splitlines()[1:] == list(OUR_IGNORES)


# -- names, folders, errors ------------------------------------------------------------------


def test_name_shows_in_the_plan_and_map_titles(tmp_path: Path) -> None:
    init(tmp_path, "--name", "Rocket {Shop} ${{ x }} @NAME@")
    plan = (tmp_path / "docs/MASTER_PLAN.md").read_text(encoding="utf-8")
    project_map = (tmp_path / "docs/PROJECT_MAP.md").read_text(encoding="utf-8")

    assert parse(plan).title == "MASTER_PLAN: Rocket {Shop} ${{ x }} @NAME@"
    assert project_map.startswith("# PROJECT MAP: Rocket {Shop} ${{ x }} @NAME@\n")


def test_the_name_defaults_to_the_folder_name(tmp_path: Path) -> None:
    init(tmp_path / "rocket-shop")
    plan = (tmp_path / "rocket-shop/docs/MASTER_PLAN.md").read_text(encoding="utf-8")
    assert plan.startswith("# MASTER_PLAN: rocket-shop\n")


def test_dash_c_sets_the_folder_path_is_relative_to(tmp_path: Path) -> None:
    (tmp_path / "outer").mkdir()
    done = init("inner", before=("-C", tmp_path / "outer"), cwd=tmp_path)

    assert (tmp_path / "outer/inner/docs/MASTER_PLAN.md").is_file()
    assert not (tmp_path / "inner").exists()
    assert "memento -C outer/inner validate" in done.stdout
    assert call_memento("-C", tmp_path / "outer/inner", "validate").returncode == 0


def test_plan_dir_puts_the_plan_files_elsewhere(tmp_path: Path) -> None:
    done = init(tmp_path, before=("--plan-dir", "planning"))

    assert (tmp_path / "planning/MASTER_PLAN.md").is_file()
    assert not (tmp_path / "docs/MASTER_PLAN.md").exists()
    assert "--plan-dir planning validate" in done.stdout
    checked = call_memento("-C", tmp_path, "--plan-dir", "planning", "validate")
    assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")
    [step] = [s for s in workflow(tmp_path)["jobs"]["memento"]["steps"] if s.get("id") == "memento"]
    assert step["with"]["plan-dir"] == "planning"


@pytest.mark.parametrize(
    ("before", "after", "fragment"),
    [
        (("--plan-dir", "../elsewhere"), (), "--plan-dir"),
        (("--plan-dir", "/abs"), (), "--plan-dir"),
        ((), ("--name", "two\nlines"), "--name"),
        ((), ("--name", "  "), "--name"),
        ((), ("--workers", "0"), "--workers '0': give a whole number from 1 to 20"),
        ((), ("--workers", "21"), "--workers '21'"),
        ((), ("--workers", "two"), "--workers 'two'"),
    ],
)
def test_bad_options_are_one_line_errors(
    tmp_path: Path, before: tuple[str, ...], after: tuple[str, ...], fragment: str
) -> None:
    done = call_memento(*before, "init", tmp_path, *after)

    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("memento: error: ")
    assert fragment in line
    assert list(tmp_path.iterdir()) == []


def test_a_file_as_path_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")

    done = call_memento("init", tmp_path / "notes.txt")

    assert done.returncode == 1
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("memento: error: ")
    assert "is a file" in line
    assert "Traceback" not in done.stderr


def test_a_file_in_the_way_of_a_folder_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / ".memento").write_text("not a folder\n", encoding="utf-8")

    done = call_memento("init", tmp_path)

    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("memento: error: .memento/worker_prompt.md: cannot write it")


def test_workers_writes_a_matrix_of_that_many_jobs(tmp_path: Path) -> None:
    init(tmp_path, "--workers", "3")

    job = workflow(tmp_path)["jobs"]["memento"]
    assert "'[1, 2, 3]'" in job["strategy"]["matrix"]["worker"]
    assert job["concurrency"]["group"] == "memento-worker-${{ matrix.worker }}"
    [step] = [s for s in job["steps"] if s.get("id") == "memento"]
    assert step["with"]["workers"] == 3
    assert step["with"]["worker-id"] == "worker-${{ matrix.worker }}"
    # A claim outlives the longest run it covers, so no worker resets one still running.
    settings = parse((tmp_path / "docs" / "MASTER_PLAN.md").read_text()).settings
    assert settings.stale_lock_timeout > settings.agent_timeout + settings.verify_timeout


def test_one_worker_keeps_the_seeds_stale_lock_timeout(tmp_path: Path) -> None:
    init(tmp_path)
    settings = parse((tmp_path / "docs" / "MASTER_PLAN.md").read_text()).settings
    assert settings.stale_lock_timeout == 15 * 60


def test_one_worker_writes_the_same_workflow_as_no_option(tmp_path: Path) -> None:
    init(tmp_path / "plain")
    init(tmp_path / "one", "--workers", "1")
    path = ".github/workflows/memento.yml"
    assert (tmp_path / "one" / path).read_bytes() == (tmp_path / "plain" / path).read_bytes()


def test_git_init_is_a_next_step_only_outside_a_repository(tmp_path: Path) -> None:
    plain = init(tmp_path / "plain")
    repo = init_repo(tmp_path / "repo")
    inside = init(repo)

    assert "1. git init\n" in plain.stdout
    assert "git init" not in inside.stdout
    assert "Next steps:" in inside.stdout


def test_the_next_steps_name_the_hook_for_a_repository_without_pre_commit(tmp_path: Path) -> None:
    done = init(init_repo(tmp_path / "repo"))
    assert "no pre-commit? `memento -C " in done.stdout and " hook install`)" in done.stdout


# -- the template filling -------------------------------------------------------------------


def test_fill_replaces_in_one_pass_and_leaves_other_braces() -> None:
    text = "name=@NAME@ ${{ secrets.X }} {x} user@example.com"
    assert fill(text, {"NAME": "@NAME@"}) == "name=@NAME@ ${{ secrets.X }} {x} user@example.com"
    with pytest.raises(KeyError):
        fill("@MISSING@", {})


def test_the_scaffold_is_a_pure_function_of_its_arguments() -> None:
    day = date(2025, 1, 15)
    assert plan_scaffold("demo", day, "docs") == plan_scaffold("demo", day, "docs")
    assert "- created: 2025-01-15 " in plan_scaffold("demo", day, "docs")["docs/MASTER_PLAN.md"]
    assert set(plan_scaffold("demo", day, ".")) == {
        "MASTER_PLAN.md",
        "PROJECT_MAP.md",
        "TICK_STATUS.md",
        "HUMAN_NOTES.md",
    }


def test_without_a_path_init_scaffolds_the_current_folder(tmp_path: Path) -> None:
    done = init(cwd=tmp_path)

    assert (tmp_path / "docs/MASTER_PLAN.md").is_file()
    assert "memento validate " in done.stdout
    assert " -C " not in done.stdout
