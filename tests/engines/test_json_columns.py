"""Issue 17: the cluster engines carry every row the local engine scores. A column whose values Arrow cannot hold
as one type (values of several types, objects with different keys, conversations as lists of messages, an
Anthropic dict or JSON text, a field some rows lack) travels as JSON text named in the schema's metadata and is
read back on the worker as the driver's values; a uniform column stays typed. Ray and Spark give the local run's
records, byte for byte."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers.cli import main
from scorers.engines.cluster import INDEX_COLUMN, JSON_COLUMNS, encoded_columns, rows_table, table_rows
from scorers.errors import DataError

from .conftest import WORKERS

pa = pytest.importorskip("pyarrow")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "conversations.jsonl"

#: Each column holds what one Arrow type cannot, but JSON can (and "plain" stays typed).
MIXED = [
    {"plain": "a", "value": 1, "meta": {"n": 1}, "calls": [{"name": "f"}], "big": 1, "num": 1},
    {"plain": "b", "value": "1", "meta": {"n": "two", "extra": [1, None]}, "calls": [], "big": 10**20, "num": 1.0},
    {"plain": None, "value": None, "meta": None, "calls": None, "big": None, "num": float("nan")},
    {"plain": "d", "value": [1, "x"], "meta": {}, "calls": [{"args": {"k": float("inf")}}], "big": -1, "num": True},
    {"plain": "e", "value": {"output": "a"}, "meta": {"b": 1, "a": 2}, "calls": [{"name": None}], "num": 2},
]


def exact(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (1 is not 1.0 nor True), NaN equal to NaN, keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(exact(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(exact, a, b))
    return bool(a == b)


# ---------------------------------------------------------------- the table, without an engine
def test_mixed_columns_travel_as_json_and_come_back_exactly() -> None:
    table = rows_table(MIXED, start=5)
    assert encoded_columns(table.schema) == ["value", "meta", "calls", "big", "num"]
    assert table.schema.field("plain").type == pa.string()  # a uniform column stays typed
    assert table.column(INDEX_COLUMN).to_pylist() == [5, 6, 7, 8, 9]
    assert table.column("num").to_pylist()[2:4] == ["NaN", "true"]  # Python's JSON: read back by Python
    back = table_rows(table)
    assert exact(back, MIXED) and "big" not in back[4]  # a field the row lacked stays lacking
    # block by block, as the workers get them, without the metadata (Spark drops it): the list the driver passes
    stripped = table.replace_schema_metadata(None)
    assert exact(
        [row for batch in stripped.to_batches(2) for row in table_rows(batch, encoded_columns(table.schema))], MIXED
    )


def test_uniform_columns_stay_typed_without_metadata() -> None:
    rows = [
        {"s": "a", "i": 1, "f": 0.5, "n": None, "l": [1, 2], "d": {"x": 1, "y": ["a"]}, "nan": float("nan")},
        {"s": None, "i": None, "f": float("inf"), "n": None, "l": [], "d": {"x": None, "y": []}, "nan": 1.5},
    ]
    table = rows_table(rows)
    assert table.schema.metadata is None and encoded_columns(table.schema) == []
    assert [str(t) for t in table.schema.types] == [
        "string",
        "int64",
        "double",
        "null",
        "list<item: int64>",
        "struct<x: int64, y: list<item: string>>",
        "double",
        "int64",
    ]
    assert exact(table_rows(table), rows)


@pytest.mark.parametrize(
    "rows",
    [
        [{"x": 1}, {"x": 2.5}],  # Arrow makes 1 a 1.0
        [{"x": {"b": 1, "a": 2}}, {"x": {"a": 3, "b": 4}}],  # Arrow orders the second's keys as the first's
        [{"x": {"a": 1}}, {"x": {"b": 2}}],  # Arrow gives each the other's key, as null
        [{"x": "a"}, {}],  # a field a row lacks
        [{"x": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": []}]}],
    ],
    ids=["int-float", "key-order", "keys", "lacking", "messages"],
)
def test_what_arrow_would_change_travels_as_json(rows: list[dict[str, Any]]) -> None:
    table = rows_table(rows)
    assert encoded_columns(table.schema) == ["x"]
    assert exact(table_rows(table), rows)


def test_the_metadata_names_columns_so_no_field_is_taken_for_one() -> None:
    rows = [{"scorers.json_columns": "a", "x": 1}, {"scorers.json_columns": "b", "x": "1"}]
    table = rows_table(rows)
    assert table.schema.metadata == {JSON_COLUMNS: b'["x"]'}
    assert exact(table_rows(table), rows)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [{"id": 1, "when": "today"}, {"id": 2, "when": __import__("datetime").date(2026, 12, 1)}],
            r"row 11: the field 'when' holds a date \(datetime.date\(2026, 12, 1\)\), which JSON cannot hold",
        ),
        (
            [{"meta": {"a": 1}}, {"meta": {"a": [{2: "x"}]}}],
            r"row 11: the field 'meta', at \['a'\]\[0\] holds the key 2 \(int, not text\), which JSON cannot hold",
        ),
        ([{"output": "a"}, {INDEX_COLUMN: 1}], r"row 11: the field name '_scorers_index' is the engines' own column"),
        ([{"output": "a"}, {1: "b"}], r"row 11: the field name 1 is not text"),
    ],
    ids=["date", "int-key", "index-column", "int-name"],
)
def test_what_json_cannot_hold_is_refused_naming_row_and_field(rows: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(DataError, match=message + ".*local engine"):
        rows_table(rows, start=10)


def test_a_date_in_a_uniform_column_stays_typed() -> None:
    import datetime

    rows = [{"when": datetime.datetime(2026, 12, 1, 20, tzinfo=datetime.timezone.utc)}, {"when": None}]
    assert table_rows(rows_table(rows)) == rows


@pytest.mark.parametrize(
    ("rows", "where"),
    [
        ([{"x": 1}, {"x": "a\ud800"}], "row 11: the field 'x' holds a lone surrogate"),
        ([{"x": {"a": 1}}, {"x": {"b": ["\udc00"]}}], r"row 11: the field 'x', at \['b'\]\[0\] holds a lone surrogate"),
        ([{"x": 1}, {"x": 2, "y\ud800": 1}], r"row 11: the field name 'y\\ud800' holds a lone surrogate"),
    ],
    ids=["json-column", "nested", "lacking-column-name"],
)
def test_a_surrogate_in_a_json_column_is_still_refused(rows: list[dict[str, Any]], where: str) -> None:
    with pytest.raises(DataError, match=where + ".*--engine local"):
        rows_table(rows, start=10)


# ---------------------------------------------------------------- on the engines
@pytest.mark.slow
def test_conversations_score_on_the_engine_as_locally(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/conversations.jsonl: lists of messages with different keys, an Anthropic dict and JSON text."""
    base = [
        "run",
        str(EXAMPLES),
        "-s",
        "ToolCallMatch",
        "-s",
        "TrajectoryMatch",
        "-p",
        "TrajectoryMatch.mode=unordered",
    ]
    base += ["--map", "output=conversation", "--map", "expected=expected_calls", "--metadata", "--no-progress"]
    assert main([*base, "-o", str(tmp_path / "local.jsonl")]) == 0
    capsys.readouterr()
    engine_run = ["--engine", engine, "--workers", "1", "--ordered", "-o", str(tmp_path / "engine.jsonl")]
    assert main([*base, *engine_run]) == 0, capsys.readouterr().err
    assert (tmp_path / "engine.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()


@pytest.mark.slow
def test_mixed_columns_score_on_the_engine_as_locally(engine: str) -> None:
    rows = [{"id": i, "output": row["value"], "expected": row["meta"], **row} for i, row in enumerate(MIXED * 8)]
    names = ["ExactMatch", "JSONDiff", "NumericDiff"]
    local = scorers.evaluate(rows, names, ordered=True)
    expected = [r.to_record() for r in local]
    run = scorers.evaluate(rows, names, engine=engine, workers=WORKERS, ordered=True)
    assert json.dumps([r.to_record() for r in run]) == json.dumps(expected)  # errors included; NaN as NaN
    assert run.summary.to_dict()["scorers"] == local.summary.to_dict()["scorers"]
    mapped = {"output": "num", "expected": "big"}  # 1 and 1.0, True, NaN; an integer beyond 64 bits, lacking
    local = scorers.evaluate(rows, ["NumericDiff", "ExactMatch"], mapping=mapped, ordered=True)
    run = scorers.evaluate(rows, ["NumericDiff", "ExactMatch"], mapping=mapped, engine=engine, workers=WORKERS)
    assert json.dumps(sorted((r.to_record() for r in run), key=lambda r: r["id"])) == json.dumps(
        [r.to_record() for r in local]
    )
