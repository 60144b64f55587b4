"""HTTP under the engine: one client per wire protocol family, endpoint and event loop (an ``openai`` client for
chat and the Responses API; each protocol of :mod:`scorers.llm.protocols` makes its own), a concurrency cap per
endpoint, retries with backoff, and the mapping of HTTP failures onto typed errors, the same for every protocol:

* 401/403/404 → :class:`EndpointConfigError` (a ConfigError: the run stops);
* 4xx other than 408/409/429, or a 5xx whose body is a request-validation error →
  :class:`RequestRejected`, never retried;
* 429 (honouring ``Retry-After``), 408/409/5xx, timeouts and dropped connections → retried
  with jittered exponential backoff, within the call's ``deadline``;
* a connection refused (or a host name that does not resolve) :data:`UNREACHABLE_AFTER` times in a row
  by an endpoint that has not answered once in this process → :class:`EndpointConfigError`: nothing
  listens there, so the run stops instead of retrying every row.

>>> _retry_after({"retry-after": "2"})
2.0
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import email.utils
import errno
import hashlib
import json
import logging
import random
import re
import socket
import sys
import time
import weakref
from typing import Any, AsyncIterator, Mapping

from .. import _aio
from .._util import memoize
from ..errors import ConfigError, JudgeError
from .config import LLMSettings
from .http import async_twin, httpx_module
from .protocols import HTTPReply, WireProtocol, wire
from .redaction import redact

__all__ = ["EndpointConfigError", "RequestRejected", "aclose"]

log = logging.getLogger("scorers.llm")


_RETRY_STATUSES = frozenset({408, 409, 429})
#: Connections in a row an endpoint that never answered may refuse before the run stops (EndpointConfigError).
UNREACHABLE_AFTER = 3


class EndpointConfigError(JudgeError, ConfigError):
    """The endpoint refuses the judge's configuration, not one row: a wrong or unauthorised API key
    (HTTP 401/403), an unknown model or base URL (HTTP 404), a base URL the HTTP client refuses before
    sending anything, or no log-probabilities from an endpoint asked for them. A
    :class:`~scorers.errors.ConfigError`, so a run stops on it rather than failing every row the same
    way; a :class:`~scorers.errors.JudgeError` with the attempts made."""


class RequestRejected(JudgeError):
    """The endpoint rejected the request as invalid; it was not retried.

    That is an HTTP 4xx other than 401/403/404 (:class:`EndpointConfigError`) and 408/409/429
    (retried), or a 5xx whose body is a request-validation error: llama-cpp-python answers a request
    its schema refuses (e.g. ``response_format`` type ``json_schema``) with HTTP 500 and pydantic's
    message, which no retry can change. ``status`` is the HTTP status, ``detail`` the server's message.
    """

    def __init__(
        self, message: str, *, status: int, detail: str, scorer: str | None = None, attempts: int | None = None
    ) -> None:
        super().__init__(message, scorer=scorer, attempts=attempts)
        self.status = status
        self.detail = detail


class Budget:
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
        return JudgeError(
            f"{label}no usable reply within the deadline of {self.seconds:g} s (deadline=) after "
            f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}; last: {cause}",
            scorer=scorer,
            attempts=self.attempts,
        )


async def send(
    body: dict[str, Any],
    api: str,
    settings: LLMSettings,
    scorer: str | None,
    budget: Budget,
    *,
    path: str | None = None,
) -> Any:
    """POST ``body`` with the wire protocol ``api`` (to ``path``, else the protocol's); return the decoded JSON. Counts attempts in ``budget``; raises
    :class:`JudgeError` (:class:`RequestRejected`, :class:`EndpointConfigError`). No message holds the API key,
    the protocol's other secrets or the credentials of the URL (:func:`~scorers.llm.redaction.redact`)."""
    protocol = wire(api)
    request = _Request(body, protocol, settings, scorer, budget, path or protocol.path(body["model"]))
    client = await _client_for(settings, protocol)
    limiter = _limiter_for(settings.base_url)
    attempts_allowed = settings.max_retries + 1
    for attempt in range(1, attempts_allowed + 1):
        async with limiter.slot(settings.max_concurrency):
            outcome = await request.attempt(client)
        if not isinstance(outcome, _Retry):
            return outcome
        if attempt == attempts_allowed:
            break
        delay = _backoff(attempt, outcome.retry_after, settings)
        if delay >= budget.left():
            raise budget.exceeded(request.label, scorer, request.cause)
        log.info(
            "%s%s; retrying in %.2f s (attempt %d of %d)",
            request.label,
            request.cause,
            delay,
            attempt + 1,
            attempts_allowed,
        )
        await asyncio.sleep(delay)
    raise JudgeError(
        f"{request.label}the request to {settings.shown_url} failed after {attempts_allowed} "
        f"attempt{'s' if attempts_allowed > 1 else ''}: {request.cause}",
        scorer=scorer,
        attempts=budget.attempts,
    )


class _Retry:
    """An attempt that failed in a way another may mend; ``retry_after``: the seconds the server asked to wait."""

    __slots__ = ("retry_after",)

    def __init__(self, retry_after: float | None = None) -> None:
        self.retry_after = retry_after


class _Request:
    """The attempts of one :func:`send`: each posts the body and sorts its failure into an error that stops
    (raised) or a :class:`_Retry`; ``cause`` is the last failure, as the messages and the retry log name it."""

    def __init__(
        self,
        body: dict[str, Any],
        protocol: WireProtocol,
        settings: LLMSettings,
        scorer: str | None,
        budget: Budget,
        path: str,
    ) -> None:
        self.body, self.protocol, self.settings, self.scorer, self.budget = body, protocol, settings, scorer, budget
        self.path = path
        self.label = f"{scorer}: " if scorer else ""
        self.cause = "the deadline passed before the first attempt"
        self.secrets = (settings.api_key, *protocol.redacted(settings))

    async def attempt(self, client: Any) -> Any:
        """One attempt, its concurrency slot held: the decoded JSON reply, or a :class:`_Retry`."""
        settings, budget, protocol = self.settings, self.budget, self.protocol
        budget.start()
        limit = min(settings.timeout, budget.left())
        if limit <= 0:
            raise budget.exceeded(self.label, self.scorer, self.cause)
        budget.attempts += 1
        try:
            async with _deadline(limit):
                reply = await protocol.post(client, self.path, self.body, settings.timeout)
        except asyncio.TimeoutError:
            self.cause = f"no reply within the {limit:g} s timeout"
            if limit < settings.timeout:
                raise budget.exceeded(self.label, self.scorer, self.cause) from None
        except protocol.connection_errors() as exc:  # timeouts of the client included
            self._connection_failed(exc)
        except (ValueError, TypeError) as exc:  # the HTTP client refused the request before sending it
            raise _client_refused(self.label, self.scorer, budget, settings, exc, self.secrets) from None
        else:
            _answered(settings.base_url)
            if not 200 <= reply.status < 300:
                return _Retry(self._status_failed(reply))
            try:
                return json.loads(reply.content)
            except ValueError as exc:  # a 2xx body that is not JSON
                self.cause = redact(f"the endpoint sent a body that is not JSON ({exc})", *self.secrets)
        return _Retry()

    def _status_failed(self, reply: HTTPReply) -> float | None:
        """An HTTP error status: raise the error of one no retry can change (see the module docstring), else
        record it as the cause and return the seconds the server asked to wait (``Retry-After``), if any."""
        settings, budget, label = self.settings, self.budget, self.label
        status = reply.status
        if status in (401, 403):
            raise EndpointConfigError(
                f"{label}authentication failed (HTTP {status}) at {settings.shown_url}; {self._credentials_hint()}",
                scorer=self.scorer,
                attempts=budget.attempts,
            ) from None
        detail = redact(error_detail(reply), *self.secrets)
        if status == 404:
            raise EndpointConfigError(
                f"{label}the endpoint rejected the request (HTTP 404): {detail}; check "
                f"the base URL ({settings.shown_url}) and the model ({self.body['model']})",
                scorer=self.scorer,
                attempts=budget.attempts,
            ) from None
        if _is_rejection(status, detail):
            raise RequestRejected(
                f"{label}the endpoint rejected the request (HTTP {status}): {detail}",
                status=status,
                detail=detail,
                scorer=self.scorer,
                attempts=budget.attempts,
            ) from None
        self.cause = f"HTTP {status}: {detail}"
        retry_after = _retry_after(reply.headers)
        return retry_after if retry_after is not None else self.protocol.retry_after(reply)

    def _credentials_hint(self) -> str:
        """What to check when the endpoint refuses the credentials."""
        endpoint = self.protocol.endpoint
        if endpoint.key_env:
            return f"check the API key ({' or '.join(endpoint.key_env)} or api_key=)"
        return f"check the credentials ({endpoint.key_hint})"

    def _connection_failed(self, exc: BaseException) -> None:
        """A connection that gave no reply: a timeout or a failure to record as the cause, or the error of a URL
        the client cannot use or of an endpoint where nothing answers (:data:`UNREACHABLE_AFTER`)."""
        settings = self.settings
        root = _root_cause(exc)
        if isinstance(root, TimeoutError) or "Timeout" in type(root).__name__:
            self.cause = f"no reply within the {settings.timeout:g} s timeout"
        elif _is_unusable_url(exc):
            raise _client_refused(self.label, self.scorer, self.budget, settings, root, self.secrets) from None
        else:
            failure = redact(f"{type(root).__name__}: {root}"[:300], *self.secrets)
            self.cause = f"connection failed: {failure}"
            if _is_unreachable(root) and _refused(settings.base_url) >= UNREACHABLE_AFTER:
                raise EndpointConfigError(
                    f"{self.label}nothing answers at {settings.shown_url}: {UNREACHABLE_AFTER} connections in a "
                    f"row failed and none has succeeded since the start (last: {failure}); check the base "
                    "URL (OPENAI_BASE_URL or base_url=) and that its server is running (an offline one: "
                    "python -m scorers loopback)",
                    scorer=self.scorer,
                    attempts=self.budget.attempts,
                ) from None


def _is_rejection(status: int, detail: str) -> bool:
    """Whether an HTTP error status says the request itself is invalid (:class:`RequestRejected`, not retried):
    a 4xx other than those retried, or a 5xx whose message is a request-validation error."""
    return (status not in _RETRY_STATUSES and status < 500) or (status >= 500 and _is_validation_error(detail))


@memoize
def _refusals() -> dict[str, int]:
    """Per base URL: the connections refused in a row before its first answer in this process; ``-1`` once it
    has answered (a server that goes away later is retried as any failure is)."""
    return {}


def _answered(base_url: str) -> None:
    _refusals()[base_url] = -1


def _refused(base_url: str) -> int:
    """Count one more refused connection to ``base_url``; the count so far (``-1`` once it has answered)."""
    refusals = _refusals()
    count = refusals.get(base_url, 0)
    if count >= 0:
        count = refusals[base_url] = count + 1
    return count


def _is_unreachable(root: BaseException) -> bool:
    """Whether a connection failed before reaching any server: refused, or a host or network unreachable, or a
    host name that does not resolve (not a timeout or a connection dropped by a server)."""
    if isinstance(root, (ConnectionRefusedError, socket.gaierror)):
        return True
    return isinstance(root, OSError) and root.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH)


def _client_refused(
    label: str,
    scorer: str | None,
    budget: Budget,
    settings: LLMSettings,
    exc: BaseException,
    secrets: tuple[str | None, ...],
) -> EndpointConfigError:
    """The HTTP client's own refusal of the request (a URL it cannot use, credentials in the URL that the aiohttp
    transport will not send next to the API key): the same for every request, so a configuration error."""
    refusal = redact(f"{type(exc).__name__}: {exc}"[:300], *secrets)
    return EndpointConfigError(
        f"{label}the HTTP client (transport={settings.transport!r}) refused the request to "
        f"{settings.shown_url} before sending it: {refusal}; check the base URL "
        f"(OPENAI_BASE_URL or base_url=) or the transport (SCORERS_HTTP_TRANSPORT or "
        f"transport=)",
        scorer=scorer,
        attempts=budget.attempts,
    )


def _is_unusable_url(exc: BaseException) -> bool:
    """Whether the chain of a connection error holds httpx's verdict that the URL is unusable (an unsupported
    scheme, a malformed URL): no retry can change that."""
    httpx = httpx_module()
    refusals = (httpx.UnsupportedProtocol, httpx.InvalidURL)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, refusals):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


#: A request-validation error in a 5xx's message: FastAPI's ("1 validation error:\n  {'type': 'literal_error', ...,
#: 'msg': "Input should be 'text' or 'json_object'", ...}", what llama-cpp-python's server sends with HTTP 500)
#: or pydantic's ("2 validation errors for Request ... Field required"), or a feature the server says it lacks
#: (llama-cpp-python, HTTP 500: "logprobs is not supported for models created with logits_all=False").
_VALIDATION_ERROR = re.compile(
    r"^\s*\d+ validation errors?\b|\bInput should be\b|\bField required\b|\bis not supported\b"
)


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


def error_detail(reply: HTTPReply) -> str:
    """The server's error message: the ``message`` of the body's ``error`` object (OpenAI, Anthropic, Gemini) or
    of the body itself (Bedrock), else ``Error code: <status>``.

    >>> error_detail(HTTPReply(529, {}, b'{"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}'))
    'Busy'
    >>> error_detail(HTTPReply(500, {}, b"<html>oops</html>")), error_detail(HTTPReply(400, {}, b'{"message": "No"}'))
    ('Error code: 500', 'No')
    """
    try:
        data = json.loads(reply.content)
    except ValueError:
        data = None
    error = data.get("error", data) if isinstance(data, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    return str(message or f"Error code: {reply.status}")[:500]


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


if sys.version_info >= (3, 11):
    _deadline = asyncio.timeout
else:  # pragma: no cover - Python 3.10
    import contextlib

    @contextlib.asynccontextmanager
    async def _deadline(seconds: float) -> AsyncIterator[None]:
        task = asyncio.current_task()
        assert task is not None  # entered by a request, within its task
        handle = asyncio.get_running_loop().call_later(seconds, task.cancel)
        try:
            yield
        except asyncio.CancelledError:
            raise asyncio.TimeoutError() from None
        finally:
            handle.cancel()


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


async def _client_for(settings: LLMSettings, protocol: WireProtocol) -> Any:
    """The client ``protocol`` posts with for these settings on the running loop (created once per loop, protocol
    family, endpoint, key and transport); a ``client=`` of the user's for OpenAI's APIs."""
    state = _loop_state(asyncio.get_running_loop())
    if settings.client is None:  # the common case: this loop's client for the endpoint
        key: tuple[Any, ...] = (protocol.client_family, *_client_key(settings))
        client = state.clients.get(key)
        if client is not None:
            return client
    elif protocol.client_family != "openai":
        raise ConfigError(
            f"client= is an openai client, which the {protocol.name} protocol cannot send with: pass "
            f"base_url=/api_key= (or the provider's environment variables) instead"
        )
    else:
        return await _user_client(settings, state)
    await _close_with_loop(state)
    client = await protocol.client(settings)
    made = state.clients.get(key)  # another task made one while this one awaited its own: keep the first
    if made is not None:
        await _closed(client)
        return made
    state.clients[key] = client
    return client


async def _user_client(settings: LLMSettings, state: "_LoopState") -> Any:
    """The user's ``client=``: an ``openai.AsyncOpenAI`` (or any other object) as it is, a sync ``openai.OpenAI``
    as its async twin made once per loop."""
    import openai

    user_client = settings.client
    if isinstance(user_client, openai.AsyncOpenAI) or not isinstance(user_client, openai.OpenAI):
        return user_client
    await _close_with_loop(state)
    key = ("twin", id(user_client))
    entry = state.clients.get(key)
    if entry is None or entry[0] is not user_client:  # the entry keeps its client alive: ids are not reused
        entry = state.clients[key] = (user_client, async_twin(user_client, settings.transport))
    return entry[1]


async def _close_with_loop(state: "_LoopState") -> None:
    """Start, once per loop, the generator that closes the loop's clients when the loop shuts down."""
    if state.closer is None:
        closer = _close_at_loop_shutdown()
        await closer.asend(None)
        state.closer = closer


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


async def aclose() -> None:
    """Close the HTTP clients the engine opened on the running loop (call before closing your own loop)."""
    state = _loop_states().get(asyncio.get_running_loop())
    if state is None:
        return
    clients, state.clients, state.closer = state.clients, {}, None
    opened = [entry[1] if isinstance(entry, tuple) else entry for entry in clients.values()]
    await asyncio.gather(*(_closed(client) for client in opened), return_exceptions=True)


async def _closed(client: Any) -> None:
    """Close a client: ``close()`` (the SDKs' clients) or ``aclose()`` (an httpx client)."""
    close = getattr(client, "close", None) or client.aclose
    await close()


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
