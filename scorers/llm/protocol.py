"""What goes over the wire: a request in the chat shape, its body for either API, and the parsed reply.

:class:`ChatRequest` is independent of credentials and endpoint; :meth:`ChatRequest.body` gives the JSON
body for the chat-completions API or the Responses API (tools, tool choice, response format and logprobs
converted, reasoning models sent no sampling settings). :func:`parse_reply` reads either API's reply into
a :class:`ChatResult`. See :mod:`scorers.llm.engine` for how requests are sent.

>>> body = ChatRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=50).body("o4-mini", api="responses")
>>> body["input"], body["max_output_tokens"], "temperature" in body
([{'role': 'user', 'content': 'Hi'}], 50, False)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping, Sequence

from .._util import json_loads, memoize
from ..errors import ConfigError
from .config import APIS, is_reasoning_model

__all__ = [
    "ChatRequest",
    "ChatResult",
    "ToolCall",
    "TokenLogprob",
    "InvalidReply",
    "parse_reply",
    "reply_tokens",
    "logprob",
    "LOGPROB_SLACK",
    "engine_owned_keys",
    "extra_conflict",
]


#: Body keys that are the request's content, not its generation settings (left out of ``ChatResult.sent``).
_CONTENT_KEYS = frozenset({"model", "messages", "input", "tools", "tool_choice", "response_format"})


#: How far above 0 a log-probability may be (a server's rounding): more is no log-probability.
LOGPROB_SLACK = 1e-3

#: What the Responses API is asked to include for output-text log-probabilities.
_RESPONSES_LOGPROBS = "message.output_text.logprobs"


class InvalidReply(Exception):
    """Raised by a ``validate`` callable when a reply cannot be used; the engine re-asks."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ChatRequest:
    """One request, independent of credentials, endpoint and API (see the module docstring)."""

    messages: Sequence[Mapping[str, Any]]
    model: str | None = None
    tools: Sequence[Mapping[str, Any]] | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    response_format: Mapping[str, Any] | None = None
    seed: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    cache_tag: str | None = None
    reasoning_effort: str | None = None
    logprobs: bool = False
    top_logprobs: int | None = None
    api: str | None = None

    def __post_init__(self) -> None:
        conflict = extra_conflict(self.extra) if self.extra else None
        if conflict:
            raise ConfigError(f"ChatRequest extra {conflict}")
        if self.api is not None and self.api not in APIS:
            raise ConfigError(f"ChatRequest api must be one of {', '.join(APIS)} or None, got {self.api!r}")
        if self.top_logprobs is not None and not self.logprobs:
            raise ConfigError("ChatRequest top_logprobs needs logprobs=True")

    def body(self, model: str, *, api: str = "chat", reasoning: bool | None = None) -> dict[str, Any]:
        """The JSON body sent (and hashed for the cache).

        ``model`` and ``api`` apply when the request names none; ``reasoning=None``
        derives it from the model name (:func:`~scorers.llm.config.is_reasoning_model`).

        >>> request = ChatRequest(messages=[{"role": "user", "content": "Hi"}], temperature=0, max_tokens=9)
        >>> request.body("gpt-4o-mini")
        {'model': 'gpt-4o-mini', 'messages': [{'role': 'user', 'content': 'Hi'}], 'temperature': 0, 'max_tokens': 9}
        >>> request.body("o3", api="responses")
        {'model': 'o3', 'input': [{'role': 'user', 'content': 'Hi'}], 'max_output_tokens': 9}
        """
        name = self.model or model
        thinks = is_reasoning_model(name) if reasoning is None else reasoning
        messages = [dict(m) for m in self.messages]
        extra = {k: v for k, v in self.extra.items() if not (thinks and k == "top_p")}
        build = self._chat_body if (self.api or api) == "chat" else self._responses_body
        body = build(name, messages, thinks)
        body.update(extra)
        return body

    def _chat_body(self, name: str, messages: list[dict[str, Any]], thinks: bool) -> dict[str, Any]:
        """The chat-completions body (``thinks``: a reasoning model, sent no temperature)."""
        body: dict[str, Any] = {"model": name, "messages": messages}
        _put(body, "tools", None if self.tools is None else list(self.tools))
        _put(body, "tool_choice", self.tool_choice)
        _put(body, "temperature", None if thinks else self.temperature)
        _put(body, "max_completion_tokens" if thinks else "max_tokens", self.max_tokens)
        _put(body, "response_format", self.response_format)
        _put(body, "seed", self.seed)
        _put(body, "reasoning_effort", self.reasoning_effort)
        if self.logprobs:
            body["logprobs"] = True
            _put(body, "top_logprobs", self.top_logprobs)
        return body

    def _responses_body(self, name: str, messages: list[dict[str, Any]], thinks: bool) -> dict[str, Any]:
        """The Responses API body: tools, tool choice and response format converted from the chat shape."""
        body: dict[str, Any] = {"model": name, "input": messages}
        _put(body, "tools", None if self.tools is None else [_responses_tool(t) for t in self.tools])
        _put(body, "tool_choice", _responses_tool_choice(self.tool_choice))
        _put(body, "temperature", None if thinks else self.temperature)
        _put(body, "max_output_tokens", self.max_tokens)
        _put(
            body, "text", None if self.response_format is None else {"format": _responses_format(self.response_format)}
        )
        _put(body, "seed", self.seed)
        _put(body, "reasoning", None if self.reasoning_effort is None else {"effort": self.reasoning_effort})
        if self.logprobs:
            body["include"] = [_RESPONSES_LOGPROBS]
            _put(body, "top_logprobs", self.top_logprobs)
        return body


#: What to set instead of an engine-owned key in ``extra`` (keys without an entry are set by the engine alone).
_INSTEAD = {
    "model": "model=",
    "messages": "prompt= or messages=",
    "input": "prompt= or messages=",
    "instructions": "a system message in messages=",
    "tools": "response_mode=",
    "tool_choice": "response_mode=",
    "response_format": "response_mode=",
    "text": "response_mode=",
    "temperature": "temperature=",
    "max_tokens": "max_tokens=",
    "max_completion_tokens": "max_tokens=",
    "max_output_tokens": "max_tokens=",
    "reasoning_effort": "reasoning_effort=",
    "reasoning": "reasoning_effort=",
    "n": "samples=",
    "api_key": "OPENAI_API_KEY, configure(api_key=) or an engine's api_key=",
    "base_url": "OPENAI_BASE_URL, configure(base_url=) or an engine's base_url=",
}

#: Keys the engine owns besides those :meth:`ChatRequest.body` writes: the client's credentials and endpoint, the
#: Responses API's instructions (the prompt is the template's), ``n`` and ``stream`` (one whole reply is read).
_OWNED_OUTSIDE_BODY = ("api_key", "base_url", "instructions", "n", "stream")


@memoize
def engine_owned_keys() -> frozenset[str]:
    """Every key the engine sets: those :meth:`ChatRequest.body` writes for either API and model kind (found by
    building the body of a request that sets every field, so the set follows that code), and
    ``_OWNED_OUTSIDE_BODY``. ``extra`` may hold none of them.

    >>> sorted(engine_owned_keys() & {"model", "max_output_tokens", "top_p", "api_key"})
    ['api_key', 'max_output_tokens', 'model']
    """
    every_field = ChatRequest(
        messages=[{"role": "user", "content": "x"}],
        model="m",
        tools=[{"type": "function"}],
        tool_choice="auto",
        temperature=0,
        max_tokens=1,
        response_format={"type": "text"},
        seed=0,
        reasoning_effort="low",
        logprobs=True,
        top_logprobs=1,
    )
    written = {
        key
        for api in APIS
        for reasoning in (False, True)
        for key in every_field.body("m", api=api, reasoning=reasoning)
    }
    return frozenset(written - {"seed"}) | frozenset(_OWNED_OUTSIDE_BODY)


def extra_conflict(extra: Mapping[str, Any]) -> str | None:
    """Why ``extra`` may not be sent (it sets keys the engine owns), or ``None`` when it may.

    >>> print(extra_conflict({"top_p": 0.5}))
    None
    >>> print(extra_conflict({"model": "gpt-4o", "stream": True}).split(". ")[0])
    cannot set model (use model=), stream: the engine sets them
    """
    owned = engine_owned_keys()
    clashes = [key for key in extra if key in owned]
    if not clashes:
        return None
    named = ", ".join(f"{key} (use {_INSTEAD[key]})" if key in _INSTEAD else key for key in clashes)
    return (
        f"cannot set {named}: the engine sets {'it' if len(clashes) == 1 else 'them'}. "
        f"Keys the engine owns: {', '.join(sorted(owned))}"
    )


def _put(body: dict[str, Any], name: str, value: Any) -> None:
    if value is not None:
        body[name] = value


def _responses_tool(tool: Mapping[str, Any]) -> Any:
    """A chat-shaped function tool in the Responses shape; ``strict`` is ``False`` unless the tool says
    otherwise (the Responses API's own default is ``True``, which many judge schemas do not satisfy).
    Other tools (already in the Responses shape, built-in tools) are sent as given."""
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, Mapping):
        return tool
    converted: dict[str, Any] = {"type": "function", "name": function.get("name")}
    _put(converted, "description", function.get("description"))
    converted["parameters"] = function.get("parameters", {"type": "object", "properties": {}})
    converted["strict"] = function.get("strict", False)
    return converted


def _responses_tool_choice(choice: str | Mapping[str, Any] | None) -> Any:
    """``{"type": "function", "function": {"name": N}}`` becomes ``{"type": "function", "name": N}``."""
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def _responses_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """A chat ``response_format`` as the Responses API's ``text.format``."""
    schema = response_format.get("json_schema")
    if response_format.get("type") == "json_schema" and isinstance(schema, Mapping):
        return {"type": "json_schema", **schema}
    return dict(response_format)


def sent_settings(body: Mapping[str, Any], api: str) -> dict[str, Any]:
    """The generation settings of ``body`` (``ChatResult.sent``): all but the content keys and ``text.format``."""
    sent: dict[str, Any] = {"api": api}
    for name, value in body.items():
        if name == "text" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k != "format"}
            if not value:
                continue
        if name not in _CONTENT_KEYS:
            sent[name] = value
    return sent


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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (``parsed`` is left out: it may not be JSON)."""
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
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **changes: Any) -> "ChatResult":
        """The inverse of :meth:`to_dict`; ``changes`` replace fields of ``data`` (as :func:`dataclasses.replace`).

        >>> ChatResult.from_dict({"content": "A", "tool_calls": [], "finish_reason": "stop", "model": "m"},
        ...                      cached=True).cached
        True
        """
        values = {**data, **changes}
        values["tool_calls"] = tuple(ToolCall(**call) for call in values.get("tool_calls") or ())
        if values.get("logprobs") is not None:
            values["logprobs"] = tuple(TokenLogprob.from_dict(t) for t in values["logprobs"])
        if values.keys() == _STORED_FIELDS:  # a whole to_dict() form, such as a cache entry: the instance is
            result = object.__new__(cls)  # filled as the frozen __init__ fills it, without the call of 16
            result.__dict__.update(values, parsed=None)  # arguments (microseconds of every cache hit)
            return result
        return cls(**values)


#: The fields :meth:`ChatResult.to_dict` writes: all but ``parsed``.
_STORED_FIELDS = frozenset(f.name for f in fields(ChatResult)) - {"parsed"}


def _parse_chat(data: Any, *, model: str) -> ChatResult:
    """Read the first choice of a chat-completion body; raise :class:`InvalidReply` on an odd shape."""
    if not isinstance(data, Mapping):
        raise InvalidReply(f"the completion is not a JSON object: {str(data)[:200]!r}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise InvalidReply("the completion has no choices")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise InvalidReply("the completion's first choice has no message")
    calls = [_chat_tool_call(call) for call in message.get("tool_calls") or ()]
    content = message.get("content")
    logprobs = choices[0].get("logprobs")
    return _reply_result(
        data,
        "chat",
        model=model,
        content=content if isinstance(content, str) else None,
        calls=calls,
        finish_reason=choices[0].get("finish_reason"),
        tokens=logprobs.get("content") if isinstance(logprobs, Mapping) else None,
    )


def _chat_tool_call(call: Any) -> ToolCall:
    """One entry of a chat message's ``tool_calls``: ``{"id", "function": {"name", "arguments"}}``."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        raise InvalidReply(f"a tool call has no function: {str(call)[:200]!r}")
    return ToolCall(
        name=str(function.get("name") or ""), arguments=_arguments(function.get("arguments")), id=call.get("id")
    )


def _reply_result(
    data: Mapping[str, Any],
    api: str,
    *,
    model: str,
    content: str | None,
    calls: Sequence[ToolCall],
    finish_reason: str | None,
    tokens: Any,
) -> ChatResult:
    """The :class:`ChatResult` of what a parser read from a reply body of ``api``: the reply's own model and
    ``usage`` (:func:`reply_tokens`) are read here, ``tokens`` (``None``: no logprobs) by :func:`_token_logprobs`."""
    prompt_tokens, completion_tokens = reply_tokens(data, api)
    return ChatResult(
        content=content,
        tool_calls=tuple(calls),
        finish_reason=finish_reason,
        model=model,
        response_model=data.get("model"),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        logprobs=None if tokens is None else _token_logprobs(tokens),
    )


#: ``finish_reason`` of an ``incomplete`` Responses reply, by ``incomplete_details.reason``.
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _parse_responses(data: Any, *, model: str) -> ChatResult:
    """Read a Responses API body: ``function_call`` output items are the tool calls, the ``output_text``
    parts of ``message`` items the content (joined) and their logprobs. ``finish_reason`` is given in the
    chat vocabulary: ``"tool_calls"`` or ``"stop"`` when completed, ``"length"`` when cut at
    ``max_output_tokens``. Raises :class:`InvalidReply` on an odd shape or a failed response."""
    if not isinstance(data, Mapping):
        raise InvalidReply(f"the response is not a JSON object: {str(data)[:200]!r}")
    output = data.get("output")
    if not isinstance(output, list):
        raise InvalidReply("the response has no output list")
    if data.get("status") == "failed":
        raise InvalidReply(f"the response failed: {str(data.get('error'))[:300]}")
    calls, texts, tokens = _responses_output(output)
    return _reply_result(
        data,
        "responses",
        model=model,
        content="".join(texts) if texts else None,
        calls=calls,
        finish_reason=_responses_finish_reason(data, calls),
        tokens=tokens,
    )


def _responses_output(output: list[Any]) -> tuple[list[ToolCall], list[str], list[Any] | None]:
    """The tool calls (``function_call`` items), the texts and the logprobs (``None``: none sent) of the
    ``output_text`` parts of ``message`` items of a Responses body's ``output``, in order."""
    calls: list[ToolCall] = []
    texts: list[str] = []
    tokens: list[Any] | None = None
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "function_call":
            calls.append(
                ToolCall(
                    name=str(item.get("name") or ""),
                    arguments=_arguments(item.get("arguments")),
                    id=item.get("call_id"),
                )
            )
        elif kind == "message":
            for part in _output_text_parts(item):
                texts.append(str(part.get("text") or ""))
                if isinstance(part.get("logprobs"), list):
                    tokens = [*(tokens or ()), *part["logprobs"]]
    return calls, texts, tokens


def _output_text_parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``output_text`` parts of a Responses ``message`` item's ``content``."""
    return [
        part for part in message.get("content") or () if isinstance(part, Mapping) and part.get("type") == "output_text"
    ]


def _responses_finish_reason(data: Mapping[str, Any], calls: Sequence[ToolCall]) -> str:
    """A Responses body's outcome in the chat vocabulary (see :func:`_parse_responses`)."""
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return _INCOMPLETE_REASONS.get(str(reason), str(reason))
    return "tool_calls" if calls else "stop"


_PARSERS: dict[str, Callable[..., ChatResult]] = {"chat": _parse_chat, "responses": _parse_responses}

#: The ``usage`` fields of each API's reply: ``(prompt, completion)`` tokens.
_USAGE_FIELDS = {"chat": ("prompt_tokens", "completion_tokens"), "responses": ("input_tokens", "output_tokens")}


def reply_tokens(data: Any, api: str) -> tuple[int, int]:
    """``(prompt, completion)`` tokens of a reply body as its ``usage`` states them; ``0`` for what it does not
    state, so that a reply too odd to read is still charged for what it says it cost.

    >>> reply_tokens({"usage": {"input_tokens": 12, "output_tokens": "3"}}, "responses"), reply_tokens([], "chat")
    ((12, 3), (0, 0))
    """
    usage = data.get("usage") if isinstance(data, Mapping) else None
    if not isinstance(usage, Mapping):
        return 0, 0
    counts = []
    for name in _USAGE_FIELDS[api]:
        try:
            counts.append(max(0, int(usage.get(name) or 0)))
        except (TypeError, ValueError):
            counts.append(0)
    return counts[0], counts[1]


def _arguments(arguments: Any) -> str:
    """A tool call's arguments as JSON text (some servers send an object; keep its JSON text)."""
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
    """``[{token, logprob, top_logprobs: [{token, logprob}]}]`` (both APIs' shape) as :class:`TokenLogprob`s."""
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


def parse_reply(data: Any, api: str, *, model: str) -> ChatResult:
    """Read a chat-completions or Responses body; raises :class:`InvalidReply` on an odd shape."""
    return _PARSERS[api](data, model=model)
