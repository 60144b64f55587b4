"""Every read and write of rows: JSONL, JSON, CSV or Parquet input (:mod:`scorers.io.readers`), durable JSONL
results with resume, and Parquet results (:mod:`scorers.io.writers`), the JSON text they are written as
(:mod:`scorers.io.encoding`) and the keys of a results record (:mod:`scorers.io.records`).

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

from .encoding import json_line, json_lines, too_deep_to_write, utf8_json
from .readers import (
    FORMATS,
    JsonlLines,
    LineChunk,
    count_rows,
    detect_format,
    import_pyarrow,
    jsonl_rows,
    read_completed,
    read_input,
    read_rows,
)
from .records import (
    INPUT_PREFIX,
    RESULT_KEYS,
    escape_input_keys,
    escaped_key,
    input_row,
    lone_surrogate,
    record_matches,
)
from .writers import ParquetResultWriter, ResultWriter, open_results

__all__ = [
    "read_rows",
    "read_input",
    "detect_format",
    "FORMATS",
    "jsonl_rows",
    "LineChunk",
    "JsonlLines",
    "count_rows",
    "ResultWriter",
    "open_results",
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
