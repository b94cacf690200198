"""scripts/setup installs each agent CLI at its pinned version; a missing one fails."""

from __future__ import annotations

import re
import subprocess

import pytest

from testing.real_agents import ROOT, VERSIONS, executable

pytestmark = pytest.mark.slow


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(VERSIONS))
def test_the_installed_cli_is_the_pinned_version(name: str) -> None:
    version = subprocess.run(
        [executable(name), "--version"], check=True, capture_output=True, text=True, timeout=100
    )
    assert VERSIONS[name] in version.stdout.split()


def test_scripts_setup_pins_the_versions_the_tests_expect() -> None:
    setup = (ROOT / "scripts" / "setup").read_text()
    pins = dict(re.findall(r"^(\w+)_version=(\S+)$", setup, re.MULTILINE))
    assert {name: pins.get(name) for name in VERSIONS} == VERSIONS
