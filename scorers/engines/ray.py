"""The Ray Data engine: ``scorers.evaluate(rows, scorers, engine=Ray(address=None), workers=N)`` (or ``engine="ray"``).

The rows go to Ray as Arrow blocks and the driver streams the results back. CPU-bound scorers: ``map_batches``
scores a few large blocks per worker in ``workers`` tasks at once, each block in one call over its whole columns
into Arrow columns of scores (:func:`~scorers.engines.cluster.score_columns`), each worker process building the
:class:`~scorers.batch.BatchScorer` once (Ray reuses its processes, so a run after the first starts no new one).
Judges: an actor pool of ``workers`` actors with an ``async __call__`` on the actor's event loop; a block is one
batch and each actor holds two at once, so rows come back steadily as their block finishes (all blocks at once
wrote the first row after 1,189 of 2,000 calls).

Footguns handled here:

- the actor pool (or the tasks) never takes every CPU of the cluster (a pool that does hangs
  Ray Data, ray-project/ray#44687): a local cluster gets ``workers + 1`` CPUs,
  and on any cluster each actor or task asks for at most ``CPUs / (workers + 1)``;
- Ray rewrites a loopback node or cluster address (127.0.0.1) to the machine's routed one on Linux: for a
  local cluster and a cluster address on 127.0.0.1 it is told not to (:func:`_unrewritten`), so a local
  cluster listens on 127.0.0.1 only and a cluster started there can be joined;
- a local cluster runs with its dashboard off, no usage statistics, no auth token written to ``~/.ray`` and its
  session files in a temporary folder removed at the end; ``RAY_USAGE_STATS_ENABLED`` and ``RAY_AUTH_MODE``,
  which Ray reads from the environment only, are set while it runs, and only where unset
  (:func:`~scorers.engines.cluster.environ_defaults`);
- ``ray.init`` installs its own SIGTERM handler (exit 15 with a stack dump, or 134): the process's handlers
  are put back after it (:func:`~scorers.engines.cluster.kept_signal_handlers`), and the driver waits for
  results in a thread of its own, so a stop signal ends a run within seconds;
- a ``ray://`` address (Ray Client) is a ConfigError before anything starts: Ray Data cannot run through Ray
  Client (Ray 2.60: an AttributeError deep in its executor; before, Ray's own "requires ray[client]");
- the actors judge with the driver's settings, scoped to each batch (:func:`~scorers.engines.cluster.score_rows`):
  nothing is written to their environment;
- a lost actor is restarted by Ray and its batches re-run; the driver keeps each
  row once, and the judge cache answers the re-run's calls.

"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import queue
import shutil
import tempfile
import threading
import urllib.parse
from typing import Any, ClassVar, Generator, Iterator, Mapping

from pydantic import Field

from ..batch import RESULT_COLUMN, BatchScorer
from ..errors import ConfigError, MissingExtraError
from .cluster import (
    INDEX_COLUMN,
    ClusterEngine,
    batch_size,
    encoded_columns,
    environ_defaults,
    kept_signal_handlers,
    score_columns,
    score_rows,
    split,
    table_rows,
    worker_settings,
    worker_unit,
)

__all__ = ["Ray", "connect"]

#: The hosts that name this machine's loopback interface.
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
#: Blocks each actor holds at once with judges: one scoring, one queued (more only delay the first rows written).
_JUDGE_BLOCKS_PER_ACTOR = 2
#: Seconds between the driver's looks at an interrupt while it waits for the next block.
_POLL_S = 0.2
#: Seconds a stopped run waits for Ray's iteration to end before it disconnects from the cluster.
_STOP_WAIT_S = 5.0


def _ray(address: str | None = None) -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise MissingExtraError("engine='ray'", "ray[data]", "ray") from exc
    if address is not None and address.startswith("ray://"):
        raise ConfigError(
            f"the ray engine cannot run through Ray Client (address={address}): Ray Data needs the driver on a "
            "machine of the cluster's network (through Ray Client, Ray 2.60 fails with \"'Worker' object has no "
            "attribute 'core_worker'\"); give the head's host:port (the port of ray start --head) from such a "
            "machine, or auto there"
        )
    return ray


def _on_loopback(address: str | None) -> bool:
    """Whether ``address`` (None: a cluster started here; ``auto``: ``RAY_ADDRESS``'s) is on this machine's loopback.

    >>> _on_loopback("127.0.0.1:6379"), _on_loopback("localhost:6379"), _on_loopback("10.0.0.5:6379")
    (True, True, False)
    """
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS") or "auto"
    if address is None:
        return True
    host = urllib.parse.urlsplit(f"//{address}").hostname
    return host in ("127.0.0.1", "localhost", "::1")


@contextlib.contextmanager
def _unrewritten(loopback: bool) -> Iterator[None]:
    """For the block: Ray leaves a loopback node and cluster address as they are. By default on Linux it rewrites
    127.0.0.1 to the machine's routed address, so a local cluster would listen beyond loopback and a cluster
    started on 127.0.0.1 could not be joined; its own switch (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``, read once on
    import) is off for the call only."""
    if not loopback:
        yield
        return
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


@contextlib.contextmanager
def connect(address: str | None, workers: int) -> Iterator[Any]:
    """Ray, connected: to ``address`` (``"auto"``, ``host:port``; a ``ray://`` one is refused), to the cluster this
    process already joined, or to a local cluster on 127.0.0.1 started here with ``workers + 1`` CPUs and stopped
    on exit.
    The SIGINT and SIGTERM handlers in force before ``ray.init`` (which installs its own) are in force after it."""
    ray = _ray(address)
    if ray.is_initialized():
        yield ray
        return
    ray_data_logger = logging.getLogger("ray.data")
    level = ray_data_logger.level
    with contextlib.ExitStack() as stack:
        if address is None:
            temp_dir = tempfile.mkdtemp(prefix="scorers-ray-")
            stack.callback(shutil.rmtree, temp_dir, ignore_errors=True)
            # no usage statistics; no auth token (else Ray 2.60 writes ~/.ray/auth_token): while the cluster runs
            stack.enter_context(environ_defaults({"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}))
        with kept_signal_handlers(), _unrewritten(_on_loopback(address)):
            if address is None:
                ray.init(
                    num_cpus=workers + 1,
                    include_dashboard=False,
                    log_to_driver=False,
                    _temp_dir=temp_dir,
                    _node_ip_address="127.0.0.1",
                    logging_level=logging.WARNING,
                )
            else:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        ray_data_logger.setLevel(logging.WARNING)  # no per-dataset INFO lines on the run's stderr
        try:
            yield ray
        finally:
            with kept_signal_handlers():
                ray.shutdown()
            ray_data_logger.setLevel(level)


class AsyncScorer:
    """An actor of the judges' pool: the unit, and the driver's judge settings that every batch is scored with;
    Ray runs several batches at once on the actor's event loop."""

    def __init__(self, unit: BatchScorer, settings: Mapping[str, Any], encoded: list[str]) -> None:
        self.unit = unit
        self.settings = settings
        self.encoded = encoded  # the columns of JSON text (Ray Data may not keep the schema's metadata)
        self._limit: asyncio.Semaphore | None = None

    async def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        if self._limit is None:  # one bound on the actor's judge calls, over every batch it runs at once
            self._limit = asyncio.Semaphore(self.unit.concurrency)
        block = batch.column(INDEX_COLUMN)[0].as_py()  # a block scored again after a lost actor has the same
        texts = await score_rows(self.unit, table_rows(batch, self.encoded), self._limit, self.settings, block)
        return pa.table({INDEX_COLUMN: batch.column(INDEX_COLUMN), RESULT_COLUMN: pa.array(texts, pa.string())})


def score_block(batch: Any, payload: bytes, settings: Mapping[str, Any], encoded: list[str]) -> Any:
    """A task's block of CPU-bound rows scored into columns, with the unit its worker process built once."""
    return score_columns(worker_unit(payload), batch, encoded, settings)


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
            encoded = encoded_columns(table.schema)
            if judges:  # blocks of one batch, a few per actor at once: rows come back as their block finishes
                blocks = [table.slice(start, size) for start in range(0, table.num_rows, size)]
                pool = ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=_JUDGE_BLOCKS_PER_ACTOR)
                dataset = ray.data.from_arrow(blocks).map_batches(
                    AsyncScorer,
                    fn_constructor_kwargs={"unit": unit, "settings": settings, "encoded": encoded},
                    compute=pool,
                    num_cpus=min(1.0, cpus / (workers + 1)),
                    batch_size=size,
                    batch_format="pyarrow",
                )
            else:  # a few blocks per worker, each scored whole by a task in a process Ray keeps for the next
                dataset = ray.data.from_arrow(split(table, workers, size)).map_batches(
                    score_block,
                    fn_kwargs={"payload": pickle.dumps(unit), "settings": settings, "encoded": encoded},
                    concurrency=workers,
                    num_cpus=min(1.0, cpus / (workers + 1)),
                    batch_size=None,
                    batch_format="pyarrow",
                )
            yield from _received(dataset.iter_batches(batch_format="pyarrow", batch_size=None))


def _received(batches: Iterator[Any]) -> Generator[Any, None, None]:
    """``batches``, taken from Ray in a thread of their own, and None every :data:`_POLL_S` seconds without one
    (the driver's turn to see an interrupt). Closing this generator ends Ray's iteration (and its actors) after
    the batch it waits for, or :data:`_STOP_WAIT_S` seconds, whichever comes first."""
    received: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()

    def take() -> None:
        try:
            for batch in batches:
                if stop.is_set():
                    break
                received.put(("batch", batch))
        except BaseException as exc:  # handed to the driver's thread, raised there
            received.put(("error", exc))
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
            received.put(("done", None))

    thread = threading.Thread(target=take, name="scorers-ray-results", daemon=True)
    thread.start()
    try:
        while True:
            try:
                kind, value = received.get(timeout=_POLL_S)
            except queue.Empty:
                yield None
                continue
            if kind == "done":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        thread.join(_STOP_WAIT_S)
