"""The tick's options, declared once: what ``tick``, ``run`` and ``schedule install`` take,
and the words of the ``memento tick`` line that ``schedule install`` puts in the crontab."""

from __future__ import annotations

import argparse

import pytest

from memento_gh import cli
from memento_gh.commands.tick_options import TICK_OPTIONS, add_tick_options, tick_words
from memento_gh.engine.agents.presets import KNOWN_AGENTS

EVERY_OPTION = [
    "--agent",
    "claude",
    "--agent-cmd",
    "my-agent {prompt_file}",
    "--model",
    "claude-opus-4-8",
    # A value that starts with "-" is joined to its option, or it would read as one.
    "--agent-args=--max-turns 3",
    "--worker-id",
    "box-1",
    "--max-tasks",
    "2",
    "--push",
    "--remote",
    "upstream",
]


def parsed(words: list[str], environ: dict[str, str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_tick_options(parser, environ or {})
    return parser.parse_args(words)


def test_the_options_given_come_back_as_the_same_words() -> None:
    assert [word.split("=")[0] for word in EVERY_OPTION if word.startswith("--")] == [
        option.flag for option in TICK_OPTIONS
    ]
    assert tick_words(parsed(EVERY_OPTION)) == EVERY_OPTION


def test_options_at_their_plain_defaults_are_left_out() -> None:
    assert tick_words(parsed([])) == []
    assert tick_words(parsed(["--remote", "origin"])) == []


def test_a_value_from_the_environment_is_written_out_for_cron() -> None:
    args = parsed([], {"MEMENTO_AGENT": "codex", "MEMENTO_WORKER_ID": "", "MEMENTO_REMOTE": "x"})

    assert (args.agent, args.worker_id, args.remote) == ("codex", None, "origin")
    assert tick_words(args) == ["--agent", "codex"]


@pytest.mark.parametrize("command", [["tick"], ["run", "--every", "5m"]])
def test_tick_and_run_take_every_tick_option(command: list[str]) -> None:
    args = cli.build_parser().parse_args([*command, *EVERY_OPTION])

    assert tick_words(args) == EVERY_OPTION


def test_schedule_install_takes_every_tick_option() -> None:
    argv = ["schedule", "install", "--every", "5m", *EVERY_OPTION]

    assert tick_words(cli.build_parser().parse_args(argv)) == EVERY_OPTION


def test_the_agent_help_names_every_known_agent() -> None:
    agent = next(option for option in TICK_OPTIONS if option.flag == "--agent")

    assert agent.help.startswith(
        "aider, claude, codex, gemini, openclaw, or command (with --agent-cmd) "
    )
    assert all(name in agent.help for name in KNOWN_AGENTS)
