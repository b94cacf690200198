"""The run's artifact: its name and link, and what of logs/ goes into it."""

from __future__ import annotations

import os
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
