"""The batch APIs of the loopback server, offline: OpenAI's files and batches, Anthropic's Message Batches, Gemini's
batch mode (inlined requests).

Each line of a batch is answered as the same request sent online would be (the server's rules, then its default,
rendered by the protocol of the line's ``url``; a scripted error becomes a failed line), when the batch is
created; its results are served once the batch's accelerated clock (:class:`BatchClock`) says it has ended:
``validating`` → ``in_progress`` → ``finalizing`` → ``completed`` (Anthropic: ``in_progress`` → ``ended``). A
batch's fate can be scripted (:meth:`LoopbackBatches.script`): ``expired`` or ``cancelled`` (the first
``answered`` share of its lines answered, the rest failed as the provider fails them), or ``failed`` (OpenAI:
refused at validation). ``lines_received`` counts every line of every batch created, ``created`` the batches.

OpenAI: ``POST /v1/files`` (multipart, purpose ``batch``), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``. Anthropic:
``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches/{id}/results``,
``POST /v1/messages/batches/{id}/cancel``. Gemini: ``POST /v1beta/models/{model}:batchGenerateContent`` (inlined
requests, each ``{"request", "metadata": {"key"}}``), ``GET /v1beta/batches/{id}`` (an operation whose
``metadata.output.inlinedResponses`` holds the replies once it is done), ``POST /v1beta/batches/{id}:cancel``.

>>> from openai import OpenAI
>>> from scorers.testing import LoopbackLLM, Reply
>>> with LoopbackLLM(default=Reply.text("yes")) as server:
...     client = OpenAI(base_url=server.base_url, api_key="test-key")
...     line = b'{"custom_id": "q1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": [{"role": "user", "content": "ok?"}]}}'
...     uploaded = client.files.create(file=("in.jsonl", line), purpose="batch")
...     batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
...     server.batches.advance()
...     batch = client.batches.retrieve(batch.id)
...     output = json.loads(client.files.content(batch.output_file_id).content)
>>> batch.status, batch.request_counts.completed, output["response"]["body"]["choices"][0]["message"]["content"]
('completed', 1, 'yes')
"""

from __future__ import annotations

import email.parser
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal

from .protocols import ScriptedProtocol, protocol_for
from .recorded import RecordedRequest

__all__ = ["BatchClock", "LoopbackBatches"]

Fate = Literal["completed", "expired", "cancelled", "failed"]
Provider = Literal["openai", "anthropic", "gemini"]


@dataclass(frozen=True)
class BatchClock:
    """How long a loopback batch spends in each state (seconds): the provider's hours, accelerated."""

    validating_s: float = 0.05
    in_progress_s: float = 0.2
    finalizing_s: float = 0.05

    @property
    def total_s(self) -> float:
        return self.validating_s + self.in_progress_s + self.finalizing_s


@dataclass
class _Fate:
    fate: Fate
    answered: float
    times: int | None
    used: int = 0


@dataclass
class _Batch:
    """One batch: its lines' outcomes (``custom_id`` → ``(status, body)`` or ``(None, error)``), when it was made
    and what becomes of it."""

    id: str
    provider: Provider
    created: float
    fate: Fate
    outcomes: list[tuple[str, int | None, Any]]
    endpoint: str = ""
    input_file_id: str = ""
    cancelled_at: float | None = None
    files: dict[str, str | None] = field(default_factory=dict)


class LoopbackBatches:
    """The batch APIs of ``server`` (the :class:`~scorers.testing.LoopbackLLM` that serves them: its rules, protocols,
    key and request log; see the module docstring); ``clock`` paces every batch, from the moment it is set."""

    def __init__(self, server: Any, clock: BatchClock = BatchClock()) -> None:
        self.server = server
        self.clock = clock
        self.files: dict[str, tuple[str, bytes]] = {}
        self.batches: dict[str, _Batch] = {}
        self.fates: list[_Fate] = []
        self.lines_received = 0
        self.created = 0
        self._lock = threading.Lock()

    def script(self, fate: Fate, *, answered: float = 0.5, times: int | None = None) -> None:
        """The next batches (``times`` of them; None: all) end ``fate``; an expired or cancelled one answers the
        first ``answered`` share of its lines."""
        with self._lock:
            self.fates.append(_Fate(fate, answered, times))

    def advance(self, seconds: float | None = None) -> None:
        """Move every batch's clock on by ``seconds`` (None: to its end, so that its results can be read now)."""
        with self._lock:
            for batch in self.batches.values():
                batch.created -= self.clock.total_s if seconds is None else seconds
                if batch.cancelled_at is not None:
                    batch.cancelled_at -= self.clock.finalizing_s if seconds is None else seconds

    def reset(self) -> None:
        with self._lock:
            self.files.clear()
            self.batches.clear()
            self.fates.clear()
            self.lines_received = self.created = 0

    def routes(self) -> list[tuple[str, str, Callable[[Any], Any]]]:
        """The server's routes of the batch APIs: ``(method, path, handler)``."""
        recorded, of_batch = self._recording, self._of_batch
        return [
            ("POST", "/v1/files", recorded(self._upload)),
            ("GET", "/v1/files/{id}", recorded(self._file)),
            ("GET", "/v1/files/{id}/content", recorded(self._file_content)),
            ("POST", "/v1/batches", recorded(self._create_openai)),
            ("GET", "/v1/batches/{id}", of_batch("openai", "gemini")),  # Gemini's batches/ID under v1 too
            ("POST", "/v1/batches/{id}/cancel", of_batch("openai", cancel=True)),
            ("POST", "/v1/messages/batches", recorded(self._create_anthropic)),
            ("GET", "/v1/messages/batches/{id}", of_batch("anthropic")),
            ("GET", "/v1/messages/batches/{id}/results", recorded(self._anthropic_results)),
            ("POST", "/v1/messages/batches/{id}/cancel", of_batch("anthropic", cancel=True)),
            ("POST", "/{version:v1(?:beta)?}/models/{model:.+}:batchGenerateContent", recorded(self._create_gemini)),
            ("GET", "/v1beta/batches/{id}", of_batch("gemini")),
            ("POST", "/{version:v1(?:beta)?}/batches/{id}:cancel", of_batch("gemini", cancel=True)),
        ]

    # ---------------------------------------------------------------- answering lines
    def _fate(self) -> _Fate | None:
        for fate in self.fates:
            if fate.times is None or fate.used < fate.times:
                fate.used += 1
                return fate
        return None

    def _new_batch(self, provider: Provider, lines: list[tuple[str, str, Any]]) -> _Batch:
        """A batch of ``lines`` (``custom_id``, path, body), each answered now as online."""
        with self._lock:
            fate = self._fate()
            self.lines_received += len(lines)
            self.created += 1
        answered = len(lines) if fate is None or fate.fate == "completed" else int(fate.answered * len(lines))
        if fate is not None and fate.fate == "failed":
            answered = 0
        outcomes: list[tuple[str, int | None, Any]] = [
            (key, *self._answer(path, body)) if index < answered else (key, None, fate.fate if fate else "failed")
            for index, (key, path, body) in enumerate(lines)
        ]
        prefix = {"openai": "batch", "anthropic": "msgbatch", "gemini": "batches/"}[provider]
        batch = _Batch(
            f"{prefix}{'' if provider == 'gemini' else '_'}{uuid.uuid4().hex[:24]}",
            provider,
            time.time(),
            fate.fate if fate else "completed",
            outcomes,
        )
        with self._lock:
            self.batches[batch.id] = batch
        return batch

    def _answer(self, path: str, body: Any) -> tuple[int, Any]:
        """A line's HTTP status and body: what the server answers that request online."""
        server = self.server
        protocol = protocol_for(path, server.protocols)
        if not isinstance(protocol, ScriptedProtocol):
            return 404, {"error": {"message": f"no batch API for {path} (loopback)", "type": "invalid_request_error"}}
        problem = protocol.invalid(body)
        if problem is not None:
            return 400, protocol.error(400, problem, "invalid_request_error", "invalid_request_error")
        recorded = RecordedRequest("POST", path, {}, body, time.time(), protocol=protocol)
        reply = server._pick(recorded)
        if reply.kind in ("error", "hang", "drop"):
            status = reply.status if reply.kind == "error" else 500
            error_type = reply.error_type or ("rate_limit_exceeded" if status == 429 else "server_error")
            return status, protocol.error(status, reply.error_message, error_type, error_type)
        if reply.kind == "raw":
            try:
                return reply.status, json.loads(reply.content or "")
            except ValueError:
                return reply.status, reply.content
        return 200, protocol.render(body, reply, server)

    def _state(self, batch: _Batch) -> str:
        """The OpenAI state of ``batch`` now."""
        elapsed, clock = time.time() - batch.created, self.clock
        if batch.cancelled_at is not None:
            return "cancelled" if time.time() - batch.cancelled_at >= clock.finalizing_s else "cancelling"
        if elapsed < clock.validating_s:
            return "validating"
        if batch.fate == "failed":
            return "failed"
        if elapsed < clock.validating_s + clock.in_progress_s:
            return "in_progress"
        if batch.fate in ("expired", "cancelled"):
            return batch.fate
        return "finalizing" if elapsed < clock.total_s else "completed"

    # ---------------------------------------------------------------- HTTP
    def _recording(self, handler: Callable[[Any, RecordedRequest], Awaitable[Any]]) -> Callable[[Any], Any]:
        """``handler(request, recorded)`` behind the server's request log and key check: ``Authorization: Bearer``
        (OpenAI's, and the ``anthropic`` SDK's), ``x-api-key`` (Anthropic's) or ``x-goog-api-key`` (Google's); a
        wrong key is a 401."""

        async def handle(request: Any) -> Any:
            recorded = await self.server._record(request, None)
            expected, headers = self.server.api_key, recorded.headers
            presented = (
                headers.get("x-api-key")
                or headers.get("x-goog-api-key")
                or headers.get("authorization", "").removeprefix("Bearer ")
            )
            if expected is not None and presented != expected:
                error = {"error": {"message": "Incorrect API key provided (loopback)", "type": "invalid_api_key"}}
                return self._json(recorded, error, 401)
            return self.server._respond(recorded, await handler(request, recorded))

        return handle

    def _of_batch(self, *providers: Provider, cancel: bool = False) -> Callable[[Any], Any]:
        """A handler that shows the batch of one of ``providers`` named in the path (``cancel``: cancelling it
        first), in its provider's shape."""
        shown = {"openai": self._openai_object, "anthropic": self._anthropic_object, "gemini": self._gemini_object}

        async def handle(request: Any, recorded: RecordedRequest) -> Any:
            name = request.match_info["id"]
            batch = self.batches.get(name) or self.batches.get(f"batches/{name}")
            if batch is None or batch.provider not in providers:
                return _error(404, f"No such batch {name} (loopback)")
            if cancel and self._state(batch) in ("validating", "in_progress", "finalizing"):
                batch.cancelled_at = time.time()
            return _json(shown[batch.provider](batch, request))

        return self._recording(handle)

    def _json(self, recorded: RecordedRequest, payload: Any, status: int = 200) -> Any:
        return self.server._respond(recorded, _json(payload, status))

    async def _upload(self, request: Any, recorded: RecordedRequest) -> Any:
        fields = _multipart(request.headers.get("content-type", ""), await request.read())
        if "file" not in fields:
            return _error(400, "no file (loopback)")
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        name, data = fields["file"]
        with self._lock:
            self.files[file_id] = (name or "upload.jsonl", data)
        return _json(_file_object(file_id, name, data, fields.get("purpose", ("", b""))[1].decode()))

    async def _file(self, request: Any, recorded: RecordedRequest) -> Any:
        stored = self.files.get(request.match_info["id"])
        if stored is None:
            return _error(404, "No such file (loopback)")
        return _json(_file_object(request.match_info["id"], stored[0], stored[1], "batch"))

    async def _file_content(self, request: Any, recorded: RecordedRequest) -> Any:
        from aiohttp import web

        stored = self.files.get(request.match_info["id"])
        if stored is None:
            return _error(404, "No such file (loopback)")
        return web.Response(body=stored[1], content_type="application/octet-stream")

    async def _create_openai(self, request: Any, recorded: RecordedRequest) -> Any:
        body = recorded.body if isinstance(recorded.body, dict) else {}
        stored = self.files.get(str(body.get("input_file_id")))
        if stored is None:
            return _error(404, "No such input file (loopback)")
        try:
            lines = [json.loads(raw) for raw in stored[1].splitlines() if raw.strip()]
            parsed = [(str(line["custom_id"]), str(line["url"]), line["body"]) for line in lines]
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, f"invalid batch file: {exc} (loopback)")
        batch = self._new_batch("openai", parsed)
        batch.endpoint, batch.input_file_id = str(body.get("endpoint")), str(body.get("input_file_id"))
        return _json(self._openai_object(batch))

    def _openai_object(self, batch: _Batch, request: Any = None) -> dict[str, Any]:
        """The batch as ``GET /v1/batches/{id}`` shows it, its output and error files written once it has ended."""
        state = self._state(batch)
        ended = state in ("completed", "expired", "cancelled", "failed")
        final = self._final(batch) if ended else []
        done = [o for o in final if o[1] == 200]
        failed = [o for o in final if o[1] != 200]
        if ended and state != "failed" and not batch.files:
            batch.files = {
                "output_file_id": self._store_lines(batch, done),
                "error_file_id": self._store_lines(batch, failed),
            }
        errors = None
        if state == "failed":
            errors = {"object": "list", "data": [{"code": "scripted_failure", "message": "scripted (loopback)"}]}
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": errors,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": state,
            "output_file_id": batch.files.get("output_file_id"),
            "error_file_id": batch.files.get("error_file_id"),
            "created_at": int(batch.created),
            "request_counts": {"total": len(batch.outcomes), "completed": len(done), "failed": len(failed)},
            "metadata": None,
        }

    def _store_lines(self, batch: _Batch, outcomes: list[tuple[str, int | None, Any]]) -> str | None:
        """An output (or error) file of OpenAI's shape holding ``outcomes``; None when there are none."""
        if not outcomes:
            return None
        lines = []
        for key, status, body in outcomes:
            line: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": key}
            if status is None:
                code = "batch_expired" if body == "expired" else "batch_cancelled" if body == "cancelled" else "failed"
                line |= {"response": None, "error": {"code": code, "message": f"the batch was {body} (loopback)"}}
            else:
                line |= {
                    "response": {"status_code": status, "request_id": uuid.uuid4().hex, "body": body},
                    "error": None,
                }
            lines.append(json.dumps(line))
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        with self._lock:
            self.files[file_id] = (f"{batch.id}.jsonl", ("\n".join(lines) + "\n").encode())
        return file_id

    # ---------------------------------------------------------------- Anthropic
    async def _create_anthropic(self, request: Any, recorded: RecordedRequest) -> Any:
        body = recorded.body if isinstance(recorded.body, dict) else {}
        try:
            parsed = [(str(r["custom_id"]), "/v1/messages", r["params"]) for r in body["requests"]]
        except (KeyError, TypeError) as exc:
            return _error(400, f"bad requests: {exc} (loopback)")
        return _json(self._anthropic_object(self._new_batch("anthropic", parsed), request))

    async def _anthropic_results(self, request: Any, recorded: RecordedRequest) -> Any:
        from aiohttp import web

        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.provider != "anthropic" or not self._anthropic_ended(batch):
            return _error(404, "No such results (loopback)")
        results = [{"custom_id": key, "result": _anthropic_result(*outcome)} for key, *outcome in self._final(batch)]
        text = "".join(json.dumps(result) + "\n" for result in results)
        return web.Response(text=text, content_type="application/binary")

    # ---------------------------------------------------------------- Gemini
    async def _create_gemini(self, request: Any, recorded: RecordedRequest) -> Any:
        model = request.match_info["model"]
        body = recorded.body if isinstance(recorded.body, dict) else {}
        try:
            inlined = body["batch"]["inputConfig"]["requests"]["requests"]
            parsed = [
                (
                    str((item.get("metadata") or {}).get("key", index)),
                    f"/{request.match_info['version']}/models/{model}:generateContent",
                    item["request"],
                )
                for index, item in enumerate(inlined)
            ]
        except (KeyError, TypeError, AttributeError) as exc:
            return _error(400, f"bad batch: {exc} (loopback)")
        batch = self._new_batch("gemini", parsed)
        batch.endpoint = f"models/{model}"
        return _json(self._gemini_object(batch, request))

    def _gemini_object(self, batch: _Batch, request: Any) -> dict[str, Any]:
        """The batch as Google's ``batches/{id}`` operation shows it, its inlined responses once it has ended."""
        state = _GEMINI_STATES[self._state(batch)]
        ended = state not in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING")
        final = self._final(batch) if ended and state != "BATCH_STATE_FAILED" else []
        answered = [(key, status, body) for key, status, body in final if status is not None]
        metadata: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "name": batch.id,
            "model": batch.endpoint,
            "displayName": "loopback",
            "state": state,
            "createTime": _rfc3339(batch.created),
            "batchStats": {
                "requestCount": str(len(batch.outcomes)),
                "successfulRequestCount": str(sum(status == 200 for _, status, _ in answered)),
                "failedRequestCount": str(sum(status != 200 for _, status, _ in answered)),
                "pendingRequestCount": str(0 if ended else len(batch.outcomes)),
            },
        }
        operation: dict[str, Any] = {"name": batch.id, "metadata": metadata, "done": ended}
        if ended:
            responses = [
                {
                    "metadata": {"key": key},
                    **({"response": body} if status == 200 else {"error": body.get("error", body)}),
                }
                for key, status, body in answered
            ]
            output = {"inlinedResponses": {"inlinedResponses": responses}}
            metadata["output"] = output
            type_name = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput"
            operation["response"] = {"@type": type_name, **output}
        return operation

    def _anthropic_ended(self, batch: _Batch) -> bool:
        return self._state(batch) in ("completed", "expired", "cancelled", "failed")

    def _final(self, batch: _Batch) -> list[tuple[str, int | None, Any]]:
        """The outcomes of an ended batch, its unanswered lines cancelled when it was cancelled early."""
        if batch.cancelled_at is None:
            return batch.outcomes
        return [(key, None, "cancelled") for key, _, _ in batch.outcomes]

    def _anthropic_object(self, batch: _Batch, request: Any) -> dict[str, Any]:
        ended = self._anthropic_ended(batch)
        state = self._state(batch)
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        for _, status, body in self._final(batch) if ended else []:
            kind = _anthropic_result(status, body)["type"]
            counts[kind] += 1
        counts["processing"] = 0 if ended else len(batch.outcomes)
        base = f"{request.scheme}://{request.host}"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "canceling" if state == "cancelling" else "in_progress",
            "request_counts": counts,
            "created_at": _rfc3339(batch.created),
            "expires_at": _rfc3339(batch.created + 86400),
            "ended_at": _rfc3339(time.time()) if ended else None,
            "cancel_initiated_at": _rfc3339(batch.cancelled_at) if batch.cancelled_at else None,
            "archived_at": None,
            "results_url": f"{base}/v1/messages/batches/{batch.id}/results" if ended else None,
        }


#: The Gemini state of a batch in each of the server's (OpenAI's) states.
_GEMINI_STATES = {
    "validating": "BATCH_STATE_PENDING",
    "in_progress": "BATCH_STATE_RUNNING",
    "finalizing": "BATCH_STATE_RUNNING",
    "cancelling": "BATCH_STATE_RUNNING",
    "completed": "BATCH_STATE_SUCCEEDED",
    "expired": "BATCH_STATE_EXPIRED",
    "cancelled": "BATCH_STATE_CANCELLED",
    "failed": "BATCH_STATE_FAILED",
}


def _json(payload: Any, status: int = 200) -> Any:
    from aiohttp import web

    return web.json_response(payload, status=status)


def _error(status: int, message: str) -> Any:
    """An error body both providers' SDKs read (OpenAI's ``error.message``; Anthropic's ``error.type``)."""
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    return _json({"type": "error", "error": {"message": message, "type": kind}}, status)


def _anthropic_result(status: int | None, body: Any) -> dict[str, Any]:
    """A line's ``result`` in Anthropic's shape."""
    if status == 200:
        return {"type": "succeeded", "message": body}
    if status is None:
        return {"type": "canceled" if body == "cancelled" else "expired" if body == "expired" else "errored"}
    error = body.get("error") if isinstance(body, dict) else None
    return {
        "type": "errored",
        "error": {"type": "error", "error": error or {"type": "api_error", "message": str(body)}},
    }


def _rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _file_object(file_id: str, name: str, data: bytes, purpose: str) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(data),
        "created_at": int(time.time()),
        "filename": name,
        "purpose": purpose or "batch",
        "status": "processed",
    }


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str, bytes]]:
    """The fields of a ``multipart/form-data`` body: name → (file name, bytes)."""
    message = email.parser.BytesParser().parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields = {}
    for part in message.walk():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True)
            fields[str(name)] = (str(part.get_filename() or ""), payload if isinstance(payload, bytes) else b"")
    return fields
