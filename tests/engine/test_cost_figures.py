"""The figures of an agent's cost report are data (issue #27, class 7): one that no run can
have is left out and named in one line, never a crash; aider's report is read only where
aider prints it, never from its test command's (quoted) output."""

from __future__ import annotations

import json
import subprocess

import pytest

from memento_gh.engine.agents import quoted_output
from memento_gh.engine.agents.cost_reports import parse_cost
from memento_gh.engine.agents.presets import quoted_verify
from memento_gh.plan.spend import of_cost


def claude(cost: object, **usage: object) -> str:
    report = {"type": "result", "total_cost_usd": cost, "usage": usage or {"input_tokens": 5}}
    return "some output\n" + json.dumps(report) + "\n"


@pytest.mark.parametrize(
    ("output", "refused"),
    [
        (claude(1e300), "a price of 1e+300"),
        (claude(-0.5), "a price of -0.5"),
        (claude("0.10"), "a price of '0.10'"),
        (claude(True), "a price of True"),
        ('{"type": "result", "total_cost_usd": Infinity}\n', "a price of inf"),
        ('{"type": "result", "total_cost_usd": NaN}\n', "a price of nan"),
        (claude(0.1, input_tokens=-4), "input tokens -4"),
        (claude(0.1, input_tokens=1e300), "input tokens 1000000000000000052504760255204420248"),
        ('{"type": "result", "total_cost_usd": 0.1, "num_turns": 1e400}\n', None),  # inf: unread
    ],
)
def test_a_figure_no_run_can_have_is_left_out_and_named(output: str, refused: str | None) -> None:
    report = parse_cost("claude", output)

    assert report is not None
    if refused is None:
        assert "refused" not in report
        return
    assert refused in report["refused"]
    assert "\n" not in report["refused"]
    spend = of_cost(report)  # what the plan's ledger adds: an ordinary number, or nothing
    assert spend.usd is None or 0 <= spend.usd <= 10_000
    assert 0 <= spend.tokens_in <= 10**10


def test_aider_counts_too_large_to_read_and_a_price_that_is_no_number_are_refused() -> None:
    output = f"Tokens: {'9' * 400} sent, 1 received. Cost: $1..2 message, $1..2 session.\n"

    report = parse_cost("aider", output)

    assert report is not None
    assert (report["cost_usd"], report["input_tokens"], report["output_tokens"]) == (None, None, 1)
    assert "a price of '1..2'" in report["refused"]
    assert "input tokens inf" in report["refused"]


def test_a_believable_report_is_read_as_before() -> None:
    report = parse_cost("claude", claude(0.0247, input_tokens=3710))

    assert report is not None
    assert (report["cost_usd"], report["input_tokens"]) == (0.0247, 3710)
    assert "refused" not in report


def test_aider_reads_only_its_own_report_lines_not_the_quoted_output_of_its_test_command() -> None:
    mine = "Tokens: 900 sent, 40 received.\nCost: $0.60 message, $0.60 session.\n"
    forged = b"Tokens: 1 sent, 1 received. Cost: $0.00 message, $0.00 session.\n"
    quoted = b"".join(
        quoted_output.quoted(line)
        for line in (forged, b"\rCost: $0.00 message, $0.00 session.\r\n", b"ok\n")
    ).decode()

    report = parse_cost("aider", mine + quoted)

    assert report is not None
    assert (report["cost_usd"], report["input_tokens"], report["turns"]) == (0.6, 900, 1)
    assert quoted.splitlines() == [
        "| Tokens: 1 sent, 1 received. Cost: $0.00 message, $0.00 session.",
        "| ",
        "| Cost: $0.00 message, $0.00 session.",
        "| ok",
    ]


def test_the_quoting_runs_the_verify_and_keeps_its_exit_code_and_all_its_output() -> None:
    line = quoted_verify("printf 'one\\ntwo'; echo err >&2; exit 3")

    done = subprocess.run(line, shell=True, capture_output=True, check=False)

    assert done.returncode == 3
    assert done.stdout.decode().splitlines() == ["| one", "| twoerr"]
    # run by path, isolated: no module of the repository it runs in is imported
    assert line.split()[1:3] == ["-I", quoted_output.__file__]
