from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest


@pytest.fixture
def isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's git configuration and any GIT_* variables (a hook running pytest sets
    GIT_INDEX_FILE) stay out: the code under test runs git in this process's environment.
    The home folder it returns is empty; a test may write a global .gitconfig there.

    A module whose code runs git in this process uses it for every test:
    ``pytestmark = pytest.mark.usefixtures("isolated_git")``."""
    home = tmp_path_factory.mktemp("home")
    for key in list(os.environ):
        if key.startswith("GIT_") and not key.startswith("GIT_PYTHON_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


def pytest_configure(config: pytest.Config) -> None:
    """A run started in the background (``scripts/check &`` in a script, ``nohup``) ignores
    SIGINT, and every process it starts would inherit that: Python there installs no
    KeyboardInterrupt handler, and the tests' Ctrl-C to memento never arrives. Python's own
    handler here is reset to the default in each child, as a terminal starts it."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
