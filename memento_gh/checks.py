"""The plan checked together with its project map: what ``memento validate`` reports on the
plan, and what a tick, the Action, the dashboard and ``memento status`` refuse to run on."""

from __future__ import annotations

from memento_gh.formats.project_map import parse_project_map
from memento_gh.plan.model import Plan, Problem
from memento_gh.plan.validate import check_plan


def check_plan_text(text: str, map_text: str | None) -> tuple[Plan, list[Problem]]:
    """The plan's problems, a task's module checked against the map when there is one."""
    modules = None if map_text is None else parse_project_map(map_text).modules.keys()
    return check_plan(text, modules)
