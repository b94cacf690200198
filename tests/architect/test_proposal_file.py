"""The architect's proposal file: ``.memento_proposal.md`` at the top of the work tree, where
every agent's own file tool may write it, kept out of git by ``.git/info/exclude`` and
removed after each run. The only change the agent may make is that file, as a regular file:
a link (to a secret, to ``.git/config``), a FIFO, a folder or an oversized file in its place
is refused, removed, and nothing lands. The path never reaches a commit, the architect's nor
a tick's."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from memento_gh.architect.run import EXCLUDE_LINE, PROPOSAL_LIMIT
from memento_gh.layout import PROPOSAL_NAME
from testing.agents import PLANTER, scripted_command
from testing.repos import init_repo, write
from testing.ticks import Completed, Project, good, make_project, one_phase, plan_of

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("isolated_git")]

SPEC = "# Demo\n\nThree modules, A, B and C, each a file holding its letter.\n"
GOOD = plan_of([one_phase()])
PROPOSAL = "$MEMENTO_PROPOSAL_FILE"


def without_plan(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    project.git("rm", "-q", "docs/MASTER_PLAN.md")
    project.git("commit", "-qm", "no plan yet")
    (project.outside / "spec.md").write_text(SPEC, encoding="utf-8")
    return project


def draft_with(project: Project, template: str, *args: str) -> Completed:
    """``plan draft`` in a process of its own (a hang is a failure, not a stuck test)."""
    spec = str(project.outside / "spec.md")
    argv = ("plan", "draft", "--spec", spec, "--agent-cmd", template, "--rounds", "1", *args)
    return project.memento_process(*argv, timeout=60)


def planter(*specs: str) -> str:
    """An architect that leaves ``specs`` (``testing/agents/planter.py``) in the tree."""
    return " ".join(shlex.quote(part) for part in (str(PLANTER), "{prompt_file}", *specs))


def assert_refused(project: Project, done: Completed, what: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert what in done.stderr and "rolled back" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (project.root / PROPOSAL_NAME).exists()
    assert not (project.root / PROPOSAL_NAME).is_symlink()
    assert not project.plan_path.exists()
    assert project.dirty() == []
    assert project.subjects()[0] == "no plan yet"


def test_the_proposal_lives_in_the_work_tree_out_of_git_and_is_gone_after_the_run(
    tmp_path: Path,
) -> None:
    project = without_plan(tmp_path)
    status = project.outside / "status.txt"
    seen = project.outside / "seen.txt"
    # During the run: the file is where the variable says, and git does not list it.
    shell = (
        f'cp {project.outside / "good.md"} "$MEMENTO_PROPOSAL_FILE" && '
        f'echo "$MEMENTO_PROPOSAL_FILE" > {seen} && '
        f"git status --porcelain --untracked-files=all > {status}"
    )
    (project.outside / "good.md").write_text(GOOD, encoding="utf-8")
    done = draft_with(project, f"sh -c {shlex.quote(shell)}")
    assert done.returncode == 0, done.stderr
    assert seen.read_text(encoding="utf-8").strip() == str(project.root / PROPOSAL_NAME)
    assert status.read_text(encoding="utf-8") == ""
    assert project.subjects()[0] == "memento: draft plan"
    assert not (project.root / PROPOSAL_NAME).exists()
    assert project.dirty() == []
    assert not project.ever_committed(PROPOSAL_NAME)
    # The line is memento's, in the repository's own exclude list, written once.
    exclude = (project.root / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert exclude.splitlines().count(EXCLUDE_LINE) == 1
    assert not (project.root / ".gitignore").read_text(encoding="utf-8").count(PROPOSAL_NAME)
    # The last proposal is kept for the person, under .git/ where no commit sees it.
    kept = project.root / ".git" / "memento" / "proposal.md"
    assert kept.read_text(encoding="utf-8") == GOOD
    assert str(kept) in done.stdout


def test_the_exclude_line_is_written_once_across_runs(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    (project.outside / "good.md").write_text(GOOD, encoding="utf-8")
    template = f"cp {project.outside / 'good.md'} {{proposal_file}}"
    assert draft_with(project, template).returncode == 0
    project.git("rm", "-q", "docs/MASTER_PLAN.md")
    project.git("commit", "-qm", "again")
    done = draft_with(project, template)
    assert done.returncode == 0, done.stderr
    exclude = (project.root / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert exclude.splitlines().count(EXCLUDE_LINE) == 1


def test_a_link_to_a_secret_in_place_of_the_proposal_is_refused_and_removed(
    tmp_path: Path,
) -> None:
    project = without_plan(tmp_path)
    secret = project.outside / "id_rsa"
    # A valid plan: followed, the link would land it (and read whatever it points to).
    secret.write_text(GOOD, encoding="utf-8")
    done = draft_with(project, planter(f"link:{{proposal_file}}={secret}"))
    assert_refused(project, done, "a symbolic link")
    assert secret.read_text(encoding="utf-8") == GOOD
    assert "T-101" not in done.stdout + done.stderr


def test_a_link_to_the_git_config_in_place_of_the_proposal_is_refused(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    config = project.root / ".git" / "config"
    before = config.read_bytes()
    done = draft_with(project, planter("link:{proposal_file}=.git/config"))
    assert_refused(project, done, "a symbolic link")
    assert config.read_bytes() == before


def test_a_fifo_in_place_of_the_proposal_neither_hangs_memento_nor_lands(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    done = draft_with(project, planter("fifo:{proposal_file}"))
    assert_refused(project, done, "a FIFO")


def test_a_folder_in_place_of_the_proposal_is_refused_and_removed(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    folder = project.outside / "folder"
    folder.mkdir()
    (folder / "MASTER_PLAN.md").write_text(GOOD, encoding="utf-8")
    (folder / "elsewhere").symlink_to(project.outside)  # removed as a link, not followed
    done = draft_with(project, planter(f"move:{{proposal_file}}={folder}"))
    assert_refused(project, done, "a directory")
    assert (project.outside / "spec.md").exists()


def test_an_oversized_proposal_is_refused_and_removed(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    big = project.outside / "big.md"
    big.write_text(GOOD + "x" * PROPOSAL_LIMIT, encoding="utf-8")
    done = draft_with(project, planter(f"move:{{proposal_file}}={big}"))
    assert_refused(project, done, f"more than the {PROPOSAL_LIMIT >> 20} MB")


def test_a_revision_whose_proposal_becomes_a_link_is_refused_and_the_plan_stays(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    plan = project.plan_path.read_bytes()
    secret = project.outside / "secret.md"
    secret.write_text(GOOD.replace("Write module C", "Write module Z"), encoding="utf-8")
    argv = ("plan", "revise", "--apply", "--agent-cmd")
    done = project.memento_process(*argv, planter(f"link:{{proposal_file}}={secret}"), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "a symbolic link" in done.stderr
    assert project.plan_path.read_bytes() == plan
    assert not (project.root / PROPOSAL_NAME).is_symlink()
    assert project.dirty() == []


def test_a_stray_copy_left_in_the_tree_is_cleared_before_the_architect_runs(
    tmp_path: Path,
) -> None:
    """A killed run (or a worker) left a link where the proposal goes: the next run removes
    it before the agent starts, so an agent that writes nothing lands nothing."""
    project = without_plan(tmp_path)
    (project.outside / "good.md").write_text(GOOD, encoding="utf-8")
    (project.root / PROPOSAL_NAME).symlink_to(project.outside / "good.md")
    done = draft_with(project, "true")
    assert done.returncode == 1
    assert "the proposal is empty" in done.stderr
    assert not project.plan_path.exists()
    assert not (project.root / PROPOSAL_NAME).is_symlink()


def test_a_committed_file_at_the_proposals_path_is_refused_up_front(tmp_path: Path) -> None:
    project = without_plan(tmp_path)
    (project.root / PROPOSAL_NAME).write_text("the user's own\n", encoding="utf-8")
    project.git("add", PROPOSAL_NAME)
    project.git("commit", "-qm", "a file of the user's")
    done = draft_with(project, scripted_command())
    assert done.returncode == 1
    assert f"{PROPOSAL_NAME} is committed in this repository" in done.stderr
    assert (project.root / PROPOSAL_NAME).read_text(encoding="utf-8") == "the user's own\n"


def test_a_tick_never_commits_a_proposal_file_its_worker_writes(tmp_path: Path) -> None:
    """No exclude line yet (no architect ran here): the file is still nobody's change."""
    project = make_project(tmp_path)
    project.script({"T-101": [*good("T-101"), {"write": PROPOSAL_NAME, "text": "planted\n"}]})
    done = project.tick()
    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == "x"
    assert "src/a.py" in project.committed_files()
    assert not project.ever_committed(PROPOSAL_NAME)


def test_a_stray_proposal_left_by_a_killed_architect_does_not_stop_a_tick(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project.root / PROPOSAL_NAME).write_text(GOOD, encoding="utf-8")
    project.script({"T-101": good("T-101")})
    done = project.tick()
    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == "x"
    assert not project.ever_committed(PROPOSAL_NAME)


@pytest.mark.parametrize("where", [".git/index", "docs/notes.fifo"])
def test_a_fifo_planted_elsewhere_neither_hangs_memento_nor_stays(
    tmp_path: Path, where: str
) -> None:
    """The worker's walk for special files guards the architect too: git never meets a
    FIFO in place of its index, and none is left in the tree."""
    project = without_plan(tmp_path)
    escaped = GOOD.replace("\n", "\\n")  # planter.py's way of a newline
    done = draft_with(project, planter(f"write:{{proposal_file}}={escaped}", f"fifo:{where}"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{where}, a FIFO" in done.stderr
    assert not (project.root / where).is_fifo()
    assert not project.plan_path.exists()
    assert project.dirty() == []


def test_a_change_the_architect_hides_from_git_is_found_and_rolled_back(tmp_path: Path) -> None:
    """git's index is put back as after a worker: no assume-unchanged flag hides a change."""
    project = without_plan(tmp_path)
    (project.outside / "good.md").write_text(GOOD, encoding="utf-8")
    shell = (
        f'cp {project.outside / "good.md"} "$MEMENTO_PROPOSAL_FILE" && '
        "git update-index --assume-unchanged src/guard.py && echo 'G = 2' > src/guard.py"
    )
    done = draft_with(project, f"sh -c {shlex.quote(shell)}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "src/guard.py" in done.stderr and "rolled back" in done.stderr
    assert (project.root / "src/guard.py").read_text(encoding="utf-8") == "G = 1\n"
    assert project.git("ls-files", "-v", "src/guard.py").startswith("H ")
    assert not project.plan_path.exists()


def test_a_file_the_user_keeps_from_git_that_the_architect_rewrites_is_rolled_back(
    tmp_path: Path,
) -> None:
    """A flag the user set (skip-worktree on a local settings file, say) hides the file's
    change from git; the architect's wall watches every file, as a worker's watches its
    task's files, so the change is found and put back and nothing lands."""
    project = without_plan(tmp_path)
    project.git("update-index", "--skip-worktree", "src/guard.py")
    escaped = GOOD.replace("\n", "\\n")
    done = draft_with(
        project, planter(f"write:{{proposal_file}}={escaped}", "write:src/guard.py=G = 2\\n")
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "src/guard.py" in done.stderr and "rolled back" in done.stderr, done.stderr
    assert (project.root / "src/guard.py").read_text(encoding="utf-8") == "G = 1\n"
    assert not project.plan_path.exists()
    assert project.dirty() == []


def test_a_repository_the_architect_plants_is_named_as_left_not_as_rolled_back(
    tmp_path: Path,
) -> None:
    """A folder with a .git of its own is a repository: git (and memento's rollback) never
    deletes it. The architect's run says so, as a worker's rollback does, instead of
    calling it rolled back."""
    project = without_plan(tmp_path)
    planted = init_repo(project.outside / "lib")
    write(planted, "evil.py", "import os\n")
    escaped = GOOD.replace("\n", "\\n")
    done = draft_with(project, planter(f"write:{{proposal_file}}={escaped}", f"move:lib={planted}"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "memento could not roll back lib/: remove it by hand" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not project.plan_path.exists()
