"""The wall around the agent on git's side, in real ticks: ``testing/agents/hostile.py``
does its task's work and meanwhile rewrites git's configuration, hooks, ``info/`` files and
refs, locally or in the user's global gitconfig. Each tick puts every byte and every ref
back before git runs again, counts the change as the attempt's violation, and never runs a
program the agent planted: each of those records the environment it ran in, and only the
agent's own processes carry the tick's ``MEMENTO_RUN`` tag."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from testing.agents import Action, hostile_command, hostile_env
from testing.ticks import Completed, Project, make_project, one_phase, plan_of, task

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.timeout(120)]

WORK: Action = {"write": "src/a.py", "text": "A = 1\n"}
#: A filter, a textconv and an fsmonitor that record who runs them; the clean filter also
#: adds a line to whatever git stores.
RECORDERS = {
    "filter.wall.clean": "{record} --inject",
    "filter.wall.smudge": "{record}",
    "diff.wall.textconv": "{record} --textconv",
    "core.fsmonitor": "{record}",
}
ATTRIBUTES = "* filter=wall diff=wall\n"
HOOKS = ("pre-commit", "post-commit", "reference-transaction", "post-checkout", "post-index-change")


def hostile_tick(project: Project, steps: Sequence[Action], home: Path) -> Completed:
    env = hostile_env(steps, home=home, record=project.outside / "records")
    return project.memento("tick", "--agent-cmd", hostile_command(), env=env)


def run_by_memento(project: Project) -> list[list[str]]:
    """What git ran of the agent's programs outside the agent's own processes: argv each."""
    found = sorted((project.outside / "records").glob("record-*.json"))
    entries: list[dict[str, Any]] = [json.loads(path.read_text()) for path in found]
    return [entry["argv"] for entry in entries if "MEMENTO_RUN" not in entry["env"]]


def git_files(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every file and link of .git/config, .git/hooks/ and .git/info/: its kind and mode,
    and its bytes."""
    git_dir = root / ".git"
    found: dict[str, tuple[str, bytes]] = {}
    paths = [git_dir / "config", *(git_dir / "hooks").rglob("*"), *(git_dir / "info").rglob("*")]
    for path in paths:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            found[path.relative_to(git_dir).as_posix()] = ("link", os.fsencode(path.readlink()))
        elif stat.S_ISREG(mode):
            found[path.relative_to(git_dir).as_posix()] = (oct(mode), path.read_bytes())
    return found


def refs(project: Project) -> dict[str, str]:
    """Every ref (branches, tags, remote-tracking refs) and what it points at, and HEAD."""
    listing = project.git("for-each-ref", "--format=%(refname) %(objectname) %(symref)")
    found = {line.split()[0]: " ".join(line.split()[1:]) for line in listing.splitlines()}
    found["HEAD"] = project.git("symbolic-ref", "-q", "HEAD").strip() or project.head()
    return found


def violations(project: Project) -> str:
    """The status log of a tick whose attempt failed on what the agent did, not on the
    agent failing itself (so every step of its attack ran)."""
    [entry] = project.entries()
    assert entry.outcome == "failed", entry
    said = project.status_path.read_text()
    assert "the agent exited" not in said, said
    return said


# -- class 1: git's configuration, hooks and info/ ------------------------------------------


def test_config_hooks_and_info_the_agent_planted_are_put_back_byte_for_byte_unrun(
    tmp_path: Path, isolated_git: Path
) -> None:
    project = make_project(tmp_path)
    hooks = project.root / ".git/hooks"
    (hooks / "applypatch-msg.sample").chmod(0o644)  # a mode to put back as it was
    (project.root / ".git/info/exclude").write_text("# the user's own\n*.local\n")
    before = git_files(project.root)
    steps: list[Action] = [
        WORK,
        {"config": {"remote.origin.pushurl": "http://127.0.0.1:9/steal", **RECORDERS}},
        {"write": ".git/info/attributes", "text": ATTRIBUTES},
        {"write": ".git/info/exclude", "text": "src/\n"},  # hide the work from git status
        *({"hook": name} for name in HOOKS),
        {"delete": ".git/hooks/pre-push.sample"},
        {"chmod": ".git/hooks/applypatch-msg.sample", "mode": "755"},
        {"write": ".git/hooks/sub/nested", "text": "#!/bin/sh\n"},
        # git would read objects, then everything, from a folder of the agent's
        {"write": ".git/objects/info/alternates", "text": f"{tmp_path}/decoy/objects\n"},
        {"write": ".git/commondir", "text": f"{tmp_path}/decoy\n"},
    ]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    assert "git's configuration" in violations(project)
    assert git_files(project.root) == before
    assert not (hooks / "sub").exists()
    assert not (project.root / ".git/objects/info/alternates").exists()
    assert not (project.root / ".git/commondir").exists()
    assert run_by_memento(project) == []
    assert project.dirty() == []
    assert project.marker("T-101") == " "
    assert b"injected" not in project.git("show", "HEAD:docs/MASTER_PLAN.md").encode()


def test_git_files_swapped_for_links_fifos_and_files_are_put_back_without_a_hang(
    tmp_path: Path, isolated_git: Path
) -> None:
    project = make_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    before = git_files(project.root)
    steps: list[Action] = [
        WORK,
        {"delete": ".git/hooks"},
        {"symlink": ".git/hooks", "to": str(elsewhere)},
        {"delete": ".git/config"},
        {"fifo": ".git/config"},  # whoever opens it to read waits for a writer: forever
        {"delete": ".git/info"},
        {"write": ".git/info", "text": "a file where a folder was\n"},
    ]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    assert "git's configuration" in violations(project)
    assert git_files(project.root) == before
    assert not (project.root / ".git/hooks").is_symlink()
    assert sorted(path.name for path in elsewhere.iterdir()) == ["pre-commit"]
    assert project.dirty() == []


def test_the_agents_global_gitconfig_changes_nothing_memento_runs_or_commits(
    tmp_path: Path, isolated_git: Path
) -> None:
    project = make_project(tmp_path)
    recorded_hooks = isolated_git / "hooks"
    steps: list[Action] = [
        WORK,
        {"config": {**RECORDERS, "core.hooksPath": str(recorded_hooks)}, "file": "~/.gitconfig"},
        {"write": "~/.config/git/attributes", "text": ATTRIBUTES},
        {"config": {"core.attributesFile": "~/.config/git/attributes"}, "file": "~/.gitconfig"},
        {"write": f"{recorded_hooks}/post-commit", "text": "#!/bin/sh\nexit 0\n"},
    ]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    assert project.marker("T-101") == "x"  # the user's own file, not the repository's: allowed
    assert project.git("show", "HEAD:src/a.py") == "A = 1\n"  # no clean filter ran
    assert run_by_memento(project) == []
    (isolated_git / ".gitconfig").unlink()  # else the test's own git would run the filter
    assert project.dirty() == []


def test_a_file_hidden_by_the_users_global_ignore_file_is_seen_and_rolled_back(
    tmp_path: Path, isolated_git: Path
) -> None:
    # the one file of the user's own that git reads whatever its configuration: the default
    # core.excludesFile; there, a conftest.py outside the task's files would outlive the tick
    project = make_project(tmp_path)
    ignore = isolated_git / ".config/git/ignore"
    ignore.parent.mkdir(parents=True)
    ignore.write_text("*.swp\n")
    steps: list[Action] = [
        WORK,
        {"write": "src/conftest.py", "text": "collect_ignore_glob = ['*']\n"},
        {"write": "~/.config/git/ignore", "text": "*.swp\nconftest.py\n"},
    ]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    said = violations(project)
    assert "git's configuration" in said and "ignore" in said, said
    assert ignore.read_text() == "*.swp\n"
    assert not (project.root / "src/conftest.py").exists()
    assert not project.ever_committed("src/conftest.py")
    assert project.dirty() == []


def test_a_git_folder_swapped_for_another_repository_stops_the_tick_before_git_runs_there(
    tmp_path: Path, isolated_git: Path
) -> None:
    project = make_project(tmp_path)
    decoy = tmp_path / "decoy"
    steps: list[Action] = [
        WORK,
        {"git": ["init", "-q", str(decoy)]},
        {"git": ["-C", str(decoy), "config", "filter.wall.clean", "{record} --inject"]},
        {"write": str(decoy / ".git/info/attributes"), "text": ATTRIBUTES},
        {"git": ["-C", str(decoy), "config", "core.fsmonitor", "{record}"]},
        {"rename": ".git", "to": str(tmp_path / "stolen.git")},
        {"write": ".git", "text": f"gitdir: {decoy / '.git'}\n"},
    ]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 1, done.stdout
    assert ".git" in done.stderr and "by hand" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert run_by_memento(project) == []


#: The module the agent writes, which verify runs: it plants a filter as it is checked.
PLANTED_BY_VERIFY = """import pathlib, subprocess
subprocess.run(["git", "config", "filter.wall.clean", \"\"\"{record} --inject\"\"\"], check=True)
subprocess.run(["git", "config", "remote.origin.pushurl", "http://127.0.0.1:9/steal"], check=True)
pathlib.Path(".git/info/attributes").write_text("* filter=wall\\n")
A = 1
"""


def test_what_the_agents_code_plants_in_git_while_verify_runs_it_is_put_back_unrun(
    tmp_path: Path, isolated_git: Path
) -> None:
    plan = plan_of([one_phase(task("T-101", verify="`python3 src/a.py`"), task("T-102"))])
    project = make_project(tmp_path, plan)
    before = git_files(project.root)
    steps: list[Action] = [{"write": "src/a.py", "text": PLANTED_BY_VERIFY}]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    assert "git's configuration" in violations(project)
    assert git_files(project.root) == before
    assert run_by_memento(project) == []
    assert project.marker("T-101") == " "
    assert not project.ever_committed("src/a.py")
    assert project.dirty() == []


#: The module the agent writes, which verify runs: it leaves what the wall undoes after the
#: agent, a link out of the repository and a flag that hides a file's change from git.
LEFT_BY_VERIFY = """import os, subprocess
os.symlink("/etc/passwd", "src/passwd")
subprocess.run(["git", "update-index", "--skip-worktree", "src/guard.py"], check=True)
A = 1
"""


def test_what_the_agents_code_leaves_while_verify_runs_it_is_undone_as_after_the_agent(
    tmp_path: Path, isolated_git: Path
) -> None:
    """Verify runs the agent's code, behind the same wall as the agent."""
    plan = plan_of([one_phase(task("T-101", verify="`python3 src/a.py`"), task("T-102"))])
    project = make_project(tmp_path, plan)
    steps: list[Action] = [{"write": "src/a.py", "text": LEFT_BY_VERIFY}]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    said = violations(project)
    assert "while verify ran, the agent left src/passwd" in said, said
    assert "while verify ran, the agent set skip-worktree on src/guard.py" in said, said
    assert not (project.root / "src/passwd").is_symlink()
    assert project.git("ls-files", "-v", "src/guard.py").startswith("H ")
    assert project.marker("T-101") == " "
    assert project.dirty() == []


# -- class 5: refs ----------------------------------------------------------------------------


class RefAttack(NamedTuple):
    steps: list[Action]
    #: Words of the violation recorded.
    said: str


FORGED: dict[str, str] = {"path": "src/backdoor.py", "text": "OPEN = True\n"}
REF_ATTACKS = {
    "forged commit on the branch, HEAD detached where it was": RefAttack(
        [{"git": ["checkout", "-q", "--detach"]}, {"forge": "refs/heads/main", **FORGED}],
        "HEAD",
    ),
    "forged commit on another branch": RefAttack(
        [{"forge": "refs/heads/release", **FORGED}], "refs/heads/release"
    ),
    "forged remote-tracking branch": RefAttack(
        [{"forge": "refs/remotes/origin/main", **FORGED}], "refs/remotes/origin/main"
    ),
    "new tag": RefAttack([{"git": ["tag", "v9.9"]}], "refs/tags/v9.9"),
    "deleted branch": RefAttack([{"git": ["branch", "-D", "release"]}], "refs/heads/release"),
    "forged commit left as the merge in progress": RefAttack(
        [
            {"git": ["branch", "forged"]},
            {"forge": "refs/heads/forged", **FORGED},
            {"git": ["update-ref", "MERGE_HEAD", "refs/heads/forged"]},
            {"write": ".git/MERGE_MSG", "text": "merge\n"},
            {"git": ["update-ref", "-d", "refs/heads/forged"]},
        ],
        "MERGE_HEAD",
    ),
    "rebase and cherry-pick left in progress": RefAttack(
        [
            {"write": ".git/rebase-merge/head-name", "text": "refs/heads/main\n"},
            {"git": ["update-ref", "CHERRY_PICK_HEAD", "HEAD"]},
        ],
        "rebase-merge",
    ),
    "new branch checked out, with a commit": RefAttack(
        [
            {"git": ["checkout", "-q", "-b", "agent-work"]},
            {"git": ["add", "src/a.py"]},
            {"git": ["commit", "-q", "--no-verify", "-m", "work"]},
        ],
        "HEAD",
    ),
}


@pytest.mark.parametrize("kind", list(REF_ATTACKS))
def test_every_ref_heads_branch_and_operation_are_put_back_and_the_attempt_fails(
    tmp_path: Path, isolated_git: Path, kind: str
) -> None:
    attack = REF_ATTACKS[kind]
    project = make_project(tmp_path)
    start = project.head()
    project.git("branch", "release")
    project.git("update-ref", "refs/remotes/origin/main", start)
    project.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    project.git("tag", "-a", "-m", "first", "v1.0")
    project.git("pack-refs", "--all")
    project.git("branch", "loose")  # some refs packed, some loose
    before = refs(project)

    done = hostile_tick(project, [WORK, *attack.steps], isolated_git)

    assert done.returncode == 0, done.stderr
    said = violations(project)
    assert attack.said in said, said
    after = refs(project)
    assert after.pop("refs/heads/main") != before.pop("refs/heads/main")  # the bookkeeping
    assert after == before
    assert project.git("rev-parse", "HEAD~1").strip() == start
    assert project.subjects()[0].startswith("memento: T-101 failed")
    assert not project.ever_committed("src/backdoor.py")
    assert "src/backdoor.py" not in project.git("ls-tree", "-r", "--name-only", "HEAD")
    assert project.dirty() == []


def test_a_linked_work_tree_gets_its_shared_config_and_its_own_head_back(
    tmp_path: Path, isolated_git: Path
) -> None:
    main = make_project(tmp_path)
    linked = tmp_path / "linked"
    main.git("worktree", "add", "-q", "-b", "side", str(linked))
    project = Project(linked, main.outside)
    before_files, before_refs = git_files(main.root), refs(main)
    steps: list[Action] = [
        WORK,
        {"config": RECORDERS},
        {"hook": "post-commit"},
        {"git": ["checkout", "-q", "--detach"]},
        {"forge": "refs/heads/side", **FORGED},
        {"git": ["-C", str(main.root), "symbolic-ref", "HEAD", "refs/heads/side"]},
    ]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    said = violations(project)
    assert "git's configuration" in said and "moved HEAD" in said, said
    assert git_files(main.root) == before_files
    assert project.git("symbolic-ref", "HEAD").strip() == "refs/heads/side"
    assert project.git("rev-parse", "HEAD~1").strip() == main.head()
    after_refs = refs(main)
    assert after_refs.pop("refs/heads/side") == project.head()  # the bookkeeping, alone
    before_refs.pop("refs/heads/side")
    assert after_refs == before_refs  # the main work tree's HEAD and the other refs
    assert run_by_memento(project) == []


def test_a_push_goes_where_the_users_settings_said_before_the_agent_ran(
    tmp_path: Path, isolated_git: Path
) -> None:
    project = make_project(tmp_path)
    origin, decoy = tmp_path / "origin.git", tmp_path / "decoy.git"
    for bare in (origin, decoy):
        project.git("init", "-q", "--bare", str(bare))
    public = "https://git.example.invalid/origin.git"
    # the user's own rewrite, from their global file: memento's pushes need it
    (isolated_git / ".gitconfig").write_text(f'[url "{origin}"]\n\tinsteadOf = {public}\n')
    project.git("remote", "add", "origin", public)
    project.git("push", "-q", "origin", "main")
    steps: list[Action] = [
        WORK,
        {"config": {f"url.{decoy}.pushInsteadOf": public}, "file": "~/.gitconfig"},
    ]

    env = hostile_env(steps, home=isolated_git, record=project.outside / "records")
    done = project.memento("tick", "--push", "--agent-cmd", hostile_command(), env=env)

    assert done.returncode == 0, done.stderr
    subjects = project.git("--git-dir", str(origin), "log", "--format=%s", "main").splitlines()
    assert subjects[0] == "memento: complete T-101 Write module A"
    assert project.git("--git-dir", str(decoy), "for-each-ref") == ""


IDENTITY_ATTACKS: dict[str, list[Action]] = {
    "rewritten": [
        {"config": {"user.name": "Hostile", "user.email": "hostile@x"}, "file": "~/.gitconfig"}
    ],
    # whoever opens it to read waits for a writer: forever
    "replaced by a FIFO": [{"delete": "~/.gitconfig"}, {"fifo": "~/.gitconfig"}],
}


@pytest.mark.parametrize("kind", list(IDENTITY_ATTACKS))
def test_mementos_commits_name_the_user_their_files_named_before_the_agent_ran(
    tmp_path: Path, isolated_git: Path, kind: str
) -> None:
    project = make_project(tmp_path)
    project.git("config", "--unset", "user.name")
    project.git("config", "--unset", "user.email")
    (isolated_git / ".gitconfig").write_text("[user]\n\tname = The User\n\temail = user@home\n")
    start = project.head()
    steps: list[Action] = [WORK, *IDENTITY_ATTACKS[kind]]

    done = hostile_tick(project, steps, isolated_git)

    assert done.returncode == 0, done.stderr
    assert project.marker("T-101") == "x"  # the user's own file, not the repository's: allowed
    (isolated_git / ".gitconfig").unlink()  # else the test's own git would read it
    made = project.git("log", "--format=%an <%ae> %cn <%ce>", f"{start}..HEAD").splitlines()
    assert made and set(made) == {"The User <user@home> The User <user@home>"}, made
