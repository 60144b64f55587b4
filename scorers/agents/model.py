"""The one value type every agent and conversation scorer reads.

A conversation is a tuple of :class:`Message` s in the OpenAI chat roles; an
assistant message carries :class:`ToolCall` s with parsed arguments, and a
``tool`` message answers one call by its id. Readers in
:mod:`scorers.agents.readers` build it from the formats users have (OpenAI chat
and Responses, Anthropic, LangChain, OpenTelemetry GenAI spans).

Values are frozen all the way down: argument objects are :class:`FrozenDict`
(a read-only ``dict``) and arrays are tuples, so a conversation can be shared,
hashed and pickled, and JSON-dumps as it was read.

>>> call = ToolCall("get_weather", freeze({"city": "Paris", "days": [1, 2]}), id="c1")
>>> call.arguments["days"]
(1, 2)
>>> conv = Conversation((Message("user", "Weather?"), Message("assistant", None, (call,)),
...                      Message("tool", "18C", tool_call_id="c1")))
>>> [c.name for c in conv.tool_calls], conv.result_of(call).content
(['get_weather'], '18C')
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from scorers.attachments import Attachment

__all__ = [
    "ROLES",
    "FrozenDict",
    "freeze",
    "thaw",
    "jsonable",
    "ToolCall",
    "Message",
    "Usage",
    "Conversation",
]

#: The roles a :class:`Message` may have (OpenAI's chat roles; ``developer`` is the newer name of ``system``).
ROLES = ("system", "developer", "user", "assistant", "tool")


class FrozenDict(dict[str, Any]):
    """A read-only ``dict``: JSON-dumps, pickles and compares like a dict, and is hashable."""

    __slots__ = ()

    def _readonly(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a FrozenDict is read-only (scorers.agents values are frozen); copy it with dict(value)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(json.dumps(self, sort_keys=True, default=repr))

    def __reduce__(self) -> tuple[Any, ...]:
        return FrozenDict, (dict(self),)

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


#: Scalars that freeze and thaw keep as they are: checked by exact type before the abstract checks (an
#: ``isinstance`` against ``Mapping`` costs several times an exact ``type(value) is dict``).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """A JSON value made immutable: objects become :class:`FrozenDict`, arrays tuples; scalars are kept."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or kind is FrozenDict or isinstance(value, Mapping):
        return FrozenDict({str(k): freeze(v) for k, v in value.items()})
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return tuple([freeze(v) for v in value])
    return value


def thaw(value: Any) -> Any:
    """The plain JSON value again (``dict`` and ``list``), e.g. for a results file's metadata."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is FrozenDict or kind is dict or isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if kind is tuple or kind is list or isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


#: How :func:`jsonable` writes the floats JSON has no number for.
_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def jsonable(value: Any) -> Any:
    """:func:`thaw`, with NaN and the infinities as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``:
    what a scorer's metadata holds, so that a results file stays JSON (Python reads and writes a bare ``NaN``,
    which JSON does not have).

    >>> jsonable(freeze({"x": [float("nan"), 1.5, float("-inf")]}))
    {'x': ['NaN', 1.5, '-Infinity']}
    """
    kind = type(value)
    if kind is float:
        return value if value - value == 0.0 else _NON_FINITE.get(value, "NaN")
    if kind in _SCALARS:
        return value
    if kind is FrozenDict or kind is dict or isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if kind is tuple or kind is list or isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


@dataclass(frozen=True, repr=False)
class ToolCall:
    """One call of a tool: its ``name``, its parsed ``arguments`` (frozen JSON, usually an object) and its ``id``;
    ``kind``: ``"function"``, or ``"mcp"`` for a tool of a Model Context Protocol server (Anthropic's
    ``mcp_tool_use``, Responses' ``mcp_call``, a JSON-RPC ``tools/call``), with the ``server`` label where the
    format gives one. Two calls of one name and different kinds are different calls.

    >>> ToolCall("search", id="t1", kind="mcp", server="docs")
    ToolCall(name='search', arguments=FrozenDict({}), id='t1', kind='mcp', server='docs')
    """

    name: str
    arguments: Any = field(default_factory=FrozenDict)
    id: str | None = None
    kind: str = "function"
    server: str | None = None

    def __repr__(self) -> str:  # the kind and server only when not the defaults: a function call reads as before
        extra = f", kind={self.kind!r}" if self.kind != "function" else ""
        extra += f", server={self.server!r}" if self.server is not None else ""
        return f"ToolCall(name={self.name!r}, arguments={self.arguments!r}, id={self.id!r}{extra})"

    def to_dict(self) -> dict[str, Any]:
        """The call in the OpenAI chat format (arguments as a JSON string); an MCP call has ``"type": "mcp"`` and
        its ``server_label``, which the readers read back."""
        out: dict[str, Any] = {
            "type": self.kind,
            "function": {"name": self.name, "arguments": json.dumps(thaw(self.arguments))},
        }
        if self.server is not None:
            out["server_label"] = self.server
        if self.id is not None:
            out["id"] = self.id
        return out


@dataclass(frozen=True)
class Message:
    """One message: ``role`` (one of :data:`ROLES`), its text ``content`` (``None`` when it has none), the
    ``tool_calls`` an assistant message makes, and for a ``tool`` message the ``tool_call_id`` it answers, the
    ``name`` of the tool, and ``is_error`` when the tool failed (Anthropic's ``is_error``, LangChain's
    ``status: "error"``, an OpenTelemetry span with an error status); ``attachments``: the images, audio and
    documents among its content parts (:class:`~scorers.attachments.Attachment`), after its text."""

    role: str
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    attachments: tuple[Attachment, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The message in the OpenAI chat format (content parts when it has attachments: its text, then theirs)."""
        content: Any = self.content
        if self.attachments:
            text = [{"type": "text", "text": self.content}] if self.content else []
            content = text + [attachment.part() for attachment in self.attachments]
        out: dict[str, Any] = {"role": self.role, "content": content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.is_error:
            out["is_error"] = True
        return out


#: The token counts of :class:`Usage`, as its fields name them.
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _plus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class Usage:
    """The tokens of the model responses a value holds, summed: ``input_tokens`` (every input token, cached ones
    included), ``output_tokens`` (reasoning included), and of the input ``cache_read_tokens`` and
    ``cache_write_tokens``; a count is ``None`` when a response did not carry it (never 0 in its place).
    ``responses``: the model responses counted; ``reported``: those that carried a usage; ``source``: where the
    format keeps it (e.g. ``ChatCompletion usage``), and ``missing``: the field a count was read from, per count
    that is ``None``.

    >>> one = Usage(100, 20, 0, None, source="ChatCompletion usage")
    >>> total = one + Usage(150, 30, 50, None, source="ChatCompletion usage")
    >>> total.input_tokens, total.total_tokens, total.cache_read_tokens, total.cache_write_tokens, total.responses
    (250, 300, 50, None, 2)
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    responses: int = 1
    reported: int = 1
    source: str = ""
    missing: FrozenDict = field(default_factory=FrozenDict)

    @property
    def total_tokens(self) -> int | None:
        """Input and output tokens together."""
        return _plus(self.input_tokens, self.output_tokens)

    def __add__(self, other: Usage) -> Usage:
        sources = [s for s in (self.source, other.source) if s]
        return Usage(
            **{name: _plus(getattr(self, name), getattr(other, name)) for name in TOKEN_FIELDS},
            responses=self.responses + other.responses,
            reported=self.reported + other.reported,
            source=sources[0] if len(set(sources)) == 1 else ", ".join(dict.fromkeys(sources)),
            missing=FrozenDict({**other.missing, **self.missing}),
        )

    def to_dict(self) -> dict[str, Any]:
        """The counts and their provenance, as a scorer's metadata holds them."""
        out: dict[str, Any] = {name: getattr(self, name) for name in TOKEN_FIELDS}
        out["total_tokens"] = self.total_tokens
        out.update(responses=self.responses, reported=self.reported, source=self.source)
        return out


@dataclass(frozen=True)
class Conversation:
    """A normalised conversation: its messages, in order; ``usage``: the tokens its model responses took, summed
    once per response (``None`` when the value carried none; not compared: two readings of one conversation are
    equal whether or not their format kept usage)."""

    messages: tuple[Message, ...] = ()
    usage: Usage | None = field(default=None, compare=False)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every call the assistant made, in order, across all its messages."""
        return tuple(call for message in self.messages for call in message.tool_calls)

    def result_of(self, call: ToolCall) -> Message | None:
        """The ``tool`` message answering ``call`` (by id), or ``None`` if it has none."""
        if call.id is None:
            return None
        return next((m for m in self.messages if m.role == "tool" and m.tool_call_id == call.id), None)

    def by_role(self, *roles: str) -> tuple[Message, ...]:
        """The messages with one of ``roles``, in order."""
        return tuple(m for m in self.messages if m.role in roles)

    def to_list(self) -> list[dict[str, Any]]:
        """The conversation in the OpenAI chat format (what a results file or JSONL input holds)."""
        return [m.to_dict() for m in self.messages]
