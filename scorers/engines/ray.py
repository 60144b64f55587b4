"""The Ray Data engine: ``scorers.evaluate(rows, scorers, engine=Ray(address=None), workers=N)`` (or ``engine="ray"``).

The rows go to Ray as Arrow blocks (a few per worker, so one input file never
makes one block that a single actor scores alone), ``map_batches`` scores them on
an actor pool of ``workers`` actors built from the :class:`~scorers.batch.BatchScorer`
(an ``async __call__`` on the actor's event loop when a judge is among the
scorers, else a sync one), and the driver streams the results back.

Footguns handled here:

- the actor pool never takes every CPU of the cluster (a pool that does hangs
  Ray Data, ray-project/ray#44687): a local cluster gets ``workers + 1`` CPUs,
  and on any cluster each actor asks for at most ``CPUs / (workers + 1)``;
- a local cluster runs on 127.0.0.1 (when Ray is first imported here) with its dashboard off, no usage statistics,
  no auth token written to ``~/.ray`` and its session files in a temporary folder
  removed at the end; Ray takes the first and the next two from environment variables only
  (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` on import, ``RAY_USAGE_STATS_ENABLED`` and ``RAY_AUTH_MODE``
  while the cluster runs), which are set only where unset, and only for that long
  (:func:`~scorers.engines.cluster.environ_defaults`);
- the actors judge with the driver's settings, scoped to each batch (:func:`~scorers.engines.cluster.score_rows`):
  nothing is written to their environment;
- a lost actor is restarted by Ray and its batches re-run; the driver keeps each
  row once, and the judge cache answers the re-run's calls.

"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import tempfile
from typing import Any, ClassVar, Generator, Iterator, Mapping

from pydantic import Field

from .._aio import background_loop
from ..batch import RESULT_COLUMN, BatchScorer
from ..errors import MissingExtraError
from .cluster import (
    INDEX_COLUMN,
    ClusterEngine,
    batch_size,
    encoded_columns,
    environ_defaults,
    score_rows,
    split,
    table_rows,
    worker_settings,
)

__all__ = ["Ray", "connect"]

#: Off at Ray's import, Ray's node address is 127.0.0.1 (its default on Windows and macOS).
_LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise MissingExtraError("engine='ray'", "ray[data]", "ray") from exc
    return ray


@contextlib.contextmanager
def connect(address: str | None, workers: int) -> Iterator[Any]:
    """Ray, connected: to ``address`` (``"auto"``, ``ray://...``), to the cluster this process already joined,
    or to a local cluster started here with ``workers + 1`` CPUs and stopped on exit."""
    local = address is None and "ray" not in sys.modules
    # Ray reads it once, on import: a cluster on 127.0.0.1, not on the machine's other addresses
    with environ_defaults({_LOOPBACK: "0"} if local else {}):
        ray = _ray()
    if ray.is_initialized():
        yield ray
        return
    if address is not None:
        ray.init(address=address, log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()
        return
    temp_dir = tempfile.mkdtemp(prefix="scorers-ray-")
    # no usage statistics; no auth token (else Ray 2.60 writes ~/.ray/auth_token): while the cluster runs
    with environ_defaults({"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}):
        ray.init(
            num_cpus=workers + 1,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=temp_dir,
            logging_level=logging.WARNING,
        )
        ray_data_logger = logging.getLogger("ray.data")
        level = ray_data_logger.level
        ray_data_logger.setLevel(logging.WARNING)  # no per-dataset INFO lines on the run's stderr
        try:
            yield ray
        finally:
            ray.shutdown()
            ray_data_logger.setLevel(level)
            shutil.rmtree(temp_dir, ignore_errors=True)


class _Scorer:
    """An actor of the pool: the unit, and the driver's judge settings that every batch is scored with."""

    def __init__(self, unit: BatchScorer, settings: Mapping[str, Any], encoded: list[str]) -> None:
        self.unit = unit
        self.settings = settings
        self.encoded = encoded  # the columns of JSON text (Ray Data may not keep the schema's metadata)
        self._limit: asyncio.Semaphore | None = None

    async def score(self, batch: Any) -> Any:
        import pyarrow as pa

        if self._limit is None:  # one bound on the actor's judge calls, over every batch it runs at once
            self._limit = asyncio.Semaphore(self.unit.concurrency)
        texts = await score_rows(self.unit, table_rows(batch, self.encoded), self._limit, self.settings)
        return pa.table({INDEX_COLUMN: batch.column(INDEX_COLUMN), RESULT_COLUMN: pa.array(texts, pa.string())})


class AsyncScorer(_Scorer):
    """For judges: Ray runs several batches at once on the actor's event loop."""

    async def __call__(self, batch: Any) -> Any:
        return await self.score(batch)


class SyncScorer(_Scorer):
    """For CPU-bound scorers: one batch at a time, scored on this process's background loop."""

    def __call__(self, batch: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(self.score(batch), background_loop()).result()


class Ray(ClusterEngine):
    """Ray Data: ``map_batches`` on an actor pool of ``workers`` actors, on the cluster at ``address`` or on a local
    one started for the run."""

    name: ClassVar[str] = "ray"

    address: str | None = Field(default=None, description="the cluster to join (e.g. auto; default: start a local one)")

    def score_table(self, table: Any, unit: BatchScorer, *, workers: int, ordered: bool) -> Generator[Any, None, None]:
        judges = any(s.is_async for s in unit.scorers)
        settings = worker_settings(judges=judges)  # before the cluster starts: a ConfigError costs nothing
        with connect(self.address, workers) as ray:
            size = batch_size(judges=judges, concurrency=unit.concurrency)
            cpus = float(ray.cluster_resources().get("CPU", 0))
            context = ray.data.DataContext.get_current()
            context.enable_progress_bars = False
            context.execution_options.preserve_order = ordered
            dataset = ray.data.from_arrow(split(table, workers, size)).map_batches(
                AsyncScorer if judges else SyncScorer,
                fn_constructor_kwargs={"unit": unit, "settings": settings, "encoded": encoded_columns(table.schema)},
                compute=ray.data.ActorPoolStrategy(size=workers),
                num_cpus=min(1.0, cpus / (workers + 1)),
                batch_size=size,
                batch_format="pyarrow",
            )
            yield from dataset.iter_batches(batch_format="pyarrow", batch_size=None)
