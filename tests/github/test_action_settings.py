"""The action's inputs as `memento github` reads them from its environment: how many workers
share the branch, and this worker's name; a bad value is one sentence naming the fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memento_gh.errors import UserError
from memento_gh.github.settings import read_settings
from testing.cli import call_memento

RUNNER = {
    "MEMENTO_GITHUB_TOKEN": "ghs_test_token_0123456789",
    "GITHUB_REPOSITORY": "octo/project",
    "GITHUB_RUN_ID": "4242",
}


def test_one_worker_named_after_the_run_when_nothing_is_set() -> None:
    settings = read_settings(RUNNER)
    assert (settings.workers, settings.worker_id) == (1, "actions-4242")


def test_without_a_run_id_the_worker_is_plain_actions() -> None:
    settings = read_settings({**RUNNER, "GITHUB_RUN_ID": ""})
    assert settings.worker_id == "actions"


@pytest.mark.parametrize(
    ("workers", "worker_id", "expected"),
    [
        ("3", "worker-2", (3, "worker-2")),
        (" 2 ", " worker-1 ", (2, "worker-1")),
        ("", "", (1, "actions-4242")),
        ("1", "runner.eu-1:2@host+b_c", (1, "runner.eu-1:2@host+b_c")),
        ("20", "w" * 64, (20, "w" * 64)),
    ],
)
def test_workers_and_worker_id_are_read_from_the_inputs(
    workers: str, worker_id: str, expected: tuple[int, str]
) -> None:
    settings = read_settings({**RUNNER, "MEMENTO_WORKERS": workers, "MEMENTO_WORKER_ID": worker_id})
    assert (settings.workers, settings.worker_id) == expected


@pytest.mark.parametrize("workers", ["0", "-2", "two", "1.5", "3 workers"])
def test_workers_must_be_a_whole_number_of_at_least_one(workers: str) -> None:
    with pytest.raises(UserError, match="workers must be a whole number of at least 1") as raised:
        read_settings({**RUNNER, "MEMENTO_WORKERS": workers})
    assert repr(workers) in str(raised.value)


@pytest.mark.parametrize(
    "worker_id",
    ["worker 2", "worker\t2", "-worker", "worker\n2", "w" * 65, "wörker", "w/1", "<b>"],
)
def test_a_worker_id_is_one_word_the_claimed_field_can_hold(worker_id: str) -> None:
    with pytest.raises(UserError, match="worker-id: a worker id is one word") as raised:
        read_settings({**RUNNER, "MEMENTO_WORKER_ID": worker_id})
    assert "such as worker-2" in str(raised.value)


def test_a_bad_input_stops_memento_github_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    done = call_memento(
        "github", cwd=tmp_path, env={**RUNNER, "MEMENTO_WORKERS": "0", "GITHUB_EVENT_NAME": ""}
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("memento: error: workers must be a whole number of at least 1")


def test_the_model_and_agent_args_inputs_are_read_and_split() -> None:
    settings = read_settings(
        {**RUNNER, "MEMENTO_MODEL": " gpt-5.5 ", "MEMENTO_AGENT_ARGS": "-c 'a=\"b c\"' --x"}
    )
    assert (settings.model, settings.agent_args) == ("gpt-5.5", ("-c", 'a="b c"', "--x"))
    assert (read_settings(RUNNER).model, read_settings(RUNNER).agent_args) == (None, ())


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("MEMENTO_MODEL", "--yolo", "the action's `model` input: a model is one word"),
        ("MEMENTO_AGENT_ARGS", "--x 'open", "the action's `agent-args` input cannot be read"),
    ],
)
def test_a_model_or_agent_args_input_that_cannot_be_used_names_the_input(
    name: str, value: str, said: str
) -> None:
    with pytest.raises(UserError, match=re.escape(said)):
        read_settings({**RUNNER, name: value})
