"""``quick_args``: a plain ``memento tick`` line read without argparse, exactly as argparse
reads it; anything else left to argparse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memento_gh import cli
from memento_gh.quick_args import tick_arguments

CLEAN_ENV = {"PATH": "/usr/bin:/bin"}
VALUES = st.sampled_from(["claude", "x y {prompt_file}", "", "3", "-1", "=", "a=b", "tick", "-x"])
OPTION = st.one_of(
    st.tuples(
        st.sampled_from(["--agent", "--agent-cmd", "--worker-id", "--max-tasks", "--remote"]),
        VALUES,
        st.booleans(),
    ).map(lambda t: [f"{t[0]}={t[1]}"] if t[2] else [t[0], t[1]]),
    st.just(["--push"]),
    st.sampled_from(
        [["--help"], ["--ag", "x"], ["--"], ["--push=1"], ["-C", "x"], ["--max-tasks"]]
    ),
)
GLOBAL = st.one_of(
    st.tuples(st.sampled_from(["-C", "--plan-dir"]), st.sampled_from(["repo", "tick", "a b"])).map(
        list
    ),
    st.sampled_from([["-Crepo"], ["--plan-dir=plans"], ["-C=x"]]),
)


def flatten(parts: list[list[str]]) -> list[str]:
    return [word for part in parts for word in part]


def argparse_reading(words: list[str]) -> dict[str, object]:
    return vars(cli.build_parser("tick").parse_args(words))


@given(
    st.lists(GLOBAL, max_size=2).map(flatten),
    st.lists(OPTION, max_size=5).map(flatten),
)
def test_what_it_reads_is_what_argparse_reads(before: list[str], after: list[str]) -> None:
    words = [*before, "tick", *after]
    quick = tick_arguments(words, environ={})
    if quick is None:
        return  # argparse's to read, or to refuse
    assert vars(quick) == argparse_reading(words)


@pytest.mark.parametrize(
    "words",
    [
        ["tick", "--help"],
        ["tick", "--agent"],
        ["tick", "--agent-cmd", "--push"],
        ["tick", "--max-tasks", "two"],
        ["tick", "--ag", "claude"],
        ["tick", "--", "x"],
        ["tick", "extra"],
        ["status"],
        ["-C"],
        [],
    ],
)
def test_anything_but_plain_options_is_left_to_argparse(words: list[str]) -> None:
    assert tick_arguments(words, environ={}) is None


def test_the_defaults_come_from_the_same_variables() -> None:
    environ = {
        "MEMENTO_AGENT": "codex",
        "MEMENTO_AGENT_CMD": "run {prompt_file}",
        "MEMENTO_WORKER_ID": "w9",
        "MEMENTO_PLAN_DIR": "plans",
    }
    quick = tick_arguments(["tick"], environ=environ)

    assert quick is not None
    assert (quick.agent, quick.agent_cmd, quick.worker_id, quick.plan_dir) == (
        "codex",
        "run {prompt_file}",
        "w9",
        "plans",
    )


def test_a_plain_tick_never_imports_argparse(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from memento_gh import cli\n"
        f"status = cli.main(['-C', {str(tmp_path)!r}, 'tick', '--agent-cmd', 'true'])\n"
        "print(status, 'argparse' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=CLEAN_ENV, check=False
    )

    assert done.stdout.split() == ["1", "False"], done.stderr
    assert "no plan here" in done.stderr
