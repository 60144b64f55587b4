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
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ScorerInputError

__all__ = [
    "Field",
    "STANDARD_FIELDS",
    "text_field",
    "references_field",
    "require",
    "to_text",
    "to_references",
    "as_str",
    "utf8_encodable",
]

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
    #: Holds text (one, or references): a scorer's ``max_chars`` bounds it.
    text: bool = False

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
        return as_str(value)
    raise TypeError(f"expects text (str), got {type(value).__name__}")


def as_str(value: Any) -> str:
    """``str(value)``; an integer too long for Python to write in decimal is a ValueError that says so."""
    try:
        return str(value)
    except ValueError:  # only int raises, past sys.get_int_max_str_digits()
        digits = int(value.bit_length() * math.log10(2))
        raise ValueError(
            f"is an integer of about {digits:,} digits, more than Python writes as text "
            f"({sys.get_int_max_str_digits():,}; sys.set_int_max_str_digits raises it)"
        ) from None


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


#: A surrogate code point: a Python ``str`` and JSON text (``"\\ud800"``) can hold one alone, UTF-8 cannot.
_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_encodable(text: str) -> str:
    r"""``text``, or ValueError when it holds a lone surrogate, which UTF-8 (a tokenizer, an HTTP API) cannot take.

    >>> utf8_encodable("caf\u00e9")
    'café'
    >>> utf8_encodable("a\ud800")
    Traceback (most recent call last):
    ...
    ValueError: holds a lone surrogate (U+D800 at character 1), which UTF-8 cannot encode
    """
    found = None if text.isascii() else _SURROGATE.search(text)
    if found is not None:
        raise ValueError(
            f"holds a lone surrogate (U+{ord(found.group()):04X} at character {found.start()}), "
            "which UTF-8 cannot encode"
        )
    return text


def _to_utf8_text(value: Any) -> str:
    return utf8_encodable(to_text(value))


def _to_utf8_references(value: Any) -> tuple[str, ...]:
    refs = to_references(value)
    for i, ref in enumerate(refs):
        try:
            utf8_encodable(ref)
        except ValueError as exc:
            raise ValueError(f"reference {i} {exc}") from None
    return refs


def text_field(name: str, *, required: bool = True, description: str = "", utf8: bool = False) -> Field:
    """A field holding text; numbers are accepted and turned into their ``str``.

    ``utf8=True`` for a scorer that hands the text to something that takes UTF-8 only (a model's
    tokenizer, an HTTP API): a lone surrogate is then a :class:`ScorerInputError` for the row.
    """
    return Field(
        name,
        (str, int, float),
        required=required,
        description=description,
        convert=_to_utf8_text if utf8 else to_text,
        text=True,
    )


def references_field(
    name: str = "expected", *, description: str = "reference text, or a list of references", utf8: bool = False
) -> Field:
    """A field holding one reference text or a list of them; the scorer receives a tuple of ``str``.

    ``utf8``: as for :func:`text_field`.
    """
    return Field(
        name,
        (str, int, float, list, tuple),
        description=description,
        convert=_to_utf8_references if utf8 else to_references,
        text=True,
    )


def require(condition: bool, scorer: str, field: str, problem: str) -> None:
    """Raise :class:`ScorerInputError` unless ``condition`` holds."""
    if not condition:
        raise ScorerInputError(scorer, field, problem)
