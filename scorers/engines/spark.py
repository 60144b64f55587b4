"""The Spark engine: ``scorers.evaluate(rows, scorers, engine=Spark(master=None), workers=N)`` (or ``engine="spark"``).

The rows go to Spark in blocks, about four per worker (:func:`~scorers.engines.cluster.split`), each block one
Spark job: an RDD of the block's batches of rows (Arrow IPC; with judges one batch of ``concurrency`` rows per
partition, else the whole block as one batch), which a Python worker scores with the
:class:`~scorers.batch.BatchScorer` into each row's index and result (CPU-bound scorers: Arrow columns of scores,
:func:`~scorers.engines.cluster.score_columns`, each scorer's ``score_batch`` over the batch's whole columns). A few more jobs than the cluster has task
slots run at once (Spark's FIFO scheduler finishes them about in input order), and each block's results reach
the driver as its job ends: rows are written while the run goes on. A Python worker keeps one unit (its scorers,
models and judge clients) for every partition it scores in the run.

Footguns handled here:

- a stopped run (Ctrl-C, SIGTERM, a closed iteration) cancels its jobs within :data:`POLL_S` (their job group, and
  any job of it not yet started) and waits until none of their tasks runs: the tasks are interrupted and, as a
  judge's partition is one batch, no worker starts another batch, so no judge call is made after the stop but
  those already in flight;
- the workers run this interpreter (``PYSPARK_PYTHON``, which the SparkContext reads when it starts: set where
  unset while the session starts), so they import this ``scorers``; they judge with the driver's settings,
  scoped to each partition's batches (:func:`~scorers.engines.cluster.score_rows`): nothing is written to their
  environment;
- the default master is ``local[workers,3]``: Spark's ``local[N]`` never retries a
  failed task, so one lost Python worker would abort the run; here its task is
  re-run (up to 3 tries) and the judge cache answers the calls already paid;
- a session started here on a local master binds 127.0.0.1 (``spark.driver.host``, and ``SPARK_LOCAL_IP``, which
  Spark's JVM reads from its environment: set where unset while the JVM is launched,
  :func:`~scorers.engines.cluster.environ_defaults`); on a cluster's master, the address Spark finds (executors
  elsewhere must reach the driver); any session started here has no web UI, keeps its scratch in a temporary
  folder, takes the settings of ``conf`` over these and is stopped at the end; a session already active is used
  as it is.

>>> default_master(2)
'local[2,3]'
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, ClassVar, Generator, Iterable, Iterator, Mapping

from pydantic import Field, field_validator, model_validator

from .._aio import background_loop
from ..batch import RESULT_COLUMN, BatchScorer
from ..errors import ConfigError, MissingExtraError
from .cluster import (
    INDEX_COLUMN,
    ClusterEngine,
    batch_size,
    encoded_columns,
    environ_defaults,
    score_columns,
    score_rows,
    split,
    table_rows,
    worker_settings,
    worker_unit,
)

__all__ = ["Spark", "session", "default_master"]

#: Tries of a task before the run fails, in the default local master.
TASK_TRIES = 3
#: Seconds between the driver's looks for an interrupt while it waits for results.
POLL_S = 0.1
#: Seconds a stopped run waits at most for its cancelled jobs to end.
CANCEL_S = 30.0
#: PySpark 4.3 warns about pandas 3 even where no pandas is used.
_PANDAS_WARNING = "PySpark does not yet fully support pandas"


def _spark() -> Any:
    try:
        import pyspark.sql
    except ImportError as exc:
        raise MissingExtraError("engine='spark'", "pyspark", "spark") from exc
    return pyspark.sql


def default_master(workers: int) -> str:
    """``local[workers,TASK_TRIES]``: local mode with task retries."""
    return f"local[{workers},{TASK_TRIES}]"


@contextlib.contextmanager
def session(master: str | None, workers: int, conf: Mapping[str, str] | None = None) -> Iterator[Any]:
    """The active SparkSession, or one started here on ``master`` (default :func:`default_master`) with the
    Spark settings ``conf`` over this engine's own, stopped on exit."""
    sql = _spark()
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        if conf:
            raise ConfigError(
                f"the spark engine's settings ({', '.join(conf)}) apply to a session it starts, and a Spark "
                "session is already active here: set them on that session instead"
            )
        yield active
        return
    scratch = tempfile.mkdtemp(prefix="scorers-spark-")
    interrupt = signal.getsignal(signal.SIGINT)
    master = master or default_master(workers)
    alone = master.startswith("local")  # no executor elsewhere: every server of the session on 127.0.0.1
    loopback = {"spark.driver.host": "127.0.0.1"} if alone else {}
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.local.dir": scratch,
        **loopback,
        **(conf or {}),
    }
    # read from the environment only, while the session starts: the workers' interpreter (the SparkContext keeps
    # it), this one, and, alone, the JVM's address
    variables = {"PYSPARK_PYTHON": sys.executable, **({"SPARK_LOCAL_IP": "127.0.0.1"} if alone else {})}
    with warnings.catch_warnings(), environ_defaults(variables):
        warnings.filterwarnings("ignore", _PANDAS_WARNING, FutureWarning)
        builder = sql.SparkSession.builder.master(master).appName("scorers")
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if interrupt is not None and threading.current_thread() is threading.main_thread():
        # PySpark's own Ctrl-C handler cancels every job and fails it with a Py4JJavaError; keep the caller's (the
        # CLI stops once the rows received are written; Python's raises KeyboardInterrupt): the run then cancels its jobs
        signal.signal(signal.SIGINT, interrupt)
    try:
        yield spark
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _to_ipc(batch: Any) -> bytes:
    """A record batch as Arrow IPC stream bytes (only its rows, where pickling a slice may carry its table)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> Any:
    import pyarrow as pa

    return pa.ipc.open_stream(data).read_next_batch()


def _score_partitions(
    payload: bytes, settings: Mapping[str, Any], encoded: list[str], *, judges: bool
) -> Callable[[Iterator[bytes]], Iterator[bytes]]:
    def score(batches: Iterator[bytes]) -> Iterator[bytes]:
        import pyarrow as pa

        unit = worker_unit(payload)  # once per Python worker and run: Spark reuses its workers across partitions
        for data in batches:
            batch = _from_ipc(data)
            if not judges:
                yield _to_ipc(score_columns(unit, batch, encoded, settings).combine_chunks().to_batches()[0])
                continue
            block = batch.column(INDEX_COLUMN)[0].as_py()  # the same batch in a task re-run after a lost worker
            texts = asyncio.run_coroutine_threadsafe(
                score_rows(unit, table_rows(batch, encoded), settings=settings, block=block), background_loop()
            ).result()
            yield _to_ipc(
                pa.record_batch(
                    [batch.column(INDEX_COLUMN), pa.array(texts, pa.string())], names=[INDEX_COLUMN, RESULT_COLUMN]
                )
            )

    return score


class Spark(ClusterEngine):
    """Spark: a job per block of the rows on the session at ``master`` (default :func:`default_master`, with the
    settings ``conf``) or on the session already active here; each block's results reach the driver when its job
    ends, and a stopped run cancels its jobs."""

    name: ClassVar[str] = "spark"

    master: str | None = Field(
        None, description="the master to start a session on (default: local[WORKERS,3], retrying lost tasks)"
    )
    conf: dict[str, str] = Field(
        default_factory=dict,
        description="Spark settings of the session started here (spark.KEY=VALUE, e.g. spark.executor.memory=2g)",
    )

    @model_validator(mode="before")
    @classmethod
    def _spark_settings(cls, options: Any) -> Any:
        """An option named ``spark.KEY`` (``--engine-option spark.executor.memory=2g``) is a setting of ``conf``."""
        if not isinstance(options, Mapping) or not any(str(key).startswith("spark.") for key in options):
            return options
        conf = dict(options.get("conf") or {})
        conf.update({key: value for key, value in options.items() if str(key).startswith("spark.")})
        return {**{key: value for key, value in options.items() if not str(key).startswith("spark.")}, "conf": conf}

    @field_validator("conf")
    @classmethod
    def _spark_names(cls, conf: dict[str, str]) -> dict[str, str]:
        wrong = [key for key in conf if not key.startswith("spark.")]
        if wrong:
            raise ValueError(f"a Spark setting's name starts with 'spark.', got {', '.join(map(repr, wrong))}")
        return conf

    def score_table(self, table: Any, unit: BatchScorer, *, workers: int, ordered: bool) -> Generator[Any, None, None]:
        judges = any(s.is_async for s in unit.scorers)
        settings = worker_settings(judges=judges)  # before the session starts: a ConfigError costs nothing
        with session(self.master, workers, self.conf) as spark:
            size = batch_size(judges=judges, concurrency=unit.concurrency)
            score = _score_partitions(pickle.dumps(unit), settings, encoded_columns(table.schema), judges=judges)
            blocks = ([_to_ipc(batch) for batch in block.to_batches(size)] for block in split(table, workers, size))
            # with judges, one batch per task: a cancelled task's worker then starts no other batch (no new call)
            yield from _jobs(spark.sparkContext, score, blocks, batches_per_task=1 if judges else None)


def _jobs(
    context: Any,
    score: Callable[[Iterator[bytes]], Iterator[bytes]],
    blocks: Iterable[list[bytes]],
    *,
    batches_per_task: int | None,
) -> Generator[Any, None, None]:
    """Each block's scored batches, one Spark job per block, as the jobs end: at most the cluster's task slots
    plus one jobs at once (so no slot waits for the next job), None every :data:`POLL_S` that none ended (the
    run looks for an interrupt then). A job's tasks score ``batches_per_task`` batches each (None: a block is
    shared among the task slots). Closing it cancels the jobs, and those about to start, within seconds."""
    group = f"scorers-{uuid.uuid4().hex}"
    slots = context.defaultParallelism

    def run(block: list[bytes]) -> list[bytes]:  # in a thread: the job group is a property of the thread
        context.setJobGroup(group, "scorers: scoring rows", interruptOnCancel=True)
        tasks = -(-len(block) // batches_per_task) if batches_per_task else min(len(block), slots)
        collected: list[bytes] = context.parallelize(block, tasks).mapPartitions(score).collect()
        return collected

    limit = slots + 1
    pool = ThreadPoolExecutor(limit, thread_name_prefix="scorers-spark-job")
    running: set[Future[list[bytes]]] = set()
    pending = iter(blocks)
    try:
        while True:
            while len(running) < limit and (block := next(pending, None)) is not None:
                running.add(pool.submit(run, block))
            if not running:
                return
            done, running = wait(running, timeout=POLL_S, return_when=FIRST_COMPLETED)
            if not done:
                yield None
            for future in done:
                for data in future.result():
                    yield _from_ipc(data)
    finally:
        if running:
            context._jsc.sc().cancelJobGroupAndFutureJobs(group)  # the jobs a thread is about to start too
            _wait_for_tasks(context, group, time.monotonic() + CANCEL_S)
        pool.shutdown(wait=False, cancel_futures=True)


def _wait_for_tasks(context: Any, group: str, deadline: float) -> None:
    """Wait until no task of the job group runs (a cancelled job ends before its killed tasks), or the deadline."""
    tracker = context.statusTracker()
    while time.monotonic() < deadline:
        stages = [stage for job in tracker.getJobIdsForGroup(group) for stage in _stages(tracker, job)]
        if not any(info.numActiveTasks for info in map(tracker.getStageInfo, stages) if info is not None):
            return
        time.sleep(POLL_S)


def _stages(tracker: Any, job: int) -> list[int]:
    info = tracker.getJobInfo(job)
    return list(info.stageIds) if info is not None else []
