"""Which environment variables carry a credential: one rule for every process memento starts.

The agent and verify (``engine/agents/presets.py``) and git (``gitrun.py``) each get memento's
environment without them. Two kinds: a *token* is a secret itself (GitHub's, another forge's,
the Actions runtime's, an action input); an *opener* is a way to obtain one (an askpass
program, the ssh agent's socket, a credential helper's settings). git's network calls keep
the openers, since a user's own push may need them; nothing else memento starts keeps either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

#: GITHUB_* names that describe the run and carry no credential.
GITHUB_KEEP = frozenset(
    {
        "GITHUB_ACTIONS",
        "GITHUB_API_URL",
        "GITHUB_BASE_REF",
        "GITHUB_GRAPHQL_URL",
        "GITHUB_HEAD_REF",
        "GITHUB_JOB",
        "GITHUB_REF",
        "GITHUB_REF_NAME",
        "GITHUB_REPOSITORY",
        "GITHUB_REPOSITORY_OWNER",
        "GITHUB_RUN_ATTEMPT",
        "GITHUB_RUN_ID",
        "GITHUB_RUN_NUMBER",
        "GITHUB_SERVER_URL",
        "GITHUB_SHA",
        "GITHUB_WORKFLOW",
        "GITHUB_WORKSPACE",
    }
)
#: The Actions runtime and OIDC tokens, and action inputs (the token input is
#: INPUT_GITHUB-TOKEN).
TOKEN_PREFIXES = ("ACTIONS_", "INPUT_")
#: Askpass programs, credential helpers and their settings, the ssh agent.
OPENER_PREFIXES = ("GIT_CREDENTIAL_", "GCM_", "SSH_ASKPASS")
OPENER_NAMES = frozenset({"GIT_ASKPASS", "SSH_AUTH_SOCK"})
_FORGES = frozenset({"GITHUB", "GH", "GITLAB", "GITEA", "FORGEJO", "BITBUCKET", "GIT"})
_SECRETS = frozenset(
    {"TOKEN", "PAT", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS"}
)


@lru_cache(maxsize=1024)
def is_token(name: str) -> bool:
    """True for a variable that holds a forge's or the runner's secret (``GITHUB_TOKEN``,
    ``MEMENTO_GITHUB_TOKEN``, ``GL_PAT``, ``ACTIONS_RUNTIME_TOKEN``, ``INPUT_GITHUB-TOKEN``);
    an agent's API key (``ANTHROPIC_API_KEY``) is not one."""
    upper = name.upper()
    if upper.startswith("GIT_CONFIG_"):
        return False  # git's own settings (the agent's are replaced: ``agents.agent_env``)
    if upper.startswith(TOKEN_PREFIXES):
        return True
    if upper.startswith("GITHUB_") and upper not in GITHUB_KEEP:
        return True
    words = set(re.split(r"[_\-.]+", upper))
    return bool(words & _FORGES) and bool(words & _SECRETS)


@lru_cache(maxsize=1024)
def is_opener(name: str) -> bool:
    """True for a variable that gives a process a way to credentials (askpass, ssh agent,
    credential helpers)."""
    upper = name.upper()
    return upper in OPENER_NAMES or upper.startswith(OPENER_PREFIXES)


def carries_credentials(name: str) -> bool:
    return is_token(name) or is_opener(name)


def without_credentials(environ: Mapping[str, str], *, openers: bool = False) -> dict[str, str]:
    """``environ`` without tokens and, unless ``openers``, without the ways to get one."""
    if openers:
        return {name: value for name, value in environ.items() if not is_token(name)}
    return {name: value for name, value in environ.items() if not carries_credentials(name)}
