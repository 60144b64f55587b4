"""Reading rows: JSONL (as parsed rows or as raw line chunks), JSON, CSV and Parquet input, and the records of a
results file to resume."""

from __future__ import annotations

import codecs
import csv
import importlib
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Sequence, cast

import orjson

from .._util import json_error_reason
from ..errors import ConfigError, DataError
from .encoding import DEPTH_HINT

FORMATS = ("jsonl", "json", "csv")


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


def _open(path: str) -> IO[bytes]:
    return sys.stdin.buffer if path == "-" else open(path, "rb")


def _not_utf8(path: str, lineno: int, offset: int, byte: int) -> DataError:
    return DataError(
        f"{path}:{lineno}: not UTF-8 text (byte 0x{byte:02x} at byte offset {offset}); scorers reads "
        "UTF-8 only: convert the file first (e.g. iconv -f cp1252 -t utf-8 FILE > FILE.utf8)"
    )


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line (ended by a newline byte, kept); a byte-order mark at the start is dropped."""
    with _open(path) as fh:
        offset = 0
        for lineno, raw in enumerate(fh, 1):
            yield lineno, _line_text(path, raw, lineno, offset)
            offset += len(raw)


def _line_text(path: str, raw: bytes, lineno: int, offset: int) -> str:
    """Line ``lineno`` (at byte ``offset``) as text; a byte-order mark at the start of the file is dropped."""
    text_start = len(codecs.BOM_UTF8) if lineno == 1 and raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[text_start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        position = text_start + exc.start
        raise _not_utf8(path, lineno, offset + position, raw[position]) from None


#: Input read at a time: the lines up to the first line end past this many bytes.
_BLOCK_BYTES = 1 << 16
#: A run of digits orjson may read otherwise than ``json`` does: it reads an integer beyond 64 bits as a float.
#: Found as a run of zeros once every digit is a zero and every other byte a space (in C: faster than a regex).
_LONG_DIGITS = b"0" * 19
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))


def jsonl_rows(path: str, lines: Sequence[bytes], lineno: int = 1, offset: int = 0) -> Iterator[dict[str, Any]]:
    """The rows of ``lines``, raw lines of the JSONL file ``path`` (line ends kept), the first of them line
    ``lineno`` at byte ``offset``. Blank lines are skipped; a line that is not a JSON object is a
    :class:`DataError` naming its line, raised after the rows before it.

    >>> list(jsonl_rows("a.jsonl", [b'{"x": 1}\\n', b"\\n", b'{"x": 12345678901234567890, "y": NaN}\\n']))
    [{'x': 1}, {'x': 12345678901234567890, 'y': nan}]
    """
    rows = _plain_rows(lines)
    if rows is not None:
        yield from rows
        return
    loads = orjson.loads
    for raw in lines:
        try:
            if _LONG_DIGITS in raw.translate(_DIGITS_AS_ZEROS):
                raise ValueError(raw)
            row = loads(raw)
        except ValueError:  # JSON orjson does not read as json does (NaN, long integers, a lone surrogate), or none
            row = _json_row(path, raw, lineno, offset)
        else:
            if type(row) is not dict:
                row = _json_row(path, raw, lineno, offset)
        if row is not None:
            yield row
        lineno += 1
        offset += len(raw)


def _plain_rows(lines: Sequence[bytes]) -> list[dict[str, Any]] | None:
    """The rows of ``lines`` when each is a JSON object that orjson reads as ``json`` does (no digits run long
    enough to be an integer beyond 64 bits), read in C; else None."""
    if _LONG_DIGITS in b"".join(lines).translate(_DIGITS_AS_ZEROS):
        return None
    try:
        rows = list(map(orjson.loads, lines))
    except ValueError:
        return None
    return rows if set(map(type, rows)) <= {dict} else None


def _json_row(path: str, raw: bytes, lineno: int, offset: int) -> dict[str, Any] | None:
    """Line ``lineno`` read by ``json``: its row, None for a blank line, or the DataError that says what is wrong."""
    text = _line_text(path, raw, lineno, offset).rstrip("\r\n")
    if not text.strip():
        return None
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        where = "at the end of the line" if exc.pos >= len(text.rstrip()) else f"at column {exc.colno}"
        raise DataError(f"{path}:{lineno}: invalid JSON ({json_error_reason(exc)} {where})") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise DataError(f"{path}:{lineno}: unreadable JSON ({exc})") from None
    except RecursionError:
        raise DataError(f"{path}:{lineno}: {DEPTH_HINT}") from None
    if not isinstance(row, dict):
        raise DataError(f"{path}:{lineno}: expected a JSON object per line, got {type(row).__name__}")
    return row


@dataclass
class LineChunk:
    """Raw lines of the JSONL file ``path`` (line ends kept), ``lines[0]`` being line ``lineno``, at byte
    ``offset``: what :func:`jsonl_rows` reads."""

    path: str
    lineno: int
    offset: int
    lines: list[bytes]

    def rows(self) -> Iterator[dict[str, Any]]:
        """The chunk's rows (:func:`jsonl_rows`)."""
        return jsonl_rows(self.path, self.lines, self.lineno, self.offset)

    def read(self) -> tuple[list[dict[str, Any]], DataError | None]:
        """The chunk's rows up to the first line that is not a row, and that line's error (None if every line is)."""
        rows = _plain_rows(self.lines)
        if rows is not None:
            return rows, None
        rows = []
        try:
            rows.extend(self.rows())
        except DataError as exc:
            return rows, exc
        return rows, None


class JsonlLines:
    """A JSONL file (``-``: standard input) read as :class:`LineChunk` s, for a pipeline that parses the lines
    where it scores them; rows can be read parsed before (:meth:`rows`), or looked at first (:meth:`peek`).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
    >>> _ = open(path, "w").write('{"output": "a"}\\n\\n{"output": "b"}\\n{"output": "c"}\\n')
    >>> with JsonlLines(path) as source:
    ...     first, peeked = next(source.rows()), source.peek(5)
    ...     chunk = source.next_chunk(1 << 16)
    >>> first, peeked, (chunk.lineno, chunk.offset, len(chunk.lines)), list(chunk.rows())
    ({'output': 'a'}, [{'output': 'b'}, {'output': 'c'}], (2, 16, 3), [{'output': 'b'}, {'output': 'c'}])
    """

    def __init__(self, path: str) -> None:
        if path != "-" and not os.path.exists(path):
            raise DataError(f"{path}: no such file")
        self.path = path
        self._fh = _open(path)
        self._pending: list[bytes] = []  # lines read and not given out, the first of them line _lineno at _offset
        self._lineno = 1
        self._offset = 0
        self._torn = b""  # the start of a line of standard input whose end is still to come

    def _fill(self, size: int) -> bool:
        """Read the lines of about ``size`` more bytes (from standard input, the lines there are: rows piped in one
        at a time are scored as they come); False at the end."""
        if self.path != "-":
            lines = self._fh.readlines(size)
        else:
            lines = []
            reader = cast(io.BufferedReader, self._fh)
            while not lines and (data := reader.read1(size)):
                lines = io.BytesIO(self._torn + data).readlines()
                self._torn = lines.pop() if not lines[-1].endswith(b"\n") else b""
            if not lines and self._torn:  # the last line, without a line end
                lines, self._torn = [self._torn], b""
        self._pending.extend(lines)
        return bool(lines)

    def _take(self, count: int) -> LineChunk:
        lines, self._pending = self._pending[:count], self._pending[count:]
        chunk = LineChunk(self.path, self._lineno, self._offset, lines)
        self._lineno += len(lines)
        self._offset += sum(map(len, lines))
        return chunk

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows from here on, read a line at a time as they are taken (the lines after stay for chunks)."""
        while self._pending or self._fill(1):
            yield from self._take(1).rows()

    def peek(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` rows, or those before the end or before a line that is not a row; left to be read."""
        rows: list[dict[str, Any]] = []
        lineno, offset, i = self._lineno, self._offset, 0
        while len(rows) < count and (i < len(self._pending) or self._fill(_BLOCK_BYTES)):
            raw = self._pending[i]
            try:
                rows.extend(jsonl_rows(self.path, [raw], lineno, offset))
            except DataError:
                break
            lineno, offset, i = lineno + 1, offset + len(raw), i + 1
        return rows

    def next_chunk(self, size: int) -> LineChunk | None:
        """The lines up to the first line end past ``size`` more bytes (at least one line); None at the end."""
        if not self._pending and not self._fill(size):
            return None
        return self._take(len(self._pending))

    def close(self) -> None:
        if self.path != "-":
            self._fh.close()

    def __enter__(self) -> "JsonlLines":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _read_jsonl(path: str) -> Iterator[dict[str, Any]]:
    with JsonlLines(path) as source:
        while (chunk := source.next_chunk(_BLOCK_BYTES)) is not None:
            yield from chunk.rows()


def _read_json(path: str) -> Iterator[dict[str, Any]]:
    with _open(path) as fh:
        data = fh.read()
    text_start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[text_start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        position = text_start + exc.start
        raise _not_utf8(path, data.count(b"\n", 0, position) + 1, position, data[position]) from None
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: invalid JSON ({json_error_reason(exc)} at column {exc.colno})") from None
    except ValueError as exc:
        raise DataError(f"{path}: unreadable JSON ({exc})") from None
    except RecursionError:
        raise DataError(f"{path}: {DEPTH_HINT}") from None
    if not isinstance(rows, list):
        raise DataError(f"{path}: expected a JSON array of objects, got {type(rows).__name__}")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(f"{path}: item {i} of the array is a {type(row).__name__}, not an object")
        yield row


def _read_csv(path: str) -> Iterator[dict[str, Any]]:
    dialect = "excel-tab" if path.lower().endswith(".tsv") else "excel"
    reader = csv.DictReader(_csv_lines(text for _, text in _lines(path)), dialect=dialect)
    try:
        if reader.fieldnames is None:
            return
        for row in reader:
            if None in row:
                raise DataError(
                    f"{path}:{reader.line_num}: more values than the {len(reader.fieldnames)} header columns"
                )
            if any(v is None for v in row.values()):
                raise DataError(
                    f"{path}:{reader.line_num}: fewer values than the {len(reader.fieldnames)} header columns"
                )
            yield dict(row)
    except csv.Error as exc:
        raise DataError(f"{path}:{reader.reader.line_num}: unreadable CSV ({exc})") from None  # the line read last


def _csv_lines(lines: Iterable[str]) -> Iterator[str]:
    """The lines as the csv module wants them (a file opened with ``newline=""``): a lone carriage return ends a
    line too."""
    for text in lines:
        if "\r" in text.rstrip("\r\n"):
            yield from io.StringIO(text, newline="")
        else:
            yield text


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

    A run killed mid-write (or stopped by a full disk) leaves at most one incomplete trailing line; it is
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
                record = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):  # not UTF-8, not JSON, or JSON Python does not read
                raise DataError(f"{path}:{lineno}: not a results line (invalid JSON); refusing to resume") from None
            if not isinstance(record, dict) or "scores" not in record:
                raise DataError(f"{path}:{lineno}: not a results line (no 'scores'); refusing to resume")
            records.append(record)
            good_bytes += len(raw)
    if good_bytes != os.path.getsize(path):
        with open(path, "r+b") as fh:
            fh.truncate(good_bytes)
    return records


def read_input(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[dict[str, Any]]:
    """Rows of a JSONL / JSON / CSV file (:func:`read_rows`) or of a Parquet file (``fmt="parquet"`` or a
    ``.parquet`` name; needs pyarrow)."""
    path = str(path)
    if fmt == "parquet" or (fmt is None and path.lower().endswith(".parquet")):
        if not os.path.exists(path):
            raise DataError(f"{path}: no such file")
        parquet = import_pyarrow("parquet input", "pyarrow.parquet")
        return iter(parquet.read_table(path).to_pylist())
    return read_rows(path, fmt)


def import_pyarrow(what: str, module: str = "pyarrow") -> Any:
    """``module`` (pyarrow or one of its modules), or a ConfigError saying that ``what`` needs pyarrow."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"{what} needs pyarrow, which is not installed; install it with: "
            "pip install 'scorers[ray]' (or 'scorers[spark]')"
        ) from None
