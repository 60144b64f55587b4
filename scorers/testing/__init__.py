"""A loopback OpenAI-compatible server for offline tests of LLM judges: the server, the replies it is scripted
with, and the wire protocols it speaks.

:class:`LoopbackLLM` serves ``POST /v1/chat/completions``, ``POST /v1/responses``
(OpenAI's Responses API), ``POST /v1/embeddings``, ``POST /v1/messages`` (Anthropic's Messages API) and
``GET /v1/models`` on
``127.0.0.1`` (a free port) from a background thread, so the real ``openai``
client can talk to it over real HTTP. Replies are scripted by matching on the
request, the same way for both APIs; faults (429 with ``Retry-After``, 5xx, a
llama.cpp-style validation error, hangs, dropped connections) and latency can be
injected; the most recent requests are recorded, within a bound on their number and
size (``RecordedRequest.api`` says which API), and every one is counted.

>>> from openai import OpenAI
>>> with LoopbackLLM(default=Reply.choice("C", reasons="same facts")) as server:
...     rule = server.script(Reply.rate_limited(retry_after=0), match="capital", times=1)
...     client = OpenAI(base_url=server.base_url, api_key="test-key", max_retries=1)
...     reply = client.chat.completions.create(
...         model="gpt-4o-mini", messages=[{"role": "user", "content": "The capital of France?"}])
...     reply.choices[0].message.tool_calls[0].function.arguments
...     [r.status for r in server.requests]
'{"reasons": "same facts", "choice": "C"}'
[429, 200]

Matching: ``match`` is a substring of the last user message, a compiled regular
expression searched in it, or a callable taking the :class:`RecordedRequest`.
Rules are tried in the order they were added; a rule with ``times=N`` applies to
the first N matching requests, then the next matching rule (or the default) answers.
A reply may also be a callable ``(RecordedRequest) -> Reply`` to compute answers.

Offline judges: :func:`auto_reply` answers any judge request validly, read from the request itself (the
forced tool's or the response format's schema, or the choices or scale a text prompt lists), the same answer
for the same prompt; ``python -m scorers loopback`` (:func:`serve`) serves it, after the rules of a replies
file (:data:`REPLIES_FORMAT`), so ``run``, ``meta-eval`` and ``report`` work end to end without a key.

Log-probabilities: a request asking for them (chat ``logprobs: true``; Responses
``include: ["message.output_text.logprobs"]``) gets the reply's scripted
``top_logprobs``, cut to the request's ``top_logprobs`` alternatives per token;
a reply without scripted ones is served as one token of log-probability 0.
``LoopbackLLM(logprobs=False)`` answers like an endpoint without logprobs support
(``logprobs`` null / absent).

The legacy completions API (``POST /v1/completions``, what GPTScore asks with ``echo`` and ``logprobs``) is
answered by the server's :class:`TextCompletions`: scripted log-probabilities of the prompt's tokens
(:func:`loopback_tokens`), or the replies of endpoints that cannot give them.

>>> with LoopbackLLM(default=Reply.text("4", top_logprobs=[{"4": -0.1, "3": -2.5, "5": -3.0}])) as server:
...     client = OpenAI(base_url=server.base_url, api_key="test-key")
...     reply = client.responses.create(model="gpt-4o-mini", input="2+2?", top_logprobs=2,
...                                     include=["message.output_text.logprobs"])
...     [(alt.token, alt.logprob) for alt in reply.output[0].content[0].logprobs[0].top_logprobs]
...     server.requests[0].api, server.requests[0].last_user_message
[('4', -0.1), ('3', -2.5)]
('responses', '2+2?')

The package: ``server`` (:class:`LoopbackLLM`: HTTP, routing, latency and faults, the request log), ``replies``
(:class:`Reply`), ``rules`` (:class:`Rule`, :func:`load_rules`), ``recorded`` (:class:`RecordedRequest`),
``auto`` (:func:`auto_reply`), ``foreground`` (:func:`serve`), and ``protocols``, one module per API.

Protocols: each API is a :class:`~scorers.testing.protocols.WireProtocol`, stateless, in its own module of
:mod:`scorers.testing.protocols` and registered in its ``PROTOCOLS``. It names the API (``name``, which is
:attr:`RecordedRequest.api`) and the ``paths`` it answers, and reads a request into the server's common form:
``messages(body)`` (the conversation as chat messages, which rules match and :func:`auto_reply` reads) and
``ask(body)`` (a forced tool, a JSON schema, logprobs: an :class:`~scorers.testing.protocols.Ask`); it names
the key a request presents (``presented_key(headers)``) and writes its error bodies (``error``). A
:class:`~scorers.testing.protocols.ScriptedProtocol` (a judge's API) checks a body (``invalid``) and renders a
scripted :class:`Reply` (``render(body, reply, server)``); the server picks the reply and serves latency and
faults for every such protocol alike. A :class:`~scorers.testing.protocols.ComputedProtocol` computes its
answer (``compute(body, server)``: embeddings, the completions API). A server speaks the protocols it is given
(``protocols=``; by default every one of ``PROTOCOLS``), Anthropic's Messages API among them: the key in
``x-api-key``, a tool call's ``input`` an object:

>>> import json, urllib.request
>>> with LoopbackLLM(default=Reply.choice("Y"), api_key="k") as server:
...     body = {"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "Is it so?"}]}
...     headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
...     sent = urllib.request.Request(f"{server.base_url}/messages", json.dumps(body).encode(), headers)
...     [(block["type"], block["input"]) for block in json.load(urllib.request.urlopen(sent))["content"]]
...     server.requests[0].api, server.requests[0].last_user_message
[('tool_use', {'choice': 'Y'})]
('anthropic', 'Is it so?')
"""

from __future__ import annotations

from .._replies_format import REPLIES_FORMAT
from .auto import auto_reply
from .foreground import loopback_env, serve
from .nli import TINY_NLI_LABELS, TINY_NLI_WORDS, tiny_nli_model
from .protocols.completions import (
    COMPLETION_SUPPORT,
    LLAMA_CPP_NO_LOGITS,
    TextCompletions,
    loopback_logprob,
    loopback_tokens,
)
from .protocols.embeddings import fake_embedding
from .recorded import RecordedRequest
from .replies import LLAMA_CPP_JSON_SCHEMA_REJECTION, Reply
from .rules import Matcher, ReplySource, Rule, load_rules
from .server import LoopbackLLM

__all__ = [
    "LoopbackLLM",
    "Reply",
    "TextCompletions",
    "loopback_tokens",
    "loopback_logprob",
    "RecordedRequest",
    "Rule",
    "Matcher",
    "ReplySource",
    "LLAMA_CPP_JSON_SCHEMA_REJECTION",
    "LLAMA_CPP_NO_LOGITS",
    "COMPLETION_SUPPORT",
    "REPLIES_FORMAT",
    "auto_reply",
    "fake_embedding",
    "load_rules",
    "serve",
    "loopback_env",
    "tiny_nli_model",
    "TINY_NLI_LABELS",
    "TINY_NLI_WORDS",
]
