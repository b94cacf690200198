"""Small output issues a new user meets (first-use issue, item 14), through the real CLI:

- the comment column of the plan's Meta block stays where it is when a value grows or
  shrinks, and the commands ``init`` and the demo suggest keep their comments in a column;
- a paused tick says so once;
- a retry's prompt says why the last attempt failed (its error analysis and verify output),
  within a budget;
- a note reaches the prompt quoted once, not ``> > …``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memento_gh.engine.prompt import LAST_ATTEMPT_BUDGET
from testing.cli import call_memento
from testing.repos import commit_all, init_repo
from testing.ticks import Project, good, make_project, one_phase, plan_of, task, wrong

COMMENT = re.compile(r"^- (?P<key>\w+):.*?(?P<comment><!--)")


def meta_comment_columns(plan_text: str) -> dict[str, int]:
    """The column of each Meta line's ``<!--``, by key."""
    meta = plan_text.split("## Meta\n", 1)[1].split("\n---", 1)[0]
    found = (COMMENT.match(line) for line in meta.splitlines())
    return {match["key"]: match.start("comment") for match in found if match}


def comment_columns(lines: list[str]) -> set[int]:
    return {line.index(" # ") for line in lines if " # " in line}


def initialised_project(tmp_path: Path) -> Project:
    """A repository set up by ``memento init``, its Meta comments in one column."""
    root = init_repo(tmp_path / "repo")
    (tmp_path / "outside").mkdir()
    done = call_memento("init", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    commit_all(root, "Add memento")
    return Project(root, tmp_path / "outside")


# -- 14a: columns ---------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_meta_comments_stay_in_their_column_when_values_grow_and_shrink(tmp_path: Path) -> None:
    project = initialised_project(tmp_path)
    text = project.plan_path.read_text(encoding="utf-8")
    columns = meta_comment_columns(text)
    assert len(set(columns.values())) == 1, columns  # as init writes it
    project.plan_path.write_text(
        text.replace("- total_ticks: 0 ", "- total_ticks: 9 "), encoding="utf-8"
    )
    commit_all(project.root, "nine ticks so far")
    project.script({"T-101": [{"write": "docs/HELLO.md", "text": "Hello.\n"}]})

    ticked = project.tick()
    assert ticked.returncode == 0, ticked.stdout + ticked.stderr
    assert project.plan().settings.total_ticks == 10
    assert meta_comment_columns(project.plan_path.read_text(encoding="utf-8")) == columns

    for control in ("pause", "resume"):  # auto -> paused -> auto: longer, then shorter again
        assert project.memento(control).returncode == 0
        assert meta_comment_columns(project.plan_path.read_text(encoding="utf-8")) == columns
    # nothing but the values changed: each line is as long as before (one digit more for
    # total_ticks, taken from its padding)
    after = project.plan_path.read_text(encoding="utf-8")
    assert len(after) == len(text)


def test_init_next_steps_keep_their_comments_in_a_column(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    done = call_memento("-C", "sub", "--plan-dir", "plans", "init", cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    steps = done.stdout.split("Next steps:\n", 1)[1].splitlines()
    commented = [line for line in steps if " # " in line]
    assert len(commented) >= 3, steps
    assert len(comment_columns(commented)) == 1, "\n".join(commented)


@pytest.mark.timeout(180)
def test_the_demo_keeps_its_columns(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    done = call_memento("--plan-dir", "planning/memento", "demo", str(folder), cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    look = done.stdout.split("Look around:\n", 1)[1].splitlines()
    commented = [line for line in look if " # " in line]
    assert len(commented) >= 2, look
    assert len(comment_columns(commented)) == 1, "\n".join(commented)
    plan = (folder / "planning/memento/MASTER_PLAN.md").read_text(encoding="utf-8")
    assert len(set(meta_comment_columns(plan).values())) == 1, plan  # total_ticks went from 9 to 10


# -- 14b: a paused tick ---------------------------------------------------------------------


def test_a_paused_tick_says_so_once(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.memento("pause").returncode == 0

    skipped = project.tick()

    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert skipped.stdout.count("mode=paused") == 1, skipped.stdout
    assert "Tick skipped: mode=paused" in skipped.stdout


# -- 14c: the retry's prompt ----------------------------------------------------------------


def last_attempt_section(prompt: str) -> str:
    start = prompt.index("## Your last attempt")
    end = prompt.find("\n## ", start + 1)
    return prompt[start : end if end != -1 else len(prompt)].rstrip("\n")


@pytest.mark.timeout(120)
def test_a_retrys_prompt_says_why_the_last_attempt_failed(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    first, second = tmp_path / "first.md", tmp_path / "second.md"
    project.script(
        {
            "T-101": {
                "attempts": [
                    [{"save_prompt": str(first)}, *wrong("T-101")],
                    [{"save_prompt": str(second)}, *good("T-101")],
                ]
            }
        }
    )

    project.tick()
    project.tick()

    assert project.marker("T-101") == "x"
    assert "## Your last attempt" not in first.read_text(encoding="utf-8")
    section = last_attempt_section(second.read_text(encoding="utf-8"))
    assert "tick #001" in section
    assert "verify exited with code 1: src/a.py has no A" in section
    assert section.endswith("(exit code 1):\n\n```text\nsrc/a.py has no A\n```")


@pytest.mark.timeout(120)
def test_after_memento_retry_the_prompt_still_says_why_it_was_blocked(tmp_path: Path) -> None:
    project = make_project(tmp_path, plan_of([one_phase()], max_retries="1"))
    prompt = tmp_path / "prompt.md"
    project.script(
        {
            "T-101": {
                "attempts": [
                    [{"stderr": "Not logged in · Please run /login"}, {"exit": 1}],
                    [{"save_prompt": str(prompt)}, *good("T-101")],
                ]
            }
        }
    )
    project.tick()
    assert project.marker("T-101") == "!"
    assert project.memento("retry", "T-101").returncode == 0

    project.tick()

    section = last_attempt_section(prompt.read_text(encoding="utf-8"))
    assert "the agent exited with code 1: Not logged in · Please run /login" in section


@pytest.mark.timeout(120)
def test_the_last_attempt_takes_at_most_its_budget_of_the_prompt(tmp_path: Path) -> None:
    noisy = "`python3 -c \"print(('AssertionError: ' + 'wrong value ' * 50 + '\\n') * 9)\"; exit 1`"
    project = make_project(tmp_path, plan_of([one_phase(task("T-101", verify=noisy))]))
    prompt = tmp_path / "prompt.md"
    project.script(
        {"T-101": {"attempts": [good("T-101"), [{"save_prompt": str(prompt)}, *good("T-101")]]}}
    )

    project.tick()
    project.tick()

    section = last_attempt_section(prompt.read_text(encoding="utf-8"))
    assert len(section.encode("utf-8")) <= LAST_ATTEMPT_BUDGET
    assert "AssertionError: wrong value wrong value" in section
    assert section.endswith("…\n```")  # the output, cut to fit
    assert "docs/TICK_STATUS.md" in section  # where the rest is


# -- 14d: notes quoted once -----------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_note_is_quoted_once_in_the_prompt(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    saved = tmp_path / "prompt.md"
    project.script({"T-101": [{"save_prompt": str(saved)}, *good("T-101")]})
    noted = project.memento("note", "--task", "T-101", "Use Redis for sessions\nsee redis.conf")
    assert noted.returncode == 0, noted.stdout + noted.stderr

    project.tick()

    prompt = saved.read_text(encoding="utf-8")
    assert "> Use Redis for sessions\n> see redis.conf" in prompt
    assert "> >" not in prompt
