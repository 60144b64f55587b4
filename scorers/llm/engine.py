"""The async engine under every LLM judge: chat completions or OpenAI's Responses API.

One coroutine, :meth:`LLMEngine.complete`, sends a :class:`ChatRequest` to an
OpenAI-compatible endpoint through ``openai.AsyncOpenAI`` and returns a
:class:`ChatResult`. Around the HTTP call it adds:

* a reply cache (SQLite, :mod:`scorers.llm.cache`): a hit makes no request;
  only replies that passed ``validate`` are stored;
* a concurrency cap per endpoint and event loop (``max_concurrency``), shared by
  every engine that talks to the same ``base_url``;
* retries of 429 (honouring ``Retry-After``), 408/409/5xx, timeouts and dropped
  connections with jittered exponential backoff, at most ``max_retries`` times;
  the SDK's own retries are switched off so that ours are the only ones;
* re-asks: when ``validate(result)`` raises :class:`InvalidReply`, the request is
  sent again (bypassing the cache) up to ``max_reasks`` times;
* a ``deadline`` (seconds, default 600) on the whole call, retries and re-asks
  included; its clock starts when the first attempt gets its concurrency slot;
* :class:`~scorers.errors.JudgeError` for every final failure, with the cause
  and (for unusable replies) the raw reply; the API key is never in a message.
  When the endpoint refuses the configuration itself (HTTP 401/403: the key;
  404: the model or base URL) it is an :class:`EndpointConfigError`, also a
  :class:`~scorers.errors.ConfigError`, on which a run stops. A request the
  endpoint rejects as invalid is a :class:`RequestRejected` at once, never retried.

The sync form (:meth:`LLMEngine.complete_sync`) runs the coroutine on the
process-wide background loop of :mod:`scorers._aio`, so it also works inside a
running event loop (Jupyter, FastAPI). ``openai`` clients are bound to an event
loop, so the engine keeps one client per endpoint *and* loop; a client passed by
the user is used as is (a sync ``openai.OpenAI`` one is copied into an async one).

Types the judges code against
-----------------------------
``ChatRequest(messages, model=None, tools=None, tool_choice=None, temperature=None,
max_tokens=None, response_format=None, seed=None, extra={}, cache_tag=None,
reasoning_effort=None, logprobs=False, top_logprobs=None, api=None)``
    ``None`` fields are not sent. ``model=None`` uses the engine's model and
    ``api=None`` the engine's ``api`` setting (``"chat"`` or ``"responses"``).
    ``tools``, ``tool_choice`` and ``response_format`` are given in the chat shape;
    the Responses API gets them converted (:meth:`ChatRequest.body`). ``extra``
    holds further body parameters sent verbatim (e.g. ``{"top_p": 1}``) and is part
    of the cache key; ``cache_tag`` is part of the cache key but not sent (e.g.
    ``"sample-3"`` to get independent cached samples of the same prompt).
    ``logprobs=True`` asks for the content tokens' log-probabilities (with
    ``top_logprobs`` alternatives each); a reply without them raises
    :class:`EndpointConfigError`, since that endpoint or model cannot give them.
``ChatResult``
    ``content`` (str or None), ``tool_calls`` (tuple of :class:`ToolCall`: ``name``,
    ``arguments`` as the raw string, ``id``), ``finish_reason``, ``model`` (requested),
    ``response_model`` (reported by the server), ``prompt_tokens``,
    ``completion_tokens`` (summed over re-asks), ``latency_s`` (wall time of the
    call, retries included), ``attempts`` (HTTP requests made; 0 when cached),
    ``reasks``, ``cached``, ``parsed`` (what ``validate`` returned), ``sent`` (the
    generation settings actually sent, with the ``api``), ``logprobs`` (a tuple of
    :class:`TokenLogprob`, or ``None`` when not asked for). ``to_dict()`` gives a
    JSON-able form (this is ``JudgeError.raw`` for unusable replies).
``validate(result) -> Any``
    Raise :class:`InvalidReply` (with a reason) when the reply is unusable; the
    return value is stored in ``result.parsed``.

Reasoning models (:func:`~scorers.llm.config.is_reasoning_model`, or the
``reasoning`` setting) are sent no ``temperature`` or ``top_p`` (not even from
``extra``) and ``max_completion_tokens`` instead of ``max_tokens``.
``reasoning_effort`` is sent whenever it is given, to any model: the caller asked
for it, and an endpoint that does not know it says so (:class:`RequestRejected`).
``ChatResult.sent`` shows what went out. Likewise ``seed`` is sent as given to
both APIs, though OpenAI's Responses API has no such parameter and rejects it.

>>> from scorers.testing import LoopbackLLM, Reply
>>> with LoopbackLLM(default=Reply.choice("A")) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     result = engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "Pick one"}]))
...     thought = engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "Pick one"}],
...         model="o4-mini", temperature=0, max_tokens=400, reasoning_effort="low", api="responses"))
>>> result.tool_calls[0].name, result.tool_calls[0].arguments, result.attempts
('select_choice', '{"choice": "A"}', 1)
>>> thought.sent
{'api': 'responses', 'max_output_tokens': 400, 'reasoning': {'effort': 'low'}}
"""
from __future__ import annotations

import asyncio
import atexit
import collections
import email.utils
import hashlib
import json
import logging
import random
import re
import sqlite3
import sys
import time
import warnings
import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from .. import _aio
from .._aio import run_sync
from .._util import memoize, optional_import
from ..errors import ConfigError, JudgeError, MissingExtraError
from .cache import CacheError, LLMCache, cache_key, cache_keys, open_cache
from .config import APIS, LLMSettings, check_options, default_model, is_reasoning_model, resolve, settings_state

__all__ = ["ChatRequest", "ChatResult", "ToolCall", "TokenLogprob", "InvalidReply", "EndpointConfigError",
           "RequestRejected", "LLMEngine", "complete", "complete_sync", "aclose"]

log = logging.getLogger("scorers.llm")

_RETRY_STATUSES = frozenset({408, 409, 429})

#: The path each API posts to (under ``base_url``).
_PATHS = {"chat": "/chat/completions", "responses": "/responses"}

#: Body keys that are the request's content, not its generation settings (left out of ``ChatResult.sent``).
_CONTENT_KEYS = frozenset({"model", "messages", "input", "tools", "tool_choice", "response_format"})

#: What the Responses API is asked to include for output-text log-probabilities.
_RESPONSES_LOGPROBS = "message.output_text.logprobs"


class EndpointConfigError(JudgeError, ConfigError):
    """The endpoint refuses the judge's configuration, not one row: a wrong or unauthorised API key
    (HTTP 401/403), an unknown model or base URL (HTTP 404), or no log-probabilities from an endpoint
    asked for them. A :class:`~scorers.errors.ConfigError`, so a run stops on it rather than failing
    every row the same way; a :class:`~scorers.errors.JudgeError` with the attempts made."""


class RequestRejected(JudgeError):
    """The endpoint rejected the request as invalid; it was not retried.

    That is an HTTP 4xx other than 401/403/404 (:class:`EndpointConfigError`) and 408/409/429
    (retried), or a 5xx whose body is a request-validation error: llama-cpp-python answers a request
    its schema refuses (e.g. ``response_format`` type ``json_schema``) with HTTP 500 and pydantic's
    message, which no retry can change. ``status`` is the HTTP status, ``detail`` the server's message.
    """

    def __init__(self, message: str, *, status: int, detail: str, scorer: str | None = None,
                 attempts: int | None = None) -> None:
        super().__init__(message, scorer=scorer, attempts=attempts)
        self.status = status
        self.detail = detail


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
        extra = {k: v for k, v in self.extra.items() if not (thinks and k in ("temperature", "top_p"))}
        temperature = None if thinks else self.temperature
        if (self.api or api) == "chat":
            body: dict[str, Any] = {"model": name, "messages": messages}
            _put(body, "tools", None if self.tools is None else list(self.tools))
            _put(body, "tool_choice", self.tool_choice)
            _put(body, "temperature", temperature)
            _put(body, "max_completion_tokens" if thinks else "max_tokens", self.max_tokens)
            _put(body, "response_format", self.response_format)
            _put(body, "seed", self.seed)
            _put(body, "reasoning_effort", self.reasoning_effort)
            if self.logprobs:
                body["logprobs"] = True
                _put(body, "top_logprobs", self.top_logprobs)
        else:
            body = {"model": name, "input": messages}
            _put(body, "tools", None if self.tools is None else [_responses_tool(t) for t in self.tools])
            _put(body, "tool_choice", _responses_tool_choice(self.tool_choice))
            _put(body, "temperature", temperature)
            _put(body, "max_output_tokens", self.max_tokens)
            _put(body, "text", None if self.response_format is None else {"format": _responses_format(
                self.response_format)})
            _put(body, "seed", self.seed)
            _put(body, "reasoning", None if self.reasoning_effort is None else {"effort": self.reasoning_effort})
            if self.logprobs:
                body["include"] = [_RESPONSES_LOGPROBS]
                _put(body, "top_logprobs", self.top_logprobs)
        body.update(extra)
        return body


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


def _sent(body: Mapping[str, Any], api: str) -> dict[str, Any]:
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
            return json.loads(self.arguments)
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
    reasks: int = 0
    cached: bool = False
    parsed: Any = None
    sent: Mapping[str, Any] = field(default_factory=dict)
    logprobs: tuple[TokenLogprob, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (``parsed`` is left out: it may not be JSON)."""
        return {"content": self.content,
                "tool_calls": [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in self.tool_calls],
                "finish_reason": self.finish_reason, "model": self.model, "response_model": self.response_model,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "latency_s": self.latency_s, "attempts": self.attempts, "reasks": self.reasks, "cached": self.cached,
                "sent": dict(self.sent),
                "logprobs": None if self.logprobs is None else [t.to_dict() for t in self.logprobs]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ChatResult":
        """The inverse of :meth:`to_dict`."""
        values = dict(data)
        values["tool_calls"] = tuple(ToolCall(**call) for call in values.get("tool_calls") or ())
        if values.get("logprobs") is not None:
            values["logprobs"] = tuple(TokenLogprob.from_dict(t) for t in values["logprobs"])
        return cls(**values)

    @classmethod
    def _from_cache(cls, stored: Mapping[str, Any], latency_s: float, validate: Callable[["ChatResult"], Any] | None,
                    sent: Mapping[str, Any]) -> "ChatResult | None":
        """A stored reply as a cache hit (``cached``, no attempts), or ``None`` when it no longer passes ``validate``.

        ``sent`` comes from the request's body (the cache key), so replies stored before ``ChatResult``
        had the field get it too."""
        hit = cls.from_dict({**stored, "cached": True, "attempts": 0, "latency_s": latency_s, "sent": sent})
        if validate is not None:
            try:
                parsed = validate(hit)
            except InvalidReply:
                log.debug("cached reply no longer passes validation; asking again")
                return None
            object.__setattr__(hit, "parsed", parsed)  # still private to this call: set in place, not copied
        return hit


class NotPicklable:
    """Holds a value that must not be pickled: pickling raises ``TypeError(reason)``; ``copy.copy`` keeps it.

    An object's ``__getstate__`` wraps such a value and its ``__setstate__`` unwraps it, so a shallow copy
    (``scorer.partial()``) shares the value while ``pickle`` fails with a message saying why.
    """

    __slots__ = ("value", "reason")

    def __init__(self, value: Any, reason: str) -> None:
        self.value, self.reason = value, reason

    def __reduce__(self) -> Any:
        raise TypeError(self.reason)

    @staticmethod
    def unwrap_values(state: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v.value if isinstance(v, NotPicklable) else v for k, v in state.items()}


# --------------------------------------------------------------------------- engine
class LLMEngine:
    """Sends chat requests with caching, retries, re-asks and a shared concurrency cap.

    Every option left ``None`` comes from :func:`scorers.llm.configure`, then the
    environment, then the defaults (see :mod:`scorers.llm.config`); settings are
    resolved at each call, so a later ``configure()`` applies. The engine holds no
    connection itself, so it can be pickled (unless ``client=`` is given).
    """

    def __init__(self, *, client: Any = None, model: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, max_concurrency: int | None = None, timeout: float | None = None,
                 max_retries: int | None = None, max_reasks: int | None = None,
                 cache: bool | str | LLMCache | None = None, transport: str | None = None,
                 backoff_base: float | None = None, backoff_max: float | None = None,
                 retry_after_max: float | None = None, api: str | None = None, reasoning: bool | None = None,
                 deadline: float | None = None) -> None:
        options = check_options(dict(
            client=client, model=model, base_url=base_url, api_key=api_key, max_concurrency=max_concurrency,
            timeout=timeout, max_retries=max_retries, max_reasks=max_reasks, cache=cache, transport=transport,
            backoff_base=backoff_base, backoff_max=backoff_max, retry_after_max=retry_after_max, api=api,
            reasoning=reasoning, deadline=deadline))
        if "client" in options and ("api_key" in options or "base_url" in options):
            raise ConfigError("pass either client= or api_key=/base_url=, not both")
        self._options = options
        self._memo: tuple[tuple[Any, ...], LLMSettings, LLMCache | None] | None = None

    def settings(self) -> LLMSettings:
        """The resolved settings; raises :class:`ConfigError` when no API key is available."""
        return self._resolved()[0]

    def _resolved(self) -> tuple[LLMSettings, LLMCache | None]:
        """The settings and the open cache, memoised until ``configure()``, the environment or the
        working folder changes (:func:`~scorers.llm.config.settings_state`)."""
        state = settings_state()
        memo = self._memo
        if memo is not None and memo[0] == state:
            return memo[1], memo[2]
        settings = resolve(**self._options)
        cache = open_cache(settings.cache) if settings.cache is not None else None
        self._memo = (state, settings, cache)
        return settings, cache

    @property
    def model(self) -> str:
        """The model used for requests that name none (known without an API key)."""
        return default_model(self._options.get("model"))

    def __repr__(self) -> str:
        shown = {k: v for k, v in self._options.items() if k not in ("api_key", "client")}
        return f"LLMEngine({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def __getstate__(self) -> dict[str, Any]:
        state = {**self.__dict__, "_memo": None}  # the memo holds the key and an open cache
        if "client" in self._options:  # copy.copy works; pickling raises a TypeError that says why
            state["_options"] = {**self._options, "client": NotPicklable(
                self._options["client"], "an LLMEngine with a client= cannot be pickled (an openai client holds "
                "connections and locks); pass base_url=/api_key= instead")}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(NotPicklable.unwrap_values(state))
        self._options = NotPicklable.unwrap_values(self._options)

    def complete_sync(self, request: ChatRequest, *, validate: Callable[[ChatResult], Any] | None = None,
                      scorer: str | None = None) -> ChatResult:
        """:meth:`complete` from synchronous code (works inside a running event loop too)."""
        return run_sync(self.complete(request, validate=validate, scorer=scorer))

    def lookup(self, requests: Sequence[ChatRequest], *,
               validate: Callable[[ChatResult], Any] | None = None) -> list[ChatResult | None]:
        """The cached replies of many requests at once: a hit (``cached=True``) or ``None`` per request, in order.

        Settings are resolved once and the cache is read in a few queries, so a
        cached batch costs microseconds per request. A stored reply that no longer
        passes ``validate`` is a miss, as in :meth:`complete`. Without a cache every
        request misses; a failing cache warns and misses. Raises :class:`ConfigError`
        when no API key is available. Send the misses with ``complete(..., read_cache=False)``.
        """
        started = time.perf_counter()
        settings, cache = self._resolved()
        if cache is None or not requests:
            return [None] * len(requests)
        bodies = [_body(r, settings) for r in requests]
        keys = cache_keys([body for body, _ in bodies], base_url=settings.base_url,
                          tags=[r.cache_tag for r in requests])
        stored = _cache_call(cache.get_many, keys) or {}
        latency = time.perf_counter() - started
        return [None if (entry := stored.get(key)) is None else
                ChatResult._from_cache(entry, latency, validate, _sent(body, api))
                for key, (body, api) in zip(keys, bodies)]

    async def complete(self, request: ChatRequest, *, validate: Callable[[ChatResult], Any] | None = None,
                       scorer: str | None = None, read_cache: bool = True) -> ChatResult:
        """Send ``request``; return a reply that passed ``validate``, or raise :class:`JudgeError`.

        ``scorer`` names the judge in error messages. ``read_cache=False`` skips the
        cache lookup (the caller already had a miss from :meth:`lookup`); a valid
        reply is still stored.
        """
        started = time.perf_counter()
        settings, cache = self._resolved()
        body, api = _body(request, settings)
        sent = _sent(body, api)
        label = f"{scorer}: " if scorer else ""
        key = cache_key(body, base_url=settings.base_url, tag=request.cache_tag) if cache is not None else ""
        if cache is not None and read_cache:
            stored = _cache_call(cache.get, key)
            if stored is not None:
                hit = ChatResult._from_cache(stored, time.perf_counter() - started, validate, sent)
                if hit is not None:
                    return hit

        budget = _Budget(settings.deadline)
        prompt_tokens = completion_tokens = 0
        last_reply: ChatResult | None = None
        last_reason = ""
        for reask in range(settings.max_reasks + 1):
            data = await _send(body, api, settings, scorer, budget)
            try:
                reply = _PARSERS[api](data, model=body["model"])
            except InvalidReply as exc:
                last_reply, last_reason = None, exc.reason
                log.info("%sunusable completion (ask %d of %d): %s", label, reask + 1, settings.max_reasks + 1,
                         exc.reason)
                continue
            if request.logprobs and reply.logprobs is None:
                raise EndpointConfigError(
                    f"{label}the endpoint returned no logprobs for model {body['model']!r} at {settings.base_url} "
                    f"({api} API) although logprobs=True asked for them: the endpoint or model does not support "
                    f"them, or not for this kind of reply (OpenAI gives none for tool calls)",
                    scorer=scorer, raw=reply.to_dict(), attempts=budget.attempts)
            prompt_tokens += reply.prompt_tokens
            completion_tokens += reply.completion_tokens
            reply = replace(reply, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                            attempts=budget.attempts, reasks=reask, sent=sent)
            try:
                parsed = validate(reply) if validate is not None else None
            except InvalidReply as exc:
                last_reply, last_reason = reply, exc.reason
                log.info("%sunusable judge reply (ask %d of %d): %s", label, reask + 1, settings.max_reasks + 1,
                         exc.reason)
                continue
            reply = replace(reply, parsed=parsed, latency_s=time.perf_counter() - started)
            if cache is not None:
                _cache_call(cache.put, key, reply.to_dict(), model=reply.model)
            return reply
        asks = settings.max_reasks + 1
        raise JudgeError(
            _redact(f"{label}the judge's reply was unusable after {asks} ask{'s' if asks > 1 else ''}: {last_reason}",
                    settings.api_key),
            scorer=scorer, raw=None if last_reply is None else last_reply.to_dict(), attempts=budget.attempts)


def _body(request: ChatRequest, settings: LLMSettings) -> tuple[dict[str, Any], str]:
    """The body of ``request`` under ``settings`` and the API it is for."""
    api = request.api or settings.api
    return request.body(settings.model, api=api, reasoning=settings.reasoning), api


class _Budget:
    """The ``deadline`` of one ``complete()`` call and the HTTP attempts it made.

    The clock starts with the first attempt (:meth:`start`, once its concurrency slot is held), so
    that rows queued behind others are not charged for the wait.
    """

    __slots__ = ("seconds", "ends", "attempts")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends: float | None = None
        self.attempts = 0

    def start(self) -> None:
        if self.ends is None:
            self.ends = time.monotonic() + self.seconds

    def left(self) -> float:
        return self.seconds if self.ends is None else self.ends - time.monotonic()

    def exceeded(self, label: str, scorer: str | None, cause: str) -> JudgeError:
        return JudgeError(f"{label}no usable reply within the deadline of {self.seconds:g} s (deadline=) after "
                          f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}; last: {cause}",
                          scorer=scorer, attempts=self.attempts)


def _cache_call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a cache read/write inline (sub-millisecond in WAL mode); a failing cache (the SQLite file, or a Redis
    server that was reached before: :class:`~scorers.llm.cache.CacheError`) warns and is bypassed."""
    try:
        return method(*args, **kwargs)
    except (sqlite3.Error, CacheError) as exc:
        warnings.warn(f"the LLM reply cache failed ({exc}); going on without it for this call", RuntimeWarning,
                      stacklevel=3)
        return None


# --------------------------------------------------------------------------- HTTP with retries
async def _send(body: dict[str, Any], api: str, settings: LLMSettings, scorer: str | None, budget: _Budget) -> Any:
    """POST ``body`` to ``api``'s path; return the decoded JSON. Counts attempts in ``budget``; raises
    :class:`JudgeError` (:class:`RequestRejected`, :class:`EndpointConfigError`)."""
    import openai

    label = f"{scorer}: " if scorer else ""
    client = await _client_for(settings)
    limiter = _limiter_for(settings.base_url)
    response_class = _httpx_response_class()
    attempts_allowed = settings.max_retries + 1
    cause = "the deadline passed before the first attempt"
    for attempt in range(1, attempts_allowed + 1):
        retry_after: float | None = None
        async with limiter.slot(settings.max_concurrency):
            budget.start()
            limit = min(settings.timeout, budget.left())
            if limit <= 0:
                raise budget.exceeded(label, scorer, cause)
            budget.attempts += 1
            try:
                async with _deadline(limit):
                    response = await client.post(_PATHS[api], body=body, cast_to=response_class,
                                                 options={"max_retries": 0, "timeout": settings.timeout})
                return json.loads(response.content)
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status in (401, 403):
                    raise EndpointConfigError(f"{label}authentication failed (HTTP {status}) at {settings.base_url}; "
                                              f"check the API key (OPENAI_API_KEY or api_key=)",
                                              scorer=scorer, attempts=budget.attempts) from None
                detail = _redact(_error_detail(exc), settings.api_key)
                if status == 404:
                    raise EndpointConfigError(f"{label}the endpoint rejected the request (HTTP 404): {detail}; check "
                                              f"the base URL ({settings.base_url}) and the model ({body['model']})",
                                              scorer=scorer, attempts=budget.attempts) from None
                if (status not in _RETRY_STATUSES and status < 500) or (status >= 500 and _is_validation_error(detail)):
                    raise RequestRejected(f"{label}the endpoint rejected the request (HTTP {status}): {detail}",
                                          status=status, detail=detail, scorer=scorer,
                                          attempts=budget.attempts) from None
                cause = f"HTTP {status}: {detail}"
                retry_after = _retry_after(exc.response.headers)
            except asyncio.TimeoutError:
                cause = f"no reply within the {limit:g} s timeout"
                if limit < settings.timeout:
                    raise budget.exceeded(label, scorer, cause) from None
            except openai.APIConnectionError as exc:  # APITimeoutError included
                root = _root_cause(exc)
                if isinstance(root, TimeoutError) or "Timeout" in type(root).__name__:
                    cause = f"no reply within the {settings.timeout:g} s timeout"
                else:
                    cause = _redact(f"connection failed: {type(root).__name__}: {root}"[:300], settings.api_key)
            except ValueError as exc:  # a 2xx body that is not JSON
                cause = f"the endpoint sent a body that is not JSON ({exc})"
        if attempt == attempts_allowed:
            break
        delay = _backoff(attempt, retry_after, settings)
        if delay >= budget.left():
            raise budget.exceeded(label, scorer, cause)
        log.info("%s%s; retrying in %.2f s (attempt %d of %d)", label, cause, delay, attempt + 1, attempts_allowed)
        await asyncio.sleep(delay)
    raise JudgeError(f"{label}the request to {settings.base_url} failed after {attempts_allowed} "
                     f"attempt{'s' if attempts_allowed > 1 else ''}: {cause}", scorer=scorer, attempts=budget.attempts)


#: A request-validation error in a 5xx's message: FastAPI's ("1 validation error:\n  {'type': 'literal_error', ...,
#: 'msg': "Input should be 'text' or 'json_object'", ...}", what llama-cpp-python's server sends with HTTP 500)
#: or pydantic's ("2 validation errors for Request ... Field required").
_VALIDATION_ERROR = re.compile(r"^\s*\d+ validation errors?\b|\bInput should be\b|\bField required\b")


def _is_validation_error(detail: str) -> bool:
    """Whether a 5xx's message says the request itself was invalid (see :class:`RequestRejected`)."""
    return _VALIDATION_ERROR.search(detail) is not None


def _backoff(attempt: int, retry_after: float | None, settings: LLMSettings) -> float:
    if retry_after is not None:
        return min(retry_after, settings.retry_after_max) + random.uniform(0, 0.1 * settings.backoff_base)
    ceiling = min(settings.backoff_max, settings.backoff_base * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)  # "equal jitter": never 0, spreads synchronized retries


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_detail(exc: Any) -> str:
    """The server's error message (the SDK hands over the ``error`` object of the body)."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    message = body.get("message") if isinstance(body, Mapping) else None
    return str(message or getattr(exc, "message", "") or type(exc).__name__)[:500]


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a chain (the SDK and the aiohttp bridge wrap transport errors;
    the bridge even reports a dropped connection as a connect timeout)."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or exc.__context__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def _redact(text: str, api_key: str | None) -> str:
    return text.replace(api_key, "[API key]") if api_key and len(api_key) >= 4 else text


if sys.version_info >= (3, 11):
    _deadline = asyncio.timeout
else:  # pragma: no cover - Python 3.10
    import contextlib

    @contextlib.asynccontextmanager
    async def _deadline(seconds: float):  # type: ignore[no-redef]
        task = asyncio.current_task()
        handle = asyncio.get_running_loop().call_later(seconds, task.cancel)  # type: ignore[union-attr]
        try:
            yield
        except asyncio.CancelledError:
            raise asyncio.TimeoutError() from None
        finally:
            handle.cancel()


# --------------------------------------------------------------------------- parsing
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
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise InvalidReply(f"a tool call has no function: {str(call)[:200]!r}")
        calls.append(ToolCall(name=str(function.get("name") or ""), arguments=_arguments(function.get("arguments")),
                              id=call.get("id")))
    usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
    content = message.get("content")
    logprobs = choices[0].get("logprobs")
    tokens = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    return ChatResult(
        content=content if isinstance(content, str) else None,
        tool_calls=tuple(calls),
        finish_reason=choices[0].get("finish_reason"),
        model=model,
        response_model=data.get("model"),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
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
    calls: list[ToolCall] = []
    texts: list[str] = []
    tokens: list[Any] | None = None
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "function_call":
            calls.append(ToolCall(name=str(item.get("name") or ""), arguments=_arguments(item.get("arguments")),
                                  id=item.get("call_id")))
        elif kind == "message":
            for part in item.get("content") or ():
                if isinstance(part, Mapping) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
                    if isinstance(part.get("logprobs"), list):
                        tokens = [*(tokens or ()), *part["logprobs"]]
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        finish = _INCOMPLETE_REASONS.get(str(reason), str(reason))
    else:
        finish = "tool_calls" if calls else "stop"
    usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
    return ChatResult(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        finish_reason=finish,
        model=model,
        response_model=data.get("model"),
        prompt_tokens=int(usage.get("input_tokens") or 0),
        completion_tokens=int(usage.get("output_tokens") or 0),
        logprobs=None if tokens is None else _token_logprobs(tokens),
    )


_PARSERS: dict[str, Callable[..., ChatResult]] = {"chat": _parse_chat, "responses": _parse_responses}


def _arguments(arguments: Any) -> str:
    """A tool call's arguments as JSON text (some servers send an object; keep its JSON text)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _token_logprobs(tokens: Any) -> tuple[TokenLogprob, ...]:
    """``[{token, logprob, top_logprobs: [{token, logprob}]}]`` (both APIs' shape) as :class:`TokenLogprob`s."""
    try:
        return tuple(TokenLogprob(str(t["token"]), float(t["logprob"]),
                                  tuple((str(a["token"]), float(a["logprob"])) for a in t.get("top_logprobs") or ()))
                     for t in tokens)
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise InvalidReply(f"the reply's logprobs are malformed ({type(exc).__name__}: {exc}): "
                           f"{str(tokens)[:200]!r}") from None


# --------------------------------------------------------------------------- per-loop state
class _Limiter:
    """Counts requests in flight to one endpoint; a request waits while ``in_flight >= its cap``.

    Each caller passes its own cap, so engines with different ``max_concurrency``
    share one count: a request never starts while the endpoint already has as
    many requests in flight as its own engine allows.
    """

    def __init__(self) -> None:
        self.in_flight = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    def slot(self, cap: int) -> "_Slot":
        return _Slot(self, cap)

    async def acquire(self, cap: int) -> None:
        if self.in_flight < cap and not self._waiters:
            self.in_flight += 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (cap, future)
        self._waiters.append(entry)
        try:
            await future
        except BaseException:
            if entry in self._waiters:
                self._waiters.remove(entry)
            elif future.done() and not future.cancelled():
                self.release()  # granted just as we were cancelled: hand the slot on
            raise

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        # Grant slots in arrival order while the head of the queue fits under its cap.
        while self._waiters and self.in_flight < self._waiters[0][0]:
            _, future = self._waiters.popleft()
            if not future.done():
                self.in_flight += 1
                future.set_result(None)


class _Slot:
    __slots__ = ("limiter", "cap")

    def __init__(self, limiter: _Limiter, cap: int) -> None:
        self.limiter, self.cap = limiter, cap

    async def __aenter__(self) -> None:
        await self.limiter.acquire(self.cap)

    async def __aexit__(self, *exc_info: Any) -> None:
        self.limiter.release()


class _LoopState:
    """What the engine keeps per event loop: a limiter per endpoint, the HTTP clients, and the generator
    that closes those clients when the loop shuts down. Used only from the loop's own thread."""

    __slots__ = ("limiters", "clients", "closer", "__weakref__")

    def __init__(self) -> None:
        self.limiters: dict[str, _Limiter] = {}
        self.clients: dict[tuple[Any, ...], Any] = {}
        self.closer: Any = None


@memoize
def _loop_states() -> "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState]":
    """Per event loop state; a loop's entry goes when the loop is garbage collected."""
    return weakref.WeakKeyDictionary()


def _loop_state(loop: asyncio.AbstractEventLoop) -> _LoopState:
    states = _loop_states()
    state = states.get(loop)
    if state is None:
        state = states[loop] = _LoopState()
    return state


def _limiter_for(base_url: str) -> _Limiter:
    limiters = _loop_state(asyncio.get_running_loop()).limiters
    limiter = limiters.get(base_url)
    if limiter is None:
        limiter = limiters[base_url] = _Limiter()
    return limiter


async def _client_for(settings: LLMSettings) -> Any:
    """The ``AsyncOpenAI`` client for these settings on the running loop (created once per loop)."""
    state = _loop_state(asyncio.get_running_loop())
    if settings.client is None:  # the common case: this loop's client for the endpoint
        key: tuple[Any, ...] = _client_key(settings)
        client = state.clients.get(key)
        if client is not None:
            return client
    import openai

    user_client = settings.client
    if isinstance(user_client, openai.AsyncOpenAI) or (user_client is not None and not isinstance(user_client,
                                                                                                 openai.OpenAI)):
        return user_client
    if state.closer is None:
        closer = _close_at_loop_shutdown()
        await closer.asend(None)
        state.closer = closer
    if user_client is not None:  # a sync client: an async twin with the same settings, per loop
        key = ("twin", id(user_client))
        entry = state.clients.get(key)
        if entry is None or entry[0] is not user_client:  # the entry keeps its client alive: ids are not reused
            entry = state.clients[key] = (user_client, _async_twin(user_client, settings.transport))
        return entry[1]
    client = state.clients[key] = openai.AsyncOpenAI(api_key=settings.api_key, base_url=settings.base_url,
                                                      max_retries=0, http_client=_http_client(settings.transport))
    return client


def _async_twin(client: Any, transport: str) -> Any:
    """An ``openai.AsyncOpenAI`` client with the settings of the sync ``openai.OpenAI`` ``client``.

    Key, endpoint, organization and project are public attributes; the headers and query parameters
    the user added are read through the public API (:func:`_custom_defaults`). The SDK's retries
    are off, as for every client the engine makes.
    """
    import openai

    headers, query = _custom_defaults(client)
    return openai.AsyncOpenAI(api_key=client.api_key, base_url=client.base_url, organization=client.organization,
                              project=client.project, default_headers=headers, default_query=query, max_retries=0,
                              http_client=_http_client(transport))


def _custom_defaults(client: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The headers and query parameters given to ``client`` (``default_headers=``/``default_query=``).

    They are the client's public ``default_headers``/``default_query`` less those of a copy made
    without them (``client.copy(set_default_headers={}, set_default_query={})``, which shares the
    client's connection pool and opens nothing). Should a future ``openai`` drop that API, the
    twin sends no custom headers, and a warning says so.
    """
    import openai

    try:
        plain = client.copy(set_default_headers={}, set_default_query={})
        headers = _added(client.default_headers, plain.default_headers)
        query = _added(client.default_query, plain.default_query)
    except (AttributeError, TypeError, ValueError) as exc:
        warnings.warn(f"cannot read the custom headers and query parameters of the openai.OpenAI client "
                      f"through openai {getattr(openai, '__version__', '?')}'s public API ({type(exc).__name__}: "
                      f"{exc}); the judges' async copy of it sends none. Pass an openai.AsyncOpenAI client "
                      "(client=) to keep them", RuntimeWarning, stacklevel=4)
        return {}, {}
    return headers, query


def _added(given: Mapping[str, Any], plain: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``given`` that ``plain`` lacks or has with another value."""
    import openai

    omit = getattr(openai, "Omit", None)

    def same(a: Any, b: Any) -> bool:  # ``Omit`` markers (an unset header) compare by type, not identity
        return a is b or (omit is not None and isinstance(a, omit) and isinstance(b, omit)) or a == b

    missing = object()
    return {name: value for name, value in given.items() if not same(value, plain.get(name, missing))}


def _client_key(settings: LLMSettings) -> tuple[Any, ...]:
    """The key of an engine-made client: endpoint, a hash of the API key (never the key itself) and transport."""
    return (settings.base_url, hashlib.sha256((settings.api_key or "").encode()).hexdigest(), settings.transport)


async def _close_at_loop_shutdown() -> Any:
    """Suspended for the loop's life; ``asyncio.run`` finalises async generators before closing
    the loop, which closes this loop's clients (no "unclosed client session" warnings)."""
    try:
        yield
    finally:
        await aclose()


def _http_client(transport: str) -> Any:
    """The HTTP client under the SDK.

    aiohttp is the default when installed. Measured through this engine's request
    path (``client.post`` with a raw response) against :class:`scorers.testing.LoopbackLLM`
    in another process, 100 ms latency, 1,000 requests, 2 cores, openai 3.57.0:

    ========== ============ ============ ==============
    transport  concurrency  requests/s   client CPU/req
    ========== ============ ============ ==============
    httpx2     32           266          1.10 ms
    aiohttp    32           258-282      0.67 ms
    httpx2     64           511          1.11 ms
    aiohttp    64           534          0.73 ms
    ========== ============ ============ ==============

    Throughput is close (the SDK's httpx2 fork no longer collapses at 64
    connections as httpx 0.28 did), but aiohttp needs about 40 % less CPU per
    request, which a batch run shares with scoring. Override with
    ``transport="httpx"`` or ``SCORERS_HTTP_TRANSPORT=httpx``.
    """
    import openai

    if transport in ("auto", "aiohttp"):
        try:
            optional_import("aiohttp", scorer="The LLM engine's aiohttp transport", extra="aiohttp")
            return openai.DefaultAioHttpClient()
        except MissingExtraError:
            if transport == "aiohttp":
                raise
        except (AttributeError, RuntimeError) as exc:  # an openai without the aiohttp client
            if transport == "aiohttp":
                raise ConfigError(f"transport='aiohttp' needs openai's aiohttp support: pip install "
                                  f"'scorers[aiohttp]' ({exc})") from exc
    return openai.DefaultAsyncHttpxClient()


@memoize
def _httpx_response_class() -> Any:
    """The ``Response`` class of the httpx flavour this ``openai`` uses (httpx or httpx2): ``cast_to`` it for raw bytes."""
    import openai

    for base in openai.DefaultAsyncHttpxClient.__mro__:
        if base.__name__ == "AsyncClient" and base.__module__.split(".")[0] in ("httpx", "httpx2"):
            return sys.modules[base.__module__.split(".")[0]].Response
    raise ConfigError("unsupported openai package layout: cannot find its httpx Response class")  # pragma: no cover


# --------------------------------------------------------------------------- module-level helpers
@memoize
def _default_engine() -> LLMEngine:
    """The engine of :func:`complete`: no options of its own, so every setting comes from :func:`configure`."""
    return LLMEngine()


async def complete(request: ChatRequest, *, validate: Callable[[ChatResult], Any] | None = None,
                   scorer: str | None = None) -> ChatResult:
    """:meth:`LLMEngine.complete` with the process-wide settings (:func:`scorers.llm.configure`)."""
    return await _default_engine().complete(request, validate=validate, scorer=scorer)


def complete_sync(request: ChatRequest, *, validate: Callable[[ChatResult], Any] | None = None,
                  scorer: str | None = None) -> ChatResult:
    """:func:`complete` from synchronous code."""
    return _default_engine().complete_sync(request, validate=validate, scorer=scorer)


async def aclose() -> None:
    """Close the HTTP clients the engine opened on the running loop (call before closing your own loop)."""
    state = _loop_states().get(asyncio.get_running_loop())
    if state is None:
        return
    clients, state.clients, state.closer = state.clients, {}, None
    opened = [entry[1] if isinstance(entry, tuple) else entry for entry in clients.values()]
    await asyncio.gather(*(client.close() for client in opened), return_exceptions=True)


def _close_background_clients() -> None:
    """At exit, close the clients of the sync path's background loop (no "unclosed session" noise)."""
    loop = _aio.started_background_loop()  # only if the sync path ever started it
    state = _loop_states().get(loop) if loop is not None else None
    if loop is not None and state is not None and state.clients and loop.is_running():
        try:
            asyncio.run_coroutine_threadsafe(aclose(), loop).result(timeout=2)
        except Exception:  # the interpreter is exiting; nothing useful to report
            pass


atexit.register(_close_background_clients)
