"""A run sent through batch APIs: the :class:`Batched` engine (what ``Run(batch=True)`` and ``run --batch`` use).

It is the local engine with chunks of :attr:`Batched.rows` rows, each judged in rounds (:class:`BatchedUnit`): a
pass over the chunk holds back every request the cache cannot answer (:mod:`~scorers.llm.batch.deferral`), the
batch layer gets them answered (:class:`~scorers.llm.batch.core.Batches`), and the chunk is judged again; a judge
whose second request depends on the first reply (RAG's claims then verdicts, SelfCheck's samples then checks, a
G-Eval writing its steps) takes one round per step. When a pass holds nothing back, the chunk is scored by every
scorer, its judges answered from what the batch returned: the rows, cache entries and scores an online run gives.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, AsyncGenerator, ClassVar, Generator, Mapping, Sequence

from pydantic import Field

from ..._aio import background_loop
from ...batch import BatchScorer, RowResult
from ...engines.base import Job
from ...engines.local import Local
from ...errors import ConfigError
from .deferral import Deferral, deferring
from .providers import batch_api
from .session import STATE_SUFFIX, Batches, BatchState

__all__ = ["Batched", "BatchedUnit", "check_batchable"]


class Batched(Local):
    """The local engine, its judges' requests sent through their provider's batch API (see the module docstring).

    >>> Batched(state="out.jsonl.batch.json", poll_s=5)
    Batched(state='out.jsonl.batch.json', poll_s=5.0, rows=10000)
    """

    name: ClassVar[str] = "batch"

    state: str | None = Field(
        default=None, description="the file listing the batches out, to resume them (None: not kept)"
    )
    poll_s: float = Field(gt=0, description="the longest wait between two polls of a batch (seconds)")
    rows: int = Field(default=10_000, ge=1, description="rows judged per round of batches")

    @classmethod
    def beside(cls, output: str | None, **options: Any) -> "Batched":
        """The engine of a run writing ``output``: its state file is ``OUTPUT.batch.json`` (none for stdout)."""
        from ...identity import has_sidecar

        return cls(state=output + STATE_SUFFIX if output and has_sidecar(output) else None, **options)

    def _batched(self, job: Job) -> tuple[Job, Batches]:
        batches = Batches(BatchState(self.state), self.poll_s)
        unit = BatchedUnit(job.unit, batches)
        return dataclasses.replace(
            job, unit=unit, chunk_size=job.chunk_size or self.rows, prefetch=job.prefetch or 2
        ), batches

    def score(self, job: Job) -> Generator[list[RowResult], None, None]:
        batched, batches = self._batched(job)
        try:
            yield from super().score(batched)
            batches.finish()
        finally:
            asyncio.run_coroutine_threadsafe(batches.close(), background_loop()).result()

    async def ascore(self, job: Job) -> AsyncGenerator[list[RowResult], None]:
        batched, batches = self._batched(job)
        try:
            async for chunk in super().ascore(batched):
                yield chunk
            batches.finish()
        finally:
            await batches.close()


class BatchedUnit(BatchScorer):
    """``unit``'s scorers, each chunk judged in rounds of batches before it is scored (see the module docstring)."""

    def __init__(self, unit: BatchScorer, batches: Batches) -> None:
        super().__init__(unit.scorers, mapping=unit.mapping, concurrency=unit.concurrency)
        self.judges = BatchScorer(
            [s for s in unit.scorers if s.is_async], mapping=unit.mapping, concurrency=unit.concurrency
        )
        self.batches = batches

    async def score(self, rows: Sequence[Mapping[str, Any]], start: int = 0, **options: Any) -> list[Any]:
        """The rows' results, once their judges' requests were answered: passes of the judges alone while they hold
        requests back, then one of every scorer (which holds none back, or one more round follows)."""
        deferral = Deferral()
        with deferring(deferral):
            judging = bool(self.judges.scorers)
            while True:
                deferral.new_pass()
                if judging:
                    await self.judges.score(rows, start, limit=options.get("limit"))
                else:
                    results = await super().score(rows, start, **options)
                if deferral.pending:
                    await self.batches.answer(deferral)
                elif judging:
                    judging = False
                else:
                    break
        self.batches.release(deferral)
        return results


def check_batchable(scorers: Sequence[Any]) -> None:
    """A :class:`~scorers.errors.ConfigError` naming the first judge of ``scorers`` whose requests no batch API here
    takes (its protocol has none, or it asks the legacy completions API: GPTScore); nothing is sent before it.

    >>> import scorers
    >>> check_batchable([scorers.get("Factuality"), scorers.get("ExactMatch")])
    >>> check_batchable([scorers.get("Factuality", api="bedrock")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: Factuality: run --batch: the bedrock API has no batch API here ...
    """
    from ...judges.base import LLMJudge
    from ...judges.gptscore import GPTScore

    for scorer in [judge for s in scorers for judge in getattr(s, "jurors", (s,))]:  # a jury: each of its jurors
        if isinstance(scorer, GPTScore):
            raise ConfigError(
                f"{scorer.name}: run --batch cannot send it: it asks the legacy completions API for the prompt's "
                "log-probabilities, which no batch here takes; run it without --batch",
                scorer=scorer.name,
            )
        if isinstance(scorer, LLMJudge):
            try:
                batch_api(scorer.api or scorer.engine.api)
            except ConfigError as exc:
                raise ConfigError(f"{scorer.name}: {exc}", scorer=scorer.name) from None
