"""OpenAI's Batch API, for the ``chat`` and ``responses`` protocols: a JSONL file of requests uploaded with
``POST /v1/files`` (purpose ``batch``), ``POST /v1/batches`` (``completion_window`` 24h), ``GET /v1/batches/{id}``
to poll, and ``GET /v1/files/{id}/content`` for the output and error files.

It goes through the ``openai`` SDK's typed methods (``files.create``, ``batches.create``, ``batches.retrieve``,
``files.content``): the SDK builds the multipart upload, and its retries (honouring ``retry-after``) suit these few
management calls, unlike the judges' requests, whose retries the engine owns. Each line is
``{"custom_id": <cache key>, "method": "POST", "url": "/v1/chat/completions", "body": <the body sent online>}``.

>>> from scorers.llm.batch.deferral import Pending
>>> OpenAIBatches().line(Pending("k1", {"model": "m", "messages": []}, "chat", None))
b'{"custom_id":"k1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}'
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from .core import BatchAPI, BatchStatus, Outcome, managing, outcomes_of
from .deferral import Answer, BatchRequestError, Pending

if TYPE_CHECKING:
    from ..config import LLMSettings

__all__ = ["OpenAIBatches"]

#: The batch line's ``url`` for each protocol (also the batch's ``endpoint``).
_URLS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}
#: The states in which a batch has ended (its files can be read).
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: A line's error code as the reason of its :class:`BatchRequestError`.
_REASONS = {"batch_expired": "expired", "batch_cancelled": "cancelled"}
#: Retries of one management call (the SDK's, with its backoff).
MANAGEMENT_RETRIES = 5


class OpenAIBatches(BatchAPI):
    """OpenAI's Batch API (see the module docstring); limits: 50,000 requests and 200 MB a batch."""

    name: ClassVar[str] = "openai"
    apis: ClassVar[frozenset[str]] = frozenset(_URLS)
    max_requests: ClassVar[int] = 50_000
    max_bytes: ClassVar[int] = 190 * 2**20

    async def client(self, settings: "LLMSettings") -> Any:
        import openai

        from ..http import async_twin, openai_client

        given = settings.client
        if isinstance(given, openai.AsyncOpenAI):
            return given.with_options(max_retries=MANAGEMENT_RETRIES)
        if isinstance(given, openai.OpenAI):
            return async_twin(given, settings.transport).with_options(max_retries=MANAGEMENT_RETRIES)
        return openai_client(settings.base_url, settings.transport, api_key=settings.api_key).with_options(
            max_retries=MANAGEMENT_RETRIES
        )

    def line(self, pending: Pending) -> bytes:
        line = {"custom_id": pending.key, "method": "POST", "url": _URLS[pending.api], "body": pending.body}
        return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    async def submit(self, client: Any, lines: Sequence[bytes], first: Pending) -> str:
        data = b"\n".join(lines) + b"\n"
        async with _managing(client, "submitting a batch"):
            uploaded = await client.files.create(file=("batch.jsonl", data, "application/jsonl"), purpose="batch")
            batch = await client.batches.create(
                input_file_id=uploaded.id, endpoint=_URLS[first.api], completion_window="24h"
            )
        return str(batch.id)

    async def status(self, client: Any, batch_id: str) -> BatchStatus:
        async with _managing(client, f"polling batch {batch_id}"):
            batch = await client.batches.retrieve(batch_id)
        counts = batch.request_counts
        shown = f"({counts.completed} done, {counts.failed} failed of {counts.total})" if counts is not None else ""
        problems = [error.message for error in (batch.errors.data or [])] if batch.errors is not None else []
        return BatchStatus(str(batch.status), batch.status in _ENDED, shown, "; ".join(map(str, problems)), batch)

    async def results(self, client: Any, status: BatchStatus) -> dict[str, Outcome]:
        batch = status.raw
        outcomes: dict[str, Outcome] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            async with _managing(client, f"reading the results of batch {batch.id}"):
                content = await client.files.content(file_id)
            outcomes.update(outcomes_of(content.content, _outcome))
        return outcomes


def _outcome(line: Mapping[str, Any]) -> tuple[str, Outcome]:
    """A line of an output or error file: its ``custom_id`` and the reply body, or its error."""
    key = str(line.get("custom_id"))
    error, response = line.get("error"), line.get("response") or {}
    status = response.get("status_code")
    if not error and status == 200:
        return key, Answer(response.get("body"))
    if error:
        reason = _REASONS.get(str(error.get("code")), "errored")
        message = f"the batch did not answer this request ({error.get('code')}: {error.get('message')})"
    else:
        body = response.get("body")
        detail = body.get("error", {}).get("message") if isinstance(body, Mapping) else None
        reason, message = "errored", f"the batch's request failed (HTTP {status}: {detail or 'no message'})"
    return key, BatchRequestError(f"{message}; the next run sends it again", reason=reason, status=status)


def _managing(client: Any, doing: str) -> managing:
    import openai

    return managing(client, "OpenAI", doing, (openai.OpenAIError,))
