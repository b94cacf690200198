"""The plan: model, line scanner, surgical editor and validator."""

from memento_gh.plan.model import Plan, Problem, Task
from memento_gh.plan.scanner import parse

__all__ = ["Plan", "Problem", "Task", "parse"]
