"""What ``memento init`` (and the demo) write: the templates of ``memento_gh/templates``
filled for one repository. Pure text in, text out.

The templates are named without leading dots (package globbing would skip them) and hold
``@NAME@``-style placeholders: a marker that cannot clash with the ``{}`` and ``${{ }}`` the
templates themselves contain. The workflow's lines that hold for one worker only start with
``@ONE@``, those for several workers with ``@MANY@``: both versions read side by side in one
file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date, datetime
from importlib import resources
from pathlib import PurePosixPath

from memento_gh import __version__, workflow_steps
from memento_gh.layout import (
    MAP_NAME,
    NOTES_NAME,
    PLAN_NAME,
    STATE_NAME,
    STATUS_NAME,
)
from memento_gh.plan.meta import META_KEYS
from memento_gh.plan.scanner import parse
from memento_gh.plan.validate import counted

ACTION_REF = f"{workflow_steps.ACTION_REPOSITORY}@{workflow_steps.RELEASE_TAG}"
HOOKS_REPO = "https://github.com/memento-gh/memento-gh"
HOOKS_REV = f"v{__version__}"

HELLO = "docs/HELLO.md"  # what the example tasks write
WORKFLOW = ".github/workflows/memento.yml"
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
GITIGNORE = ".gitignore"
# .aider* : aider's caches, which would otherwise count as the agent's change.
GITIGNORE_LINES = ("logs/", ".memento.lock", ".memento_alert", ".aider*")
LOGS = "logs"
#: The most workers `--workers` sets up. GitHub would run a matrix of 256 jobs, but each
#: worker is a runner paid for while its agent works, and all of them push to one branch:
#: past a score, workers spend their time losing races for claims, and few plans have that
#: many tasks ready side by side.
MAX_WORKERS = 20

#: Every Meta key with the value a new plan starts with, in the order the plan lists them.
#: ``created``/``last_architect_edit`` get the day of ``init``, the counters the template's.
META_DEFAULTS: Mapping[str, str] = {
    "created": "",
    "last_architect_edit": "",
    "tick_mode": "auto",
    "max_retries": "3",
    "max_tasks_per_tick": "1",
    "max_diff_lines": "200",
    "max_file_size": "5MB",
    "max_diff_bytes": "10MB",
    "stale_lock_timeout": "15min",
    "circuit_breaker_threshold": "5",
    "clean_strategy": "git-clean",
    "clean_ignore": ".memento_cleanignore",
    "status_max_entries": "50",
    "status_archive_dir": "logs/status_archive/",
    "total_ticks": "0",
    "total_tasks": "0",
    "completed_tasks": "0",
    "consecutive_failed_ticks": "0",
    "max_deferrals": "5",
    "consecutive_deferrals": "0",
    "agent_timeout": "30min",
    "verify_timeout": "10min",
    "blocked_ratio_limit": "0.3",
    "min_free_disk": "500MB",
    "memory_stale_after": "30d",
    "budget_per_day": "none",
    "tokens_per_day": "none",
    "budget_per_task": "none",
    "max_ticks_per_day": "none",
    "spend_total": "0 in, 0 out",
    "spend_day": "none",
    "retry_model": "none",
    "redact_logs": "true",
    "architect": "off",
    "verify_first": "false",
}

_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")
ONE_MARK = "@ONE@"
MANY_MARK = "@MANY@"


# -- pure: the texts ------------------------------------------------------------------------


def template(name: str) -> str:
    return (resources.files("memento_gh") / "templates" / name).read_text(encoding="utf-8")


def fill(text: str, words: Mapping[str, str]) -> str:
    """Replace every ``@KEY@`` in one pass, so a value is never read as a placeholder."""

    def word(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in words:
            raise KeyError(f"template placeholder @{key}@ has no value")
        return words[key]

    return _PLACEHOLDER.sub(word, text)


def choose_lines(text: str, workers: int) -> str:
    """The lines for this many workers: those marked for it lose their mark, those marked
    for the other case go, the rest stay as they are."""
    keep, drop = (MANY_MARK, ONE_MARK) if workers > 1 else (ONE_MARK, MANY_MARK)
    lines = text.splitlines(keepends=True)
    return "".join(line.removeprefix(keep) for line in lines if not line.startswith(drop))


def worker_words(workers: int) -> dict[str, str]:
    """``@WORKERS@`` and ``@WORKER_LIST@`` (the matrix of a tick: ``[1, 2, 3]``)."""
    return {"WORKERS": str(workers), "WORKER_LIST": json.dumps(list(range(1, workers + 1)))}


def plan_paths(plan_dir: str) -> dict[str, str]:
    """The plan files' paths (POSIX, relative to the repository) as template words."""
    docs = PurePosixPath(plan_dir)
    return {
        "PLAN_DIR_SLASH": f"{docs.as_posix()}/",
        "PLAN": (docs / PLAN_NAME).as_posix(),
        "MAP": (docs / MAP_NAME).as_posix(),
        "STATUS": (docs / STATUS_NAME).as_posix(),
        "NOTES": (docs / NOTES_NAME).as_posix(),
        "STATE": (docs / STATE_NAME).as_posix(),
        "MEMORY": f"{(docs / 'memory').as_posix()}/",
        "HELLO": HELLO,
    }


def meta_section(values: Mapping[str, str]) -> str:
    """``- key: value  <!-- what it means -->`` lines, the comments in one column."""
    entries = [f"- {key}: {value}" for key, value in values.items()]
    width = max(map(len, entries)) + 2
    return "\n".join(
        f"{entry:<{width}}<!-- {META_KEYS[key].help} -->"
        for entry, key in zip(entries, values, strict=True)
    )


#: With several workers, a claim must outlive the longest run it covers (agent_timeout +
#: verify_timeout, 40min by default): a shorter stale_lock_timeout lets another worker reset
#: the claim of a task that still runs, and run it a second time.
SHARED_STALE_LOCK_TIMEOUT = "45min"


def plan_text(name: str, today: date, plan_dir: str, workers: int = 1) -> str:
    words = {**plan_paths(plan_dir), "NAME": name, "META": ""}
    raw = template(PLAN_NAME)
    values = {
        **META_DEFAULTS,
        "created": today.isoformat(),
        "last_architect_edit": today.isoformat(),
    }
    if workers > 1:
        values["stale_lock_timeout"] = SHARED_STALE_LOCK_TIMEOUT
    # The counters must agree with the example tasks, or the plan starts with warnings.
    values.update({key: str(count) for key, count in counted(parse(fill(raw, words))).items()})
    return fill(raw, {**words, "META": meta_section(values)})


def plan_scaffold(name: str, today: date, plan_dir: str, workers: int = 1) -> dict[str, str]:
    """The four plan files, by path relative to the repository."""
    words = {**plan_paths(plan_dir), "NAME": name}
    texts = {PLAN_NAME: plan_text(name, today, plan_dir, workers)}
    for file_name in (MAP_NAME, STATUS_NAME, NOTES_NAME):
        texts[file_name] = fill(template(file_name), words)
    return {(PurePosixPath(plan_dir) / key).as_posix(): text for key, text in texts.items()}


def memory_scaffold(plan_dir: str, plan: str, now: datetime) -> dict[str, str]:
    """``STATE.md`` for the new plan, and the lesson files (empty but for what goes in them)."""
    from memento_gh.formats import memory
    from memento_gh.formats.state import render_state

    docs = PurePosixPath(plan_dir)
    state = render_state(
        parse(plan), now=now, last_action="memento init created the plan", plan_dir=plan_dir
    )
    lessons = {
        (docs / memory.FOLDER / name).as_posix(): memory.empty_file(kind)
        for kind, name in memory.FILE_NAMES.items()
    }
    return {(docs / STATE_NAME).as_posix(): state, **lessons}


def support_scaffold(
    plan_dir: str,
    workers: int = 1,
    *,
    project: workflow_steps.Files | None = None,
    direct_url: str | None = None,
) -> dict[str, str]:
    """The files outside the plan folder: worker prompt, ignore lists, workflow (a matrix of
    ``workers`` jobs sharing the branch when ``workers`` > 1). The workflow's set-up steps
    come from the ``project``'s files (``workflow_steps.PROJECT_FILES``; None: a placeholder),
    its action from where this memento was installed from (``direct_url``)."""
    words = {
        **plan_paths(plan_dir),
        **worker_words(workers),
        "SETUP": workflow_steps.setup_steps(project or {}),
        "ACTION_USES": workflow_steps.action_uses(direct_url),
        "PLAN_DIR_YAML": json.dumps(PurePosixPath(plan_dir).as_posix()),
    }
    targets = {
        ".memento/worker_prompt.md": "worker_prompt.md",
        ".memento_ignore": "memento_ignore",
        ".memento_cleanignore": "memento_cleanignore",
        WORKFLOW: "memento.yml",
    }
    return {
        target: fill(choose_lines(template(source), workers), words)
        for target, source in targets.items()
    }


#: The files that say what a project ships or publishes (``shipped_by`` reads them).
SHIPPING_FILES = ("MANIFEST.in", "package.json", "mkdocs.yml")
JEKYLL_CONFIG = "_config.yml"  # a GitHub Pages site in the folder itself


def shipped_by(found: Mapping[str, str], plan_dir: str) -> str | None:
    """Where the project ships or publishes the plan folder, so that the plan, the status
    log, the notes and the lessons would go out with it: ``file:line (what it says)``, or
    None. ``found``: the texts of ``SHIPPING_FILES`` and of ``<plan_dir>/_config.yml``."""
    folder = PurePosixPath(plan_dir).as_posix()
    for reader in (_manifest_ships, _npm_ships, _site_publishes):
        said = reader(found, folder)
        if said:
            return said
    return None


def _within(folder: str, outer: str) -> bool:
    outer = outer.strip("/") or "."
    return outer in (".", folder) or folder.startswith(outer + "/")


def _manifest_ships(found: Mapping[str, str], folder: str) -> str | None:
    """MANIFEST.in's last command about the folder's Markdown files: it ships them (graft,
    recursive-include, global-include) or leaves them out (prune)."""
    import fnmatch

    shipping: str | None = None
    for number, line in enumerate(found.get("MANIFEST.in", "").splitlines(), 1):
        command, *words = line.split("#", 1)[0].split() or [""]
        if not words:
            continue
        markdown = any(fnmatch.fnmatch("NOTES.md", pattern) for pattern in words)
        ships = (
            (command == "graft" and _within(folder, words[0]))
            or (command == "recursive-include" and _within(folder, words[0]) and markdown)
            or (command == "global-include" and markdown)
        )
        if ships:
            shipping = f"MANIFEST.in:{number} ships it in the sdist ({line.strip()})"
        elif command == "prune" and _within(folder, words[0]):
            shipping = None
    return shipping


def _npm_ships(found: Mapping[str, str], folder: str) -> str | None:
    try:
        package = json.loads(found.get("package.json", "") or "{}")
    except ValueError:
        return None
    listed = package.get("files") if isinstance(package, dict) else None
    for entry in listed if isinstance(listed, list) else ():
        if isinstance(entry, str) and _within(folder, entry.rstrip("*").rstrip("/")):
            return f"package.json's files ships it in the npm package ({entry!r})"
    return None


def _site_publishes(found: Mapping[str, str], folder: str) -> str | None:
    if "mkdocs.yml" in found:
        docs_dir = re.search(r"^docs_dir:\s*['\"]?([^'\"\s#]+)", found["mkdocs.yml"], re.MULTILINE)
        if _within(folder, docs_dir.group(1) if docs_dir else "docs"):
            return "mkdocs.yml publishes every Markdown file of it on the project's site"
    if JEKYLL_CONFIG in found:
        return f"{folder}/{JEKYLL_CONFIG} makes it a GitHub Pages site that publishes it"
    return None


def pre_commit_config() -> str:
    return fill(
        template("pre-commit-config.yaml"), {"HOOKS_REPO": HOOKS_REPO, "HOOKS_REV": HOOKS_REV}
    )


def pre_commit_snippet() -> str:
    """The ``- repo:`` entry to paste under ``repos:`` of an existing config."""
    return pre_commit_config().split("repos:\n", 1)[1]


def has_memento_hooks(config: str) -> bool:
    return HOOKS_REPO in config or "id: memento-plan" in config


def gitignore_with_ours(text: str | None) -> tuple[str, list[str]]:
    """``.gitignore`` with our lines appended where missing, and the lines added.

    The user's bytes are kept as they are; the new lines use the file's line ending.
    """
    old = text or ""
    present = {_ignore_key(line) for line in old.splitlines()}
    missing = [line for line in GITIGNORE_LINES if _ignore_key(line) not in present]
    if not missing:
        return old, []
    eol = "\r\n" if "\r\n" in old else "\n"
    lead = eol if old and not old.endswith(("\n", "\r")) else ""
    block = eol.join(["# memento's working files", *missing]) + eol
    return old + lead + block, missing


def _ignore_key(line: str) -> str:
    """``/logs/``, ``logs/`` and ``logs`` all keep ``logs/`` out of git."""
    return line.strip().strip("/")
