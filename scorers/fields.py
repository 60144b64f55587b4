"""The fields a scorer reads, and the helpers that declare the common ones.

A :class:`Field` names an argument, the Python types it accepts and how an
accepted value becomes what the scorer works on. Every text and embedding
scorer uses :func:`text_field` for a single text and :func:`references_field`
for "a reference or a list of references", so they accept and reject the same
values.

>>> references_field().convert(["a", 1])
('a', '1')
>>> references_field().convert([])
Traceback (most recent call last):
...
ValueError: must hold at least one reference, got an empty list
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ScorerInputError

__all__ = ["Field", "STANDARD_FIELDS", "text_field", "references_field", "require", "to_text", "to_references"]

#: Fields every scorer accepts, so that harnesses can pass them uniformly.
#: A scorer's hooks receive one of them only when the scorer declares it or names it in the hook's signature.
STANDARD_FIELDS = ("input", "output", "expected", "metadata")


@dataclass(frozen=True)
class Field:
    """A field a scorer reads.

    ``types`` are the accepted Python types (``None`` is never accepted for a
    required field unless ``nullable``); ``convert`` turns an accepted value into
    what the scorer works on and may raise ``ValueError``/``TypeError`` with a reason.
    """

    name: str
    types: tuple[type, ...] = (object,)
    required: bool = True
    description: str = ""
    convert: Callable[[Any], Any] | None = None
    #: Accept an explicit ``None`` (e.g. JSON ``null``) for a required field.
    nullable: bool = False

    def type_names(self) -> str:
        return " or ".join(t.__name__ for t in self.types)


def to_text(value: Any) -> str:
    """Text, or a number turned into its ``str``; booleans and non-finite numbers are refused.

    >>> to_text(3), to_text("a")
    ('3', 'a')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError("expects text, got bool")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"expects text, got the non-finite number {value!r}")
        return str(value)
    raise TypeError(f"expects text (str), got {type(value).__name__}")


def to_references(value: Any) -> tuple[str, ...]:
    """One reference or a non-empty list of them, each converted by :func:`to_text`."""
    if type(value) is str:
        return (value,)
    items = [value] if isinstance(value, (str, int, float)) else list(value)
    if not items:
        raise ValueError("must hold at least one reference, got an empty list")
    refs = []
    for i, item in enumerate(items):
        try:
            refs.append(to_text(item))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"reference {i} {exc}") from None
    return tuple(refs)


def text_field(name: str, *, required: bool = True, description: str = "") -> Field:
    """A field holding text; numbers are accepted and turned into their ``str``."""
    return Field(name, (str, int, float), required=required, description=description, convert=to_text)


def references_field(name: str = "expected", *, description: str = "reference text, or a list of references") -> Field:
    """A field holding one reference text or a list of them; the scorer receives a tuple of ``str``."""
    return Field(name, (str, int, float, list, tuple), description=description, convert=to_references)


def require(condition: bool, scorer: str, field: str, problem: str) -> None:
    """Raise :class:`ScorerInputError` unless ``condition`` holds."""
    if not condition:
        raise ScorerInputError(scorer, field, problem)
