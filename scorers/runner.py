"""Batch runner: stream rows through sync and async scorers, in input order.

A scorer that fails on a row records a typed error for that row and the run
goes on; nothing becomes a silent NaN. Async scorers (LLM judges) run
concurrently under one run-wide limit; sync scorers score whole chunks through
their vectorised path in a worker thread, so they do not stall the judges.

>>> import scorers
>>> run = scorers.evaluate([{"output": "a", "expected": "a"}, {"output": "b"}], ["ExactMatch"])
>>> [(r.scores["ExactMatch"], sorted(r.errors)) for r in run]
[(1.0, []), (None, ['ExactMatch'])]
>>> run.summary.scorers["ExactMatch"]["errors"]
1
"""
from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterable, Iterator, Mapping, Sequence

from ._aio import background_loop, run_sync
from .base import Aggregator, Scorer
from .errors import ConfigError, ScorerError
from .registry import get
from .score import Score

__all__ = ["RowResult", "Summary", "Evaluation", "evaluate", "aevaluate", "resolve_scorers", "lookup"]


@dataclass
class RowResult:
    """The outcome of one input row: a Score or a typed error per scorer."""

    index: int
    row: dict[str, Any]
    results: dict[str, Score] = field(default_factory=dict)
    errors: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, float | None]:
        """``{scorer: value}``; None for skipped rows and for rows that failed."""
        values: dict[str, float | None] = {name: s.score for name, s in self.results.items()}
        values.update({name: None for name in self.errors})
        return values

    def to_record(self, *, with_metadata: bool = False) -> dict[str, Any]:
        """The row's fields plus ``scores`` (and ``errors``/``metadata`` where present)."""
        record = dict(self.row)
        record["scores"] = self.scores
        if self.errors:
            record["errors"] = self.errors
        if with_metadata:
            record["metadata_scores"] = {name: s.metadata for name, s in self.results.items()}
        return record


class Summary:
    """Per-scorer figures over a run: n, mean, stdev, min, max, skipped, errors, and any corpus figures."""

    def __init__(self, scorers: Sequence[Scorer]) -> None:
        self._aggregators: dict[str, Aggregator] = {s.name: s.aggregator() for s in scorers}
        self._errors: dict[str, collections.Counter[str]] = {s.name: collections.Counter() for s in scorers}
        self.rows = 0
        self.started = time.perf_counter()
        self.elapsed_s = 0.0

    def add(self, result: RowResult) -> None:
        self.rows += 1
        for name, score in result.results.items():
            self._aggregators[name].add(score)
        for name, error in result.errors.items():
            self._errors[name][error["type"]] += 1
        self.elapsed_s = time.perf_counter() - self.started

    @property
    def scorers(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, agg in self._aggregators.items():
            figures = agg.result()
            figures["errors"] = sum(self._errors[name].values())
            if self._errors[name]:
                figures["error_types"] = dict(self._errors[name])
            out[name] = figures
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "elapsed_s": round(self.elapsed_s, 3), "scorers": self.scorers}


def resolve_scorers(scorers: Iterable[Scorer | str] | Mapping[str, Scorer]) -> list[Scorer]:
    """Scorer instances from instances or registered names; names must be unique."""
    items = list(scorers.values()) if isinstance(scorers, Mapping) else list(scorers)
    resolved = [get(s) if isinstance(s, str) else s for s in items]
    for s in resolved:
        if not isinstance(s, Scorer):
            raise ConfigError(f"not a scorer: {s!r}")
    names = [s.name for s in resolved]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"two scorers share the name {', '.join(duplicates)}; give one of them name=...")
    if not resolved:
        raise ConfigError("no scorers given")
    return resolved


_ABSENT = object()


def lookup(row: Mapping[str, Any], path: str) -> Any:
    """The value at a column name or dotted path (``meta.answer``), or a sentinel when absent."""
    if path in row:
        return row[path]
    value: Any = row
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _ABSENT
    return value


def _arguments(scorer: Scorer, row: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    kwargs = {}
    for name in scorer.accepted_fields():
        value = lookup(row, mapping.get(name, name))
        if value is not _ABSENT:
            kwargs[name] = value
    return kwargs


class _Run:
    def __init__(self, scorers: list[Scorer], mapping: Mapping[str, str], concurrency: int) -> None:
        self.scorers = scorers
        self.mapping = dict(mapping)
        self.semaphore = asyncio.Semaphore(max(1, concurrency))
        # one chunk at a time per sync scorer: CPU-bound batch paths (a model's forward pass)
        # must not run several times over on 2 cores, and need not be thread-safe across chunks
        self.cpu_turns = {id(s): asyncio.Lock() for s in scorers if not s.is_async}

    async def _async_scorer(self, scorer: Scorer, rows: list[dict[str, Any]]) -> list[Score | Exception]:
        # any exception is recorded for its row; the run goes on
        return await scorer.ascore_rows([self._args(scorer, r) for r in rows], limit=self.semaphore, catch=Exception)

    async def _sync_turn(self, scorer: Scorer, args: list[dict[str, Any]]) -> list[Score | Exception]:
        async with self.cpu_turns[id(scorer)]:
            return await asyncio.to_thread(self._sync_scorer, scorer, args)

    @staticmethod
    def _sync_scorer(scorer: Scorer, args: list[dict[str, Any]]) -> list[Score | Exception]:
        try:
            return list(scorer.score_rows(args))
        except Exception:  # an unexpected failure in the batch path: isolate the row(s) at fault
            outcomes: list[Score | Exception] = []
            for kwargs in args:
                try:
                    outcomes.append(scorer(**kwargs))
                except Exception as exc:
                    outcomes.append(exc)
            return outcomes

    def _args(self, scorer: Scorer, row: Mapping[str, Any]) -> dict[str, Any]:
        return _arguments(scorer, row, self.mapping)

    async def score_chunk(self, start: int, rows: list[dict[str, Any]]) -> list[RowResult]:
        jobs = []
        for scorer in self.scorers:
            if scorer.is_async:
                jobs.append(self._async_scorer(scorer, rows))
            else:
                jobs.append(self._sync_turn(scorer, [self._args(scorer, r) for r in rows]))
        per_scorer = await asyncio.gather(*jobs)
        out = []
        for offset, row in enumerate(rows):
            result = RowResult(start + offset, row)
            for scorer, outcomes in zip(self.scorers, per_scorer):
                outcome = outcomes[offset]
                if isinstance(outcome, Exception):
                    result.errors[scorer.name] = _error_record(outcome)
                else:
                    result.results[scorer.name] = outcome
            out.append(result)
        return out


def _error_record(exc: Exception) -> dict[str, str]:
    if isinstance(exc, ScorerError):
        return exc.to_dict()
    return {"type": type(exc).__name__, "message": str(exc) or repr(exc)}


async def _chunks(
    rows: Iterable[Mapping[str, Any]],
    scorers: list[Scorer],
    *,
    mapping: Mapping[str, str] | None,
    concurrency: int,
    chunk_size: int,
    prefetch: int,
    start: int,
) -> AsyncIterator[list[RowResult]]:
    """Scored chunks in input order, with up to ``prefetch`` chunks in flight."""
    run = _Run(scorers, mapping or {}, concurrency)
    pending: collections.deque[asyncio.Task[list[RowResult]]] = collections.deque()
    iterator = iter(rows)
    index = start
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < max(1, prefetch):
                chunk = []
                for row in iterator:
                    if not isinstance(row, Mapping):
                        raise ConfigError(f"row {index + len(chunk)} is a {type(row).__name__}, not a mapping of fields")
                    chunk.append(dict(row))
                    if len(chunk) >= chunk_size:
                        break
                if not chunk:
                    exhausted = True
                    break
                pending.append(asyncio.ensure_future(run.score_chunk(index, chunk)))
                index += len(chunk)
            if not pending:
                return
            yield await pending.popleft()
    finally:
        for task in pending:
            task.cancel()


async def aevaluate(
    rows: Iterable[Mapping[str, Any]],
    scorers: Iterable[Scorer | str] | Mapping[str, Scorer],
    *,
    mapping: Mapping[str, str] | None = None,
    concurrency: int = 16,
    chunk_size: int = 128,
    prefetch: int = 4,
    start: int = 0,
) -> AsyncIterator[RowResult]:
    """Async generator of :class:`RowResult`, in input order (see :func:`evaluate`)."""
    chunks = _chunks(rows, resolve_scorers(scorers), mapping=mapping, concurrency=concurrency,
                     chunk_size=chunk_size, prefetch=prefetch, start=start)
    try:
        async for chunk in chunks:
            for result in chunk:
                yield result
    finally:
        await chunks.aclose()


class Evaluation:
    """A lazily evaluated run: iterate it for :class:`RowResult` s; ``summary`` fills in as you go."""

    def __init__(self, rows: Iterable[Mapping[str, Any]], scorers: list[Scorer], **options: Any) -> None:
        self.scorers = scorers
        self.summary = Summary(scorers)
        self._rows = rows
        self._options = options
        self._consumed = False

    def __iter__(self) -> Iterator[RowResult]:
        if self._consumed:
            raise RuntimeError("an Evaluation can be iterated only once (its rows are streamed)")
        self._consumed = True
        chunks = _chunks(self._rows, self.scorers, **self._options)
        try:
            while True:
                try:
                    chunk = run_sync(chunks.__anext__())
                except StopAsyncIteration:
                    return
                for result in chunk:
                    self.summary.add(result)
                    yield result
        finally:
            asyncio.run_coroutine_threadsafe(chunks.aclose(), background_loop()).result()

    def collect(self) -> list[RowResult]:
        """Run to the end and return every row's result."""
        return list(self)


def evaluate(
    rows: Iterable[Mapping[str, Any]],
    scorers: Iterable[Scorer | str] | Mapping[str, Scorer],
    *,
    mapping: Mapping[str, str] | None = None,
    concurrency: int = 16,
    chunk_size: int = 128,
    prefetch: int = 4,
    start: int = 0,
) -> Evaluation:
    """Score ``rows`` (any iterable of mappings, streamed) with ``scorers``.

    ``mapping`` maps scorer fields to row columns or dotted paths
    (``{"output": "response", "expected": "meta.answer"}``). ``concurrency``
    bounds in-flight async scorer calls for the whole run; ``chunk_size`` rows
    are scored together, and up to ``prefetch`` chunks are in flight. Results
    come back in input order; ``start`` is the index given to the first row.

    >>> import scorers
    >>> run = scorers.evaluate([{"response": "Paris", "answer": "Paris"}], ["Levenshtein"],
    ...                        mapping={"output": "response", "expected": "answer"})
    >>> [r.scores for r in run]
    [{'Levenshtein': 1.0}]
    """
    resolved = resolve_scorers(scorers)
    return Evaluation(rows, resolved, mapping=mapping, concurrency=concurrency, chunk_size=chunk_size,
                      prefetch=prefetch, start=start)
