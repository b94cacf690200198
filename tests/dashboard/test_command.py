"""``memento dashboard`` as a person starts and stops it: real processes, real sockets."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testing.browser import start_dashboard
from testing.cli import run_memento
from tests.dashboard.conftest import sample_project


def test_without_a_plan_it_says_how_to_make_one(tmp_path: Path) -> None:
    done = run_memento("dashboard", "--port", "0", cwd=tmp_path)

    assert done.returncode == 1
    assert "no plan here; run `memento init`" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_port_in_use_is_a_sentence_not_a_traceback(tmp_path: Path) -> None:
    project = sample_project(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_memento("-C", project.root, "dashboard", "--port", str(port))

    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1 port {port}" in done.stderr
    assert "pick another with --port" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_host_is_a_sentence(tmp_path: Path) -> None:
    project = sample_project(tmp_path)
    done = run_memento("-C", project.root, "dashboard", "--host", "no-such-host.invalid")

    assert done.returncode == 1
    assert "cannot listen on 'no-such-host.invalid'" in done.stderr


def test_ctrl_c_stops_it_cleanly(tmp_path: Path) -> None:
    dashboard = start_dashboard(sample_project(tmp_path).root)
    assert dashboard.get("/api/version").status == 200

    errors = dashboard.stop()

    assert dashboard.process.returncode == 0
    assert errors == ""


def test_listening_beyond_this_machine_warns_and_still_refuses_names(tmp_path: Path) -> None:
    with start_dashboard(sample_project(tmp_path).root, "--host", "0.0.0.0") as dashboard:
        time.sleep(0.2)  # the warning is written before the URL; let the reader catch up
        assert dashboard.url.startswith("http://127.0.0.1:")
        port = dashboard.netloc.rsplit(":", 1)[1]
        by_address = dashboard.get("/", headers={"Host": f"10.1.2.3:{port}"})
        by_name = dashboard.get("/", headers={"Host": f"rebound.example:{port}"})
        errors = dashboard.stop()

    assert "warning: listening on 0.0.0.0, not only on this machine" in errors
    assert (by_address.status, by_name.status) == (200, 400)


def test_open_starts_the_browser_on_the_page(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n', encoding="utf-8")
    browser.chmod(0o755)
    project = sample_project(tmp_path)

    with start_dashboard(project.root, "--open", env={"BROWSER": str(browser)}) as dashboard:
        deadline = time.monotonic() + 10
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert opened.read_text(encoding="utf-8").strip() == dashboard.url


def test_without_starlette_it_says_what_to_install(tmp_path: Path) -> None:
    project = sample_project(tmp_path)
    # None in sys.modules makes `import starlette` fail as if it were not installed.
    code = (
        "import sys; sys.modules['starlette'] = None; from memento_gh.cli import main; "
        f"raise SystemExit(main(['-C', {str(project.root)!r}, 'dashboard']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )

    assert done.returncode == 1
    assert "pip install 'memento-gh[dashboard]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_other_commands_do_not_load_the_web_framework() -> None:
    code = (
        "import sys; from memento_gh.cli import build_parser, main; build_parser(); "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'anyio') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


def test_sigterm_stops_it_as_sigterm_stops_a_server(tmp_path: Path) -> None:
    dashboard = start_dashboard(sample_project(tmp_path).root)
    dashboard.process.send_signal(signal.SIGTERM)

    # uvicorn shuts down, then ends by the signal it got, so the parent sees why it ended
    assert dashboard.process.wait(timeout=15) == -signal.SIGTERM
    assert "Traceback" not in dashboard.stop()


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_out_of_range_is_a_command_line_mistake(tmp_path: Path, port: str) -> None:
    done = run_memento("dashboard", "--port", port, cwd=tmp_path)

    assert done.returncode == 2
    assert f"'{port}' is not a port number from 0 to 65535" in done.stderr
