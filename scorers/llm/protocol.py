"""What goes over the wire: a request in the chat shape, its body for a wire protocol, and the parsed reply.

:class:`ChatRequest` is independent of credentials, endpoint and protocol; :meth:`ChatRequest.body` gives the JSON
body of the wire protocol it is sent with (:mod:`scorers.llm.protocols`: chat completions, the Responses API,
Anthropic, Gemini, Bedrock; reasoning models sent no sampling settings). :func:`parse_reply` reads a protocol's
reply into a :class:`ChatResult`. See :mod:`scorers.llm.engine` for how requests are sent.

>>> body = ChatRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=50).body("o4-mini", api="responses")
>>> body["input"], body["max_output_tokens"], "temperature" in body
([{'role': 'user', 'content': 'Hi'}], 50, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .._util import memoize
from ..errors import ConfigError
from .config import is_reasoning_model
from .protocols import PROTOCOLS, wire
from .protocols.result import (
    LOGPROB_SLACK,
    ChatResult,
    InvalidReply,
    TokenLogprob,
    ToolCall,
    logprob,
)

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
    "sent_settings",
]

# The reply types live with the protocols that build them; this module stays their public home (their names in
# tracebacks and pickles), as it was before the protocols had a package of their own.
for _public in (ChatResult, InvalidReply, TokenLogprob, ToolCall):
    _public.__module__ = __name__


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
        if self.api is not None:
            try:
                wire(self.api)
            except ConfigError as exc:
                raise ConfigError(f"ChatRequest api: {exc}") from None
        if self.top_logprobs is not None and not self.logprobs:
            raise ConfigError("ChatRequest top_logprobs needs logprobs=True")

    def key_tag(self, body: Mapping[str, Any]) -> str | None:
        """The tag of the cache key of ``body`` (this request's): ``cache_tag``, and the ``seed`` where the body does
        not carry it (a protocol without one: Anthropic's, Bedrock's), so that samples keep their own entries.

        >>> request = ChatRequest(messages=[], seed=2, cache_tag="t")
        >>> request.key_tag({"seed": 2}), request.key_tag({}), ChatRequest(messages=[]).key_tag({})
        ('t', 't seed=2', None)
        """
        if self.seed is None or "seed" in body:
            return self.cache_tag
        return f"seed={self.seed}" if self.cache_tag is None else f"{self.cache_tag} seed={self.seed}"

    def body(self, model: str, *, api: str = "chat", reasoning: bool | None = None) -> dict[str, Any]:
        """The JSON body sent (and hashed for the cache), built by the wire protocol (:mod:`scorers.llm.protocols`).

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
        protocol = wire(self.api or api)
        body = protocol.body(self, name, thinks)
        extra = {k: v for k, v in self.extra.items() if not (thinks and k == "top_p")}
        # OpenAI's APIs: extra was checked against engine_owned_keys(); another protocol refuses what it writes itself
        clashes = sorted(extra.keys() & body.keys()) if protocol.client_family != "openai" else []
        if clashes:
            raise ConfigError(
                f"ChatRequest extra cannot set {', '.join(clashes)}: the {protocol.name} protocol writes "
                f"{'it' if len(clashes) == 1 else 'them'}"
            )
        body.update(extra)
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
    """Every key the engine sets: those :meth:`ChatRequest.body` writes for either OpenAI API and model kind (found by
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
    openai_apis = [name for name in PROTOCOLS.names() if PROTOCOLS.get(name).client_family == "openai"]
    written = {
        key
        for api in openai_apis
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


def sent_settings(body: Mapping[str, Any], api: str) -> dict[str, Any]:
    """The generation settings of ``body`` (``ChatResult.sent``), as its protocol tells them apart from its content."""
    return wire(api).sent(body)


def reply_tokens(data: Any, api: str) -> tuple[int, int]:
    """``(prompt, completion)`` tokens of a reply body of ``api`` as it states them; ``0`` for what it does not
    state, so that a reply too odd to read is still charged for what it says it cost.

    >>> reply_tokens({"usage": {"input_tokens": 12, "output_tokens": "3"}}, "responses"), reply_tokens([], "chat")
    ((12, 3), (0, 0))
    """
    tokens = wire(api).tokens(data)
    return tokens.prompt, tokens.completion


def parse_reply(data: Any, api: str, *, model: str) -> ChatResult:
    """Read a reply body of the wire protocol ``api``; raises :class:`InvalidReply` on an odd shape and
    :class:`~scorers.llm.protocols.ReplyRefused` on a refusal or a safety stop."""
    return wire(api).parse(data, model=model)
