"""A small project laid out like tkem/cachetools, for the tests of a first day with memento on
a real project: a package under ``src/``, its ``tests/`` for pytest, a ``pyproject.toml``
built by setuptools with no extra for the tests (tox.ini names pytest), and a ``docs/``
folder of Sphinx sources that ``MANIFEST.in`` ships in the sdist.

``write_project`` makes it a git repository with one commit. ``user_venv`` gives it the
``.venv`` a developer of it has: pytest (borrowed from the environment the tests run in) and
the package importable from ``src/`` (a ``.pth`` line, which is what setuptools' editable
install writes for a ``src`` layout; pip is left out, to make it in a second).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PACKAGE = "lrukit"

PYPROJECT = f"""\
[build-system]
requires = ["setuptools >= 64"]
build-backend = "setuptools.build_meta"

[project]
name = "{PACKAGE}"
dynamic = ["version"]
description = "Memoizing collections"
requires-python = ">= 3.10"

[tool.setuptools]
package-dir = {{"" = "src"}}

[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.dynamic]
version = {{attr = "{PACKAGE}.__version__"}}
"""
#: cachetools' MANIFEST.in, as it is: docs/ goes into the sdist.
MANIFEST = """\
include CHANGELOG.rst
include LICENSE
include MANIFEST.in
include README.rst
include tox.ini

recursive-include docs *
prune docs/_build

recursive-include tests *.py
"""
TOX = """\
[tox]
envlist = py

[testenv]
deps =
    pytest
commands =
    py.test {posargs}
"""
INIT = '''\
"""Memoizing collections."""

__version__ = "1.0.0"

from .cache import Cache, LRUCache  # noqa: E402

__all__ = ("Cache", "LRUCache")
'''
CACHE = '''\
"""A mapping with a maximum size, and one that drops the least recently used item."""

import collections


class Cache(collections.abc.MutableMapping):
    def __init__(self, maxsize):
        self.maxsize = maxsize
        self._data = {}

    def __getitem__(self, key):
        return self._data[key]

    def __setitem__(self, key, value):
        if key not in self._data and len(self._data) >= self.maxsize:
            self.popitem()
        self._data[key] = value

    def __delitem__(self, key):
        del self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


class LRUCache(Cache):
    def __getitem__(self, key):
        value = self._data.pop(key)
        self._data[key] = value
        return value

    def popitem(self):
        key = next(iter(self._data))
        return key, self._data.pop(key)
'''
KEYS = '''\
"""Keys for the memoizing decorators."""


def hashkey(*args, **kwargs):
    """A key for the arguments of a call."""
    return args + tuple(sorted(kwargs.items()))
'''
TEST_KEYS = f"""\
from {PACKAGE}.keys import hashkey


def test_a_key_is_its_arguments():
    assert hashkey(1, 2, a=3) == (1, 2, ("a", 3))
"""
TEST_CACHE = f"""\
import pytest

from {PACKAGE} import LRUCache


def test_the_least_recently_used_item_goes():
    cache = LRUCache(maxsize=2)
    cache[1], cache[2] = "one", "two"
    cache[1]
    cache[3] = "three"
    assert sorted(cache) == [1, 3]


def test_a_missing_key_is_a_key_error():
    with pytest.raises(KeyError):
        LRUCache(maxsize=1)["nothing"]
"""
#: What `Cache.stats()` must return: a test written before the method.
TEST_STATS = f"""\
from {PACKAGE} import Cache


def test_stats_count_the_items():
    cache = Cache(maxsize=3)
    cache["a"] = 1
    assert cache.stats() == {{"items": 1, "maxsize": 3}}
"""
STATS = """

    def stats(self):
        return {"items": len(self._data), "maxsize": self.maxsize}
"""
GITIGNORE = ".venv/\n__pycache__/\n*.egg-info/\n.pytest_cache/\nbuild/\ndist/\ndocs/_build/\n"

FILES = {
    "pyproject.toml": PYPROJECT,
    "MANIFEST.in": MANIFEST,
    "tox.ini": TOX,
    "README.rst": f"{PACKAGE}\n{'=' * len(PACKAGE)}\n\nMemoizing collections.\n",
    "CHANGELOG.rst": "v1.0.0\n======\n\n- First release.\n",
    "LICENSE": "MIT License\n",
    ".gitignore": GITIGNORE,
    f"src/{PACKAGE}/__init__.py": INIT,
    f"src/{PACKAGE}/cache.py": CACHE,
    f"src/{PACKAGE}/keys.py": KEYS,
    "tests/__init__.py": "",
    "tests/test_keys.py": TEST_KEYS,
    "tests/test_cache.py": TEST_CACHE,
    "docs/conf.py": f'project = "{PACKAGE}"\nextensions = ["sphinx.ext.autodoc"]\n',
    "docs/index.rst": f"{PACKAGE}\n{'=' * len(PACKAGE)}\n\n.. automodule:: {PACKAGE}\n",
}


def write_project(root: Path, env: dict[str, str]) -> Path:
    """The project at ``root``: its files, committed on ``main`` by Ann Example."""
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.name", "Ann Example"],
        ["config", "user.email", "ann@example.com"],
        ["add", "-A"],
        ["commit", "-qm", f"{PACKAGE} 1.0.0"],
    ):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return root


def user_venv(root: Path) -> Path:
    """``root/.venv`` as its developer has it, git-ignored: the folder of its programs."""
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    borrowed = next(path for path in sys.path if path.endswith("site-packages"))
    (site / "borrowed.pth").write_text(f"{borrowed}\n", encoding="utf-8")
    (site / f"__editable__.{PACKAGE}.pth").write_text(f"{root / 'src'}\n", encoding="utf-8")
    return venv / "bin"


def shell_env(home: Path, *front: Path) -> dict[str, str]:
    """A user's shell: their own HOME, the folders ``front`` first on PATH (an activated
    virtual environment, the installed memento), no git, memento or test variables."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("GIT_", "MEMENTO_", "PYTEST_", "VIRTUAL_ENV"))
        and name not in ("FORCE_COLOR", "PYTHONPATH")
    }
    home.mkdir(parents=True, exist_ok=True)
    inherited = [
        entry
        for entry in env.get("PATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != Path(sys.prefix, "bin").resolve()
    ]
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
        PATH=os.pathsep.join([*map(str, front), *inherited]),
    )
    return env
