"""The parts of the workflow ``memento init`` writes that depend on the project and on the
memento installed (``workflow_steps.py``), what ``init`` refuses to ship
(``scaffold.shipped_by``), and how ``schedule`` knows a cron daemon runs: tables of input
and output."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from memento_gh.cron.table import cron_daemon_running
from memento_gh.scaffold import WORKFLOW, shipped_by, support_scaffold
from memento_gh.workflow_steps import (
    SETUP_GO,
    SETUP_NODE,
    SETUP_PYTHON,
    action_uses,
    optional_dependencies,
    python_install,
    setup_steps,
)

SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")
PROJECT = '[project]\nname = "x"\n'


def steps_of(found: dict[str, str]) -> list[dict[str, object]]:
    flow = yaml.safe_load(support_scaffold("docs", project=found)[WORKFLOW])
    steps: list[dict[str, object]] = flow["jobs"]["memento"]["steps"]
    return steps


@pytest.mark.parametrize(
    ("found", "command"),
    [
        ({"pyproject.toml": PROJECT + '[project.optional-dependencies]\ntest = ["pytest"]\n'},
         "python -m pip install -e '.[test]'"),
        ({"pyproject.toml": PROJECT + '[project.optional-dependencies]\ndev = ["pytest"]\n'
          'docs = ["sphinx"]\n'}, "python -m pip install -e '.[dev]'"),
        ({"pyproject.toml": PROJECT + '[dependency-groups]\ntests = ["pytest"]\n'},
         "python -m pip install --upgrade pip && python -m pip install -e . --group tests"),
        ({"pyproject.toml": PROJECT, "tests": ""}, "python -m pip install -e . pytest"),
        ({"pyproject.toml": PROJECT}, "python -m pip install -e ."),
        # tool settings alone: no package to install, the requirements file is the project's
        ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "requirements.txt": "x\n",
          "tests": ""}, "python -m pip install -r requirements.txt pytest"),
        ({"setup.py": "", "requirements-dev.txt": ""},
         "python -m pip install -e . -r requirements-dev.txt"),
    ],
)  # fmt: skip
def test_the_python_install_line(found: dict[str, str], command: str) -> None:
    assert python_install(found) == command


def test_the_extras_are_read_on_python_3_10_too() -> None:
    from memento_gh import workflow_steps

    text = (
        PROJECT
        + "[project.optional-dependencies]\n"
        + 'test = ["pytest"]\n"docs" = ["sphinx"]\n\n'
        + "[dependency-groups]  # PEP 735\ndev = []\n"
    )
    assert optional_dependencies(text) == ({"test", "docs"}, {"dev"})
    assert workflow_steps._table_keys(text, "project.optional-dependencies") == {"test", "docs"}
    assert workflow_steps._table_keys(text, "dependency-groups") == {"dev"}


def test_a_python_project_gets_setup_python_then_its_install_before_memento() -> None:
    steps = steps_of({"pyproject.toml": PROJECT, ".python-version": "3.12\n", "tests": ""})
    uses = [step.get("uses") for step in steps]
    setup = uses.index(SETUP_PYTHON.split(" #")[0])
    assert steps[setup]["with"] == {"python-version-file": ".python-version"}
    assert steps[setup + 1]["run"] == "python -m pip install -e . pytest"
    assert setup + 1 < next(i for i, step in enumerate(steps) if step.get("id") == "memento")


@pytest.mark.parametrize(
    ("found", "install"),
    [
        ({"package.json": "{}", "package-lock.json": "{}"}, "npm ci"),
        ({"package.json": "{}", "pnpm-lock.yaml": ""},
         "corepack enable && pnpm install --frozen-lockfile"),
        ({"package.json": "{}", "yarn.lock": ""},
         "corepack enable && yarn install --frozen-lockfile"),
        ({"package.json": "{}"}, "npm install"),
    ],
)  # fmt: skip
def test_a_node_project_gets_setup_node_then_its_install(
    found: dict[str, str], install: str
) -> None:
    steps = steps_of(found)
    index = [step.get("uses") for step in steps].index(SETUP_NODE.split(" #")[0])
    assert steps[index]["with"] == {"node-version": "lts/*"}
    assert steps[index + 1]["run"] == install


def test_rust_and_go_and_a_project_of_each() -> None:
    found = {"Cargo.toml": "", "go.mod": "module x\n", "pyproject.toml": PROJECT}
    steps = steps_of(found)
    runs = [step.get("run") for step in steps]
    assert "cargo fetch" in runs and "go mod download" in runs
    go = [step.get("uses") for step in steps].index(SETUP_GO.split(" #")[0])
    assert steps[go]["with"] == {"go-version-file": "go.mod"}
    text = setup_steps(found)
    assert "wrote them from pyproject.toml, Cargo.toml and go.mod" in text.replace(
        "\n      # ", " "
    )


def test_nothing_known_is_a_commented_placeholder() -> None:
    text = setup_steps({})
    assert all(line.startswith("      #") for line in text.splitlines())
    assert "found no pyproject.toml, package.json, Cargo.toml or" in text
    assert len(steps_of({})) == 4  # checkout, the agent's cache and install, memento


def test_every_setup_action_is_pinned_to_a_commit_with_its_tag() -> None:
    for pinned in (SETUP_PYTHON, SETUP_NODE, SETUP_GO):
        assert SHA_PIN.match(pinned), pinned
    found = {"pyproject.toml": PROJECT, "package.json": "{}", "go.mod": ""}
    for line in support_scaffold("docs", project=found)[WORKFLOW].splitlines():
        uses = re.match(r"^\s*(?:- )?uses: (\S+ # \S+)$", line)
        if uses and "setup-" in line:
            assert SHA_PIN.match(uses.group(1)), line
    assert max(map(len, setup_steps(found).splitlines())) <= 100


GIT_INSTALL = {
    "url": "https://github.com/someone/memento-gh.git",
    "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "main"},
}


@pytest.mark.parametrize(
    ("direct_url", "uses"),
    [
        (json.dumps(GIT_INSTALL), f"someone/memento-gh@{'a' * 40}"),  # a fork: its own action
        (json.dumps({**GIT_INSTALL, "url": "file:///src/m"}), f"memento-gh/memento-gh@{'a' * 40}"),
        (json.dumps({"url": "file:///w/memento_gh-0.1-py3-none-any.whl", "archive_info": {}}),
         "memento-gh/memento-gh@v1 # zizmor: ignore[unpinned-uses]"),
        (json.dumps({"url": "file:///src/memento", "dir_info": {"editable": True}}),
         "memento-gh/memento-gh@v1 # zizmor: ignore[unpinned-uses]"),
        ("not json", "memento-gh/memento-gh@v1 # zizmor: ignore[unpinned-uses]"),
        (None, "memento-gh/memento-gh@v1 # zizmor: ignore[unpinned-uses]"),
    ],
)  # fmt: skip
def test_the_action_is_named_by_the_commit_pip_installed(direct_url: str | None, uses: str) -> None:
    text = action_uses(direct_url)
    assert text.splitlines()[-1] == f"        uses: {uses}"
    flow = yaml.safe_load(support_scaffold("docs", direct_url=direct_url)[WORKFLOW])
    [memento] = [s for s in flow["jobs"]["memento"]["steps"] if s.get("id") == "memento"]
    assert memento["uses"] == uses.split(" #", maxsplit=1)[0]


MANIFEST = "include README.rst\n\nrecursive-include docs *\nprune docs/_build\n"
SDIST = "MANIFEST.in:3 ships it in the sdist (recursive-include docs *)"


@pytest.mark.parametrize(
    ("found", "plan_dir", "said"),
    [
        ({"MANIFEST.in": MANIFEST}, "docs", SDIST),
        ({"MANIFEST.in": MANIFEST}, "docs/plan", SDIST),
        ({"MANIFEST.in": MANIFEST}, "plan", None),
        ({"MANIFEST.in": "recursive-include docs *.rst *.py\n"}, "docs", None),  # no Markdown
        ({"MANIFEST.in": "graft docs\nprune docs\n"}, "docs", None),
        ({"MANIFEST.in": "global-include *.md  # all\n"}, "plan", "MANIFEST.in:1 ships it"),
        ({"package.json": '{"files": ["lib", "docs/"]}'}, "docs", "in the npm package ('docs/')"),
        ({"package.json": '{"files": ["lib"]}'}, "docs", None),
        ({"mkdocs.yml": "site_name: x\n"}, "docs", "mkdocs.yml publishes every Markdown file"),
        ({"mkdocs.yml": "docs_dir: site\n"}, "docs", None),
        ({"_config.yml": "theme: x\n"}, "docs", "docs/_config.yml makes it a GitHub Pages site"),
        ({}, "docs", None),
    ],
)
def test_what_ships_or_publishes_the_plan_folder(
    found: dict[str, str], plan_dir: str, said: str | None
) -> None:
    told = shipped_by(found, plan_dir)
    assert told is None if said is None else said in (told or ""), told


def test_a_cron_daemon_is_a_process_named_so(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    for pid, name in (("1", "systemd"), ("42", "bash"), ("self", "x")):
        (proc / pid).mkdir(parents=True)
        (proc / pid / "comm").write_text(f"{name}\n", encoding="utf-8")
    assert cron_daemon_running(proc) is False
    (proc / "77").mkdir()
    (proc / "77" / "comm").write_text("crond\n", encoding="utf-8")
    assert cron_daemon_running(proc) is True
    assert cron_daemon_running(tmp_path / "no-proc") is None  # as on macOS


def test_a_real_process_named_cron_is_seen(tmp_path: Path) -> None:
    daemon = tmp_path / "cron"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", daemon)
    process = subprocess.Popen([str(daemon), "60"])
    try:
        assert cron_daemon_running() is True
    finally:
        process.kill()
        process.wait()
