"""Every read and write of rows: JSONL, JSON, CSV or Parquet input, durable JSONL results with resume, and
Parquet results.

Input files are UTF-8 (a byte-order mark is dropped); other bytes are a
:class:`DataError` naming the file, line and byte offset.

A results record is the input row's fields plus the keys the run adds,
:data:`RESULT_KEYS`. An input key that would clash with them, any key matching
``^(input:)*(scores|errors|stats|metadata_scores)$``, is written with one more
``input:`` in front (``scores`` → ``input:scores``, ``input:scores`` →
``input:input:scores``), and reading the record back strips exactly one: the
renaming is lossless and reversible (:func:`escape_input_keys`, :func:`input_row`).

Every value JSON can carry is written and read back as it was, lone surrogates
(``"\\ud800"``) included: such a record is written with ``\\u`` escapes, so the
file stays UTF-8.

JSON lines are read and written with orjson (the separators of the lines written spaced by msgspec), byte for
byte as Python's ``json`` module reads and writes them (``json.dumps(record, ensure_ascii=False)``: ``", "`` and
``": "`` separators, floats as ``repr`` writes them, non-ASCII text as it is); a line or a record orjson does not
read or write as ``json`` does (NaN, an integer of 19 digits or more, a lone surrogate, a float below 1e-4, a type
orjson does not know) goes through ``json``.

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
>>> _ = open(path, "w").write('{"output": "a"}\\n{"output": "b"}\\n')
>>> [row["output"] for row in read_rows(path)]
['a', 'b']
>>> record = {**escape_input_keys({"scores": 3, "output": "a"}), "scores": {"ExactMatch": 1.0}}
>>> record
{'input:scores': 3, 'output': 'a', 'scores': {'ExactMatch': 1.0}}
>>> input_row(record)
{'scores': 3, 'output': 'a'}
"""

from __future__ import annotations

import bisect
import codecs
import contextlib
import csv
import errno
import functools
import importlib
import io
import itertools
import json
import os
import re
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Sequence, cast

import msgspec
import orjson

try:
    import fcntl
except ImportError:  # Windows: results files are not locked
    fcntl = None  # type: ignore[assignment]

from ._util import is_int, json_error_reason
from .errors import ConfigError, DataError

__all__ = [
    "read_rows",
    "read_input",
    "jsonl_rows",
    "LineChunk",
    "JsonlLines",
    "count_rows",
    "ResultWriter",
    "json_line",
    "json_lines",
    "too_deep_to_write",
    "utf8_json",
    "read_completed",
    "RESULT_KEYS",
    "INPUT_PREFIX",
    "escaped_key",
    "escape_input_keys",
    "input_row",
    "record_matches",
    "ParquetResultWriter",
    "import_pyarrow",
    "lone_surrogate",
]

FORMATS = ("jsonl", "json", "csv")
#: Keys the runner adds to a row in the results file.
RESULT_KEYS = ("scores", "errors", "stats", "metadata_scores")
#: What an input key that clashes with :data:`RESULT_KEYS` gets in front of it in a results record.
INPUT_PREFIX = "input:"
_CLASHING = re.compile(f"(?:{re.escape(INPUT_PREFIX)})*(?:{'|'.join(RESULT_KEYS)})")
#: Why a value nested deeper than Python's JSON reader and writer go cannot be read or written.
_DEPTH_HINT = "nested too deeply (Python's JSON reader allows about 1,000 levels)"


def escaped_key(key: str) -> str:
    """The name input key ``key`` has in a results record: one more ``input:`` if it matches
    ``(input:)*(scores|errors|stats|metadata_scores)``, else ``key`` itself."""
    return INPUT_PREFIX + key if _clashes(key) else key


def escape_input_keys(row: Mapping[str, Any]) -> dict[str, Any]:
    """An input row's fields as a results record holds them (keys through :func:`escaped_key`)."""
    return {escaped_key(key): value for key, value in row.items()}


def input_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """The input row a results record was written for: the run's keys dropped, escaped keys named as in the input."""
    return {
        key[len(INPUT_PREFIX) :] if _clashes(key) else key: value
        for key, value in record.items()
        if key not in RESULT_KEYS
    }


def _clashes(key: Any) -> bool:
    return isinstance(key, str) and _CLASHING.fullmatch(key) is not None


def record_matches(record: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """Whether results ``record`` was written for input ``row`` (the check of a resumed run).

    Compared as the JSON the writer writes, so values JSON holds but Python does not call equal (NaN) match,
    and values JSON cannot hold compare as the text they were written as.
    """
    return _canonical(input_row(record)) == _canonical(row)


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)


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
        raise DataError(f"{path}:{lineno}: {_DEPTH_HINT}") from None
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
        raise DataError(f"{path}: {_DEPTH_HINT}") from None
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


def utf8_json(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` as text UTF-8 can carry: non-ASCII characters as they are, unless the value
    holds a lone surrogate (``"\\ud800"``, valid JSON): then every one is a ``\\u`` escape, read back as the same text."""
    text = json.dumps(value, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, **options)
    return text


def json_line(record: Mapping[str, Any]) -> bytes:
    """``record`` as one line of UTF-8 JSON (:func:`utf8_json`; a value JSON cannot hold is written as its ``str``).

    >>> json_line({"output": "café", "scores": {"S": 1e-05}})
    b'{"output": "caf\\xc3\\xa9", "scores": {"S": 1e-05}}\\n'
    """
    return json_lines([record])


#: orjson writes what it does not write as ``json`` does to ``default`` (which refuses it, so ``json`` writes it):
#: subclasses of str, int, float, dict and list, dataclasses and datetimes.
_orjson_dumps = functools.partial(
    orjson.dumps,
    option=orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME,
)
#: orjson's compact JSON with ``json``'s separators, ", " and ": " (the text, strings and numbers as they are).
#: (msgspec's stubs give format one overload, of str; it gives bytes for bytes.)
_spaced = cast(Callable[[bytes], bytes], functools.partial(msgspec.json.format, indent=0))
#: How orjson writes a float that ``json`` writes otherwise: below 1e-4, ``0.00001`` or ``1.5e-7`` (``json``:
#: ``1e-05``, ``1.5e-07``). Found anywhere (in a text too): such a record is written by ``json``.
_SMALL_DECIMAL = b"0.0000"
_ONE_DIGIT_EXPONENT = re.compile(rb"[0-9]e-[0-9](?![0-9])")
_MARKS = bytes(0x30 if 0x30 <= byte <= 0x39 else byte if byte in b"nule-" else 0x20 for byte in range(256))


def json_lines(records: Iterable[Mapping[str, Any]]) -> bytes:
    """``records`` as lines of UTF-8 JSON, each exactly as :func:`utf8_json` writes it (written by orjson where
    that gives the same bytes, else by ``json``)."""
    records = records if isinstance(records, list) else list(records)
    if not records:
        return b""
    try:  # the common case, in C
        lines = list(map(_spaced, map(_orjson_dumps, records)))
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, an integer beyond 64 bits, another type
        lines = []
        for record in records:
            try:
                lines.append(_spaced(_orjson_dumps(record)))
            except TypeError:
                lines.append(_json_bytes(record))
    data = b"\n".join(lines)
    suspects = _suspects(data, lines)
    if suspects:
        for i in suspects:
            if _orjson_only_float(lines[i]) or not _finite(records[i]):
                lines[i] = _json_bytes(records[i])
        data = b"\n".join(lines)
    return data + b"\n"


def _suspects(data: bytes, lines: list[bytes]) -> list[int]:
    """The lines of ``data`` (``lines`` joined by newlines) that orjson may have written otherwise than ``json``:
    with a null (orjson writes NaN and infinities so), a float below 1e-4 as a decimal (0.00001), or a digit, "e-"
    and a digit (1.5e-7, where ``json`` writes 1.5e-07). Found in C, the last two on the bytes with every digit a
    zero and every other byte a space but those of "null" and "e-"."""
    marks = data.translate(_MARKS)
    found: set[int] = set()
    ends: list[int] | None = None
    for text, pattern in ((marks, b"null"), (marks, b"0e-0"), (data, _SMALL_DECIMAL)):
        at = text.find(pattern)
        while at >= 0:
            if ends is None:  # where each line ends (its newline)
                ends = list(itertools.accumulate(map((1).__add__, map(len, lines))))
            line = bisect.bisect_right(ends, at)
            found.add(line)
            at = text.find(pattern, ends[line])
    return sorted(found)


def _orjson_only_float(data: bytes) -> bool:
    return _SMALL_DECIMAL in data or _ONE_DIGIT_EXPONENT.search(data) is not None


def _json_bytes(record: Mapping[str, Any]) -> bytes:
    return utf8_json(record, default=str).encode("utf-8")


def _finite(value: Any) -> bool:
    """Whether no float in ``value`` (JSON of dicts, lists and tuples) is NaN or infinite."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            if item - item != 0.0:
                return False
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
    return True


def too_deep_to_write(path: str | None) -> DataError:
    """The error of a record nested too deeply to be written to results file ``path`` (None or ``-``: stdout)."""
    return DataError(f"cannot write a row of {path if path not in (None, '-') else 'stdout'}: {_DEPTH_HINT}")


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


def lone_surrogate(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """Where in ``row`` a text (a value or a key, at any depth) holds a lone surrogate, and the surrogate:
    ``("field 'a'", "\\ud800")``, ``("field 'a', at [1]['b']", ...)`` or ``("field name 'x\\udc00'", ...)``."""
    for key in row:
        char = _surrogate_in(key)
        if char is not None:
            return f"field name {key!r}", char
    stack: list[tuple[tuple[Any, ...], Any]] = [((key,), row[key]) for key in reversed(list(row))]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            char = _surrogate_in(value)
        elif isinstance(value, Mapping):
            char = next((c for c in map(_surrogate_in, value) if c is not None), None)
            stack.extend(((*path, key), value[key]) for key in reversed(list(value)))
        elif isinstance(value, (list, tuple)):
            char = None
            stack.extend(((*path, i), item) for i, item in reversed(list(enumerate(value))))
        else:
            continue
        if char is not None:
            inside = "".join(f"[{step!r}]" for step in path[1:])
            return f"field {path[0]!r}" + (f", at {inside}" if inside else ""), char
    return None


def _surrogate_in(text: Any) -> str | None:
    """The first lone surrogate of ``text`` (a str), or None."""
    if not isinstance(text, str) or text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None


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
