"""``records.NamedTuple`` makes the classes ``typing.NamedTuple`` makes, minus the checks."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from memento_gh import records


def make(base: object) -> Any:
    namespace: dict[str, object] = {}
    exec(  # the same class body under both bases
        "class Point(base):\n"
        "    '''A point.'''\n"
        "    x: int\n"
        "    y: 'int | None' = None\n"
        "    tag: str = 'p'\n"
        "    def moved(self, by: int) -> 'Point':\n"
        "        return self._replace(x=self.x + by)\n"
        "    @property\n"
        "    def total(self) -> int:\n"
        "        return self.x + (self.y or 0)\n",
        {"base": base},
        namespace,
    )
    return namespace["Point"]


@pytest.mark.parametrize("base", [records.NamedTuple, typing.NamedTuple])
def test_a_record_behaves_as_typings_named_tuple(base: object) -> None:
    point = make(base)
    value = point(1)

    assert value == (1, None, "p")
    assert isinstance(value, tuple)
    assert point._fields == ("x", "y", "tag")
    assert point._field_defaults == {"y": None, "tag": "p"}
    assert value.moved(2) == point(3, None, "p")
    assert point(2, 3).total == 5
    assert point.__doc__ == "A point."
    assert list(point.__annotations__) == ["x", "y", "tag"]
    assert value._asdict() == {"x": 1, "y": None, "tag": "p"}


def test_a_field_without_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows"):
        exec("class Bad(base):\n    a: int = 1\n    b: int\n", {"base": records.NamedTuple})


def test_a_named_tuple_method_cannot_be_overwritten() -> None:
    with pytest.raises(AttributeError, match="_replace"):
        exec(
            "class Bad(base):\n    a: int\n    def _replace(self): pass\n",
            {"base": records.NamedTuple},
        )


def test_it_is_only_a_base_class() -> None:
    with pytest.raises(TypeError, match="only a base class"):
        records.NamedTuple("Point", [("x", int)])
