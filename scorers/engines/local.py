"""The local engine: the rows scored in this process, judges on its event loop, CPU-bound scorers in a thread or
in ``workers`` processes.

Order and memory: results come back in input order, yet a slow row (a hung judge request waiting for its timeout
and retries) does not hold back the others. While the oldest chunk is still being scored, later chunks keep
starting as others finish, at most ``prefetch`` being scored at once, until the rows scored and held back for
order reach :func:`reorder_rows`. A run holds at most that many scored rows plus ``prefetch × chunk_size`` rows
being scored; past the bound it waits for the slow row.

>>> import scorers
>>> run = scorers.evaluate([{"output": "a", "expected": "a"}], ["ExactMatch"], engine=Local())
>>> [r.scores for r in run], run.engine
([{'ExactMatch': 1.0}], Local())
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import concurrent.futures.process
import ctypes
import functools
import io
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import types
from typing import Any, AsyncGenerator, Callable, ClassVar, Generator, Iterable, TypeVar

from .._aio import DaemonThreads, background_loop
from ..batch import BatchScorer, RowResult, ScoredLines, score_sync
from ..errors import ConfigError
from ..io import JsonlLines, LineChunk
from ..score import Score
from .base import Engine, Job
from .worker_plan import MIN_GAIN, WorkersGain, WorkersUsed, plan_workers

__all__ = ["Local", "reorder_rows", "score_jsonl"]

T = TypeVar("T")


class Local(Engine):
    """This machine (the default engine): chunks of rows scored on this process's event loop, up to
    ``prefetch`` at once, given back in input order; ``workers`` > 1 scores the CPU-bound scorers in that many
    processes. It is the only engine that also runs under ``async for`` (:func:`scorers.aevaluate`)."""

    name: ClassVar[str] = "local"
    keeps_order: ClassVar[bool] = True

    def score(self, job: Job) -> Generator[list[RowResult], None, None]:
        pipeline = _pipeline(job)
        loop = background_loop()
        try:
            while True:
                future = asyncio.run_coroutine_threadsafe(pipeline.next_chunk(), loop)
                try:
                    while True:
                        try:
                            chunk = future.result(timeout=0.1)
                            break
                        except concurrent.futures.TimeoutError:
                            yield []  # still scoring: the run may stop here
                except BaseException:
                    future.cancel()
                    raise
                if chunk is None:
                    return
                yield chunk
        finally:
            asyncio.run_coroutine_threadsafe(pipeline.close(), loop).result()

    async def ascore(self, job: Job) -> AsyncGenerator[list[RowResult], None]:
        pipeline = _pipeline(job)
        try:
            while (chunk := await pipeline.next_chunk()) is not None:
                yield chunk
        finally:
            await pipeline.close()


def _pipeline(job: Job) -> _Pipeline:
    """The job's pipeline, with the default chunk size and prefetch where the job leaves them to the engine."""
    concurrency, workers = job.unit.concurrency, job.workers
    has_async = any(s.is_async for s in job.unit.scorers)
    chunk_size = job.chunk_size
    if chunk_size is None:  # with judges, small chunks: a row is written as soon as its chunk is judged
        chunk_size = max(1, concurrency // 4) if has_async else (1024 if workers > 1 else 128)
    prefetch = job.prefetch
    if prefetch is None:  # with judges, enough chunks that every judge slot stays busy even when `concurrency`
        # chunks each wait on one slow row
        prefetch = max(4, 2 * workers, concurrency + -(-2 * concurrency // chunk_size) if has_async else 0)
    return _Pipeline(job.rows, job.unit, chunk_size, prefetch, reorder_rows(concurrency), job.start, workers)


def reorder_rows(concurrency: int) -> int:
    """Scored rows a run holds back at most, waiting for a slow earlier row, so that results stay in input order.

    >>> reorder_rows(16), reorder_rows(64)
    (1024, 4096)
    """
    return max(1024, 64 * concurrency)


# ------------------------------------------------------------- JSONL lines
#: The first chunk of JSONL lines, in bytes; a chunk scored in less than _FAST_CHUNK_S makes the next twice as large
#: (up to _MAX_CHUNK_BYTES), one that takes over _SLOW_CHUNK_S makes it half as large.
_FIRST_CHUNK_BYTES = 1 << 14
_MAX_CHUNK_BYTES = 1 << 17
_FAST_CHUNK_S = 0.05
_SLOW_CHUNK_S = 0.5


def score_jsonl(
    unit: BatchScorer,
    source: JsonlLines,
    *,
    workers: int = 1,
    metadata: bool = False,
    output: str | None = None,
    on_workers: Callable[[WorkersUsed], None] | None = None,
) -> Generator[ScoredLines | None, None, None]:
    """The rest of ``source`` scored by ``unit`` (whose scorers are all sync) into results lines
    (:meth:`BatchScorer.score_lines`), chunk by chunk in input order; None every 0.1 s while the next chunk is
    being scored, so that the caller may stop.

    With ``workers`` 1, a thread of this process scores the chunks. With more, ``workers`` worker processes score
    every chunk once one of them has started (until then the thread scores them), and this process only reads and
    writes bytes: a thread scoring here too would hold the interpreter lock that this process needs to feed the
    workers, which then wait (measured: 1.33× at 2 workers on 2 cores, against 1.7× and more this way). The
    workers are forks of this process where that is safe (on Linux, while this process runs no other thread), else
    fresh processes (``forkserver``), which import scorers first. Each reads the JSON lines and writes the results
    lines itself. Chunks grow while they are scored fast (up to 128 KiB of lines); two per process are scored
    ahead at most.
    Workers are started only where they can pay (:mod:`scorers.engines.worker_plan`: cores, load, the input's
    size), and given up for one process once a window of chunks shows they do not; ``on_workers`` is told how many
    were used and why fewer than asked (at the start, and again if they are given up).
    After a chunk whose :attr:`~ScoredLines.error` is set, no more input is read. A ConfigError is raised.

    >>> import os, tempfile
    >>> from scorers.io import JsonlLines
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
    >>> _ = open(path, "w").write('{"output": "a", "expected": "a"}\\n')
    >>> with JsonlLines(path) as source:
    ...     chunks = [c for c in score_jsonl(BatchScorer(["ExactMatch"]), source) if c is not None]
    >>> [(c.rows, c.lines) for c in chunks]
    [(1, b'{"output": "a", "expected": "a", "scores": {"ExactMatch": 1.0}}\\n')]
    """
    score = functools.partial(_score_lines, metadata=metadata, output=output)
    scoring = _LineScoring(unit, source, workers, score, on_workers or (lambda used: None))
    try:
        while True:
            scoring.check_workers()
            scoring.start_chunks()
            if not scoring.pending:
                return
            scored = yield from scoring.next_scored()
            yield scored
            if scored.error is not None:
                return
    finally:
        scoring.close()


def _score_lines(unit: BatchScorer, chunk: LineChunk, *, metadata: bool, output: str | None) -> ScoredLines:
    return unit.score_lines(chunk, metadata=metadata, output=output)


class _LineScoring:
    """The chunks of :func:`score_jsonl`: read from ``source``, scored by a thread of this process (two out at most,
    one after the other) until the worker processes are up, then by them (two per process out at most), and given
    back in input order; a chunk grows while chunks are scored fast, and shrinks when they are slow."""

    def __init__(
        self,
        unit: BatchScorer,
        source: JsonlLines,
        workers: int,
        score: Callable[[BatchScorer, LineChunk], ScoredLines],
        on_workers: Callable[[WorkersUsed], None],
    ) -> None:
        self.unit, self.source, self.workers, self.score = unit, source, workers, score
        self.on_workers = on_workers
        self.used = plan_workers(workers, input_bytes=_input_bytes(source))
        on_workers(self.used)
        self.pool, self.started = _start_workers(unit, self.used.used)  # started: done once a worker process is up
        self.gain: WorkersGain | None = None  # the running check, from the first chunk sent to the workers
        self.thread = DaemonThreads()
        self.one_at_a_time = threading.Lock()
        # each chunk out: a worker's comes back with its CPU seconds (True), the thread's without (False)
        self.pending: collections.deque[tuple[concurrent.futures.Future[Any], bool]] = collections.deque()
        self.in_pool = 0  # of the pending chunks, those sent to the worker processes
        self.size = _FIRST_CHUNK_BYTES
        self.ended = False

    def check_workers(self) -> None:
        """Raise the error of worker processes that could not start."""
        if self.started is not None and self.started.done() and self.started.exception() is not None:
            raise _broken(self.workers, self.pool)

    def start_chunks(self) -> None:
        """Read and send out chunks while there is room for them (once up, the workers score every chunk)."""
        while not self.ended:
            to_pool = self.started is not None and self.started.done() and (self.gain is None or self.gain.pays)
            if (self.in_pool >= 2 * self.used.used) if to_pool else (len(self.pending) - self.in_pool >= 2):
                return
            chunk = self.source.next_chunk(self.size)
            if chunk is None:
                self.ended = True
            elif to_pool:
                self._to_pool(chunk)
            else:
                future = self.thread.submit(_holding, self.one_at_a_time, self.score, self.unit, chunk)
                self.pending.append((future, False))

    def _to_pool(self, chunk: LineChunk) -> None:
        assert self.pool is not None
        if self.gain is None:
            self.gain = WorkersGain(time.perf_counter())
        try:
            future = self.pool.submit(_score_lines_in_worker, chunk, self.score)
        except concurrent.futures.process.BrokenProcessPool as exc:  # broke while the last chunk was out
            raise _broken(self.workers, self.pool) from exc
        self.pending.append((future, True))
        self.in_pool += 1

    def next_scored(self) -> Generator[None, None, ScoredLines]:
        """The oldest chunk once scored, None every 0.1 s until then; the next chunk's size follows its time."""
        while True:
            try:
                scored = self.pending[0][0].result(timeout=0.1)
                break
            except concurrent.futures.TimeoutError:
                yield None
            except concurrent.futures.process.BrokenProcessPool as exc:
                raise _broken(self.workers, self.pool) from exc
        in_pool = self.pending.popleft()[1]
        if in_pool:
            scored = self._from_pool(scored)
        if scored.seconds < _FAST_CHUNK_S:
            self.size = min(2 * self.size, _MAX_CHUNK_BYTES)
        elif scored.seconds > _SLOW_CHUNK_S:
            self.size = max(self.size // 2, _FIRST_CHUNK_BYTES)
        return scored

    def _from_pool(self, scored: Any) -> ScoredLines:
        """A worker's chunk and its CPU seconds counted by the gain check; once the check says the workers do not
        pay, no more chunks go to them, and once the last is back they end."""
        scored, cpu_s = scored
        self.in_pool -= 1
        assert self.gain is not None and self.pool is not None
        if self.gain.pays and self.gain.add(cpu_s, time.perf_counter()) is not None and not self.gain.pays:
            self.used = WorkersUsed(
                self.workers,
                1,
                f"the workers scored {self.gain.last:.2f}x as fast as one process, under the "
                f"{MIN_GAIN}x that pays for feeding them; one process from then on",
            )
            self.on_workers(self.used)
        if not self.gain.pays and not self.in_pool:
            _release(self.pool, kill=False)
            self.pool, self.started = None, None
        return scored

    def close(self) -> None:
        """Cancel the chunks out; end the worker processes (at once, if some chunk was still out)."""
        for future, _ in self.pending:
            future.cancel()
        if self.pool is not None:
            _release(self.pool, kill=bool(self.pending))


def _start_workers(
    unit: BatchScorer, workers: int
) -> tuple[concurrent.futures.ProcessPoolExecutor | None, concurrent.futures.Future[Any] | None]:
    """With ``workers`` > 1, their pool, and a future done once one of them is up; else None, None."""
    if workers > 1 and _forks_safely():  # forks of this process, up at once
        pool = _process_pool(unit, workers, "fork")
        return pool, pool.submit(os.getpid)  # forks the workers now, before this process starts a thread
    if workers > 1:  # fresh processes, which import scorers first: started from a thread, while this one goes on
        pool = _process_pool(unit, workers)
        return pool, DaemonThreads().submit(lambda: pool.submit(os.getpid).result())
    return None, None


def _input_bytes(source: JsonlLines) -> int | None:
    """The size of the file ``source`` reads (None: standard input, or not a regular file)."""
    try:
        stat = os.stat(source.path)
    except (OSError, ValueError):
        return None
    return stat.st_size if source.path != "-" and os.path.isfile(source.path) else None


def _holding(lock: threading.Lock, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with lock:
        return fn(*args, **kwargs)


# ------------------------------------------------------------- worker processes
_worker_unit: list[BatchScorer] = []  # the unit of this worker process (one, once it started)


#: prctl(2)'s option that has the kernel send this process a signal when its parent ends.
_PR_SET_PDEATHSIG = 1


def _init_worker(payload: bytes, parent: int | None) -> None:
    _end_with(parent)
    _worker_unit[:] = [pickle.loads(payload)]


def _end_with(parent: int | None) -> None:
    """Make this worker process end with ``parent`` (None: the process that started it), however that one ends.

    A fork inherits the run's SIGINT and SIGTERM handlers, which only ask the run to stop: here Ctrl-C (sent to
    the whole process group) is left to the run's process, which stops its workers, and SIGTERM ends the worker.
    On Linux the kernel kills the worker when its parent ends, even by SIGKILL and even while the worker is stuck
    in C code; elsewhere a thread looks for the parent every second.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid() if parent is None else parent
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        threading.Thread(target=_watch_parent, args=(parent,), name="scorers-parent", daemon=True).start()
    if os.getppid() != parent:  # the parent ended before this process asked to end with it
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _release(pool: concurrent.futures.ProcessPoolExecutor, *, kill: bool) -> None:
    """Shut ``pool`` down; with ``kill``, end its workers now: at exit the interpreter waits for a pool's workers,
    so one stuck in a scorer would keep this process alive."""
    processes = list((pool._processes or {}).values()) if kill else []  # no public way before Python 3.14
    # with nothing left to score, wait for the idle pool to end: Python 3.11's exit hook races the pool's thread
    # closing its wake-up pipe otherwise (an "OSError: [Errno 9] Bad file descriptor" at exit, 1 run in 40 here)
    pool.shutdown(wait=not kill, cancel_futures=True)
    for process in processes:
        process.kill()


def _score_in_worker(args_per_scorer: list[list[dict[str, Any]]]) -> list[list[Score | BaseException]]:
    return [score_sync(scorer, args) for scorer, args in zip(_worker_unit[0].scorers, args_per_scorer)]


def _score_lines_in_worker(
    chunk: LineChunk, score: Callable[[BatchScorer, LineChunk], ScoredLines]
) -> tuple[ScoredLines, float]:
    """The chunk scored, and the CPU seconds that took (the gain check's measure of one process's time)."""
    started = time.process_time()
    scored = score(_worker_unit[0], chunk)
    return scored, time.process_time() - started


def _broken(workers: int, pool: concurrent.futures.ProcessPoolExecutor | None) -> ConfigError:
    """The error that stops a run whose worker process ended abruptly, saying how it ended where that is known."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # private: no public way before 3.14
    deadline = time.monotonic() + 1.0  # the pool ends the other workers; the dead one may not be reaped yet
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    # a worker ended by SIGTERM is one the pool ended after the first one died
    ended = sorted({_how_ended(p.exitcode) for p in processes if p.exitcode not in (None, 0, -signal.SIGTERM)})
    how = f" ({', '.join(ended)})" if ended else ""
    return ConfigError(
        f"workers={workers}: a worker process ended abruptly{how}: a scorer crashed it (a segfault in a C "
        "extension, os._exit, ...), it was killed (e.g. out of memory: try fewer workers), or it could not start "
        "(a script that calls evaluate(..., workers=N) must guard its entry point with "
        "`if __name__ == '__main__':`, since workers import it). The run stops; the rows written so far are "
        "complete"
    )


def _how_ended(exitcode: int) -> str:
    """A worker's exit code in words: ``exit code 3``, ``killed by SIGSEGV``."""
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class _NotingMain(pickle.Pickler):
    """A pickler that notes the classes and functions of ``__main__`` that what it pickles refers to."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self.in_main: set[str] = set()

    def persistent_id(self, obj: Any) -> None:
        if isinstance(obj, (type, types.FunctionType)) and obj.__module__ == "__main__":
            self.in_main.add(obj.__qualname__)
        return None


def _worker_payload(unit: BatchScorer, workers: int) -> bytes:
    """The unit pickled for the worker processes; a ConfigError at once for what the workers could not load.

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
        pickler.dump(unit)
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


def _process_pool(
    unit: BatchScorer, workers: int, method: str = "forkserver", processes: int | None = None
) -> concurrent.futures.ProcessPoolExecutor:
    """``processes`` (default: ``workers``) worker processes for ``unit``; ``workers`` is the count a message names."""
    payload = _worker_payload(unit, workers)
    # forkserver: workers start from a clean process, not from a fork of this (multi-threaded) one; no preload,
    # since the forkserver's settings are the whole process's: each worker imports scorers once
    return concurrent.futures.ProcessPoolExecutor(
        processes or workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_worker,
        initargs=(payload, os.getpid() if method == "fork" else None),  # forkserver: the server is the parent
    )


def _forks_safely() -> bool:
    """Whether worker processes may start as forks of this process: on Linux, while it runs no other thread (a
    fork holds only the forking thread: a lock another thread held would stay held in the child)."""
    return sys.platform == "linux" and threading.active_count() == 1


class _Pipeline:
    """Scores chunks of rows, up to ``prefetch`` at once, and gives them back in input order.

    A slow chunk holds back only its own rows: while the oldest chunk is being scored, new chunks start as others
    finish, until the rows scored and held back for order reach ``reorder_rows``. A chunk that fails (a ConfigError)
    is raised at once. An error reading the input ends it: the chunks read before it are scored and given back, and
    then it is raised.
    """

    def __init__(
        self,
        rows: Iterable[dict[str, Any]],
        unit: BatchScorer,
        chunk_size: int,
        prefetch: int,
        reorder_rows: int,
        start: int,
        workers: int,
    ) -> None:
        self.concurrency = unit.concurrency
        self.chunk_size = chunk_size
        self.prefetch = prefetch
        self.reorder_rows = reorder_rows
        self.workers = workers
        self.index = start
        self._rows = iter(rows)
        self._input_ended = False
        self._read_error: BaseException | None = None
        # the chunks started and not given out yet, in input order, with their row counts; of them, those still
        # being scored, and the rows of the others (scored, held back for order)
        self._pending: collections.deque[tuple[asyncio.Task[list[RowResult]], int]] = collections.deque()
        self._scoring: set[asyncio.Task[list[RowResult]]] = set()
        self._held_rows = 0
        self._failure: BaseException | None = None
        self._sync = [s for s in unit.scorers if not s.is_async]
        self._unit = unit
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
                rows.append(row)
                if len(rows) >= count:
                    return rows
        except Exception as exc:
            self._read_error = exc
        self._input_ended = True
        return rows

    # ---------------------------------------------------------------- scoring
    async def _score_in_pool(
        self, pool: concurrent.futures.ProcessPoolExecutor, args: list[list[dict[str, Any]]]
    ) -> list[list[Score | BaseException]]:
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, _score_in_worker, args)
        except concurrent.futures.process.BrokenProcessPool as exc:
            raise _broken(self.workers, pool) from exc

    async def _score_chunk(self, start: int, rows: list[dict[str, Any]]) -> list[RowResult]:
        pool = self._pool

        async def in_pool(args: list[list[dict[str, Any]]]) -> list[list[Score | BaseException]]:
            assert pool is not None
            return await self._score_in_pool(pool, args)

        return await self._unit.score(rows, start, limit=self._semaphore, pool=in_pool if pool is not None else None)

    def _start_chunks(self) -> None:
        """Start chunks while fewer than ``prefetch`` are being scored and the rows held back stay under the bound."""
        while (
            not self._input_ended
            and self._failure is None
            and len(self._scoring) < self.prefetch
            and self._held_rows < self.reorder_rows
        ):
            rows = self._read_rows(self.chunk_size)
            if not rows:
                return
            task = asyncio.ensure_future(self._score_chunk(self.index, rows))
            task.add_done_callback(functools.partial(self._finished, rows=len(rows)))
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
                self._pool = _process_pool(
                    BatchScorer(self._sync, mapping=self._unit.mapping, concurrency=self.concurrency), self.workers
                )
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
            _release(self._pool, kill=bool(pending))
            self._pool = None
