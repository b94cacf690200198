"""memento installed as a user installs it, for the benchmarks to run.

An editable install (what ``scripts/setup`` makes for development) adds an import hook that
every Python start pays, about 30 ms here, the bare ``python -c pass`` baseline included,
which hides memento's own cost behind the hook's. So the whole-process benchmarks run
memento from a fresh virtualenv made with ``pip install .`` (a built wheel), and measure
the baseline with that virtualenv's interpreter.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--python",
        type=Path,
        metavar="PATH",
        help="the interpreter of a virtualenv memento is installed in (default: a new "
        "virtualenv under the run's temporary folder, with `pip install .`)",
    )


def python_for(chosen: Path | None, scratch: Path) -> Path:
    """``chosen``, or the interpreter of a new virtualenv in ``scratch`` into which this
    checkout is installed, not editable. Checked: memento must import from site-packages."""
    python = chosen or install(scratch / "venv")
    where = subprocess.run(
        [str(python), "-c", "import memento_gh; print(memento_gh.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=scratch,
    ).stdout.strip()
    if "site-packages" not in where:
        raise SystemExit(f"{python} imports memento from {where}, not from an installed package")
    return python


def install(venv: Path, source: Path = PROJECT) -> Path:
    print(f"installing memento into {venv} (pip install {source}) ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(source)], check=True)
    return python


def install_commit(commit: str, scratch: Path) -> Path:
    """The interpreter of a new virtualenv in ``scratch`` holding memento as it was at
    ``commit`` of this checkout (``git archive``, then ``pip install``), so that a benchmark
    can time two versions side by side in the same rounds."""
    source = scratch / f"source-{commit}"
    source.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=PROJECT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    return python_for(install(scratch / f"venv-{commit}", source), scratch)
