"""The legacy completions API (``POST /v1/completions``, what GPTScore asks with ``echo`` and ``logprobs``): the
server's :class:`TextCompletions` answers it with scripted log-probabilities of the prompt's tokens
(:func:`loopback_tokens`), or as endpoints that cannot give them do.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from ..._util import is_int
from .base import ComputedProtocol, ServerSettings

__all__ = [
    "COMPLETION_SUPPORT",
    "CompletionsAPI",
    "LLAMA_CPP_NO_LOGITS",
    "TextCompletions",
    "loopback_logprob",
    "loopback_tokens",
]

#: A loopback token: a word or one symbol with the whitespace before it, or whitespace that ends the text.
_LOOPBACK_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")


def loopback_tokens(text: str) -> list[tuple[int, str]]:
    r"""How :class:`~scorers.testing.LoopbackLLM`'s completions endpoint splits text: ``(character offset,
    token)`` per token, a token being a word or one symbol with the whitespace before it (GPT-2's tokenizer also
    attaches the space to the next word), or the whitespace that ends the text.

    >>> loopback_tokens("Hi, you!\n")
    [(0, 'Hi'), (2, ','), (3, ' you'), (7, '!'), (8, '\n')]
    """
    return [(match.start(), match.group()) for match in _LOOPBACK_TOKEN.finditer(text)]


def loopback_logprob(context: str, token: str) -> float:
    """The log-probability :class:`TextCompletions` serves by default for ``token`` after the text ``context``:
    a value in [-4, -0.05) drawn from a hash of both, the same on every call.

    >>> loopback_logprob("The cat", " sat") == loopback_logprob("The cat", " sat") < 0
    True
    """
    digest = hashlib.sha256(f"{context}\x00{token}".encode("utf-8", "surrogatepass")).digest()
    return -0.05 - 3.95 * int.from_bytes(digest[:4], "big") / 2**32


#: What :class:`TextCompletions` can be asked to serve, by ``support``.
COMPLETION_SUPPORT = ("full", "no_logprobs", "generated_only", "no_echo", "refuse_echo", "refuse_logprobs")

#: llama-cpp-python's error (HTTP 500) for logprobs from a model loaded without ``logits_all``.
LLAMA_CPP_NO_LOGITS = "logprobs is not supported for models created with logits_all=False"


@dataclass(frozen=True)
class TextCompletions:
    """How :class:`~scorers.testing.LoopbackLLM` answers ``POST /v1/completions``, the legacy completions API.

    The reply's text is the prompt (with ``echo``) and then ``max_tokens`` (16 when not given) copies of
    ``generated``; its tokens are the :func:`loopback_tokens` of each of the two. With ``logprobs`` (an
    integer) the reply holds, per token, its text, its character offset (``text_offset``) and
    ``logprob(text before it, token)`` (``token_logprobs``; :func:`loopback_logprob` by default), but the
    text's first token, which has no context and gets null, as OpenAI sends it. ``support`` makes it an endpoint that cannot give the prompt's
    log-probabilities:

    * ``"full"`` (default): as above;
    * ``"no_logprobs"``: ``logprobs`` null, as from a server or model without them;
    * ``"generated_only"``: the prompt echoed, but its tokens' log-probabilities null;
    * ``"no_echo"``: ``echo`` ignored, so the text and tokens are the generated ones only;
    * ``"refuse_echo"``: HTTP 400 saying that ``echo`` with ``logprobs`` is not supported for the model;
    * ``"refuse_logprobs"``: HTTP 500 with llama-cpp-python's refusal of logprobs (:data:`LLAMA_CPP_NO_LOGITS`).

    ``edit``, when given, rewrites each reply body before it is sent (odd servers' replies: no ``text_offset``,
    a BOS token's text before the prompt).

    >>> from openai import OpenAI
    >>> from scorers.testing import LoopbackLLM
    >>> with LoopbackLLM(completions=TextCompletions(logprob=lambda context, token: -0.5)) as server:
    ...     client = OpenAI(base_url=server.base_url, api_key="test-key")
    ...     reply = client.completions.create(model="m", prompt="Hi there", echo=True, logprobs=0, max_tokens=1)
    >>> reply.choices[0].text, reply.choices[0].logprobs.tokens, reply.choices[0].logprobs.token_logprobs
    ('Hi there OK', ['Hi', ' there', ' OK'], [None, -0.5, -0.5])
    >>> reply.choices[0].logprobs.text_offset, server.completion_requests[0].body["echo"]
    ([0, 2, 8], True)
    """

    logprob: Callable[[str, str], float] = loopback_logprob
    support: str = "full"
    generated: str = " OK"
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if self.support not in COMPLETION_SUPPORT:
            raise ValueError(f"TextCompletions support must be one of {', '.join(COMPLETION_SUPPORT)}")

    def answer(self, body: Any) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON body that answer a request ``body``."""
        refusal = self._refusal(body)
        if refusal is not None:
            return refusal
        prompt, echo, logprobs = body["prompt"], body.get("echo") is True, body.get("logprobs")
        max_tokens = body.get("max_tokens", 16)
        generated = self.generated * max_tokens
        shown = prompt if echo and self.support != "no_echo" else ""
        text = shown + generated
        start = len(prompt) - len(shown)  # the offsets of a reply without the prompt count from the prompt's end
        # the prompt and the generated text are tokenized apart, as a server does
        tokens = loopback_tokens(shown) + [(len(shown) + at, token) for at, token in loopback_tokens(generated)]
        choice: dict[str, Any] = {"text": text, "index": 0, "logprobs": None, "finish_reason": "length"}
        if logprobs is not None and self.support != "no_logprobs":
            choice["logprobs"] = self._logprobs(prompt[:start], text, tokens, start, len(shown))
        prompt_count, completion_tokens = len(loopback_tokens(prompt)), len(loopback_tokens(generated))
        reply = {
            "id": f"cmpl-{uuid.uuid4().hex[:16]}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": body.get("model") or "loopback",
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_count,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_count + completion_tokens,
            },
        }
        return 200, reply if self.edit is None else self.edit(reply)

    def _refusal(self, body: Any) -> tuple[int, dict[str, Any]] | None:
        """The error that answers a malformed request, or one this endpoint's ``support`` refuses; else None."""
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return 400, _error_body("body must be JSON with a 'prompt' string", "invalid_request_error")
        echo, logprobs, max_tokens = body.get("echo") is True, body.get("logprobs"), body.get("max_tokens", 16)
        if not is_int(max_tokens) or max_tokens < 0 or (logprobs is not None and not is_int(logprobs)):
            return 400, _error_body("max_tokens and logprobs must be integers >= 0", "invalid_request_error")
        if self.support == "refuse_echo" and echo and logprobs is not None:
            return 400, _error_body(
                f"echo is not supported together with logprobs for the model {body.get('model') or 'loopback'} "
                "(loopback)",
                "invalid_request_error",
            )
        if self.support == "refuse_logprobs" and logprobs is not None:
            return 500, _error_body(LLAMA_CPP_NO_LOGITS, "internal_server_error")
        return None

    def _logprobs(
        self, before: str, text: str, tokens: list[tuple[int, str]], start: int, shown: int
    ) -> dict[str, Any]:
        """The ``logprobs`` of ``text``'s ``tokens`` (the text follows ``before``, the prompt not shown; offsets
        count from ``start``): null for the first token of all and, with ``generated_only``, the ``shown`` prompt's."""
        values: list[float | None] = [
            None
            if (start + offset == 0) or (self.support == "generated_only" and offset < shown)
            else self.logprob(before + text[:offset], token)
            for offset, token in tokens
        ]
        return {
            "tokens": [token for _, token in tokens],
            "token_logprobs": values,
            "top_logprobs": [None if value is None else {token: value} for (_, token), value in zip(tokens, values)],
            "text_offset": [start + offset for offset, _ in tokens],
        }


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    """An OpenAI-shaped error body, its ``code`` null."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


class CompletionsAPI(ComputedProtocol):
    """The legacy completions API: answered by the server's ``completions`` (a :class:`TextCompletions`)."""

    name: ClassVar[str] = "completions"
    paths: ClassVar[tuple[str, ...]] = ("/v1/completions",)

    def compute(self, body: Any, server: ServerSettings) -> tuple[int, dict[str, Any]]:
        return server.completions.answer(body)
