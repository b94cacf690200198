"""Nothing the agent, its verify or the repository wrote starts a workflow command on the
runner (issue #27, class 8), in real `memento github` runs (the origin over HTTP wants the
token, a listener stands in for the attacker) and in a real ``memento tick`` process on a
runner (``GITHUB_ACTIONS=true``).

The runner reads each line of a step's output (broken at ``\\n`` and ``\\r``) for
``::command::value`` at its start, after white space, and ``##[command]value`` anywhere in
it (actions/runner, ``ActionCommand.TryParseV2`` and ``TryParse``). The agent here names
files with line breaks and commands in them, says commands as its last words, and has its
verify print them; the plan's task says one too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memento_gh.runner_text import WorkflowCommand, inert
from testing.action_runs import ActionProject
from testing.agents import Action, hostile_command, hostile_env
from testing.cli import run_memento
from testing.fake_github import FakeGitHub
from testing.hostile_runs import attacked_run, attacker, leaked
from testing.ticks import make_project, one_phase, plan_of, task

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.timeout(120)]

FORGED = (
    "::warning file=src/a.py,line=1::FORGED",
    "::set-output name=outcome::pwned",
    "::stop-commands::tok",
    "  ::add-mask::ghs",
    "##[set-output name=outcome;]pwned",
)
_LINES = re.compile(r"\r\n|\r|\n")


def commands_in(text: str) -> list[str]:
    """The lines of ``text`` the runner would run as workflow commands."""
    found = []
    for line in _LINES.split(text):
        legacy = line.find("##[")
        if line.lstrip().startswith("::") or (legacy >= 0 and "]" in line[legacy:]):
            found.append(line)
    return found


def forged(said: list[str]) -> list[str]:
    """The workflow commands in what a run said, besides memento's own annotations."""
    return [
        command
        for line in said
        if not isinstance(line, WorkflowCommand)
        for command in commands_in(line)
    ]


@pytest.mark.parametrize(
    "how",
    ["file names", "last words", "verify output", "task description"],
)
def test_text_of_the_agent_verify_or_repository_starts_no_workflow_command(
    tmp_path: Path,
    github: FakeGitHub,
    isolated_git: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    verify = "`grep -q A src/a.py`"
    description = "Write module A"
    steps: list[Action] = [{"write": "src/a.py", "text": "A = 1\n"}]
    if how == "file names":
        steps += [{"write": f"src/a.py\n{line}", "text": "x\n"} for line in FORGED]
    elif how == "last words":
        steps += [{"print": line} for line in FORGED] + [{"exit": 1}]
    elif how == "verify output":
        shown = "".join(f"{line}\\n" for line in FORGED).replace("'", "")
        verify = f"`printf '%b' 'fails\\n{shown}\\r::error::cr'; exit 1`"
    else:
        description = "Write module A " + " ".join(FORGED)
    t101 = task("T-101", verify=verify).replace("Write module A", description, 1)
    project = ActionProject(tmp_path, github, plan_of([one_phase(t101, task("T-102"))]))
    env = {
        "MEMENTO_AGENT_CMD": hostile_command(),
        **hostile_env(steps, home=isolated_git, record=project.outside / "records"),
    }

    with attacker() as listener:
        run = attacked_run(project, listener, monkeypatch, env=env)

    result = run.ran
    assert result.code == 0, result.said
    assert forged(result.said) == [], result.said
    # memento's own annotations keep theirs escaped: one line each
    own = [line for line in result.said if isinstance(line, WorkflowCommand)]
    assert all(len(_LINES.split(line)) == 1 for line in own)
    assert result.outputs["outcome"] in ("success", "failed"), result.outputs
    assert "pwned" not in result.outputs.values()
    assert run.attacker_requests == []
    assert run.origin_requests
    if how in ("file names", "last words", "verify output"):
        assert project.marker("T-101") == " "  # failed, and its change rolled back
        assert not [name for name in _pushed_names(project) if "\n" in name]
    assert not leaked("\n".join(result.said))


def _pushed_names(project: ActionProject) -> list[str]:
    from testing.repos import git

    return git(project.origin, "ls-tree", "-r", "-z", "--name-only", "memento").split("\0")


@pytest.mark.timeout(60)
def test_a_tick_on_a_runner_prints_no_workflow_command_the_plan_or_agent_wrote(
    tmp_path: Path, isolated_git: Path
) -> None:
    """``memento tick`` (not ``memento github``) in a workflow step: its output and its
    errors go through the same filter."""
    t101 = task("T-101").replace("Write module A", "Write ##[set-output name=x;]pwned", 1)
    project = make_project(tmp_path, plan_of([one_phase(t101, task("T-102"))]))
    steps: list[Action] = [
        {"write": "src/a.py", "text": "A = 1\n"},
        {"write": "src/a.py\r::error::FORGED", "text": "x\n"},
    ]
    env = {
        **project.env(hostile_env(steps, home=isolated_git, record=project.outside / "rec")),
        "GITHUB_ACTIONS": "true",
    }

    done = run_memento("tick", "--agent-cmd", hostile_command(), cwd=project.root, env=env)

    assert done.returncode == 0, done.stderr
    assert "T-101" in done.stdout and "failed" in done.stdout
    assert commands_in(done.stdout) == [] and commands_in(done.stderr) == []
    assert "## [set-output name=x;]pwned" in done.stdout  # shown, not run


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\n::warning::x", "a\n\\::warning::x"),
        ("a\r  ::error::x", "a\r\\  ::error::x"),
        ("files: ##[add-mask]x", "files: ## [add-mask]x"),
        ("no command: a::b", "no command: a::b"),
        ("\u2003::notice::x", "\\\u2003::notice::x"),
    ],
)
def test_inert_keeps_the_text_and_its_lines_and_starts_no_command(text: str, shown: str) -> None:
    assert inert(text) == shown
    assert inert(inert(text)) == inert(text)
    assert commands_in(inert(text)) == []


def test_a_link_the_agent_puts_in_place_of_the_runners_output_file_is_never_written_through(
    tmp_path: Path, github: FakeGitHub, isolated_git: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's output file (``GITHUB_OUTPUT``) lies outside the checkout, where the agent
    can find it: a link there to .git/config gets no ``outcome=…`` line appended."""
    project = ActionProject(tmp_path, github)
    checkout = tmp_path / "run-1" / "checkout"
    steps: list[Action] = [
        {"write": "src/a.py", "text": "A = 1\n"},
        {"symlink": str(tmp_path / "run-1" / "outputs"), "to": str(checkout / ".git/config")},
    ]
    env = {
        "MEMENTO_AGENT_CMD": hostile_command(),
        **hostile_env(steps, home=isolated_git, record=project.outside / "records"),
    }

    with attacker() as listener:
        run = attacked_run(project, listener, monkeypatch, env=env)

    assert "outcome=" not in (checkout / ".git" / "config").read_text()
    assert "not a regular file (a symbolic link)" in str(run.result), run.result
    assert project.marker("T-101") == "x"  # the run's work was pushed before
    assert run.attacker_requests == []
