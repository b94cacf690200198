"""Where to click, said one way: the settings and permissions memento's messages name, in
the words the README's set-up checklist and the workflow template use for them
(``tests/test_docs.py`` holds the three to the same words). Pure: constants and sentences.
"""

from __future__ import annotations

SECRETS = "Settings → Secrets and variables → Actions"
ISSUES_SETTING = "Settings → General → Features → Issues"
WORKFLOW_PERMISSIONS = "Settings → Actions → General → Workflow permissions"
#: The repository setting without which GITHUB_TOKEN may open no pull request (off for
#: repositories made since 2022), word for word as GitHub's page shows it.
PULLS_SETTING = "Allow GitHub Actions to create and approve pull requests"
PULLS_SETTING_ADVICE = (
    f"tick {WORKFLOW_PERMISSIONS} → “{PULLS_SETTING}” (in an organisation, its own "
    "Actions settings must allow it first)"
)
DRAFTS_ADVICE = (
    "draft pull requests need a public repository, or GitHub Team or Enterprise for a private one"
)
#: A fine-grained personal access token's permissions for the push-token.
CONTENTS_PERMISSION = "Contents: read and write"
WORKFLOWS_PERMISSION = "Workflows: read and write"
PUSH_TOKEN_INPUT = "push-token: ${{ secrets.MEMENTO_PUSH_TOKEN }}"
PUSH_TOKEN_ADVICE = (
    "give the action a `push-token`: a fine-grained personal access token (or a GitHub App "
    f"token) for this repository with {CONTENTS_PERMISSION} and {WORKFLOWS_PERMISSION}, "
    f"stored as a secret ({SECRETS}): `{PUSH_TOKEN_INPUT}`"
)
BRANCH_RULES = "Settings → Branches"
RULESETS = "Settings → Rules → Rulesets"
FORCE_PUSH_ADVICE = (
    f"allow force pushes to it in its branch protection rule ({BRANCH_RULES}), or take "
    f"“Block force pushes” out of its ruleset ({RULESETS})"
)


def compare_url(server_url: str, repository: str, base: str, branch: str) -> str:
    """The page where a person opens a pull request from ``branch`` to ``base`` by hand."""
    return f"{server_url}/{repository}/compare/{base}...{branch}?expand=1"
