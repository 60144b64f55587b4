"""Writing results: the durable, locked JSONL writer (:class:`ResultWriter`, :func:`open_results`) and the Parquet
writer."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from typing import IO, Any, Iterator, Mapping, cast

try:
    import fcntl
except ImportError:  # Windows: results files are not locked
    fcntl = None  # type: ignore[assignment]

from .._util import is_int
from ..errors import ConfigError, DataError
from .encoding import json_line, too_deep_to_write, utf8_json
from .readers import import_pyarrow
from .records import RESULT_KEYS, lone_surrogate


def open_results(path: str, *, append: bool) -> IO[bytes]:
    """``path`` opened to write a run's results (appended to with ``append``, else emptied), holding an exclusive
    lock on it while it stays open, so that two runs never write one file. The kernel releases the lock however
    the process ends (even by SIGKILL): a stale lock cannot be left. A file another run holds is a
    :class:`~scorers.errors.ConfigError` naming the process that holds it, and is left as it is; one that cannot
    be opened is a :class:`DataError`. A pipe or a device (``/dev/null``) is opened as it is, unlocked.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0), 0o666)
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from None
    fh = os.fdopen(fd, "ab" if append else "wb")  # emptied below, once it is ours
    if fcntl is None or not stat.S_ISREG(os.fstat(fd).st_mode):
        return fh
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        fh.close()
        raise ConfigError(
            f"{path} is being written by another run ({holder}); two runs writing one file would mix their rows: "
            "wait for that run to end (then --resume continues it), or write to another file"
        ) from None
    if not append:
        fh.truncate(0)
    return fh


def _lock_holder(fd: int) -> str:
    """Who holds the lock on the open file ``fd``: ``process 1234`` (Linux: from /proc/locks), or ``another process``."""
    st = os.fstat(fd)
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with contextlib.suppress(OSError), open("/proc/locks") as locks:
        for line in locks:  # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"
            fields = line.split()
            if "FLOCK" in fields and where in fields:
                return f"process {fields[fields.index(where) - 1]}"
    return "another process"


class ResultWriter:
    """Appends one JSON line per row (:func:`json_line`).

    :meth:`flush` hands the lines written so far to the OS (a killed process
    loses none of them; the runner flushes whenever no further scored row is
    waiting); a regular file is also fsynced at least every ``sync_interval_s``
    seconds and on close (a machine crash loses at most that window). Pipes,
    terminals and devices such as ``/dev/null`` are flushed only. A line cut by a
    kill or a full disk is found and dropped by :func:`read_completed`. A file that
    cannot be written (no space left, no permission) raises :class:`DataError`. The
    file is locked while the writer is open (:func:`open_results`): another run
    cannot write it meanwhile.
    """

    def __init__(self, path: str | None, *, append: bool = False, sync_interval_s: float = 1.0) -> None:
        self.path = path
        self._to_stdout = path in (None, "-")
        if self._to_stdout:
            sys.stdout.flush()  # what was printed before comes first
            self._fh: IO[bytes] = sys.stdout.buffer
        else:
            self._fh = open_results(cast(str, path), append=append)
        self._syncs = not self._to_stdout and stat.S_ISREG(os.fstat(self._fh.fileno()).st_mode)
        self._sync_interval_s = sync_interval_s
        self._last_sync = time.monotonic()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """An OSError (disk full, ...) as a DataError that says what is left; a closed pipe stays a BrokenPipeError."""
        try:
            yield
        except BrokenPipeError:
            raise
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if self._to_stdout:
                raise DataError(f"cannot write stdout: {reason}") from None
            once = "there is space" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "that is fixed"
            raise DataError(
                f"cannot write {self.path}: {reason}; the rows written so far are complete, "
                f"continue with --resume once {once}"
            ) from None

    def write(self, record: dict[str, Any]) -> None:
        try:
            line = json_line(record)
        except RecursionError:
            raise too_deep_to_write(self.path) from None
        self.write_lines(line)

    def write_lines(self, lines: bytes) -> None:
        """Append lines already written as JSON (:func:`json_lines`)."""
        with self._writing():
            self._fh.write(lines)

    def flush(self) -> None:
        with self._writing():
            self._fh.flush()
        if time.monotonic() - self._last_sync >= self._sync_interval_s:
            self.sync()

    def sync(self) -> None:
        with self._writing():
            self._fh.flush()
            if self._syncs:
                os.fsync(self._fh.fileno())
        self._last_sync = time.monotonic()

    def close(self) -> None:
        """Sync and close (once; closing again does nothing); the file is closed even when the last lines cannot be
        written."""
        if self._fh.closed:
            return
        try:
            self.sync()
        except BaseException:
            if not self._to_stdout:
                with contextlib.suppress(OSError):  # the same failed flush again; the descriptor is closed
                    self._fh.close()
            raise
        if not self._to_stdout:
            with self._writing():
                self._fh.close()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
            return
        with contextlib.suppress(OSError, DataError):  # the error on its way out is the one to report
            self.close()


class ParquetResultWriter:
    """The records of a run as one Parquet file, written on close: the row's fields, ``scores`` (a struct of
    floats), and ``errors``, ``stats`` and ``metadata_scores`` as JSON text (null when absent).

    A column that only later rows have is kept (null before). The file is opened at once, so an unwritable path
    stops the run before anything is scored. What Parquet cannot hold is a :class:`DataError` at the row that
    holds it, rows counted from 0 as written: a text (value or column name) with a lone surrogate (``"\\ud800"``,
    valid JSON, but a Parquet string is UTF-8), or a column whose values are of two types; the rows before it are
    written, and JSONL (which keeps every value JSON can carry) is the way to write such rows. The JSON text
    columns hold a lone surrogate as a ``\\u`` escape (:func:`utf8_json`), read back as the same text.
    A file that cannot be written (no space left, ...) is a DataError too.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._pq = import_pyarrow("Parquet output", "pyarrow.parquet")
        self._records: list[dict[str, Any]] = []
        self._kinds: dict[str, str] = {}  # column -> the kind of value its rows hold so far
        self._fh: Any = open_results(path, append=False)

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            raise ValueError(f"{self.path} is closed")
        row = {key: value for key, value in record.items() if key not in _JSON_COLUMNS}
        problem = self._unwritable(row)
        if problem is not None:
            self._refuse(problem)
        for key in _JSON_COLUMNS:
            try:
                row[key] = utf8_json(record[key], default=str) if key in record else None
            except (RecursionError, ValueError) as exc:
                reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
                self._refuse(f"{key} cannot be JSON text ({reason})")
        for key, value in row.items():
            kind = _kind(value)
            if kind is not None and key not in _JSON_COLUMNS:
                self._kinds.setdefault(key, kind)
        self._records.append(row)

    def _unwritable(self, row: Mapping[str, Any]) -> str | None:
        found = lone_surrogate(row)
        if found is not None:
            where, char = found
            return (
                f"{where.replace('field', 'column', 1)}, holds a lone surrogate ({char!r}: valid JSON, but not "
                "Unicode text), which a Parquet string (UTF-8) cannot hold"
            )
        for key, value in row.items():
            kind, before = _kind(value), self._kinds.get(key)
            if None not in (kind, before) and kind != before:
                return (
                    f"column {key!r} holds {kind}, where the rows before hold {before}; a Parquet column has one type"
                )
            if is_int(value) and not -(2**63) <= value < 2**63:
                return f"column {key!r} holds an integer beyond 64 bits, which a Parquet column cannot hold"
        return None

    def _refuse(self, problem: str) -> None:
        """Write the rows so far and raise the DataError of the row that Parquet cannot hold."""
        written = len(self._records)
        message = (
            f"cannot write {self.path}: row {written}, {problem}; write JSONL instead (-o OUT.jsonl keeps "
            "every value JSON can carry)"
        )
        try:
            self.close()
        except DataError as exc:
            raise DataError(f"{message}; and the rows before it are not written either: {exc}") from None
        raise DataError(f"{message}; {self.path} holds the {written} row{'' if written == 1 else 's'} before it")

    def flush(self) -> None:
        """Nothing to do: the file is written whole on close."""

    def close(self) -> None:
        """Write the file (once; closing again does nothing)."""
        if self._fh is None:
            return
        fh, self._fh = self._fh, None
        try:
            table = self._table()
            self._pq.write_table(table, fh)
            fh.close()
        except OSError as exc:
            with contextlib.suppress(OSError):  # the same failed flush again; the descriptor is closed
                fh.close()
            once = "there is space" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "that is fixed"
            raise DataError(
                f"cannot write {self.path}: {exc.strerror or exc}; a Parquet file is written whole at "
                f"the end, so {self.path} is incomplete: run again once {once}, or write JSONL "
                "(-o OUT.jsonl), which keeps each row as it is scored and continues with --resume"
            ) from None
        except BaseException:
            with contextlib.suppress(OSError):
                fh.close()
            raise

    def _table(self) -> Any:
        """The records as one table: every column any record has (input columns first, then the run's keys)."""
        import pyarrow as pa

        names = dict.fromkeys(key for record in self._records for key in record if key not in RESULT_KEYS)
        names.update(dict.fromkeys(key for key in RESULT_KEYS if any(key in r for r in self._records)))
        arrays = []
        for name in names:
            try:
                arrays.append(pa.array([record.get(name) for record in self._records]))
            except (
                pa.ArrowInvalid,
                pa.ArrowTypeError,
                pa.ArrowNotImplementedError,
                OverflowError,
                RecursionError,
            ) as exc:
                raise DataError(
                    f"cannot write {self.path}: column {name!r} cannot be one Parquet column ({exc}); "
                    "nothing is written: write JSONL instead (-o OUT.jsonl keeps every value JSON can "
                    "carry)"
                ) from None
        return pa.Table.from_arrays(arrays, names=list(names))

    def __enter__(self) -> "ParquetResultWriter":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
            return
        with contextlib.suppress(OSError, DataError):  # the rows so far are written; the error on its way out is
            self.close()  # the one to report


#: The columns of a Parquet results file that hold JSON text.
_JSON_COLUMNS = ("errors", "stats", "metadata_scores")


def _kind(value: Any) -> str | None:
    """What Arrow makes of ``value``, in words (None for null: any column holds it)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "booleans"
    if isinstance(value, (int, float)):
        return "numbers"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "objects"
    if isinstance(value, (list, tuple)):
        return "lists"
    return type(value).__name__ + " values"
