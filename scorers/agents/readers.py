"""Read a conversation, or a list of tool calls, from the formats users already have.

Both readers detect the format themselves: OpenAI chat messages (and the legacy ``function_call``) or a whole
ChatCompletion, OpenAI Responses items or a whole Response, Anthropic messages (``tool_use``/``tool_result``
blocks, a top-level ``system``), a whole Anthropic Message or its ``content`` blocks alone, LangChain messages
(dicts or the ``lc`` serialised form), OpenTelemetry GenAI spans exported as OTLP JSON, and JSON text of any of
these (what a CSV cell holds). Calls of a Model Context Protocol server's tools (Anthropic's ``mcp_tool_use``,
Responses' ``mcp_call``, JSON-RPC ``tools/call`` requests and their results) read as ``ToolCall(kind="mcp")``, and
the token usage a format carries is kept as the conversation's ``usage``, summed once per model response. What
cannot be read is a :class:`~scorers.errors.ScorerInputError` that names the message, call or span and what is
wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from scorers.agents._messages import (
    ACCEPTED,
    _Builder,
    _call,
    _check_call_text,
    _content,
    _from_items,
    _is_message,
    _is_object,
    _is_part,
    _json_problem,
    _Malformed,
    _read_item,
    _read_role_message,
    _TooMany,
    _usage,
)
from scorers.agents.model import Conversation, Message, ToolCall
from scorers.errors import ScorerInputError

__all__ = ["read_conversation", "read_tool_calls", "CallLimitError"]

#: What :func:`read_tool_calls` accepts, as its errors say it.
CALLS_ACCEPTED = (
    "accepted: a list of calls (OpenAI {id, function: {name, arguments}}, {name, arguments|args|input_parameters}, "
    "Responses function_call and mcp_call items, Anthropic tool_use and mcp_tool_use blocks, MCP tools/call "
    "requests), an Anthropic content list, a dict with "
    "'tool_calls', any conversation, "
    "JSON text of one, or None"
)


class CallLimitError(ScorerInputError):
    """A value holds more tool calls than ``max_calls``: raised while reading, once that many have been read
    (``count``: the calls the value holds when that is known without reading them, else ``None``)."""

    def __init__(self, scorer: str, field: str, max_calls: int, count: int | None) -> None:
        held = f"{count:,} tool calls, more than" if count is not None else "more tool calls than"
        super().__init__(scorer, field, f"holds {held} max_calls={max_calls:,}")
        self.max_calls = max_calls
        self.count = count


@contextmanager
def _input_errors(scorer: str, field_name: str, max_calls: int | None = None) -> Iterator[None]:
    try:
        yield
    except _Malformed as exc:
        raise ScorerInputError(scorer, field_name, str(exc)) from None
    except _TooMany as exc:
        assert max_calls is not None
        raise CallLimitError(scorer, field_name, max_calls, exc.args[0]) from None
    except RecursionError:
        raise ScorerInputError(scorer, field_name, "is nested too deeply to read") from None


def read_conversation(value: Any, *, scorer: str, field: str, max_calls: int | None = None) -> Conversation:
    """The :class:`~scorers.agents.model.Conversation` in ``value``, whichever format it is in (see the module).
    More than ``max_calls`` tool calls is a :class:`CallLimitError`, raised as soon as the call after the last one
    allowed is read.

    >>> conversation = read_conversation(
    ...     [
    ...         {"role": "user", "content": "Weather in Paris?"},
    ...         {"role": "assistant", "content": None, "tool_calls": [
    ...             {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ...         ]},
    ...         {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ...     ],
    ...     scorer="Demo", field="output",
    ... )
    >>> conversation.tool_calls
    (ToolCall(name='get_weather', arguments=FrozenDict({'city': 'Paris'}), id='c1'),)
    >>> read_conversation([{"role": "robot", "content": "hi"}], scorer="Demo", field="output")
    Traceback (most recent call last):
    ...
    scorers.errors.ScorerInputError: Demo: field 'output' at message 0: unknown role 'robot' (accepted: system, \
developer, user, assistant, tool, and the legacy function)
    """
    with _input_errors(scorer, field, max_calls):
        return _conversation(_decoded(value), max_calls)


def read_tool_calls(value: Any, *, scorer: str, field: str, max_calls: int | None = None) -> tuple[ToolCall, ...]:
    """The tool calls in ``value``: a list of calls in any call shape, any conversation :func:`read_conversation`
    reads (its assistant's calls, in order), an Anthropic message's content blocks, a dict with ``tool_calls``,
    JSON text of one of these, or ``None``. More than ``max_calls`` calls is a :class:`CallLimitError`, raised
    while reading.

    >>> read_tool_calls([{"name": "get_weather", "args": {"city": "Paris"}}], scorer="Demo", field="expected")
    (ToolCall(name='get_weather', arguments=FrozenDict({'city': 'Paris'}), id=None),)
    >>> read_tool_calls([{"name": "get_time", "arguments": '{"tz": "UTC"'}], scorer="Demo", field="expected")
    Traceback (most recent call last):
    ...
    scorers.errors.ScorerInputError: Demo: field 'expected' at call 0 ('get_time'): arguments are not valid JSON \
(Expecting ',' delimiter at character 12)
    """
    with _input_errors(scorer, field, max_calls):
        value = _decoded(value)
        if value is None:
            return ()
        if _is_object(value) and "tool_calls" in value:
            value = value["tool_calls"] or []
        if not isinstance(value, (Mapping, list, tuple)):
            raise _Malformed(f"is of type {type(value).__name__}, not a list of tool calls ({CALLS_ACCEPTED})")
        if isinstance(value, (list, tuple)) and not any(_is_message(item) or _is_part(item) for item in value):
            if max_calls is not None and len(value) > max_calls:
                raise _TooMany(len(value))
            calls = tuple(_call(f"call {index}", item) for index, item in enumerate(value))
            for index, call in enumerate(calls):
                _check_call_text(f"call {index}", call)
            return calls
        return _conversation(value, max_calls).tool_calls


def _decoded(value: Any) -> Any:
    """``value``, parsed when it is JSON text."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise _Malformed(f"is text that is not JSON ({_json_problem(exc)}); {ACCEPTED}") from None
    except ValueError as exc:
        raise _Malformed(f"is JSON text that cannot be read: {_json_problem(exc)}") from None


def _conversation(value: Any, max_calls: int | None = None) -> Conversation:
    builder = _Builder(max_calls=max_calls)
    if _is_object(value):
        if "resourceSpans" in value:
            from ._otlp import _from_otlp

            return _from_otlp(value, builder).conversation()
        if "messages" in value:
            if value.get("system") is not None:
                builder.add("system", Message("system", _content("system", value["system"])))
            return _from_items(value["messages"], builder).conversation()
        if isinstance(value.get("output"), list):
            _from_items(value["output"], builder, label="output item")
            return _with_usage(builder, value, "responses").conversation()
        if "choices" in value:
            _read_item(builder, "choices[0].message", _only_choice(value["choices"]))
            return _with_usage(builder, value, "chat").conversation()
        if "jsonrpc" in value:  # one MCP JSON-RPC message: a tools/call request
            _read_item(builder, "the message", value)
            return builder.conversation()
        if "role" in value:  # one message: an Anthropic Message, a Responses message item
            _read_item(builder, "the message", value)
            return builder.conversation()
        raise _Malformed(
            f"is an object with none of the keys 'messages', 'output', 'choices', 'role', 'resourceSpans' ({ACCEPTED})"
        )
    if isinstance(value, (list, tuple)):
        if value and not any(_is_message(item) for item in value) and any(_is_part(item) for item in value):
            # the content blocks of one assistant message (Anthropic): text, tool_use, ...
            _read_role_message(builder, "content", {"role": "assistant", "content": value})
            return builder.conversation()
        return _from_items(value, builder).conversation()
    raise _Malformed(f"is of type {type(value).__name__}, not a conversation ({ACCEPTED})")


def _with_usage(builder: _Builder, document: Mapping[str, Any], shape: str) -> _Builder:
    """``builder``, its usage that of the whole ``document`` (a ChatCompletion or a Response: one model
    response, whatever the messages it holds)."""
    usage = document.get("usage")
    builder.usages = [None if usage is None else _usage("usage", usage, shape)]
    return builder


def _only_choice(choices: Any) -> Any:
    """The message of a ChatCompletion's one choice (several choices are several conversations: give one)."""
    if not isinstance(choices, (list, tuple)) or len(choices) != 1:
        count = (
            f"{len(choices)} choices"
            if isinstance(choices, (list, tuple))
            else f"choices of type {type(choices).__name__}"
        )
        raise _Malformed(
            f"is a ChatCompletion with {count}, not one: give one choice's message (choices[i].message) "
            "or its tool_calls"
        )
    choice = choices[0]
    if not _is_object(choice) or not _is_object(choice.get("message")):
        raise _Malformed("at choices[0]: a choice with no message object (a streamed chunk's delta is not read)")
    return choice["message"]
