"""The log-probabilities of a prompt's own tokens, from an OpenAI-compatible completions endpoint.

A scorer that reads how likely a model finds a text (GPTScore) sends it as the prompt of the legacy
completions API (``POST /v1/completions``) with ``echo=True`` (the reply repeats the prompt and scores its
tokens), ``logprobs=0`` (each token's own log-probability, no alternatives) and ``max_tokens=1``. One token is
generated and left out: ``max_tokens=0`` would generate none where OpenAI accepts it, but llama-cpp-python
reads 0 as "up to the end of the context" and other servers refuse it.

:func:`prompt_logprobs` sends that request with an :class:`~scorers.llm.engine.LLMEngine`'s settings (endpoint,
key, model, timeout, retries, deadline, concurrency cap) and reply cache, through the judges' HTTP clients
(:func:`~scorers.llm.transport.send`), and returns an :class:`EchoedPrompt`: the echoed text, its tokens, their
character offsets and log-probabilities. :meth:`EchoedPrompt.span` gives the tokens of a part of the prompt.
An endpoint that cannot give a prompt's log-probabilities is an :class:`EndpointConfigError` (a
:class:`~scorers.errors.ConfigError`, so a run stops) saying so, never a fallback: it rejects ``echo`` with
``logprobs`` (OpenAI's chat-era models), sends no ``logprobs``, null ones for the prompt's tokens, or does not
echo the prompt.

>>> from scorers._aio import run_sync
>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, TextCompletions
>>> with LoopbackLLM(completions=TextCompletions(logprob=lambda context, token: -len(token) / 10)) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     echoed = run_sync(prompt_logprobs(engine, "Say it: the cat sat"))
>>> echoed.tokens[-4:], echoed.logprobs[-4:]
((' the', ' cat', ' sat', ' OK'), (-0.4, -0.4, -0.4, -0.3))
>>> [echoed.tokens[i] for i in echoed.span(8, 15)]   # "the cat": " the" holds its space too
[' the', ' cat']
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..errors import JudgeError
from .cache import cache_key
from .config import LLMSettings
from .engine import LLMEngine, _cache_call
from .protocol import LOGPROB_SLACK, ChatRequest, reply_tokens
from .spend import spending
from .transport import Budget, EndpointConfigError, RequestRejected, send
from .usage import failed_call_usage

__all__ = ["EchoedPrompt", "prompt_logprobs", "completion_body"]

#: Tokens generated after the prompt (and left out of it): see the module docstring.
GENERATED_TOKENS = 1

#: Words in an endpoint's refusal that say it cannot give what the request asks (echo with logprobs).
_REFUSALS = ("echo", "logprob")


@dataclass(frozen=True)
class EchoedPrompt:
    """The reply to a :func:`prompt_logprobs` request.

    ``text`` is the echoed text (the prompt, at ``prompt_at``, then the generated token), ``tokens`` its tokens,
    ``offsets`` the character offset in ``text`` of each, and ``logprobs`` each token's log-probability given
    the tokens before it: ``None`` for the text's first token, which has no context. ``prompt_tokens``,
    ``completion_tokens``, ``attempts``, ``cached``, ``latency_s`` and ``sent`` are as a
    :class:`~scorers.llm.engine.ChatResult`'s.
    """

    prompt: str
    text: str
    prompt_at: int
    tokens: tuple[str, ...]
    offsets: tuple[int, ...]
    logprobs: tuple[float | None, ...]
    model: str
    response_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    cached: bool = False
    sent: Mapping[str, Any] = field(default_factory=dict)
    #: Always 0 (a reply is used or the call fails); for :func:`~scorers.llm.usage.call_usage`.
    failed_prompt_tokens: int = 0
    failed_completion_tokens: int = 0

    def span(self, start: int, end: int) -> list[int]:
        """The indices of the tokens that hold characters ``start:end`` of the prompt.

        A token belongs when it covers one of those characters, so a token that also holds the space or
        punctuation before them (``" The"``) is in; a token of no width (a byte of a character that the next
        token completes, as llama.cpp reports it) is in when it sits within them.
        """
        first, last = self.prompt_at + start, self.prompt_at + end
        ends = [*self.offsets[1:], len(self.text)]
        return [
            index
            for index, (begins, stops) in enumerate(zip(self.offsets, ends))
            if (begins < last and stops > first) or (begins == stops and first <= begins < last)
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (what the cache stores)."""
        return {
            "prompt": self.prompt,
            "text": self.text,
            "prompt_at": self.prompt_at,
            "tokens": list(self.tokens),
            "offsets": list(self.offsets),
            "logprobs": list(self.logprobs),
            "model": self.model,
            "response_model": self.response_model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EchoedPrompt":
        """The inverse of :meth:`to_dict`."""
        return cls(
            prompt=data["prompt"],
            text=data["text"],
            prompt_at=data["prompt_at"],
            tokens=tuple(data["tokens"]),
            offsets=tuple(data["offsets"]),
            logprobs=tuple(data["logprobs"]),
            model=data["model"],
            response_model=data.get("response_model"),
            prompt_tokens=data.get("prompt_tokens", 0),
            completion_tokens=data.get("completion_tokens", 0),
        )


def completion_body(prompt: str, model: str) -> dict[str, Any]:
    """The body :func:`prompt_logprobs` sends (and hashes for the cache).

    >>> completion_body("Hi", "m")
    {'model': 'm', 'prompt': 'Hi', 'echo': True, 'logprobs': 0, 'max_tokens': 1, 'temperature': 0}
    """
    return {
        "model": model,
        "prompt": prompt,
        "echo": True,
        "logprobs": 0,
        "max_tokens": GENERATED_TOKENS,
        "temperature": 0,
    }


async def prompt_logprobs(
    engine: LLMEngine, prompt: str, *, model: str | None = None, scorer: str | None = None, read_cache: bool = True
) -> EchoedPrompt:
    """The log-probabilities of ``prompt``'s tokens from ``engine``'s endpoint (see the module docstring).

    ``model`` defaults to the engine's; ``scorer`` names the caller in errors. A reply found in the engine's
    cache makes no request. Raises :class:`EndpointConfigError` when the endpoint cannot give a prompt's
    log-probabilities, :class:`~scorers.errors.JudgeError` for a failed call (with ``usage``: what it cost).
    """
    started = time.perf_counter()
    settings, cache = engine._resolved(scorer)  # the engine's settings and cache, as its own calls use them
    body = completion_body(prompt, model or settings.model)
    sent = {"api": "completions", **{k: v for k, v in body.items() if k not in ("model", "prompt")}}
    key = cache_key(body, base_url=settings.shown_url) if cache is not None else ""
    if cache is not None and read_cache:
        stored = _cache_call(cache.get, key)
        if stored is not None:
            return replace(
                EchoedPrompt.from_dict(stored), cached=True, latency_s=time.perf_counter() - started, sent=sent
            )
    label = f"{scorer}: " if scorer else ""
    budget = Budget(settings.deadline)
    tokens = (0, 0)
    try:
        try:
            as_chat = ChatRequest(messages=[{"role": "user", "content": prompt}], max_tokens=body["max_tokens"])
            async with spending(as_chat, body["model"], scorer) as charge:  # the run's spending cap, if any
                data = await send(body, "chat", settings, scorer, budget, path="/completions")  # OpenAI's legacy API
                charge(*reply_tokens(data, "chat"))
        except RequestRejected as exc:
            if not any(word in exc.detail.lower() for word in _REFUSALS):
                raise
            raise _cannot(
                label,
                settings,
                body,
                budget,
                scorer,
                f"it refused echo with logprobs (HTTP {exc.status}: {exc.detail})",
            ) from None
        tokens = reply_tokens(data, "chat")
        echoed = _read(data, prompt, body, settings, label, scorer, budget)
    except JudgeError as exc:  # what the call cost goes with its error, to count it in the run's usage
        exc.usage = {"model": body["model"], **failed_call_usage(budget.attempts, *tokens)}
        raise
    echoed = replace(
        echoed,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        attempts=budget.attempts,
        latency_s=time.perf_counter() - started,
        sent=sent,
    )
    if cache is not None:
        _cache_call(cache.put, key, echoed.to_dict(), model=echoed.model)
    return echoed


def _cannot(
    label: str, settings: LLMSettings, body: Mapping[str, Any], budget: Budget, scorer: str | None, why: str
) -> EndpointConfigError:
    """The error of an endpoint that cannot give a prompt's log-probabilities: ``why`` says how it showed it."""
    return EndpointConfigError(
        f"{label}the completions endpoint at {settings.shown_url} (model {body['model']!r}) cannot return the "
        f"log-probabilities of a prompt's tokens, which this scorer needs: {why}. Use a server and model that "
        "support echo with logprobs on /v1/completions (llama-cpp-python with logits_all, vLLM, OpenAI's "
        "davinci-002/babbage-002)",
        scorer=scorer,
        attempts=budget.attempts,
    )


def _read(
    data: Any,
    prompt: str,
    body: Mapping[str, Any],
    settings: LLMSettings,
    label: str,
    scorer: str | None,
    budget: Budget,
) -> EchoedPrompt:
    """The :class:`EchoedPrompt` of a reply body; an :class:`EndpointConfigError` when it lacks the prompt's
    log-probabilities, a :class:`JudgeError` when it is malformed."""
    faults = _ReplyFaults(label, settings, body, budget, scorer)
    text, logprobs = _choice_text_and_logprobs(data, faults)
    prompt_at = text.find(prompt)
    if prompt_at < 0:
        raise faults.cannot("its reply does not echo the prompt")
    tokens, values, offsets = _placed_tokens(logprobs, text, faults)
    return EchoedPrompt(
        prompt=prompt,
        text=text,
        prompt_at=prompt_at,
        tokens=tuple(tokens),
        offsets=tuple(offsets),
        logprobs=tuple(_echoed_logprobs(tokens, values, offsets, prompt_at + len(prompt), faults)),
        model=str(body["model"]),
        response_model=data.get("model") if isinstance(data.get("model"), str) else None,
    )


class _ReplyFaults:
    """The two errors of an unusable reply: :meth:`malformed` (a :class:`JudgeError`) and :meth:`cannot` (the
    endpoint cannot give a prompt's log-probabilities: an :class:`EndpointConfigError`, see :func:`_cannot`)."""

    def __init__(
        self, label: str, settings: LLMSettings, body: Mapping[str, Any], budget: Budget, scorer: str | None
    ) -> None:
        self.label, self.settings, self.body, self.budget, self.scorer = label, settings, body, budget, scorer

    def malformed(self, why: str) -> JudgeError:
        return JudgeError(
            f"{self.label}the completions endpoint sent a malformed reply: {why}",
            scorer=self.scorer,
            attempts=self.budget.attempts,
        )

    def cannot(self, why: str) -> EndpointConfigError:
        return _cannot(self.label, self.settings, self.body, self.budget, self.scorer, why)


def _choice_text_and_logprobs(data: Any, faults: _ReplyFaults) -> tuple[str, Mapping[str, Any]]:
    """The first choice's ``text`` and ``logprobs`` (a mapping with a ``tokens`` list)."""
    choices = data.get("choices") if isinstance(data, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise faults.malformed(f"no choices in {str(data)[:200]!r}")
    choice = choices[0]
    text, logprobs = choice.get("text"), choice.get("logprobs")
    if not isinstance(text, str):
        raise faults.malformed("the choice has no text")
    if logprobs is None:
        raise faults.cannot("its reply has no logprobs")
    if not isinstance(logprobs, Mapping) or not isinstance(logprobs.get("tokens"), list):
        raise faults.malformed(f"logprobs without a tokens list: {str(logprobs)[:200]!r}")
    return text, logprobs


def _placed_tokens(
    logprobs: Mapping[str, Any], text: str, faults: _ReplyFaults
) -> tuple[list[str], list[Any], list[int]]:
    """The tokens of ``logprobs``, their ``token_logprobs`` as sent, and each token's offset in ``text``."""
    tokens = logprobs["tokens"]
    values = logprobs.get("token_logprobs")
    if not isinstance(values, list) or len(values) != len(tokens) or not all(isinstance(t, str) for t in tokens):
        raise faults.malformed("tokens and token_logprobs are not lists of one length")
    offsets = _offsets(logprobs.get("text_offset"), tokens, text)
    if offsets is None:
        raise faults.cannot(
            "its reply's tokens cannot be placed in the text: no text_offset list of increasing character offsets, "
            "and the tokens do not spell the text"
        )
    return tokens, values, offsets


def _echoed_logprobs(
    tokens: Sequence[str], values: Sequence[Any], offsets: Sequence[int], prompt_end: int, faults: _ReplyFaults
) -> list[float | None]:
    """Each token's log-probability: ``None`` where the reply gives none, which only the text's first token and
    those after the prompt (at ``prompt_end``) may do."""
    read: list[float | None] = []
    for index, (value, offset) in enumerate(zip(values, offsets)):
        if value is None:
            if index > 0 and offset < prompt_end:
                raise faults.cannot(f"its reply's log-probability of prompt token {index} ({tokens[index]!r}) is null")
            read.append(None)
        elif _is_logprob(value):
            read.append(float(value))
        else:
            raise faults.malformed(f"the log-probability of token {index} is {value!r}, not a finite number <= 0")
    return read


def _is_logprob(value: Any) -> bool:
    """Whether ``value`` is a finite number (not a bool) at most :data:`LOGPROB_SLACK` (a server's rounding)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value <= LOGPROB_SLACK
    )


def _offsets(given: Any, tokens: Sequence[str], text: str) -> list[int] | None:
    """Each token's character offset in ``text``: the reply's ``text_offset`` when it is a list of
    non-decreasing offsets within the text, one per token; else the running length of the tokens, when they
    spell the text; else ``None``."""
    if (
        isinstance(given, list)
        and len(given) == len(tokens)
        and all(isinstance(o, int) and not isinstance(o, bool) and 0 <= o <= len(text) for o in given)
        and all(a <= b for a, b in zip(given, given[1:]))
    ):
        return given
    if "".join(tokens) != text:
        return None
    offsets, at = [], 0
    for token in tokens:
        offsets.append(at)
        at += len(token)
    return offsets
