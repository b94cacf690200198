"""The package's import graph, read from the source (AST): no cycle between memento_gh's
subpackages and top-level modules, nor between any two of its modules (files), and the pure
core never reaches a subprocess, the GitHub client or the environment, however indirectly."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memento_gh"

#: Modules that take values and return values: no clock, environment, process or network.
PURE = (
    "memento_gh.plan.model",
    "memento_gh.plan.picking",
    "memento_gh.plan.scanner",
    "memento_gh.plan.editor",
    "memento_gh.plan.derive",
    "memento_gh.plan.validate",
    "memento_gh.plan.progress",
    "memento_gh.plan.guide",
    "memento_gh.plan.revision",
    "memento_gh.plan.risks",
    "memento_gh.engine.guards",
    "memento_gh.engine.prompt",
    "memento_gh.engine.books.bookkeeping",
    "memento_gh.engine.books.breaker",
    "memento_gh.engine.agents.limits",
    "memento_gh.formats.status_log",
    "memento_gh.formats.notes",
    "memento_gh.formats.state",
    "memento_gh.formats.memory",
    "memento_gh.formats.memory_selection",
    "memento_gh.formats.memory_learning",
    "memento_gh.formats.project_map",
    "memento_gh.controls.model",
    "memento_gh.github.events",
    "memento_gh.github.boxes",
    "memento_gh.github.render",
    "memento_gh.github.issue_texts",
    "memento_gh.github.job_text",
    "memento_gh.runner_text",
    "memento_gh.github.answers",
    "memento_gh.github.failures",
    "memento_gh.github.reconcile",
    "memento_gh.github.pulls",
    "memento_gh.github.ci",
    "memento_gh.github.revision",
    "memento_gh.github.planpull",
    "memento_gh.github.guidance",
    "memento_gh.github.setup_issues",
    "memento_gh.github.bodies",
    "memento_gh.dashboard.snapshot",
    "memento_gh.cron.fields",
    "memento_gh.cron.line",
    "memento_gh.durations",
    "memento_gh.checks",
)
#: What a pure module may not import, directly or through another memento_gh module.
IMPURE = ("subprocess", "github", "os.environ")


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(tree: ast.AST) -> Iterator[str]:
    """Every module an import statement names (at any depth, also inside functions), and
    ``os.environ`` wherever it is read."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "environ"
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            yield "os.environ"


def read_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    return {
        module_name(path, package): set(imports_of(ast.parse(path.read_text(encoding="utf-8"))))
        for path in sorted(package.rglob("*.py"))
    }


GRAPH = read_graph()


def unit(module: str) -> str:
    """The part of the package a module belongs to: its subpackage (``plan`` for
    ``memento_gh.plan.model``), or itself when it is a top-level module (``files``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else module


def internal(graph: Mapping[str, set[str]], name: str) -> str | None:
    """The memento_gh module an imported name is (``memento_gh.plan.model.Task`` is the
    module ``memento_gh.plan.model``), or None for a name outside the package."""
    while name.startswith("memento_gh"):
        if name in graph:
            return name
        name = name.rpartition(".")[0]
    return None


def unit_edges(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {unit(module): set() for module in graph}
    for module, names in graph.items():
        for name in names:
            target = internal(graph, name)
            if target is not None and unit(target) != unit(module):
                edges[unit(module)].add(unit(target))
    return edges


def module_edges(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Which of the package's modules each module loads (at any depth, also inside functions
    and under ``TYPE_CHECKING``). ``from memento_gh.plan import spend`` loads the module
    ``memento_gh.plan.spend``, not the package's ``__init__`` (Python has that one half made
    by then), so a package whose ``__init__`` imports its own modules is no cycle;
    ``from memento_gh.plan import Plan`` loads the ``__init__``."""
    modules = {module_name(path, package) for path in package.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        names: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names += (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    whole = f"{node.module}.{alias.name}"
                    names.append(whole if whole in modules else node.module)
        found = (internal(dict.fromkeys(modules), name) for name in names)
        edges[module] = {target for target in found if target not in (None, module)}
    return edges


def find_cycle(edges: Mapping[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as the list of its nodes (first repeated last), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for following in sorted(edges.get(node, ())):
            if state.get(following) == "open":
                return [*path[path.index(following) :], following]
            if following not in state:
                found = visit(following)
                if found:
                    return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    """``start`` and every memento_gh module it imports, directly or not."""
    seen = {start}
    todo = [start]
    while todo:
        for name in graph.get(todo.pop(), ()):
            target = internal(graph, name)
            if target is not None and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def impure_imports(graph: Mapping[str, set[str]], start: str) -> list[str]:
    """``module: name`` for each forbidden import reachable from ``start``."""
    found = []
    for module in sorted(reachable(graph, start)):
        for name in sorted(graph[module]):
            if any(name == bad or name.startswith(bad + ".") for bad in IMPURE):
                found.append(f"{module}: {name}")
    return found


# -- the package ------------------------------------------------------------------------------


def test_no_cycle_between_the_parts_of_the_package() -> None:
    assert find_cycle(unit_edges(GRAPH)) is None


def test_no_cycle_between_the_modules_of_the_package() -> None:
    assert find_cycle(module_edges()) is None


#: The wall's own parts: what keeps and restores ``.git`` and walks the tree around a run.
WALL_PARTS = tuple(
    f"memento_gh.engine.wall.{name}"
    for name in ("gitfolder", "gitindex", "hidden", "special_files")
)


def test_nothing_but_the_wall_keeps_or_restores_the_git_folder() -> None:
    """The worker's attempt and the architect reach ``.git``'s keeping through the wall's
    one module (``memento_gh.engine.wall``), never through its parts."""
    outside = sorted(
        module
        for module, names in GRAPH.items()
        if not module.startswith("memento_gh.engine.wall")
        and any(internal(GRAPH, name) in WALL_PARTS for name in names)
    )
    assert outside == []
    users = {
        module
        for module, names in GRAPH.items()
        if any(internal(GRAPH, name) == "memento_gh.engine.wall" for name in names)
    }
    assert {"memento_gh.engine.tick.attempt", "memento_gh.architect.run"} <= users


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_reaches_no_process_network_or_environment(module: str) -> None:
    assert module in GRAPH, f"{module} is not a module of the package (renamed?)"
    assert impure_imports(GRAPH, module) == []


# -- the checks themselves ------------------------------------------------------------------


def write_package(root: Path, files: Mapping[str, str]) -> Path:
    package = root / "memento_gh"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "plan/__init__.py": "",
            "plan/model.py": "def f():\n    from memento_gh.engine import tick\n",
            "engine/__init__.py": "",
            "engine/tick/steps.py": "from memento_gh.plan.model import Task\n",
        },
    )
    edges = unit_edges(read_graph(package))

    assert find_cycle(edges) in (["engine", "plan", "engine"], ["plan", "engine", "plan"])


def test_a_cycle_between_two_modules_of_one_subpackage_is_found(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "github/__init__.py": "from memento_gh.github.action import run\n",
            "github/action.py": "from memento_gh.github import reporting\n",
            "github/reporting.py": (
                "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                "    from memento_gh.github.action import Settings\n"
            ),
            "plan/__init__.py": "from memento_gh.plan.model import Plan\n",
            "plan/model.py": "from memento_gh.plan import spend\n",
            "plan/spend.py": "",
        },
    )
    edges = module_edges(package)

    assert edges["memento_gh.plan.model"] == {"memento_gh.plan.spend"}
    assert find_cycle(edges) == [
        "memento_gh.github.action",
        "memento_gh.github.reporting",
        "memento_gh.github.action",
    ]


def test_an_impure_import_two_modules_away_is_found(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "core.py": "from memento_gh import helper\n",
            "helper.py": "import os\n\ndef token():\n    return os.environ.get('T')\n",
            "shell.py": "import subprocess\n",
        },
    )
    graph = read_graph(package)

    assert impure_imports(graph, "memento_gh.core") == ["memento_gh.helper: os.environ"]
    assert impure_imports(graph, "memento_gh.shell") == ["memento_gh.shell: subprocess"]
