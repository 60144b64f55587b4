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
* :class:`~scorers.errors.JudgeError` for every final failure, with the cause,
  (for unusable replies) the raw reply and ``usage`` (the attempts and tokens the
  call cost); neither the API key nor a URL's credentials are ever in a message.
  When the endpoint refuses the configuration itself (HTTP 401/403: the key;
  404: the model or base URL) it is an :class:`EndpointConfigError`, also a
  :class:`~scorers.errors.ConfigError`, on which a run stops. A request the
  endpoint rejects as invalid is a :class:`RequestRejected` at once, never retried.

The sync form (:meth:`LLMEngine.complete_sync`) runs the coroutine on the
process-wide background loop of :mod:`scorers._aio`, so it also works inside a
running event loop (Jupyter, FastAPI). ``openai`` clients are bound to an event
loop, so the engine keeps one client per endpoint *and* loop; an ``openai.AsyncOpenAI``
client passed by the user is used as is, so it logs what it logs (credentials in its URL appear in its HTTP
client's log lines); a sync ``openai.OpenAI`` one is copied into an async one. The clients the engine makes
(that copy included) are given the URL without its credentials and send them as HTTP Basic auth.

Types the judges code against (defined in :mod:`scorers.llm.protocol`; HTTP in :mod:`scorers.llm.transport`)
-------------------------------------------------------------------------------------------------------------
``ChatRequest(messages, model=None, tools=None, tool_choice=None, temperature=None,
max_tokens=None, response_format=None, seed=None, extra={}, cache_tag=None,
reasoning_effort=None, logprobs=False, top_logprobs=None, api=None)``
    ``None`` fields are not sent. ``model=None`` uses the engine's model and
    ``api=None`` the engine's ``api`` setting (``"chat"`` or ``"responses"``).
    ``tools``, ``tool_choice`` and ``response_format`` are given in the chat shape;
    the Responses API gets them converted (:meth:`ChatRequest.body`). ``extra``
    holds further body parameters sent verbatim (e.g. ``{"top_p": 1}``) and is part
    of the cache key; a key the engine sets itself (model, messages, tools, token
    limits, credentials, ...: :func:`~scorers.llm.protocol.engine_owned_keys`) is a
    :class:`~scorers.errors.ConfigError`; ``cache_tag`` is part of the cache key but not sent (e.g.
    ``"sample-3"`` to get independent cached samples of the same prompt).
    ``logprobs=True`` asks for the content tokens' log-probabilities (with
    ``top_logprobs`` alternatives each); a reply without them raises
    :class:`EndpointConfigError`, since that endpoint or model cannot give them.
``ChatResult``
    ``content`` (str or None), ``tool_calls`` (tuple of :class:`ToolCall`: ``name``,
    ``arguments`` as the raw string, ``id``), ``finish_reason``, ``model`` (requested),
    ``response_model`` (reported by the server), ``prompt_tokens``,
    ``completion_tokens`` (every reply's, re-asks included: what is billed),
    ``failed_prompt_tokens``, ``failed_completion_tokens`` (the part of replies that
    were not used), ``latency_s`` (wall time of the call, retries included),
    ``attempts`` (HTTP requests made, retries and re-asks included; 0 when cached),
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

import inspect
import logging
import sqlite3
import time
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional, Sequence

from .._aio import run_sync
from .._util import memoize, spell_out_keywords
from ..errors import BudgetExceeded, ConfigError, JudgeError, JudgeRefused
from .batch.deferral import Pending
from .batch.deferral import current as batch_deferral
from .cache import PAID_BY, CacheError, ReplyCache, cache_key, cache_keys, open_cache, paid_here, stamped
from .config import ENGINE_OPTIONS, LLMSettings, check_options, default_api, default_model, resolve, settings_state
from .protocol import (
    ChatRequest,
    ChatResult,
    InvalidReply,
    TokenLogprob,
    ToolCall,
    sent_settings,
)
from .protocols import ReplyRefused, Tokens, wire
from .redaction import mask_urls, redact
from .spend import spending
from .transport import Budget, EndpointConfigError, RequestRejected, aclose, send
from .usage import failed_call_usage

__all__ = [
    "ChatRequest",
    "ChatResult",
    "ToolCall",
    "TokenLogprob",
    "InvalidReply",
    "EndpointConfigError",
    "RequestRejected",
    "LLMEngine",
    "complete",
    "complete_sync",
    "aclose",
]

log = logging.getLogger("scorers.llm")


def _cache_hit(
    stored: Mapping[str, Any], latency_s: float, validate: Callable[[ChatResult], Any] | None, sent: Mapping[str, Any]
) -> ChatResult | None:
    """A stored reply as a cache hit (``cached``, no attempts), or ``None`` when it no longer passes ``validate``.

    ``sent`` comes from the request's body (the cache key), so replies stored before ``ChatResult``
    had the field get it too. A reply that an earlier attempt at the same block of this run paid for
    (:func:`~scorers.llm.cache.paying`) keeps its figures (``cached`` false): the run paid for it."""
    paid = paid_here(stored)
    if PAID_BY in stored:
        stored = {key: value for key, value in stored.items() if key != PAID_BY}
    hit = ChatResult.from_dict(
        stored, cached=not paid, attempts=stored.get("attempts", 0) if paid else 0, latency_s=latency_s, sent=sent
    )
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


class LLMEngine:
    """Sends chat requests with caching, retries, re-asks and a shared concurrency cap.

    Every option left ``None`` comes from :func:`scorers.llm.configure`, then the
    environment, then the defaults (see :mod:`scorers.llm.config`); settings are
    resolved at each call, so a later ``configure()`` applies. The engine holds no
    connection itself, so it can be pickled (unless ``client=`` is given).
    """

    def __init__(self, **options: Any) -> None:
        """The options are the settings of :class:`~scorers.llm.config.LLMSettings` but the :func:`configure`-only
        ones (:data:`~scorers.llm.config.ENGINE_OPTIONS`), each validated as its field; ``None`` leaves one unset.
        ``client=`` (an ``openai`` client) replaces ``base_url=``/``api_key=``. ``help(LLMEngine)`` lists the options
        with what each must be:
        """
        options = check_options(options, owner="LLMEngine.__init__()")
        if "client" in options and ("api_key" in options or "base_url" in options):
            raise ConfigError("pass either client= or api_key=/base_url=, not both")
        self._options = options
        self._memo: dict[str | None, tuple[tuple[Any, ...], LLMSettings, ReplyCache | None]] = {}

    def settings(self, api: str | None = None) -> LLMSettings:
        """The resolved settings (for the wire protocol ``api``, when a request names another than the engine's
        own); raises :class:`ConfigError` when no API key is available."""
        return self._resolved(api=api)[0]

    def _resolved(self, scorer: str | None = None, api: str | None = None) -> tuple[LLMSettings, ReplyCache | None]:
        """The settings (for requests naming the protocol ``api``; ``None``: the engine's own) and the open cache,
        memoised until ``configure()``, the environment or the working folder changes
        (:func:`~scorers.llm.config.settings_state`); a missing API key is a :class:`~scorers.errors.ConfigError`
        naming ``scorer``."""
        state = settings_state()
        memo = self._memo.get(api)
        if memo is not None and memo[0] == state:
            return memo[1], memo[2]
        options = self._options if api is None else {**self._options, "api": api}
        settings = resolve(scorer=scorer, **options)
        cache = open_cache(settings.cache) if settings.cache is not None else None
        self._memo[api] = (state, settings, cache)
        return settings, cache

    @property
    def model(self) -> str:
        """The model used for requests that name none (known without an API key)."""
        return default_model(self._options.get("model"))

    @property
    def api(self) -> str:
        """The wire protocol of requests that name none (known without an API key): the engine's ``api=``, else the
        configured one, else ``"chat"``."""
        return default_api(self._options.get("api"))

    def __repr__(self) -> str:
        shown = {k: v for k, v in self._options.items() if k not in ("api_key", "client")}
        return mask_urls(f"LLMEngine({', '.join(f'{k}={v!r}' for k, v in shown.items())})")

    def __getstate__(self) -> dict[str, Any]:
        state = {**self.__dict__, "_memo": {}}  # the memo holds the key and an open cache
        if "client" in self._options:  # copy.copy works; pickling raises a TypeError that says why
            state["_options"] = {
                **self._options,
                "client": NotPicklable(
                    self._options["client"],
                    "an LLMEngine with a client= cannot be pickled (an openai client holds "
                    "connections and locks); pass base_url=/api_key= instead",
                ),
            }
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(NotPicklable.unwrap_values(state))
        self._options = NotPicklable.unwrap_values(self._options)

    def complete_sync(
        self, request: ChatRequest, *, validate: Callable[[ChatResult], Any] | None = None, scorer: str | None = None
    ) -> ChatResult:
        """:meth:`complete` from synchronous code (works inside a running event loop too)."""
        return run_sync(self.complete(request, validate=validate, scorer=scorer))

    def lookup(
        self,
        requests: Sequence[ChatRequest],
        *,
        validate: Callable[[ChatResult], Any] | None = None,
        keys_out: list[str] | None = None,
    ) -> list[ChatResult | None]:
        """The cached replies of many requests at once: a hit (``cached=True``) or ``None`` per request, in order.

        Settings are resolved once and the cache is read in a few queries, so a
        cached batch costs microseconds per request. A stored reply that no longer
        passes ``validate`` is a miss, as in :meth:`complete`. Without a cache every
        request misses; a failing cache warns and misses. Raises :class:`ConfigError`
        when no API key is available. Send the misses with ``complete(..., read_cache=False)``. ``keys_out``, a list,
        receives the requests' cache keys, when they are all of the engine's own protocol.
        """
        started = time.perf_counter()
        settings, cache = self._resolved()
        if cache is None or not requests:
            return [None] * len(requests)
        if any(r.api is not None and r.api != settings.api for r in requests):  # requests of several protocols
            return [self._lookup_one(r, validate, started) for r in requests]
        bodies = [_body(r, settings) for r in requests]
        keys = _keys_of(requests, bodies, settings)
        if keys_out is not None:
            keys_out.extend(keys)
        stored = _cache_call(cache.get_many, keys) or {}
        deferral = batch_deferral()
        if deferral is not None:  # a batch run: the replies of its batch are read through complete(), as sent now
            stored = deferral.unanswered(stored)
        latency = time.perf_counter() - started
        return [
            None
            if (entry := stored.get(key)) is None
            else _cache_hit(entry, latency, validate, sent_settings(body, api))
            for key, (body, api) in zip(keys, bodies)
        ]

    def request_keys(self, requests: Sequence[ChatRequest]) -> list[tuple[str, dict[str, Any]]] | None:
        """Each request's cache key with the settings it sends (``ChatResult.sent``); ``None`` where derived keys
        cannot stand for them: no cache, a batch run (its replies are read through :meth:`complete`), or requests
        of another protocol than the engine's."""
        settings, cache = self._resolved()
        if cache is None or batch_deferral() is not None or any(r.api not in (None, settings.api) for r in requests):
            return None
        bodies = [_body(r, settings) for r in requests]
        return list(zip(_keys_of(requests, bodies, settings), (sent_settings(body, api) for body, api in bodies)))

    def lookup_linked(
        self,
        keys: Sequence[str],
        sent: Sequence[Mapping[str, Any]],
        *,
        validate: Callable[[ChatResult], Any] | None = None,
    ) -> tuple[list[ChatResult | None], list[str | None]]:
        """The cached replies that derived ``keys`` (:func:`~scorers.llm.cache.derived_keys`) link to, each read as
        :meth:`lookup` reads a hit (``sent``: the settings each request sends), and the key of each reply (``None``
        for a miss), in one query; a failing cache warns and misses."""
        started = time.perf_counter()
        _, cache = self._resolved()
        if cache is None or not keys:
            return [None] * len(keys), [None] * len(keys)
        stored = _cache_call(cache.get_linked, keys) or {}
        latency = time.perf_counter() - started
        hits: list[ChatResult | None] = []
        targets: list[str | None] = []
        for key, settings_sent in zip(keys, sent):
            entry = stored.get(key)
            hit = None if entry is None else _cache_hit(entry[1], latency, validate, settings_sent)
            hits.append(hit)
            targets.append(None if hit is None else entry[0])  # type: ignore[index]
        return hits, targets

    def link(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Link each derived key to the key of its stored reply (``(derived, reply key)`` pairs); a failing cache
        warns."""
        _, cache = self._resolved()
        if cache is not None and pairs:
            _cache_call(cache.link, pairs)

    def _lookup_one(
        self, request: ChatRequest, validate: Callable[[ChatResult], Any] | None, started: float
    ) -> ChatResult | None:
        """:meth:`lookup` of one request, with the settings of its own protocol."""
        settings, cache = self._resolved(api=request.api)
        if cache is None:
            return None
        body, api = _body(request, settings)
        key = cache_key(body, base_url=key_endpoint(settings), tag=request.key_tag(body))
        deferral = batch_deferral()
        if deferral is not None and key in deferral:  # a batch run's reply: read through complete(), as sent now
            return None
        entry = _cache_call(cache.get, key)
        return (
            None
            if entry is None
            else _cache_hit(entry, time.perf_counter() - started, validate, sent_settings(body, api))
        )

    async def complete(
        self,
        request: ChatRequest,
        *,
        validate: Callable[[ChatResult], Any] | None = None,
        scorer: str | None = None,
        read_cache: bool = True,
    ) -> ChatResult:
        """Send ``request``; return a reply that passed ``validate``, or raise :class:`JudgeError`.

        ``scorer`` names the judge in error messages. ``read_cache=False`` skips the
        cache lookup (the caller already had a miss from :meth:`lookup`); a valid
        reply is still stored.
        """
        started = time.perf_counter()
        settings, cache = self._resolved(scorer, request.api)
        body, api = _body(request, settings)
        sent = sent_settings(body, api)
        deferral = batch_deferral()
        key = (
            cache_key(body, base_url=key_endpoint(settings), tag=request.key_tag(body))
            if cache is not None or deferral is not None
            else ""
        )

        async def ask(first: Any = None) -> ChatResult:
            """Ask until a reply passes ``validate``, and store it; ``first``: a reply already in hand (a batch's),
            read as the first attempt's."""
            budget = Budget(settings.deadline)
            spent = _Spent()
            try:
                reply = await _ask(request, body, sent, api, settings, validate, scorer, budget, spent, first)
            except JudgeError as exc:  # what the call cost goes with its error, to count it in the run's usage
                if budget.attempts or not isinstance(exc, BudgetExceeded):  # a call never sent is no failed call
                    usage = failed_call_usage(budget.attempts, spent.prompt, spent.completion)
                    exc.usage = {"model": body["model"], **usage, **spent.details()}
                raise
            object.__setattr__(reply, "latency_s", time.perf_counter() - started)  # a fresh reply of this call
            if cache is not None:
                _cache_call(cache.put, key, stamped(reply.to_dict()), model=reply.model)
            return reply

        if deferral is not None and key in deferral:  # a batch run: the batch's reply, read as if it came now
            return await deferral.settle(key, ask)
        if cache is not None and read_cache:
            stored = _cache_call(cache.get, key)
            if stored is not None:
                hit = _cache_hit(stored, time.perf_counter() - started, validate, sent)
                if hit is not None:
                    return hit
        if deferral is not None:  # a batch run's pass: held for the batch
            deferral.defer(Pending(key, body, api, settings, scorer))
        return await ask()


# The options as the signature and the docstring show them, from their declaration (LLMSettings) alone.
spell_out_keywords(
    LLMEngine.__init__, {name: Optional[LLMSettings.model_fields[name].annotation] for name in ENGINE_OPTIONS}, {}
)
LLMEngine.__init__.__doc__ = (
    inspect.cleandoc(LLMEngine.__init__.__doc__ or "")
    + "\n"
    + "".join(f"\n- ``{name}``: {LLMSettings.settings[name].expected}" for name in ENGINE_OPTIONS)
)


@dataclass
class _Spent:
    """The tokens the replies of one call reported: all of them, and those of replies that were not used."""

    prompt: int = 0
    completion: int = 0
    failed_prompt: int = 0
    failed_completion: int = 0
    cached_prompt: int = 0
    reasoning: int = 0

    def charge(self, tokens: Tokens, *, used: bool) -> None:
        self.prompt += tokens.prompt
        self.completion += tokens.completion
        self.cached_prompt += tokens.cached_prompt
        self.reasoning += tokens.reasoning
        if not used:
            self.refund(tokens)

    def details(self) -> dict[str, int]:
        """The counts of :data:`~scorers.llm.protocol.ChatResult` ``cached_prompt_tokens`` and ``reasoning_tokens``,
        where not zero (a usage record without them reads as it did before they existed)."""
        counts = {"cached_prompt_tokens": self.cached_prompt, "reasoning_tokens": self.reasoning}
        return {name: count for name, count in counts.items() if count}

    def refund(self, tokens: Tokens) -> None:
        """Count a reply's tokens as those of a reply not used: one unreadable or refused, or one charged as used
        that ``validate`` refused after all."""
        self.failed_prompt += tokens.prompt
        self.failed_completion += tokens.completion


async def _ask(
    request: ChatRequest,
    body: dict[str, Any],
    sent: Mapping[str, Any],
    api: str,
    settings: LLMSettings,
    validate: Callable[[ChatResult], Any] | None,
    scorer: str | None,
    budget: Budget,
    spent: _Spent,
    first: Any = None,
) -> ChatResult:
    """Send ``body`` until a reply passes ``validate`` (at most ``max_reasks`` more times); charge every reply's
    tokens to ``spent``. ``first`` (a batch's reply) stands for the first attempt's. Raises :class:`JudgeError`."""
    label = f"{scorer}: " if scorer else ""
    last_reply: ChatResult | None = None
    last_reason = ""
    asks = settings.max_reasks + 1
    protocol = wire(api)
    for reask in range(asks):
        if first is not None and reask == 0:
            data, budget.attempts = first, budget.attempts + 1
        else:
            async with spending(request, body["model"], scorer) as charge:  # the run's spending cap, if any
                data = await send(body, api, settings, scorer, budget)
                charge(*protocol.tokens(data))
        tokens = protocol.tokens(data)
        try:
            reply = protocol.parse(data, model=body["model"])
        except ReplyRefused as exc:
            spent.charge(tokens, used=False)
            raise JudgeRefused(
                redact(f"{label}the provider refused to answer ({api} API): {exc.reason}", settings.api_key),
                scorer=scorer,
                raw=data if isinstance(data, Mapping) else None,
                attempts=budget.attempts,
            ) from None
        except InvalidReply as exc:
            spent.charge(tokens, used=False)
            last_reply, last_reason = None, exc.reason
            log.info("%sunusable completion (ask %d of %d): %s", label, reask + 1, asks, exc.reason)
            continue
        spent.charge(tokens, used=True)
        if request.logprobs and reply.logprobs is None:
            raise EndpointConfigError(
                f"{label}the endpoint returned no logprobs for model {body['model']!r} at {settings.shown_url} "
                f"({api} API) although logprobs=True asked for them: the endpoint or model does not support "
                f"them, or not for this kind of reply (OpenAI gives none for tool calls)",
                scorer=scorer,
                raw=reply.to_dict(),
                attempts=budget.attempts,
            )
        if request.top_logprobs and reply.logprobs and not all(token.top for token in reply.logprobs):
            raise EndpointConfigError(
                f"{label}the endpoint at {settings.shown_url} returned logprobs without the top_logprobs "
                f"alternatives asked for ({request.top_logprobs} per token) for model {body['model']!r} ({api} API): "
                "the endpoint or model does not support them. Use an endpoint that returns top_logprobs, or a "
                "setting that needs none (G-Eval: score_mode='sampling', its estimate from k samples, or "
                "score_mode='top_token', the number the model wrote)",
                scorer=scorer,
                raw=reply.to_dict(),
                attempts=budget.attempts,
            )
        reply = replace(
            reply,
            prompt_tokens=spent.prompt,
            completion_tokens=spent.completion,
            cached_prompt_tokens=spent.cached_prompt,
            reasoning_tokens=spent.reasoning,
            failed_prompt_tokens=spent.failed_prompt,
            failed_completion_tokens=spent.failed_completion,
            attempts=budget.attempts,
            reasks=reask,
            sent=sent,
        )
        try:
            parsed = validate(reply) if validate is not None else None
        except InvalidReply as exc:
            spent.refund(tokens)
            last_reply, last_reason = reply, exc.reason
            log.info("%sunusable judge reply (ask %d of %d): %s", label, reask + 1, asks, exc.reason)
            continue
        object.__setattr__(reply, "parsed", parsed)  # the reply is still private to this call: set, not copied
        return reply
    raise JudgeError(
        redact(
            f"{label}the judge's reply was unusable after {asks} ask{'s' if asks > 1 else ''}: {last_reason}",
            settings.api_key,
        ),
        scorer=scorer,
        raw=None if last_reply is None else last_reply.to_dict(),
        attempts=budget.attempts,
    )


def key_endpoint(settings: LLMSettings) -> str:
    """The endpoint as the cache key names it: its masked URL, and the protocol for those other than OpenAI's
    (whose bodies cannot coincide: ``messages`` and ``input``), so that verdicts of different protocols never mix
    even where one server speaks several (a proxy, :class:`~scorers.testing.LoopbackLLM`)."""
    if wire(settings.api).client_family == "openai":
        return settings.shown_url
    return f"{settings.api}+{settings.shown_url}"


def _keys_of(
    requests: Sequence[ChatRequest], bodies: Sequence[tuple[dict[str, Any], str]], settings: LLMSettings
) -> list[str]:
    """The cache keys of ``requests`` with their ``bodies`` (:func:`_body`)."""
    return cache_keys(
        [body for body, _ in bodies],
        base_url=key_endpoint(settings),
        tags=[r.key_tag(body) for r, (body, _) in zip(requests, bodies)],
    )


def _body(request: ChatRequest, settings: LLMSettings) -> tuple[dict[str, Any], str]:
    """The body of ``request`` under ``settings`` and the API it is for."""
    api = request.api or settings.api
    return request.body(settings.model, api=api, reasoning=settings.reasoning), api


def _cache_call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a cache read/write inline (sub-millisecond in WAL mode); a failing cache (the SQLite file, or a Redis
    server that was reached before: :class:`~scorers.llm.cache.CacheError`) warns and is bypassed."""
    try:
        return method(*args, **kwargs)
    except (sqlite3.Error, CacheError) as exc:
        warnings.warn(
            f"the LLM reply cache failed ({exc}); going on without it for this call", RuntimeWarning, stacklevel=3
        )
        return None


@memoize
def _default_engine() -> LLMEngine:
    """The engine of :func:`complete`: no options of its own, so every setting comes from :func:`configure`."""
    return LLMEngine()


async def complete(
    request: ChatRequest, *, validate: Callable[[ChatResult], Any] | None = None, scorer: str | None = None
) -> ChatResult:
    """:meth:`LLMEngine.complete` with the process-wide settings (:func:`scorers.llm.configure`)."""
    return await _default_engine().complete(request, validate=validate, scorer=scorer)


def complete_sync(
    request: ChatRequest, *, validate: Callable[[ChatResult], Any] | None = None, scorer: str | None = None
) -> ChatResult:
    """:func:`complete` from synchronous code."""
    return _default_engine().complete_sync(request, validate=validate, scorer=scorer)
