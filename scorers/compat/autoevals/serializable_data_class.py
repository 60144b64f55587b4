"""autoevals' ``SerializableDataClass``: dict and JSON forms of a dataclass, and nested loading.

>>> import dataclasses
>>> @dataclasses.dataclass
... class Point(SerializableDataClass):
...     x: int
...     label: str | None = None
>>> Point.from_dict({"x": 1}).as_json()
'{"x": 1, "label": null}'
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, Mapping, TypeVar

__all__ = ["SerializableDataClass"]

T = TypeVar("T", bound="SerializableDataClass")


class SerializableDataClass:
    """Mixin for dataclasses: ``as_dict``, ``as_json``, ``from_dict``, ``from_dict_deep`` and ``obj["field"]``."""

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]  # the mixin is used on dataclasses only

    def as_json(self, **kwargs: Any) -> str:
        """``json.dumps`` of :meth:`as_dict`; keyword arguments go to ``json.dumps``."""
        return json.dumps(self.as_dict(), **kwargs)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
        """Build from a mapping of field values; a key that is not a field raises ``TypeError``."""
        return cls(**data)

    @classmethod
    def from_dict_deep(cls: type[T], data: Mapping[str, Any]) -> T:
        """As :meth:`from_dict`, building nested dataclass fields (and lists of them) from their mappings too."""
        hints = typing.get_type_hints(cls)
        return cls(**{key: _load(hints.get(key, Any), value) for key, value in data.items()})


def _load(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        classes = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _load(classes[0], value) if len(classes) == 1 else value
    if isinstance(hint, type) and issubclass(hint, SerializableDataClass) and isinstance(value, Mapping):
        return hint.from_dict_deep(value)
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(hint) or (Any,)
        return [_load(item, element) for element in value]
    return value
