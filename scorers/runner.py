"""Batch runner: stream rows through sync and async scorers, in input order.

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
  not a mapping) ends the input: every row read before it is scored and given
  back, then the error is raised from the iteration.

Async scorers (LLM judges) run concurrently under one run-wide limit; sync
scorers score whole chunks through their batch path in a worker thread, or in
``workers`` processes.

Order and memory: results come back in input order, yet a slow row (a hung
judge request waiting for its timeout and retries) does not hold back the
others. While the oldest chunk is still being scored, later chunks keep
starting as others finish, at most ``prefetch`` being scored at once, until
the rows scored and held back for order reach :func:`reorder_rows` (``max(1024,
64 × concurrency)``). A run holds at most that many scored rows plus ``prefetch
× chunk_size`` rows being scored; past the bound it waits for the slow row.

>>> import scorers
>>> run = scorers.evaluate([{"output": "a", "expected": "a"}, {"output": "b"}], ["ExactMatch"])
>>> [(r.scores["ExactMatch"], sorted(r.errors)) for r in run]
[(1.0, []), (None, ['ExactMatch'])]
>>> run.summary.scorers["ExactMatch"]["errors"], run.summary.problems
(1, [])
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import concurrent.futures.process
import io
import multiprocessing
import os
import pickle
import sys
import time
import types
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Iterator, Mapping, Sequence

from ._aio import background_loop
from ._util import ABSENT, lookup
from .aggregate import Aggregator
from .base import Scorer
from .batch import BatchScorer, RowResult, resolve_scorers, score_sync
from .errors import ConfigError
from .io import read_input
from .score import Score

if TYPE_CHECKING:
    from .engines import EngineRun

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

    def add(self, result: RowResult) -> None:
        self.rows += 1
        for name, score in result.results.items():
            self._aggregators[name].add(score)
        for name, error in result.errors.items():
            self._errors[name][error["type"]] += 1
            self._aggregators[name].add_error(error)
            if error.get("unexpected"):
                self._unexpected[name] += 1
        self.elapsed_s = time.perf_counter() - self.started

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
        }


#: Rows read before scoring starts to find usage errors: a mapped column or a required field absent from all of
#: them is a typo or a missing ``mapping`` (every row would fail), not a value some rows lack.
COLUMN_CHECK_ROWS = 100


def reorder_rows(concurrency: int) -> int:
    """Scored rows a run holds back at most, waiting for a slow earlier row, so that results stay in input order.

    >>> reorder_rows(16), reorder_rows(64)
    (1024, 4096)
    """
    return max(1024, 64 * concurrency)


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


# ------------------------------------------------------------- worker processes
_worker_scorers: list[Scorer] = []


def _init_worker(payload: bytes) -> None:
    _worker_scorers[:] = pickle.loads(payload)


def _score_in_worker(args_per_scorer: list[list[dict[str, Any]]]) -> list[list[Score | BaseException]]:
    return [score_sync(scorer, args) for scorer, args in zip(_worker_scorers, args_per_scorer)]


class _NotingMain(pickle.Pickler):
    """A pickler that notes the classes and functions of ``__main__`` that what it pickles refers to."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self.in_main: set[str] = set()

    def persistent_id(self, obj: Any) -> None:
        if isinstance(obj, (type, types.FunctionType)) and obj.__module__ == "__main__":
            self.in_main.add(obj.__qualname__)
        return None


def _worker_payload(scorers: list[Scorer], workers: int) -> bytes:
    """The scorers pickled for the worker processes; a ConfigError at once for what the workers could not load.

    Workers start by re-running the main script from its file (so a script read from standard input cannot
    start them), and import the scorers' classes by name (so a class defined in a ``__main__`` that has no file,
    as in a REPL, a notebook or ``python -c``, cannot reach them).
    """
    main = sys.modules.get("__main__")
    by_name = getattr(getattr(main, "__spec__", None), "name", None) is not None  # `python -m`
    path = None if by_name else getattr(main, "__file__", None)
    if path is not None and not os.path.isfile(path):
        raise ConfigError(
            f"workers={workers}: worker processes start by re-running the main script from its file, "
            f"and this one has none ({path}: read from standard input, as by `python -`); save the "
            "script to a file and run that (with the evaluate call under "
            "`if __name__ == '__main__':`), or use workers=1"
        )
    buffer = io.BytesIO()
    pickler = _NotingMain(buffer)
    try:
        pickler.dump(scorers)
    except Exception as exc:
        raise ConfigError(f"workers={workers} needs picklable scorers, but pickling failed: {exc}") from exc
    if not by_name and path is None and pickler.in_main:
        raise ConfigError(
            f"workers={workers}: worker processes cannot import {', '.join(sorted(pickler.in_main))}, "
            "defined in an interactive session (a REPL, a notebook or `python -c`), whose __main__ "
            "has no file; define it in a module (a .py file) and import it from there, or use "
            "workers=1"
        )
    return buffer.getvalue()


def _process_pool(scorers: list[Scorer], workers: int) -> concurrent.futures.ProcessPoolExecutor:
    payload = _worker_payload(scorers, workers)
    # forkserver: workers start from a clean process, not from a fork of this (multi-threaded) one; no preload,
    # since the forkserver's settings are the whole process's: each worker imports scorers once
    return concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("forkserver"), initializer=_init_worker, initargs=(payload,)
    )


class _Pipeline:
    """Scores chunks of rows, up to ``prefetch`` at once, and gives them back in input order.

    A slow chunk holds back only its own rows: while the oldest chunk is being scored, new chunks start as others
    finish, until the rows scored and held back for order reach ``reorder_rows``. A chunk that fails (a ConfigError)
    is raised at once. An error reading the input ends it: the chunks read before it are scored and given back, and
    then it is raised.
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any]],
        scorers: list[Scorer],
        mapping: Mapping[str, str],
        concurrency: int,
        chunk_size: int,
        prefetch: int,
        reorder_rows: int,
        start: int,
        workers: int,
    ) -> None:
        self.scorers = scorers
        self.mapping = dict(mapping)
        self.concurrency = concurrency
        self.chunk_size = chunk_size
        self.prefetch = prefetch
        self.reorder_rows = reorder_rows
        self.workers = workers
        self.index = start
        self._rows = iter(rows)
        self._read_index = start  # the index of the next row read from the input
        self._ahead: collections.deque[dict[str, Any]] = collections.deque()  # read for the column check
        self._checked = False
        self._input_ended = False
        self._read_error: BaseException | None = None
        # the chunks started and not given out yet, in input order, with their row counts; of them, those still
        # being scored, and the rows of the others (scored, held back for order)
        self._pending: collections.deque[tuple[asyncio.Task[list[RowResult]], int]] = collections.deque()
        self._scoring: set[asyncio.Task[list[RowResult]]] = set()
        self._held_rows = 0
        self._failure: BaseException | None = None
        self._sync = [s for s in scorers if not s.is_async]
        self._unit = BatchScorer(scorers, mapping=mapping, concurrency=concurrency)
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._semaphore: asyncio.Semaphore | None = None

    # ---------------------------------------------------------------- input
    def _read_rows(self, count: int) -> list[dict[str, Any]]:
        """Up to ``count`` more rows of the input; an error of the input ends it, and is kept to raise later."""
        rows: list[dict[str, Any]] = []
        if self._input_ended:
            return rows
        try:
            for row in self._rows:
                if not isinstance(row, Mapping):
                    raise ConfigError(f"row {self._read_index} is a {type(row).__name__}, not a mapping of fields")
                rows.append(dict(row))
                self._read_index += 1
                if len(rows) >= count:
                    return rows
        except Exception as exc:
            self._read_error = exc
        self._input_ended = True
        return rows

    def _next_rows(self) -> list[dict[str, Any]]:
        """The rows of the next chunk (none at the end of the input), the first ones checked for usage errors."""
        if not self._checked:
            self._ahead.extend(self._read_rows(COLUMN_CHECK_ROWS))
            check_columns(self.mapping, self._ahead, self.scorers)
            self._checked = True
        chunk = [self._ahead.popleft() for _ in range(min(self.chunk_size, len(self._ahead)))]
        return chunk + self._read_rows(self.chunk_size - len(chunk)) if len(chunk) < self.chunk_size else chunk

    # ---------------------------------------------------------------- scoring
    async def _score_in_pool(
        self, pool: concurrent.futures.ProcessPoolExecutor, args: list[list[dict[str, Any]]]
    ) -> list[list[Score | BaseException]]:
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, _score_in_worker, args)
        except concurrent.futures.process.BrokenProcessPool as exc:
            raise ConfigError(
                f"workers={self.workers}: a worker process ended abruptly ({exc}). It was killed (e.g. out of "
                "memory: try fewer workers) or could not start: a script that calls evaluate(..., workers=N) "
                "must guard its entry point with `if __name__ == '__main__':`, since workers import it"
            ) from exc

    async def _score_chunk(self, start: int, rows: list[dict[str, Any]]) -> list[RowResult]:
        pool = self._pool

        async def in_pool(args: list[list[dict[str, Any]]]) -> list[list[Score | BaseException]]:
            assert pool is not None
            return await self._score_in_pool(pool, args)

        return await self._unit.score(rows, start, limit=self._semaphore, pool=in_pool if pool is not None else None)

    def _start_chunks(self) -> None:
        """Start chunks while fewer than ``prefetch`` are being scored and the rows held back stay under the bound."""
        while (
            (not self._input_ended or self._ahead)
            and self._failure is None
            and len(self._scoring) < self.prefetch
            and self._held_rows < self.reorder_rows
        ):
            rows = self._next_rows()
            if not rows:
                return
            task = asyncio.ensure_future(self._score_chunk(self.index, rows))
            task.add_done_callback(lambda done, count=len(rows): self._finished(done, count))
            self._pending.append((task, len(rows)))
            self._scoring.add(task)
            self.index += len(rows)

    def _finished(self, task: asyncio.Task[list[RowResult]], rows: int) -> None:
        if task not in self._scoring:  # already given out, or cancelled by close()
            return
        self._scoring.discard(task)
        self._held_rows += rows
        if not task.cancelled() and task.exception() is not None and self._failure is None:
            self._failure = task.exception()

    async def next_chunk(self) -> list[RowResult] | None:
        """The next scored chunk in input order; None at the end, or the input's read error once all rows before it
        were given out."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(max(1, self.concurrency))
            if self.workers > 1 and self._sync:
                self._pool = _process_pool(self._sync, self.workers)
        self._start_chunks()
        while self._pending and not self._pending[0][0].done():
            if self._failure is not None:
                raise self._failure
            await asyncio.wait(set(self._scoring), return_when=asyncio.FIRST_COMPLETED)
            self._start_chunks()
        if not self._pending:
            if self._read_error is not None:
                error, self._read_error = self._read_error, None
                raise error
            return None
        task, rows = self._pending.popleft()
        if task in self._scoring:  # finished, its callback not run yet
            self._scoring.discard(task)
        else:
            self._held_rows -= rows
        chunk = task.result()
        self._start_chunks()
        return chunk

    async def close(self) -> None:
        """Cancel what is in flight and release the worker processes."""
        pending = [task for task, _ in self._pending]
        self._pending.clear()
        self._scoring.clear()
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class Evaluation:
    """A lazily evaluated run: iterate it (``for`` or ``async for``) for :class:`RowResult` s.

    ``summary`` fills in as rows come. A :class:`~scorers.errors.ConfigError`
    stops the iteration; an interrupted iteration (Ctrl-C) cancels the work in
    flight and leaves the rows already consumed valid. ``waiting`` is the number
    of scored rows not yet taken: when it is 0, the next row has to be scored
    first (a writer flushes then).
    """

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any]],
        scorers: list[Scorer],
        *,
        mapping: Mapping[str, str] | None,
        concurrency: int,
        chunk_size: int | None,
        prefetch: int | None,
        start: int,
        workers: int,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        self.scorers = scorers
        self.summary = Summary(scorers)
        has_async = any(s.is_async for s in scorers)
        if chunk_size is None:  # with judges, small chunks: a row is written as soon as its chunk is judged
            chunk_size = max(1, concurrency // 4) if has_async else (1024 if workers > 1 else 128)
        if prefetch is None:  # with judges, enough chunks that every judge slot stays busy even when `concurrency`
            # chunks each wait on one slow row
            prefetch = max(4, 2 * workers, concurrency + -(-2 * concurrency // chunk_size) if has_async else 0)
        self._pipeline = _Pipeline(
            rows, scorers, mapping or {}, concurrency, chunk_size, prefetch, reorder_rows(concurrency), start, workers
        )
        self._consumed = False
        self._interrupted = False
        self.waiting = 0

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
        """Ask a ``for`` iteration to stop: it raises ``KeyboardInterrupt`` at its next step, within 0.1 s.

        Safe to call from a signal handler: it only sets a flag, so the interrupt
        never lands inside a lock operation of the waiting thread.
        """
        self._interrupted = True

    def _check_interrupted(self) -> None:
        if self._interrupted:
            raise KeyboardInterrupt("the run was interrupted")

    def __iter__(self) -> Iterator[RowResult]:
        self._claim()
        loop = background_loop()
        try:
            while True:
                self._check_interrupted()
                future = asyncio.run_coroutine_threadsafe(self._pipeline.next_chunk(), loop)
                try:
                    while True:
                        try:
                            chunk = future.result(timeout=0.1)
                            break
                        except concurrent.futures.TimeoutError:
                            self._check_interrupted()
                except BaseException:
                    future.cancel()
                    raise
                if chunk is None:
                    return
                for result in self._take(chunk):
                    self._check_interrupted()
                    yield result
        finally:
            asyncio.run_coroutine_threadsafe(self._pipeline.close(), loop).result()

    async def __aiter__(self) -> AsyncIterator[RowResult]:
        self._claim()
        try:
            while (chunk := await self._pipeline.next_chunk()) is not None:
                for result in self._take(chunk):
                    yield result
        finally:
            await self._pipeline.close()

    def collect(self) -> list[RowResult]:
        """Run to the end and return every row's result."""
        return list(self)


def evaluate(
    rows: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
    scorers: Iterable[Scorer | str] | Mapping[str, Scorer],
    *,
    mapping: Mapping[str, str] | None = None,
    concurrency: int = 16,
    workers: int = 1,
    chunk_size: int | None = None,
    prefetch: int | None = None,
    start: int = 0,
    engine: str = "local",
    address: str | None = None,
    master: str | None = None,
    ordered: bool = False,
) -> "Evaluation | EngineRun":
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

    ``engine="ray"`` (``address``: a running cluster, else a local one) or
    ``"spark"`` (``master``, default ``local[workers,3]``) scores on
    ``workers`` workers of that engine (:mod:`scorers.engines`): the same
    records and summary, each row exactly once, in input order when
    ``ordered`` (else as they finish); iterate with ``for``. There
    ``concurrency`` bounds the judge calls of each worker.

    >>> import scorers
    >>> run = scorers.evaluate([{"response": "Paris", "answer": "Paris"}], ["Levenshtein"],
    ...                        mapping={"output": "response", "expected": "answer"})
    >>> [r.scores for r in run]
    [{'Levenshtein': 1.0}]
    """
    if isinstance(rows, (str, os.PathLike)):
        rows = read_input(rows)
    if engine != "local":
        from .engines import evaluate_on

        return evaluate_on(
            engine,
            rows,
            resolve_scorers(scorers),
            mapping=mapping,
            concurrency=concurrency,
            workers=workers,
            start=start,
            ordered=ordered,
            address=address,
            master=master,
        )
    if address is not None or master is not None:
        raise ConfigError("address= and master= name a Ray or Spark cluster; pass engine='ray' or 'spark'")
    return Evaluation(
        rows,
        resolve_scorers(scorers),
        mapping=mapping,
        concurrency=concurrency,
        chunk_size=chunk_size,
        prefetch=prefetch,
        start=start,
        workers=workers,
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
