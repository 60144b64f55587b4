"""The keys of a results record: the run's own (:data:`RESULT_KEYS`), an input row's renamed where they would
clash (:func:`escaped_key`, :func:`input_row`), and the values a record cannot carry everywhere
(:func:`lone_surrogate`)."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

#: Keys the runner adds to a row in the results file.
RESULT_KEYS = ("scores", "errors", "stats", "metadata_scores")
#: What an input key that clashes with :data:`RESULT_KEYS` gets in front of it in a results record.
INPUT_PREFIX = "input:"
_CLASHING = re.compile(f"(?:{re.escape(INPUT_PREFIX)})*(?:{'|'.join(RESULT_KEYS)})")


def escaped_key(key: str) -> str:
    """The name input key ``key`` has in a results record: one more ``input:`` if it matches
    ``(input:)*(scores|errors|stats|metadata_scores)``, else ``key`` itself."""
    return INPUT_PREFIX + key if _clashes(key) else key


def escape_input_keys(row: Mapping[str, Any]) -> dict[str, Any]:
    """An input row's fields as a results record holds them (keys through :func:`escaped_key`)."""
    return {escaped_key(key): value for key, value in row.items()}


def input_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """The input row a results record was written for: the run's keys dropped, escaped keys named as in the input."""
    return {
        key[len(INPUT_PREFIX) :] if _clashes(key) else key: value
        for key, value in record.items()
        if key not in RESULT_KEYS
    }


def _clashes(key: Any) -> bool:
    return isinstance(key, str) and _CLASHING.fullmatch(key) is not None


def record_matches(record: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """Whether results ``record`` was written for input ``row`` (the check of a resumed run).

    Compared as the JSON the writer writes, so values JSON holds but Python does not call equal (NaN) match,
    and values JSON cannot hold compare as the text they were written as.
    """
    return _canonical(input_row(record)) == _canonical(row)


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)


def lone_surrogate(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """Where in ``row`` a text (a value or a key, at any depth) holds a lone surrogate, and the surrogate:
    ``("field 'a'", "\\ud800")``, ``("field 'a', at [1]['b']", ...)`` or ``("field name 'x\\udc00'", ...)``."""
    for key in row:
        char = _surrogate_in(key)
        if char is not None:
            return f"field name {key!r}", char
    stack: list[tuple[tuple[Any, ...], Any]] = [((key,), row[key]) for key in reversed(list(row))]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            char = _surrogate_in(value)
        elif isinstance(value, Mapping):
            char = next((c for c in map(_surrogate_in, value) if c is not None), None)
            stack.extend(((*path, key), value[key]) for key in reversed(list(value)))
        elif isinstance(value, (list, tuple)):
            char = None
            stack.extend(((*path, i), item) for i, item in reversed(list(enumerate(value))))
        else:
            continue
        if char is not None:
            inside = "".join(f"[{step!r}]" for step in path[1:])
            return f"field {path[0]!r}" + (f", at {inside}" if inside else ""), char
    return None


def _surrogate_in(text: Any) -> str | None:
    """The first lone surrogate of ``text`` (a str), or None."""
    if not isinstance(text, str) or text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None
