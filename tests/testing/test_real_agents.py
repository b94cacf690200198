"""The real-agent recipes: a missing CLI is an error that says how to install it, and a CLI
gets nothing of this machine's environment but PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.real_agents import GEMINI_POLICY, MissingCLI, base_env, claude, executable


def test_a_missing_cli_says_to_run_scripts_setup(tmp_path: Path) -> None:
    with pytest.raises(MissingCLI, match=r"codex 0\.171\.0 is not installed .* scripts/setup"):
        executable("codex", tools=tmp_path)


def test_an_installed_cli_is_found_in_tools_bin(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    cli = tmp_path / "bin" / "gemini"
    cli.write_text("#!/bin/sh\n")
    cli.chmod(0o755)

    assert executable("gemini", tools=tmp_path) == str(cli)


def test_the_environment_keeps_only_path_and_routes_other_hosts_to_the_server(
    tmp_path: Path,
) -> None:
    machine = {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "real-key", "HTTPS_PROXY": "corp:3128"}
    env = base_env("http://127.0.0.1:9", tmp_path / "home", machine)

    assert "ANTHROPIC_API_KEY" not in env
    assert env["PATH"].endswith("/usr/bin")
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://127.0.0.1:9"
    assert env["NO_PROXY"] == "127.0.0.1,localhost"
    assert env["HOME"] == str(tmp_path / "home")
    assert "name = Agent Test" in (tmp_path / "home" / ".gitconfig").read_text()


def test_claudes_git_rules_come_last_so_nothing_positional_is_taken_for_a_rule(
    tmp_path: Path,
) -> None:
    launch = claude("http://127.0.0.1:9", tmp_path / "home", "the task", model="opus")

    assert launch.argv[:2] == ["claude", "-p"]
    tail = launch.argv[launch.argv.index("--disallowedTools") :]
    assert tail == [
        "--disallowedTools",
        "Bash(git commit *)",
        "Bash(git push *)",
        "AskUserQuestion",
    ]
    assert launch.stdin == "the task"
    assert launch.argv[launch.argv.index("--model") + 1] == "opus"


def test_geminis_policy_denies_git_commit_and_push_above_the_shell_allowance() -> None:
    rules = GEMINI_POLICY.split("[[rule]]")[1:]
    allow, deny = rules
    assert 'decision = "allow"' in allow
    assert 'decision = "deny"' in deny
    assert "git\\\\s+(commit|push)" in deny
    assert int(deny.split("priority = ")[1].split()[0]) > int(
        allow.split("priority = ")[1].split()[0]
    )
