"""The coding agents a tick can run: their command lines and their environment (their cost
reports: ``cost_reports.py``).

Every preset runs the agent non-interactively in the repository root, lets it edit files
without asking, and keeps it from committing where the agent has a switch for that (the tick
checks HEAD afterwards anyway). The prompt always arrives as a file: on stdin, and as a
``--message-file`` where the agent has one; it is never a (size-limited) argv item.

``command`` runs any command line, given as a template with the placeholders
``{prompt_file}``, ``{task_id}``, ``{repo}`` and ``{model}`` (empty when none is chosen),
and ``{proposal_file}`` (the file an architect writes its plan into: ``memento plan``). The
template is split like a POSIX shell would split it *first*, and the placeholders are filled
into the resulting argv items after, so a value with spaces, quotes or ``;`` stays one
argument. No shell is involved.

The checks of an agent's configuration, before a tick claims anything, are ``agent_check``'s.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import IO, NamedTuple

from memento_gh import credentials, files
from memento_gh.engine.agents import cost_reports
from memento_gh.engine.agents.cost_reports import parse_cost
from memento_gh.engine.agents.process import DEFAULT_GRACE, run_in_group
from memento_gh.engine.records import AgentResult
from memento_gh.errors import UserError
from memento_gh.plan.model import Task
from memento_gh.plan.spend import format_usd

#: The agent that runs the user's own command line (its cost report is any known format).
COMMAND = cost_reports.COMMAND

#: The short instruction given on argv to agents that take the task on stdin.
INSTRUCTION = (
    "Carry out the task described in the input. Change files only: do not commit, push, "
    "or ask questions. Your change is checked and committed for you."
)

#: The variable that names the chosen model to the agent (and to ``memento tick``).
MODEL_VARIABLE = "MEMENTO_MODEL"

#: ``{name}`` placeholders of a command template.
PLACEHOLDER = re.compile(r"\{(prompt_file|task_id|repo|model|proposal_file)\}")


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
    #: The model chosen for this run (``--model``, the task's ``model:``...), if any.
    model: str | None = None
    #: The user's own arguments for the agent's command line (``--agent-args``).
    extra: tuple[str, ...] = ()
    #: The architect's proposal file (``memento plan``); None for a tick's worker.
    proposal_file: Path | None = None
    #: What is left of the day's and the task's budget in USD, for an agent that takes a cap.
    budget_usd: Decimal | None = None

    def beside_prompt(self, name: str) -> Path:
        return self.prompt_file.with_name(f"{self.prompt_file.stem}.{name}")


def _claude(run: AgentRun) -> list[str]:
    # Bash is allowed, so that it runs the verify; the git rules deny what commits (a deny
    # wins over an allow). The rules are separate argv items: --disallowedTools takes several
    # values, so nothing positional may follow it. --max-budget-usd stops one run from going
    # through the rest of the day's or the task's budget.
    cap = [] if run.budget_usd is None else ["--max-budget-usd", format_usd(run.budget_usd)]
    return [
        "claude",
        "-p",
        INSTRUCTION,
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
        *cap,
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
        # A URL in the prompt (a spec, a task) is data: with --yes-always aider would fetch
        # it, and first try to install its scraper from pypi.org.
        "--no-detect-urls",
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
        # aider has no shell: its test command is how it runs the verify, after each edit,
        # with its output quoted: aider prints it among its own usage reports.
        argv += ["--test-cmd", quoted_verify(run.task.verify), "--auto-test"]
    if run.proposal_file is not None:
        # The architect: aider edits only the files in its chat, and skips a file git
        # ignores (the proposal is in .git/info/exclude) unless told to take it.
        argv += ["--add-gitignore-files", f"--file={run.proposal_file}"]
    return argv + [f"--file={path}" for path in aider_files(run.task)]


def quoted_verify(verify: str) -> str:
    """The shell line that runs ``verify`` with each line of its output quoted
    (``quoted_output.py``), so that no line of it reads as the agent's cost report."""
    import sys

    from memento_gh.engine.agents import quoted_output

    return shlex.join([sys.executable, "-I", quoted_output.__file__, verify])


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
        if run.proposal_file is not None:
            # The architect may change its proposal only: every other file is out of
            # aider's sight. Else each file a message names (the prompt's tree names them
            # all) joins its chat, editable, its content sent to the model.
            shown = run.proposal_file.name
            return {run.beside_prompt("aiderignore"): f"*\n!/{shown}\n"}
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
    # One isolated headless turn: no agent to add first, a temporary state folder of its
    # own, the repository as workspace and the tools' working directory. Its provider and
    # default model are the user's config (~/.openclaw/openclaw.json or $OPENCLAW_CONFIG_PATH).
    argv = ["openclaw", "agent", "exec", "--message-file", "-", "--cwd", str(run.repo), "--json"]
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


def agent_argv(
    agent: str,
    template: str | None,
    *,
    prompt_file: Path,
    task: Task,
    repo: Path,
    timeout: float | None = None,
    protected: tuple[str, ...] = (),
    model: str | None = None,
    extra: Sequence[str] = (),
    proposal_file: Path | None = None,
    budget_usd: Decimal | None = None,
) -> list[str]:
    """The command line for ``agent``; ``template`` is used by the ``command`` agent only.
    ``model`` becomes the preset's ``--model``, ``extra`` arguments follow the preset's own;
    ``budget_usd`` caps the run where the agent takes a cap (claude)."""
    run = AgentRun(
        prompt_file, task, repo, timeout, protected, model, tuple(extra), proposal_file, budget_usd
    )
    name = agent.strip().lower()
    if name == COMMAND:
        return [*command_argv(template, run), *run.extra]
    preset = PRESETS.get(name)
    if preset is None:
        raise UserError(f"unknown agent {agent!r}; known agents: {', '.join(KNOWN_AGENTS)}")
    argv = preset(run)
    # Before what must stay last: claude's --disallowedTools takes every value after it,
    # codex's "-" (the prompt from stdin) is positional.
    tail = {"claude": "--disallowedTools", "codex": "-"}.get(name)
    at = argv.index(tail) if tail in argv else len(argv)
    options = [*(["--model", run.model] if run.model else []), *run.extra]
    return [*argv[:at], *options, *argv[at:]]


def command_argv(template: str | None, run: AgentRun) -> list[str]:
    if template is None or not template.strip():
        raise UserError(
            "the command agent needs a command line: set --agent-cmd or MEMENTO_AGENT_CMD"
        )
    try:
        items = shlex.split(template)
    except ValueError as error:
        raise UserError(f"the agent command line cannot be read ({error}): {template}") from error
    values = {
        "prompt_file": str(run.prompt_file),
        "task_id": run.task.id,
        "repo": str(run.repo),
        "model": run.model or "",
        "proposal_file": str(run.proposal_file or ""),
    }
    # One pass per item: a value that itself contains "{repo}" is not filled again.
    return [PLACEHOLDER.sub(lambda found: values[found.group(1)], item) for item in items]


def aider_files(task: Task) -> list[str]:
    """The task's context files that name one file (aider takes files, not globs or folders)."""
    return [
        path
        for path in task.context_files
        if path and not path.endswith("/") and not any(char in path for char in "*?[")
    ]


# --- environment -------------------------------------------------------------------------

#: Git settings passed through the environment (an ``http.extraheader`` with a token, say):
#: the agent's are replaced by settings that switch credentials off.
GIT_SETTINGS_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
GIT_SETTINGS_NAMES = frozenset({"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"})


def agent_env(environ: Mapping[str, str], identity: Sequence[str] = ()) -> dict[str, str]:
    """``environ`` without push credentials, and with git unable to find any; ``identity``
    (``key=value`` settings, memento's own for its commits) is the agent's git identity.

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
    overrides += _identity_overrides(identity, environ)
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for index, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ASKPASS"] = ""  # set but empty: git then ignores core.askPass and SSH_ASKPASS too
    env["GCM_INTERACTIVE"] = "never"
    return env


def writes_identity(agent: str) -> bool:
    """Whether ``agent`` asks git for ``user.name`` and, finding none, writes one into
    ``.git/config`` (aider: "Your Name"), unless given one (``agent_env``'s ``identity``)."""
    return agent.strip().lower() == "aider"


def _identity_overrides(
    identity: Sequence[str], environ: Mapping[str, str]
) -> list[tuple[str, str]]:
    # An agent that asks git for user.name and finds none may write one into .git/config
    # (aider: "Your Name", when only GIT_AUTHOR_* names the author, as under cron).
    pairs = [setting.partition("=") for setting in identity]
    found = [(key, value) for key, _, value in pairs if key.startswith("user.")]
    if identity and "EMAIL" in environ and not any(key == "user.email" for key, _ in found):
        found.append(("user.email", environ["EMAIL"]))  # git's own last resort for it
    return found


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
    identity: Sequence[str] = (),
    model: str | None = None,
) -> AgentResult:
    """Run the agent in ``repo`` with the prompt on stdin, and read its cost report.

    ``env`` is scrubbed with :func:`agent_env` here too, so no caller can forget it.
    ``agent`` names the output format and the preset's variables (``PRESET_ENV``); by
    default it is guessed from ``argv[0]``; ``identity`` is its git identity (``agent_env``).
    ``model``, the model chosen for the run, is ``MEMENTO_MODEL`` in its environment and
    ``model`` in its cost report.
    """
    name = agent if agent is not None else _agent_of(argv)
    child = {**PRESET_ENV.get(name.strip().lower(), {}), **agent_env(env, identity)}
    child.pop(MODEL_VARIABLE, None)
    if model:
        child[MODEL_VARIABLE] = model
    process = run_in_group(
        list(argv),
        cwd=repo,
        env=child,
        timeout=timeout,
        log=log,
        stdin=prompt_file,
        grace=grace,
    )
    cost = parse_cost(name, process.output)
    if model:
        cost = {**(cost or cost_reports.blank_report(name.strip().lower())), "model": model}
    return AgentResult(process, cost)


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
    ``error`` text, also from one printed over several lines (openclaw's envelope)."""
    text = _ESCAPES.sub("", output)
    lines = text.splitlines()
    if text.rstrip().endswith("}"):  # a JSON report last, perhaps over several lines
        said = _json_message(cost_reports.last_json(text, lambda found: True))
        lines = [said] if said else lines
    for raw in reversed(lines):
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
    return _json_message(found)


def _json_message(found: object) -> str | None:
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
