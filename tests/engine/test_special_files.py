"""memento reads only regular files, never blocks on one, and an agent that leaves a FIFO, a
socket, a device or a link out of the repository breaks a rule: the attempt fails and what
it left is removed.

A FIFO blocks whoever opens it for reading until someone opens it for writing: before this,
one in ``src/`` hung every later tick while it built the prompt, and one in place of the plan
hung ``tick``, the recovery, ``status`` and ``validate``. A link to ``/dev/zero`` in place of
the plan read forever. Every test that could hang runs memento as a process of its own with
a timeout, so that the old code fails by timing out. The hostile agent is
``testing/agents/planter.py``.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from memento_gh import files
from memento_gh.engine.context import gather_context
from memento_gh.errors import UserError
from testing.agents import PLANTER
from testing.ticks import Completed, Project, make_project, one_phase, plan_of, task

GOOD = "write:src/a.py=A = 1\\n"
HANG = 30  # seconds: a memento that used to hang is killed after this, failing the test


def project_with_context(tmp_path: Path, *, max_retries: str = "3") -> Project:
    """T-101 may change any file under src/ (its verify checks src/a.py)."""
    plan = plan_of([one_phase(task("T-101", context_files="[src/*]"))], max_retries=max_retries)
    return make_project(tmp_path, plan)


def plant(project: Project, *specs: str, timeout: float = HANG) -> Completed:
    """A tick whose agent leaves ``specs`` (see planter.py) after doing T-101's work."""
    agent = " ".join(shlex.quote(part) for part in (str(PLANTER), "{prompt_file}", *specs))
    return project.memento_process("tick", "--agent-cmd", agent, timeout=timeout)


def make_fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(path):
        path.unlink()
    os.mkfifo(path)


def make_socket(path: Path) -> None:
    if os.path.lexists(path):
        path.unlink()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))


def link_to_dev_zero(path: Path) -> None:
    if os.path.lexists(path):
        path.unlink()
    path.symlink_to("/dev/zero")


def analysis(project: Project) -> str:
    return project.entries()[-1].error_analysis or ""


# -- what the agent leaves -------------------------------------------------------------------

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="making a device needs root")


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("spec", "path", "said"),
    [
        ("fifo:src/pipe", "src/pipe", "a FIFO"),
        ("fifo:deep/er/pipe", "deep/er/pipe", "a FIFO"),
        ("socket:src/agent.sock", "src/agent.sock", "a socket"),
        pytest.param("device:src/null", "src/null", "a character device", marks=ROOT_ONLY),
        ("link:src/passwd=/etc/passwd", "src/passwd", "leading out of the repository"),
        ("link:src/up=../../outside", "src/up", "leading out of the repository"),
        ("link:src/git=../.git/config", "src/git", "leading out of the repository"),
        # in place of a tracked file: git itself cannot read it ("cannot hash")
        ("fifo:src/guard.py", "src/guard.py", "a FIFO"),
        # spared by .memento_cleanignore, removed all the same
        ("fifo:node_modules/pipe", "node_modules/pipe", "a FIFO"),
        ("link:.env=/etc/passwd", ".env", "leading out of the repository"),
    ],
)
def test_a_special_file_the_agent_leaves_fails_the_attempt_and_is_removed(
    tmp_path: Path, spec: str, path: str, said: str
) -> None:
    project = project_with_context(tmp_path)

    done = plant(project, GOOD, spec)

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == " "
    assert project.plan().task("T-101").retries == 1  # type: ignore[union-attr]
    assert path in analysis(project)
    assert said in analysis(project)
    left = project.root / path
    assert not os.path.lexists(left) or (left.is_file() and not left.is_symlink())
    assert (project.root / "src" / "guard.py").read_text(encoding="utf-8") == "G = 1\n"
    assert project.dirty() == []
    assert not project.ever_committed("src/a.py")


@pytest.mark.timeout(120)
def test_a_folder_moved_in_from_outside_is_searched_whole(tmp_path: Path) -> None:
    """A FIFO made long before, inside a folder the agent renames into the repository."""
    project = project_with_context(tmp_path)
    make_fifo(project.outside / "prep" / "deeper" / "pipe")

    done = plant(project, GOOD, f"move:src/prep={project.outside / 'prep'}")

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == " "
    assert "src/prep/deeper/pipe" in analysis(project)
    assert not os.path.lexists(project.root / "src" / "prep" / "deeper" / "pipe")
    assert project.dirty() == []


@pytest.mark.timeout(120)
def test_links_that_stay_inside_and_gitignored_folders_are_left_alone_but_not_logs(
    tmp_path: Path,
) -> None:
    """Links that stay inside are ordinary content. Folders git ignored before the agent ran
    are not walked (nothing there is committed, and memento reads nothing there without
    checking it), except memento's own logs/, where it writes."""
    project = project_with_context(tmp_path)
    (project.root / ".gitignore").write_text("logs/\nbuild/\n", encoding="utf-8")
    (project.root / "build").mkdir()
    (project.root / "build" / "out.o").write_text("", encoding="utf-8")
    project.git("commit", "-qam", "ignore build/")

    specs = ("link:src/alias.py=a.py", "fifo:build/pipe", "fifo:logs/pipe", "fifo:src/late")
    done = plant(project, GOOD, *specs)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "src/late" in analysis(project)
    assert "logs/pipe" in analysis(project)
    assert "alias" not in analysis(project)
    assert "build/pipe" not in analysis(project)
    assert os.path.lexists(project.root / "build" / "pipe")
    assert not os.path.lexists(project.root / "logs" / "pipe")


# -- what memento reads ----------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_fifo_already_in_the_context_files_is_a_note_in_the_prompt_not_a_hang(
    tmp_path: Path,
) -> None:
    """Not the agent's (it was there before): no violation, and it is left alone."""
    project = project_with_context(tmp_path)
    make_fifo(project.root / "src" / "pipe")
    saved = project.outside / "prompt.md"
    project.script({"T-101": [{"save_prompt": str(saved)}, {"write": "src/a.py", "text": "A\n"}]})

    done = project.tick_process(timeout=HANG)

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == "x"
    prompt = saved.read_text(encoding="utf-8")
    assert "src/pipe" in prompt
    assert "not a regular file" in prompt
    assert os.path.lexists(project.root / "src" / "pipe")


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("docs/MASTER_PLAN.md", "a FIFO"),
        ("docs/MASTER_PLAN.md", "a socket"),
        ("docs/PROJECT_MAP.md", "a FIFO"),
        (".memento_cleanignore", "a FIFO"),
        (".memento_ignore", "a FIFO"),
        (".memento/worker_prompt.md", "a FIFO"),
        ("docs/memory/known-issues.md", "a FIFO"),
    ],
)
def test_a_file_of_mementos_that_is_not_a_regular_file_stops_the_tick_with_its_name(
    tmp_path: Path, path: str, kind: str
) -> None:
    project = project_with_context(tmp_path)
    make = {"a socket": make_socket, "a symbolic link": link_to_dev_zero}.get(kind, make_fifo)
    make(project.root / path)

    done = project.tick_process(timeout=HANG)

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{path}: not a regular file ({kind})" in done.stderr
    assert "Traceback" not in done.stderr


def limited(project: Project, *args: str) -> Completed:
    """``memento ARGS`` with its address space capped at 2 GB: reading /dev/zero to its end
    fails with MemoryError there instead of taking the whole machine's memory."""
    command = shlex.join([sys.executable, "-m", "memento_gh", *args])
    return subprocess.run(
        ["sh", "-c", f"ulimit -v 2000000 && exec {command}"],
        cwd=project.root,
        env=project.env({"NO_COLOR": "1"}),
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )


@pytest.mark.timeout(150)
@pytest.mark.parametrize("command", ["status", "validate", "next", "tick"])
@pytest.mark.parametrize(
    ("replace", "said"),
    [
        (make_fifo, "not a regular file (a FIFO)"),
        (
            lambda path: (path.unlink(), path.symlink_to("/dev/zero")),
            "not a regular file (a symbolic link)",
        ),
    ],
    ids=["fifo", "link-to-dev-zero"],
)
def test_a_plan_that_is_not_a_regular_file_is_an_error_in_every_command(
    tmp_path: Path, command: str, replace: object, said: str
) -> None:
    project = project_with_context(tmp_path)
    replace(project.plan_path)  # type: ignore[operator]
    args = ["tick", "--agent-cmd", "true"] if command == "tick" else [command]

    done = limited(project, *args)

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"docs/MASTER_PLAN.md: {said}" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.timeout(150)
@pytest.mark.parametrize("kind", ["a FIFO", "a symbolic link"])
def test_notes_that_are_not_a_regular_file_are_an_error_in_validate_not_a_hang(
    tmp_path: Path, kind: str
) -> None:
    """(A tick, ``note`` or ``pause`` stops earlier on a tracked file like this one: git
    refuses it, "unsupported file type", when it looks for uncommitted changes.)"""
    project = project_with_context(tmp_path)
    path = "docs/HUMAN_NOTES.md"
    (link_to_dev_zero if kind == "a symbolic link" else make_fifo)(project.root / path)

    done = limited(project, "validate")

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{path}: not a regular file ({kind})" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.timeout(120)
def test_the_recovery_with_the_plan_replaced_by_a_fifo_is_an_error_not_a_hang(
    tmp_path: Path,
) -> None:
    project = project_with_context(tmp_path)
    marker = project.root / ".git" / "memento" / "running.json"
    marker.parent.mkdir()
    marker.write_text('{"task": "T-101", "tick": 1, "run": "dead"}', encoding="utf-8")
    make_fifo(project.plan_path)

    done = project.tick_process(timeout=HANG)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "docs/MASTER_PLAN.md: not a regular file (a FIFO)" in done.stderr


@pytest.mark.timeout(120)
def test_a_running_marker_replaced_by_a_fifo_is_recovered_from(tmp_path: Path) -> None:
    project = project_with_context(tmp_path)
    make_fifo(project.root / ".git" / "memento" / "running.json")
    project.script({"T-101": [{"write": "src/a.py", "text": "A\n"}]})

    done = project.tick_process(timeout=HANG)

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == "x"
    assert not os.path.lexists(project.root / ".git" / "memento" / "running.json")


@pytest.mark.timeout(120)
def test_the_tick_log_replaced_by_a_fifo_while_the_agent_runs_does_not_hang_the_tick(
    tmp_path: Path,
) -> None:
    """The log is opened once per tick, before the agent: verify writes where the agent's
    output went. The FIFO is the agent's violation, and is removed."""
    project = project_with_context(tmp_path)

    done = plant(project, GOOD, "fifo:logs/tick_*.log")

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == " "
    assert "a FIFO" in analysis(project)
    assert list((project.root / "logs").glob("tick_*.log")) == []


@pytest.mark.timeout(120)
def test_an_alert_file_the_agent_linked_elsewhere_is_not_written_through(
    tmp_path: Path,
) -> None:
    """``.memento_alert`` is written when a task ends blocked; the agent's link to a file
    outside must not make memento overwrite that file."""
    project = project_with_context(tmp_path, max_retries="1")
    victim = project.outside / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")

    done = plant(project, f"link:.memento_alert={victim}")

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == "!"
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert not (project.root / ".memento_alert").is_symlink()


# -- the readers themselves ------------------------------------------------------------------


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("make", "said"),
    [
        (make_fifo, "not a regular file (a FIFO)"),
        (make_socket, "not a regular file (a socket)"),
        # to a regular file: the old code followed it (to /dev/zero, it read until out of memory)
        (lambda path: path.symlink_to(__file__), "not a regular file (a symbolic link)"),
        (lambda path: path.mkdir(), "is a directory, not a file"),
    ],
    ids=["fifo", "socket", "link", "directory"],
)
def test_read_text_refuses_anything_but_a_regular_file(
    tmp_path: Path, make: object, said: str
) -> None:
    path = tmp_path / "MASTER_PLAN.md"
    make(path)  # type: ignore[operator]

    with pytest.raises(UserError, match=r"MASTER_PLAN\.md: " + re.escape(said)):
        files.read_text(path)


@pytest.mark.timeout(20)
def test_read_text_refuses_a_file_larger_than_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "MASTER_PLAN.md"
    with path.open("wb") as stream:
        stream.truncate((64 << 20) + 1)  # sparse: costs no disk

    with pytest.raises(UserError, match=r"MASTER_PLAN\.md: larger than 64 MB"):
        files.read_text(path)


@pytest.mark.timeout(20)
def test_context_files_that_are_special_get_a_note_instead_of_their_content(
    tmp_path: Path,
) -> None:
    make_fifo(tmp_path / "src" / "pipe")
    make_socket(tmp_path / "src" / "sock")
    (tmp_path / "src" / "a.py").write_text("A = 1\n", encoding="utf-8")

    from memento_gh.engine.prompt import SPECIAL

    found = gather_context(tmp_path, ["src/*", "src/pipe"], [])

    assert [(item.path, item.note) for item in found] == [
        ("src/a.py", ""),
        ("src/pipe", SPECIAL),
        ("src/sock", SPECIAL),
    ]


# -- in .git: what memento's own git reads ---------------------------------------------------


@pytest.fixture
def unblock(tmp_path: Path) -> Iterator[None]:
    """After the test, a writer for every FIFO left under ``tmp_path``: a git that the old
    code left blocked on opening one (memento, killed at the timeout, cannot stop it) ends."""
    yield
    for path in tmp_path.rglob("*"):
        if path.is_fifo():
            with suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("unblock")
@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/post-commit",
        ".git/info/attributes",
        ".git/refs/heads/x",
        ".git/index",
        ".git/HEAD",
        ".git/refs/heads/main",
    ],
)
def test_a_fifo_the_agent_leaves_in_git_folder_fails_the_attempt_not_hangs_the_tick(
    tmp_path: Path, path: str
) -> None:
    """git opens .git/config, the hooks, the attributes and the refs as it needs them: a
    FIFO there blocked memento's own git status (and the tick's look at .git/hooks)."""
    project = project_with_context(tmp_path)

    done = plant(project, GOOD, f"fifo:{path}")

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == " "
    assert f"{path}, a FIFO" in analysis(project)
    assert not os.path.lexists(project.root / path) or not (project.root / path).is_fifo()
    assert not project.ever_committed("src/a.py")
    assert project.dirty() == []
    assert project.git("symbolic-ref", "HEAD").strip() == "refs/heads/main"


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("unblock")
def test_a_fifo_already_in_git_hooks_does_not_hang_the_look_at_the_hooks(tmp_path: Path) -> None:
    """Not the agent's (it was there before): the tick's fingerprint of .git/hooks and
    .git/info reads every file there, and must not wait on a FIFO."""
    project = project_with_context(tmp_path)
    make_fifo(project.root / ".git" / "hooks" / "pre-push")
    project.script({"T-101": [{"write": "src/a.py", "text": "A\n"}]})

    done = project.tick_process(timeout=HANG)

    assert done.returncode == 0, done.stdout + done.stderr
    assert project.marker("T-101") == "x"
