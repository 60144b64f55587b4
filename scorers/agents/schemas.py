"""JSON Schema validation of tool-call arguments, for :class:`~scorers.agents.tool_calls.ToolCallValid`.

``jsonschema`` validates, with four keywords of its own replaced so that no schema or argument can hang a run or
raise anything but a typed error:

- ``pattern``, ``patternProperties`` (and ``additionalProperties``, which matches them too) match with the ``regex`` package, which can stop a match, within the
  call's CPU time (``^(a+)+$`` against 28 characters would take minutes with :mod:`re`); a pattern is refused
  before matching as :class:`~scorers.heuristic.RegexMatch` refuses one (too long, too many items once its
  counted repeats are written out, or too long a literal);
- ``multipleOf`` compares the decimals as written (``0.3`` is a multiple of ``0.1``; jsonschema's float division
  says it is not) and never overflows (``10**400`` against ``0.5``);
- ``uniqueItems`` compares JSON values by a hashable form, in linear time (jsonschema compares every pair of
  objects: minutes for 5,000 of them).

Every keyword checks the CPU time the call's validation has taken, so that a schema whose ``anyOf`` or ``$ref``
branch at every level (exponential work) stops within ``timeout_s``: :class:`ValidationTimeout`.
"""

from __future__ import annotations

import decimal
import json
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Callable

__all__ = ["ValidationTimeout", "validators", "schemas", "validate", "check_patterns"]

#: The CPU time (``time.process_time``) by which the validation under way must end; None: no limit.
_DEADLINE: ContextVar[float | None] = ContextVar("scorers_schema_deadline", default=None)
#: The keys of a tool definition that hold its JSON Schema: OpenAI (chat and Responses), Anthropic (and the tools
#: of a Responses ``mcp_list_tools`` item), and MCP (a ``tools/list`` result).
_SCHEMA_KEYS = ("parameters", "input_schema", "inputSchema")
#: Decimal arithmetic without rounding, for ``multipleOf``.
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


class ValidationTimeout(Exception):
    """A call's validation took more CPU time than it was given."""


def _check_time() -> float | None:
    """The CPU seconds left to the validation under way (None: no limit); none left is a ValidationTimeout."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return None
    left = deadline - time.process_time()
    if left <= 0:
        raise ValidationTimeout
    return left


def _timed(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """A jsonschema keyword that first checks the time left."""

    def timed(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _check_time()
        return keyword(validator, value, instance, schema)

    return timed


def check_patterns(schema: Any) -> None:
    """Refuse a schema holding a pattern that :class:`~scorers.heuristic.RegexMatch` would refuse to compile (a
    ValueError saying why): too long, too many items once counted repeats are written out, or a literal so long
    that the engine's search tables take minutes outside any time limit."""
    from ..heuristic import MAX_LITERAL_CHARS, MAX_PATTERN_CHARS, MAX_PATTERN_ITEMS, _pattern_shape

    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            patterns = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
            if isinstance(node.get("patternProperties"), Mapping):
                patterns += [key for key in node["patternProperties"] if isinstance(key, str)]
            for pattern in patterns:
                if len(pattern) > MAX_PATTERN_CHARS:
                    raise ValueError(
                        f"has a pattern of {len(pattern):,} characters, more than {MAX_PATTERN_CHARS:,} (compiling "
                        "takes time that grows faster than its length)"
                    )
                try:
                    items, literal = _pattern_shape(pattern, 0)
                except Exception:  # re's parser refuses it: check_schema says why (format "regex")
                    continue
                if items > MAX_PATTERN_ITEMS:
                    raise ValueError(
                        f"has a pattern of more than {MAX_PATTERN_ITEMS:,} items once its counted repetitions such "
                        "as {1000} are written out (compiling builds every copy: time and memory)"
                    )
                if literal > MAX_LITERAL_CHARS:
                    raise ValueError(
                        f"has a pattern of {literal:,} literal characters in a row, more than {MAX_LITERAL_CHARS:,} "
                        "(the engine's search tables for a literal take time that grows with the cube of its length, "
                        "outside timeout_s)"
                    )
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text``, within the validation's time left."""
    import regex

    left = _check_time()
    compiled = regex.compile(pattern, regex.VERSION0)
    try:
        return compiled.search(text, timeout=left) is not None
    except TimeoutError:
        raise ValidationTimeout from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, properties: Mapping[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``additionalProperties``, with the patterns of ``patternProperties`` matched by :func:`_search`."""
    from jsonschema import ValidationError
    from jsonschema._utils import extras_msg

    if not validator.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = [
        key for key in instance if key not in properties and not any(_search(pattern, key) for pattern in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:  # jsonschema's messages
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(extra) for extra in sorted(extras))
            yield ValidationError(
                f"{listed} {verb} not match any of the regexes: {', '.join(map(repr, sorted(patterns)))}"
            )
        else:
            listed, verb = extras_msg(sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


def _decimal(number: int | float) -> decimal.Decimal:
    return decimal.Decimal(number) if isinstance(number, int) else decimal.Decimal(repr(number))


def _multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "number"):
        return
    try:
        failed = _EXACT.remainder(_decimal(instance), _decimal(divisor)) != 0
    except decimal.InvalidOperation:  # NaN or an infinity: a multiple of nothing
        failed = True
    if failed:
        yield ValidationError(f"{instance!r} is not a multiple of {divisor}")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    from .rules import exact_key  # JSON equality: 1 and 1.0 alike, true and 1 not, key order ignored

    if unique and validator.is_type(instance, "array"):
        seen: set[Any] = set()
        for item in instance:
            key = exact_key(item)
            if key in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(key)


_REPLACED = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "multipleOf": _multiple_of,
    "uniqueItems": _unique_items,
}


@lru_cache(maxsize=None)
def _bounded(cls: Any) -> Any:
    """``cls`` (a jsonschema validator class) with the keywords above and every keyword timed."""
    import jsonschema

    keywords = {name: _timed(_REPLACED.get(name, keyword)) for name, keyword in cls.VALIDATORS.items()}
    return jsonschema.validators.extend(cls, keywords)  # type: ignore[no-untyped-call]


def schemas(tools: Any) -> dict[str, Any]:
    """Each tool's name and the JSON Schema of its arguments, from a list of tool definitions (OpenAI ``tools``:
    ``{"type": "function", "function": {...}}``; flat ``{"name", "parameters"}`` as in the Responses API; Anthropic
    ``{"name", "input_schema"}``; MCP ``{"name", "description", "inputSchema"}``), or the MCP tools an MCP
    ``tools/list`` result lists (``{"tools": [...]}``, also in its JSON-RPC response ``{"jsonrpc", "id",
    "result": {"tools": [...]}}``) or a Responses ``mcp_list_tools`` item (also among the definitions of a list).
    A tool without a schema takes any object. Anything else is a ValueError.

    >>> listed = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "search", "inputSchema": {"type": "object"}}]}}
    >>> schemas(listed)
    {'search': {'type': 'object'}}
    """
    found: dict[str, Any] = {}
    for index, tool in enumerate(_definitions(tools)):
        definition = tool.get("function", tool) if isinstance(tool, Mapping) else {}
        name = definition.get("name") if isinstance(definition, Mapping) else None
        if not isinstance(definition, Mapping) or not isinstance(name, str) or not name:
            raise ValueError(
                f"tool {index} is not a tool definition with a name, such as "
                '{"type": "function", "function": {"name": "...", "parameters": {...}}}'
            )
        if name in found:
            raise ValueError(f"tool {index} ({name!r}) has the name of an earlier tool")
        schema = next((definition[key] for key in _SCHEMA_KEYS if definition.get(key) is not None), {"type": "object"})
        if not isinstance(schema, (Mapping, bool)):
            raise ValueError(
                f"tool {index} ({name!r}) has a schema of type {type(schema).__name__}, not a JSON Schema "
                "(an object, or true or false)"
            )
        found[name] = schema
    return found


def _definitions(tools: Any) -> list[Any]:
    """The tool definitions ``tools`` holds: a list of them (an ``mcp_list_tools`` item among them gives its
    tools), or an MCP ``tools/list`` result, bare or in its JSON-RPC response."""
    if isinstance(tools, Mapping) and "jsonrpc" in tools:
        result = tools.get("result")
        if not isinstance(result, Mapping):
            raise ValueError("is a JSON-RPC message with no result object (an MCP tools/list response has one)")
        tools = result
    if isinstance(tools, Mapping) and "tools" in tools:
        tools = tools["tools"]
    if not isinstance(tools, (list, tuple)):
        raise ValueError(f"must be a list of tool definitions or an MCP tools/list result, got {type(tools).__name__}")
    found: list[Any] = []
    for tool in tools:
        listed = tool.get("tools") if isinstance(tool, Mapping) and tool.get("type") == "mcp_list_tools" else None
        found.extend(listed if isinstance(listed, (list, tuple)) else [tool])
    return found


@lru_cache(maxsize=64)
def validators(tools_json: str) -> dict[str, Any]:
    """A validator per tool, each schema checked once (``check_schema``); nothing is ever fetched for a ``$ref``.

    Cached by the tools' JSON text (the last 64 lists). A bad schema is a ValueError naming the tool."""
    import jsonschema
    from referencing import Registry

    found = {}
    for name, schema in schemas(json.loads(tools_json)).items():
        try:
            check_patterns(schema)
            dialect = schema.get("$schema") if isinstance(schema, Mapping) else None
            if dialect is not None and not isinstance(dialect, str):
                raise ValueError(f"has a $schema of type {type(dialect).__name__}, not a URI")
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"the tool {name!r} has an invalid JSON Schema: {exc.message}") from None
        except ValueError as exc:
            raise ValueError(f"the tool {name!r} {exc}") from None
        except RecursionError:
            raise ValueError(f"the tool {name!r} has a JSON Schema nested too deeply to check") from None
        found[name] = _bounded(cls)(schema, registry=Registry())  # empty: a remote $ref is an error, not a download
    return found


def validate(validator: Any, arguments: Any, timeout_s: float | None) -> Any:
    """The most relevant error of ``arguments`` against ``validator`` (jsonschema's ``best_match``), or None;
    more than ``timeout_s`` seconds of CPU time is a :class:`ValidationTimeout`."""
    from jsonschema.exceptions import best_match

    token = _DEADLINE.set(None if timeout_s is None else time.process_time() + timeout_s)
    try:
        return best_match(validator.iter_errors(arguments))
    finally:
        _DEADLINE.reset(token)
