"""`memento github` runs in-process against real parts: a bare ``origin`` holding a memento
project on ``main``, a fresh clone per run (as actions/checkout makes, without credentials),
the fake GitHub server over real HTTP through the real PyGithub client, and the scripted
fake agent as a real subprocess. With several workers on the branch, ``OtherWorker`` is a
second clone that pushes, and ``BusyGitHub`` has it push while a run reads the comments."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from memento_gh.controls.apply import apply_control
from memento_gh.controls.model import Control
from memento_gh.github import action, branch_run
from memento_gh.github.sync import GitHub
from memento_gh.layout import Layout
from memento_gh.plan.model import Plan
from memento_gh.plan.scanner import parse
from testing import fake_origin
from testing.agents import Script, scripted_command, scripted_env, write_script
from testing.fake_github import FakeGitHub, Response
from testing.repos import GitHttpServer, bare_repo, clone, commit_all, git, init_repo, write
from testing.ticks import CLEANIGNORE, GITIGNORE, GUARD, NOTES, STATUS, UNSET, one_phase, plan_of

REPOSITORY = "octo/project"
TOKEN = "ghs_test_token_0123456789"


class RunResult(NamedTuple):
    code: int
    said: list[str]
    outputs: dict[str, str]
    summary: str


class ActionProject:
    """A repository on a bare origin, the fake GitHub, and a way to run the action."""

    def __init__(self, tmp_path: Path, github: FakeGitHub, plan: str | None = None) -> None:
        self.tmp = tmp_path
        self.github = github
        self.origin = bare_repo(tmp_path / "origin.git")
        fake_origin.install(self.origin)  # GitHub's push policies (the workflow token's)
        seed = init_repo(tmp_path / "seed")
        contents = {
            "docs/MASTER_PLAN.md": plan if plan is not None else plan_of([one_phase()]),
            "docs/HUMAN_NOTES.md": NOTES,
            "docs/TICK_STATUS.md": STATUS,
            GUARD: "G = 1\n",
            ".memento_cleanignore": CLEANIGNORE,
            ".gitignore": GITIGNORE,
        }
        for name, text in contents.items():
            write(seed, name, text)
        commit_all(seed, "project")
        git(seed, "branch", "-M", "main")
        git(seed, "remote", "add", "origin", str(self.origin))
        git(seed, "push", "-q", "origin", "main")
        git(self.origin, "symbolic-ref", "HEAD", "refs/heads/main")
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        self.script_path = self.outside / "script.json"
        self.runs = 0

    def script(self, script: Script) -> None:
        write_script(self.script_path, script)

    # -- running ----------------------------------------------------------------------------

    def run(
        self,
        event: str,
        payload: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        share: branch_run.ShareBranch = branch_run.share_branch,
        origin_url: str | None = None,
    ) -> RunResult:
        """One workflow run in a fresh checkout of ``main`` (the runner is new each time).
        ``origin_url`` is where the checkout's ``origin`` points (default: the bare
        repository's path), e.g. the origin served over HTTP (``repos.GitHttpServer``)."""
        self.runs += 1
        work = self.tmp / f"run-{self.runs}"
        work.mkdir()
        checkout = clone(self.origin, work / "checkout", "--depth", "1", "-b", "main")
        if origin_url is not None:
            git(checkout, "remote", "set-url", "origin", origin_url)
        git(checkout, "config", "--unset", "user.name")
        git(checkout, "config", "--unset", "user.email")
        event_path = work / "event.json"
        event_path.write_text(json.dumps(payload or {}), encoding="utf-8")
        outputs, summary = work / "outputs", work / "summary.md"
        said: list[str] = []
        code = action.run(
            self.env(event, event_path, outputs, summary, env),
            checkout,
            say=said.append,
            connect=lambda settings: GitHub(
                settings.api_url, settings.token, settings.repository, backoff=0.01, pace=False
            ),
            share=share,
        )
        return RunResult(code, said, _outputs(outputs), _read(summary))

    def env(
        self,
        event: str,
        event_path: Path,
        outputs: Path,
        summary: Path,
        extra: Mapping[str, str] | None,
    ) -> dict[str, str]:
        script = self.script_path if self.script_path.exists() else None
        env = scripted_env(script=script, state=self.outside / "runs.json")
        env = {name: value for name, value in env.items() if not name.startswith("GIT_")}
        env.update(dict.fromkeys(UNSET, ""))
        env.update(dict.fromkeys(("MEMENTO_WORKERS", "MEMENTO_WORKER_ID"), ""))
        env.update(
            {
                "GITHUB_EVENT_NAME": event,
                "GITHUB_EVENT_PATH": str(event_path),
                "GITHUB_REPOSITORY": REPOSITORY,
                "GITHUB_API_URL": self.github.url,
                "GITHUB_SERVER_URL": self.github.web_url,
                "GITHUB_RUN_ID": str(1000 + self.runs),
                "GITHUB_OUTPUT": str(outputs),
                "GITHUB_STEP_SUMMARY": str(summary),
                "MEMENTO_GITHUB_TOKEN": TOKEN,
                "MEMENTO_AGENT_CMD": scripted_command(),
            }
        )
        env.update(extra or {})
        return env

    @contextlib.contextmanager
    def served(self, also: Sequence[str] = (), *, workflows: Sequence[str] = ()) -> Iterator[str]:
        """The origin over HTTP, as GitHub serves it to the workflow's token (and ``also``
        to push tokens; ``workflows``: those with the ``workflows`` permission): yields the
        URL for ``run(origin_url=…)``. Its pre-receive hook refuses what GitHub refuses."""
        with GitHttpServer(self.origin.parent, TOKEN, also, workflows=workflows) as server:
            yield server.url(self.origin.name)

    def create_branch(self, branch: str = "memento") -> None:
        """The branch on the origin, as the first run leaves it (at ``main``)."""
        git(self.origin, "branch", branch, "main")

    # -- reading the remote -------------------------------------------------------------------

    def show(self, path: str, branch: str = "memento") -> str:
        return git(self.origin, "show", f"{branch}:{path}")

    def plan(self) -> Plan:
        return parse(self.show("docs/MASTER_PLAN.md"))

    def marker(self, task_id: str) -> str:
        task = self.plan().task(task_id)
        assert task is not None, f"{task_id} is not in the plan on the memento branch"
        return task.marker

    def subjects(self, branch: str = "memento") -> list[str]:
        return git(self.origin, "log", "--format=%s", branch).splitlines()

    def memento_issues(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Issues labelled memento (and ``memento:<kind>`` when given)."""
        wanted = "memento" if kind is None else f"memento:{kind}"
        return [
            issue
            for issue in self.github.issues(pulls=False)
            if wanted in {label["name"] for label in issue["labels"]}
        ]


class OtherWorker:
    """Another worker on the memento branch, in a clone of its own: each ``note`` starts from
    the origin's tip, adds a global note as a control from that worker's run would, and
    pushes it."""

    def __init__(self, project: ActionProject, name: str = "other-worker") -> None:
        self.root = clone(project.origin, project.tmp / name, "-b", "memento")
        self.layout = Layout(self.root, "docs")
        self.pushed = 0

    def note(self, text: str) -> None:
        git(self.root, "fetch", "-q", "origin", "memento")
        git(self.root, "reset", "-q", "--hard", "origin/memento")
        apply_control(self.layout, Control("note", None, text))
        git(self.root, "push", "-q", "origin", "HEAD:memento")
        self.pushed += 1


class BusyGitHub(FakeGitHub):
    """The fake GitHub, where each listing of the recent comments first does the next thing
    queued in ``meanwhile``: a push by another worker lands between a run's fetch of the
    shared branch and its push, as it does when workers race."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meanwhile: list[Callable[[], None]] = []

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Response:
        listing = method == "GET" and urlsplit(target).path.endswith("/issues/comments")
        if listing and self.meanwhile:
            self.meanwhile.pop(0)()
        return super().handle(method, target, headers, raw)


def person(github: FakeGitHub, login: str = "alice") -> GitHub:
    """A client acting for ``login`` in the browser, with a token of their own: their
    edits are theirs in the issue's history."""
    token = f"ghu_{login}_token"
    if token not in github.state()["tokens"]:
        github.add_token(token, login)
    return GitHub(github.url, token, REPOSITORY, pace=False)


def comment_event(
    github: FakeGitHub,
    issue: Mapping[str, Any],
    body: str,
    *,
    author: str = "alice",
    association: str = "OWNER",
    author_type: str = "User",
) -> dict[str, Any]:
    """The ``issue_comment`` payload of a comment made on the fake server just now."""
    comment = github.add_comment(
        issue["number"], body, author=author, association=association, author_type=author_type
    )
    return {
        "action": "created",
        "issue": issue,
        "comment": comment,
        "sender": comment["user"],
        "repository": {"full_name": REPOSITORY},
    }


def edit_event(issue: Mapping[str, Any], body: str, *, editor: str = "alice") -> dict[str, Any]:
    """The ``issues: edited`` payload of ``issue`` whose body was changed to ``body``."""
    return {
        "action": "edited",
        "issue": {**issue, "body": body},
        "changes": {"body": {"from": issue["body"]}},
        "sender": {"login": editor, "type": "User"},
        "repository": {"full_name": REPOSITORY},
    }


def tick_box(body: str, control: str) -> str:
    """The dashboard ``body`` with the box of ``control`` (pause, resume, ...) ticked, as a
    person ticking it in the browser leaves it."""
    from memento_gh.github import render

    box = render.marker(render.CONTROL_KIND, control)
    ticked = body.replace(f"- [ ] {box}", f"- [x] {box}")
    assert ticked != body, f"the dashboard has no {control} box"
    return ticked


def tick_task_box(body: str, action: str, task_id: str) -> str:
    """The dashboard ``body`` with the ``retry`` or ``skip`` box of ``task_id`` ticked."""
    from memento_gh.github import render

    box = render.marker(action, task_id)
    ticked = body.replace(f"- [ ] {box}", f"- [x] {box}")
    assert ticked != body, f"the dashboard has no {action} box for {task_id}"
    return ticked


def _outputs(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in _read(path).splitlines():
        key, _, value = line.partition("=")
        found[key] = value
    return found


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def names(issues: Sequence[Mapping[str, Any]]) -> list[str]:
    return [issue["title"] for issue in issues]
