"""``NamedTuple`` for memento's own record classes, made without typing's checks.

``typing.NamedTuple`` checks every field's annotation when the class is made. Under
``from __future__ import annotations`` each one is a string, and the check compiles it into
a ``ForwardRef``: for the 38 record classes a tick imports, that was about 19M of the 335M
instructions a 1,000-task tick ran, for nothing the program ever reads. This ``NamedTuple``
makes the same class (``collections.namedtuple`` with the defaults, methods, properties and
docstring of the class body, the annotations kept as written) and leaves the checking to
mypy, which sees ``typing.NamedTuple`` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["NamedTuple"]

if TYPE_CHECKING:
    from typing import NamedTuple
else:
    import collections

    # What the body of a record class may not set, and what it sets that is not copied:
    # as typing.NamedTuple has them.
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults"}
        | {"_make", "_replace", "_asdict", "_source"}
    )
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _RecordMeta(type):
        def __new__(cls, name, bases, namespace):
            annotations = namespace.get("__annotations__", {})
            defaults = [namespace[field] for field in annotations if field in namespace]
            if any(field in namespace for field in list(annotations)[: -len(defaults) or None]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            record = collections.namedtuple(
                name, list(annotations), defaults=defaults, module=namespace["__module__"]
            )
            record.__annotations__ = record.__new__.__annotations__ = dict(annotations)
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"{name}: cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in record._fields:
                    setattr(record, key, value)
            return record

    _Record = type.__new__(_RecordMeta, "NamedTuple", (), {})

    def NamedTuple(name, fields=None, /, **kwargs):
        raise TypeError("memento_gh.records.NamedTuple is only a base class")

    NamedTuple.__mro_entries__ = lambda bases: (_Record,)
