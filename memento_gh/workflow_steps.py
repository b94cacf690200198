"""The parts of the workflow ``memento init`` writes that depend on the repository and on the
memento installed: the set-up steps that give verify the project's own environment on the
runner, and the reference to the action. Pure: the files' texts in, YAML text out.

verify runs on the runner, after the agent, with the PATH the job's earlier steps leave: a
runner has none of the project's packages until a step installs them, so a `python -m
pytest` verify would fail every task there and spend its retries. ``setup_steps`` reads the
files that say how a project is built (``pyproject.toml``, ``package.json`` and its lockfile,
``Cargo.toml``, ``go.mod``) and writes the steps for each it finds, the setup actions pinned
to a commit with their tag beside it; for none, a commented placeholder.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple

#: The setup actions, each pinned to the commit of its newest major release (the tag beside
#: it): a tag can be moved, a commit cannot.
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97 # v7.0.0"
SETUP_NODE = "actions/setup-node@820762786026740c76f36085b0efc47a31fe5020 # v7.0.0"
SETUP_GO = "actions/setup-go@b7ad1dad31e06c5925ef5d2fc7ad053ef454303e # v7.0.0"

#: The files ``setup_steps`` reads (their text) or looks for (present or not), relative to
#: the repository; the caller gives those that exist.
PROJECT_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    ".python-version",
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    ".nvmrc",
    ".node-version",
    "Cargo.toml",
    "go.mod",
    "tests",
    "test",
)
#: The extras (or dependency groups) that hold a project's test tools, most telling first.
TEST_EXTRAS = ("test", "tests", "testing", "dev")

INDENT = " " * 6  # a step of the job's `steps:`
LEAD = (
    "The project's own environment, for verify: it runs on this runner, after the agent, "
    "with the PATH these steps leave, and a runner has none of the project's packages. "
    "memento init wrote them from {found}; change them as your project needs."
)
PLACEHOLDER = (
    "# The project's own environment, for verify: it runs on this runner, after the agent,\n"
    "# with the PATH the steps before memento's leave, and a runner has none of the\n"
    "# project's packages. memento init found no pyproject.toml, package.json, Cargo.toml or\n"
    "# go.mod to write them from: add the steps your verify needs here, for example\n"
    "#   - name: Install the project\n"
    "#     run: make deps\n"
)

Files = Mapping[str, str]


class Step(NamedTuple):
    """One step: its name, and either an action (``uses``, with ``with_``) or a command."""

    name: str
    uses: str = ""
    with_: tuple[tuple[str, str], ...] = ()
    run: str = ""
    comment: str = ""  # a line above it, for what a reader must know

    def yaml(self) -> str:
        lines = [f"- name: {self.name}"]
        if self.uses:
            lines.append(f"  uses: {self.uses}")
        if self.with_:
            lines.append("  with:")
            lines += [f"    {key}: {value}" for key, value in self.with_]
        if self.run:
            lines.append(f"  run: {self.run}")
        return _comment(self.comment) + "".join(f"{INDENT}{line}\n" for line in lines)


def _comment(text: str) -> str:
    """``text`` as comment lines of the job's steps, at most 92 columns wide."""
    import textwrap

    return "".join(f"{INDENT}# {line}\n" for line in textwrap.wrap(text, 92 - len(INDENT) - 2))


def setup_steps(found: Files) -> str:
    """The set-up steps for the project whose files are ``found`` (name → text; "" for a
    folder), as lines of the job's ``steps:``, a comment first (no line end after the last)."""
    chosen: list[tuple[str, list[Step]]] = []
    if _python_project(found):
        chosen.append(
            ("pyproject.toml" if "pyproject.toml" in found else "setup.py", python(found))
        )
    if "package.json" in found:
        chosen.append(("package.json", node(found)))
    if "Cargo.toml" in found:
        chosen.append(("Cargo.toml", rust()))
    if "go.mod" in found:
        chosen.append(("go.mod", go()))
    if not chosen:
        return "".join(f"{INDENT}{line}\n" for line in PLACEHOLDER.splitlines()).rstrip("\n")
    names = [name for name, _ in chosen]
    said = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    lead = _comment(LEAD.format(found=said))
    return (lead + "".join(step.yaml() for _, steps in chosen for step in steps)).rstrip("\n")


# -- Python -----------------------------------------------------------------------------------


def python(found: Files) -> list[Step]:
    if ".python-version" in found:
        version = ("python-version-file", ".python-version")
    else:
        version = ("python-version", '"3.x" # the newest Python 3: name the one your tests use')
    setup = Step("Set up Python", uses=SETUP_PYTHON, with_=(version,))
    return [setup, Step("Install the project and its test tools", run=python_install(found))]


def python_install(found: Files) -> str:
    """The pip command line that installs the project with its test tools."""
    pip = "python -m pip install"
    pyproject = found.get("pyproject.toml", "")
    extras, groups = optional_dependencies(pyproject)
    installable = "setup.py" in found or "setup.cfg" in found or _has_table(pyproject)
    for name in TEST_EXTRAS if installable else ():
        if name in extras:
            return f"{pip} -e '.[{name}]'"
        if name in groups:  # PEP 735's groups: pip reads them from 25.1 on
            return f"{pip} --upgrade pip && {pip} -e . --group {name}"
    words = ["-e ."] if installable else []
    words += [f"-r {name}" for name in REQUIREMENTS if name in found]
    if "tests" in found or "test" in found:
        words.append("pytest")  # no extra names the tests' runner
    return f"{pip} {' '.join(words)}" if words else f"{pip} pytest"


REQUIREMENTS = ("requirements.txt", "requirements-dev.txt", "requirements-test.txt")


def _python_project(found: Files) -> bool:
    return any(name in found for name in ("pyproject.toml", "setup.py", "setup.cfg"))


def _has_table(pyproject: str) -> bool:
    """Whether pip can build the project: it has a ``[project]`` or ``[build-system]`` table
    (a ``pyproject.toml`` of tool settings alone is no package)."""
    return re.search(r"^\[(project|build-system)\]", pyproject, re.MULTILINE) is not None


def optional_dependencies(pyproject: str) -> tuple[set[str], set[str]]:
    """The names of ``[project.optional-dependencies]`` (the extras) and of
    ``[dependency-groups]`` in a ``pyproject.toml``; none for a file that does not read."""
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            data = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError:
            return set(), set()
        extras = data.get("project", {}).get("optional-dependencies", {})
        groups = data.get("dependency-groups", {})
        return (
            set(extras) if isinstance(extras, dict) else set(),
            set(groups) if isinstance(groups, dict) else set(),
        )
    # Python 3.10 has no TOML reader: the keys of the two tables, line by line.
    extras = _table_keys(pyproject, "project.optional-dependencies")
    return extras, _table_keys(pyproject, "dependency-groups")


def _table_keys(text: str, table: str) -> set[str]:
    keys: set[str] = set()
    inside = False
    for line in text.splitlines():
        header = re.match(r"\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
        if header:
            inside = header.group(1).strip() == table
        elif inside:
            key = re.match(r"\s*\"?([A-Za-z0-9_.-]+)\"?\s*=", line)
            if key:
                keys.add(key.group(1))
    return keys


# -- Node.js, Rust, Go ------------------------------------------------------------------------


def node(found: Files) -> list[Step]:
    version_file = next((name for name in (".nvmrc", ".node-version") if name in found), None)
    version = ("node-version-file", version_file) if version_file else ("node-version", "lts/*")
    setup = Step("Set up Node.js", uses=SETUP_NODE, with_=(version,))
    return [setup, _node_install(found)]


def _node_install(found: Files) -> Step:
    name = "Install the project's packages"
    if "package-lock.json" in found or "npm-shrinkwrap.json" in found:
        return Step(name, run="npm ci")
    if "pnpm-lock.yaml" in found:
        return Step(name, run="corepack enable && pnpm install --frozen-lockfile")
    if "yarn.lock" in found:
        return Step(name, run="corepack enable && yarn install --frozen-lockfile")
    why = "No lockfile: commit package-lock.json, and `npm ci` installs the same packages."
    return Step(name, run="npm install", comment=why)


def rust() -> list[Step]:
    return [
        Step(
            "Fetch the crates",
            run="cargo fetch",
            comment="GitHub's Ubuntu runners come with rustup and cargo (rust-toolchain.toml, "
            "if any, chooses the toolchain).",
        )
    ]


def go() -> list[Step]:
    setup = Step("Set up Go", uses=SETUP_GO, with_=(("go-version-file", "go.mod"),))
    return [setup, Step("Download the modules", run="go mod download")]


# -- the action -------------------------------------------------------------------------------

#: The action's repository, and the tag a release of it will have.
ACTION_REPOSITORY = "memento-gh/memento-gh"
RELEASE_TAG = "v1"


def action_uses(direct_url: str | None) -> str:
    """The ``uses:`` line (and the comment above it) of memento's step, for the memento
    installed: pip's record of where it came from (``direct_url.json``, PEP 610; None when
    there is none). Installed from its git repository, the action is named by that commit,
    which the user can look up (``pip freeze`` shows it too); else by the release tag."""
    vcs = _vcs_info(direct_url)
    lines: Sequence[str]
    if vcs is not None:
        commit, url, revision = vcs
        asked = f" ({revision})" if revision else ""
        lines = (
            "# The commit of memento that pip installed where `memento init` ran: the action",
            f"# runs the same code. From {url}{asked}; `pip freeze` shows it too.",
            f"uses: {_repository(url)}@{commit}",
        )
    else:
        lines = (
            "# This memento was not installed from its git repository, so init cannot name",
            "# the action's commit: put the commit SHA of the memento you use in place of the",
            "# tag, which exists only once memento has a release.",
            f"uses: {ACTION_REPOSITORY}@{RELEASE_TAG} # zizmor: ignore[unpinned-uses]",
        )
    return "".join(f"{INDENT}  {line}\n" for line in lines).rstrip("\n")


def _vcs_info(direct_url: str | None) -> tuple[str, str, str] | None:
    """(commit, url, requested revision) of a git install, else None."""
    if not direct_url:
        return None
    try:
        record = json.loads(direct_url)
    except ValueError:
        return None
    vcs = record.get("vcs_info") if isinstance(record, dict) else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git":
        return None
    commit = vcs.get("commit_id")
    if not isinstance(commit, str) or not re.fullmatch(r"[0-9a-f]{40}", commit):
        return None
    url = record.get("url")
    revision = vcs.get("requested_revision")
    return commit, str(url or ""), revision if isinstance(revision, str) else ""


def _repository(url: str) -> str:
    """``owner/name`` of a GitHub URL (a fork's too), else memento's own."""
    found = re.match(
        r"(?:git\+)?(?:https?|ssh)://(?:[^@/]+@)?github\.com/([^/]+)/([^/]+?)(?:\.git)?/?$", url
    )
    return f"{found.group(1)}/{found.group(2)}" if found else ACTION_REPOSITORY
