"""The batches of one run (:class:`Batches`) and the file beside the results that lets a stopped run resume them
(:class:`BatchState`), whatever the provider.

:meth:`Batches.answer` gets every request a pass held back (:class:`~scorers.llm.batch.deferral.Pending`) an
outcome: from a batch out that the state file lists (a run killed while it was out: it is polled again, never sent
again), else from new batches, one per endpoint, API and model (split at the provider's limits). It polls each batch
after 1 s, then at intervals that double up to ``poll_s``, until it ends; then the reply of each line goes to the
deferral, and each line the batch did not answer (it expired, was cancelled or failed, or the line failed) gets its
:class:`~scorers.errors.BatchRequestError`.

>>> state = BatchState(None)
>>> state.add({"id": "batch_1", "api": "chat", "custom_ids": ["k1", "k2"]})
>>> [entry["id"] for entry in state.holding({"k2", "k3"})]
['batch_1']
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ...errors import DataError
from ..protocols import wire
from ..redaction import redact
from .core import BatchAPI, Outcome
from .deferral import BatchRequestError, Deferral, Pending, labelled
from .providers import batch_api

if TYPE_CHECKING:
    from ..config import LLMSettings

__all__ = ["Batches", "BatchState", "STATE_SUFFIX"]

log = logging.getLogger("scorers.llm.batch")

#: What a results file's name gets to name the file of its batches out: ``OUT`` → ``OUT.batch.json``.
STATE_SUFFIX = ".batch.json"
#: The state file's format version.
FORMAT = 1
#: The first poll's delay (seconds); each next one waits twice as long, up to the run's ``poll_s``.
FIRST_POLL_S = 1.0


class BatchState:
    """The batches of a run that are out, in ``path`` (``OUT.batch.json``; ``None``: kept in memory only),
    rewritten atomically whenever one is added or removed: each batch's id, provider, API, model, endpoint (no
    credentials) and the ``custom_ids`` of its lines."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.batches: list[dict[str, Any]] = self._read() if path else []

    def _read(self) -> list[dict[str, Any]]:
        assert self.path is not None
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read the batch state {self.path}: {exc}; remove it to submit again") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("batches"), list):
            raise DataError(f"{self.path} is not a batch state of this version; remove it to submit again")
        return data["batches"]

    def holding(self, keys: set[str]) -> list[dict[str, Any]]:
        """The batches out that hold one of ``keys``."""
        return [entry for entry in self.batches if not keys.isdisjoint(entry["custom_ids"])]

    def add(self, entry: dict[str, Any]) -> None:
        self.batches.append(entry)
        self._write()

    def remove(self, batch_ids: Iterable[str]) -> None:
        gone = set(batch_ids)
        if any(entry["id"] in gone for entry in self.batches):
            self.batches = [entry for entry in self.batches if entry["id"] not in gone]
            self._write()

    def clear(self) -> None:
        """Forget every batch (the run has ended): the file goes."""
        self.batches = []
        if self.path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def _write(self) -> None:
        if not self.path:
            return
        if not self.batches:
            self.clear()
            return
        text = json.dumps({"format": FORMAT, "batches": self.batches}, ensure_ascii=False)
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, temporary = tempfile.mkstemp(prefix=os.path.basename(self.path) + ".", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


class Batches:
    """The batches of one run: submitted, polled every ``poll_s`` seconds at most, read, and listed in ``state``
    while they are out. Lives on one event loop (the run's)."""

    def __init__(self, state: BatchState, poll_s: float) -> None:
        self.state = state
        self.poll_s = poll_s
        #: Outcomes downloaded and not yet taken by a chunk (a batch resumed may hold requests of later chunks).
        self._downloaded: dict[str, tuple[str, Outcome]] = {}
        #: Per batch id: the task that polls and reads it (shared by the chunks that wait for it).
        self._reading: dict[str, asyncio.Future[None]] = {}
        self._clients: dict[tuple[str, str, str], tuple[Any, bool]] = {}
        #: Requests each batch submitted by this process holds (the submitted count and the lines, in all).
        self.submitted_batches = 0
        self.submitted_requests = 0

    async def answer(self, deferral: Deferral) -> None:
        """Give each request ``deferral`` holds (:attr:`Deferral.pending`) its outcome: from the batches out that
        hold it (polled, never sent again), else from new batches; the pending list is emptied."""
        pending = dict(deferral.pending)
        deferral.pending.clear()
        for request in pending.values():  # a protocol without a batch API: refused before any request
            batch_api(request.api)
        out = self.state.holding(set(pending) - self._downloaded.keys())
        for entry in out:
            if entry["id"] not in self._reading:
                log.info(
                    "batch %s: out since an earlier run (%s); polled again, not sent again",
                    entry["id"],
                    self.state.path,
                )
        await asyncio.gather(*(self._read(entry, _settings_for(entry, pending)) for entry in out))
        fresh = [request for key, request in pending.items() if key not in self._downloaded]
        await asyncio.gather(*(self._send(group) for group in _groups(fresh)))
        for key, request in pending.items():
            if key not in self._downloaded:  # another chunk shared it and has stored its reply: the cache has it
                continue
            batch_id, outcome = self._downloaded[key]
            deferral.take(key, labelled(outcome, request.scorer) if isinstance(outcome, BatchRequestError) else outcome)
            deferral.batches.add(batch_id)

    def release(self, deferral: Deferral) -> None:
        """A chunk has its replies stored: its outcomes are dropped, and the batches it took from no longer listed
        in the state once no outcome of theirs is left for another chunk."""
        for key in deferral.keys():
            self._downloaded.pop(key, None)
        waiting = {batch_id for batch_id, _ in self._downloaded.values()}
        self.state.remove(batch_id for batch_id in deferral.batches if batch_id not in waiting)

    def finish(self) -> None:
        """The run has ended: nothing is left to resume."""
        self.state.clear()

    async def close(self) -> None:
        """Stop polling (a run stopped while batches are out leaves them listed, to resume), and close the clients
        made for the batches (not those made from a user's ``client=``, which share its connections)."""
        reading, self._reading = list(self._reading.values()), {}
        for task in reading:
            task.cancel()
        await asyncio.gather(*reading, return_exceptions=True)
        clients, self._clients = list(self._clients.values()), {}
        for client, owned in clients:
            if owned:  # an SDK's client closes with close(), an httpx one (Gemini's) with aclose()
                with contextlib.suppress(Exception):
                    await (getattr(client, "aclose", None) or client.close)()

    # ---------------------------------------------------------------- submitting and reading
    async def _client(self, provider: BatchAPI, settings: "LLMSettings") -> Any:
        key = (provider.name, settings.base_url, hashlib.sha256((settings.api_key or "").encode()).hexdigest())
        made = self._clients.get(key)
        if made is None:
            made = self._clients[key] = (await provider.client(settings), settings.client is None)
        return made[0]

    async def _send(self, requests: Sequence[Pending]) -> None:
        """Submit ``requests`` (one endpoint, API and model) in as many batches as the provider's limits need, and
        read them once they end."""
        first = requests[0]
        provider = batch_api(first.api)
        client = await self._client(provider, first.settings)
        entries = []
        for lines, keys in _split(provider, requests):
            batch_id = await provider.submit(client, lines, first)
            self.submitted_batches += 1
            self.submitted_requests += len(lines)
            entry = {
                "id": batch_id,
                "provider": provider.name,
                "api": first.api,
                "model": first.body.get("model"),
                "base_url": first.settings.shown_url,
                "submitted_at": time.time(),
                "custom_ids": keys,
            }
            self.state.add(entry)
            entries.append(entry)
            log.info(
                "batch %s: %d requests submitted to %s (%s, %s); listed in %s until they are stored",
                batch_id,
                len(keys),
                provider.name,
                first.api,
                entry["model"],
                self.state.path or "memory",
            )
        await asyncio.gather(*(self._read(entry, first.settings) for entry in entries))

    async def _read(self, entry: Mapping[str, Any], settings: "LLMSettings") -> None:
        """Poll batch ``entry`` until it ends and keep its outcomes (once, whoever waits for it)."""
        reading = self._reading.get(entry["id"])
        if reading is None:
            reading = self._reading[entry["id"]] = asyncio.ensure_future(self._poll_and_read(entry, settings))
        await asyncio.shield(reading)

    async def _poll_and_read(self, entry: Mapping[str, Any], settings: "LLMSettings") -> None:
        provider = batch_api(entry["api"])
        client = await self._client(provider, settings)
        delay = min(FIRST_POLL_S, self.poll_s)
        while True:
            status = await provider.status(client, entry["id"])
            if status.ended:
                break
            log.debug("batch %s: %s %s; next poll in %.1f s", entry["id"], status.state, status.counts, delay)
            await asyncio.sleep(delay)
            delay = min(2 * delay, self.poll_s)
        log.info("batch %s: %s %s", entry["id"], status.state, status.counts)
        outcomes = await provider.results(client, status)
        secrets = wire(entry["api"]).redacted(settings)
        for key in entry["custom_ids"]:
            outcome = outcomes.get(key)
            if isinstance(outcome, BatchRequestError):  # a line's error in the provider's words, which may echo a key
                message = redact(str(outcome), settings.api_key, *secrets)
                outcome = BatchRequestError(message, reason=outcome.reason, status=outcome.status)
            elif outcome is None:
                problem = f" ({status.problem})" if status.problem else ""
                outcome = BatchRequestError(
                    f"the {provider.name} batch {entry['id']} ended {status.state}{problem} before answering this "
                    "request; the next run sends it again",
                    reason=_REASONS.get(status.state, "failed"),
                )
            self._downloaded[key] = (entry["id"], outcome)


#: A batch's final state as the reason of the requests it left unanswered.
_REASONS = {
    "expired": "expired",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "canceling": "cancelled",
    "BATCH_STATE_EXPIRED": "expired",
    "BATCH_STATE_CANCELLED": "cancelled",
}


def _settings_for(entry: Mapping[str, Any], pending: Mapping[str, Pending]) -> "LLMSettings":
    """The settings of a request of ``pending`` that batch ``entry`` holds (its endpoint and credentials)."""
    held = set(entry["custom_ids"])
    return next(request.settings for key, request in pending.items() if key in held)


def _groups(requests: Iterable[Pending]) -> list[list[Pending]]:
    """``requests`` by endpoint, credentials, API and model: what one batch may hold."""
    groups: dict[tuple[Any, ...], list[Pending]] = {}
    for request in requests:
        settings = request.settings
        key = (settings.base_url, settings.api_key, id(settings.client), request.api, request.body.get("model"))
        groups.setdefault(key, []).append(request)
    return list(groups.values())


def _split(provider: BatchAPI, requests: Sequence[Pending]) -> list[tuple[list[bytes], list[str]]]:
    """``requests`` as the lines of one batch or more, each within the provider's limits."""
    batches: list[tuple[list[bytes], list[str]]] = []
    lines: list[bytes] = []
    keys: list[str] = []
    size = 0
    for request in requests:
        line = provider.line(request)
        if lines and (len(lines) == provider.max_requests or size + len(line) + 1 > provider.max_bytes):
            batches.append((lines, keys))
            lines, keys, size = [], [], 0
        lines.append(line)
        keys.append(request.key)
        size += len(line) + 1
    if lines:
        batches.append((lines, keys))
    return batches
