"""The reading of messages that every format shares, for :mod:`scorers.agents.readers` and the readers of
whole documents (:mod:`scorers.agents._otlp`): a conversation built message by message (:class:`_Builder`), each
message, content part and tool call read and checked, and what is wrong named where it is (:class:`_Malformed`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

from scorers.agents.model import ROLES, Conversation, FrozenDict, Message, ToolCall, Usage, freeze
from scorers.attachments import Attachment, AttachmentError, is_hosted
from scorers.fields import utf8_encodable

#: What :func:`read_conversation` accepts, as its errors say it.
ACCEPTED = (
    "accepted: a list of OpenAI chat, OpenAI Responses, Anthropic or LangChain messages; a dict with 'messages' "
    "(and Anthropic's 'system'), a Response with 'output', a ChatCompletion with 'choices', one message (an "
    "Anthropic Message) or a list of its content blocks, or OTLP JSON with 'resourceSpans'; or JSON text of one"
)
#: Content parts that carry text, and the key that holds it.
_TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}
#: Content parts that hold an image, audio or a document: kept as the message's attachments.
_ATTACHMENT_PARTS = frozenset({"image", "image_url", "input_image", "input_audio", "file", "input_file", "document"})
#: Content parts with nothing to score (hidden reasoning, a model's audio reply by id): skipped.
_SKIPPED_PARTS = frozenset({"audio", "thinking", "redacted_thinking", "reasoning"})
#: Responses output items with nothing to score (the model's reasoning summary; the tools an MCP server lists, and
#: an approval asked or given for an MCP call, which is itself an ``mcp_call`` item when it runs).
_SKIPPED_ITEMS = frozenset({"reasoning", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response"})
#: The ``type`` of a call of a Model Context Protocol tool: Responses' item, Anthropic's block, and
#: :meth:`ToolCall.to_dict <scorers.agents.model.ToolCall.to_dict>`'s.
_MCP_CALLS = frozenset({"mcp_call", "mcp_tool_use", "mcp"})
#: Where each format keeps a response's token counts: its name, then the path of the input, output, cache-read
#: and cache-write counts. Anthropic's ``input_tokens`` leaves out the cached tokens (added here); the others'
#: input counts hold them.
_USAGE_SHAPES: dict[str, tuple[str, ...]] = {
    "chat": (
        "ChatCompletion usage",
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details.cached_tokens",
        "prompt_tokens_details.cache_write_tokens",
    ),
    "responses": (
        "Response usage",
        "input_tokens",
        "output_tokens",
        "input_tokens_details.cached_tokens",
        "input_tokens_details.cache_write_tokens",
    ),
    "anthropic": (
        "Anthropic Message usage",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ),
    "langchain": (
        "LangChain usage_metadata",
        "input_tokens",
        "output_tokens",
        "input_token_details.cache_read",
        "input_token_details.cache_creation",
    ),
}
_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
#: LangChain's message types (``message.type``), and the role each one is.
_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "chat": ""}
#: LangChain's message classes (the last entry of a serialised message's ``id``), and their ``type``.
_LANGCHAIN_CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "ChatMessage": "chat",
}
#: The keys that hold a call's arguments, by format: OpenAI, LangChain and Ragas, DeepEval, Anthropic.
_ARGUMENT_KEYS = ("arguments", "args", "input_parameters", "input")


#: Parses arguments given as JSON text straight into frozen objects (arrays still need :func:`freeze`).
_FROZEN_JSON = json.JSONDecoder(object_pairs_hook=FrozenDict)


def _is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``value`` is an object: a ``dict`` by its exact type first (the abstract check costs far more)."""
    return type(value) is dict or isinstance(value, Mapping)


class _Malformed(ValueError):
    """What is wrong with a value, naming where; the readers raise it as a :class:`ScorerInputError`."""


class _TooMany(Exception):
    """More calls than the reader's ``max_calls``: reading stops there."""


#: The longest value an error message shows.
_SHOWN_CHARS = 200


def _shown(value: Any, form: Callable[[Any], str] = repr) -> str:
    """A value of the input as an error message shows it: ``repr`` (or ``form``), cut at 200 characters; an integer
    longer than Python writes as text by its number of digits."""
    try:
        text = form(value)
    except ValueError:  # only an int past sys.get_int_max_str_digits(), or a value holding one
        if isinstance(value, int):
            return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
        return f"a {type(value).__name__} holding an integer too long to write"
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}... ({len(text):,} characters)"


def _json_problem(exc: ValueError) -> str:
    """Why ``json`` did not read a text: its syntax error, or an integer longer than Python reads from text."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at character {exc.pos}"
    return (
        f"it holds an integer of more than {sys.get_int_max_str_digits():,} digits, more than Python reads from "
        "text; sys.set_int_max_str_digits raises the limit"
    )


@dataclass
class _Builder:
    """The messages read so far, each with where it was read (``message 3``), for the errors."""

    _entries: list[tuple[str, Message]] = field(default_factory=list)
    #: calls that join the last message (an assistant's) when the entries are next read: joined one at a time,
    #: a tuple copied per call would make reading quadratic
    _tail: list[ToolCall] = field(default_factory=list)
    #: the ids of the calls read so far, and of the calls a tool result answers
    call_ids: set[str | None] = field(default_factory=set)
    answered_ids: set[str | None] = field(default_factory=set)
    #: reading stops (:class:`_TooMany`) at the call after this many
    max_calls: int | None = None
    calls: int = 0
    #: the usage of each model response read so far (``None``: one that carried none)
    usages: list[Usage | None] = field(default_factory=list)

    @property
    def entries(self) -> list[tuple[str, Message]]:
        if self._tail:
            where, last = self._entries[-1]
            self._entries[-1] = (where, replace(last, tool_calls=last.tool_calls + tuple(self._tail)))
            self._tail = []
        return self._entries

    def _count(self, calls: int) -> None:
        self.calls += calls
        if self.max_calls is not None and self.calls > self.max_calls:
            raise _TooMany(None)

    def add(self, where: str, message: Message) -> None:
        self._count(len(message.tool_calls))
        self.entries.append((where, message))
        self.call_ids.update(call.id for call in message.tool_calls)
        if message.role == "tool":
            self.answered_ids.add(message.tool_call_id)

    def add_calls(self, where: str, calls: Sequence[ToolCall]) -> None:
        """Calls given as items of their own (Responses, OpenTelemetry) join the assistant message just before."""
        self._count(len(calls))
        self.call_ids.update(call.id for call in calls)
        if self._entries and self._entries[-1][1].role == "assistant":
            self._tail.extend(calls)
        else:
            self.calls -= len(calls)  # counted again by add
            self.add(where, Message("assistant", None, tuple(calls)))

    def response(self, usage: Usage | None) -> None:
        """A model response read, with its usage (``None``: it carried none)."""
        self.usages.append(usage)

    def usage(self) -> Usage | None:
        """The usage of the responses read, summed once each; ``None`` when none carried any."""
        reported = [usage for usage in self.usages if usage is not None]
        if not reported:
            return None
        total = reported[0]
        for usage in reported[1:]:
            total += usage
        unreported = len(self.usages) - len(reported)
        if unreported:  # its counts are unknown: so are the sums
            total += Usage(responses=unreported, reported=0, missing=FrozenDict({count: "usage" for count in _COUNTS}))
        return total

    def conversation(self) -> Conversation:
        """The conversation, once each text is checked and each tool result answers an earlier call."""
        calls: dict[str, tuple[str, ToolCall]] = {}
        messages = []
        for where, message in self.entries:
            _check_message_text(where, message)
            for index, call in enumerate(message.tool_calls):
                if call.id is None:
                    continue
                if call.id in calls:
                    raise _Malformed(
                        f"at {where}: call {index} ({call.name!r}) has the id {call.id!r} of an earlier call "
                        f"(at {calls[call.id][0]})"
                    )
                calls[call.id] = (where, call)
            if message.role == "tool" and message.tool_call_id is not None:
                answered = calls.get(message.tool_call_id)
                if answered is None:
                    raise _Malformed(
                        f"at {where}: a tool result for the call id {message.tool_call_id!r}, which no earlier call has"
                    )
                if message.name is None:
                    message = replace(message, name=answered[1].name)
            messages.append(message)
        return Conversation(tuple(messages), usage=self.usage())


def _count(where: str, key: str, value: Any) -> int:
    if type(value) is not int or value < 0:
        raise _Malformed(f"at {where}: usage {key} is {_shown(value)}, not a count of tokens (an integer >= 0)")
    return value


def _usage(where: str, usage: Any, shape: str, source: str | None = None) -> Usage:
    """A response's token counts in one of :data:`_USAGE_SHAPES` (a count absent is ``None``, never 0)."""
    if not _is_object(usage):
        raise _Malformed(f"at {where}: usage is of type {type(usage).__name__}, not an object of token counts")
    name, *paths = _USAGE_SHAPES[shape]
    counts: list[int | None] = []
    missing = {}
    for count, path in zip(_COUNTS, paths):
        value: Any = usage
        for key in path.split("."):
            value = value.get(key) if _is_object(value) else None
        counts.append(None if value is None else _count(where, path, value))
        if value is None:
            missing[count] = path
    if shape == "anthropic" and counts[0] is not None:  # Anthropic's input_tokens leaves out the cached tokens
        counts[0] += (counts[2] or 0) + (counts[3] or 0)
    found: dict[str, Any] = dict(zip(_COUNTS, counts))
    return Usage(**found, source=source or name, missing=FrozenDict(missing))


def _message_usage(where: str, item: Mapping[str, Any]) -> Usage | None:
    """The usage a message carries itself (an Anthropic Message in a list; a ChatCompletion's usage is read with
    the document), or ``None``."""
    usage = item.get("usage")
    if usage is None:
        return None
    shape = "chat" if _is_object(usage) and "prompt_tokens" in usage else "anthropic"
    return _usage(f"{where}, usage", usage, shape)


def _langchain_usage(where: str, data: Mapping[str, Any]) -> Usage | None:
    """An AI message's usage: LangChain's ``usage_metadata``, else the provider's in ``response_metadata``
    (OpenAI's ``token_usage``, Anthropic's ``usage``), or ``None``."""
    if data.get("usage_metadata") is not None:
        return _usage(f"{where}, usage_metadata", data["usage_metadata"], "langchain")
    metadata = data.get("response_metadata")
    metadata = metadata if _is_object(metadata) else {}
    for key in ("token_usage", "usage"):
        usage = metadata.get(key)
        if _is_object(usage):
            shape = "chat" if "prompt_tokens" in usage else "anthropic"
            return _usage(f"{where}, response_metadata.{key}", usage, shape, f"LangChain response_metadata.{key}")
    return None


def _from_items(items: Any, builder: _Builder, *, label: str = "message") -> _Builder:
    if not isinstance(items, (list, tuple)):
        raise _Malformed(f"holds {label}s of type {type(items).__name__}, not a list ({ACCEPTED})")
    for index, item in enumerate(items):
        _read_item(builder, f"{label} {index}", item)
    return builder


def _kind(value: Mapping[str, Any]) -> str | None:
    """The ``type`` of an item or part, when it is text."""
    kind = value.get("type")
    return kind if isinstance(kind, str) else None


def _is_message(item: Any) -> bool:
    """Whether a list item is a message or a Responses item (else it is a call, in :func:`read_tool_calls`)."""
    if not _is_object(item):
        return False
    kind = _kind(item)
    return (
        "role" in item
        or "lc" in item
        or kind in _LANGCHAIN_ROLES
        or kind in ("message", "function_call_output")
        or kind in _SKIPPED_ITEMS
        or ("jsonrpc" in item and item.get("method") != "tools/call")  # MCP: a response, or another method
    )


def _is_part(item: Any) -> bool:
    """Whether a list item is a content block that is no call (text, an image, a tool result): the list is then
    one message's content."""
    if not _is_object(item):
        return False
    kind = _kind(item)
    return kind is not None and (
        kind in _TEXT_PARTS
        or kind in _ATTACHMENT_PARTS
        or kind in _SKIPPED_PARTS
        or kind == "tool_result"
        or kind.endswith("_tool_result")
    )


def _read_item(builder: _Builder, where: str, item: Any) -> None:
    if not _is_object(item):
        raise _Malformed(f"at {where}: is of type {type(item).__name__}, not a message object")
    kind = _kind(item)
    if "lc" in item:
        _read_langchain(builder, where, *_langchain_serialised(where, item))
    elif kind in _LANGCHAIN_ROLES and "role" not in item:
        data = item.get("data")
        _read_langchain(builder, where, kind, data if _is_object(data) else item)
    elif kind == "function_call":
        builder.add_calls(where, (_call(where, item),))
    elif kind == "mcp_call":
        _read_mcp_call(builder, where, item)
    elif "jsonrpc" in item:
        _read_rpc(builder, where, item)
    elif kind == "function_call_output":
        builder.add(
            where, Message("tool", _result(where, item.get("output")), tool_call_id=_id(where, item.get("call_id")))
        )
    elif kind in _SKIPPED_ITEMS:
        return
    elif "role" in item:
        _read_role_message(builder, where, item)
    else:
        raise _Malformed(f"at {where}: has no 'role' and an unknown type {kind!r} ({ACCEPTED})")


def _read_role_message(builder: _Builder, where: str, item: Mapping[str, Any]) -> None:
    """An OpenAI chat, Responses or Anthropic message: ``role``, ``content`` (text or parts), ``tool_calls``."""
    role = item["role"]
    if role == "function":  # OpenAI's legacy function result: answers the last call by name, not id
        builder.add(
            where, Message("tool", _result(where, item.get("content")), name=_text(where, "name", item.get("name")))
        )
        return
    if role not in ROLES:
        raise _Malformed(
            f"at {where}: unknown role {_shown(role)} (accepted: {', '.join(ROLES)}, and the legacy function)"
        )
    content, attachments, calls, results = _parts(where, item.get("content"))
    calls += _calls(where, item.get("tool_calls"))
    if item.get("function_call") is not None:
        calls.append(_call(f"{where}, function_call", item["function_call"]))
    earlier, own = _split_results(results, calls)
    for result_where, result in earlier:
        builder.add(result_where, result)
    if results and content is None and not calls:
        return
    if role == "assistant":
        builder.response(_message_usage(where, item))
    builder.add(
        where,
        Message(
            role,
            content,
            tuple(calls),
            tool_call_id=_id(where, item.get("tool_call_id")),
            name=_text(where, "name", item.get("name")),
            is_error=item.get("is_error") is True,
            attachments=attachments,
        ),
    )
    for result_where, result in own:
        builder.add(result_where, result)


def _split_results(
    results: list[tuple[str, Message]], calls: Sequence[ToolCall]
) -> tuple[list[tuple[str, Message]], list[tuple[str, Message]]]:
    """A message's tool results: those answering earlier calls (a user message's), then those answering the
    message's own calls (a server or MCP tool that ran within the response: they follow the message)."""
    own = {call.id for call in calls if call.id is not None}
    return [r for r in results if r[1].tool_call_id not in own], [r for r in results if r[1].tool_call_id in own]


def _langchain_serialised(where: str, item: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The type and fields of a message in LangChain's serialised form (``{"lc": 1, "id": [..., class], ...}``)."""
    path, kwargs = item.get("id"), item.get("kwargs")
    name = path[-1] if isinstance(path, list) and path else None
    kind = _LANGCHAIN_CLASSES.get(str(name).removesuffix("Chunk"))
    if kind is None or not _is_object(kwargs):
        raise _Malformed(
            f"at {where}: a LangChain serialised object of class {_shown(name)}, not a message with 'kwargs' "
            f"(accepted: {', '.join(_LANGCHAIN_CLASSES)})"
        )
    return kind, kwargs


def _read_langchain(builder: _Builder, where: str, kind: str, data: Mapping[str, Any]) -> None:
    role = _LANGCHAIN_ROLES[kind] or data.get("role")
    if role not in ROLES:
        raise _Malformed(f"at {where}: unknown role {_shown(role)} (accepted: {', '.join(ROLES)})")
    invalid = data.get("invalid_tool_calls")
    if invalid:
        bad = invalid[0] if isinstance(invalid, list) and _is_object(invalid[0]) else {}
        raise _Malformed(
            f"at {where}: LangChain could not parse a call ({_shown(bad.get('name'))}): {_shown(bad.get('error'), str)}"
        )
    content, attachments, content_calls, results = _parts(where, data.get("content"))
    extra = data.get("additional_kwargs")
    extra = extra if _is_object(extra) else {}
    # the calls LangChain parsed; the provider's own (in the content, or OpenAI's in additional_kwargs) repeat them
    calls = _calls(where, data.get("tool_calls") or extra.get("tool_calls")) or content_calls
    earlier, own = _split_results(results, [*calls, *content_calls])
    for result_where, result in earlier:
        builder.add(result_where, result)
    if role == "assistant":
        builder.response(_langchain_usage(where, data))
    builder.add(
        where,
        Message(
            role,
            content,
            tuple(calls),
            tool_call_id=_id(where, data.get("tool_call_id")),
            name=_text(where, "name", data.get("name")),
            is_error=data.get("status") == "error",
            attachments=attachments,
        ),
    )
    for result_where, result in own:
        builder.add(result_where, result)


def _parts(
    where: str, content: Any
) -> tuple[str | None, tuple[Attachment, ...], list[ToolCall], list[tuple[str, Message]]]:
    """A message's text, its attachments (images, audio, documents; a file stored with the provider, named by an
    id, is skipped: its bytes are not here), and the calls and tool results among its content blocks (Anthropic,
    LangChain)."""
    if content is None or isinstance(content, str):
        return content, (), [], []
    if not isinstance(content, (list, tuple)):
        raise _Malformed(f"at {where}: content is of type {type(content).__name__}, not text or a list of parts")
    texts: list[str] = []
    attachments: list[Attachment] = []
    calls: list[ToolCall] = []
    results: list[tuple[str, Message]] = []
    for index, part in enumerate(content):
        part_where = f"{where}, part {index}"
        if isinstance(part, str):
            texts.append(part)
            continue
        kind = _kind(part) if _is_object(part) else None
        if kind is None:
            raise _Malformed(f"at {part_where}: a content part with no type")
        if kind in _TEXT_PARTS:
            texts.append(_text(part_where, _TEXT_PARTS[kind], part.get(_TEXT_PARTS[kind])) or "")
        elif kind in _ATTACHMENT_PARTS:
            if not is_hosted(part):
                attachments.append(_attachment(part_where, part))
        elif kind in ("tool_use", "tool_call") or kind.endswith("_tool_use"):  # and server_tool_use, mcp_tool_use
            calls.append(_call(part_where, part))
        elif kind == "tool_result" or kind.endswith("_tool_result"):
            result = Message(
                "tool",
                _result(part_where, part.get("content")),
                tool_call_id=_id(part_where, part.get("tool_use_id")),
                is_error=bool(part.get("is_error")),
            )
            results.append((part_where, result))
        elif kind not in _SKIPPED_PARTS:
            raise _Malformed(f"at {part_where}: a content part of unknown type {kind!r}")
    return ("\n".join(texts) if texts else None), tuple(attachments), calls, results


def _attachment(where: str, part: Mapping[str, Any]) -> Attachment:
    try:
        return Attachment.from_part(part)
    except AttachmentError as exc:
        raise _Malformed(f"at {where}: {exc}") from None


def _calls(where: str, calls: Any) -> list[ToolCall]:
    if calls is None:
        return []
    if not isinstance(calls, (list, tuple)):
        raise _Malformed(f"at {where}: tool_calls is of type {type(calls).__name__}, not a list")
    return [_call(f"{where}, call {index}", call) for index, call in enumerate(calls)]


def _call(where: str, item: Any) -> ToolCall:
    """One call, in any call shape: OpenAI's ``function``, flat ``name`` + arguments (as text or an object)."""
    if not _is_object(item):
        raise _Malformed(f"at {where}: is of type {type(item).__name__}, not a call object")
    if item.get("method") == "tools/call":  # MCP's JSON-RPC request: the call is its params
        return _rpc_call(where, item)
    function = item.get("function")
    source = function if _is_object(function) else item
    name = source.get("name")
    if not isinstance(name, str) or not name:
        raise _Malformed(f"at {where}: a call with no name")
    where = f"{where} ({name!r})"
    arguments = None
    for key in _ARGUMENT_KEYS:
        if key in source:
            arguments = source[key]
            break
    call_id = item.get("call_id")
    if call_id is None:
        call_id = item.get("id")
    if _kind(item) not in _MCP_CALLS:
        return ToolCall(name, _arguments(where, arguments), _id(where, call_id))
    server = item.get("server_label", item.get("server_name"))
    return ToolCall(
        name, _arguments(where, arguments), _id(where, call_id), "mcp", _text(where, "server label", server)
    )


def _rpc_id(where: str, value: Any) -> str | None:
    """A JSON-RPC id (text or a number) as text."""
    return str(value) if type(value) is int else _id(where, value)


def _rpc_call(where: str, request: Mapping[str, Any]) -> ToolCall:
    """An MCP ``tools/call`` request (``{"jsonrpc": "2.0", "id", "method": "tools/call", "params": {"name",
    "arguments"}}``) as an MCP call."""
    params = request.get("params")
    if not _is_object(params):
        raise _Malformed(f"at {where}: a tools/call request with no params object")
    call = _call(where, {"name": params.get("name"), "arguments": params.get("arguments")})
    return replace(call, id=_rpc_id(where, request.get("id")), kind="mcp")


def _read_rpc(builder: _Builder, where: str, item: Mapping[str, Any]) -> None:
    """A JSON-RPC message of MCP: a ``tools/call`` request is a call, the response to one (``result``: ``content``
    and ``isError``; or an ``error``) its result; any other request, notification or response is skipped."""
    if item.get("method") == "tools/call":
        builder.add_calls(where, (_rpc_call(where, item),))
        return
    call_id = _rpc_id(where, item.get("id"))
    if "method" in item or call_id is None or call_id not in builder.call_ids:
        return  # another method (tools/list, initialize, ...), or the answer to one
    result, error = item.get("result"), item.get("error")
    if _is_object(result) and "content" in result:
        builder.add(
            where,
            Message(
                "tool", _result(where, result["content"]), tool_call_id=call_id, is_error=result.get("isError") is True
            ),
        )
    elif _is_object(error):
        builder.add(where, Message("tool", _result(where, error.get("message")), tool_call_id=call_id, is_error=True))


def _read_mcp_call(builder: _Builder, where: str, item: Mapping[str, Any]) -> None:
    """A Responses ``mcp_call`` item: the call, and its result where it ran (``output``, or an ``error``: text in
    older versions, an object since)."""
    call = _call(where, item)
    builder.add_calls(where, (call,))
    output, error = item.get("output"), item.get("error")
    if output is None and error is None:
        return
    if error is not None:
        text = _result(where, error.get("message", error.get("content")) if _is_object(error) else error)
    else:
        text = _result(where, output)
    failed = error is not None or item.get("status") == "failed"
    builder.add(where, Message("tool", text, tool_call_id=call.id, name=call.name, is_error=failed))


def _arguments(where: str, arguments: Any) -> Any:
    """Arguments, parsed when given as JSON text (blank text is no arguments), and frozen."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return FrozenDict()
    if not isinstance(arguments, str):
        return freeze(arguments)
    try:  # json.loads is the one to say that text starts with a byte order mark
        parsed = json.loads(arguments) if arguments.startswith("\ufeff") else _FROZEN_JSON.decode(arguments)
    except ValueError as exc:
        raise _Malformed(f"at {where}: arguments are not valid JSON ({_json_problem(exc)})") from None
    return freeze(parsed) if "[" in arguments else parsed  # without arrays, the decoder's objects are frozen


def _id(where: str, value: Any) -> str | None:
    return _text(where, "id", value)


def _text(where: str, key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _Malformed(f"at {where}: {key} is of type {type(value).__name__}, not text")


def _content(where: str, value: Any) -> str | None:
    content, attachments, calls, results = _parts(where, value)
    if calls or results or attachments:
        raise _Malformed(f"at {where}: holds tool calls, results or attachments, which only messages may hold")
    return content


def _result(where: str, value: Any) -> str | None:
    """A tool's result as text: text as it is, a list of text parts joined, any other JSON value as JSON text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(_is_object(p) and _kind(p) in _TEXT_PARTS for p in value):
        return "\n".join(str(p.get(_TEXT_PARTS[p["type"]], "")) for p in value)
    return _json_text(where, "tool result", value)


def _json_text(where: str, key: str, value: Any) -> str:
    """``value`` as JSON text (a value of another type as its ``str``); an integer too long to write is an error."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # only an integer past sys.get_int_max_str_digits()
        raise _Malformed(
            f"at {where}: the {key} holds an integer of more than {sys.get_int_max_str_digits():,} digits, more "
            "than Python writes as text (sys.set_int_max_str_digits raises the limit)"
        ) from None


def _check_message_text(where: str, message: Message) -> None:
    for key in ("content", "name", "tool_call_id"):
        _check_utf8(where, key, getattr(message, key))
    for index, call in enumerate(message.tool_calls):
        _check_call_text(f"{where}, call {index}", call)


def _check_call_text(where: str, call: ToolCall) -> None:
    _check_utf8(where, "name", call.name)
    _check_utf8(where, "id", call.id)
    if not _encodable(call.arguments):  # then its JSON text holds a lone surrogate or a too long integer
        _check_utf8(where, "arguments", _json_text(where, "arguments", call.arguments))


def _encodable(value: Any) -> bool:
    """Whether frozen JSON surely has UTF-8-encodable JSON text: every string (keys too) encodes and every value
    is of a JSON type (anything else is dumped as its ``str``, checked with the rest)."""
    kind = type(value)
    if kind is FrozenDict:
        for key in value:
            if type(key) is not str or not (key.isascii() or _encodes(key)):
                return False
        return _all_encodable(value.values())
    return _all_encodable((value,) if kind is not tuple else value)


def _all_encodable(values: Iterable[Any]) -> bool:
    for value in values:  # the leaves here, without a call each
        kind = type(value)
        if kind is str:
            if not (value.isascii() or _encodes(value)):
                return False
        elif kind is FrozenDict or kind is tuple:
            if not _encodable(value):
                return False
        elif kind is int:
            if value.bit_length() > 3.3 * (sys.get_int_max_str_digits() or 1 << 62):  # perhaps too long to write
                return False
        elif not (kind is float or kind is bool or value is None):
            return False
    return True


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _check_utf8(where: str, key: str, text: str | None) -> None:
    if text is None:
        return
    try:
        utf8_encodable(text)
    except ValueError as exc:
        raise _Malformed(f"at {where}: the {key} {exc}") from None
