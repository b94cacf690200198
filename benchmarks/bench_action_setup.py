"""The action's own set-up under act, cold and warm, beside the tick's own time.

    .venv/bin/python benchmarks/bench_action_setup.py [--rounds N]

Runs the workflow `memento init` writes with the real `act`, offline (testing/act.py): a
scheduled run whose agent (a fake `claude` on PATH, the scripted agent) does T-101 right.
Each round makes two runs of one runner (one act folder):

- ``cold``: nothing cached: uv is installed from the wheelhouse, then makes the virtualenv
  and installs memento;
- ``warm``: the runner's tool cache emptied, as on a new hosted runner, and the virtualenv
  restored by actions/cache (its act stand-in, a tar file) from the cold run's save.

It prints each step's time as act reports it, medians over the rounds: the action's
set-up (finding the virtualenv's key, the cache's restore, the install), the tick (`memento
github`, with GitHub's fake over HTTP) and the artifact's upload.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from memento_gh.scaffold import WORKFLOW, support_scaffold  # noqa: E402
from testing.act import (  # noqa: E402
    DEFAULT_REPOSITORY,
    DEFAULT_TOKEN,
    repository_with_origin,
    run_workflow,
)
from testing.agents import SCRIPTED  # noqa: E402
from testing.fake_github import FakeGitHub  # noqa: E402
from testing.ticks import GITIGNORE, GUARD, NOTES, STATUS, good, one_phase, plan_of  # noqa: E402

SET_UP = ("Find memento's virtualenv", "Restore memento's virtualenv", "Install memento-gh")
TICK = "Run memento github"
UPLOAD = "Upload the run's logs"
#: The workflow's own steps before the action's (act copies the checkout).
JOB = ("Check out the repository", "Restore Claude Code", "Install Claude Code")
STEPS = (*JOB, *SET_UP, TICK, UPLOAD)
FAKE_CLAUDE = """#!{python}
import json, subprocess, sys, tempfile
with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as saved:
    saved.write(sys.stdin.read())
done = subprocess.run([{scripted!r}, saved.name, "T-101"])
print(json.dumps({{"type": "result", "is_error": done.returncode != 0, "total_cost_usd": 0}}))
sys.exit(done.returncode)
"""
_DONE = re.compile(r"(?:Success|Failure) - Main (.+?) \[(.+)\]\s*$")
_PART = re.compile(r"([\d.]+)(ms|µs|us|s|m|h)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6}


def go_duration(text: str) -> float:
    """``1m2.5s``, ``256.59ms`` → seconds."""
    return sum(float(number) * _SECONDS[unit] for number, unit in _PART.findall(text))


def step_times(records: tuple[dict[str, object], ...]) -> dict[str, float]:
    times: dict[str, float] = {}
    for record in records:
        found = _DONE.search(str(record.get("msg", "")))
        if found and found.group(1) in STEPS:
            times[found.group(1)] = go_duration(found.group(2))
    return times


def one_run(folder: Path, github: FakeGitHub, runner: Path, caches: Path) -> dict[str, float]:
    work = repository_with_origin(
        folder,
        {
            **support_scaffold("docs"),
            "docs/MASTER_PLAN.md": plan_of([one_phase()]),
            "docs/HUMAN_NOTES.md": NOTES,
            "docs/TICK_STATUS.md": STATUS,
            GUARD: "G = 1\n",
            ".gitignore": GITIGNORE,
        },
    )
    bin_folder = folder / "bin"
    bin_folder.mkdir()
    claude = bin_folder / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable, scripted=str(SCRIPTED)), "utf-8")
    claude.chmod(0o755)
    run = run_workflow(
        work,
        WORKFLOW,
        "schedule",
        {"schedule": "*/30 * * * *"},
        env={
            "GITHUB_API_URL": github.url,
            "GITHUB_SERVER_URL": github.web_url,
            "MEMENTO_FAKE_ACTIONS": json.dumps(good("T-101")),
        },
        extra_path=[bin_folder],
        keep=runner,
        artifacts=folder / "artifacts",
        caches=caches,
    )
    if not run.succeeded:
        raise SystemExit(f"the run failed:\n{run.log}")
    return step_times(run.records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    samples: dict[str, dict[str, list[float]]] = {"cold": {}, "warm": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.rounds):
            base = Path(scratch) / f"round-{round_number}"
            runner, caches = base / "runner", base / "caches"
            for kind in ("cold", "warm"):
                shutil.rmtree(runner / "cache" / "tool_cache", ignore_errors=True)
                with FakeGitHub(DEFAULT_REPOSITORY, DEFAULT_TOKEN) as github:
                    times = one_run(base / kind, github, runner, caches)
                for step, seconds in times.items():
                    samples[kind].setdefault(step, []).append(seconds)
    report(samples, args.rounds)
    return 0


def report(samples: dict[str, dict[str, list[float]]], rounds: int) -> None:
    print(f"act {rounds} round(s), medians in seconds (act's own step times)")
    print(f"{'step':<32}{'cold':>8}{'warm':>8}")
    for step in STEPS:
        cold = statistics.median(samples["cold"].get(step, [0.0]))
        warm = statistics.median(samples["warm"].get(step, [0.0]))
        print(f"{step:<32}{cold:>8.2f}{warm:>8.2f}")
    for kind_label, steps in (
        ("set-up (the action's)", SET_UP),
        ("tick (memento github)", (TICK,)),
    ):
        cold = sum(statistics.median(samples["cold"].get(step, [0.0])) for step in steps)
        warm = sum(statistics.median(samples["warm"].get(step, [0.0])) for step in steps)
        print(f"{kind_label:<32}{cold:>8.2f}{warm:>8.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
