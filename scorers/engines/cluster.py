"""The driver side of the engines that score on a cluster, Ray Data (:class:`~scorers.engines.Ray`) and Spark
(:class:`~scorers.engines.Spark`): :class:`ClusterEngine`.

The driver (this process) reads the rows, gives each its input index
(:data:`INDEX_COLUMN`) and hands them to the engine as Arrow blocks; the
engine's workers score them with the same :class:`~scorers.batch.BatchScorer`
as the local run, each worker holding its scorers (and judges' HTTP clients) for
the whole run; the driver receives each row's result, keeps it exactly once (by
its index: a row that an engine re-ran after a lost worker is not counted
twice, a missing row is an :class:`~scorers.engines.EngineError`), in input order when
``ordered``, and the run (:class:`~scorers.runner.Evaluation`) sums its summary from the
results, so records and summary equal the local run's.

Judge settings travel with the work: the driver's :func:`scorers.configure`
values, the LLM environment variables (:func:`scorers.llm.config.forwarded_env`)
and the resolved judge cache (one SQLite path on one machine, or
``SCORERS_CACHE_URL``'s Redis for many) go to every worker in the payload, which
scores each batch within :func:`scorers.llm.config.scoped` of them: the worker
process's environment and ``configure`` state are left as they are. A row an
engine retries after a lost worker is answered from the cache instead of paying
its judge calls again.

What an engine sets process-wide, only while it needs it and restored after
(:func:`environ_defaults`): Ray's ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` around its
first import, and ``RAY_USAGE_STATS_ENABLED``/``RAY_AUTH_MODE`` while a local Ray
cluster started here runs; ``SPARK_LOCAL_IP`` while a Spark session started here
launches its JVM. A variable the caller has set is never changed.

>>> rows_table([{"output": "a"}, {"output": "b"}]).column(INDEX_COLUMN).to_pylist()
[0, 1]
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import pickle
import signal
import threading
import uuid
import warnings
from abc import abstractmethod
from pathlib import Path
from typing import Any, Collection, Generator, Iterator, Mapping, Sequence

from ..base import Scorer
from ..batch import RESULT_COLUMN, BatchScorer, RowResult, error_record, score_sync
from ..errors import ConfigError, DataError
from ..io import RESULT_KEYS, import_pyarrow, lone_surrogate, utf8_json
from ..score import Score, ScoreColumn
from .base import Engine, EngineError, Job

__all__ = [
    "ClusterEngine",
    "INDEX_COLUMN",
    "MAX_BLOCK_ROWS",
    "JSON_COLUMNS",
    "rows_table",
    "table_rows",
    "encoded_columns",
    "split",
    "batch_size",
    "worker_settings",
    "score_rows",
    "score_columns",
    "worker_unit",
    "environ_defaults",
    "kept_signal_handlers",
]

#: The column holding each row's input index (0-based, counting from ``start``).
INDEX_COLUMN = "_scorers_index"
#: The key of a :func:`rows_table` schema's metadata listing (JSON) the columns that hold each row's value as JSON text.
JSON_COLUMNS = b"scorers.json_columns"
#: The key of a worker's result that carries a ConfigError instead of a row's scores.
_RAISE = "_scorers_raise"
#: Rows per block at most: small enough that every worker gets several blocks of a one-file input.
MAX_BLOCK_ROWS = 10_000
#: The columns of a batch scored by :func:`score_columns`, per scorer (by its name, in the unit's order): the scores
#: (float64, null where skipped or failed), the error records (pickled, null where none), the metadata (pickled, a
#: dictionary column: each distinct one once) and, where some row has them, the statistics (pickled).
_SCORE, _ERROR, _METADATA, _STATS = (
    "_scorers_score.{}",
    "_scorers_error.{}",
    "_scorers_metadata.{}",
    "_scorers_stats.{}",
)


def rows_table(rows: Sequence[Mapping[str, Any]], start: int = 0) -> Any:
    """The rows as one Arrow table with :data:`INDEX_COLUMN`, each field a column that gives every row's value
    back exactly (:func:`table_rows` reads them).

    A field whose values Arrow holds as one type, unchanged (text, numbers of one kind, lists and objects of one
    shape; null where a row holds None), is a typed column. Any other (values of several types, 1 among 2.5,
    objects with different keys, lists of such objects, integers beyond 64 bits, a field some rows lack) is a
    column of JSON text, each row's value as :func:`json.dumps` writes it (NaN and Infinity included), null
    where the row lacks the field; the schema's metadata names these columns (:data:`JSON_COLUMNS`, never a
    column name, so no field of the rows can be taken for one). A value of such a column that JSON cannot hold
    (a date among texts, a key that is not text) is a DataError naming row and field; so is a text holding a
    lone surrogate (``"\\ud800"``, valid JSON, but not the UTF-8 of Arrow strings), which the local engine scores.

    >>> table = rows_table([{"id": 1, "tags": ["a"]}, {"id": "two", "tags": []}])
    >>> table.schema.field("id").type, encoded_columns(table.schema)
    (DataType(string), ['id'])
    >>> table_rows(table)
    [{'id': 1, 'tags': ['a']}, {'id': 'two', 'tags': []}]
    """
    pa = import_pyarrow("an engine")
    names: dict[str, None] = {}
    for i, row in enumerate(rows):
        for key in row:
            if key not in names:
                if not isinstance(key, str) or key in (INDEX_COLUMN, RESULT_COLUMN):
                    raise DataError(
                        f"row {start + i}: the field name {key!r} "
                        + ("is not text" if not isinstance(key, str) else "is the engines' own column")
                        + "; rename it to score these rows on an engine, or use the local engine"
                    )
                names[key] = None
    columns, encoded = [], []
    try:
        for name in names:
            values = [row.get(name, _ABSENT) for row in rows]
            column = _typed(pa, values)
            if column is None:
                column = pa.array(_json_texts(values, name, start), pa.string())
                encoded.append(name)
            columns.append(column)
        table = pa.Table.from_arrays(columns, names=list(names))
    except UnicodeEncodeError:
        _refuse_surrogates(rows, start)
        raise
    table = table.append_column(INDEX_COLUMN, pa.array(range(start, start + len(rows)), pa.int64()))
    return table.replace_schema_metadata({JSON_COLUMNS: json.dumps(encoded).encode()}) if encoded else table


def encoded_columns(schema: Any) -> list[str]:
    """The columns of a :func:`rows_table` schema that hold JSON text (as its metadata names them)."""
    return list(json.loads((schema.metadata or {}).get(JSON_COLUMNS, b"[]")))


def table_rows(batch: Any, encoded: Collection[str] | None = None) -> list[dict[str, Any]]:
    """In a worker: the rows of a block or batch of a :func:`rows_table` (Arrow table or record batch), as the
    driver had them: :data:`INDEX_COLUMN` left out, the JSON text of the ``encoded`` columns (default: those
    the schema's metadata names, which an engine may not pass on) read back, a field the row lacked left out.

    >>> table_rows(rows_table([{"a": {"x": 1}}, {"a": {"y": [None]}, "b": float("nan")}]))
    [{'a': {'x': 1}}, {'a': {'y': [None]}, 'b': nan}]
    """
    if encoded is None:
        encoded = encoded_columns(batch.schema)
    if INDEX_COLUMN in batch.schema.names:
        batch = batch.drop_columns([INDEX_COLUMN])
    rows: list[dict[str, Any]] = batch.to_pylist()
    if encoded:
        present = [name for name in encoded if name in batch.schema.names]
        for row in rows:
            for name in present:
                text = row[name]
                if text is None:
                    del row[name]
                else:
                    row[name] = json.loads(text)
    return rows


class _Absent:
    """A field the row lacks (None is a value)."""

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Any = _Absent()
_NUMBERS = (bool, int, float)


def _typed(pa: Any, values: list[Any]) -> Any:
    """``values`` as one typed Arrow array that gives each back exactly, or None."""
    if any(value is _ABSENT for value in values):
        return None
    try:
        array = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return None
    kind, back = array.type, array.to_pylist()
    if (
        pa.types.is_string(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_null(kind)
    ) and (
        back == values
    ):  # the common cases, without a look at each value: Arrow makes such a column only of values of its type
        return array
    if pa.types.is_floating(kind) and all(value is None or type(value) is float for value in values):
        return array  # no int made a float; NaN stays NaN
    return array if all(map(_same, back, values)) else None


def _same(back: Any, value: Any) -> bool:
    """Whether Arrow gave ``value`` back as it was: of its type (1 is not 1.0 nor True), NaN as NaN, the keys of an
    object in their order and none added; a tuple comes back as a list (as through JSON)."""
    if type(back) is not type(value) and (type(back) in _NUMBERS or type(value) in _NUMBERS):
        return False
    if isinstance(value, float):
        return bool(back == value) or (back != back and value != value)
    if isinstance(value, Mapping):
        return (
            isinstance(back, Mapping)
            and list(back) == list(value)
            and all(_same(back[key], value[key]) for key in value)
        )
    if isinstance(value, (list, tuple)):
        return isinstance(back, (list, tuple)) and len(back) == len(value) and all(map(_same, back, value))
    return bool(back == value)


def _json_texts(values: list[Any], name: str, start: int) -> list[str | None]:
    """Each value as JSON text (None for a field the row lacks); one that JSON cannot hold is a DataError."""
    texts: list[str | None] = []
    for i, value in enumerate(values):
        if value is _ABSENT:
            texts.append(None)
            continue
        found = _not_json(value)
        if found is not None:
            where, what = found
            raise DataError(
                f"row {start + i}: the field {name!r}{where} holds {what}, which JSON cannot hold; an engine "
                "carries a field whose values Arrow cannot hold as one type (here, of several types or "
                "shapes) as JSON text, so its values must be JSON's (text, numbers, true/false, null, "
                "lists, objects with text keys); use the local engine otherwise"
            )
        texts.append(json.dumps(value, ensure_ascii=False))
    return texts


def _not_json(value: Any) -> tuple[str, str] | None:
    """Where in ``value`` something JSON does not hold as it is lies (``", at ['a'][0]"``), and what it is."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        where = (", at " + "".join(f"[{step!r}]" for step in path)) if path else ""
        if item is None or isinstance(item, (str, int, float)):
            continue
        if isinstance(item, Mapping):
            for key in item:
                if not isinstance(key, str):
                    return where, f"the key {key!r} ({type(key).__name__}, not text)"
            stack.extend(((*path, key), item[key]) for key in reversed(list(item)))
        elif isinstance(item, (list, tuple)):
            stack.extend(((*path, i), element) for i, element in reversed(list(enumerate(item))))
        else:
            return where, f"a {type(item).__name__} ({item!r:.60})"
    return None


def _refuse_surrogates(rows: Sequence[Mapping[str, Any]], start: int) -> None:
    """A DataError naming the first row and field of ``rows`` that hold a lone surrogate, if one does."""
    for i, row in enumerate(rows):
        found = lone_surrogate(row)
        if found is not None:
            where, char = found
            raise DataError(
                f"row {start + i}: the {where} holds a lone surrogate ({char!r}: valid JSON, but not "
                "Unicode text), which the Arrow strings (UTF-8) that carry rows to an engine's workers "
                "cannot hold; score these rows with --engine local (engine='local'), which keeps it"
            )


def batch_size(*, judges: bool, concurrency: int) -> int:
    """Rows per batch a worker scores at once: ``concurrency`` with judges (Ray runs a few async calls per actor
    at once, so every judge slot stays busy without a long tail), a whole block (:data:`MAX_BLOCK_ROWS` at most)
    for CPU-bound scorers, whose ``score_batch`` then runs over whole columns.

    >>> batch_size(judges=True, concurrency=16), batch_size(judges=False, concurrency=16)
    (16, 10000)
    """
    return max(1, concurrency) if judges else MAX_BLOCK_ROWS


def split(table: Any, workers: int, size: int) -> list[Any]:
    """``table`` in consecutive blocks, about four per worker, of whole batches of ``size`` rows (or less than one
    for a small table) and at most :data:`MAX_BLOCK_ROWS` rows, so every worker has work however few files the
    rows came from.

    >>> [block.num_rows for block in split(rows_table([{"a": i} for i in range(10)]), workers=1, size=2)]
    [4, 4, 2]
    """
    share = -(-table.num_rows // (4 * workers))
    block = min(MAX_BLOCK_ROWS, share if share < size else size * -(-share // size))
    return [table.slice(i, block) for i in range(0, table.num_rows, block)]


# ------------------------------------------------------------------ judge settings for the workers
def worker_settings(*, judges: bool = True) -> dict[str, Any]:
    """What a worker needs to judge like this process: :func:`scorers.configure` values, the LLM environment
    variables (:func:`~scorers.llm.config.forwarded_env`; ``None`` for one unset here), and the judge cache
    resolved here (an absolute SQLite path, a Redis URL or off), and the run's id (whose blocks pay for their
    judge calls: :func:`scorers.llm.cache.paying`). A configured ``client`` cannot travel: with ``judges`` that
    is a ConfigError, without it is left here. :func:`score_rows` applies them, scoped."""
    from ..llm import config
    from ..llm.cache import is_redis_url

    values = config.configured_values()
    if values.pop("client", None) is not None and judges:
        raise ConfigError(
            "scorers.configure(client=...) cannot reach an engine's workers (a client holds "
            "connections); configure base_url=/api_key= (or OPENAI_BASE_URL/OPENAI_API_KEY) instead"
        )
    cache = config.cache_target(values.get("cache", True))
    if cache is None:
        values["cache"] = False
    elif isinstance(cache, (str, os.PathLike)):
        values["cache"] = cache if is_redis_url(cache) else str(Path(cache).expanduser().absolute())
    else:  # an LLMCache / RedisCache: its path or URL
        values["cache"] = getattr(cache, "url", None) or str(Path(cache.path).absolute())
    env = {name: os.environ.get(name) for name in config.forwarded_env()}
    return {"configured": values, "env": env, "run": uuid.uuid4().hex}


async def score_rows(
    unit: BatchScorer,
    rows: list[dict[str, Any]],
    limit: asyncio.Semaphore | None = None,
    settings: Mapping[str, Any] | None = None,
    block: int | None = None,
) -> list[str]:
    """In a worker: each row's scores, errors, statistics and score metadata as JSON text that UTF-8 (an Arrow
    string) carries (:func:`scorers.io.utf8_json`). A ConfigError (the run is misconfigured) travels to the driver
    inside the results, which raises it there as it would locally. ``settings`` (the driver's
    :func:`worker_settings`) hold while the rows are scored (:func:`scorers.llm.config.scoped`: this task and
    the tasks it starts), in place of the worker process's own. ``block`` (the index of the rows' first row)
    names the rows as the run's block that pays for their judge calls (:func:`scorers.llm.cache.paying`): when
    the block is scored again after a lost worker, the calls the run already paid for count as paid, not
    cached."""
    from ..llm.cache import paying
    from ..llm.config import scoped

    with contextlib.ExitStack() as scope:
        if settings is not None:
            scope.enter_context(scoped(settings["configured"], settings["env"]))
            if block is not None:
                scope.enter_context(paying(settings["run"], block))
        try:
            results = await unit.score(rows, limit=limit)
        except ConfigError as exc:
            return [json.dumps({_RAISE: base64.b64encode(pickle.dumps(exc)).decode("ascii")})] * len(rows)
    texts = []
    for result in results:
        record = result.to_record(with_metadata=True)
        texts.append(
            utf8_json({key: record[key] for key in RESULT_KEYS if key in record}, allow_nan=False, default=str)
        )  # a lone surrogate as a \u escape: UTF-8 text
    return texts


@functools.lru_cache(maxsize=4)
def worker_unit(payload: bytes) -> BatchScorer:
    """In a worker: the unit of a pickled payload, built once per worker process and run (its scorers' models and
    clients kept for every batch it scores)."""
    unit: BatchScorer = pickle.loads(payload)
    return unit


def score_columns(
    unit: BatchScorer, batch: Any, encoded: Collection[str] | None = None, settings: Mapping[str, Any] | None = None
) -> Any:
    """In a worker, for units of sync scorers only: a batch of a :func:`rows_table` scored into an Arrow table of
    :data:`INDEX_COLUMN` and, per scorer, its scores as one float64 column, its errors as a sparse column and its
    metadata pickled once per distinct value (a :class:`~scorers.score.ScoreColumn` with shared metadata: once
    for the batch), built from each scorer's ``score_batch`` over the batch's whole columns, as the local run's,
    within the driver's ``settings`` (:func:`worker_settings`). A ConfigError travels to the driver in
    :data:`_RAISE`. :func:`batch_results` reads the table back.

    >>> table = score_columns(BatchScorer(["ExactMatch"]), rows_table([{"output": "a", "expected": "a"}, {}]))
    >>> table.column("_scorers_score.ExactMatch").to_pylist()
    [1.0, None]
    >>> [r.errors for r in batch_results(table, [{}, {}], 0)][1]["ExactMatch"]["message"]
    "ExactMatch: field 'output' is required but was missing"
    """
    from ..llm.config import scoped

    pa = import_pyarrow("an engine")
    rows = table_rows(batch, encoded)
    columns = {INDEX_COLUMN: batch.column(INDEX_COLUMN)}
    try:
        with scoped(settings["configured"], settings["env"]) if settings else contextlib.nullcontext():
            for scorer in unit.scorers:
                outcomes = _outcomes(scorer, unit.argument_rows(scorer, rows))
                columns.update(_outcome_columns(pa, scorer.name, outcomes, len(rows)))
    except ConfigError as exc:
        raised = pa.array([base64.b64encode(pickle.dumps(exc)).decode("ascii")] * len(rows), pa.string())
        return pa.table({INDEX_COLUMN: batch.column(INDEX_COLUMN), _RAISE: raised})
    return pa.table(columns)


def _outcomes(scorer: Scorer, args: list[dict[str, Any]]) -> Any:
    """``scorer``'s outcomes of ``args``, a ScoreColumn kept as it is; a ConfigError among them is raised."""
    outcomes: Any
    try:
        outcomes = scorer.score_batch(args)
        outcomes = outcomes if type(outcomes) is ScoreColumn else list(outcomes)
    except Exception:
        outcomes = score_sync(scorer, args)  # the row(s) at fault fail alone, as in the local run
    errors = outcomes.errors.values() if type(outcomes) is ScoreColumn else outcomes
    for error in errors:
        if isinstance(error, ConfigError):
            raise error
    return outcomes


def _outcome_columns(pa: Any, name: str, outcomes: Any, n: int) -> dict[str, Any]:
    """The columns of scorer ``name``'s outcomes (a ScoreColumn, or a Score or an exception per row)."""
    errors: list[bytes | None] = [None] * n
    if type(outcomes) is ScoreColumn:
        import numpy as np

        for row, exc in outcomes.errors.items():
            errors[row] = pickle.dumps(error_record(exc))
        values = pa.array(outcomes.values, pa.float64(), from_pandas=True)  # NaN: skipped or failed, null
        shared = outcomes.shared_metadata
        if shared is not None:
            failed = np.zeros(n, dtype=bool)
            failed[list(outcomes.errors)] = True
            indices = pa.array(np.zeros(n, dtype=np.int32), mask=failed)
            metadata = pa.DictionaryArray.from_arrays(indices, pa.array([pickle.dumps(dict(shared))], pa.binary()))
        else:
            each = [None if row in outcomes.errors else pickle.dumps(outcomes.metadata(row)) for row in range(n)]
            metadata = pa.array(each, pa.binary()).dictionary_encode()
        errors_column = pa.array(errors, pa.binary())
        return {_SCORE.format(name): values, _ERROR.format(name): errors_column, _METADATA.format(name): metadata}
    scores: list[float | None] = [None] * n
    metadatas: list[dict[str, Any] | None] = [None] * n
    stats: list[bytes | None] = [None] * n
    for row, outcome in enumerate(outcomes):
        if isinstance(outcome, Score):
            scores[row], metadatas[row] = outcome.score, outcome.metadata
            if outcome.stats is not None:
                stats[row] = pickle.dumps(outcome.stats)
        else:
            errors[row] = pickle.dumps(error_record(outcome))
    columns = {
        _SCORE.format(name): pa.array(scores, pa.float64()),
        _ERROR.format(name): pa.array(errors, pa.binary()),
        _METADATA.format(name): _metadata_column(pa, metadatas),
    }
    if stats.count(None) < n:
        columns[_STATS.format(name)] = pa.array(stats, pa.binary())
    return columns


def batch_results(batch: Any, rows: Sequence[dict[str, Any]], start: int) -> list[RowResult]:
    """On the driver: each row's :class:`RowResult` from a worker's scored batch (:func:`score_columns`'s columns,
    or :func:`score_rows`'s texts in :data:`~scorers.batch.RESULT_COLUMN`), ``rows`` the run's rows from index
    ``start``; a worker's ConfigError is raised."""
    index = batch.column(INDEX_COLUMN).to_pylist()
    names = batch.schema.names
    if RESULT_COLUMN in names:
        texts = batch.column(RESULT_COLUMN).to_pylist()
        return [_result(text, i, rows[i - start]) for i, text in zip(index, texts)]
    if _RAISE in names:
        raise pickle.loads(base64.b64decode(batch.column(_RAISE)[0].as_py()))
    results = [RowResult(i, rows[i - start]) for i in index]
    prefix = _SCORE.format("")
    for name in [column[len(prefix) :] for column in names if column.startswith(prefix)]:
        values = batch.column(_SCORE.format(name)).to_pylist()
        errors = batch.column(_ERROR.format(name)).to_pylist()
        metadata = _metadata_values(batch.column(_METADATA.format(name)))
        stats_name = _STATS.format(name)
        stats = batch.column(stats_name).to_pylist() if stats_name in names else [None] * len(index)
        for result, value, error, row_metadata, row_stats in zip(results, values, errors, metadata, stats):
            if error is not None:
                result.errors[name] = pickle.loads(error)
            else:
                row_stats = None if row_stats is None else pickle.loads(row_stats)
                result.results[name] = Score.trusted(name, value, dict(row_metadata), row_stats)
    return results


def _metadata_column(pa: Any, metadatas: list[dict[str, Any] | None]) -> Any:
    """Each row's metadata (None: the row failed): where every row's has the same keys, a struct of one column
    per key (a value all rows share pickled once, values Arrow gives back exactly typed, others pickled per
    row), else each row's pickled; a pickle column is a dictionary one, each distinct pickle once."""
    present = [metadata for metadata in metadatas if metadata is not None]
    keys = list(present[0]) if present else []
    if not keys or not all(isinstance(key, str) for key in keys) or any(list(m) != keys for m in present):
        return _pickles(pa, metadatas)
    failed = pa.array([metadata is None for metadata in metadatas], pa.bool_())
    fields = []
    for key in keys:
        values = [None if metadata is None else metadata[key] for metadata in metadatas]
        first = present[0][key]
        if all(value is first or (value == first and _same(value, first)) for value in (m[key] for m in present)):
            indices = pa.array([0 if metadata is not None else None for metadata in metadatas], pa.int32())
            fields.append(pa.DictionaryArray.from_arrays(indices, pa.array([pickle.dumps(first)], pa.binary())))
        else:
            typed = _typed(pa, values) if not isinstance(first, (dict, list)) else None
            fields.append(typed if typed is not None else _pickles(pa, values))
    return pa.StructArray.from_arrays(fields, keys, mask=failed)


def _pickles(pa: Any, values: list[Any]) -> Any:
    """``values`` pickled (None: null) as a dictionary column: each distinct pickle once."""
    return pa.array(
        [None if value is None else pickle.dumps(value) for value in values], pa.binary()
    ).dictionary_encode()


def _metadata_values(column: Any) -> list[Any]:
    """Each row's metadata from a :func:`_metadata_column` or a dictionary column of pickles (None where null)."""
    pa = import_pyarrow("an engine")
    values: list[Any] = []
    for chunk in getattr(column, "chunks", [column]):
        if not pa.types.is_struct(chunk.type):
            values.extend(_unpickled(chunk))
            continue
        names = [chunk.type.field(i).name for i in range(chunk.type.num_fields)]
        fields = [_unpickled(field) if hasattr(field, "dictionary") else field.to_pylist() for field in chunk.flatten()]
        valid = chunk.is_valid().to_pylist()
        values.extend(dict(zip(names, row)) if ok else None for ok, row in zip(valid, zip(*fields)))
    return values


def _unpickled(chunk: Any) -> list[Any]:
    """A dictionary array of pickles, each row's value (each distinct pickle read once; None where null)."""
    distinct = [pickle.loads(data) for data in chunk.dictionary.to_pylist()]
    return [None if i is None else distinct[i] for i in chunk.indices.to_pylist()]


@contextlib.contextmanager
def kept_signal_handlers() -> Iterator[None]:
    """The SIGINT and SIGTERM handlers of this process as they are now, in force again after the block (in the
    main thread only: elsewhere Python can neither read nor set them). For a library that installs its own
    (``ray.init``): a stop signal then still reaches the run (the CLI's exit 143 and its resume hint)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            if handler is not None:  # None: a handler not installed from Python, which cannot be put back
                signal.signal(sig, handler)


@contextlib.contextmanager
def environ_defaults(values: Mapping[str, str]) -> Iterator[None]:
    """Set the environment variables of ``values`` that are unset, for the block only: each one set here is
    removed after it (unless something else changed it meanwhile). For the few settings a library reads only
    from the environment (Ray on import and at ``ray.init``, Spark's JVM launcher); a variable the caller set
    is left as it is.

    >>> with environ_defaults({"SCORERS_EXAMPLE_VARIABLE": "1"}):
    ...     os.environ["SCORERS_EXAMPLE_VARIABLE"]
    '1'
    >>> "SCORERS_EXAMPLE_VARIABLE" in os.environ
    False
    """
    added = {name: value for name, value in values.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name, value in added.items():
            if os.environ.get(name) == value:
                del os.environ[name]


def _result(text: str, index: int, row: dict[str, Any]) -> RowResult:
    """A worker's JSON text as the driver's :class:`RowResult` of ``row``; a worker's ConfigError is raised."""
    record = json.loads(text)
    if _RAISE in record:
        raise pickle.loads(base64.b64decode(record[_RAISE]))
    result = RowResult.from_record(record, index)
    result.row = row
    return result


# ------------------------------------------------------------------ the run
class ClusterEngine(Engine):
    """An engine whose workers score Arrow blocks of the rows: the driver reads every row, sends them as one table
    with :data:`INDEX_COLUMN` (:func:`rows_table`) and keeps each row's first result by its index.

    A subclass says how its cluster scores the table (:meth:`score_table`); rows come back exactly once each (a
    repeat is dropped with a warning, a row never returned is an :class:`~scorers.engines.EngineError`), in input
    order with ``ordered``, else as the engine finishes them (their ``index`` says where each belongs).
    """

    @abstractmethod
    def score_table(self, table: Any, unit: BatchScorer, *, workers: int, ordered: bool) -> Generator[Any, None, None]:
        """Arrow batches of :data:`INDEX_COLUMN` and the rows' results (:func:`score_columns`'s columns, or each
        row's :func:`score_rows` text in :data:`~scorers.batch.RESULT_COLUMN`) for the rows of ``table``, scored on ``workers`` workers, or None now and then
        while none is ready (so that the run can stop on an interrupt meanwhile); closing the generator stops
        the work (and a cluster started for it)."""

    def score(self, job: Job) -> Generator[list[RowResult], None, None]:
        rows = list(job.rows)
        if not rows:
            return
        table = rows_table(rows, job.start)
        received = bytearray(len(rows))
        pending: dict[int, RowResult] = {}  # ordered: rows that came before an earlier one
        following = 0  # ordered: the offset of the next row to give out
        batches = self.score_table(table, job.unit, workers=job.workers, ordered=job.ordered)
        try:
            for batch in batches:
                if batch is None:  # still at work: an empty chunk, so that the run can stop meanwhile
                    yield []
                    continue
                ready = []
                for result in batch_results(batch, rows, job.start):
                    index = result.index
                    offset = index - job.start
                    if received[offset]:
                        warnings.warn(
                            f"the {self.name} engine returned row {index} twice; it is kept once",
                            RuntimeWarning,
                            stacklevel=2,
                        )
                        continue
                    received[offset] = 1
                    if not job.ordered:
                        ready.append(result)
                        continue
                    pending[offset] = result
                    while following in pending:
                        ready.append(pending.pop(following))
                        following += 1
                yield ready
        finally:  # an interrupted or failed run stops the engine's work (and a cluster started for it)
            batches.close()
        missing = [job.start + i for i, seen in enumerate(received) if not seen]
        if missing:
            raise EngineError(
                f"the {self.name} engine returned {len(rows) - len(missing)} of {len(rows)} rows; "
                f"missing: rows {', '.join(map(str, missing[:10]))}{' ...' if len(missing) > 10 else ''}"
            )
