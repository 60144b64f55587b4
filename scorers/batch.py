"""The engine-neutral unit of work: a batch of rows in, each row's scores, errors and statistics out.

:class:`BatchScorer` is what the local runner (:mod:`scorers.runner`) and every
engine (:mod:`scorers.engines`) call, so a row scores identically everywhere. It
pickles as its scorers' settings (core v2: scorers pickle without their models,
clients and caches); in the process that calls it, scorers build their heavy
state lazily and keep it, and judges run on that process's own event loop
(:func:`scorers._aio.background_loop`), so HTTP clients live as long as the worker.

Two faces:

``await unit.score(rows, start)``
    :class:`RowResult` per row, in order (the local runner's path);
``unit(batch)``
    an engine's ``map_batches`` / ``mapInArrow`` callable: a ``pyarrow.Table`` or
    ``RecordBatch``, a ``pandas.DataFrame`` or a dict of columns in, the same kind out
    with one column more, :data:`RESULT_COLUMN`: each row's ``{"scores", "errors",
    "stats"}`` as JSON text (a :class:`~scorers.errors.ConfigError` is raised: the run
    stops). :func:`result_record` turns a row of the output back into the results-file
    record the local run writes.

>>> unit = BatchScorer(["ExactMatch", "Levenshtein"])
>>> out = unit({"output": ["abc", "x"], "expected": ["abc", "y"]})
>>> [result_record(row) for row in _rows(out)][1]["scores"]
{'ExactMatch': 0.0, 'Levenshtein': 0.0}
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence

from ._aio import background_loop
from ._util import ABSENT, lookup
from .base import Scorer
from .errors import ConfigError, ScorerError
from .io import escape_input_keys, utf8_json
from .registry import get
from .score import Score

__all__ = ["BatchScorer", "RowResult", "RESULT_COLUMN", "result_record", "resolve_scorers"]

#: The column an engine's output batch gets: each row's scores, errors and statistics as JSON text.
RESULT_COLUMN = "_scorers_result"


@dataclass
class RowResult:
    """The outcome of one input row: a Score or a typed error per scorer."""

    index: int
    row: dict[str, Any]
    results: dict[str, Score] = field(default_factory=dict)
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, float | None]:
        """``{scorer: value}``; None for skipped rows and for rows that failed."""
        values: dict[str, float | None] = {name: s.score for name, s in self.results.items()}
        values.update({name: None for name in self.errors})
        return values

    def to_record(self, *, with_metadata: bool = False) -> dict[str, Any]:
        """The row's fields plus ``scores`` (and ``errors``, ``stats``, ``metadata_scores`` where present).

        A field of the row named like one of those keys is renamed (:func:`scorers.io.escape_input_keys`).
        """
        record = escape_input_keys(self.row)
        record["scores"] = self.scores
        if self.errors:
            record["errors"] = self.errors
        stats = {name: list(s.stats) for name, s in self.results.items() if s.stats is not None}
        if stats:
            record["stats"] = stats
        if with_metadata:
            record["metadata_scores"] = {name: s.metadata for name, s in self.results.items()}
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any], index: int = -1) -> "RowResult":
        """A row of a results file (as :meth:`to_record` wrote it), e.g. for the summary of a resumed run."""
        result = cls(index, {})
        metadata = record.get("metadata_scores") or {}
        stats = record.get("stats") or {}
        errors = record.get("errors") or {}
        for name, value in record["scores"].items():
            if name in errors:
                result.errors[name] = errors[name]
            else:
                row_stats = stats.get(name)
                result.results[name] = Score(
                    name, value, dict(metadata.get(name) or {}), None if row_stats is None else tuple(row_stats)
                )
        return result


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


class BatchScorer:
    """Score batches of rows with ``scorers`` (instances or registered names), fields taken through ``mapping``.

    ``concurrency`` bounds the in-flight calls of the async scorers (judges) of one batch.
    """

    def __init__(
        self,
        scorers: Iterable[Scorer | str] | Mapping[str, Scorer],
        *,
        mapping: Mapping[str, str] | None = None,
        concurrency: int = 16,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        self.scorers: list[Scorer] = resolve_scorers(scorers)
        self.mapping = dict(mapping or {})
        self.concurrency = concurrency
        self._paths: dict[int, list[tuple[str, str]]] = {}
        self._cpu_turns: dict[int, asyncio.Lock] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"scorers": self.scorers, "mapping": self.mapping, "concurrency": self.concurrency}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["scorers"], mapping=state["mapping"], concurrency=state["concurrency"])

    # ---------------------------------------------------------------- fields
    def arguments(self, scorer: Scorer, row: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments ``scorer`` gets from ``row``: its fields, through the mapping."""
        paths = self._paths.get(id(scorer))
        if paths is None:  # (field, column or path) pairs, once per scorer
            paths = self._paths[id(scorer)] = [
                (name, self.mapping.get(name, name)) for name in scorer.accepted_fields()
            ]
        kwargs = {}
        for name, path in paths:
            value = row[path] if path in row else lookup(row, path)
            if value is not ABSENT:
                kwargs[name] = value
        return kwargs

    # ---------------------------------------------------------------- scoring
    async def score(
        self,
        rows: Sequence[Mapping[str, Any]],
        start: int = 0,
        *,
        limit: asyncio.Semaphore | None = None,
        pool: Callable[[list[list[dict[str, Any]]]], Any] | None = None,
    ) -> list[Any]:
        """Each row's :class:`RowResult`, in order; a ConfigError of any row is raised.

        ``limit`` is the run-wide bound of async calls (default: ``concurrency`` for this batch);
        ``pool`` (the local runner's worker processes) scores the sync scorers' arguments instead
        of a thread of this process.
        """
        limit = limit if limit is not None else asyncio.Semaphore(self.concurrency)
        pooled = [i for i, s in enumerate(self.scorers) if not s.is_async] if pool is not None else []
        here = [i for i in range(len(self.scorers)) if i not in pooled]
        jobs: list[Awaitable[Any]] = []  # each here-scorer's outcomes, then the pool's (one list per pooled scorer)
        for i in here:
            scorer = self.scorers[i]
            args = [self.arguments(scorer, r) for r in rows]
            jobs.append(
                self._score_async(scorer, args, limit) if scorer.is_async else self._score_sync_in_thread(scorer, args)
            )
        if pooled:
            assert pool is not None
            jobs.append(pool([[self.arguments(self.scorers[i], r) for r in rows] for i in pooled]))
        done = await asyncio.gather(*jobs)
        outcomes = dict(zip(here, done))
        if pooled:
            outcomes.update(zip(pooled, done[-1]))
        out = []
        for offset, row in enumerate(rows):
            result = RowResult(start + offset, dict(row))
            for i, scorer in enumerate(self.scorers):
                outcome = outcomes[i][offset]
                if isinstance(outcome, ConfigError):  # the run is misconfigured: stop, loudly
                    raise outcome
                if isinstance(outcome, BaseException):
                    result.errors[scorer.name] = error_record(outcome)
                else:
                    result.results[scorer.name] = outcome
            out.append(result)
        return out

    async def _score_async(
        self, scorer: Scorer, args: list[dict[str, Any]], limit: asyncio.Semaphore
    ) -> list[Score | BaseException]:
        try:
            return list(await scorer.ascore_batch(args, limit=limit))
        except Exception:
            outcomes: list[Score | BaseException] = []
            for kwargs in args:
                try:
                    outcomes.append((await scorer.ascore_batch([kwargs], limit=limit))[0])
                except Exception as exc:
                    outcomes.append(exc)
            return outcomes

    async def _score_sync_in_thread(self, scorer: Scorer, args: list[dict[str, Any]]) -> list[Score | BaseException]:
        # one batch at a time per sync scorer: CPU-bound batch paths (a model's forward pass)
        # must not run several times over on few cores, and need not be thread-safe across batches
        async with self._cpu_turns.setdefault(id(scorer), asyncio.Lock()):
            return await asyncio.to_thread(score_sync, scorer, args)

    # ---------------------------------------------------------------- engines
    def __call__(self, batch: Any) -> Any:
        """An engine's batch (Arrow, pandas or a dict of columns) with :data:`RESULT_COLUMN` added."""
        rows = _rows(batch)
        results = asyncio.run_coroutine_threadsafe(self.score(rows), background_loop()).result()
        column = [utf8_json(_result_json(r), allow_nan=False) for r in results]
        return _with_column(batch, RESULT_COLUMN, column)


def score_sync(scorer: Scorer, args: list[dict[str, Any]]) -> list[Score | BaseException]:
    """A sync scorer's batch; an unexpected failure of the batch is isolated to the row(s) at fault."""
    try:
        return list(scorer.score_batch(args))
    except Exception:
        outcomes: list[Score | BaseException] = []
        for kwargs in args:
            try:
                outcomes.append(scorer.score_batch([kwargs])[0])
            except Exception as exc:
                outcomes.append(exc)
        return outcomes


def error_record(exc: BaseException) -> dict[str, Any]:
    """What a results file records of a row's error: a ScorerError's fields, or an unexpected one's type."""
    if isinstance(exc, ScorerError):
        return exc.to_dict()
    return {"type": type(exc).__name__, "message": str(exc) or repr(exc), "unexpected": True}


def _result_json(result: Any) -> dict[str, Any]:
    record = result.to_record()
    return {key: record[key] for key in ("scores", "errors", "stats") if key in record}


def result_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row of an engine's output → the record the local run writes: the row's fields, scores, errors, stats.

    >>> result_record({"output": "a", "scores": 3, RESULT_COLUMN: '{"scores": {"ExactMatch": 1.0}}'})
    {'output': 'a', 'input:scores': 3, 'scores': {'ExactMatch': 1.0}}
    """
    record = escape_input_keys({key: value for key, value in row.items() if key != RESULT_COLUMN})
    record.update(json.loads(row[RESULT_COLUMN]))
    return record


def _rows(batch: Any) -> list[dict[str, Any]]:
    """The rows of an Arrow table / record batch, a pandas DataFrame or a dict of equal-length columns."""
    if hasattr(batch, "to_pylist"):  # pyarrow.Table / RecordBatch
        return batch.to_pylist()
    if hasattr(batch, "to_dict") and hasattr(batch, "columns"):  # pandas.DataFrame
        return [{k: _plain(v) for k, v in row.items()} for row in batch.to_dict("records")]
    if isinstance(batch, Mapping):
        columns = {name: list(values) for name, values in batch.items()}
        lengths = {len(values) for values in columns.values()}
        if len(lengths) > 1:
            raise ConfigError(f"a batch's columns differ in length: {sorted(lengths)}")
        return [dict(zip(columns, values)) for values in zip(*columns.values())]
    raise ConfigError(
        f"a batch must be a pyarrow Table/RecordBatch, a pandas DataFrame or a dict of columns, "
        f"not {type(batch).__name__}"
    )


def _plain(value: Any) -> Any:
    """pandas gives NaN for a missing value of a float column: a row without the value, not a NaN."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.tolist() if hasattr(value, "tolist") and not isinstance(value, (str, bytes)) else value


def _with_column(batch: Any, name: str, values: list[str]) -> Any:
    if hasattr(batch, "append_column"):  # pyarrow.Table
        import pyarrow as pa

        return batch.append_column(name, pa.array(values, pa.string()))
    if hasattr(batch, "to_pylist"):  # pyarrow.RecordBatch
        import pyarrow as pa

        return pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(values, pa.string())], names=[*batch.schema.names, name]
        )
    if hasattr(batch, "assign"):  # pandas.DataFrame
        return batch.assign(**{name: values})
    return {**{k: list(v) for k, v in batch.items()}, name: values}
