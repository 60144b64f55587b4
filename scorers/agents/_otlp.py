"""OpenTelemetry GenAI spans (OTLP JSON: resourceSpans, scopeSpans, spans) read into a conversation, for
:mod:`scorers.agents.readers` (which detects the format and calls :func:`_from_otlp`), with the reading of
messages every format shares (:mod:`scorers.agents._messages`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from scorers.agents._messages import (
    _COUNTS,
    _Builder,
    _call,
    _count,
    _id,
    _is_object,
    _json_problem,
    _kind,
    _Malformed,
    _result,
    _shown,
    _text,
)
from scorers.agents.model import ROLES, FrozenDict, Message, Usage

#: OTLP's status code of a failed span.
_OTLP_STATUS_ERROR = 2
#: The operations of an inference span (one model response each, its usage counted once); an agent's span
#: (``invoke_agent``) totals the usage of the inference spans under it, and is not counted again.
_INFERENCE = frozenset({"chat", "text_completion", "generate_content"})
#: The attributes of an inference span's counts (:data:`~scorers.agents._messages._COUNTS`), each with the name
#: the conventions used before 1.27 (``prompt_tokens``, ``completion_tokens``) where there was one.
_USAGE_KEYS = (
    ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    ("gen_ai.usage.cache_read.input_tokens",),
    ("gen_ai.usage.cache_creation.input_tokens",),
)


def _from_otlp(document: Mapping[str, Any], builder: _Builder) -> _Builder:
    """A conversation from OpenTelemetry GenAI spans (OTLP JSON), read in the order the spans started.

    An inference span gives its input messages (those a conversation read so far does not already hold: each
    span's input usually repeats the history) and its output messages; an ``execute_tool`` span gives its call,
    when no output message made it, and its result, when no input message gave it.
    """
    spans = []
    for resource in _otlp_list(document, "resourceSpans", "the document"):
        for scope in _otlp_list(resource, "scopeSpans", "resourceSpans"):
            spans.extend(_otlp_list(scope, "spans", "scopeSpans"))
    ordered = sorted(enumerate(spans), key=lambda pair: _otlp_start(f"span {pair[0]}", pair[1]))
    system: Message | None = None
    for index, span in ordered:
        where = f"span {index} ({_shown(span.get('name'))})"
        attributes = _otlp_attributes(where, span.get("attributes"))
        operation = attributes.get("gen_ai.operation.name")
        if operation == "execute_tool":
            _read_tool_span(builder, where, attributes, span)
            continue
        if isinstance(operation, str) and operation in _INFERENCE:
            builder.response(_otlp_usage(where, attributes))
        if system is None and "gen_ai.system_instructions" in attributes:
            instructions = _otlp_json(where, "gen_ai.system_instructions", attributes["gen_ai.system_instructions"])
            system = Message("system", _otel_text(f"{where}, gen_ai.system_instructions", instructions))
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            if key in attributes:
                messages = _otel_messages(f"{where}, {key}", _otlp_json(where, key, attributes[key]))
                _merge(builder, messages if key.endswith("output.messages") else _new_inputs(builder, messages))
    if system is not None:
        builder.entries.insert(0, ("gen_ai.system_instructions", system))
    return builder


def _otlp_usage(where: str, attributes: Mapping[str, Any]) -> Usage | None:
    """An inference span's usage (``gen_ai.usage.*``; a count absent is ``None``), or ``None`` when it has none."""
    counts: list[int | None] = []
    missing = {}
    for count, keys in zip(_COUNTS, _USAGE_KEYS):
        key = next((key for key in keys if attributes.get(key) is not None), keys[0])
        value = attributes.get(key)
        counts.append(None if value is None else _count(where, key, value))
        if value is None:
            missing[count] = key
    if len(missing) == len(_COUNTS):
        return None
    found: dict[str, Any] = dict(zip(_COUNTS, counts))
    return Usage(**found, source="OpenTelemetry gen_ai.usage attributes", missing=FrozenDict(missing))


def _otlp_list(container: Any, key: str, where: str) -> list[Any]:
    value = container.get(key, []) if _is_object(container) else None
    if not isinstance(value, list):
        raise _Malformed(f"at {where}: {key} is not a list of objects (OTLP JSON)")
    return value


def _otlp_start(where: str, span: Any) -> int:
    if not _is_object(span):
        raise _Malformed(f"at {where}: is of type {type(span).__name__}, not a span object")
    try:
        return int(span.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a float such as 1e400 (infinite)
        raise _Malformed(f"at {where}: startTimeUnixNano is not an integer") from None


def _otlp_attributes(where: str, attributes: Any) -> dict[str, Any]:
    if attributes is None:
        return {}
    if not isinstance(attributes, list) or not all(_is_object(a) and isinstance(a.get("key"), str) for a in attributes):
        raise _Malformed(f"at {where}: attributes are not a list of {{key, value}} objects (OTLP JSON)")
    return {attribute["key"]: _otlp_value(where, attribute.get("value")) for attribute in attributes}


def _otlp_value(where: str, value: Any) -> Any:
    """An OTLP ``AnyValue`` as the Python value (its 64-bit integers are JSON strings)."""
    if not _is_object(value) or not value:
        return None
    kind, inner = next(iter(value.items()))
    try:
        if kind == "intValue":
            return int(inner)
        if kind == "arrayValue":
            return [_otlp_value(where, v) for v in inner.get("values", [])]
        if kind == "kvlistValue":
            return {str(kv["key"]): _otlp_value(where, kv.get("value")) for kv in inner.get("values", [])}
    except (AttributeError, KeyError, TypeError, ValueError, OverflowError):
        raise _Malformed(f"at {where}: an attribute's {kind} is not OTLP JSON") from None
    if kind in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        return inner
    raise _Malformed(f"at {where}: an attribute value of unknown kind {kind!r} (OTLP JSON)")


def _otlp_json(where: str, key: str, value: Any) -> Any:
    """An attribute recorded as JSON text, parsed (or already structured)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as exc:
        raise _Malformed(f"at {where}: {key} is not valid JSON ({_json_problem(exc)})") from None


def _read_tool_span(builder: _Builder, where: str, attributes: Mapping[str, Any], span: Mapping[str, Any]) -> None:
    name = attributes.get("gen_ai.tool.name")
    call = _call(where, {"name": name, "arguments": attributes.get("gen_ai.tool.call.arguments")})
    call = replace(call, id=_id(where, attributes.get("gen_ai.tool.call.id")))
    if call.id is None or call.id not in builder.call_ids:
        builder.add_calls(where, (call,))
    if "gen_ai.tool.call.result" in attributes and (call.id is None or call.id not in builder.answered_ids):
        status = span.get("status")
        failed = _is_object(status) and status.get("code") in (_OTLP_STATUS_ERROR, "STATUS_CODE_ERROR")
        result = _result(where, attributes["gen_ai.tool.call.result"])
        builder.add(where, Message("tool", result, tool_call_id=call.id, name=call.name, is_error=failed))


def _otel_messages(where: str, messages: Any) -> list[tuple[str, Message]]:
    """Messages in the GenAI semantic conventions' shape: ``role`` and ``parts``."""
    if not isinstance(messages, list):
        raise _Malformed(f"at {where}: is not a list of messages")
    read: list[tuple[str, Message]] = []
    for index, message in enumerate(messages):
        message_where = f"{where}, message {index}"
        if not _is_object(message):
            raise _Malformed(f"at {message_where}: is of type {type(message).__name__}, not a message object")
        role = message.get("role")
        if role not in ROLES:
            raise _Malformed(f"at {message_where}: unknown role {_shown(role)} (accepted: {', '.join(ROLES)})")
        parts = message.get("parts") or []
        if not isinstance(parts, list):
            raise _Malformed(f"at {message_where}: parts is of type {type(parts).__name__}, not a list")
        texts, calls = [], []
        for part_index, part in enumerate(parts):
            part_where = f"{message_where}, part {part_index}"
            kind = _kind(part) if _is_object(part) else None
            if kind == "text":
                texts.append(_text(part_where, "content", part.get("content")) or "")
            elif kind == "tool_call":
                calls.append(_call(part_where, part))
            elif kind == "tool_call_response":
                response = _result(part_where, part.get("response"))
                result = Message("tool", response, tool_call_id=_id(part_where, part.get("id")))
                read.append((part_where, result))
        if texts or calls or role != "tool":
            content = "\n".join(texts) if texts else None
            read.append(
                (
                    message_where,
                    Message(role, content, tuple(calls), name=_text(message_where, "name", message.get("name"))),
                )
            )
    return read


def _otel_text(where: str, parts: Any) -> str | None:
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        raise _Malformed(f"at {where}: is not a list of parts")
    texts = [_text(where, "content", p.get("content")) or "" for p in parts if _is_object(p)]
    return "\n".join(texts) if texts else None


def _new_inputs(builder: _Builder, inputs: list[tuple[str, Message]]) -> list[tuple[str, Message]]:
    """The input messages of a later inference span that the conversation does not hold yet: those after the
    history it repeats (tool results compared by call id, assistant messages by their calls' ids)."""
    held = [message for _, message in builder.entries]
    common = 0
    while common < min(len(held), len(inputs)) and _same_turn(held[common], inputs[common][1]):
        common += 1
    return inputs[common:]


def _same_turn(held: Message, given: Message) -> bool:
    if held.role != given.role:
        return False
    if held.role == "tool":
        return held.tool_call_id == given.tool_call_id
    if held.tool_calls or given.tool_calls:
        return [c.id for c in held.tool_calls] == [c.id for c in given.tool_calls]
    return held.content == given.content


def _merge(builder: _Builder, messages: list[tuple[str, Message]]) -> None:
    """Add messages, less the tool results and calls the conversation already holds (by call id)."""
    for where, message in messages:
        if message.role == "tool" and message.tool_call_id is not None and message.tool_call_id in builder.answered_ids:
            continue
        if message.tool_calls and all(c.id is not None and c.id in builder.call_ids for c in message.tool_calls):
            continue
        builder.add(where, message)
