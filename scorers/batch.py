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
import collections
import itertools
import json
import math
import operator
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence

from ._aio import DEFAULT_CONCURRENCY, background_loop, to_daemon_thread
from ._util import ABSENT, lookup
from .aggregate import Aggregator
from .base import Scorer
from .errors import ConfigError, DataError, ScorerError
from .io import LineChunk, escape_input_keys, escaped_key, json_lines, too_deep_to_write, utf8_json
from .registry import get
from .score import Score, ScoreColumn

__all__ = ["BatchScorer", "RowResult", "Summary", "ScoredLines", "RESULT_COLUMN", "result_record", "resolve_scorers"]

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


@dataclass
class ScoredLines:
    """A chunk of JSONL input scored (:meth:`BatchScorer.score_lines`): its results lines, as the results file
    holds them, and what the run counts of its rows."""

    #: one line per row, as :func:`scorers.io.json_lines` writes the row's record
    lines: bytes
    rows: int
    #: rows on which some scorer failed
    failed: int
    summary: "Summary"
    #: the input columns (in order of first appearance) the records hold under another name (:func:`escaped_key`)
    renamed: list[str]
    #: the error of the line that ended the chunk's rows early (the rows before it are scored), or None
    error: DataError | None
    #: how long scoring the chunk took
    seconds: float


class Summary:
    """Per-scorer figures over a run: n, mean, stdev, min, max, skipped, errors, and any corpus figures.

    Summaries of shards of a run :meth:`merge` into the summary of the whole run.
    """

    def __init__(self, scorers: Sequence[Scorer]) -> None:
        self._aggregators: dict[str, Aggregator] = {s.name: s.aggregator() for s in scorers}
        self._errors: dict[str, collections.Counter[str]] = {s.name: collections.Counter() for s in scorers}
        self._unexpected: collections.Counter[str] = collections.Counter()
        self.rows = 0
        self.started = time.perf_counter()
        self.elapsed_s = 0.0
        #: the worker processes a run with ``--workers`` > 1 used, and why fewer than asked (``1 (asked 2: ...)``)
        self.workers: str | None = None

    def add(self, result: RowResult) -> None:
        self.rows += 1
        for name, score in result.results.items():
            self._aggregators[name].add(score)
        for name, error in result.errors.items():
            self._count_error(name, error)
        self.elapsed_s = time.perf_counter() - self.started

    def add_columns(self, rows: int, outcomes: Mapping[str, Sequence[Score | dict[str, Any]] | ScoreColumn]) -> None:
        """Count ``rows`` more rows, each scorer's outcomes given as one column: a Score, or an error record
        (:func:`error_record`), per row; or a :class:`~scorers.score.ScoreColumn`.

        >>> import scorers
        >>> summary = Summary([scorers.get("ExactMatch")])
        >>> summary.add_columns(2, {"ExactMatch": [Score("ExactMatch", 1.0), {"type": "ScorerInputError"}]})
        >>> summary.scorers["ExactMatch"]["n"], summary.scorers["ExactMatch"]["errors"]
        (1, 1)
        """
        self.rows += rows
        for name, column in outcomes.items():
            if isinstance(column, ScoreColumn):  # the scores as one array: no Score made
                self._aggregators[name].add_column(column)
                for exc in column.errors.values():
                    self._count_error(name, error_record(exc))
                continue
            add = self._aggregators[name].add
            failed = []
            for outcome in column:
                if isinstance(outcome, Score):
                    add(outcome)
                else:
                    failed.append(outcome)
            for error in failed:
                self._count_error(name, error)
        self.elapsed_s = time.perf_counter() - self.started

    def _count_error(self, name: str, error: Mapping[str, Any]) -> None:
        self._errors[name][error["type"]] += 1
        self._aggregators[name].add_error(error)
        if error.get("unexpected"):
            self._unexpected[name] += 1

    def merge(self, other: "Summary") -> "Summary":
        """Fold the summary of other rows of the same run into this one; returns ``self``."""
        if other._aggregators.keys() != self._aggregators.keys():
            raise ValueError(
                f"cannot merge summaries of different scorers: {sorted(self._aggregators)} "
                f"and {sorted(other._aggregators)}"
            )
        self.rows += other.rows
        for name, aggregator in self._aggregators.items():
            aggregator.merge(other._aggregators[name])
            self._errors[name].update(other._errors[name])
        self._unexpected.update(other._unexpected)
        self.elapsed_s = max(self.elapsed_s, other.elapsed_s)
        return self

    @property
    def scorers(self) -> dict[str, dict[str, Any]]:
        out = {}
        for name, agg in self._aggregators.items():
            figures = agg.result()
            figures["errors"] = sum(self._errors[name].values())
            if self._errors[name]:
                figures["error_types"] = dict(self._errors[name])
            if self._unexpected[name]:
                figures["unexpected_errors"] = self._unexpected[name]
            out[name] = figures
        return out

    @property
    def failed_scorers(self) -> list[str]:
        """Scorers that failed on every row of a non-empty run."""
        return [name for name, errors in self._errors.items() if self.rows and sum(errors.values()) == self.rows]

    @property
    def problems(self) -> list[str]:
        """Why the run could not score: unexpected errors, and scorers that failed on every row."""
        found = [
            f"{name}: {count} row(s) failed with an unexpected error (a bug or a broken environment, "
            f"not bad input): {', '.join(self._errors[name])}"
            for name, count in self._unexpected.items()
        ]
        found += [
            f"{name}: failed on every row ({', '.join(f'{t} ×{c}' for t, c in self._errors[name].items())})"
            for name in self.failed_scorers
        ]
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "elapsed_s": round(self.elapsed_s, 3),
            "scorers": self.scorers,
            "problems": self.problems,
            **({"workers": self.workers} if self.workers is not None else {}),
        }


class OptionError(ConfigError):
    """An option of a run (:class:`~scorers.Run`, :func:`~scorers.evaluate`, :class:`BatchScorer`) is refused:
    ``option`` names it, ``problem`` says what is wrong (a command names the option by its flag)."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option} {problem}")
        self.option = option
        self.problem = problem


def at_least_one(value: int, option: str) -> int:
    """``value``, the count ``option`` gives, if it is at least 1; else an :class:`OptionError`.

    >>> at_least_one(0, "workers")
    Traceback (most recent call last):
    ...
    scorers.batch.OptionError: workers must be at least 1, got 0
    """
    if value < 1:
        raise OptionError(option, f"must be at least 1, got {value}")
    return value


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
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        at_least_one(concurrency, "concurrency")
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
        kwargs = {}
        for name, path in self._field_paths(scorer):
            value = row[path] if path in row else lookup(row, path)
            if value is not ABSENT:
                kwargs[name] = value
        return kwargs

    def argument_rows(self, scorer: Scorer, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`arguments` of each of ``rows``, taken a field at a time over all the rows."""
        names, columns, holes = [], [], False
        for name, path in self._field_paths(scorer):
            if "." in path:
                column = [row[path] if path in row else lookup(row, path) for row in rows]
            else:
                column = list(map(dict.get, rows, itertools.repeat(path), itertools.repeat(ABSENT)))
            absent = column.count(ABSENT)
            if absent < len(column):
                names.append(name)
                columns.append(column)
                holes = holes or absent > 0
        if holes:
            return [{n: v for n, v in zip(names, values) if v is not ABSENT} for values in zip(*columns)]
        if not names:
            return [{} for _ in rows]
        return list(map(dict, map(zip, itertools.repeat(names), zip(*columns))))

    def _field_paths(self, scorer: Scorer) -> list[tuple[str, str]]:
        """``scorer``'s (field, column or path) pairs, once per scorer."""
        paths = self._paths.get(id(scorer))
        if paths is None:
            paths = self._paths[id(scorer)] = [
                (name, self.mapping.get(name, name)) for name in scorer.accepted_fields()
            ]
        return paths

    # ---------------------------------------------------------------- scoring
    def score_lines(self, chunk: LineChunk, *, metadata: bool = False, output: str | None = None) -> ScoredLines:
        """The rows of ``chunk`` (JSONL lines) scored by the scorers, all sync, into the lines of the results file
        (``metadata``: with ``metadata_scores``) that the local run writes for them, byte for byte.

        A line that is not a row ends the chunk: the rows before it are scored, and its error is given back
        (:attr:`ScoredLines.error`). A ConfigError of any row is raised; so is a :class:`DataError` for a record
        nested too deeply to be written to ``output`` (the results file; None: stdout).

        >>> from scorers.io import LineChunk
        >>> chunk = LineChunk("a.jsonl", 1, 0, [b'{"output": "a", "expected": "a"}\\n', b'{"output": "b"}\\n'])
        >>> scored = BatchScorer(["ExactMatch"]).score_lines(chunk)
        >>> scored.lines.splitlines()[0], scored.rows, scored.failed
        (b'{"output": "a", "expected": "a", "scores": {"ExactMatch": 1.0}}', 2, 1)
        """
        started = time.perf_counter()
        rows, error = chunk.read()
        shared: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}  # arguments, per field paths
        outcomes: dict[str, Sequence[Any]] = {}
        for scorer in self.scorers:
            paths = tuple(self._field_paths(scorer))
            if paths not in shared:
                shared[paths] = self.argument_rows(scorer, rows)
            scored: Any = _score_columns(scorer, list(shared[paths]))
            if type(scored) is ScoreColumn:  # the scores as one array: read as columns below, no Score made
                for exc in scored.errors.values():
                    _recorded(exc)  # a ConfigError is raised
            elif not all(map(isinstance, scored, itertools.repeat(Score))):  # some rows failed
                scored = [outcome if isinstance(outcome, Score) else _recorded(outcome) for outcome in scored]
            outcomes[scorer.name] = scored
        summary = Summary(self.scorers)
        summary.add_columns(len(rows), outcomes)
        records, renamed, failed = _records(rows, outcomes, metadata)
        try:
            lines = json_lines(records)
        except RecursionError:
            raise too_deep_to_write(output) from None
        return ScoredLines(lines, len(rows), failed, summary, renamed, error, time.perf_counter() - started)

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
            return await to_daemon_thread(score_sync, scorer, args)

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
        return _one_by_one(scorer, args)


def _score_columns(scorer: Scorer, args: list[dict[str, Any]]) -> Sequence[Score | BaseException]:
    """:func:`score_sync`, a :class:`~scorers.score.ScoreColumn` kept as the scorer gives it (no Score made)."""
    try:
        batch = scorer.score_batch(args)
    except Exception:
        return _one_by_one(scorer, args)
    return batch if type(batch) is ScoreColumn else list(batch)


def _one_by_one(scorer: Scorer, args: list[dict[str, Any]]) -> list[Score | BaseException]:
    """Each row scored alone: the row(s) at fault in a batch that failed fail alone."""
    outcomes: list[Score | BaseException] = []
    for kwargs in args:
        try:
            outcomes.append(scorer.score_batch([kwargs])[0])
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


def _recorded(outcome: BaseException) -> dict[str, Any]:
    """A row's error as its record; a ConfigError (the run is misconfigured) is raised."""
    if isinstance(outcome, ConfigError):
        raise outcome
    return error_record(outcome)


def _records(
    rows: list[dict[str, Any]], outcomes: Mapping[str, Sequence[Any]], metadata: bool
) -> tuple[list[dict[str, Any]], list[str], int]:
    """The results records of ``rows`` (built in place: the rows are the caller's own) as
    :meth:`RowResult.to_record` builds them from these outcomes (a Score or an error record per row and scorer),
    the input columns renamed in them, and the number of rows with an error."""
    failing = [name for name, column in outcomes.items() if _has_errors(column)]
    with_stats = [name for name, column in outcomes.items() if _has_stats(column)]
    rows, renamed = _escaped(rows)
    errors = _row_errors(outcomes, failing)
    for row, row_scores in zip(rows, _scores(outcomes, failing, errors)):
        row["scores"] = row_scores
    if errors or with_stats or metadata:
        _add_details(rows, outcomes, errors, with_stats, metadata)
    return rows, renamed, len(errors)


def _escaped(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``rows`` with their input keys escaped (:func:`escape_input_keys`; the rows without such a key as they are),
    and the keys renamed, in order of first appearance."""
    clashing = {key for key in set().union(*rows) if escaped_key(key) != key}
    if not clashing:
        return rows, []
    renamed = list(dict.fromkeys(key for row in rows if not clashing.isdisjoint(row) for key in row if key in clashing))
    return [escape_input_keys(row) if not clashing.isdisjoint(row) else row for row in rows], renamed


def _row_errors(outcomes: Mapping[str, Sequence[Any]], failing: list[str]) -> dict[int, dict[str, Any]]:
    """The error records of each row on which some of the ``failing`` scorers failed, by row index."""
    records = {name: _error_records(outcomes[name]) for name in failing}
    failed_rows = set().union(*records.values())
    return {i: {name: records[name][i] for name in failing if i in records[name]} for i in failed_rows}


def _has_errors(column: Sequence[Any]) -> bool:
    """Whether some row of a column of outcomes failed (a ScoreColumn's errors, or an error record)."""
    return bool(column.errors) if type(column) is ScoreColumn else dict in set(map(type, column))


def _error_records(column: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """The error records of a column's failed rows, by row index."""
    if type(column) is ScoreColumn:
        return {i: error_record(error) for i, error in column.errors.items()}
    return {i: outcome for i, outcome in enumerate(column) if type(outcome) is dict}


def _scores(
    outcomes: Mapping[str, Sequence[Any]], failing: list[str], errors: Mapping[int, Mapping[str, Any]]
) -> list[dict[str, float | None]]:
    """Each row's ``{scorer: score}``, the scorers that failed on it last with None, as :attr:`RowResult.scores`."""
    values = [
        column.scores()
        if type(column) is ScoreColumn
        else [getattr(outcome, "score", None) for outcome in column]
        if name in failing
        else list(map(_SCORE, column))
        for name, column in outcomes.items()
    ]
    scores = list(map(dict, map(zip, itertools.repeat(list(outcomes)), zip(*values))))
    for i, row_errors in errors.items():
        row_scores = scores[i]
        for name in row_errors:
            del row_scores[name]
            row_scores[name] = None
    return scores


def _add_details(
    rows: list[dict[str, Any]],
    outcomes: Mapping[str, Sequence[Any]],
    errors: Mapping[int, dict[str, Any]],
    with_stats: list[str],
    metadata: bool,
) -> None:
    """Each row's ``errors``, ``stats`` and (with ``metadata``) ``metadata_scores``, where it has them."""
    for i, row in enumerate(rows):
        if i in errors:
            row["errors"] = errors[i]
        stats = {
            name: list(outcomes[name][i].stats)
            for name in with_stats
            if type(outcomes[name][i]) is not dict and outcomes[name][i].stats is not None
        }
        if stats:
            row["stats"] = stats
        if metadata:
            row["metadata_scores"] = {
                name: _metadata(column, i) for name, column in outcomes.items() if not _failed(column, i)
            }


def _failed(column: Sequence[Any], i: int) -> bool:
    """Whether row ``i`` of a column of outcomes failed."""
    return i in column.errors if type(column) is ScoreColumn else type(column[i]) is dict


def _metadata(column: Sequence[Any], i: int) -> dict[str, Any]:
    """Row ``i``'s metadata (a ScoreColumn's without making its Score)."""
    return column.metadata(i) if type(column) is ScoreColumn else column[i].metadata


_SCORE = operator.attrgetter("score")
_STATS = operator.attrgetter("stats")


def _has_stats(column: Sequence[Any]) -> bool:
    if type(column) is ScoreColumn:  # a column holds no statistics
        return False
    if dict in set(map(type, column)):
        return any(getattr(outcome, "stats", None) is not None for outcome in column)
    return list(map(_STATS, column)).count(None) < len(column)


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
