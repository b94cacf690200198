"""memento as a user installs it: from a wheel, into a virtual environment of its own.

A test that runs the installed ``memento`` from here proves the package carries what the
command needs (its package data), not memento's checkout beside it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def install_from_wheel(tmp_path: Path) -> Path:
    """Build a wheel from a copy of the source (pip fetches the build backend), install it
    without dependencies into a fresh virtual environment that borrows only the dependencies
    from this one; the folder of that environment's executables (``memento`` among them)."""
    source = tmp_path / "source"
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "memento_gh", source / "memento_gh", ignore=shutil.ignore_patterns("__pycache__")
    )
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", wheels, source],
        check=True,
        capture_output=True,
        timeout=600,
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
    python = venv / "bin" / "python"
    [wheel] = wheels.glob("memento_gh-*.whl")
    subprocess.run(
        [*pip, "--python", python, "install", "--no-deps", "--no-index", wheel],
        check=True,
        capture_output=True,
        timeout=300,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    # A plain path line: this venv's .pth files (the editable install's finder) do not run.
    deps = Path(next(p for p in sys.path if p.endswith("site-packages")))
    (Path(site) / "borrowed_dependencies.pth").write_text(f"{deps}\n", encoding="utf-8")
    where = subprocess.run(
        [python, "-c", "import memento_gh; print(memento_gh.__file__)"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert where.startswith(site), where
    return venv / "bin"
