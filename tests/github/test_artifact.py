"""The run's artifact: its name and link, and what of logs/ goes into it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memento_gh.github import artifact
from memento_gh.redact import Redactor

pytestmark = pytest.mark.timeout(30)

KEY = "ghp_" + "Pl4nt3dT0k3n" * 3


def test_the_artifact_is_named_by_run_attempt_and_worker_and_links_to_the_runs_page() -> None:
    env = {"RUNNER_TEMP": "/tmp/r", "GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "3"}
    place = artifact.place(env, "worker-2", "https://github.com/o/r/actions/runs/77")
    assert place is not None
    assert place[:3] == (
        Path("/tmp/r/memento-logs"),
        "memento-logs-77-3-worker-2",
        "https://github.com/o/r/actions/runs/77#artifacts",
    )
    assert artifact.place({"GITHUB_RUN_ID": "77"}, "w", None) is None  # not on a runner


def test_staging_copies_this_runs_files_redacted_and_nothing_else(tmp_path: Path) -> None:
    logs, target = tmp_path / "logs", tmp_path / "staged"
    logs.mkdir()
    old = logs / "tick_old.log"
    old.write_text("an earlier run\n", encoding="utf-8")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    started = time.time()
    (logs / "tick_new.log").write_text(f"verify printed {KEY}\n", encoding="utf-8")
    (logs / "sub").mkdir()
    (logs / "sub" / "tick_new.prompt-T-1.md").write_text("the prompt\n", encoding="utf-8")
    (logs / "link.log").symlink_to(tmp_path / "elsewhere.txt")
    (tmp_path / "elsewhere.txt").write_text("outside\n", encoding="utf-8")

    copied = artifact.stage(logs, target, Redactor().redact, started)

    assert copied == ["sub/tick_new.prompt-T-1.md", "tick_new.log"]
    assert (target / "tick_new.log").read_text(encoding="utf-8") == "verify printed ***\n"


def test_a_huge_file_goes_in_by_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifact, "MAX_FILE_BYTES", 10)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "tick.log").write_bytes(b"0123456789" * 3 + b"the end\n")
    artifact.stage(logs, tmp_path / "staged", Redactor().redact, 0)
    assert (tmp_path / "staged" / "tick.log").read_bytes() == b"89the end\n"


def test_the_verify_tail_is_its_last_lines_without_blank_ones_at_the_end() -> None:
    output = "".join(f"line {n}\n" for n in range(100)) + "\n\n"
    assert artifact.tail(output, 3) == "line 97\nline 98\nline 99"


def test_links_to_folders_and_fifos_in_logs_are_not_staged(tmp_path: Path) -> None:
    logs, secrets = tmp_path / "logs", tmp_path / "secrets"
    logs.mkdir()
    secrets.mkdir()
    (secrets / "id_rsa").write_text("SECRET\n", encoding="utf-8")
    (logs / "keys").symlink_to(secrets, target_is_directory=True)
    os.mkfifo(logs / "tick.fifo")  # opening it to read would wait for a writer forever
    (logs / "tick.log").write_text("the run\n", encoding="utf-8")

    assert artifact.stage(logs, tmp_path / "staged", Redactor().redact, 0) == ["tick.log"]


SWAPPER = """
import os, sys, time
logs, secret = sys.argv[1], sys.argv[2]
end = time.time() + float(sys.argv[3])
while time.time() < end:
    os.symlink(secret, os.path.join(logs, "swap.link"))
    os.replace(os.path.join(logs, "swap.link"), os.path.join(logs, "tick.log"))
    with open(os.path.join(logs, "swap.file"), "w") as out:
        out.write("the run\\n")
    os.replace(os.path.join(logs, "swap.file"), os.path.join(logs, "tick.log"))
"""


@pytest.mark.slow
def test_a_log_swapped_for_a_link_while_it_is_staged_is_never_followed(tmp_path: Path) -> None:
    """The agent's leftover process swaps logs/tick.log between a file and a link to a
    secret as fast as it can: a check of the path and then an open of it would follow the
    link now and then; an open that refuses links never does."""
    logs, secret = tmp_path / "logs", tmp_path / "secret.txt"
    logs.mkdir()
    secret.write_text("SECRET\n", encoding="utf-8")
    (logs / "tick.log").write_text("the run\n", encoding="utf-8")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(logs), str(secret), "8"])
    try:
        staged = tmp_path / "staged"
        for _ in range(400):
            artifact.stage(logs, staged, Redactor().redact, 0)
            for path in staged.rglob("*"):
                assert path.is_dir() or b"SECRET" not in path.read_bytes()
    finally:
        swapper.kill()
        swapper.wait()
