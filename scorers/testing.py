"""A loopback OpenAI-compatible server for offline tests of LLM judges.

:class:`LoopbackLLM` serves ``POST /v1/chat/completions``, ``POST /v1/responses``
(OpenAI's Responses API), ``POST /v1/embeddings`` and ``GET /v1/models`` on
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
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import math
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO, Union

from ._replies_format import REPLIES_FORMAT
from ._util import is_int, memoize, optional_import
from .errors import ConfigError

__all__ = [
    "LoopbackLLM",
    "Reply",
    "TextCompletions",
    "loopback_tokens",
    "loopback_logprob",
    "RecordedRequest",
    "Rule",
    "LLAMA_CPP_JSON_SCHEMA_REJECTION",
    "REPLIES_FORMAT",
    "auto_reply",
    "load_rules",
    "serve",
    "tiny_nli_model",
]

#: The error message llama-cpp-python's server (0.3.36) sends, with HTTP 500 and ``"type":
#: "internal_server_error"``, for ``response_format`` type ``json_schema`` (its request schema allows only
#: ``text`` and ``json_object``): FastAPI's validation error, then where it was raised (the path is the venv's).
LLAMA_CPP_JSON_SCHEMA_REJECTION = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n"
    '  File "/venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, in create_chat_completion\n'
    "    POST /v1/chat/completions"
)


@dataclass(frozen=True)
class Reply:
    """One scripted answer of the server: a chat completion or a fault.

    Build replies with the class methods (:meth:`choice`, :meth:`tool_call`,
    :meth:`text`, :meth:`json`, :meth:`rate_limited`, :meth:`error`,
    :meth:`validation_error`, :meth:`hang`, :meth:`drop`). ``latency`` (seconds)
    overrides the server's global latency. ``usage`` is ``(prompt_tokens,
    completion_tokens)``; by default both are word counts. ``top_logprobs`` scripts
    the log-probabilities served when a request asks for them: one ``{token:
    logprob}`` mapping per content token, the first entry being the token chosen.
    """

    kind: str = "text"  # "text" | "tool" | "error" | "hang" | "drop" | "raw"
    content: str | None = None
    tool_name: str = "select_choice"
    arguments: str = "{}"
    status: int = 200
    retry_after: float | None = None
    error_message: str = ""
    latency: float | None = None
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None
    #: Per content token, its alternatives ``{token: logprob}``; the first entry is the token chosen.
    top_logprobs: tuple[Mapping[str, float], ...] | None = None
    #: The ``error.type`` of an error body, whose ``code`` is then ``null`` as llama.cpp sends it (default:
    #: ``rate_limit_exceeded`` for 429, else ``server_error``, the ``code`` too).
    error_type: str | None = None

    def __post_init__(self) -> None:
        if self.top_logprobs is not None:
            tokens = tuple(dict(alternatives) for alternatives in self.top_logprobs)
            if not all(tokens):
                raise ValueError("Reply top_logprobs: every token needs at least one {token: logprob} entry")
            object.__setattr__(self, "top_logprobs", tokens)

    # ---------------------------------------------------------------- builders
    @classmethod
    def text(cls, content: str, **options: Any) -> "Reply":
        """A plain assistant message, no tool call.

        >>> Reply.text("The answer is C").content
        'The answer is C'
        """
        return cls(kind="text", content=content, **options)

    @classmethod
    def json(cls, value: Any, **options: Any) -> "Reply":
        """An assistant message whose content is ``value`` as JSON (for ``response_format`` modes)."""
        return cls(kind="text", content=json.dumps(value), **options)

    @classmethod
    def tool_call(cls, arguments: Mapping[str, Any] | str, *, name: str = "select_choice", **options: Any) -> "Reply":
        """A tool call; a ``str`` ``arguments`` is sent verbatim (use it for malformed JSON).

        >>> Reply.tool_call("{not json", name="select_choice").arguments
        '{not json'
        """
        raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        return cls(kind="tool", tool_name=name, arguments=raw, **options)

    @classmethod
    def choice(cls, choice: str, *, reasons: str | None = None, name: str = "select_choice", **options: Any) -> "Reply":
        """A ``select_choice`` tool call choosing ``choice`` (with ``reasons`` first when given)."""
        args: dict[str, Any] = {} if reasons is None else {"reasons": reasons}
        args["choice"] = choice
        return cls.tool_call(args, name=name, **options)

    @classmethod
    def error(
        cls,
        status: int = 500,
        message: str = "scripted server error",
        *,
        retry_after: float | None = None,
        **options: Any,
    ) -> "Reply":
        """An HTTP error with an OpenAI-shaped error body (and ``Retry-After`` when given)."""
        return cls(kind="error", status=status, error_message=message, retry_after=retry_after, **options)

    @classmethod
    def validation_error(cls, message: str = LLAMA_CPP_JSON_SCHEMA_REJECTION, **options: Any) -> "Reply":
        """HTTP 500 with a request-validation message, as llama-cpp-python's server answers a request its
        schema refuses (by default its exact reply to ``response_format`` type ``json_schema``)."""
        return cls(kind="error", status=500, error_message=message, error_type="internal_server_error", **options)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0, **options: Any) -> "Reply":
        """HTTP 429 with a ``Retry-After`` header in seconds (omitted when ``None``)."""
        return cls.error(429, "Rate limit reached (scripted)", retry_after=retry_after, **options)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> "Reply":
        """Answer nothing for ``seconds`` (past the client's timeout), then a 504."""
        return cls(kind="hang", latency=seconds, status=504, error_message="scripted hang ended")

    @classmethod
    def raw(cls, body: Any, *, status: int = 200, **options: Any) -> "Reply":
        """Send ``body`` as is: a ``str`` verbatim, anything else as JSON (for malformed completions)."""
        return cls(kind="raw", content=body if isinstance(body, str) else json.dumps(body), status=status, **options)

    @classmethod
    def drop(cls, **options: Any) -> "Reply":
        """Close the connection without sending a response."""
        return cls(kind="drop", **options)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> "Reply":
        """A reply written as data, one of the forms of :data:`REPLIES_FORMAT` (raises ``ValueError`` otherwise).

        >>> Reply.from_dict({"choice": "B", "reasons": "adds a fact"}) == Reply.choice("B", reasons="adds a fact")
        True
        >>> Reply.from_dict({"error": 400, "message": "no"}).status
        400
        """
        forms = {"choice": {"reasons"}, "text": set(), "json": set(), "tool": {"arguments"}, "error": {"message"}}
        kinds = [key for key in forms if key in spec]
        unknown = set(spec) - set(kinds) - set().union(*(forms[k] for k in kinds))
        if len(kinds) != 1 or unknown:
            raise ValueError(
                f'a reply is one of {{"choice": ...}}, {{"text": ...}}, {{"json": ...}}, '
                f'{{"tool": NAME, "arguments": {{...}}}} or {{"error": STATUS}}, got {dict(spec)}'
            )
        kind, value = kinds[0], spec[kinds[0]]
        if kind == "json":
            return cls.json(value)
        if kind == "tool":
            arguments = spec.get("arguments", {})
            if not isinstance(arguments, dict):
                raise ValueError(f"arguments: a JSON object, got {arguments!r}")
            return cls.tool_call(arguments, name=_text_value(value, "tool"))
        if kind == "error":
            if not is_int(value) or not 400 <= value <= 599:
                raise ValueError(f"error: an HTTP status from 400 to 599, got {value!r}")
            return cls.error(value, _text_value(spec.get("message", "scripted error"), "message"))
        if kind == "choice":
            reasons = spec.get("reasons")
            return cls.choice(
                _text_value(value, "choice"), reasons=None if reasons is None else _text_value(reasons, "reasons")
            )
        return cls.text(_text_value(value, "text"))


Matcher = Union[str, "re.Pattern[str]", Callable[["RecordedRequest"], bool], None]
ReplySource = Union[Reply, Callable[["RecordedRequest"], Reply]]


@dataclass
class RecordedRequest:
    """A request the server received: method, path, lower-cased headers and the parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    #: HTTP status the server answered with (``0`` for a dropped connection or a hang).
    status: int = 0
    #: The query string's parameters (the last value of a repeated one).
    query: dict[str, str] = field(default_factory=dict)
    #: The body's size in bytes, as received.
    size: int = 0

    @property
    def api(self) -> str | None:
        """``"chat"``, ``"responses"`` or ``"completions"`` by the path hit; ``None`` for other paths."""
        if self.path.endswith("/chat/completions"):
            return "chat"
        if self.path.endswith("/v1/completions"):
            return "completions"
        return "responses" if self.path.endswith("/responses") else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat ``messages``, or the Responses ``input`` (a string input as one user message)."""
        body = self.body if isinstance(self.body, dict) else {}
        messages = body.get("messages" if self.api != "responses" else "input")
        if isinstance(messages, str):
            return [{"role": "user", "content": messages}]
        return messages if isinstance(messages, list) else []

    @property
    def last_user_message(self) -> str:
        """Text of the last ``user`` message (content parts joined), ``""`` if none."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None


@dataclass
class Rule:
    """A scripted rule: answer requests that ``match`` with ``reply``, at most ``times`` times."""

    reply: ReplySource
    match: Matcher = None
    times: int | None = None
    used: int = 0

    def matches(self, request: RecordedRequest) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.match is None:
            return True
        if isinstance(self.match, str):
            return self.match in request.last_user_message
        if isinstance(self.match, re.Pattern):
            return self.match.search(request.last_user_message) is not None
        return bool(self.match(request))


def load_rules(path: str | Path) -> list[Rule]:
    """The rules of a replies file (:data:`REPLIES_FORMAT`); a bad line raises :class:`ConfigError` naming it.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "replies.jsonl")
    >>> _ = open(path, "w").write('{"match": "Venus", "reply": {"choice": "D"}, "times": 1}\\n')
    >>> [(rule.match, rule.reply.arguments, rule.times) for rule in load_rules(path)]
    [('Venus', '{"choice": "D"}', 1)]
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--replies {path}: cannot read it ({exc})") from None
    rules = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("reply"), dict)
                or set(entry) - {"match", "reply", "times"}
            ):
                raise ValueError('expected {"match": TEXT, "reply": {...}, "times": N} ("match" and "times" optional)')
            match, times = entry.get("match"), entry.get("times")
            if match is not None and not isinstance(match, str):
                raise ValueError(f"match: a text, got {match!r}")
            if times is not None and (not is_int(times) or times < 1):
                raise ValueError(f"times: a whole number of at least 1, got {times!r}")
            rules.append(Rule(reply=Reply.from_dict(entry["reply"]), match=match, times=times))
        except ValueError as exc:
            raise ConfigError(f"{path}:{number}: {exc}") from None
    return rules


def _text_value(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key}: a text, got {value!r}")
    return value


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _word_count(text: str) -> int:
    return len(text.split())


class LoopbackLLM:
    """An OpenAI-compatible HTTP server on 127.0.0.1, run in a background thread.

    Use it as a context manager (or call :meth:`start`/:meth:`stop`);
    ``base_url`` ends in ``/v1``. ``latency`` delays every reply (seconds) unless
    the reply sets its own. With ``api_key`` set, requests bearing another key
    get a 401. ``embedding_dim`` is the length of the fake embedding vectors.
    ``logprobs=False`` serves no log-probabilities even when asked, like an
    endpoint or model without logprobs support. ``port`` is the port to listen
    on (default 0: a free one, never one an earlier server of this process had).
    ``completions`` answers ``POST /v1/completions`` (default: ``TextCompletions()``).

    ``requests`` holds the most recent requests, at most ``record_limit`` of them
    with at most ``record_bytes`` of bodies in all (always the newest one), so a
    long-running server keeps bounded memory; ``request_count`` counts every
    request since the start (or :meth:`reset`).
    """

    def __init__(
        self,
        *,
        default: ReplySource | None = None,
        latency: float = 0.0,
        api_key: str | None = None,
        models: tuple[str, ...] = ("gpt-4o-mini", "gpt-4o", "text-embedding-3-small"),
        embedding_dim: int = 16,
        logprobs: bool = True,
        port: int = 0,
        completions: "TextCompletions | None" = None,
        record_limit: int = 1_000,
        record_bytes: int = 32 * 2**20,
    ) -> None:
        self.default: ReplySource = default if default is not None else Reply.text("OK")
        self.latency = latency
        self.logprobs = logprobs
        self.completions = completions if completions is not None else TextCompletions()
        self.api_key = api_key
        self.models = models
        self.embedding_dim = embedding_dim
        self.rules: list[Rule] = []
        self.requests: list[RecordedRequest] = []
        self.record_limit, self.record_bytes = record_limit, record_bytes
        self._recorded_bytes = 0
        self._received = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: Any = None
        self._stopping: asyncio.Event | None = None
        self._listen_port = port
        self.port: int | None = None

    # ------------------------------------------------------------- scripting
    def script(self, reply: ReplySource, *, match: Matcher = None, times: int | None = None) -> Rule:
        """Add a rule; rules are tried in order before the default. Returns the rule (``rule.used`` counts hits)."""
        rule = Rule(reply=reply, match=match, times=times)
        with self._lock:
            self.rules.append(rule)
        return rule

    def reset(self) -> None:
        """Forget the rules, the recorded requests and the in-flight maximum."""
        with self._lock:
            self.rules.clear()
            self.requests.clear()
            self._recorded_bytes = self._received = 0
            self.max_in_flight = self.in_flight

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("LoopbackLLM is not running; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded requests to ``/v1/chat/completions``."""
        with self._lock:
            return [r for r in self.requests if r.api == "chat"]

    @property
    def responses_requests(self) -> list[RecordedRequest]:
        """The recorded requests to ``/v1/responses``."""
        with self._lock:
            return [r for r in self.requests if r.api == "responses"]

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        """The recorded requests to ``/v1/completions`` (the legacy completions API)."""
        with self._lock:
            return [r for r in self.requests if r.api == "completions"]

    @property
    def request_count(self) -> int:
        """Every request received since the start (or :meth:`reset`), recorded or not."""
        with self._lock:
            return self._received

    # ------------------------------------------------------------- lifecycle
    def start(self) -> "LoopbackLLM":
        if self._thread is not None:
            return self
        optional_import("aiohttp.web", scorer="LoopbackLLM", extra="aiohttp", package="aiohttp")
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name="loopback-llm", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            raise RuntimeError(f"LoopbackLLM failed to start: {failure[0]}") from failure[0]
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        loop = self._loop
        stopping = self._stopping
        if stopping is not None:
            loop.call_soon_threadsafe(stopping.set)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)
        self._thread = None
        self._loop = None
        self.port = None

    def __enter__(self) -> "LoopbackLLM":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    async def _start_site(self) -> None:
        from aiohttp import web

        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/v1/completions", self._text_completion)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
        await runner.setup()
        sock = _listening_socket(self._listen_port) if self._listen_port else _unused_port_socket()
        site = web.SockSite(runner, sock, backlog=1024)
        await site.start()
        self._runner = runner
        self.port = runner.addresses[0][1]

    # -------------------------------------------------------------- handlers
    async def _record(self, request: Any) -> RecordedRequest:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            received_at=time.time(),
            query=dict(request.query),
            size=len(raw),
        )
        with self._lock:
            self._received += 1
            self.requests.append(recorded)
            self._recorded_bytes += recorded.size
            drop = 0  # the oldest records past either bound (the newest is always kept)
            while drop < len(self.requests) - 1 and (
                len(self.requests) - drop > self.record_limit or self._recorded_bytes > self.record_bytes
            ):
                self._recorded_bytes -= self.requests[drop].size
                drop += 1
            del self.requests[:drop]
        return recorded

    def _authorised(self, recorded: RecordedRequest) -> bool:
        return self.api_key is None or recorded.headers.get("authorization") == f"Bearer {self.api_key}"

    def _pick(self, recorded: RecordedRequest) -> Reply:
        with self._lock:
            chosen: ReplySource = self.default
            for rule in self.rules:
                if rule.matches(recorded):
                    rule.used += 1
                    chosen = rule.reply
                    break
        return chosen(recorded) if callable(chosen) else chosen

    async def _chat(self, request: Any) -> Any:
        return await self._generate(request, self._completion)

    async def _responses(self, request: Any) -> Any:
        return await self._generate(request, self._response)

    async def _generate(self, request: Any, shape: Callable[[RecordedRequest, Reply], dict[str, Any]]) -> Any:
        """Answer a chat-completions or Responses request with the scripted reply in that API's ``shape``."""
        from aiohttp import web

        recorded = await self._record(request)
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if not self._authorised(recorded):
                return self._respond(
                    recorded, _error_response(401, "Incorrect API key provided (loopback)", "invalid_api_key")
                )
            field_name = "messages" if recorded.api == "chat" else "input"
            if not isinstance(recorded.body, dict) or not isinstance(
                recorded.body.get(field_name), (list, str) if field_name == "input" else list
            ):
                return self._respond(
                    recorded,
                    _error_response(400, f"body must be JSON with a {field_name!r} list", "invalid_request_error"),
                )
            reply = self._pick(recorded)
            delay = reply.latency if reply.latency is not None else self.latency
            if reply.kind == "hang":
                assert self._stopping is not None
                try:
                    await asyncio.wait_for(self._stopping.wait(), delay)
                except asyncio.TimeoutError:
                    pass
            elif delay > 0:
                await asyncio.sleep(delay)
            if reply.kind == "drop":
                if request.transport is not None:
                    request.transport.abort()
                raise web.HTTPInternalServerError()  # never reaches the client: the socket is gone
            if reply.kind in ("error", "hang"):
                error_type = reply.error_type or ("rate_limit_exceeded" if reply.status == 429 else "server_error")
                response = _error_response(
                    reply.status, reply.error_message, error_type, code=None if reply.error_type else error_type
                )
                if reply.retry_after is not None:
                    response.headers["Retry-After"] = _format_seconds(reply.retry_after)
                return self._respond(recorded, response)
            if reply.kind == "raw":
                return self._respond(
                    recorded,
                    web.Response(text=reply.content or "", status=reply.status, content_type="application/json"),
                )
            return self._respond(recorded, web.json_response(shape(recorded, reply)))
        finally:
            with self._lock:
                self.in_flight -= 1

    @staticmethod
    def _respond(recorded: RecordedRequest, response: Any) -> Any:
        recorded.status = response.status
        return response

    def _completion(self, recorded: RecordedRequest, reply: Reply) -> dict[str, Any]:
        """A chat completion; tool-call replies carry logprobs of the arguments, as llama.cpp's do."""
        body = recorded.body
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.kind == "tool":
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": reply.tool_name, "arguments": reply.arguments},
                }
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.kind == "tool" else "stop")
        n = body.get("n") if isinstance(body.get("n"), int) and body.get("n", 0) > 0 else 1
        logprobs = None
        if self.logprobs and body.get("logprobs") is True:
            logprobs = {"content": _served_logprobs(reply, body.get("top_logprobs")), "refusal": None}
        prompt_tokens, completion_tokens = self._usage(recorded, reply, n)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "loopback",
            "choices": [
                {"index": i, "message": message, "finish_reason": finish, "logprobs": logprobs} for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _response(self, recorded: RecordedRequest, reply: Reply) -> dict[str, Any]:
        """A Responses API reply: a ``function_call`` item, or a ``message`` item with one ``output_text``
        part (with ``logprobs`` when asked); ``finish_reason`` ``"length"``/``"content_filter"`` make it
        ``incomplete``."""
        body = recorded.body
        if reply.kind == "tool":
            item: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:16]}",
                "call_id": f"call_{uuid.uuid4().hex[:12]}",
                "name": reply.tool_name,
                "arguments": reply.arguments,
                "status": "completed",
            }
        else:
            part: dict[str, Any] = {"type": "output_text", "text": reply.content or "", "annotations": []}
            include = body.get("include")
            if self.logprobs and isinstance(include, list) and "message.output_text.logprobs" in include:
                part["logprobs"] = _served_logprobs(reply, body.get("top_logprobs"))
            item = {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:16]}",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        incomplete = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(reply.finish_reason or "")
        prompt_tokens, completion_tokens = self._usage(recorded, reply, 1)
        return {
            "id": f"resp_{uuid.uuid4().hex[:16]}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "error": None,
            "model": body.get("model") or "loopback",
            "output": [item],
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "usage": {
                "input_tokens": prompt_tokens,
                "output_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    @staticmethod
    def _usage(recorded: RecordedRequest, reply: Reply, choices: int) -> tuple[int, int]:
        """``reply.usage``, else word counts of the messages and of the reply (times the ``choices``)."""
        if reply.usage is not None:
            return reply.usage
        prompt_tokens = sum(
            _word_count(_content_text(m.get("content"))) for m in recorded.messages if isinstance(m, dict)
        )
        return prompt_tokens, _word_count(reply.arguments if reply.kind == "tool" else reply.content or "") * choices

    async def _text_completion(self, request: Any) -> Any:
        """Answer a legacy completions request with :attr:`completions`."""
        from aiohttp import web

        recorded = await self._record(request)
        if not self._authorised(recorded):
            return self._respond(
                recorded, _error_response(401, "Incorrect API key provided (loopback)", "invalid_api_key")
            )
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        status, payload = self.completions.answer(recorded.body)
        return self._respond(recorded, web.json_response(payload, status=status))

    async def _embeddings(self, request: Any) -> Any:
        recorded = await self._record(request)
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            return self._embed(recorded)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _embed(self, recorded: RecordedRequest) -> Any:
        from aiohttp import web

        if not self._authorised(recorded):
            return self._respond(
                recorded, _error_response(401, "Incorrect API key provided (loopback)", "invalid_api_key")
            )
        body = recorded.body if isinstance(recorded.body, dict) else {}
        inputs = body.get("input")
        texts = (
            [inputs]
            if isinstance(inputs, (str, int)) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int))
            else inputs
        )
        if not isinstance(texts, list) or not texts:
            return self._respond(
                recorded, _error_response(400, "'input' must be a string or a non-empty list", "invalid_request_error")
            )
        dim = int(body.get("dimensions") or self.embedding_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vector = fake_embedding(json.dumps(text) if not isinstance(text, str) else text, dim)
            encoded: Any = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii") if as_base64 else vector
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(_word_count(t) if isinstance(t, str) else len(t) for t in texts)
        return self._respond(
            recorded,
            web.json_response(
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model") or "loopback-embedding",
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                }
            ),
        )

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        recorded = await self._record(request)
        return self._respond(
            recorded,
            web.json_response(
                {
                    "object": "list",
                    "data": [{"id": m, "object": "model", "created": 0, "owned_by": "loopback"} for m in self.models],
                }
            ),
        )


# ------------------------------------------------------------------- serving
def serve(
    *,
    port: int = 8000,
    replies: str | Path | None = None,
    latency: float = 0.0,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Serve judges offline on 127.0.0.1:``port`` until SIGINT (Ctrl-C) or SIGTERM; returns 0 (what
    ``python -m scorers loopback`` runs).

    Each request gets the first matching rule of the ``replies`` file (:data:`REPLIES_FORMAT`), else
    :func:`auto_reply`; ``latency`` delays every reply. ``out`` (stdout) gets the lines that point the
    judges here, the URL (and so the port: ``--port 0`` takes a free one) on the first::

        export OPENAI_BASE_URL=http://127.0.0.1:8000/v1
        export OPENAI_API_KEY=loopback
        export SCORERS_CACHE=off

    (the judge cache keys replies by URL, and another session on this port may answer differently).
    A port in use, a bad replies file or latency raise :class:`ConfigError`.
    """
    out, err = out or sys.stdout, err or sys.stderr
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: a port from 1 to 65535, or 0 for any free one")
    if not 0 <= latency < math.inf:
        raise ConfigError(f"--latency {latency}: seconds, at least 0")
    server = LoopbackLLM(default=auto_reply, latency=latency, port=port)
    server.rules.extend(load_rules(replies) if replies else ())
    stopped = threading.Event()
    handlers = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.start()
        except RuntimeError as exc:
            if not isinstance(exc.__cause__, OSError):
                raise
            raise ConfigError(
                f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.__cause__.strerror}); "
                "give another port, or --port 0 for any free one"
            ) from None
        rules = f"the {len(server.rules)} rules of {replies} first, then " if server.rules else ""
        print(
            f"loopback judge server on 127.0.0.1:{server.port}: answers every judge request offline with "
            f"{rules}a valid automatic answer (python -m scorers loopback --help); Ctrl-C stops it. "
            "In the shell that runs the judges:",
            file=err,
            flush=True,
        )
        print(
            f"export OPENAI_BASE_URL={server.base_url}\nexport OPENAI_API_KEY=loopback\nexport SCORERS_CACHE=off",
            file=out,
            flush=True,
        )
        stopped.wait()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        server.stop()
    print(f"stopped after {server.request_count} requests", file=err, flush=True)
    return 0


# ------------------------------------------------------------ automatic answers
def auto_reply(request: RecordedRequest) -> Reply:
    """A valid answer to any judge request, computed from the request alone: the same request, the same answer.

    It reads what the request asks for: a forced tool's parameters or a response format's JSON schema
    (also the schema a ``json_object`` prompt quotes), filled in by the schema (an ``enum`` value, an
    integer within ``minimum``/``maximum``, one array entry per item of the numbered list the prompt
    ends with, as the RAG judges' verdict steps need); in text mode, the choices the prompt lists
    ("exactly one of A, B, C") or its scale ("a whole number from 1 to 10"); else a plain sentence.
    Values are drawn from a random generator seeded with the prompt (and the request's ``seed``), so
    rows get different verdicts. A request for logprobs gets each number token with its neighbours as
    alternatives (for G-Eval).

    >>> from scorers.llm import LLMEngine
    >>> import scorers
    >>> with LoopbackLLM(default=auto_reply) as server:
    ...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
    ...     score = scorers.get("Factuality", engine=engine)(input="2+2?", output="4", expected="4")
    >>> score.metadata["choice"] in "ABCDE"
    True
    """
    messages = request.messages
    prompt = "\n\n".join(_content_text(m.get("content")) for m in messages if isinstance(m, dict))
    body = request.body if isinstance(request.body, dict) else {}
    draw = random.Random(f"{prompt}\0{body.get('seed')}")
    items = _numbered_items(request.last_user_message)
    tool = _forced_tool(body)
    if tool is not None:
        name, schema = tool
        reply = Reply.tool_call(_instance(schema, draw, items, name), name=name)
        return _with_logprobs(reply, reply.arguments) if _asks_logprobs(body) else reply
    response_schema = _response_schema(body, request.last_user_message)
    if response_schema is not None:
        text = json.dumps(_instance(response_schema, draw, items, "reply"))
    elif (choices := _listed_choices(request.last_user_message)) is not None:
        choice = draw.choice(choices)
        text = f"Loopback reply: {choice}, drawn from {', '.join(choices)} by the prompt's hash.\n{choice}"
    elif (scale := _listed_scale(request.last_user_message)) is not None:
        text = str(draw.randint(*scale))
    else:
        text = "This is a loopback reply, the same for the same prompt."
    reply = Reply.text(text)
    return _with_logprobs(reply, text) if _asks_logprobs(body) else reply


def _forced_tool(body: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """``(name, parameters schema)`` of the function tool the request asks for (both APIs' shapes), or None."""
    tools = [t for t in body.get("tools") or () if isinstance(t, dict) and t.get("type") == "function"]
    by_name = {}
    for tool in tools:
        function = tool["function"] if isinstance(tool.get("function"), dict) else tool  # chat | Responses
        by_name[str(function.get("name"))] = function.get("parameters") or {}
    if not by_name or body.get("tool_choice") == "none":
        return None
    choice = body.get("tool_choice")
    wanted = choice.get("function", choice).get("name") if isinstance(choice, dict) else None
    name = wanted if wanted in by_name else next(iter(by_name))
    return name, by_name[name]


def _response_schema(body: Mapping[str, Any], prompt: str) -> Mapping[str, Any] | None:
    """The JSON schema a ``json_schema``/``json_object`` response format asks for (``{}`` when a
    ``json_object`` request gives none, not even in the prompt), or None for a text reply."""
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") not in ("json_schema", "json_object"):
        return None
    nested = fmt.get("json_schema")
    schema = nested.get("schema") if isinstance(nested, dict) else fmt.get("schema")
    if isinstance(schema, dict):
        return schema
    quoted = prompt.rfind("JSON schema: {")
    if quoted >= 0:
        try:
            found, _ = json.JSONDecoder().raw_decode(prompt, quoted + len("JSON schema: "))
            return found if isinstance(found, dict) else {}
        except ValueError:
            pass
    return {}


def _instance(schema: Any, draw: random.Random, items: int, name: str) -> Any:
    """A value valid against ``schema``; arrays get ``items`` entries (else one or two), ``name`` fills texts."""
    if not isinstance(schema, dict):
        return f"{name} (loopback: drawn from the request, not judged)"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _instance(schema[key][0], draw, items, name)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return draw.choice(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {key: _instance(sub, draw, items, key) for key, sub in properties.items()}
    if kind == "array":
        low = max(int(schema.get("minItems", 0)), 1)
        count = items or draw.randint(low, max(low, 2))
        return [_instance(schema.get("items"), draw, 0, f"{name} {i}") for i in range(1, count + 1)]
    if kind == "integer":
        low = int(schema.get("minimum", 0))
        return draw.randint(low, max(low, int(schema.get("maximum", low + 10))))
    if kind == "number":
        least = float(schema.get("minimum", 0.0))
        return round(draw.uniform(least, max(least, float(schema.get("maximum", least + 1.0)))), 4)
    if kind == "boolean":
        return draw.random() < 0.5
    if kind == "null":
        return None
    return f"{name} (loopback: drawn from the request, not judged)"


def _numbered_items(prompt: str) -> int:
    """How many items the numbered list of ``prompt`` has: the longest run of lines ``1. ``, ``2. ``, ... in
    order (other lines between them are an item's continuation); 0 if none. A run that an item's own
    numbered lines make longer miscounts: that row's verdicts are then re-asked, and fail.

    >>> _numbered_items("Claims:\\n1. Paris is in France.\\n2. It lists\\n1. one thing.\\n3. It is old.\\n\\nAnswer.")
    3
    """
    runs: list[int] = []
    for line in prompt.splitlines():
        number = re.match(r"\s*(\d+)\.\s", line)
        if number and number.group(1) == "1":
            runs.append(1)
        elif number:
            runs = [run + 1 if run == int(number.group(1)) - 1 else run for run in runs]
    return max(runs, default=0)


def _listed_choices(prompt: str) -> list[str] | None:
    """The choices a text-mode judge lists ("exactly one of A, B, C alone on the last line"), or None."""
    found = re.findall(r"exactly one of (.+?),? (?:alone on|and nothing else)", prompt)
    return found[-1].split(", ") if found else None


def _listed_scale(prompt: str) -> tuple[int, int] | None:
    """The scale a text-mode rating or G-Eval judge states ("a whole number from 1 to 10"), or None."""
    found = re.findall(r"whole number from (-?\d+)(?: \(worst\))? to (-?\d+)", prompt)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def _asks_logprobs(body: Mapping[str, Any]) -> bool:
    include = body.get("include")
    return body.get("logprobs") is True or (isinstance(include, list) and "message.output_text.logprobs" in include)


def _with_logprobs(reply: Reply, text: str) -> Reply:
    """``reply`` with scripted logprobs of ``text``: each whole number a token of probability 0.7, its
    neighbours the alternatives (0.2 and 0.1); the text between numbers as tokens of probability 1."""
    tokens: list[dict[str, float]] = []
    for piece in re.split(r"(-?\d+)", text):
        if re.fullmatch(r"-?\d+", piece):
            value = int(piece)
            tokens.append({piece: math.log(0.7), str(value + 1): math.log(0.2), str(value - 1): math.log(0.1)})
        elif piece:
            tokens.append({piece: 0.0})
    return dataclasses.replace(reply, top_logprobs=tuple(tokens))


_SAME: Any = object()


@memoize
def _ports_taken() -> set[int]:
    """The ports of every :class:`LoopbackLLM` started in this process."""
    return set()


def _unused_port_socket() -> socket.socket:
    """A socket bound to a 127.0.0.1 port that no earlier :class:`LoopbackLLM` of this process had.

    HTTP clients keep connections alive per endpoint, and the judge engine keeps its clients for
    the process's life. Had a new server the port of a stopped one, a pooled connection to the old
    server could be picked for a request to the new one: a connection error and one more attempt
    than the test expects. Ports the kernel offers again are held open until a fresh one comes.
    """
    taken = _ports_taken()
    refused: list[socket.socket] = []
    try:
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            if port not in taken:
                taken.add(port)
                return sock
            refused.append(sock)
    finally:
        for sock in refused:
            sock.close()


def _listening_socket(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:``port`` (reusable at once after a previous server on it stopped)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


def fake_embedding(text: str, dim: int = 16) -> list[float]:
    """A deterministic unit vector for ``text`` (equal texts give equal vectors).

    >>> fake_embedding("a", 4) == fake_embedding("a", 4)
    True
    """
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend(b / 127.5 - 1.0 for b in digest)
        counter += 1
    values = values[:dim]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def _served_logprobs(reply: Reply, top: Any) -> list[dict[str, Any]]:
    """The reply's tokens in the shape both APIs use, each with its ``top`` most likely alternatives."""
    count = top if is_int(top) and top > 0 else 0
    tokens = reply.top_logprobs or ({(reply.arguments if reply.kind == "tool" else reply.content) or "": 0.0},)

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}

    served = []
    for alternatives in tokens:
        chosen = next(iter(alternatives))
        ranked = sorted(alternatives.items(), key=lambda pair: -pair[1])[:count]
        served.append({**entry(chosen, alternatives[chosen]), "top_logprobs": [entry(t, lp) for t, lp in ranked]})
    return served


def _error_response(status: int, message: str, error_type: str, *, code: Any = _SAME) -> Any:
    """An OpenAI-shaped error body; ``code`` is ``error_type`` unless given (llama.cpp sends ``null``)."""
    from aiohttp import web

    return web.json_response(
        {
            "error": {
                "message": message,
                "type": error_type,
                "param": None,
                "code": error_type if code is _SAME else code,
            }
        },
        status=status,
    )


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:.3f}"


# ------------------------------------------------------------------- the completions API
#: A loopback token: a word or one symbol with the whitespace before it, or whitespace that ends the text.
_LOOPBACK_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")


def loopback_tokens(text: str) -> list[tuple[int, str]]:
    r"""How :class:`LoopbackLLM`'s completions endpoint splits text: ``(character offset, token)`` per token, a
    token being a word or one symbol with the whitespace before it (GPT-2's tokenizer also attaches the space
    to the next word), or the whitespace that ends the text.

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
    """How :class:`LoopbackLLM` answers ``POST /v1/completions``, the legacy completions API.

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
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return 400, _error_body("body must be JSON with a 'prompt' string", "invalid_request_error")
        prompt, echo, logprobs = body["prompt"], body.get("echo") is True, body.get("logprobs")
        max_tokens = body.get("max_tokens", 16)
        if not is_int(max_tokens) or max_tokens < 0 or (logprobs is not None and not is_int(logprobs)):
            return 400, _error_body("max_tokens and logprobs must be integers >= 0", "invalid_request_error")
        model = body.get("model") or "loopback"
        if self.support == "refuse_echo" and echo and logprobs is not None:
            return 400, _error_body(
                f"echo is not supported together with logprobs for the model {model} (loopback)",
                "invalid_request_error",
            )
        if self.support == "refuse_logprobs" and logprobs is not None:
            return 500, _error_body(LLAMA_CPP_NO_LOGITS, "internal_server_error")
        generated = self.generated * max_tokens
        shown = prompt if echo and self.support != "no_echo" else ""
        text = shown + generated
        start = len(prompt) - len(shown)  # the offsets of a reply without the prompt count from the prompt's end
        # the prompt and the generated text are tokenized apart, as a server does
        tokens = loopback_tokens(shown) + [(len(shown) + at, token) for at, token in loopback_tokens(generated)]
        prompt_count = len(loopback_tokens(prompt))
        choice: dict[str, Any] = {"text": text, "index": 0, "logprobs": None, "finish_reason": "length"}
        if logprobs is not None and self.support != "no_logprobs":
            values: list[float | None] = [
                None
                if (start + offset == 0) or (self.support == "generated_only" and offset < len(shown))
                else self.logprob(prompt[:start] + text[:offset], token)
                for offset, token in tokens
            ]
            choice["logprobs"] = {
                "tokens": [token for _, token in tokens],
                "token_logprobs": values,
                "top_logprobs": [
                    None if value is None else {token: value} for (_, token), value in zip(tokens, values)
                ],
                "text_offset": [start + offset for offset, _ in tokens],
            }
        completion_tokens = len(loopback_tokens(generated))
        reply = {
            "id": f"cmpl-{uuid.uuid4().hex[:16]}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_count,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_count + completion_tokens,
            },
        }
        return 200, reply if self.edit is None else self.edit(reply)


def _error_body(message: str, error_type: str) -> dict[str, Any]:
    """An OpenAI-shaped error body."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


#: The words :func:`tiny_nli_model`'s tokenizer knows (others are ``[UNK]``) and its classes.
TINY_NLI_WORDS = (
    "a the man woman dog cat plays sleeps runs guitar music makes someone is not on mat outside , .".split()
)
TINY_NLI_LABELS = {0: "contradiction", 1: "neutral", 2: "entailment"}


def tiny_nli_model(folder: str | Path, *, seed: int = 0) -> Path:
    """Write a one-layer BERT sequence classifier (contradiction, neutral, entailment; random weights, seeded) and
    a WordPiece tokenizer of :data:`TINY_NLI_WORDS` to ``folder``: an NLI model folder for offline tests of the
    plumbing (its probabilities mean nothing). Needs torch, transformers and tokenizers (the ``bert`` extra).

    >>> import tempfile
    >>> from scorers.embedding.nli import NLIEntailment
    >>> model = tiny_nli_model(tempfile.mkdtemp())
    >>> 0 < NLIEntailment(model=str(model), device="cpu")(input="a man plays", output="someone makes music").score < 1
    True
    """
    import torch
    import transformers
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    folder = Path(folder)
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TINY_NLI_WORDS])}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=32,
    ).save_pretrained(folder)
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        initializer_range=0.5,  # a wide spread, so that the classes' probabilities differ between pairs
        id2label=TINY_NLI_LABELS,
        label2id={name: index for index, name in TINY_NLI_LABELS.items()},
    )
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    return folder
