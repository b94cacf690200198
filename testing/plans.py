"""Build ``MASTER_PLAN.md`` text for tests and benchmarks.

Every builder returns plain text with ``\\n`` endings; ``plan_text`` assembles a whole plan
and can switch it to other line endings, add a BOM or drop the final newline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: Fields that make a task valid: a verify command and the files it may touch.
DEFAULT_FIELDS: Mapping[str, str] = {
    "verify": "`true`",
    "context_files": "[src/*]",
    "estimate": "5min",
    "retries": "0",
}

DEFAULT_META: Mapping[str, str] = {
    "created": "2025-01-15",
    "tick_mode": "auto",
    "max_retries": "3",
    "max_tasks_per_tick": "2",
    "max_diff_lines": "200",
    "stale_lock_timeout": "15min",
    "total_ticks": "0",
}

#: A plan as a person writes it by hand, byte for byte: a placeholder title, every Meta key
#: with a comment after its value (some in Chinese), three phases, every task field.
SEED_PLAN = """\
# MASTER_PLAN: <ProjectName>

## Meta
- created: 2025-01-15
- last_architect_edit: 2025-01-15T14:30:00
- tick_mode: auto          <!-- auto | paused | stopped -->
- max_retries: 3           <!-- 单任务最大重试次数 -->
- max_tasks_per_tick: 2    <!-- 快任务时允许单 Tick 连续处理上限 -->
- max_diff_lines: 200      <!-- diff size guard 阈值 -->
- stale_lock_timeout: 15min <!-- [~] 僵尸锁重置阈值 -->
- circuit_breaker_threshold: 5 <!-- 连续失败多少次触发熔断 -->
- clean_strategy: git-clean <!-- 三阶段防爆清理机制 -->
- clean_ignore: .memento_cleanignore
- status_max_entries: 50    <!-- TICK_STATUS.md 最大条目数，超出自动归档 -->
- status_archive_dir: logs/status_archive/
- total_ticks: 0           <!-- 自动递增的 Tick 计数器 -->
- total_tasks: 15          <!-- 自动维护 -->
- completed_tasks: 0       <!-- 自动维护 -->

---

## Phase 1: Foundation
<!-- parallel: true -->
<!-- depends: none -->

- [ ] `T-101` [MODULE:database] Setup PostgreSQL schema
  - verify: `cd src && npm test -- --grep "db-schema" && echo PASS`
  - context_files: [src/db/schema.ts, src/db/migrations/]
  - guard_files: [src/auth/*]
  - estimate: 5min
  - retries: 0

- [ ] `T-102` [MODULE:auth] Implement JWT token generation
  - verify: `cd src && npm test -- --grep "jwt" && echo PASS`
  - context_files: [src/auth/jwt.ts, tests/auth/jwt.test.ts]
  - guard_files: [src/db/*]
  - estimate: 5min
  - retries: 0

## Phase 2: Integration
<!-- parallel: false -->
<!-- depends: Phase 1 -->

- [ ] `T-201` [MODULE:auth] Connect auth middleware to database
  - verify: `cd src && npm run test:integration && echo PASS`
  - context_files: [src/auth/middleware.ts, src/db/queries.ts]
  - guard_files: [src/db/schema.ts]
  - estimate: 10min
  - retries: 0

## Phase 3: Polish
<!-- parallel: true -->
<!-- depends: Phase 2 -->

- [ ] `T-301` [MODULE:docs] Generate API documentation
  - verify: `test -f docs/api.md && echo PASS`
  - context_files: [src/routes/*.ts]
  - guard_files: []
  - estimate: 3min
  - retries: 0
"""


def task_block(
    task_id: str,
    marker: str = " ",
    module: str | None = "core",
    description: str = "Do the thing",
    fields: Mapping[str, str] | None = None,
    indent: str = "",
    field_indent: str = "  ",
) -> str:
    """``- [ ] `T-1` [MODULE:core] Do the thing`` and its field lines.

    ``fields=None`` gives ``DEFAULT_FIELDS``; ``fields={}`` gives a task without fields.
    """
    module_tag = "" if module is None else f" [MODULE:{module}]"
    lines = [f"{indent}- [{marker}] `{task_id}`{module_tag} {description}".rstrip(" ")]
    chosen = DEFAULT_FIELDS if fields is None else fields
    lines += [f"{indent}{field_indent}- {key}: {value}" for key, value in chosen.items()]
    return "\n".join(lines) + "\n"


def phase_block(
    number: int,
    title: str,
    tasks: Iterable[str],
    parallel: bool | None = True,
    depends: Iterable[int] | None = (),
) -> str:
    """``## Phase N: Title``, its ``parallel``/``depends`` comments (None leaves a comment
    out; empty ``depends`` is ``none``) and the task blocks, a blank line between each."""
    heading = [f"## Phase {number}: {title}".rstrip(" ")]
    if parallel is not None:
        heading.append(f"<!-- parallel: {'true' if parallel else 'false'} -->")
    if depends is not None:
        names = ", ".join(f"Phase {needed}" for needed in depends) or "none"
        heading.append(f"<!-- depends: {names} -->")
    return "\n".join(["\n".join(heading) + "\n", *tasks])


def meta_block(meta: Mapping[str, str]) -> str:
    return "## Meta\n" + "".join(f"- {key}: {value}\n" for key, value in meta.items())


def plan_text(
    phases: Iterable[str],
    meta: Mapping[str, str] | None = None,
    title: str = "Demo",
    eol: str = "\n",
    bom: bool = False,
    final_newline: bool = True,
) -> str:
    """A whole plan: title, Meta (``DEFAULT_META`` unless given), ``---`` and the phases."""
    blocks = [f"# MASTER_PLAN: {title}\n", meta_block(DEFAULT_META if meta is None else meta)]
    blocks += ["---\n", *phases]
    text = "\n".join(blocks)
    if not final_newline:
        text = text.rstrip("\n")
    return ("\ufeff" if bom else "") + text.replace("\n", eol)


def large_plan(n_tasks: int, tasks_per_phase: int = 100) -> str:
    """A valid plan of ``n_tasks`` tasks, ``tasks_per_phase`` to a phase, each phase
    depending on the one before; the first half is done, one task is blocked, one skipped,
    and every tenth task depends on its predecessor."""
    phases = []
    done = 0
    for first in range(0, n_tasks, tasks_per_phase):
        number = first // tasks_per_phase + 1
        tasks = []
        for index in range(first, min(first + tasks_per_phase, n_tasks)):
            marker = _large_plan_marker(index, n_tasks)
            done += marker == "x"
            fields = {
                "verify": f"`pytest -q tests/test_{index}.py`",
                "context_files": f"[src/mod_{index % 17}/*, tests/test_{index}.py]",
                "guard_files": "[src/core/*]",
                "estimate": f"{index % 9 + 1}min",
                "retries": "3" if marker == "!" else "0",
            }
            if index % 10 == 9:
                fields["depends"] = f"[{_large_plan_id(index - 1)}]"
            tasks.append(
                task_block(
                    _large_plan_id(index),
                    marker=marker,
                    module=f"mod_{index % 17}",
                    description=f"Implement step {index} of the pipeline",
                    fields=fields,
                )
            )
        depends = [number - 1] if number > 1 else []
        phases.append(phase_block(number, f"Stage {number}", tasks, parallel=True, depends=depends))
    meta = {**DEFAULT_META, "total_tasks": str(n_tasks), "completed_tasks": str(done)}
    return plan_text(phases, meta=meta, title="Benchmark")


def _large_plan_id(index: int) -> str:
    return f"T-{index + 1:05d}"


def _large_plan_marker(index: int, n_tasks: int) -> str:
    if index == n_tasks // 2:
        return "!"
    if index == n_tasks // 2 + 1:
        return "-"
    return "x" if index < n_tasks // 2 else " "
