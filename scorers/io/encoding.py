"""JSON text of results records, byte for byte as Python's ``json`` writes it, written by orjson where that gives the
same bytes (:func:`json_lines`), and as UTF-8 whatever the record holds (:func:`utf8_json`)."""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import re
from typing import Any, Callable, Iterable, Mapping, cast

import msgspec
import orjson

from ..errors import DataError

#: Why a value nested deeper than Python's JSON reader and writer go cannot be read or written.
DEPTH_HINT = "nested too deeply (Python's JSON reader allows about 1,000 levels)"


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
    return DataError(f"cannot write a row of {path if path not in (None, '-') else 'stdout'}: {DEPTH_HINT}")
