"""The run: :func:`evaluate` streams rows through scorers on an engine (:mod:`scorers.engines`; by default the
local one, :class:`~scorers.engines.Local`) and gives back each row's :class:`RowResult` and the run's
:class:`Summary` (:class:`Evaluation`, whatever the engine).

Failure policy:

- a :class:`~scorers.errors.ScorerError` for a row (bad input, a judge that gave
  up) is recorded on that row and the run goes on;
- a :class:`~scorers.errors.ConfigError` (missing extra, key, WordNet, bad
  parameter or template) stops the run at once: it is raised from the iteration;
- any other exception (a bug, an ``ImportError``) is recorded on its row as
  ``unexpected``; :attr:`Summary.problems` names it, and names every scorer
  that failed on every row.

Two more rules decide what stops a run:

- a mapped column, or a field some scorer requires, that is absent from every one
  of the first :data:`COLUMN_CHECK_ROWS` rows is a ``ConfigError`` before any
  scoring (a typo or a missing ``mapping``); absent from some rows only, it is
  those rows' :class:`~scorers.errors.ScorerInputError`;
- an error reading the input (a torn JSONL line: a ``DataError``; a row that is
  not a mapping) ends the input: on the local engine every row read before it is
  scored and given back, then the error is raised from the iteration.

On the local engine, async scorers (LLM judges) run concurrently under one
run-wide limit; sync scorers score whole chunks through their batch path in a
worker thread, or in ``workers`` processes; results come back in input order,
a slow row holding back at most :func:`reorder_rows` (``max(1024, 64 ×
concurrency)``) scored rows (:mod:`scorers.engines.local`).

>>> import scorers
>>> run = scorers.evaluate([{"output": "a", "expected": "a"}, {"output": "b"}], ["ExactMatch"])
>>> [(r.scores["ExactMatch"], sorted(r.errors)) for r in run]
[(1.0, []), (None, ['ExactMatch'])]
>>> run.summary.scorers["ExactMatch"]["errors"], run.summary.problems
(1, [])
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, AsyncIterator, Iterable, Iterator, Mapping, Sequence

from ._aio import DEFAULT_CONCURRENCY
from ._util import ABSENT, lookup
from .base import Scorer
from .batch import BatchScorer, RowResult, Summary, at_least_one, resolve_scorers
from .engines import Engine, Job, engine_named
from .engines.local import reorder_rows
from .errors import ConfigError
from .io import read_input

__all__ = [
    "RowResult",
    "Summary",
    "Evaluation",
    "evaluate",
    "aevaluate",
    "resolve_scorers",
    "check_columns",
    "COLUMN_CHECK_ROWS",
    "reorder_rows",
]


#: Rows read before scoring starts to find usage errors: a mapped column or a required field absent from all of
#: them is a typo or a missing ``mapping`` (every row would fail), not a value some rows lack.
COLUMN_CHECK_ROWS = 100


def check_columns(mapping: Mapping[str, str], rows: Sequence[Mapping[str, Any]], scorers: Sequence[Scorer]) -> None:
    """Usage errors found before scoring, from the first rows of the input (:data:`COLUMN_CHECK_ROWS` of them): a
    mapping must name a field some scorer reads and a column some of ``rows`` has, and every field a scorer requires
    must be in some of ``rows``. A column that only some rows lack is left to those rows' errors.

    >>> import scorers
    >>> exact = [scorers.get("ExactMatch")]
    >>> check_columns({}, [{"output": "a"}, {"output": "b", "expected": "b"}], exact)
    >>> check_columns({"expected": "answer"}, [{"output": "a"}], exact)
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: mapping expected=answer: no column or path 'answer' in the first row (columns: output)
    """
    if not rows:
        return
    where = "the first row" if len(rows) == 1 else f"any of the first {len(rows)} rows"
    columns = ", ".join(map(str, dict.fromkeys(column for row in rows for column in row)))

    def absent(path: str) -> bool:
        return all(lookup(row, path) is ABSENT for row in rows)

    accepted = {name for s in scorers for name in s.accepted_fields()}
    for target, column in mapping.items():
        if target not in accepted:
            raise ConfigError(
                f"mapping {target}={column}: no scorer of this run reads a field {target!r} "
                f"(fields: {', '.join(sorted(accepted))})"
            )
        if absent(column):
            raise ConfigError(
                f"mapping {target}={column}: no column or path {column!r} in {where} (columns: {columns})"
            )
    for scorer in scorers:
        for name in scorer.required_fields():
            if name not in scorer.bound_fields and name not in mapping and absent(name):
                raise ConfigError(
                    f"{scorer.name} needs the field {name!r}, and there is no column {name!r} in "
                    f"{where} (columns: {columns}); map one to it (--map {name}=COLUMN, or "
                    f"evaluate(..., mapping={{{name!r}: 'COLUMN'}}))",
                    scorer=scorer.name,
                )


def _checked_rows(
    rows: Iterator[Mapping[str, Any]], mapping: Mapping[str, str], scorers: Sequence[Scorer], start: int
) -> Iterator[dict[str, Any]]:
    """The rows as dicts, the first :data:`COLUMN_CHECK_ROWS` checked for usage errors (:func:`check_columns`)
    before any is given out; a row that is not a mapping is a ConfigError. An error reading those first rows is
    raised after the rows read before it (which are checked and given out), as any later error is."""

    def fields(index: int, row: Any) -> dict[str, Any]:
        if not isinstance(row, Mapping):
            raise ConfigError(f"row {index} is a {type(row).__name__}, not a mapping of fields")
        return dict(row)

    first: list[dict[str, Any]] = []
    error: Exception | None = None
    try:
        for row in rows:
            first.append(fields(start + len(first), row))
            if len(first) == COLUMN_CHECK_ROWS:
                break
    except Exception as exc:
        error = exc
    check_columns(mapping, first, scorers)
    yield from first
    if error is not None:
        raise error
    for index, row in enumerate(rows, start + len(first)):
        yield fields(index, row)


class Evaluation:
    """A lazily evaluated run: iterate it (``for``, or ``async for`` on the local engine) for :class:`RowResult` s.

    ``summary`` fills in as rows come; ``engine`` is the :class:`~scorers.engines.Engine` that scores the rows. A
    :class:`~scorers.errors.ConfigError` stops the iteration; an interrupted iteration (Ctrl-C) stops the
    engine's work in flight and leaves the rows already consumed valid. ``waiting`` is the number of scored rows
    not yet taken: when it is 0, the next row has to be scored first (a writer flushes then).
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any]],
        scorers: list[Scorer],
        *,
        engine: Engine,
        mapping: Mapping[str, str] | None,
        concurrency: int,
        workers: int,
        start: int,
        ordered: bool,
        chunk_size: int | None = None,
        prefetch: int | None = None,
    ) -> None:
        at_least_one(concurrency, "concurrency")
        at_least_one(workers, "workers")
        self.scorers = scorers
        self.summary = Summary(scorers)
        self.engine = engine
        self.waiting = 0
        self._job = Job(
            rows=_checked_rows(iter(rows), mapping or {}, scorers, start),  # not iterable: a TypeError here
            unit=BatchScorer(scorers, mapping=mapping, concurrency=concurrency),
            workers=workers,
            start=start,
            ordered=ordered,
            chunk_size=chunk_size,
            prefetch=prefetch,
        )
        self._consumed = False
        self._interrupted = False

    def _claim(self) -> None:
        if self._consumed:
            raise RuntimeError("an Evaluation can be iterated only once (its rows are streamed)")
        self._consumed = True

    def _take(self, chunk: list[RowResult]) -> Iterator[RowResult]:
        """A scored chunk's rows, each counted in the summary as it is taken."""
        self.waiting = len(chunk)
        for result in chunk:
            self.summary.add(result)
            self.waiting -= 1
            yield result

    def interrupt(self) -> None:
        """Ask a ``for`` iteration to stop: it raises ``KeyboardInterrupt`` once it has given the rows already scored
        (the rest of the chunk it is in), before it waits for more (on the local engine within 0.1 s; on a cluster,
        within the engine's next poll), so a stop never drops a finished row.

        Safe to call from a signal handler: it only sets a flag, so the interrupt
        never lands inside a lock operation of the waiting thread.
        """
        self._interrupted = True

    def _check_interrupted(self) -> None:
        if self._interrupted:
            raise KeyboardInterrupt("the run was interrupted")

    def __iter__(self) -> Iterator[RowResult]:
        self._claim()
        with contextlib.closing(self.engine.score(self._job)) as chunks:
            for chunk in chunks:
                self._check_interrupted()
                yield from self._take(chunk)
                self._check_interrupted()

    async def __aiter__(self) -> AsyncIterator[RowResult]:
        self._claim()
        chunks = self.engine.ascore(self._job)
        try:
            async for chunk in chunks:
                for result in self._take(chunk):
                    yield result
        finally:
            await chunks.aclose()

    def collect(self) -> list[RowResult]:
        """Run to the end and return every row's result."""
        return list(self)


def evaluate(
    rows: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
    scorers: Iterable[Scorer | str] | Mapping[str, Scorer],
    *,
    mapping: Mapping[str, str] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    workers: int = 1,
    chunk_size: int | None = None,
    prefetch: int | None = None,
    start: int = 0,
    engine: str | Engine = "local",
    ordered: bool = False,
) -> Evaluation:
    """Score ``rows`` (any iterable of mappings, streamed) with ``scorers``.

    ``mapping`` maps scorer fields to row columns or dotted paths
    (``{"output": "response", "expected": "meta.answer"}``); a mapped column
    absent from every one of the first :data:`COLUMN_CHECK_ROWS` rows is a
    :class:`ConfigError`. ``concurrency`` bounds in-flight async scorer calls
    for the whole run; ``workers`` > 1 scores the sync (CPU-bound) scorers in
    that many processes. Rows are scored in chunks (``chunk_size``; by default
    128, 1024 with workers, ``concurrency // 4`` with judges), up to
    ``prefetch`` chunks in flight. Results come back in input order, a slow row
    holding back at most :func:`reorder_rows` scored rows; ``start`` is the
    index given to the first row. Iterate with
    ``for`` or ``async for``. ``rows`` may also be the path of a JSONL, JSON,
    CSV or Parquet file.

    Worker processes re-run the main script from its file and import the
    scorers' classes: with ``workers`` > 1, a script read from standard input
    (``python -``), or a scorer class defined in a ``__main__`` without a file
    (a REPL, a notebook, ``python -c``), is a :class:`ConfigError` at once.

    ``engine`` says where the rows are scored: ``"local"`` (this machine), or
    a cluster, ``"ray"`` or ``"spark"`` with their default options (a local
    cluster), or an engine with options, ``Ray(address="auto")`` or
    ``Spark(master=...)`` (:mod:`scorers.engines`). A cluster scores on
    ``workers`` workers of that engine: the same records and summary, each
    row exactly once, in input order when ``ordered`` (else as they finish);
    iterate with ``for``. There ``concurrency`` bounds the judge calls of
    each worker.

    >>> import scorers
    >>> run = scorers.evaluate([{"response": "Paris", "answer": "Paris"}], ["Levenshtein"],
    ...                        mapping={"output": "response", "expected": "answer"})
    >>> [r.scores for r in run]
    [{'Levenshtein': 1.0}]
    """
    if isinstance(rows, (str, os.PathLike)):
        rows = read_input(rows)
    return Evaluation(
        rows,
        resolve_scorers(scorers),
        engine=engine_named(engine),
        mapping=mapping,
        concurrency=concurrency,
        workers=workers,
        start=start,
        ordered=ordered,
        chunk_size=chunk_size,
        prefetch=prefetch,
    )


def aevaluate(
    rows: Iterable[Mapping[str, Any]], scorers: Iterable[Scorer | str] | Mapping[str, Scorer], **options: Any
) -> Evaluation:
    """:func:`evaluate` for ``async for``; the returned :class:`Evaluation` has the same ``summary``.

    >>> import asyncio, scorers
    >>> async def main():
    ...     run = scorers.aevaluate([{"output": "a", "expected": "a"}], ["ExactMatch"])
    ...     return [r.scores async for r in run], run.summary.scorers["ExactMatch"]["mean"]
    >>> asyncio.run(main())
    ([{'ExactMatch': 1.0}], 1.0)
    """
    return evaluate(rows, scorers, **options)
