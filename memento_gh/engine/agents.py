"""The coding agents a tick can run: their command lines, their environment, their cost reports.

Every preset runs the agent non-interactively in the repository root, lets it edit files
without asking, and keeps it from committing where the agent has a switch for that (the tick
checks HEAD afterwards anyway). The prompt always arrives as a file: on stdin, and as a
``--message-file`` where the agent has one; it is never a (size-limited) argv item.

``command`` runs any command line, given as a template with the placeholders
``{prompt_file}``, ``{task_id}`` and ``{repo}``. The template is split like a POSIX shell
would split it *first*, and the placeholders are filled into the resulting argv items after, so
a value with spaces, quotes or ``;`` stays one argument. No shell is involved.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from memento_gh import credentials, files
from memento_gh.engine.process import DEFAULT_GRACE, run_in_group
from memento_gh.engine.records import AgentResult
from memento_gh.errors import UserError
from memento_gh.plan.model import Task

COMMAND = "command"

#: The short instruction given on argv to agents that take the task on stdin.
INSTRUCTION = (
    "Carry out the task described in the input. Change files only: do not commit, push, "
    "or ask questions. Your change is checked and committed for you."
)

#: ``{name}`` placeholders of a command template.
PLACEHOLDER = re.compile(r"\{(prompt_file|task_id|repo)\}")


class AgentRun(NamedTuple):
    """What a preset may put on its command line. The files it names besides the prompt
    (:func:`preset_files`) go beside the prompt file, in memento's own folder under
    ``.git/``: never in the working tree, never committed."""

    prompt_file: Path
    task: Task
    repo: Path
    timeout: float | None
    #: memento's own files, as ``context_files`` patterns: kept out of aider's sight.
    protected: tuple[str, ...] = ()

    def beside_prompt(self, name: str) -> Path:
        return self.prompt_file.with_name(f"{self.prompt_file.stem}.{name}")


def _claude(run: AgentRun) -> list[str]:
    # Bash is allowed, so that it runs the verify; the git rules deny what commits (a deny
    # wins over an allow). The rules are separate argv items: --disallowedTools takes several
    # values, so nothing positional may follow it.
    return [
        "claude",
        "-p",
        INSTRUCTION,
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Bash",
        "--disallowedTools",
        "Bash(git commit *)",
        "Bash(git push *)",
        "AskUserQuestion",
    ]


def _codex(run: AgentRun) -> list[str]:
    # workspace-write keeps .git read-only for the agent; "-" reads the prompt from stdin.
    return [
        "codex",
        "exec",
        "--sandbox",
        "workspace-write",
        "--json",
        "--color",
        "never",
        "--cd",
        str(run.repo),
        "-",
    ]


def _aider(run: AgentRun) -> list[str]:
    argv = [
        "aider",
        "--message-file",
        str(run.prompt_file),
        "--yes-always",
        "--no-auto-commits",
        "--no-dirty-commits",
        "--no-gitignore",
        "--no-suggest-shell-commands",
        "--no-check-update",
        "--no-show-release-notes",
        "--analytics-disable",
        "--no-pretty",
        "--no-stream",
        "--chat-history-file",
        "/dev/null",
        "--input-history-file",
        "/dev/null",
        # No repo map: its cache (.aider.tags.cache.v4/) would land in the repository root,
        # outside every task's context_files; the prompt brings the task's files itself.
        "--map-tokens",
        "0",
        # aider adds every file the prompt names, memento's own among them, unless ignored.
        "--aiderignore",
        str(run.beside_prompt("aiderignore")),
    ]
    if run.task.verify:
        # aider has no shell: its test command is how it runs the verify, after each edit.
        argv += ["--test-cmd", run.task.verify, "--auto-test"]
    return argv + [f"--file={path}" for path in aider_files(run.task)]


def _gemini(run: AgentRun) -> list[str]:
    # --skip-trust: in a folder it has not been told to trust (every new runner), gemini
    # exits 55. auto_edit approves edits; the policy allows the shell but not git commit/push.
    return [
        "gemini",
        "-p",
        INSTRUCTION,
        "--skip-trust",
        "--approval-mode=auto_edit",
        "--policy",
        str(run.beside_prompt("gemini-policy.toml")),
        "-o",
        "json",
    ]


#: gemini's policy: the shell allowed, git's committing commands denied at a higher priority
#: (the higher priority wins).
GEMINI_POLICY = """\
[[rule]]
toolName = "run_shell_command"
decision = "allow"
priority = 100

[[rule]]
toolName = "run_shell_command"
commandRegex = "git\\\\s+(commit|push)"
decision = "deny"
priority = 900
"""


def preset_files(agent: str, run: AgentRun) -> dict[Path, str]:
    """The files ``agent``'s command line names besides the prompt, with their text."""
    name = agent.strip().lower()
    if name == "gemini":
        return {run.beside_prompt("gemini-policy.toml"): GEMINI_POLICY}
    if name == "aider":
        hidden = (*run.protected, *run.task.guard_files)
        return {run.beside_prompt("aiderignore"): "".join(f"{path}\n" for path in hidden)}
    return {}


def prepare_run(agent: str, run: AgentRun) -> list[Path]:
    """Write the files ``agent``'s command line names, and (aider) make the folders of the
    files it is given: for a file in a folder that does not exist yet, aider finds no git
    repository and edits ``<folder>/<folder>/<file>``. Returns the files written, for the
    caller to remove."""
    written = preset_files(agent, run)
    for path, text in written.items():
        # Replaced, not written into, as the prompt is: a FIFO or a link left at this name
        # would block or redirect the write.
        files.write_atomic(path, text, durable=False)
    if agent.strip().lower() == "aider":
        for file in aider_files(run.task):
            (run.repo / file).parent.mkdir(parents=True, exist_ok=True)
    return list(written)


def _openclaw(run: AgentRun) -> list[str]:
    # The agent id "memento" must exist with the repository as its workspace:
    #   openclaw agents add memento --workspace <repo> --non-interactive
    # A session per task run keeps one run's history out of the next.
    argv = [
        "openclaw",
        "agent",
        "--local",
        "--agent",
        "memento",
        "--session-id",
        _session_id(run),
        "--message-file",
        str(run.prompt_file),
        "--json",
    ]
    if run.timeout is not None:
        argv += ["--timeout", str(max(1, math.ceil(run.timeout)))]
    return argv


#: Variables a preset sets unless the environment already has them.
PRESET_ENV: Mapping[str, Mapping[str, str]] = {
    # Else claude calls api.anthropic.com whatever its base URL, and asks the model for a
    # session title that its cost counts and its usage does not.
    "claude": {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
}

PRESETS: Mapping[str, Callable[[AgentRun], list[str]]] = {
    "claude": _claude,
    "codex": _codex,
    "aider": _aider,
    "gemini": _gemini,
    "openclaw": _openclaw,
}
KNOWN_AGENTS = tuple(sorted([*PRESETS, COMMAND]))


class AgentConfigError(UserError):
    """The agent cannot run as configured: no tick claims a task for it (a tick that claimed
    one would fail, and the task would lose a retry to the next tick's recovery)."""


class AgentOptions(NamedTuple):
    """How the user sets the agent, for the messages that name the fix: the command line's
    options, or the GitHub Action's inputs."""

    command_agent: str = "--agent command"
    template: str = "--agent-cmd"
    how_to_set_template: str = (
        "pass --agent-cmd 'your-agent {prompt_file}' (or set MEMENTO_AGENT_CMD)"
    )
    how_to_name: str = ""


ACTION_OPTIONS = AgentOptions(
    command_agent="the agent `command`",
    template="the action's `agent-command` input",
    how_to_set_template="set the action's `agent-command` input to your agent's command line",
    how_to_name="; set the action's `agent` input to one of them",
)


def check_agent(
    agent: str,
    template: str | None,
    *,
    repo: Path,
    environ: Mapping[str, str],
    options: AgentOptions = AgentOptions(),  # noqa: B008 (a NamedTuple, immutable)
    find_program: bool = True,
) -> None:
    """Refuse (``AgentConfigError``) an agent that cannot run: an unknown name, the command
    agent without a readable command line, or (``find_program``) a program that is not on
    ``environ``'s PATH, or not at the path the command line gives (relative to ``repo``, where
    the agent runs)."""
    name = agent.strip().lower()
    if name == COMMAND:
        program = _template_program(template, repo, options)
        what = "the agent command line"
        fix = f"install it, or give its full path in {options.template}"
    elif name in PRESETS:
        program = name  # every preset's program is named as the agent is
        what = f"the agent {name}"
        fix = "install it (see its documentation), or put the folder that holds it on PATH"
    else:
        import difflib

        close = difflib.get_close_matches(name, KNOWN_AGENTS, n=1)
        guess = f" (did you mean {close[0]}?)" if close else ""
        raise AgentConfigError(
            f"unknown agent {agent!r}{guess}; known agents: {', '.join(KNOWN_AGENTS)}"
            + options.how_to_name
        )
    if find_program and program is not None:
        _find_program(program, what, fix, repo, environ, options)


def _template_program(template: str | None, repo: Path, options: AgentOptions) -> str | None:
    """The program the command line runs; None when a placeholder only a tick fills names it."""
    try:
        items = shlex.split(template or "")
    except ValueError as error:
        raise AgentConfigError(
            f"the agent command line cannot be read ({error}): {template}"
        ) from None
    if not items:
        raise AgentConfigError(
            f"{options.command_agent} runs the command line of {options.template}, and none "
            f"is set; {options.how_to_set_template}"
        )
    program = items[0].replace("{repo}", str(repo))
    return None if PLACEHOLDER.search(program) else program


def _find_program(
    program: str,
    what: str,
    fix: str,
    repo: Path,
    environ: Mapping[str, str],
    options: AgentOptions,
) -> None:
    import os
    import shutil

    if "/" not in program:
        # The agent starts with this environment, so its PATH is the one searched.
        if shutil.which(program, path=environ.get("PATH", os.defpath)) is None:
            raise AgentConfigError(f"{what} runs `{program}`, which is not on PATH; {fix}")
        return
    path = Path(program) if Path(program).is_absolute() else repo.resolve() / program
    if not path.is_file():
        raise AgentConfigError(
            f"{what} runs {program}, which is not at {path}; correct the path in {options.template}"
        )
    if not os.access(path, os.X_OK):
        raise AgentConfigError(
            f"{what} runs {program}, which is not executable; make it so: chmod +x {path}"
        )


def choose_agent(agent: str | None, agent_cmd: str | None, how_to_choose: str) -> str:
    """The agent a tick runs: ``agent``, else ``command`` when a command line is given.
    Neither is a UserError that ends with ``how_to_choose`` (options, or an action's inputs)."""
    if agent:
        return agent
    if agent_cmd:
        return COMMAND
    raise UserError(f"no agent chosen; {how_to_choose}")


def agent_argv(
    agent: str,
    template: str | None,
    *,
    prompt_file: Path,
    task: Task,
    repo: Path,
    timeout: float | None = None,
    protected: tuple[str, ...] = (),
) -> list[str]:
    """The command line for ``agent``; ``template`` is used by the ``command`` agent only."""
    run = AgentRun(prompt_file, task, repo, timeout, protected)
    name = agent.strip().lower()
    if name == COMMAND:
        return command_argv(template, run)
    preset = PRESETS.get(name)
    if preset is None:
        raise UserError(f"unknown agent {agent!r}; known agents: {', '.join(KNOWN_AGENTS)}")
    return preset(run)


def command_argv(template: str | None, run: AgentRun) -> list[str]:
    if template is None or not template.strip():
        raise UserError(
            "the command agent needs a command line: set --agent-cmd or MEMENTO_AGENT_CMD"
        )
    try:
        items = shlex.split(template)
    except ValueError as error:
        raise UserError(f"the agent command line cannot be read ({error}): {template}") from error
    values = {"prompt_file": str(run.prompt_file), "task_id": run.task.id, "repo": str(run.repo)}
    # One pass per item: a value that itself contains "{repo}" is not filled again.
    return [PLACEHOLDER.sub(lambda found: values[found.group(1)], item) for item in items]


def aider_files(task: Task) -> list[str]:
    """The task's context files that name one file (aider takes files, not globs or folders)."""
    return [
        path
        for path in task.context_files
        if path and not path.endswith("/") and not any(char in path for char in "*?[")
    ]


def _session_id(run: AgentRun) -> str:
    stem = re.sub(r"[^A-Za-z0-9-]+", "-", run.prompt_file.stem).strip("-")
    task = re.sub(r"[^A-Za-z0-9-]+", "-", run.task.id)
    return f"memento-{task}-{stem}" if stem else f"memento-{task}"


# --- environment -------------------------------------------------------------------------

#: Git settings passed through the environment (an ``http.extraheader`` with a token, say):
#: the agent's are replaced by settings that switch credentials off.
GIT_SETTINGS_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
GIT_SETTINGS_NAMES = frozenset({"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"})


def agent_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without push credentials, and with git unable to find any.

    Agent API keys (ANTHROPIC_API_KEY, OPENAI_API_KEY, CODEX_API_KEY, GEMINI_API_KEY, ...)
    pass; GitHub tokens, the Actions runtime, action inputs, askpass programs, the ssh agent
    and credential helpers do not. Git config given through the environment is replaced by
    settings that empty the credential helper list and the ``http.extraheader`` that
    actions/checkout stores (for the server's URL). Git config *files* stay as they are: an
    agent can still read a token persisted in ``.git/config``, so check out without one.
    """
    env = {
        name: value
        for name, value in credentials.without_credentials(environ).items()
        if name not in GIT_SETTINGS_NAMES and not name.startswith(GIT_SETTINGS_PREFIXES)
    }
    servers = {"https://github.com", environ.get("GITHUB_SERVER_URL", "https://github.com")}
    overrides = [("credential.helper", ""), ("http.extraheader", "")]
    overrides += [(f"http.{server.rstrip('/')}/.extraheader", "") for server in sorted(servers)]
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for index, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ASKPASS"] = ""  # set but empty: git then ignores core.askPass and SSH_ASKPASS too
    env["GCM_INTERACTIVE"] = "never"
    return env


# --- running -----------------------------------------------------------------------------


def run_agent(
    argv: Sequence[str],
    *,
    repo: Path,
    env: Mapping[str, str],
    timeout: float | None,
    log: Path | IO[bytes] | None,
    prompt_file: Path,
    agent: str | None = None,
    grace: float = DEFAULT_GRACE,
) -> AgentResult:
    """Run the agent in ``repo`` with the prompt on stdin, and read its cost report.

    ``env`` is scrubbed with :func:`agent_env` here too, so no caller can forget it.
    ``agent`` names the output format and the preset's variables (``PRESET_ENV``); by
    default it is guessed from ``argv[0]``.
    """
    name = agent if agent is not None else _agent_of(argv)
    process = run_in_group(
        list(argv),
        cwd=repo,
        env={**PRESET_ENV.get(name.strip().lower(), {}), **agent_env(env)},
        timeout=timeout,
        log=log,
        stdin=prompt_file,
        grace=grace,
    )
    return AgentResult(process, parse_cost(name, process.output))


#: The most characters of the agent's last words a status entry shows.
LAST_WORDS_CHARS = 300
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
#: A line of nothing but rule characters: ``-----``, ``=====``, ``──────``, ``***``.
_RULE = re.compile(r"[\W_]*")


def failure_of(result: AgentResult) -> str | None:
    """Why the agent's run fails the attempt, with the last thing it said (None: it did
    not fail). A logged-out or misconfigured agent names its own fix there ("Not logged in ·
    Please run /login"), which is worth more than its exit code."""
    done = result.process
    if done.timed_out:
        reason = f"the agent ran past agent_timeout ({done.duration:.0f}s) and was killed"
    elif done.exit_code != 0:
        reason = f"the agent exited with code {done.exit_code}"
    else:
        return None
    said = last_words(done.output)
    return f"{reason}: {said}" if said else reason


def last_words(output: str) -> str | None:
    """The agent's last line that says something: blank lines, rules and colour codes
    skipped; from a JSON result line (``--output-format json``), its ``result`` or
    ``error`` text."""
    for raw in reversed(_ESCAPES.sub("", output).splitlines()):
        line = raw.strip()
        if line.startswith("{"):
            line = _json_text(line) or ""
        if not _RULE.fullmatch(line):
            line = " ".join(line.split())
            return line if len(line) <= LAST_WORDS_CHARS else line[: LAST_WORDS_CHARS - 1] + "…"
    return None


def _json_text(line: str) -> str | None:
    """The message of a JSON object line: its ``result``, ``error`` or ``message`` text."""
    import json  # only output that holds JSON pays for the import

    try:
        found = json.loads(line)
    except ValueError:
        return line  # not JSON after all: the line itself
    if not isinstance(found, dict):
        return None
    for key in ("result", "error", "message"):
        value = found.get(key)
        if isinstance(value, dict):
            value = value.get("message")
        if isinstance(value, str) and value.strip():
            return value
    return None


def _agent_of(argv: Sequence[str]) -> str:
    program = Path(argv[0]).name if argv else ""
    return program if program in PRESETS else COMMAND


# --- cost reports ------------------------------------------------------------------------

COST_KEYS = (
    "agent",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "turns",
    "duration_ms",
    "status",
)


def parse_cost(agent: str, output: str) -> dict[str, Any] | None:
    """The run's cost and token counts from the agent's own report, or None without one.

    The dict has every key of ``COST_KEYS`` (None where the agent does not report it);
    ``agent`` names the format that was read. Codex, Gemini and OpenClaw report tokens but
    no price. For ``command`` every known format is tried.
    """
    name = agent.strip().lower()
    readers = list(_READERS.values()) if name == COMMAND else [_READERS.get(name)]
    for reader in readers:
        found = reader(output) if reader is not None else None
        if found is not None:
            return found
    return None


def _cost(agent: str, **values: Any) -> dict[str, Any]:
    report: dict[str, Any] = dict.fromkeys(COST_KEYS)
    report.update(values, agent=agent)
    return report


def _claude_cost(output: str) -> dict[str, Any] | None:
    result = _last_json(output, lambda found: "total_cost_usd" in found or "cost_usd" in found)
    if result is None:
        return None
    usage = _dict(result.get("usage"))
    return _cost(
        "claude",
        cost_usd=_number(result.get("total_cost_usd", result.get("cost_usd"))),
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
        turns=_int(result.get("num_turns")),
        duration_ms=_int(result.get("duration_ms")),
        status=_text(result.get("subtype")),
    )


def _codex_cost(output: str) -> dict[str, Any] | None:
    totals = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
    turns = 0
    status = "completed"
    for event in _json_lines(output):
        kind = event.get("type")
        if kind == "turn.completed":
            turns += 1
            usage = _dict(event.get("usage"))
            for key in totals:
                totals[key] += _int(usage.get(key)) or 0
        elif kind == "turn.failed":
            status = "failed"
    if not turns:
        return None
    return _cost(
        "codex",
        input_tokens=totals["input_tokens"],
        output_tokens=totals["output_tokens"],
        cache_read_tokens=totals["cached_input_tokens"],
        turns=turns,
        status=status,
    )


_AIDER_AMOUNT = r"[\d.,]+[kKmM]?"
_AIDER_USAGE = re.compile(
    rf"Tokens: (?P<sent>{_AIDER_AMOUNT}) sent"
    rf"(?:, (?P<write>{_AIDER_AMOUNT}) cache write)?"
    rf"(?:, (?P<hit>{_AIDER_AMOUNT}) cache hit)?"
    rf", (?P<received>{_AIDER_AMOUNT}) received\."
    r"(?:\s*Cost: \$(?P<message>[\d.]+) message, \$(?P<session>[\d.]+) session\.)?"
)


def _aider_cost(output: str) -> dict[str, Any] | None:
    # One report per model reply: token counts are per message (summed here), the session
    # cost is cumulative (the last one wins). Counts like "2.3k" are aider's rounding.
    if "Tokens: " not in output:  # every report starts so; the pattern is compiled on demand
        return None
    sent = received = hit = write = 0
    session: float | None = None
    replies = 0
    for found in _AIDER_USAGE.finditer(output):
        replies += 1
        sent += _aider_count(found["sent"])
        received += _aider_count(found["received"])
        hit += _aider_count(found["hit"])
        write += _aider_count(found["write"])
        if found["session"] is not None:
            session = float(found["session"])
    if not replies:
        return None
    return _cost(
        "aider",
        cost_usd=session,
        input_tokens=sent,
        output_tokens=received,
        cache_read_tokens=hit,
        cache_write_tokens=write,
        turns=replies,
    )


def _aider_count(text: str | None) -> int:
    if not text:
        return 0
    text = text.replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1].lower(), 1)
    number = text[:-1] if scale > 1 else text
    try:
        return round(float(number) * scale)
    except ValueError:
        return 0


def _gemini_cost(output: str) -> dict[str, Any] | None:
    found = _last_json(output, lambda value: isinstance(value.get("stats"), dict))
    if found is None:
        return None
    stats = _dict(found.get("stats"))
    status = "error" if found.get("error") else _text(found.get("status"))
    if "input_tokens" in stats or "total_tokens" in stats:  # stream-json's result event
        return _cost(
            "gemini",
            input_tokens=_int(stats.get("input_tokens")),
            output_tokens=_int(stats.get("output_tokens")),
            cache_read_tokens=_int(stats.get("cached")),
            duration_ms=_int(stats.get("duration_ms")),
            status=status,
        )
    models = [_dict(model) for model in _dict(stats.get("models")).values()]
    if not models:
        return None
    tokens = [_dict(model.get("tokens")) for model in models]
    requests = sum(_int(_dict(model.get("api")).get("totalRequests")) or 0 for model in models)
    return _cost(
        "gemini",
        input_tokens=sum(_int(count.get("prompt", count.get("input"))) or 0 for count in tokens),
        # thinking tokens are billed as output
        output_tokens=sum(
            (_int(count.get("candidates")) or 0) + (_int(count.get("thoughts")) or 0)
            for count in tokens
        ),
        cache_read_tokens=sum(_int(count.get("cached")) or 0 for count in tokens),
        turns=requests or None,
        status=status,
    )


def _openclaw_cost(output: str) -> dict[str, Any] | None:
    found = _last_json(output, lambda value: _find_key(value, "agentMeta") is not None)
    if found is None:
        return None
    meta = _dict(_find_key(found, "meta"))
    usage = _dict(_dict(meta.get("agentMeta")).get("usage"))
    return _cost(
        "openclaw",
        input_tokens=_int(usage.get("input")),
        output_tokens=_int(usage.get("output")),
        cache_read_tokens=_int(usage.get("cacheRead")),
        cache_write_tokens=_int(usage.get("cacheWrite")),
        duration_ms=_int(meta.get("durationMs")),
        status=_text(_dict(meta.get("error")).get("kind")) or _text(meta.get("stopReason")),
    )


_READERS: Mapping[str, Callable[[str], dict[str, Any] | None]] = {
    "claude": _claude_cost,
    "codex": _codex_cost,
    "gemini": _gemini_cost,
    "openclaw": _openclaw_cost,
    "aider": _aider_cost,
}


def _last_json(output: str, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The last JSON object in ``output`` that starts a line and satisfies ``wanted``.

    Reports are one object per line (JSON lines) or one pretty-printed object; other
    output (stderr is merged in) may surround them.
    """
    starts = [match.start() for match in re.finditer(r"(?m)^\{", output)]
    if not starts:
        return None
    import json  # only output that holds JSON pays for the import

    decoder = json.JSONDecoder()
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(output, start)
        except ValueError:
            continue
        if isinstance(value, dict) and wanted(value):
            return value
    return None


def _json_lines(output: str) -> Iterator[dict[str, Any]]:
    if "{" not in output:
        return
    import json  # only output that holds JSON pays for the import

    for raw in output.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _find_key(value: Any, key: str) -> Any:
    """The value of the first ``key`` found in nested dicts (breadth first), or None."""
    queue = [value]
    while queue:
        current = queue.pop(0)
        if isinstance(current, dict):
            if key in current:
                return current[key]
            queue.extend(item for item in current.values() if isinstance(item, dict))
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
