"""``memento init``: write the plan files, worker prompt, workflow and hook config
(``scaffold`` makes their text) into a repository, keeping what is there unless --force."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from pathlib import Path, PurePosixPath

from memento_gh import files, workflow_steps
from memento_gh.errors import UserError
from memento_gh.layout import (
    PLAN_NAME,
    Layout,
    display,
    repository_top,
)
from memento_gh.output import commented
from memento_gh.scaffold import (
    GITIGNORE,
    JEKYLL_CONFIG,
    LOGS,
    MAX_WORKERS,
    PRE_COMMIT_CONFIG,
    SHIPPING_FILES,
    WORKFLOW,
    gitignore_with_ours,
    has_memento_hooks,
    memory_scaffold,
    plan_paths,
    plan_scaffold,
    pre_commit_config,
    pre_commit_snippet,
    shipped_by,
    support_scaffold,
)


def check_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned or not cleaned.isprintable():
        raise UserError(f"--name {name!r}: give the project a name of one line of printable text")
    return cleaned


def check_workers(text: str) -> int:
    try:
        workers = int(text)
    except ValueError:
        workers = 0
    if not 1 <= workers <= MAX_WORKERS:
        raise UserError(
            f"--workers {text!r}: give a whole number from 1 to {MAX_WORKERS} (more workers "
            "than that spend their time racing each other for claims on the one branch)"
        )
    return workers


def check_plan_dir(plan_dir: str) -> str:
    relative = PurePosixPath(plan_dir.replace("\\", "/"))
    if relative.is_absolute() or ".." in relative.parts:
        raise UserError(f"--plan-dir {plan_dir!r}: give a folder inside the repository, like docs")
    return relative.as_posix()


def next_steps(command: str, plan_dir: str, in_git: bool) -> list[str]:
    """The numbered steps, their comments in one column (``commented``)."""
    docs = plan_paths(plan_dir)
    steps = [] if in_git else [("git init", "")]
    steps += [
        (
            f"replace the example phase in {docs['PLAN']} with your tasks, "
            f"and describe your modules in {docs['MAP']}",
            "",
        ),
        (f"{command} validate", "prints nothing when the plan is fine"),
        (f"{command} status", "progress, and what the next tick would do"),
        (
            "pre-commit install",
            f"check the plan files before every commit (no pre-commit? `{command} hook install`)",
        ),
        (
            f"read the set-up steps of {WORKFLOW}: on GitHub, verify runs with what they install",
            "",
        ),
        ('git add -A && git commit -m "Add memento"', ""),
        (
            "add the secret ANTHROPIC_API_KEY to the repository (Settings → Secrets and "
            "variables → Actions) and push: the workflow ticks every 30 minutes; "
            f"or run `{command} tick` here to do one tick now",
            "",
        ),
    ]
    return commented([(f"{number}. {step}", why) for number, (step, why) in enumerate(steps, 1)])


# -- the writer -----------------------------------------------------------------------------


def run(args: argparse.Namespace, layout: Layout) -> int:
    target = layout.root / (args.path or ".")
    plan_dir = check_plan_dir(layout.plan_dir)
    if args.path is None and not args.force:
        refuse_subfolder(target, plan_dir)
    workers = check_workers(args.workers)
    _make_folder(target)
    if not args.force:
        refuse_shipped_folder(target, plan_dir)
    name = check_name(args.name if args.name is not None else _default_name(target))
    project = read_project_files(target, workflow_steps.PROJECT_FILES)
    support = support_scaffold(plan_dir, workers, project=project, direct_url=installed_from())
    scaffold = {**plan_scaffold(name, date.today(), plan_dir, workers), **support}
    plan = _plan_kept(target, plan_dir, scaffold, args.force)
    scaffold.update(memory_scaffold(plan_dir, plan, datetime.now(timezone.utc)))
    kept = 0
    for relative, text in scaffold.items():
        outcome = write_file(target, relative, text, args.force)
        kept += outcome == "kept"
        print(f"{outcome} {relative}")
    print(f"{_make_logs(target)} {LOGS}/")
    print(_write_pre_commit(target))
    print(_write_gitignore(target))
    if kept:
        print(f"({kept} existing file{'s' if kept > 1 else ''} kept; --force replaces them)")
    print("\nNext steps:")
    print("\n".join(next_steps(_command(target, plan_dir), plan_dir, _in_git(target))))
    return 0


def refuse_subfolder(target: Path, plan_dir: str) -> None:
    """``init`` with no folder named, in a subfolder of a git repository: every other command
    would look for the plan at the repository's top, and GitHub reads workflows only there."""
    top = repository_top(target)
    if top is None or top == target.resolve():
        return
    inside = target.resolve().relative_to(top).as_posix()
    up = shlex.quote(os.path.relpath(top))
    raise UserError(
        f"{inside}/ is a subfolder of the git repository {top}: init would "
        f"write {plan_paths(plan_dir)['PLAN']} and {WORKFLOW} into {inside}/, where the other "
        "commands do not look for them and GitHub runs no workflow; run `memento -C "
        f"{up} init` to set up the repository's top, or name the folder (`memento init .`) "
        "or pass --force to write here"
    )


def refuse_shipped_folder(target: Path, plan_dir: str) -> None:
    """A plan folder the project ships or publishes (cachetools' ``recursive-include docs
    *``) would put the plan, the status log, the notes and the lessons in its package or on
    its site: init proposes a folder of their own."""
    names = (*SHIPPING_FILES, f"{plan_dir}/{JEKYLL_CONFIG}")
    found = read_project_files(target, names)
    if f"{plan_dir}/{JEKYLL_CONFIG}" in found:
        found[JEKYLL_CONFIG] = found[f"{plan_dir}/{JEKYLL_CONFIG}"]
    where = shipped_by(found, plan_dir)
    if where is None:
        return
    raise UserError(
        f"{plan_dir}/ is where memento would keep the plan, the status log, the notes and the "
        f"lessons, and {where}: they would go out with the project; give them a folder of "
        "their own, one the project does not ship (`memento --plan-dir plan init`), or pass "
        f"--force to write them into {plan_dir}/ anyway"
    )


def read_project_files(target: Path, names: Sequence[str]) -> dict[str, str]:
    """The texts of the files of ``names`` that the project has ("" for a folder, or a file
    that does not read as text)."""
    found: dict[str, str] = {}
    for name in names:
        path = target / name
        if path.is_dir():
            found[name] = ""
        elif path.is_file():
            try:
                found[name] = files.read_optional(path) or ""
            except UserError:
                found[name] = ""
    return found


def installed_from() -> str | None:
    """pip's record of where this memento was installed from (``direct_url.json``, PEP
    610), if it kept one."""
    from importlib import metadata

    try:
        return metadata.distribution("memento-gh").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None


def write_file(root: Path, relative: str, text: str, force: bool) -> str:
    """Write one scaffold file unless it exists; what happened: created, kept or replaced."""
    path = root / relative
    if path.exists() or path.is_symlink():
        if not force or _same_text(path, text):
            return "kept"
        _write(path, relative, text)
        return "replaced"
    _write(path, relative, text)
    return "created"


def _write(path: Path, relative: str, text: str) -> None:
    try:
        files.write_atomic(path, text)
    except OSError as error:
        raise UserError(
            f"{relative}: cannot write it ({error.strerror or error}); "
            "move whatever is in the way, or fix the folder's permissions"
        ) from None


def _same_text(path: Path, text: str) -> bool:
    try:
        return files.read_bytes(path, follow_links=True) == text.encode("utf-8")
    except UserError:
        return False


def _plan_kept(target: Path, plan_dir: str, scaffold: Mapping[str, str], force: bool) -> str:
    """The plan that will be on disk after init: STATE.md must describe it, not the example."""
    relative = (PurePosixPath(plan_dir) / PLAN_NAME).as_posix()
    path = target / relative
    if path.is_file() and not force:
        try:
            return files.read_text(path)
        except UserError:
            pass  # the validator reports a plan it cannot read
    return scaffold[relative]


def _make_folder(target: Path) -> None:
    files.make_folder(
        target,
        "memento init",
        "the folder of your repository (or the name of a new folder to create)",
    )


def _make_logs(target: Path) -> str:
    logs = target / LOGS
    if logs.is_dir():
        return "kept"
    try:
        logs.mkdir()
    except OSError as error:
        raise UserError(
            f"{LOGS}: cannot create the folder ({error.strerror or error}); memento writes "
            "its tick logs there, so move whatever is in the way"
        ) from None
    return "created"


def _write_pre_commit(target: Path) -> str:
    path = target / PRE_COMMIT_CONFIG
    if not path.exists():
        _write(path, PRE_COMMIT_CONFIG, pre_commit_config())
        return f"created {PRE_COMMIT_CONFIG}"
    if has_memento_hooks(files.read_text(path, follow_links=True)):
        return f"kept {PRE_COMMIT_CONFIG}"
    return (
        f"kept {PRE_COMMIT_CONFIG}; to check the plan on each commit, add this under "
        f"its 'repos:' key:\n\n{pre_commit_snippet()}"
    )


def _write_gitignore(target: Path) -> str:
    path = target / GITIGNORE
    existed = path.exists()
    old = files.read_text(path, follow_links=True) if existed else None
    new, added = gitignore_with_ours(old)
    if not added:
        return f"kept {GITIGNORE}"
    _write(path, GITIGNORE, new)
    if not existed:
        return f"created {GITIGNORE}"
    return f"updated {GITIGNORE} (added {', '.join(added)})"


def _default_name(target: Path) -> str:
    return target.resolve().name or "project"


def _in_git(target: Path) -> bool:
    folder = target.resolve()
    return any((candidate / ".git").exists() for candidate in (folder, *folder.parents))


def _command(target: Path, plan_dir: str) -> str:
    """``memento`` as the user has to type it to reach the new plan from here."""
    words = ["memento"]
    if target.resolve() != Path.cwd().resolve():
        words += ["-C", display(target)]
    if plan_dir != "docs":
        words += ["--plan-dir", plan_dir]
    return shlex.join(words)
