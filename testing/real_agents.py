"""The real agent CLIs, launched against a :class:`~testing.model_server.ModelServer`.

``scripts/setup`` installs each CLI, pinned, under ``.tools/`` (``.tools/bin/<cli>`` points
at it). Each function here gives the command line, environment and standard input that run
one CLI non-interactively on one task, pointed at the model server, with nothing leaving
the machine: the telemetry and update checks are off, and the proxy variables point at the
model server, which records (and refuses) any request meant for another host
(:attr:`ModelServer.outbound`).

These recipes are what was found to work (``testing/AGENT_FINDINGS.md`` says why each flag
is there); memento's presets in ``memento_gh/engine/agents/presets.py`` are to follow them.

In a test::

    with ModelServer(script) as server:
        launch = claude(server.url, home, "Write hello.txt.")
        finished = run(launch, repo, timeout=120)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

# What a CLI is told on argv (the task itself comes on stdin), and gemini's policy (shell
# allowed, git's committing commands denied at a higher priority): the presets' own, so
# that the direct runs test what memento ships.
from memento_gh.engine.agents.presets import GEMINI_POLICY, INSTRUCTION

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".tools"
#: The versions ``scripts/setup`` installs (keep the two in step).
VERSIONS = {
    "claude": "2.1.197",
    "codex": "0.171.0",
    "gemini": "0.61.0",
    "aider": "0.86.2",
    "openclaw": "2026.9.6",
}

#: The git commands an agent may not run, for the CLIs whose rules match command text.
GIT_DENIED = ("git commit", "git push")


class MissingCLI(Exception):
    """The pinned CLI is not installed: ``scripts/setup`` installs it."""


class Launch(NamedTuple):
    """How to start one CLI: its argv, its whole environment and its standard input."""

    argv: list[str]
    env: dict[str, str]
    stdin: str = ""


class Finished(NamedTuple):
    """How a CLI run ended."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def executable(name: str, tools: Path = TOOLS) -> str:
    """The pinned CLI's executable, or :class:`MissingCLI` saying how to install it."""
    path = tools / "bin" / name
    if not (path.exists() and os.access(path, os.X_OK)):
        raise MissingCLI(
            f"{name} {VERSIONS[name]} is not installed at {path}: run `bash scripts/setup` "
            "(it needs npm for claude, codex and gemini)"
        )
    return str(path)


def base_env(url: str, home: Path, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What every CLI gets: a home of its own, a git identity, and a proxy that records.

    Nothing else is inherited from ``environ`` but ``PATH``: no real key, config or proxy
    of the machine reaches the CLI."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text("[user]\n\tname = Agent Test\n\temail = agent@example.com\n")
    proxy = dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), url)
    local = "127.0.0.1,localhost"
    return {
        "PATH": f"{TOOLS / 'bin'}{os.pathsep}{environ.get('PATH', os.defpath)}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "true",
        **proxy,
        "NO_PROXY": local,
        "no_proxy": local,
    }


# -- claude --------------------------------------------------------------------------------


def claude(
    url: str,
    home: Path,
    prompt: str,
    *,
    model: str | None = None,
    subscription: bool = False,
    max_retries: int | None = None,
    extra: Sequence[str] = (),
) -> Launch:
    """``claude -p``: edits approved, Bash allowed, but not ``git commit`` / ``git push``.

    ``subscription`` signs in with an OAuth token (a Pro/Max plan, ``claude setup-token``)
    instead of an API key: only then does claude read the plan's usage-limit headers.
    ``max_retries`` sets ``CLAUDE_CODE_MAX_RETRIES`` (claude's default, 10, spends about
    three minutes on a 429 before it gives up)."""
    argv = [
        "claude",
        "-p",
        INSTRUCTION,
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Bash",
        *(["--model", model] if model else []),
        *extra,
        # Last: it takes several values, so nothing positional may follow.
        "--disallowedTools",
        *(f"Bash({command} *)" for command in GIT_DENIED),
        "AskUserQuestion",
    ]
    env = base_env(url, home)
    env.update(
        {
            "ANTHROPIC_BASE_URL": url,
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    )
    if subscription:
        env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-scripted"
    else:
        env["ANTHROPIC_API_KEY"] = "sk-ant-scripted"
    if max_retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(max_retries)
    return Launch(argv, env, prompt)


# -- codex ---------------------------------------------------------------------------------

CODEX_PROVIDER = "scripted"
CODEX_KEY = "SCRIPTED_API_KEY"


def codex_config(url: str, *, retries: int | None = None) -> str:
    """``~/.codex/config.toml``: codex ignores ``OPENAI_BASE_URL``; a provider entry with
    its own ``base_url`` and key variable points it elsewhere."""
    lines = [
        f'model_provider = "{CODEX_PROVIDER}"',
        'model = "gpt-5.5"',
        # Nothing leaves the machine: no analytics (ab.chatgpt.com) and no plugins (their
        # catalogue sync clones from github.com and asks api.github.com and chatgpt.com).
        # The release check is the TUI's; exec was not seen making it.
        "check_for_update_on_startup = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[features]",
        "plugins = false",
        "",
        f"[model_providers.{CODEX_PROVIDER}]",
        'name = "Scripted model server"',
        f'base_url = "{url}/v1"',
        f'env_key = "{CODEX_KEY}"',
        'wire_api = "responses"',
        "supports_websockets = false",
    ]
    if retries is not None:
        lines += [f"request_max_retries = {retries}", f"stream_max_retries = {retries}"]
    return "\n".join(lines) + "\n"


def codex(
    url: str,
    home: Path,
    prompt: str,
    *,
    model: str | None = None,
    retries: int | None = None,
    extra: Sequence[str] = (),
) -> Launch:
    """``codex exec`` in the workspace-write sandbox (``.git`` stays read-only), the prompt
    on stdin, JSONL events on stdout."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(url, retries=retries))
    argv = [
        "codex",
        "exec",
        "--sandbox",
        "workspace-write",
        "--json",
        "--color",
        "never",
        *(["--model", model] if model else []),
        *extra,
        "-",
    ]
    env = base_env(url, home)
    env.update({"CODEX_HOME": str(codex_home), CODEX_KEY: "sk-scripted"})
    return Launch(argv, env, prompt)


# -- gemini --------------------------------------------------------------------------------


def gemini_settings(*, max_attempts: int | None = None) -> str:
    """``~/.gemini/settings.json``: an API key's auth (``GOOGLE_GEMINI_BASE_URL`` alone
    switches it away), no usage statistics, telemetry or update checks. ``max_attempts``
    (``general.maxAttempts``, default 10) bounds its retries of a 429 or 503."""
    general: dict[str, object] = {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}
    if max_attempts is not None:
        general["maxAttempts"] = max_attempts
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": general,
    }
    return json.dumps(settings, indent=2) + "\n"


def gemini(
    url: str,
    home: Path,
    prompt: str,
    *,
    model: str | None = None,
    max_attempts: int | None = None,
    trust: bool = True,
    extra: Sequence[str] = (),
) -> Launch:
    """``gemini -p``: trusted folder, edits approved, shell allowed by a policy that denies
    ``git commit`` / ``git push``. ``trust=False`` leaves ``--skip-trust`` out."""
    settings = home / ".gemini"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "settings.json").write_text(gemini_settings(max_attempts=max_attempts))
    policy = home / "memento-policy.toml"
    policy.write_text(GEMINI_POLICY)
    argv = [
        "gemini",
        "-p",
        INSTRUCTION,
        *(["--skip-trust"] if trust else []),
        "--approval-mode=auto_edit",
        "--policy",
        str(policy),
        "-o",
        "json",
        *(["--model", model] if model else []),
        *extra,
    ]
    env = base_env(url, home)
    env.update(
        {
            "GEMINI_API_KEY": "scripted-key",
            "GOOGLE_GEMINI_BASE_URL": url,
            # For the tests' speed only: gemini otherwise starts a second Node with a larger
            # heap (half the machine's memory) to do the work, a second of CPU at each start.
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
    )
    return Launch(argv, env, prompt)


# -- aider ---------------------------------------------------------------------------------


def aider_price_list() -> Path:
    """The price list litellm ships; aider otherwise downloads it at every start."""
    found = sorted(
        (TOOLS / f"aider-{VERSIONS['aider']}").glob(
            "lib/python*/site-packages/litellm/model_prices_and_context_window_backup.json"
        )
    )
    if not found:
        raise MissingCLI(f"aider {VERSIONS['aider']}'s litellm is not installed: run scripts/setup")
    return found[0]


def aider(
    url: str,
    home: Path,
    prompt_file: Path,
    files: Sequence[str] = (),
    *,
    model: str = "openai/gpt-4.1",
    test_cmd: str | None = None,
    client_retries: int | None = None,
    extra: Sequence[str] = (),
) -> Launch:
    """``aider --message-file``: no commits, no shell of its own; ``test_cmd`` runs after
    each edit (``--auto-test``), which is how aider runs a task's verify.

    ``client_retries`` sets the OpenAI client's ``max_retries`` (through a model settings
    file's ``extra_params``): by default it tries each request 3 times, inside each of
    aider's own 9 tries. Those 9 tries, and their 64 s of waits, have no setting."""
    cache = home / ".aider" / "caches"
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(aider_price_list(), cache / "model_prices_and_context_window.json")
    settings: list[str] = []
    if client_retries is not None:
        settings_file = home / ".aider.model.settings.yml"
        settings_file.write_text(
            f"- name: {model}\n  extra_params:\n    max_retries: {client_retries}\n"
        )
        settings = ["--model-settings-file", str(settings_file)]
    argv = [
        "aider",
        "--message-file",
        str(prompt_file),
        "--model",
        model,
        "--yes-always",
        "--no-auto-commits",
        "--no-dirty-commits",
        "--no-gitignore",
        "--no-suggest-shell-commands",
        "--no-detect-urls",
        "--no-check-update",
        "--no-show-release-notes",
        "--analytics-disable",
        "--no-pretty",
        "--no-stream",
        "--chat-history-file",
        os.devnull,
        "--input-history-file",
        os.devnull,
        *(["--test-cmd", test_cmd, "--auto-test"] if test_cmd else []),
        *settings,
        *extra,
        *(f"--file={path}" for path in files),
    ]
    env = base_env(url, home)
    env.update(
        {
            "OPENAI_API_BASE": f"{url}/v1",
            "OPENAI_API_KEY": "sk-scripted",
            # litellm downloads the same price list when it is imported, unless told not to.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
    )
    return Launch(argv, env)


# -- openclaw ------------------------------------------------------------------------------

OPENCLAW_PROVIDER = "scripted"
OPENCLAW_KEY = "SCRIPTED_API_KEY"


def openclaw_config(url: str, models: Sequence[str]) -> str:
    """An openclaw config file with one provider, the model server (it ignores
    ``ANTHROPIC_BASE_URL``), speaking the Anthropic Messages API. A model must be listed to be
    chosen; its prices (USD per million tokens) make openclaw's ``costUsd``. The first is the
    default model."""
    entries = [
        {
            "id": model,
            "name": model,
            "api": "anthropic-messages",
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 200000,
            "maxTokens": 8000,
        }
        for model in models
    ]
    provider = {
        "baseUrl": url,
        "apiKey": "${" + OPENCLAW_KEY + "}",
        "api": "anthropic-messages",
        "models": entries,
    }
    config = {
        "models": {"mode": "merge", "providers": {OPENCLAW_PROVIDER: provider}},
        # The model a run without --model takes (else openclaw's own default provider).
        "agents": {"defaults": {"model": {"primary": f"{OPENCLAW_PROVIDER}/{models[0]}"}}},
    }
    return json.dumps(config, indent=2) + "\n"


def openclaw(
    url: str,
    home: Path,
    prompt: str,
    repo: Path,
    *,
    model: str = "claude-sonnet-4-6",
    models: Sequence[str] = ("claude-sonnet-4-6", "claude-opus-4-6"),
    max_retries: int | None = None,
    extra: Sequence[str] = (),
) -> Launch:
    """``openclaw agent exec``: one headless turn in ``repo``, the prompt on stdin, the
    provider from a config file of its own (``--config`` rules out ``--auth-env-only``).

    ``max_retries`` bounds its retries of a 429 or an overload (by default 9, about three
    minutes): not a key of ``openclaw.json`` but the embedded agent's session setting
    ``retry.provider.maxRetries``, read from ``<state dir>/agents/main/agent/settings.json``.
    exec makes a new temporary state folder for each run unless ``--state-dir`` names one."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "openclaw.json"
    config.write_text(openclaw_config(url, models))
    state: list[str] = []
    if max_retries is not None:
        agent_dir = home / "openclaw-state" / "agents" / "main" / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        settings = {"retry": {"provider": {"maxRetries": max_retries}}}
        (agent_dir / "settings.json").write_text(json.dumps(settings) + "\n")
        state = ["--state-dir", str(home / "openclaw-state")]
    argv = [
        "openclaw",
        "agent",
        "exec",
        "--message-file",
        "-",
        "--cwd",
        str(repo),
        "--model",
        f"{OPENCLAW_PROVIDER}/{model}",
        "--config",
        str(config),
        "--json",
        "--timeout",
        "120",
        *state,
        *extra,
    ]
    env = base_env(url, home)
    env[OPENCLAW_KEY] = "sk-scripted"
    return Launch(argv, env, prompt)


# -- running -------------------------------------------------------------------------------


def run(launch: Launch, cwd: Path, *, timeout: float) -> Finished:
    """Run the pinned CLI (:class:`MissingCLI` if it is not installed) in ``cwd``, in a
    process group of its own; on ``timeout`` the whole group is killed and
    :class:`subprocess.TimeoutExpired` raised."""
    argv = [executable(launch.argv[0]), *launch.argv[1:]]
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=launch.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(launch.stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr) from None
    return Finished(process.returncode, stdout, stderr, time.monotonic() - started)
