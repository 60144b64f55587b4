"""Anthropic's Message Batches, for the ``anthropic`` protocol: ``POST /v1/messages/batches`` with
``{"requests": [{"custom_id", "params"}]}`` (``params``: the Messages body the protocol sends online),
``GET /v1/messages/batches/{id}`` to poll (``processing_status`` ``in_progress``, ``canceling``, ``ended``), and
the JSONL at the batch's ``results_url`` (each line ``{"custom_id", "result": {"type": "succeeded", "message"}}``,
or ``errored``, ``canceled``, ``expired``).

Through the ``anthropic`` SDK (the client of the ``anthropic`` protocol, its retries on for these few management
calls); the results are read as raw JSON lines, so each reply reaches the protocol's parser as the online reply
would, not as the SDK's model of it.

>>> from scorers.llm.batch.deferral import Pending
>>> AnthropicBatches().line(Pending("k1", {"model": "claude", "max_tokens": 8, "messages": []}, "anthropic", None))
b'{"custom_id":"k1","params":{"model":"claude","max_tokens":8,"messages":[]}}'
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from .core import BatchAPI, BatchStatus, Outcome, managing, outcomes_of
from .deferral import Answer, BatchRequestError, Pending

if TYPE_CHECKING:
    from ..config import LLMSettings

__all__ = ["AnthropicBatches"]

#: Retries of one management call (the SDK's, with its backoff).
MANAGEMENT_RETRIES = 5
#: A line's result type as the reason of its :class:`BatchRequestError`.
_REASONS = {"expired": "expired", "canceled": "cancelled", "errored": "errored"}


class AnthropicBatches(BatchAPI):
    """Anthropic's Message Batches (see the module docstring); limits: 100,000 requests and 256 MB a batch."""

    name: ClassVar[str] = "anthropic"
    apis: ClassVar[frozenset[str]] = frozenset({"anthropic"})
    max_requests: ClassVar[int] = 100_000
    max_bytes: ClassVar[int] = 250 * 2**20

    async def client(self, settings: "LLMSettings") -> Any:
        from ..protocols import wire

        client = await wire("anthropic").client(settings)
        return client.with_options(max_retries=MANAGEMENT_RETRIES)

    def line(self, pending: Pending) -> bytes:
        line = {"custom_id": pending.key, "params": pending.body}
        return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    async def submit(self, client: Any, lines: Sequence[bytes], first: Pending) -> str:
        async with _managing(client, "submitting a message batch"):
            batch = await client.messages.batches.create(requests=[json.loads(line) for line in lines])
        return str(batch.id)

    async def status(self, client: Any, batch_id: str) -> BatchStatus:
        async with _managing(client, f"polling message batch {batch_id}"):
            batch = await client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        shown = (
            f"({counts.succeeded} succeeded, {counts.errored} errored, {counts.expired} expired, "
            f"{counts.canceled} canceled, {counts.processing} processing)"
        )
        return BatchStatus(str(batch.processing_status), batch.processing_status == "ended", shown, "", batch)

    async def results(self, client: Any, status: BatchStatus) -> dict[str, Outcome]:
        batch = status.raw
        if not batch.results_url:
            return {}
        async with _managing(client, f"reading the results of message batch {batch.id}"):
            response = await client.get(
                batch.results_url, cast_to=_response_type(client), options={"headers": {"Accept": "application/binary"}}
            )
        return outcomes_of(response.content, _outcome)


def _outcome(line: Mapping[str, Any]) -> tuple[str, Outcome]:
    """A results line: its ``custom_id`` and the message, or its error."""
    key = str(line.get("custom_id"))
    result = line.get("result") or {}
    kind = result.get("type")
    if kind == "succeeded":
        return key, Answer(result.get("message"))
    detail = ""
    if kind == "errored":
        error = (result.get("error") or {}).get("error") or result.get("error") or {}
        detail = f": {error.get('type')}: {error.get('message')}"
    return key, BatchRequestError(
        f"the message batch did not answer this request ({kind}{detail}); the next run sends it again",
        reason=_REASONS.get(str(kind), "errored"),
    )


def _response_type(client: Any) -> Any:
    """The raw HTTP response class of the httpx flavour under ``client`` (``cast_to`` that reads the bytes): that
    of the first ``AsyncClient`` among its HTTP client's classes (the SDK wraps httpx's, or its ``httpx2`` fork's)."""
    import importlib

    http_class = next(c for c in type(client._client).__mro__ if c.__name__ == "AsyncClient")
    return importlib.import_module(http_class.__module__.split(".")[0]).Response


def _managing(client: Any, doing: str) -> managing:
    import anthropic

    return managing(client, "Anthropic", doing, (anthropic.AnthropicError,))
