"""Agents: each preset's command line, command templates that no placeholder value can bend,
an environment without push credentials (checked with real processes and real git), cost
reports read from each agent's own output format, and the fake agent every later test uses."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memento_gh.architect.run import ARCHITECT_TASK
from memento_gh.engine.agents.check import choose_agent
from memento_gh.engine.agents.cost_reports import COST_KEYS, parse_cost
from memento_gh.engine.agents.presets import (
    KNOWN_AGENTS,
    AgentRun,
    agent_argv,
    agent_env,
    prepare_run,
    quoted_verify,
    run_agent,
)
from memento_gh.errors import UserError
from memento_gh.plan.model import Task
from memento_gh.plan.scanner import parse
from testing.agents import scripted_command, scripted_env, write_script
from testing.plans import DEFAULT_FIELDS, phase_block, plan_text, task_block
from testing.repos import commit_all, git, init_repo

PRESET_NAMES = ("claude", "codex", "aider", "gemini", "openclaw")


@pytest.fixture
def task() -> Task:
    fields = {
        **DEFAULT_FIELDS,
        "verify": "`pytest -q tests/test_a.py`",
        "context_files": "[src/a.py, src/db/, tests/*.py, docs/notes.md]",
    }
    plan = parse(plan_text([phase_block(1, "Core", [task_block("T-101", fields=fields)])]))
    found = plan.task("T-101")
    assert found is not None
    return found


@pytest.fixture
def long_prompt(tmp_path: Path) -> Path:
    """A prompt far beyond what one argv item may hold (Linux: 128 KiB)."""
    path = tmp_path / "prompt.md"
    path.write_text("# Task T-101\n" + "Context line that must not reach argv.\n" * 8000)
    return path


def preset(name: str, prompt: Path, task: Task, repo: Path) -> list[str]:
    return agent_argv(name, None, prompt_file=prompt, task=task, repo=repo, timeout=1800)


def follows(argv: list[str], flag: str, *values: str) -> bool:
    """Whether ``flag`` appears in ``argv`` immediately followed by ``values``."""
    return any(
        argv[index : index + 1 + len(values)] == [flag, *values]
        for index in range(len(argv))
        if argv[index] == flag
    )


# --- presets -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_no_preset_puts_the_prompt_on_the_command_line(
    name: str, long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    argv = preset(name, long_prompt, task, tmp_path)

    assert argv[0] == name
    assert sum(len(item) for item in argv) < 2000
    assert not any("must not reach argv" in item for item in argv)


def test_claude_prints_json_accepts_edits_runs_commands_and_may_not_commit_or_push(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    argv = preset("claude", long_prompt, task, tmp_path)

    assert argv[1] == "-p"  # print mode; the prompt itself comes on stdin
    assert follows(argv, "--output-format", "json")
    assert follows(argv, "--permission-mode", "acceptEdits")
    assert follows(argv, "--allowedTools", "Bash")  # to run the verify; the deny rules win
    assert follows(argv, "--disallowedTools", "Bash(git commit *)", "Bash(git push *)")
    # --disallowedTools takes several values: nothing positional may come after it
    assert argv.index("--disallowedTools") > argv.index("-p") + 1


def test_codex_writes_in_its_sandbox_reports_jsonl_and_reads_the_prompt_from_stdin(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    argv = preset("codex", long_prompt, task, tmp_path)

    assert argv[:2] == ["codex", "exec"]
    assert follows(argv, "--sandbox", "workspace-write")
    assert "--json" in argv
    assert follows(argv, "--cd", str(tmp_path))
    assert argv[-1] == "-"
    assert "--full-auto" not in argv
    assert "--dangerously-bypass-approvals-and-sandbox" not in argv


def test_aider_takes_the_message_file_never_commits_and_gets_the_single_context_files(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    argv = preset("aider", long_prompt, task, tmp_path)

    assert follows(argv, "--message-file", str(long_prompt))
    for flag in ("--yes-always", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore"):
        assert flag in argv
    files = [item for item in argv if item.startswith("--file=")]
    assert files == ["--file=src/a.py", "--file=docs/notes.md"]
    # aider has no shell: its test command runs the verify after each edit, its output
    # quoted (aider prints it among its own cost reports).
    assert follows(argv, "--test-cmd", quoted_verify("pytest -q tests/test_a.py"), "--auto-test")
    assert follows(argv, "--map-tokens", "0")
    assert follows(argv, "--aiderignore", str(long_prompt.with_name("prompt.aiderignore")))


def test_aider_is_kept_from_mementos_files_and_gets_the_folders_of_its_files(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    run = AgentRun(long_prompt, task, repo, 60, protected=("docs/MASTER_PLAN.md", ".github/"))

    written = prepare_run("aider", run)

    assert written == [long_prompt.with_name("prompt.aiderignore")]
    assert written[0].read_text() == "docs/MASTER_PLAN.md\n.github/\n"
    # --file=docs/notes.md in a folder that did not exist: aider would find no repository.
    assert (repo / "src").is_dir() and (repo / "docs").is_dir()
    assert list(repo.rglob("*.*")) == []


def test_aider_as_the_architect_edits_its_proposal_and_sees_no_other_file(
    long_prompt: Path, tmp_path: Path
) -> None:
    proposal = tmp_path / ".memento_proposal.md"
    argv = agent_argv(
        "aider",
        None,
        prompt_file=long_prompt,
        task=ARCHITECT_TASK,
        repo=tmp_path,
        proposal_file=proposal,
    )
    # The proposal is git-ignored (.git/info/exclude): aider skips such a file unless told.
    assert [item for item in argv if item.startswith("--file=")] == [f"--file={proposal}"]
    assert "--add-gitignore-files" in argv
    assert "--test-cmd" not in argv
    run = AgentRun(long_prompt, ARCHITECT_TASK, tmp_path, 60, proposal_file=proposal)
    (ignore,) = prepare_run("aider", run)
    assert ignore.read_text() == "*\n!/.memento_proposal.md\n"


def test_aider_fetches_no_url_its_prompt_names(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    # With --yes-always it would add the URL to its chat: fetch it, install a scraper first.
    assert "--no-detect-urls" in preset("aider", long_prompt, task, tmp_path)


def test_gemini_runs_headless_in_any_folder_with_a_policy_and_reports_json(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    argv = preset("gemini", long_prompt, task, tmp_path)

    assert argv[1] == "-p"
    assert "--skip-trust" in argv  # else exit 55 in a folder never trusted (a new runner)
    assert "--approval-mode=auto_edit" in argv
    policy = long_prompt.with_name("prompt.gemini-policy.toml")
    assert follows(argv, "--policy", str(policy))
    (written,) = prepare_run("gemini", AgentRun(long_prompt, task, tmp_path, 60))
    assert written == policy
    # The rule that denies git commit and push outranks the one that allows the shell.
    allow, deny = policy.read_text().split("\n\n")
    assert 'decision = "allow"' in allow and "priority = 100" in allow
    assert 'decision = "deny"' in deny and "priority = 900" in deny
    assert 'commandRegex = "git\\\\s+(commit|push)"' in deny
    assert follows(argv, "-o", "json")
    assert not any("yolo" in item for item in argv)


def test_openclaw_runs_one_headless_turn_in_the_repository_from_stdin_within_the_timeout(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    argv = preset("openclaw", long_prompt, task, tmp_path)

    # `agent exec`: no agent to add first; the prompt comes on stdin, never on argv.
    assert argv[:3] == ["openclaw", "agent", "exec"]
    assert follows(argv, "--message-file", "-")
    assert follows(argv, "--cwd", str(tmp_path))
    assert follows(argv, "--timeout", "1800")
    assert "--json" in argv
    assert "--agent" not in argv and "--local" not in argv


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_each_preset_takes_the_model_and_the_users_arguments_where_its_cli_reads_them(
    long_prompt: Path, task: Task, tmp_path: Path, name: str
) -> None:
    flag = "--model"  # every CLI's name for it
    plain = preset(name, long_prompt, task, tmp_path)
    argv = agent_argv(
        name,
        None,
        prompt_file=long_prompt,
        task=task,
        repo=tmp_path,
        timeout=1800,
        model="m-1",
        extra=["--max-turns", "3"],
    )

    assert "m-1" not in plain
    at = argv.index(flag)
    assert argv[at : at + 4] == [flag, "m-1", "--max-turns", "3"]
    assert [item for item in argv if item not in (flag, "m-1", "--max-turns", "3")] == plain
    if name == "claude":  # --disallowedTools takes every value after it: it stays last
        assert argv.index("--disallowedTools") > at
        assert argv[-3:] == ["Bash(git commit *)", "Bash(git push *)", "AskUserQuestion"]
    if name == "codex":  # "-": the prompt on stdin, positional, last
        assert argv[-1] == "-"


def test_agent_names_are_case_blind(long_prompt: Path, task: Task, tmp_path: Path) -> None:
    assert preset(" Claude ", long_prompt, task, tmp_path) == preset(
        "claude", long_prompt, task, tmp_path
    )


def test_an_unknown_agent_is_refused_with_the_known_names(
    long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    with pytest.raises(UserError) as refused:
        preset("cursor", long_prompt, task, tmp_path)

    assert "unknown agent 'cursor'" in str(refused.value)
    assert "aider, claude, codex, command, gemini, openclaw" in str(refused.value)
    assert KNOWN_AGENTS == ("aider", "claude", "codex", "command", "gemini", "openclaw")


@pytest.mark.parametrize(
    ("agent", "agent_cmd", "chosen"),
    [
        ("claude", None, "claude"),
        ("claude", "my-agent {prompt_file}", "claude"),  # --agent wins
        (None, "my-agent {prompt_file}", "command"),
        ("", "my-agent {prompt_file}", "command"),  # an empty setting counts as none
    ],
)
def test_the_agent_is_the_one_named_else_the_command_line_given(
    agent: str | None, agent_cmd: str | None, chosen: str
) -> None:
    assert choose_agent(agent, agent_cmd, "pass --agent") == chosen


@pytest.mark.parametrize(("agent", "agent_cmd"), [(None, None), ("", ""), (None, "")])
def test_no_agent_is_an_error_that_says_how_to_choose_one(
    agent: str | None, agent_cmd: str | None
) -> None:
    with pytest.raises(UserError, match=r"^no agent chosen; set the `agent` input$"):
        choose_agent(agent, agent_cmd, "set the `agent` input")


# --- command templates -------------------------------------------------------------------


@pytest.mark.parametrize("template", [None, "", "   "])
def test_the_command_agent_needs_a_template(
    template: str | None, long_prompt: Path, task: Task, tmp_path: Path
) -> None:
    with pytest.raises(UserError, match="set --agent-cmd or MEMENTO_AGENT_CMD"):
        agent_argv("command", template, prompt_file=long_prompt, task=task, repo=tmp_path)


def test_placeholders_are_filled_into_the_split_template(task: Task) -> None:
    argv = agent_argv(
        "command",
        "my-agent --prompt {prompt_file} --task={task_id} -C '{repo}' 'two words'",
        prompt_file=Path("/tmp/p.md"),
        task=task,
        repo=Path("/work/repo"),
    )

    assert argv == [
        "my-agent",
        "--prompt",
        "/tmp/p.md",
        "--task=T-101",
        "-C",
        "/work/repo",
        "two words",
    ]


HOSTILE = 'it\'s a "repo"; touch PWNED1 && $(touch PWNED2) `touch PWNED3` {task_id}'


def test_hostile_placeholder_values_stay_single_arguments(task: Task, tmp_path: Path) -> None:
    repo = tmp_path / HOSTILE
    repo.mkdir()
    prompt = repo / "prompt file.md"
    prompt.write_text("do it")
    hostile_task = task._replace(id="T-1; rm -rf ~ '")

    argv = agent_argv(
        "command",
        "printf '[%s]\\n' {prompt_file} {task_id} {repo}",
        prompt_file=prompt,
        task=hostile_task,
        repo=repo,
    )
    assert argv == ["printf", "[%s]\\n", str(prompt), "T-1; rm -rf ~ '", str(repo)]

    result = run_agent(argv, repo=repo, env=os.environ, timeout=10, log=None, prompt_file=prompt)

    assert result.process.output == f"[{prompt}]\n[T-1; rm -rf ~ ']\n[{repo}]\n"
    assert sorted(path.name for path in repo.iterdir()) == ["prompt file.md"]
    assert not list(Path.cwd().glob("PWNED*"))


def test_a_value_that_looks_like_a_placeholder_is_not_filled_again(task: Task) -> None:
    argv = agent_argv(
        "command",
        "agent {task_id}",
        prompt_file=Path("/p"),
        task=task._replace(id="{repo}"),
        repo=Path("/r"),
    )

    assert argv == ["agent", "{repo}"]


def test_a_template_with_broken_quoting_is_refused(task: Task) -> None:
    with pytest.raises(UserError, match="cannot be read"):
        agent_argv(
            "command",
            "agent 'unclosed {prompt_file}",
            prompt_file=Path("/p"),
            task=task,
            repo=Path("/r"),
        )


# --- environment -------------------------------------------------------------------------

#: Every value holds "SECRET" so that a leak shows whatever name it ends up under.
SECRETS = {
    "GITHUB_TOKEN": "ghs_SECRET",
    "GH_TOKEN": "gho_SECRET",
    "GH_ENTERPRISE_TOKEN": "ghe_SECRET",
    "GITHUB_PAT": "ghp_SECRET",
    "COPILOT_GITHUB_TOKEN": "cop_SECRET",
    "MEMENTO_GITHUB_TOKEN": "ours_SECRET",
    "ACTIONS_RUNTIME_TOKEN": "runtime_SECRET",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc_SECRET",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://oidc.example/SECRET",
    "INPUT_GITHUB-TOKEN": "input_SECRET",
    "INPUT_TOKEN": "input2_SECRET",
    "GITHUB_ENV": "/runner/SECRET/env",
    "GITHUB_OUTPUT": "/runner/SECRET/output",
    "GITHUB_PATH": "/runner/SECRET/path",
    "GIT_ASKPASS": "/usr/bin/SECRET-askpass",
    "SSH_ASKPASS": "/usr/bin/SECRET-ssh-askpass",
    "SSH_AUTH_SOCK": "/tmp/SECRET-agent.sock",
    "GIT_CREDENTIAL_HELPER": "store-SECRET",
    "GCM_CREDENTIAL_STORE": "plaintext-SECRET",
    "GIT_CONFIG_PARAMETERS": "'http.extraheader'='AUTHORIZATION: basic SECRET'",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "credential.SECRET.helper",
    "GIT_CONFIG_VALUE_0": "store-SECRET",
    "GITLAB_TOKEN": "glpat-SECRET",
}
KEPT = {
    "ANTHROPIC_API_KEY": "sk-ant",
    "OPENAI_API_KEY": "sk-openai",
    "CODEX_API_KEY": "sk-codex",
    "GEMINI_API_KEY": "gemini",
    "CLAUDE_CODE_OAUTH_TOKEN": "oauth",
    "AIDER_MODEL": "sonnet",
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/runner",
    "CI": "true",
    "GITHUB_ACTIONS": "true",
    "GITHUB_REPOSITORY": "octo/demo",
    "GITHUB_WORKSPACE": "/home/runner/work/demo",
    "GIT_CONFIG_GLOBAL": "/home/runner/.gitconfig",
}


def test_agent_env_removes_every_push_credential_and_keeps_api_keys() -> None:
    env = agent_env({**SECRETS, **KEPT})

    for name, value in KEPT.items():
        assert env[name] == value
    assert {name for name, value in env.items() if "SECRET" in value} == set()
    assert not any(name.startswith(("ACTIONS_", "INPUT_", "GCM_CREDENTIAL")) for name in env)
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_ASKPASS"] == ""
    count = int(env["GIT_CONFIG_COUNT"])
    settings = {
        env[f"GIT_CONFIG_KEY_{index}"]: env[f"GIT_CONFIG_VALUE_{index}"] for index in range(count)
    }
    assert settings["credential.helper"] == ""
    assert settings["http.https://github.com/.extraheader"] == ""


def test_agent_env_is_stable_when_applied_twice() -> None:
    once = agent_env({**SECRETS, **KEPT})

    assert agent_env(once) == once


@pytest.mark.parametrize(
    ("identity", "email_variable", "expected"),
    [
        (("user.name=Ada", "user.email=ada@example.com"), None, ("Ada", "ada@example.com")),
        # git's EMAIL is its last resort for the address; memento's fallback then names none.
        (("user.name=memento",), "cron@example.com", ("memento", "cron@example.com")),
    ],
)
@pytest.mark.timeout(30)
def test_git_inside_the_agent_names_mementos_identity(
    tmp_path: Path,
    identity: tuple[str, ...],
    email_variable: str | None,
    expected: tuple[str, str],
) -> None:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))  # a repository whose config names nobody
    plain = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    plain.update(HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(tmp_path))
    plain.pop("EMAIL", None)
    if email_variable:
        plain["EMAIL"] = email_variable
    env = agent_env(plain, identity)

    def setting(key: str) -> str:
        found = subprocess.run(
            ["git", "config", "--get", key],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
        )
        return found.stdout.strip()

    assert (setting("user.name"), setting("user.email")) == expected
    assert agent_env(env, identity) == env


def test_a_real_agent_process_sees_no_token(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    prompt = tmp_path / "prompt.md"
    prompt.write_text("task")
    environ = scripted_env(
        actions=[{"dump_env": str(dump)}],
        environ={**os.environ, **SECRETS, **KEPT, "PATH": os.environ["PATH"]},
    )
    argv = agent_argv(
        "command", scripted_command(), prompt_file=prompt, task=_any_task(), repo=tmp_path
    )

    result = run_agent(argv, repo=tmp_path, env=environ, timeout=10, log=None, prompt_file=prompt)

    assert result.process.exit_code == 0
    seen = json.loads(dump.read_text())
    assert seen["ANTHROPIC_API_KEY"] == "sk-ant"
    assert seen["OPENAI_API_KEY"] == "sk-openai"
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "INPUT_GITHUB-TOKEN"):
        assert name not in seen
    assert {name for name, value in seen.items() if "SECRET" in value} == set()


@pytest.fixture
def repo_with_credentials(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A repository whose config names a credential helper and an askpass program that
    both hand out a password, and log each time they are asked."""
    repo = init_repo(tmp_path / "repo")
    asked = tmp_path / "asked.log"
    for name in ("helper", "askpass"):
        program = tmp_path / f"{name}.sh"
        program.write_text(
            f"#!/bin/sh\necho {name} >> {asked}\n"
            + (
                "echo username=bot\necho password=SECRET-HELPER\n"
                if name == "helper"
                else "echo SECRET-ASKPASS\n"
            )
        )
        program.chmod(0o755)
    git(repo, "config", "credential.helper", str(tmp_path / "helper.sh"))
    git(repo, "config", "credential.https://example.com.helper", str(tmp_path / "helper.sh"))
    git(repo, "config", "core.askPass", str(tmp_path / "askpass.sh"))
    yield repo, asked


def _credential_fill(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "credential", "fill"],
        cwd=repo,
        env=env,
        input="protocol=https\nhost=example.com\n\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_git_inside_the_agent_cannot_get_a_password_from_helpers_or_askpass(
    repo_with_credentials: tuple[Path, Path],
) -> None:
    repo, asked = repo_with_credentials
    plain = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}

    control = _credential_fill(repo, plain)
    assert "password=SECRET-HELPER" in control.stdout  # the trap works without agent_env
    asked.unlink()

    scrubbed = _credential_fill(repo, agent_env(plain))

    assert scrubbed.returncode != 0
    assert "SECRET" not in scrubbed.stdout
    assert not asked.exists()


def test_git_inside_the_agent_does_not_send_the_checkout_extraheader(tmp_path: Path) -> None:
    headers: list[str | None] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            headers.append(self.headers.get("Authorization"))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        repo = init_repo(tmp_path / "repo")
        # what actions/checkout persists for the server it checked out from
        git(repo, "config", f"http.{url}/.extraheader", "AUTHORIZATION: basic SECRET")
        plain = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
        plain["GITHUB_SERVER_URL"] = url
        for env in (plain, agent_env(plain)):
            subprocess.run(
                ["git", "ls-remote", f"{url}/octo/demo.git"],
                cwd=repo,
                env={**env, "GIT_TERMINAL_PROMPT": "0"},
                capture_output=True,
                timeout=30,
                check=False,
            )
    finally:
        server.shutdown()
        server.server_close()

    assert headers[0] == "basic SECRET"  # sent without agent_env
    assert headers[-1] is None
    assert len(headers) == 2


# --- cost reports ------------------------------------------------------------------------

CLAUDE_JSON = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 48213,
        "duration_api_ms": 45022,
        "num_turns": 7,
        "result": "Added the schema and its migration.",
        "stop_reason": "end_turn",
        "session_id": "5d0c1f6e-1d2a-4c8e-9f0b-1a2b3c4d5e6f",
        "total_cost_usd": 0.1873,
        "usage": {
            "input_tokens": 23,
            "cache_creation_input_tokens": 12044,
            "cache_read_input_tokens": 88123,
            "output_tokens": 2210,
            "server_tool_use": {"web_search_requests": 0},
            "service_tier": "standard",
        },
        "modelUsage": {
            "claude-sonnet-4-5-20250929": {
                "inputTokens": 23,
                "outputTokens": 2210,
                "cacheReadInputTokens": 88123,
                "cacheCreationInputTokens": 12044,
                "webSearchRequests": 0,
                "costUSD": 0.1873,
                "contextWindow": 200000,
            }
        },
        "permission_denials": [],
    }
)

CODEX_JSONL = "\n".join(
    [
        '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}',
        '{"type":"turn.started"}',
        '{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Reading**"}}',
        '{"type":"item.completed","item":{"id":"item_1","type":"command_execution",'
        '"command":"bash -lc ls","aggregated_output":"src\\n","exit_code":0,"status":"completed"}}',
        '{"type":"item.completed","item":{"id":"item_2","type":"file_change",'
        '"changes":[{"path":"src/a.py","kind":"add"}],"status":"completed"}}',
        '{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,'
        '"output_tokens":122}}',
        '{"type":"turn.started"}',
        '{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":0,'
        '"output_tokens":78}}',
    ]
)

AIDER_TEXT = """\
Aider v0.86.1
Main model: anthropic/claude-sonnet-4-20250514 with diff edit format, infinite output
Git repo: .git with 12 files
Repo-map: using 4096 tokens, auto refresh
Added src/a.py to the chat.
I'll add the schema.

src/a.py
Applied edit to src/a.py
Tokens: 4.2k sent, 1.1k cache write, 387 received. Cost: $0.02 message, $0.02 session.
Now the migration.
Tokens: 12k sent, 2.0k cache write, 3.5k cache hit, 512 received.
Cost: $0.03 message, $0.05 session.
"""

GEMINI_JSON = json.dumps(
    {
        "session_id": "c3d4",
        "response": "Done.",
        "stats": {
            "models": {
                "gemini-2.5-pro": {
                    "api": {"totalRequests": 3, "totalErrors": 0, "totalLatencyMs": 9120},
                    "tokens": {
                        "input": 3676,
                        "prompt": 24939,
                        "candidates": 20,
                        "total": 25113,
                        "cached": 21263,
                        "thoughts": 154,
                        "tool": 0,
                    },
                },
                "gemini-2.5-flash": {
                    "api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 800},
                    "tokens": {
                        "prompt": 1000,
                        "candidates": 30,
                        "total": 1030,
                        "cached": 0,
                        "thoughts": 0,
                        "tool": 0,
                    },
                },
            },
            "tools": {"totalCalls": 2, "totalSuccess": 2, "totalFail": 0, "totalDurationMs": 40},
            "files": {"totalLinesAdded": 12, "totalLinesRemoved": 1},
        },
    },
    indent=2,
)

GEMINI_STREAM = "\n".join(
    [
        '{"type":"init","timestamp":"2025-10-10T12:00:00.000Z","session_id":"abc","model":"auto"}',
        '{"type":"message","role":"assistant","content":"Done.","delta":true}',
        '{"type":"result","timestamp":"2025-10-10T12:00:03.000Z","status":"success","stats":'
        '{"total_tokens":250,"input_tokens":50,"output_tokens":200,"cached":10,"input":40,'
        '"duration_ms":3000,"tool_calls":1}}',
    ]
)

OPENCLAW_LOCAL = json.dumps(
    {
        "payloads": [{"text": "Added src/a.py.", "mediaUrl": None}],
        "meta": {
            "durationMs": 8123,
            "agentMeta": {
                "sessionId": "memento-T-101-prompt",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input": 1500,
                    "output": 300,
                    "cacheRead": 9000,
                    "cacheWrite": 200,
                    "total": 11000,
                },
            },
            "stopReason": "completed",
        },
    },
    indent=2,
)

#: ``openclaw agent exec --json``'s envelope, as 2026.9.6 printed it after a run of 3 turns.
OPENCLAW_EXEC = json.dumps(
    {
        "ok": True,
        "status": "ok",
        "final": "Done: src/a.py is written.",
        "payloads": [{"text": "Done: src/a.py is written.", "mediaUrl": None}],
        "usage": {
            "input": 3200,
            "output": 180,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": 3380,
            "cost": {"total": 0.0123},
        },
        "costUsd": 0.0123,
        "assistantTurns": 3,
        "toolSummary": {"calls": 2, "tools": ["write", "exec"], "failures": 0},
        "model": "claude-sonnet-4-6",
        "provider": "scripted",
        "sessionId": "81c01f39-be1d-4ed9-a53d-6460e26963db",
    },
    indent=2,
)


def report(**values: object) -> dict[str, object]:
    return {**dict.fromkeys(COST_KEYS), **values}


@pytest.mark.parametrize(
    ("agent", "output", "expected"),
    [
        pytest.param(
            "claude",
            "warning: something on stderr\n" + CLAUDE_JSON + "\n",
            report(
                agent="claude",
                cost_usd=0.1873,
                input_tokens=23 + 88123 + 12044,  # every input token, cached or not
                output_tokens=2210,
                cache_read_tokens=88123,
                cache_write_tokens=12044,
                turns=7,
                duration_ms=48213,
                status="success",
            ),
            id="claude-json",
        ),
        pytest.param(
            "claude",
            '{"type":"system","subtype":"init","session_id":"x"}\n'
            '{"type":"assistant","message":{"content":[]}}\n'
            + CLAUDE_JSON.replace('"success"', '"error_max_turns"')
            + "\n",
            report(
                agent="claude",
                cost_usd=0.1873,
                input_tokens=23 + 88123 + 12044,  # every input token, cached or not
                output_tokens=2210,
                cache_read_tokens=88123,
                cache_write_tokens=12044,
                turns=7,
                duration_ms=48213,
                status="error_max_turns",
            ),
            id="claude-stream-json",
        ),
        pytest.param(
            "codex",
            CODEX_JSONL,
            report(
                agent="codex",
                input_tokens=25763,
                output_tokens=200,
                cache_read_tokens=24448,
                turns=2,
                status="completed",
            ),
            id="codex-jsonl",
        ),
        pytest.param(
            "aider",
            AIDER_TEXT,
            report(
                agent="aider",
                cost_usd=0.05,
                input_tokens=16200,
                output_tokens=899,
                cache_read_tokens=3500,
                cache_write_tokens=3100,
                turns=2,
            ),
            id="aider-text",
        ),
        pytest.param(
            "aider",
            "Tokens: 1,234 sent, 56 received.\n",
            report(
                agent="aider",
                input_tokens=1234,
                output_tokens=56,
                cache_read_tokens=0,
                cache_write_tokens=0,
                turns=1,
            ),
            id="aider-without-prices",
        ),
        pytest.param(
            "gemini",
            "Loaded cached credentials.\n" + GEMINI_JSON + "\n",
            report(
                agent="gemini",
                input_tokens=25939,
                output_tokens=204,
                cache_read_tokens=21263,
                turns=4,
            ),
            id="gemini-json",
        ),
        pytest.param(
            "gemini",
            GEMINI_STREAM,
            report(
                agent="gemini",
                input_tokens=50,
                output_tokens=200,
                cache_read_tokens=10,
                duration_ms=3000,
                status="success",
            ),
            id="gemini-stream-json",
        ),
        pytest.param(
            "openclaw",
            OPENCLAW_LOCAL + "\n",
            report(
                agent="openclaw",
                input_tokens=1500 + 9000 + 200,
                output_tokens=300,
                cache_read_tokens=9000,
                cache_write_tokens=200,
                duration_ms=8123,
                status="completed",
            ),
            id="openclaw-local",
        ),
        pytest.param(
            "openclaw",
            json.dumps(
                {"runId": "r1", "status": "ok", "result": json.loads(OPENCLAW_LOCAL)}, indent=2
            ),
            report(
                agent="openclaw",
                input_tokens=1500 + 9000 + 200,
                output_tokens=300,
                cache_read_tokens=9000,
                cache_write_tokens=200,
                duration_ms=8123,
                status="completed",
            ),
            id="openclaw-gateway",
        ),
        pytest.param(
            "openclaw",
            "[session-sqlite] slow SQLite reclamation\n" + OPENCLAW_EXEC + "\n",
            report(
                agent="openclaw",
                model="scripted/claude-sonnet-4-6",
                cost_usd=0.0123,
                input_tokens=3200,
                output_tokens=180,
                cache_read_tokens=0,
                cache_write_tokens=0,
                turns=3,
                status="ok",
            ),
            id="openclaw-exec",
        ),
    ],
)
def test_cost_is_read_from_each_agents_report(
    agent: str, output: str, expected: dict[str, object]
) -> None:
    assert parse_cost(agent, output) == expected


@pytest.mark.parametrize("agent", [*PRESET_NAMES, "command"])
def test_no_report_means_no_cost(agent: str) -> None:
    assert parse_cost(agent, "I changed src/a.py.\n{not json\n") is None


def test_the_command_agent_recognises_any_known_report() -> None:
    found = parse_cost("command", "wrapper starting\n" + CODEX_JSONL)

    assert found is not None
    assert found["agent"] == "codex"


# --- running the fake agent --------------------------------------------------------------


def _any_task() -> Task:
    plan = parse(plan_text([phase_block(1, "Core", [task_block("T-101")])]))
    task = plan.task("T-101")
    assert task is not None
    return task


def test_run_agent_feeds_the_prompt_logs_the_output_and_reads_the_cost(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("# T-101\nWrite src/a.py\n")
    script = write_script(
        tmp_path / "script.json",
        {
            "T-101": [
                {"save_stdin": str(tmp_path / "stdin.txt")},
                {"write": "src/a.py", "text": "A = 1\n"},
                {"claude_result": {"total_cost_usd": 0.25, "num_turns": 3}},
            ]
        },
    )
    argv = agent_argv(
        "command", scripted_command(), prompt_file=prompt, task=_any_task(), repo=repo
    )
    log = tmp_path / "logs" / "tick.log"

    result = run_agent(
        argv, repo=repo, env=scripted_env(script=script), timeout=10, log=log, prompt_file=prompt
    )

    assert result.process.exit_code == 0
    assert (repo / "src" / "a.py").read_text() == "A = 1\n"
    assert (tmp_path / "stdin.txt").read_text() == prompt.read_text()
    assert log.read_text() == result.process.output
    assert result.cost is not None
    assert result.cost["agent"] == "claude"
    assert result.cost["cost_usd"] == 0.25
    assert result.cost["turns"] == 3


def test_the_fake_agent_follows_its_attempts_run_after_run(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("task")
    script = write_script(
        tmp_path / "script.json",
        {
            "T-101": {
                "attempts": [
                    [{"print": "giving up"}, {"exit": 3}],
                    [{"write": "src/a.py", "text": "A = 1\n"}],
                ]
            }
        },
    )
    argv = agent_argv(
        "command", scripted_command(), prompt_file=prompt, task=_any_task(), repo=repo
    )

    def run() -> int | None:
        result = run_agent(
            argv,
            repo=repo,
            env=scripted_env(script=script),
            timeout=10,
            log=None,
            prompt_file=prompt,
        )
        return result.process.exit_code

    assert run() == 3
    assert not (repo / "src" / "a.py").exists()
    assert run() == 0
    assert (repo / "src" / "a.py").exists()
    assert run() == 0  # the last attempt repeats
    assert json.loads((tmp_path / "script.json.runs.json").read_text()) == {"T-101": 3}


def test_the_fake_agent_can_commit_which_moves_head(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("one\n")
    before = commit_all(repo, "start")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("task")
    actions = [{"write": "a.txt", "text": "two\n"}, {"git": ["commit", "-qam", "sneaky"]}]
    argv = agent_argv(
        "command", scripted_command(), prompt_file=prompt, task=_any_task(), repo=repo
    )

    result = run_agent(
        argv, repo=repo, env=scripted_env(actions=actions), timeout=10, log=None, prompt_file=prompt
    )

    assert result.process.exit_code == 0
    assert git(repo, "rev-parse", "HEAD").strip() != before
    assert git(repo, "log", "-1", "--format=%s").strip() == "sneaky"


# A report in the form the real CLI printed it against the scripted model server
# (testing/AGENT_FINDINGS.md): claude's ``usage`` counts the main loop only, its
# ``modelUsage`` every call, which is what ``total_cost_usd`` prices.
CLAUDE_WITH_A_SIDE_CALL = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 9000,
        "num_turns": 3,
        "result": "Done: hello.txt is written and the verify passed.",
        "total_cost_usd": 0.02465,
        "usage": {
            "input_tokens": 3200,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 180,
        },
        "modelUsage": {
            "claude-opus-4-8[1m]": {
                "inputTokens": 3200,
                "outputTokens": 180,
                "cacheReadInputTokens": 400,
                "cacheCreationInputTokens": 100,
                "costUSD": 0.0245,
            },
            "claude-haiku-4-5": {
                "inputTokens": 10,
                "outputTokens": 5,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "costUSD": 0.00015,
            },
        },
    }
)


def test_claudes_tokens_count_every_call_its_cost_prices() -> None:
    found = parse_cost("claude", CLAUDE_WITH_A_SIDE_CALL + "\n")

    assert found is not None
    # Tokens in are every input token the model read, cached or not (as codex, gemini and
    # aider count them); the cache columns say how many of them came from the cache.
    assert (found["input_tokens"], found["output_tokens"]) == (3200 + 500 + 10, 185)
    assert (found["cache_read_tokens"], found["cache_write_tokens"]) == (400, 100)
    assert found["cost_usd"] == 0.02465
