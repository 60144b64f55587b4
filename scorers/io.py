"""Reading rows from JSONL, JSON or CSV files, and durable JSONL results with resume.

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
>>> _ = open(path, "w").write('{"output": "a"}\\n{"output": "b"}\\n')
>>> [row["output"] for row in read_rows(path)]
['a', 'b']
"""
from __future__ import annotations

import csv
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import IO, Any, Iterator

from .errors import DataError

__all__ = ["read_rows", "count_rows", "ResultWriter", "read_completed", "RESULT_KEYS"]

FORMATS = ("jsonl", "json", "csv")
#: Keys the runner adds to a row in the results file.
RESULT_KEYS = ("scores", "errors", "stats", "metadata_scores")


def detect_format(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson") or path == "-":
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix in (".csv", ".tsv"):
        return "csv"
    raise DataError(f"{path}: cannot tell the format from the extension {suffix!r}; use --format jsonl|json|csv")


def read_rows(path: str, fmt: str | None = None) -> Iterator[dict[str, Any]]:
    """Stream rows (dicts) from ``path``; a malformed row raises :class:`DataError` naming file and line."""
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if path != "-" and not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    if fmt == "jsonl":
        return _read_jsonl(path)
    if fmt == "json":
        return _read_json(path)
    return _read_csv(path)


def _open(path: str) -> IO[str]:
    return sys.stdin if path == "-" else open(path, encoding="utf-8", newline="")


def _read_jsonl(path: str) -> Iterator[dict[str, Any]]:
    with _open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                where = "at the end of the line" if exc.pos >= len(text.rstrip()) else f"at column {exc.colno}"
                raise DataError(f"{path}:{lineno}: invalid JSON ({exc.msg} {where})") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object per line, got {type(row).__name__}")
            yield row


def _read_json(path: str) -> Iterator[dict[str, Any]]:
    with _open(path) as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON array of objects, got {type(data).__name__}")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise DataError(f"{path}: item {i} of the array is a {type(row).__name__}, not an object")
        yield row


def _read_csv(path: str) -> Iterator[dict[str, Any]]:
    with _open(path) as fh:
        dialect = "excel-tab" if path.endswith(".tsv") else "excel"
        reader = csv.DictReader(fh, dialect=dialect)
        if reader.fieldnames is None:
            return
        for row in reader:
            if None in row:
                raise DataError(f"{path}:{reader.line_num}: more values than the {len(reader.fieldnames)} header columns")
            if any(v is None for v in row.values()):
                raise DataError(f"{path}:{reader.line_num}: fewer values than the {len(reader.fieldnames)} header columns")
            yield dict(row)


def count_rows(path: str, fmt: str | None = None) -> int | None:
    """Row count for progress bars (cheap line count), or None when unknown."""
    fmt = fmt or detect_format(path)
    if path == "-" or fmt == "json":
        return None
    with open(path, "rb") as fh:
        count = sum(1 for line in fh if line.strip())
    return count - 1 if fmt == "csv" and count else count


def read_completed(path: str) -> list[dict[str, Any]]:
    """Records already written to a results file; a torn last line is cut off the file.

    A run killed mid-write leaves at most one incomplete trailing line; it is
    removed so that the resumed run rewrites that row.
    """
    if not os.path.exists(path):
        return []
    records: list[dict[str, Any]] = []
    good_bytes = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                break
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                raise DataError(f"{path}:{lineno}: not a results line (invalid JSON); refusing to resume") from None
            if not isinstance(record, dict) or "scores" not in record:
                raise DataError(f"{path}:{lineno}: not a results line (no 'scores'); refusing to resume")
            records.append(record)
            good_bytes += len(raw)
    if good_bytes != os.path.getsize(path):
        with open(path, "r+b") as fh:
            fh.truncate(good_bytes)
    return records


class ResultWriter:
    """Appends one JSON line per row.

    :meth:`flush` hands the lines written so far to the OS (a killed process
    loses none of them; the runner flushes whenever no further scored row is
    waiting); a regular file is also fsynced at least every ``sync_interval_s``
    seconds and on close (a machine crash loses at most that window). Pipes,
    terminals and devices such as ``/dev/null`` are flushed only. A line cut by a
    kill is found and dropped by :func:`read_completed`.
    """

    def __init__(self, path: str | None, *, append: bool = False, sync_interval_s: float = 1.0) -> None:
        self.path = path
        self._fh: IO[str] = sys.stdout if path in (None, "-") else open(path, "a" if append else "w", encoding="utf-8")
        self._syncs = self._fh is not sys.stdout and stat.S_ISREG(os.fstat(self._fh.fileno()).st_mode)
        self._sync_interval_s = sync_interval_s
        self._last_sync = time.monotonic()

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    def flush(self) -> None:
        self._fh.flush()
        if time.monotonic() - self._last_sync >= self._sync_interval_s:
            self.sync()

    def sync(self) -> None:
        self._fh.flush()
        if self._syncs:
            os.fsync(self._fh.fileno())
        self._last_sync = time.monotonic()

    def close(self) -> None:
        self.sync()
        if self._fh is not sys.stdout:
            self._fh.close()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
