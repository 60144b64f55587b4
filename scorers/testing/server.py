"""The loopback server: HTTP on 127.0.0.1 from a background thread, routing to its protocols, scripted replies,
latency and faults, and a bounded log of the requests it received."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from typing import Any, Iterator

from .._util import memoize, optional_import
from .batches import LoopbackBatches
from .protocols import PROTOCOLS, ComputedProtocol, ScriptedProtocol, WireProtocol
from .protocols.completions import TextCompletions
from .recorded import RecordedRequest
from .replies import Reply
from .rules import Matcher, ReplySource, Rule

__all__ = ["LoopbackLLM"]


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
    ``protocols`` are the APIs it speaks (default: every one of
    :data:`~scorers.testing.protocols.PROTOCOLS`); ``GET /v1/models`` lists ``models``.

    ``batches`` serves the batch APIs (:class:`~scorers.testing.batches.LoopbackBatches`): OpenAI's files and
    batches, Anthropic's Message Batches, each line answered as online.

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
        completions: TextCompletions | None = None,
        record_limit: int = 1_000,
        record_bytes: int = 32 * 2**20,
        protocols: tuple[WireProtocol, ...] = PROTOCOLS,
    ) -> None:
        self.default: ReplySource = default if default is not None else Reply.text("OK")
        self.latency = latency
        self.logprobs = logprobs
        self.completions = completions if completions is not None else TextCompletions()
        self.api_key = api_key
        self.models = models
        self.embedding_dim = embedding_dim
        self.protocols = protocols
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
        self.batches = LoopbackBatches(self)

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
        self.batches.reset()

    @property
    def base_url(self) -> str:
        """The base URL of OpenAI's APIs here: :attr:`url` with ``/v1``."""
        return f"{self.url}/v1"

    @property
    def url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:PORT`` (the endpoint of an SDK that adds its API's whole
        path, e.g. botocore's ``/model/{modelId}/converse``)."""
        if self.port is None:
            raise RuntimeError("LoopbackLLM is not running; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self.port}"

    def requests_to(self, api: str) -> list[RecordedRequest]:
        """The recorded requests to the API named ``api`` (:attr:`RecordedRequest.api`)."""
        with self._lock:
            return [r for r in self.requests if r.api == api]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded requests to ``/v1/chat/completions``."""
        return self.requests_to("chat")

    @property
    def responses_requests(self) -> list[RecordedRequest]:
        """The recorded requests to ``/v1/responses``."""
        return self.requests_to("responses")

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        """The recorded requests to ``/v1/completions`` (the legacy completions API)."""
        return self.requests_to("completions")

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
        for protocol in self.protocols:
            for path in protocol.paths:
                app.router.add_post(path, self._handler(protocol))
        app.router.add_get("/v1/models", self._models)
        for method, path, handler in self.batches.routes():
            app.router.add_route(method, path, handler)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
        await runner.setup()
        sock = _listening_socket(self._listen_port) if self._listen_port else _unused_port_socket()
        site = web.SockSite(runner, sock, backlog=1024)
        await site.start()
        self._runner = runner
        self.port = runner.addresses[0][1]

    # -------------------------------------------------------------- handlers
    def _handler(self, protocol: WireProtocol) -> Any:
        async def handle(request: Any) -> Any:
            return await self._answer(request, protocol)

        return handle

    async def _answer(self, request: Any, protocol: WireProtocol) -> Any:
        """Record a request, check its key, and answer it as ``protocol`` does."""
        from aiohttp import web

        recorded = await self._record(request, protocol)
        with self._counted():
            if self.api_key is not None and protocol.presented_key(recorded.headers) != self.api_key:
                message, kind = "Incorrect API key provided (loopback)", "invalid_api_key"
                return self._respond(recorded, _json_error(protocol, 401, message, kind, kind))
            denied = protocol.denied(request.method, str(request.url), recorded.headers, await request.read())
            if denied is not None:
                status, message, kind = denied
                return self._respond(recorded, _json_error(protocol, status, message, kind, kind))
            if isinstance(protocol, ScriptedProtocol):
                return await self._scripted(request, recorded, protocol)
            assert isinstance(protocol, ComputedProtocol)
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            status, payload = protocol.compute(recorded.body, self)
            return self._respond(recorded, web.json_response(payload, status=status))

    async def _scripted(self, request: Any, recorded: RecordedRequest, protocol: ScriptedProtocol) -> Any:
        """Answer with the scripted reply: a fault as the server serves it, else in ``protocol``'s shape."""
        from aiohttp import web

        problem = protocol.invalid_headers(recorded.headers) or protocol.invalid(recorded.body)
        if problem is not None:
            kind = "invalid_request_error"
            return self._respond(recorded, _json_error(protocol, 400, problem, kind, kind))
        reply = self._pick(recorded)
        await self._wait(reply)
        if reply.kind == "drop":
            if request.transport is not None:
                request.transport.abort()
            raise web.HTTPInternalServerError()  # never reaches the client: the socket is gone
        if reply.kind in ("error", "hang"):
            return self._respond(recorded, _error_response(protocol, reply))
        if reply.kind == "raw":
            response = web.Response(text=reply.content or "", status=reply.status, content_type="application/json")
            return self._respond(recorded, response)
        return self._respond(recorded, web.json_response(protocol.render(recorded.body, reply, self)))

    async def _wait(self, reply: Reply) -> None:
        """Wait the reply's latency (else the server's); a hang ends early when the server stops."""
        delay = reply.latency if reply.latency is not None else self.latency
        if reply.kind == "hang":
            assert self._stopping is not None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay)
        elif delay > 0:
            await asyncio.sleep(delay)

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        recorded = await self._record(request, None)
        models = [{"id": m, "object": "model", "created": 0, "owned_by": "loopback"} for m in self.models]
        return self._respond(recorded, web.json_response({"object": "list", "data": models}))

    # ---------------------------------------------------------- bookkeeping
    async def _record(self, request: Any, protocol: WireProtocol | None) -> RecordedRequest:
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
            protocol=protocol,
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

    @contextlib.contextmanager
    def _counted(self) -> Iterator[None]:
        """Count a request in flight while it is answered."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def _pick(self, recorded: RecordedRequest) -> Reply:
        with self._lock:
            chosen: ReplySource = self.default
            for rule in self.rules:
                if rule.matches(recorded):
                    rule.used += 1
                    chosen = rule.reply
                    break
        return chosen(recorded) if callable(chosen) else chosen

    @staticmethod
    def _respond(recorded: RecordedRequest, response: Any) -> Any:
        recorded.status = response.status
        return response


def _error_response(protocol: WireProtocol, reply: Reply) -> Any:
    """A scripted error (or the end of a hang) in ``protocol``'s error shape, with ``Retry-After`` when set."""

    error_type = reply.error_type or ("rate_limit_exceeded" if reply.status == 429 else "server_error")
    code = None if reply.error_type else error_type  # llama.cpp sends a null code with its own type
    response = _json_error(protocol, reply.status, reply.error_message, error_type, code)
    if reply.retry_after is not None:
        response.headers["Retry-After"] = _format_seconds(reply.retry_after)
    return response


def _json_error(protocol: WireProtocol, status: int, message: str, error_type: str, code: str | None) -> Any:
    """An error answered with HTTP ``status``: ``protocol``'s error body and headers."""
    from aiohttp import web

    body = protocol.error(status, message, error_type, code)
    return web.json_response(body, status=status, headers=protocol.error_headers(status, error_type))


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:.3f}"


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
