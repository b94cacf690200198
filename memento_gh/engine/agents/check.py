"""Whether the agent can run as configured, checked before a tick claims anything: its name,
its command line, its program on PATH, the model and the extra arguments the user chose."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from memento_gh.engine.agents.presets import COMMAND, KNOWN_AGENTS, PLACEHOLDER, PRESETS
from memento_gh.errors import UserError


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
    model: str = "--model"
    agent_args: str = "--agent-args"


ACTION_OPTIONS = AgentOptions(
    command_agent="the agent `command`",
    template="the action's `agent-command` input",
    how_to_set_template="set the action's `agent-command` input to your agent's command line",
    how_to_name="; set the action's `agent` input to one of them",
    model="the action's `model` input",
    agent_args="the action's `agent-args` input",
)


#: The options of ``memento tick``, ``run`` and ``schedule install``.
COMMAND_LINE = AgentOptions()


def check_model(model: str | None, options: AgentOptions = COMMAND_LINE) -> str | None:
    """The model the user chose for every task (None: the agent's own default), or
    ``AgentConfigError`` naming what a model looks like."""
    if model is None or not model.strip():
        return None
    from memento_gh.plan.values import parse_model

    try:
        return parse_model(model)
    except ValueError as error:
        raise AgentConfigError(f"{options.model}: {error}") from None


def read_agent_args(text: str | None, options: AgentOptions = COMMAND_LINE) -> tuple[str, ...]:
    """The user's extra arguments for the agent, split as a POSIX shell would split them
    (no shell ever runs them), or ``AgentConfigError``."""
    try:
        return tuple(shlex.split(text or ""))
    except ValueError as error:
        raise AgentConfigError(
            f"{options.agent_args} cannot be read ({error}): {text}; quote it as a shell would, "
            "e.g. --append-system-prompt 'Be brief.'"
        ) from None


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
