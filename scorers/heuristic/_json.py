"""The JSON the JSON-aware heuristic scorers read: parsing with a depth limit, canonical text."""

from __future__ import annotations

import json
from typing import Any

JSON_TYPES = (dict, list, str, int, float, bool)

#: Deepest nesting of arrays and objects the JSON-aware scorers take: a deeper value is a ScorerInputError.
#: (Python's JSON parser and encoder stop near 1,000 levels, at a depth that depends on the caller's stack.)
MAX_JSON_DEPTH = 100


def _nesting_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar: 0), counted without recursion up to ``limit + 1``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:  # also ends a walk around a cycle
            break
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return deepest


def _too_deep() -> ValueError:
    return ValueError(f"nests arrays or objects more than {MAX_JSON_DEPTH} levels deep, which is not supported")


def _check_depth(value: Any) -> Any:
    """``value``, or ValueError when it nests deeper than :data:`MAX_JSON_DEPTH`."""
    if isinstance(value, (dict, list, tuple)) and _nesting_depth(value) > MAX_JSON_DEPTH:
        raise _too_deep()
    return value


def _loads(text: str) -> Any:
    """``json.loads``; nesting deeper than :data:`MAX_JSON_DEPTH` is a ValueError (not a JSONDecodeError)."""
    try:
        return _check_depth(json.loads(text))
    except RecursionError:  # raised cleanly by the C parser, far deeper than the limit
        raise _too_deep() from None


def _canonical_json(value: Any, *, sort_keys: bool, ensure_ascii: bool = False) -> str:
    try:
        return json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"is not JSON-serialisable: {exc}") from exc


def _maybe_parse_json(value: Any) -> Any:
    """The object or array a string holds as JSON, else the value itself; too deep a one is a ValueError."""
    if isinstance(value, str):
        try:
            parsed = _loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(parsed, (dict, list)):
            return parsed
    return value
