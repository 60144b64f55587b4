"""Gemini's batch mode, for the ``gemini`` protocol: ``POST /v1beta/models/{model}:batchGenerateContent`` with the
requests inlined (``{"batch": {"inputConfig": {"requests": {"requests": [{"request", "metadata": {"key"}}]}}}}``,
each ``request`` the ``generateContent`` body the protocol posts online), then ``GET /v1beta/batches/{id}`` until
its ``metadata.state`` has ended (``BATCH_STATE_SUCCEEDED``, ``FAILED``, ``CANCELLED`` or ``EXPIRED``); the replies
are its ``metadata.output.inlinedResponses``, each with the ``metadata.key`` it was sent with.

Through the ``gemini`` protocol's own HTTP client (the endpoint's root, the key in ``x-goog-api-key``), as raw JSON:
each reply reaches the protocol's parser as the online reply would. Inlined requests keep a batch under Google's
20 MB request limit (a larger run is split into several batches). A management call that gets a 429 or 5xx or no
answer is tried again after 1, 2, 4 s.

>>> from scorers.llm.batch.deferral import Pending
>>> GeminiBatches().line(Pending("k1", {"model": "gemini-2.5-flash", "contents": []}, "gemini", None))
b'{"request":{"contents":[]},"metadata":{"key":"k1"}}'
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from ..redaction import redact
from .core import BatchAPI, BatchStatus, Outcome
from .deferral import Answer, BatchAPIError, BatchRequestError, Pending

if TYPE_CHECKING:
    from ..config import LLMSettings

__all__ = ["GeminiBatches"]

#: The API version of the batch endpoints.
API_VERSION = "v1beta"
#: The states in which a batch has ended.
_ENDED = frozenset({"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"})
#: Tries of one management call after the first (429, 5xx, no answer), waiting 1, 2, 4 ... s.
MANAGEMENT_RETRIES = 4


class GeminiBatches(BatchAPI):
    """Gemini's batch mode with inlined requests (see the module docstring)."""

    name: ClassVar[str] = "gemini"
    apis: ClassVar[frozenset[str]] = frozenset({"gemini"})
    max_requests: ClassVar[int] = 50_000
    max_bytes: ClassVar[int] = 19 * 10**6

    async def client(self, settings: "LLMSettings") -> Any:
        from ..protocols import wire

        return await wire("gemini").client(settings)

    def line(self, pending: Pending) -> bytes:
        request = {key: value for key, value in pending.body.items() if key != "model"}  # the model is in the path
        line = {"request": request, "metadata": {"key": pending.key}}
        return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    async def submit(self, client: Any, lines: Sequence[bytes], first: Pending) -> str:
        model = str(first.body["model"])
        name = model if "/" in model else f"models/{model}"
        path = f"/{API_VERSION}/{urllib.parse.quote(name, safe='/-_.')}:batchGenerateContent"
        head = b'{"batch":{"displayName":"scorers","inputConfig":{"requests":{"requests":['
        operation = await _call(client, "POST", path, head + b",".join(lines) + b"]}}}}", "submitting a batch")
        return str(operation["name"])

    async def status(self, client: Any, batch_id: str) -> BatchStatus:
        operation = await _call(client, "GET", f"/{API_VERSION}/{batch_id}", None, f"polling batch {batch_id}")
        metadata = operation.get("metadata") or {}
        state = str(metadata.get("state"))
        stats = metadata.get("batchStats") or {}
        shown = (
            f"({stats.get('successfulRequestCount', 0)} done, {stats.get('failedRequestCount', 0)} failed of "
            f"{stats.get('requestCount', '?')})"
        )
        error = operation.get("error") or {}
        return BatchStatus(state, state in _ENDED, shown, str(error.get("message") or ""), operation)

    async def results(self, client: Any, status: BatchStatus) -> dict[str, Outcome]:
        operation = status.raw
        output = (operation.get("metadata") or {}).get("output") or operation.get("response") or {}
        inlined = (output.get("inlinedResponses") or {}).get("inlinedResponses") or []
        return dict(_outcome(item) for item in inlined)


def _outcome(item: Mapping[str, Any]) -> tuple[str, Outcome]:
    """An inlined response: the ``metadata.key`` it was sent with, and its reply or error."""
    key = str((item.get("metadata") or {}).get("key"))
    if "response" in item:
        return key, Answer(item["response"])
    error = item.get("error") or {}
    return key, BatchRequestError(
        f"the batch's request failed ({error.get('code')}: {error.get('message')}); the next run sends it again",
        reason="errored",
        status=error.get("code") if isinstance(error.get("code"), int) else None,
    )


async def _call(client: Any, method: str, path: str, content: bytes | None, doing: str) -> Any:
    """One management call's JSON, tried again on a 429, a 5xx or no answer; a :class:`BatchAPIError` otherwise."""
    from ..http import httpx_module

    problem = ""
    for attempt in range(MANAGEMENT_RETRIES + 1):
        if attempt:
            await asyncio.sleep(2.0 ** (attempt - 1))
        try:
            response = await client.request(
                method, path, content=content, headers={"content-type": "application/json"} if content else None
            )
        except httpx_module().TransportError as exc:
            problem = f"{type(exc).__name__}: {exc}"
            continue
        if response.status_code < 300:
            return response.json()
        problem = f"HTTP {response.status_code}: {_message(response.content)}"
        if response.status_code != 429 and response.status_code < 500:
            break
    key = client.headers.get("x-goog-api-key")
    raise BatchAPIError(
        f"run --batch: Gemini's batch API failed while {doing} at {client.base_url}: {redact(problem[:500], key)}. "
        "The batches already submitted are listed beside the results (OUT.batch.json): run the same command again "
        "to resume them"
    )


def _message(content: bytes) -> str:
    """Google's error message in a body (``{"error": {"message"}}``), else the body's start."""
    try:
        return str(json.loads(content)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return content[:200].decode("utf-8", "replace")
