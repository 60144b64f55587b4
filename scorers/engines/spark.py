"""The Spark engine: ``scorers.evaluate(rows, scorers, engine=Spark(master=None), workers=N)`` (or ``engine="spark"``).

The rows become a DataFrame of a few partitions per worker, in input order;
``mapInArrow`` scores each partition's Arrow batches with the
:class:`~scorers.batch.BatchScorer` (output schema: the input's plus
:data:`~scorers.batch.RESULT_COLUMN`), and the driver collects the index and
result columns as Arrow. A Python worker keeps one unit (its scorers, models and
judge clients) for every partition it scores in the run.

Footguns handled here:

- the workers run this interpreter (``PYSPARK_PYTHON``, which the SparkContext reads when it starts: set where
  unset while the session starts), so they import this ``scorers``; they judge with the driver's settings,
  scoped to each partition's batches (:func:`~scorers.engines.cluster.score_rows`): nothing is written to their
  environment;
- the default master is ``local[workers,3]``: Spark's ``local[N]`` never retries a
  failed task, so one lost Python worker would abort the run; here its task is
  re-run (up to 3 tries) and the judge cache answers the calls already paid;
- a session started here binds 127.0.0.1 (``SPARK_LOCAL_IP``, which Spark's JVM reads from its environment: set
  where unset while the JVM is launched, :func:`~scorers.engines.cluster.environ_defaults`), has no web UI, keeps its
  scratch in a temporary folder and is stopped at the end; a session already active is used as it is.

>>> default_master(2)
'local[2,3]'
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from typing import Any, Callable, ClassVar, Generator, Iterator, Mapping

from pydantic import Field

from .._aio import background_loop
from ..batch import RESULT_COLUMN, BatchScorer
from ..errors import MissingExtraError
from .cluster import (
    INDEX_COLUMN,
    MAX_BLOCK_ROWS,
    ClusterEngine,
    batch_size,
    encoded_columns,
    environ_defaults,
    score_rows,
    split,
    table_rows,
    worker_settings,
)

__all__ = ["Spark", "session", "default_master"]

#: Tries of a task before the run fails, in the default local master.
TASK_TRIES = 3
#: PySpark 4.3 warns about pandas 3 even where no pandas is used (mapInArrow).
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
def session(master: str | None, workers: int) -> Iterator[Any]:
    """The active SparkSession, or one started here on ``master`` (default :func:`default_master`), stopped on exit."""
    sql = _spark()
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    scratch = tempfile.mkdtemp(prefix="scorers-spark-")
    interrupt = signal.getsignal(signal.SIGINT)
    # read from the environment only, while the session starts: the JVM's address, and the workers' interpreter
    # (the SparkContext keeps it), this one
    local = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    with warnings.catch_warnings(), environ_defaults(local):
        warnings.filterwarnings("ignore", _PANDAS_WARNING, FutureWarning)
        spark = (
            sql.SparkSession.builder.master(master or default_master(workers))
            .appName("scorers")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.local.dir", scratch)
            .config("spark.driver.host", "127.0.0.1")
            .getOrCreate()
        )
    spark.sparkContext.setLogLevel("ERROR")
    if interrupt is not None and threading.current_thread() is threading.main_thread():
        # PySpark's own Ctrl-C handler cancels the job and fails it with a Py4JJavaError; keep the caller's (the
        # CLI stops at the next row; Python's raises KeyboardInterrupt), and stopping the session cancels the job
        signal.signal(signal.SIGINT, interrupt)
    try:
        yield spark
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)


@functools.lru_cache(maxsize=4)
def _unit(payload: bytes) -> BatchScorer:
    """One unit per Python worker and run (Spark reuses its workers across partitions)."""
    return pickle.loads(payload)


def _score_partitions(
    payload: bytes, settings: Mapping[str, Any], encoded: list[str]
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def score(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        unit = _unit(payload)
        for batch in batches:
            rows = table_rows(batch, encoded)  # the schema's metadata does not pass through Spark
            texts = asyncio.run_coroutine_threadsafe(
                score_rows(unit, rows, settings=settings), background_loop()
            ).result()
            yield batch.append_column(RESULT_COLUMN, pa.array(texts, pa.string()))

    return score


class Spark(ClusterEngine):
    """Spark: ``mapInArrow`` over partitions of the rows on the session at ``master`` (default
    :func:`default_master`), or on the session already active here; results come in input order (``ordered``
    costs nothing: partitions keep the input's order)."""

    name: ClassVar[str] = "spark"

    master: str | None = Field(
        None, description="the master to start a session on (default: local[WORKERS,3], retrying lost tasks)"
    )

    def score_table(self, table: Any, unit: BatchScorer, *, workers: int, ordered: bool) -> Generator[Any, None, None]:
        import pyarrow as pa

        judges = any(s.is_async for s in unit.scorers)
        settings = worker_settings(judges=judges)  # before the session starts: a ConfigError costs nothing
        with session(self.master, workers) as spark:
            from pyspark.sql.types import StringType, StructField, StructType

            size = batch_size(judges=judges, concurrency=unit.concurrency)
            # createDataFrame makes one partition per Arrow batch: blocks of the input, in order
            blocks = pa.Table.from_batches(
                [batch for block in split(table, workers, size) for batch in block.to_batches()]
            )
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(MAX_BLOCK_ROWS))
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", _PANDAS_WARNING, FutureWarning)
                frame = spark.createDataFrame(blocks)
                # the batches mapInArrow scores
                spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(size))
                schema = StructType([*frame.schema.fields, StructField(RESULT_COLUMN, StringType(), False)])
                scored = frame.mapInArrow(
                    _score_partitions(pickle.dumps(unit), settings, encoded_columns(table.schema)), schema
                )
                collected = scored.select(INDEX_COLUMN, RESULT_COLUMN).toArrow()
            yield from collected.to_batches()
