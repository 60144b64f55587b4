"""What a wire protocol reads a reply into: :class:`ChatResult` (with its :class:`ToolCall` and
:class:`TokenLogprob` parts), :func:`reply_result` that builds it, and the small readers every protocol shares.
:class:`InvalidReply` says a reply cannot be used (the engine asks again). Re-exported by
:mod:`scorers.llm.protocol`, the public home of these types.

>>> reply_result({"model": "m-1"}, Tokens(3, 1), model="m", content="A", calls=(), finish_reason="stop").prompt_tokens
3
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, NamedTuple, Sequence

from ..._util import json_loads

__all__ = [
    "Tokens",
    "ChatResult",
    "InvalidReply",
    "LOGPROB_SLACK",
    "TokenLogprob",
    "ToolCall",
    "arguments_text",
    "logprob",
    "put",
    "reply_result",
    "usage_count",
]


class Tokens(NamedTuple):
    """The token counts a reply states: ``prompt`` (every input token billed, cached ones included),
    ``completion`` (every output token billed, thinking included), and of those ``cached_prompt`` (read from the
    provider's prompt cache) and ``reasoning`` (thinking). ``0`` for what the reply does not state."""

    prompt: int = 0
    completion: int = 0
    cached_prompt: int = 0
    reasoning: int = 0


#: How far above 0 a log-probability may be (a server's rounding): more is no log-probability.
LOGPROB_SLACK = 1e-3


class InvalidReply(Exception):
    """Raised by a ``validate`` callable when a reply cannot be used; the engine re-asks."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def put(body: dict[str, Any], name: str, value: Any) -> None:
    """Set ``body[name]`` unless ``value`` is ``None`` (not sent)."""
    if value is not None:
        body[name] = value


@dataclass(frozen=True)
class ToolCall:
    """A tool call of the reply: the function ``name`` and its raw JSON ``arguments`` string."""

    name: str
    arguments: str
    id: str | None = None

    def parse_arguments(self) -> Any:
        """The arguments as JSON; raises :class:`InvalidReply` when they are not valid JSON."""
        try:
            return json_loads(self.arguments)
        except ValueError as exc:
            raise InvalidReply(f"tool {self.name!r} was called with malformed JSON arguments: {exc}") from None


@dataclass(frozen=True)
class TokenLogprob:
    """One content token of the reply: its ``logprob`` and the ``top`` alternatives ``(token, logprob)``.

    >>> TokenLogprob("4", -0.1, (("4", -0.1), ("3", -2.5))).to_dict()
    {'token': '4', 'logprob': -0.1, 'top': [['4', -0.1], ['3', -2.5]]}
    """

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "logprob": self.logprob, "top": [list(pair) for pair in self.top]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TokenLogprob":
        return cls(data["token"], float(data["logprob"]), tuple((str(t), float(lp)) for t, lp in data["top"]))


@dataclass(frozen=True)
class ChatResult:
    """The assistant's reply and what it cost (see the module docstring)."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    model: str
    response_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    #: Of ``prompt_tokens``/``completion_tokens``: those of replies that were not used (unreadable, or refused by
    #: ``validate`` and asked again).
    failed_prompt_tokens: int = 0
    failed_completion_tokens: int = 0
    reasks: int = 0
    cached: bool = False
    parsed: Any = None
    sent: Mapping[str, Any] = field(default_factory=dict)
    logprobs: tuple[TokenLogprob, ...] | None = None
    #: Of ``prompt_tokens``: those the provider read from its prompt cache; of ``completion_tokens``: thinking.
    cached_prompt_tokens: int = 0
    reasoning_tokens: int = 0
    #: The reply's own reasoning text (a thinking block, ``reasoning_content``), kept apart from ``content``.
    reasoning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (``parsed`` is left out: it may not be JSON; the figures of :data:`_OPTIONAL_FIELDS`
        only when set, so the form of a reply without them is what it was before they existed)."""
        return {
            "content": self.content,
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "model": self.model,
            "response_model": self.response_model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "failed_prompt_tokens": self.failed_prompt_tokens,
            "failed_completion_tokens": self.failed_completion_tokens,
            "latency_s": self.latency_s,
            "attempts": self.attempts,
            "reasks": self.reasks,
            "cached": self.cached,
            "sent": dict(self.sent),
            "logprobs": None if self.logprobs is None else [t.to_dict() for t in self.logprobs],
            **{name: getattr(self, name) for name in _OPTIONAL_FIELDS if getattr(self, name)},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **changes: Any) -> "ChatResult":
        """The inverse of :meth:`to_dict`; ``changes`` replace fields of ``data`` (as :func:`dataclasses.replace`).

        >>> ChatResult.from_dict({"content": "A", "tool_calls": [], "finish_reason": "stop", "model": "m"},
        ...                      cached=True).cached
        True
        """
        values = {**data, **changes}
        values["tool_calls"] = tuple(map(_tool_call, values.get("tool_calls") or ()))
        if values.get("logprobs") is not None:
            values["logprobs"] = tuple(TokenLogprob.from_dict(t) for t in values["logprobs"])
        if _REQUIRED_FIELDS.issubset(values) and _STORED_FIELDS.issuperset(values):  # a whole to_dict() form, such
            result = object.__new__(cls)  # as a cache entry: the instance is filled as the frozen __init__ fills
            filled = result.__dict__  # it, without the call of 19 arguments (microseconds of every cache hit)
            filled.update(_OPTIONAL_DEFAULTS)
            filled.update(values)
            filled["parsed"] = None
            return result
        return cls(**values)


def _tool_call(call: Mapping[str, Any]) -> ToolCall:
    """``ToolCall(**call)``; a stored call's form (``name``, ``arguments`` and ``id``, of their types) is filled in
    as the frozen ``__init__`` fills it, without its three ``object.__setattr__`` calls (every cache hit has one)."""
    if len(call) == 3 and type(call.get("name")) is str and type(call.get("arguments")) is str:
        ident = call.get("id", ...)
        if ident is None or type(ident) is str:
            made = object.__new__(ToolCall)
            made.__dict__.update(call)
            return made
    return ToolCall(**call)


#: The fields :meth:`ChatResult.to_dict` writes only when they are set.
_OPTIONAL_FIELDS = ("cached_prompt_tokens", "reasoning_tokens", "reasoning")
_OPTIONAL_DEFAULTS = {name: ChatResult.__dataclass_fields__[name].default for name in _OPTIONAL_FIELDS}
#: The fields :meth:`ChatResult.to_dict` writes: all but ``parsed``; always, all but the optional ones.
_STORED_FIELDS = frozenset(f.name for f in fields(ChatResult)) - {"parsed"}
_REQUIRED_FIELDS = _STORED_FIELDS - set(_OPTIONAL_FIELDS)


def reply_result(
    data: Mapping[str, Any],
    tokens: Tokens,
    *,
    model: str,
    content: str | None,
    calls: Sequence[ToolCall],
    finish_reason: str | None,
    logprobs: Any = None,
    reasoning: str | None = None,
) -> ChatResult:
    """The :class:`ChatResult` of what a protocol's parser read from a reply body: the reply's own model
    (``data["model"]``), its ``tokens`` (:meth:`~scorers.llm.protocols.WireProtocol.tokens`), and ``logprobs`` in
    the chat shape ``[{token, logprob, top_logprobs: [{token, logprob}]}]`` (``None``: none sent)."""
    return ChatResult(
        content=content,
        tool_calls=tuple(calls),
        finish_reason=finish_reason,
        model=model,
        response_model=data.get("model"),
        prompt_tokens=tokens.prompt,
        completion_tokens=tokens.completion,
        cached_prompt_tokens=tokens.cached_prompt,
        reasoning_tokens=tokens.reasoning,
        logprobs=None if logprobs is None else _token_logprobs(logprobs),
        reasoning=reasoning,
    )


def usage_count(usage: Any, name: str) -> int:
    """``usage[name]`` as a count of tokens: ``0`` when ``usage`` is no mapping or the value is missing, negative or
    no integer.

    >>> usage_count({"a": "7", "b": -1, "c": "x"}, "a"), usage_count({"b": -1}, "b"), usage_count(None, "a")
    (7, 0, 0)
    """
    if not isinstance(usage, Mapping):
        return 0
    try:
        return max(0, int(usage.get(name) or 0))
    except (TypeError, ValueError):
        return 0


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments as JSON text: a string as it came, an object (what Anthropic, Gemini and Bedrock
    send, and some OpenAI-compatible servers) as its ``json.dumps``, so the result equals chat's for the same
    verdict.

    >>> arguments_text({"choice": "A"}), arguments_text('{"choice": "A"}')
    ('{"choice": "A"}', '{"choice": "A"}')
    """
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def logprob(value: Any) -> float:
    """``value`` as a log-probability: a number at most :data:`LOGPROB_SLACK` (a server's rounding above 0),
    ``-inf`` allowed; a :class:`ValueError` otherwise (NaN, ``1000``: a probability far above 1).

    >>> logprob(-0.25), logprob("-1")
    (-0.25, -1.0)
    >>> logprob(1000)
    Traceback (most recent call last):
    ...
    ValueError: 1000 is not a log-probability (a number <= 0)
    """
    number = float(value)
    if not number <= LOGPROB_SLACK:
        raise ValueError(f"{value!r} is not a log-probability (a number <= 0)")
    return number


def _token_logprobs(tokens: Any) -> tuple[TokenLogprob, ...]:
    """``[{token, logprob, top_logprobs: [{token, logprob}]}]`` (the chat shape) as :class:`TokenLogprob`s."""
    try:
        return tuple(
            TokenLogprob(
                str(t["token"]),
                logprob(t["logprob"]),
                tuple((str(a["token"]), logprob(a["logprob"])) for a in t.get("top_logprobs") or ()),
            )
            for t in tokens
        )
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise InvalidReply(
            f"the reply's logprobs are malformed ({type(exc).__name__}: {exc}): {str(tokens)[:200]!r}"
        ) from None
