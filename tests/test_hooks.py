"""The hooks: pre-commit's manifest, the plain git hook in hooks/, the problem matcher.

Everything runs for real: git in temporary repositories, `pre-commit try-repo` and
`pre-commit install` (their hook environment is installed from PyPI), the `memento` command.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import identify.identify
import pytest
import yaml
from pre_commit.clientlib import load_manifest

from testing.cli import run_memento
from testing.repos import commit_all, git, git_env, init_repo, write

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
PLAIN_HOOK = ROOT / "hooks" / "pre-commit"
MATCHER = ROOT / ".github" / "memento-problem-matcher.json"
# The folder of this interpreter holds the `memento` command of this checkout.
VENV_BIN = Path(sys.executable).parent

TASK = "- [ ] `T-101` [MODULE:core] Do it"
VALID_PLAN = f"""# MASTER_PLAN: Demo

## Meta
- tick_mode: auto

## Phase 1: Foundation
<!-- parallel: false -->
<!-- depends: none -->

{TASK}
  - verify: `true`
  - context_files: [src/a.py]
"""
INVALID_PLAN = VALID_PLAN.replace("  - verify: `true`\n", "")
TASK_LINE = VALID_PLAN.splitlines().index(TASK) + 1
NO_VERIFY = f"{TASK_LINE}: error: T-101 has no 'verify:' line"

VALID_MAP = "# Project map\n\n### [MODULE:core]\nThe core.\n"
INVALID_MAP = VALID_MAP + "\n### [MODULE core]\n"
BAD_HEADING = "6: error: malformed module heading"

NOTE_FOR_UNKNOWN_TASK = "# Human notes\n\n### [NOTE] 2025-01-15T15:00:00Z → T-999\nUse the API.\n"
MALFORMED_NOTE = "# Human notes\n\n### [NOTE] yesterday T-101\nUse the API.\n"
BAD_NOTE = "3: error: malformed note header"


def run(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``command``; its stdout and stderr together, in order, as ``stdout``."""
    return subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=timeout,
    )


def commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(["git", "-c", "commit.gpgsign=false", "commit", "-m", "change", *args], repo, env)


def head(repo: Path) -> str | None:
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", "HEAD"],
        cwd=repo,
        env=git_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None


def committed(repo: Path, name: str) -> str:
    return git(repo, "show", f"HEAD:{name}")


# --- .pre-commit-hooks.yaml, read by pre-commit's own loader -----------------------------------

HOOK_FILES = {
    "memento-plan": "MASTER_PLAN.md",
    "memento-map": "PROJECT_MAP.md",
    "memento-notes": "HUMAN_NOTES.md",
}


def test_the_manifest_declares_four_serial_python_hooks_running_memento_validate() -> None:
    hooks = {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}

    assert set(hooks) == {*HOOK_FILES, "memento-memory"}
    for hook in hooks.values():
        assert hook["entry"] == "memento validate"
        assert hook["language"] == "python"
        assert hook["require_serial"] is True
        assert hook["pass_filenames"] is True
        assert hook["name"]
        assert hook["description"]


@pytest.mark.parametrize(("hook_id", "name"), HOOK_FILES.items())
def test_each_hook_selects_its_file_in_any_folder_and_nothing_else(hook_id: str, name: str) -> None:
    hook = next(hook for hook in load_manifest(str(MANIFEST)) if hook["id"] == hook_id)
    selected = [
        path
        for path in (
            name,
            f"docs/{name}",
            f"my plans/docs/{name}",
            f"docs/OLD_{name}",
            f"docs/{name}.bak",
            f"docs/{name.lower()}",
            *(f"docs/{other}" for other in HOOK_FILES.values() if other != name),
        )
        # pre-commit's selection: `files` searched in the path, every `types` tag present
        if re.search(hook["files"], path)
        and set(hook["types"]) <= identify.identify.tags_from_filename(path)
    ]

    assert selected == [name, f"docs/{name}", f"my plans/docs/{name}"]


def test_the_memory_hook_selects_the_three_lesson_files_under_a_memory_folder() -> None:
    hook = next(hook for hook in load_manifest(str(MANIFEST)) if hook["id"] == "memento-memory")
    candidates = [
        "docs/memory/known-issues.md",
        "docs/memory/decisions.md",
        "plans/memory/preferences.md",
        "memory/decisions.md",
        "docs/decisions.md",
        "docs/memory/notes.md",
        "docs/OLD_memory/decisions.md",
        "docs/memory/decisions.md.bak",
    ]
    selected = [path for path in candidates if re.search(hook["files"], path)]

    assert selected == candidates[:4]


# --- the plain git hook in hooks/ ------------------------------------------------------------


def with_memento() -> dict[str, str]:
    assert (VENV_BIN / "memento").exists(), f"no memento next to {sys.executable}"
    return git_env(PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def without_memento(tmp_path: Path) -> dict[str, str]:
    """A PATH with git and bash only, so that `memento` cannot be found."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("git", "bash"):
        found = shutil.which(name)
        assert found, f"{name} is not installed"
        (tools / name).symlink_to(found)
    return git_env(PATH=str(tools))


@pytest.fixture(params=["core.hooksPath", "memento hook install"])
def plain_repo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A repository with hooks/pre-commit installed the two ways its comment documents."""
    repo = init_repo(tmp_path / "repo")
    if request.param == "core.hooksPath":
        git(repo, "config", "core.hooksPath", str(PLAIN_HOOK.parent))
    else:
        done = run_memento("hook", "install", cwd=repo)
        assert done.returncode == 0, done.stderr
    return repo


@pytest.fixture
def hooked_repo(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "core.hooksPath", str(PLAIN_HOOK.parent))
    return repo


def test_the_plain_hook_is_an_executable_bash_script() -> None:
    assert os.access(PLAIN_HOOK, os.X_OK)
    assert PLAIN_HOOK.read_text(encoding="utf-8").startswith("#!/usr/bin/env bash\n")


def test_plain_hook_blocks_a_commit_of_an_invalid_plan(plain_repo: Path) -> None:
    write(plain_repo, "docs/MASTER_PLAN.md", INVALID_PLAN)
    git(plain_repo, "add", "-A")

    done = commit(plain_repo, with_memento())

    assert done.returncode != 0
    assert f"docs/MASTER_PLAN.md:{NO_VERIFY}" in done.stdout
    assert head(plain_repo) is None


def test_plain_hook_lets_valid_plan_map_and_notes_through(plain_repo: Path) -> None:
    write(plain_repo, "docs/MASTER_PLAN.md", VALID_PLAN)
    write(plain_repo, "docs/PROJECT_MAP.md", VALID_MAP)
    write(plain_repo, "docs/HUMAN_NOTES.md", NOTE_FOR_UNKNOWN_TASK)
    git(plain_repo, "add", "-A")

    done = commit(plain_repo, with_memento())

    assert done.returncode == 0, done.stdout
    # a warning is shown but does not block
    assert "docs/HUMAN_NOTES.md:3: warning: this note is for T-999" in done.stdout
    assert committed(plain_repo, "docs/MASTER_PLAN.md") == VALID_PLAN


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("docs/PROJECT_MAP.md", INVALID_MAP, BAD_HEADING),
        ("docs/HUMAN_NOTES.md", MALFORMED_NOTE, BAD_NOTE),
    ],
    ids=["map", "notes"],
)
def test_plain_hook_blocks_an_invalid_map_or_notes_file(
    hooked_repo: Path, name: str, text: str, message: str
) -> None:
    write(hooked_repo, name, text)
    git(hooked_repo, "add", "-A")

    done = commit(hooked_repo, with_memento())

    assert done.returncode != 0
    assert f"{name}:{message}" in done.stdout
    assert head(hooked_repo) is None


@pytest.mark.parametrize(
    ("staged", "working_tree", "blocked"),
    [(VALID_PLAN, INVALID_PLAN, False), (INVALID_PLAN, VALID_PLAN, True)],
    ids=["valid-staged-invalid-unstaged", "invalid-staged-valid-unstaged"],
)
def test_plain_hook_checks_the_staged_plan_not_the_working_tree(
    hooked_repo: Path, staged: str, working_tree: str, blocked: bool
) -> None:
    plan = write(hooked_repo, "docs/MASTER_PLAN.md", staged)
    git(hooked_repo, "add", "-A")
    plan.write_text(working_tree, encoding="utf-8")

    done = commit(hooked_repo, with_memento())

    assert (done.returncode != 0) is blocked, done.stdout
    assert (NO_VERIFY in done.stdout) is blocked
    if not blocked:
        assert committed(hooked_repo, "docs/MASTER_PLAN.md") == staged


@pytest.mark.parametrize("how", [["-a"], ["--", "docs/MASTER_PLAN.md"]], ids=["-a", "pathspec"])
def test_plain_hook_checks_what_commit_a_or_a_pathspec_commits(
    hooked_repo: Path, how: list[str]
) -> None:
    # git commits these from a temporary index (GIT_INDEX_FILE), not from .git/index
    plan = write(hooked_repo, "docs/MASTER_PLAN.md", VALID_PLAN)
    git(hooked_repo, "add", "-A")
    assert commit(hooked_repo, with_memento()).returncode == 0
    first = head(hooked_repo)
    plan.write_text(INVALID_PLAN, encoding="utf-8")

    done = commit(hooked_repo, with_memento(), *how)

    assert done.returncode != 0
    assert f"docs/MASTER_PLAN.md:{NO_VERIFY}" in done.stdout
    assert head(hooked_repo) == first


@pytest.mark.parametrize("folder", ["my plans", "-plans", "a b/c  d"])
def test_plain_hook_passes_odd_paths_intact(hooked_repo: Path, folder: str) -> None:
    write(hooked_repo, f"{folder}/MASTER_PLAN.md", INVALID_PLAN)
    write(hooked_repo, "other dir/MASTER_PLAN.md", VALID_PLAN)
    git(hooked_repo, "add", "-A")

    done = commit(hooked_repo, with_memento())

    assert done.returncode != 0
    assert f"{folder}/MASTER_PLAN.md:{NO_VERIFY}" in done.stdout
    assert "other dir/MASTER_PLAN.md" not in done.stdout
    assert head(hooked_repo) is None


def test_plain_hook_checks_a_file_renamed_to_master_plan(hooked_repo: Path) -> None:
    write(hooked_repo, "draft.md", INVALID_PLAN)
    git(hooked_repo, "add", "-A")
    assert commit(hooked_repo, with_memento()).returncode == 0
    (hooked_repo / "docs").mkdir()
    git(hooked_repo, "mv", "draft.md", "docs/MASTER_PLAN.md")

    done = commit(hooked_repo, with_memento())

    assert done.returncode != 0
    assert f"docs/MASTER_PLAN.md:{NO_VERIFY}" in done.stdout


def test_plain_hook_ignores_look_alike_names_and_deletions(hooked_repo: Path) -> None:
    write(hooked_repo, "docs/MASTER_PLAN.md", INVALID_PLAN)
    git(hooked_repo, "add", "-A")
    assert commit(hooked_repo, with_memento(), "--no-verify").returncode == 0
    git(hooked_repo, "rm", "-q", "docs/MASTER_PLAN.md")
    # memento refuses files it does not know, so passing these would fail the commit
    # (and unlike the deleted plan, so that git does not see a rename)
    write(hooked_repo, "docs/OLD_MASTER_PLAN.md", "# not a plan\n")
    write(hooked_repo, "docs/MASTER_PLAN.md.bak", "# not a plan either\n")
    git(hooked_repo, "add", "-A")

    done = commit(hooked_repo, with_memento())

    assert done.returncode == 0, done.stdout
    assert git(hooked_repo, "ls-tree", "--name-only", "HEAD", "docs/").split() == [
        "docs/MASTER_PLAN.md.bak",
        "docs/OLD_MASTER_PLAN.md",
    ]


def test_plain_hook_without_memento_blocks_plan_commits_with_a_hint(
    hooked_repo: Path, tmp_path: Path
) -> None:
    write(hooked_repo, "docs/MASTER_PLAN.md", VALID_PLAN)
    git(hooked_repo, "add", "-A")

    done = commit(hooked_repo, without_memento(tmp_path))

    assert done.returncode != 0
    assert "'memento' command is not on PATH" in done.stdout
    assert "pipx install git+https://github.com/memento-gh/memento-gh" in done.stdout
    assert head(hooked_repo) is None


def test_plain_hook_without_memento_lets_other_commits_through(
    hooked_repo: Path, tmp_path: Path
) -> None:
    write(hooked_repo, "src/app.py", "print('hi')\n")
    git(hooked_repo, "add", "-A")

    done = commit(hooked_repo, without_memento(tmp_path))

    assert done.returncode == 0, done.stdout
    assert "memento" not in done.stdout


# --- the pre-commit framework, with this repository as the hook repository --------------------


class HookRepo(NamedTuple):
    path: Path
    rev: str


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> HookRepo:
    """This checkout's files as they are now, committed into a throwaway repository.

    pre-commit installs a hook repository from a commit; copying the working tree (tracked and
    untracked, ignored files left out) tests the hooks as they are, committed or not.
    """
    snapshot = init_repo(tmp_path_factory.mktemp("hook-repo"))
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            target = snapshot / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return HookRepo(snapshot, commit_all(snapshot, "snapshot of the repository under test"))


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = git_env(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    return run([sys.executable, "-m", "pre_commit", *args], cwd, env, timeout=600)


def config_for(hook_repo: HookRepo) -> str:
    hooks = [{"id": hook_id} for hook_id in HOOK_FILES]
    repos = [{"repo": str(hook_repo.path), "rev": hook_repo.rev, "hooks": hooks}]
    return yaml.safe_dump({"repos": repos})


@pytest.fixture(scope="session")
def installed_hooks(
    hook_repo: HookRepo, pre_commit_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """PRE_COMMIT_HOME with the hook environment built (once per session, from PyPI)."""
    repo = init_repo(tmp_path_factory.mktemp("install-hooks"))
    write(repo, ".pre-commit-config.yaml", config_for(hook_repo))
    done = pre_commit("install-hooks", cwd=repo, home=pre_commit_home)
    assert done.returncode == 0, done.stdout
    return pre_commit_home


@pytest.fixture
def framework_repo(tmp_path: Path, hook_repo: HookRepo, installed_hooks: Path) -> Path:
    """A repository whose .pre-commit-config.yaml uses our hooks, installed with
    `pre-commit install`."""
    repo = init_repo(tmp_path / "repo")
    write(repo, ".pre-commit-config.yaml", config_for(hook_repo))
    commit_all(repo, "add the pre-commit config")
    done = pre_commit("install", cwd=repo, home=installed_hooks)
    assert done.returncode == 0, done.stdout
    return repo


def framework_env(installed_hooks: Path) -> dict[str, str]:
    # the hook runs the `memento` of the environment pre-commit built for it
    return git_env(PRE_COMMIT_HOME=str(installed_hooks), PRE_COMMIT_COLOR="never")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("plan", "passes"), [(INVALID_PLAN, False), (VALID_PLAN, True)], ids=["invalid", "valid"]
)
def test_try_repo_runs_the_plan_hook(
    tmp_path: Path, hook_repo: HookRepo, plan: str, passes: bool
) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "docs/MASTER_PLAN.md", plan)
    git(repo, "add", "-A")
    home = tmp_path / "home"  # try-repo builds its environment in a store of its own anyway

    done = pre_commit(
        "try-repo",
        str(hook_repo.path),
        "memento-plan",
        "--ref",
        hook_repo.rev,
        "--files",
        "docs/MASTER_PLAN.md",
        cwd=repo,
        home=home,
    )

    assert (done.returncode == 0) is passes, done.stdout
    assert (f"docs/MASTER_PLAN.md:{NO_VERIFY}" in done.stdout) is not passes
    assert re.search(
        r"memento plan \(MASTER_PLAN\.md\)\.+" + ("Passed" if passes else "Failed"), done.stdout
    )


@pytest.mark.slow
def test_framework_blocks_a_commit_of_an_invalid_plan_then_takes_the_fixed_one(
    framework_repo: Path, installed_hooks: Path
) -> None:
    before = head(framework_repo)
    plan = write(framework_repo, "docs/MASTER_PLAN.md", INVALID_PLAN)
    git(framework_repo, "add", "-A")

    blocked = commit(framework_repo, framework_env(installed_hooks))

    assert blocked.returncode != 0
    assert f"docs/MASTER_PLAN.md:{NO_VERIFY}" in blocked.stdout
    assert head(framework_repo) == before

    plan.write_text(VALID_PLAN, encoding="utf-8")
    git(framework_repo, "add", "-A")
    fixed = commit(framework_repo, framework_env(installed_hooks))

    assert fixed.returncode == 0, fixed.stdout
    assert committed(framework_repo, "docs/MASTER_PLAN.md") == VALID_PLAN


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("docs/PROJECT_MAP.md", INVALID_MAP, BAD_HEADING),
        ("docs/HUMAN_NOTES.md", MALFORMED_NOTE, BAD_NOTE),
        ("my plans/MASTER_PLAN.md", INVALID_PLAN, NO_VERIFY),
    ],
    ids=["map", "notes", "plan-in-a-folder-with-a-space"],
)
def test_framework_blocks_each_kind_of_invalid_file(
    framework_repo: Path, installed_hooks: Path, name: str, text: str, message: str
) -> None:
    before = head(framework_repo)
    write(framework_repo, name, text)
    git(framework_repo, "add", "-A")

    done = commit(framework_repo, framework_env(installed_hooks))

    assert done.returncode != 0
    assert f"{name}:{message}" in done.stdout
    assert head(framework_repo) == before


@pytest.mark.slow
def test_framework_checks_the_staged_plan_and_skips_other_files(
    framework_repo: Path, installed_hooks: Path
) -> None:
    plan = write(framework_repo, "docs/MASTER_PLAN.md", VALID_PLAN)
    write(framework_repo, "docs/OLD_MASTER_PLAN.md", INVALID_PLAN)
    git(framework_repo, "add", "-A")
    plan.write_text(INVALID_PLAN, encoding="utf-8")  # pre-commit stashes unstaged changes

    done = commit(framework_repo, framework_env(installed_hooks))

    assert done.returncode == 0, done.stdout
    assert re.search(r"memento plan \(MASTER_PLAN\.md\)\.+Passed", done.stdout)
    assert re.search(
        r"memento project map \(PROJECT_MAP\.md\)\.+\(no files to check\)Skipped", done.stdout
    )
    assert committed(framework_repo, "docs/MASTER_PLAN.md") == VALID_PLAN
    assert plan.read_text(encoding="utf-8") == INVALID_PLAN


# --- the config `memento init` writes: local hooks, the installed memento, offline ----------

#: No network: any download pre-commit or git would try goes to a closed port and fails at once.
OFFLINE = {
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "PIP_NO_INDEX": "1",
}


def init_config(tmp_path: Path) -> dict[str, Any]:
    done = run_memento("init", cwd=init_repo(tmp_path / "scaffolded"))
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "scaffolded" / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    return dict(yaml.safe_load(text))


def test_init_writes_local_system_hooks_that_match_the_published_ones(tmp_path: Path) -> None:
    [repo] = init_config(tmp_path)["repos"]
    published = {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}

    assert repo["repo"] == "local"
    assert "rev" not in repo
    assert [hook["id"] for hook in repo["hooks"]] == list(published)
    for hook in repo["hooks"]:
        assert hook["language"] == "system"
        same = ("name", "entry", "files", "types", "require_serial")
        assert {key: hook[key] for key in same} == {key: published[hook["id"]][key] for key in same}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_config_init_writes_blocks_an_invalid_plan_offline_with_real_pre_commit(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo")
    env = git_env(
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PRE_COMMIT_COLOR="never",
        **OFFLINE,
    )
    assert run(["memento", "init"], repo, env).returncode == 0
    installed = run(["pre-commit", "install"], repo, env)
    assert installed.returncode == 0, installed.stdout
    git(repo, "add", "-A")
    scaffolded = commit(repo, env)
    assert scaffolded.returncode == 0, scaffolded.stdout
    assert re.search(r"memento plan \(MASTER_PLAN\.md\)\.+Passed", scaffolded.stdout)

    plan = repo / "docs" / "MASTER_PLAN.md"
    good = plan.read_text(encoding="utf-8")
    plan.write_text(good.replace("  - verify: `test -s docs/HELLO.md`\n", ""), encoding="utf-8")
    git(repo, "add", "-A")
    blocked = commit(repo, env)

    assert blocked.returncode != 0
    assert "CalledProcessError" not in blocked.stdout
    assert re.search(
        r"docs/MASTER_PLAN\.md:\d+: error: T-101 has no 'verify:' line", blocked.stdout
    )


# --- the problem matcher ---------------------------------------------------------------------


class Annotation(NamedTuple):
    file: str
    line: str | None
    severity: str
    message: str


def matcher_pattern() -> dict[str, Any]:
    matchers = json.loads(MATCHER.read_text(encoding="utf-8"))["problemMatcher"]
    assert [matcher["owner"] for matcher in matchers] == ["memento"]
    [pattern] = matchers[0]["pattern"]
    return pattern


def annotations(lines: list[str]) -> list[Annotation]:
    """What GitHub makes of ``lines`` with the problem matcher."""
    pattern = matcher_pattern()
    regexp = re.compile(str(pattern["regexp"]))
    found = []
    for line in lines:
        match = regexp.search(line)
        if match:
            found.append(Annotation(*(match.group(pattern[key]) for key in Annotation._fields)))
    return found


@pytest.fixture
def bad_repo(tmp_path: Path) -> Path:
    """An invalid plan, map and notes in a folder with a space, and a missing notes file."""
    repo = tmp_path / "repo"
    write(repo, "my plans/MASTER_PLAN.md", INVALID_PLAN)
    write(repo, "my plans/PROJECT_MAP.md", INVALID_MAP)
    write(repo, "my plans/HUMAN_NOTES.md", NOTE_FOR_UNKNOWN_TASK)
    return repo


FILES = ["my plans/MASTER_PLAN.md", "my plans/PROJECT_MAP.md", "my plans/HUMAN_NOTES.md"]
EXPECTED = [
    Annotation("my plans/MASTER_PLAN.md", str(TASK_LINE), "error", "T-101 has no 'verify:' line"),
    Annotation("my plans/PROJECT_MAP.md", "6", "error", "malformed module heading"),
    Annotation("my plans/HUMAN_NOTES.md", "3", "warning", "this note is for T-999"),
    Annotation("docs/HUMAN_NOTES.md", None, "error", "no such file"),
]


def shortened(found: list[Annotation]) -> list[Annotation]:
    """Messages cut to the length of the expected ones, to keep the table readable."""
    return [
        annotation._replace(message=annotation.message[: len(expected.message)])
        for annotation, expected in zip(found, EXPECTED, strict=False)
    ] + found[len(EXPECTED) :]


@pytest.mark.parametrize("color", [False, True], ids=["plain", "FORCE_COLOR"])
def test_the_problem_matcher_reads_every_problem_memento_validate_prints(
    bad_repo: Path, color: bool
) -> None:
    env = {"NO_COLOR": "", "FORCE_COLOR": "1"} if color else {}
    done = run_memento("validate", *FILES, "docs/HUMAN_NOTES.md", cwd=bad_repo, env=env)

    assert done.returncode == 1
    assert ("\033[" in done.stdout) is color
    assert shortened(annotations(done.stdout.splitlines())) == EXPECTED
    # the summary on stderr is not a problem
    assert annotations(done.stderr.splitlines()) == []
    assert done.stderr.strip() == "3 errors, 1 warning"


def test_the_problem_matcher_reads_windows_paths(bad_repo: Path) -> None:
    done = run_memento("validate", FILES[0], cwd=bad_repo)
    [line] = done.stdout.splitlines()
    windows = line.replace("my plans/", "C:\\Users\\me\\my repo\\my plans\\", 1)

    assert annotations([windows]) == [
        Annotation(
            "C:\\Users\\me\\my repo\\my plans\\MASTER_PLAN.md",
            str(TASK_LINE),
            "error",
            line.split(": error: ", 1)[1],
        )
    ]


def test_the_problem_matcher_ignores_memento_s_other_output(tmp_path: Path) -> None:
    write(
        tmp_path, "docs/MASTER_PLAN.md", VALID_PLAN.replace("- tick_mode: auto", "- total_tasks: 7")
    )
    write(tmp_path, "docs/README.md", "# Read me\n")
    runs = [
        run_memento("validate", "--fix", cwd=tmp_path),  # path:line: fixed total_tasks: 1
        run_memento("validate", "docs/README.md", cwd=tmp_path),  # memento: error: path: ...
        run_memento("validate", cwd=tmp_path / "docs"),  # memento: error: path: no plan here
    ]
    lines = [line for done in runs for line in (done.stdout + done.stderr).splitlines()]

    assert [line.split(";")[0] for line in lines] == [
        "docs/MASTER_PLAN.md:4: fixed total_tasks: 1",
        "memento: error: docs/README.md: memento does not know this file",
        "memento: error: docs/MASTER_PLAN.md: no plan here",
    ]
    assert annotations(lines) == []


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_problem_matcher_regexp_means_the_same_in_javascript(bad_repo: Path) -> None:
    # GitHub's runner compiles it as an ECMAScript regular expression
    done = run_memento("validate", *FILES, "docs/HUMAN_NOTES.md", cwd=bad_repo)
    lines = done.stdout.splitlines()
    script = (
        "const [regexp, lines] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const re = new RegExp(regexp);"
        "console.log(JSON.stringify(lines.map(l => { const m = re.exec(l);"
        " return m && [m[1], m[2] === undefined ? null : m[2], m[3], m[4]]; })));"
    )
    pattern = matcher_pattern()
    assert [pattern[key] for key in Annotation._fields] == [1, 2, 3, 4]

    node = subprocess.run(
        ["node", "-e", script],
        input=json.dumps([pattern["regexp"], lines]),
        capture_output=True,
        text=True,
        check=True,
    )

    assert [Annotation(*found) for found in json.loads(node.stdout)] == annotations(lines)
