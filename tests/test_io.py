import dataclasses
import datetime
import io
import json
import math
import os
import sys
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers.batch import RowResult
from scorers.errors import DataError
from scorers.io import (
    JsonlLines,
    LineChunk,
    ResultWriter,
    count_rows,
    escape_input_keys,
    escaped_key,
    input_row,
    json_lines,
    jsonl_rows,
    read_completed,
    read_rows,
    record_matches,
    utf8_json,
)
from scorers.score import Score


@pytest.mark.parametrize(
    "name,content,rows",
    [
        ("a.jsonl", '{"output": "x"}\n\n{"output": "y"}\n', [{"output": "x"}, {"output": "y"}]),
        ("a.json", '[{"output": "x"}, {"output": 1}]', [{"output": "x"}, {"output": 1}]),
        (
            "a.csv",
            'output,expected\nx,y\n"a,b",c\n',
            [{"output": "x", "expected": "y"}, {"output": "a,b", "expected": "c"}],
        ),
        ("a.tsv", "output\texpected\nx\ty\n", [{"output": "x", "expected": "y"}]),
    ],
)
def test_read_formats(tmp_path, name, content, rows):
    path = tmp_path / name
    path.write_text(content)
    assert list(read_rows(str(path))) == rows
    if not name.endswith(".json"):
        assert count_rows(str(path)) == len(rows)


@pytest.mark.parametrize(
    "name,content,message",
    [
        ("a.jsonl", '{"output": "x"}\n{"output": \n', r"a.jsonl:2: invalid JSON"),
        ("a.jsonl", '{"output": "x"}\n[1, 2]\n', r"a.jsonl:2: expected a JSON object"),
        ("a.jsonl", '{"output": "x} \n', r"a.jsonl:1: invalid JSON \(Unterminated string starting at column 12\)"),
        ("a.json", '[{"output": "x}]', r"invalid JSON \(Unterminated string starting at column 13\)"),
        ("a.json", '{"output": "x"}', r"expected a JSON array"),
        ("a.json", '[{"output": "x"}, 3]', r"item 1 of the array is a int"),
        ("a.csv", "output,expected\nx,y,z\n", r"a.csv:2: more values"),
        ("a.csv", "output,expected\nx\n", r"a.csv:2: fewer values"),
        ("a.txt", "x", r"cannot tell the format"),
        # values Python's readers cannot hold
        pytest.param(
            "a.jsonl",
            '{"output": "x"}\n{"n": ' + "1" * 5000 + "}\n",
            r"a.jsonl:2: unreadable JSON \(Exceeds the limit",
            id="huge-integer",
        ),
        pytest.param("a.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", r"a.jsonl:1: nested too deeply", id="deep-jsonl"),
        pytest.param("a.json", "[" * 100_000 + "]" * 100_000, r"a.json: nested too deeply", id="deep-json"),
        pytest.param(
            "a.csv",
            "output\n" + "x" * 200_000 + "\n",
            r"a.csv:2: unreadable CSV \(field larger than field limit",
            id="huge-csv-field",
        ),
    ],
)
def test_bad_files_name_the_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        list(read_rows(str(path)))


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        read_rows(str(tmp_path / "none.jsonl"))


def test_read_completed_cuts_a_torn_last_line(tmp_path):
    path = tmp_path / "out.jsonl"
    with ResultWriter(str(path)) as writer:
        writer.write({"id": 1, "scores": {"S": 1.0}})
        writer.write({"id": 2, "scores": {"S": 0.5}})
    with open(path, "a") as fh:
        fh.write('{"id": 3, "scor')
    records = read_completed(str(path))
    assert [r["id"] for r in records] == [1, 2]
    assert path.read_text().endswith('"S": 0.5}}\n')


def test_read_completed_refuses_foreign_files(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps({"id": 1}) + "\n")
    with pytest.raises(DataError, match="no 'scores'"):
        read_completed(str(path))


# ------------------------------------------------------------------ every JSON value is written and read back
#: Keys the results file uses, escaped ones, and near misses.
CLASHING_KEYS = [
    "scores",
    "errors",
    "stats",
    "metadata_scores",
    "input:scores",
    "input:input:errors",
    "input:stats",
    "input:",
    "input:id",
    "Scores",
    "scores ",
    "input:input:metadata_scores",
]
#: Any text, lone surrogates and control characters included.
TEXT = st.text(st.characters(exclude_categories=()), max_size=8)
KEYS = st.sampled_from(CLASHING_KEYS) | TEXT
NUMBERS = (
    st.integers()
    | st.integers(min_value=-(10**300), max_value=10**300)
    | st.floats()
    | st.sampled_from([1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -0.0, 2.0**53 + 1])
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=12,
)
ROWS = st.dictionaries(KEYS, JSON_VALUES, max_size=5)


def same_json(a, b) -> bool:
    """Equal as JSON values, NaN equal to NaN (JSON has no other notion of it)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(rows=st.lists(ROWS, min_size=1, max_size=4))
def test_every_json_row_is_written_read_back_and_resumed_as_it_was(rows):
    with tempfile.TemporaryDirectory() as folder:
        data, out = os.path.join(folder, "data.jsonl"), os.path.join(folder, "out.jsonl")
        with open(data, "w", encoding="ascii") as fh:  # the input: JSON text, surrogates as \ud800 escapes
            fh.writelines(json.dumps(row) + "\n" for row in rows)
        read = list(read_rows(data))
        assert same_json(read, rows)
        with ResultWriter(out) as writer:
            for i, row in enumerate(read):
                writer.write(RowResult(i, row, {"S": Score("S", 0.5, {}, (1, 2))}).to_record(with_metadata=True))
        with open(out, "rb") as fh:
            text = fh.read().decode("utf-8")  # the file is UTF-8
        assert text.count("\n") == len(rows)
        records = read_completed(out)
        assert len(records) == len(rows)
        for record, row in zip(records, rows):
            assert record["scores"] == {"S": 0.5} and record["stats"] == {"S": [1, 2]}
            assert same_json(input_row(record), row)
            assert record_matches(record, row)
            assert not record_matches(record, {**row, "another column": 1})


@given(row=ROWS)
def test_escaping_input_keys_is_reversible_and_never_clashes(row):
    escaped = escape_input_keys(row)
    assert not set(escaped) & {"scores", "errors", "stats", "metadata_scores"}
    assert len(escaped) == len(row)
    assert input_row({**escaped, "scores": {}, "errors": {}, "stats": {}, "metadata_scores": {}}) == row


def test_escaped_keys_get_exactly_one_more_prefix():
    assert [escaped_key(k) for k in CLASHING_KEYS] == [
        "input:scores",
        "input:errors",
        "input:stats",
        "input:metadata_scores",
        "input:input:scores",
        "input:input:input:errors",
        "input:input:stats",
        "input:",
        "input:id",
        "Scores",
        "scores ",
        "input:input:input:metadata_scores",
    ]


def test_a_record_keeps_the_input_columns_named_like_the_runs_keys():
    row = {"id": 7, "scores": "input", "errors": ["e"], "stats": {"S": [9, 9]}, "input:scores": 1}
    result = RowResult(0, row, {"S": Score("S", 1.0)})
    record = result.to_record(with_metadata=True)
    assert record == {
        "id": 7,
        "input:scores": "input",
        "input:errors": ["e"],
        "input:stats": {"S": [9, 9]},
        "input:input:scores": 1,
        "scores": {"S": 1.0},
        "metadata_scores": {"S": {}},
    }
    back = RowResult.from_record(record)
    assert input_row(record) == row and back.results["S"].stats is None and not back.errors


@pytest.mark.parametrize("depth", [100, 400])
def test_deeply_nested_values_are_written_and_resumed(tmp_path, depth):
    row = {"output": json.loads("[" * depth + '"\\ud800"' + "]" * depth), "expected": {"a": None}}
    out = str(tmp_path / "out.jsonl")
    with ResultWriter(out) as writer:
        writer.write(RowResult(0, row, {"S": Score("S", 0.0)}).to_record())
    [record] = read_completed(out)
    assert record_matches(record, row) and input_row(record) == row


def test_a_nan_in_the_input_matches_on_resume():
    assert record_matches({"v": float("nan"), "scores": {}}, {"v": float("nan")})
    assert not record_matches({"v": float("nan"), "scores": {}}, {"v": float("inf")})


# ------------------------------------------------------------------ input that is not UTF-8, or has a BOM
@pytest.mark.parametrize(
    "name,content,line,byte",
    [
        ("a.jsonl", b'{"output": "x"}\n{"output": "caf\xe9"}\n', 2, 0xE9),
        ("a.jsonl", b'\xef\xbb\xbf{"output": "\xff"}\n', 1, 0xFF),
        ("a.csv", b"output,expected\nx,y\n\x80,y\n", 3, 0x80),
        ("a.json", b'[{"output": "x"},\n {"output": "\xc3("}]', 2, 0xC3),
    ],
)
def test_text_that_is_not_utf8_names_line_and_byte_offset(tmp_path, name, content, line, byte):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError) as info:
        list(read_rows(str(path)))
    offset = content.index(bytes([byte]))
    assert str(info.value).startswith(f"{path}:{line}: not UTF-8 text (byte 0x{byte:02x} at byte offset {offset}); ")
    assert "convert the file" in str(info.value)


@pytest.mark.parametrize(
    "name,content",
    [
        ("a.csv", "id,output\n1,x\n"),
        ("a.jsonl", '{"id": "1", "output": "x"}\n'),
        ("a.json", '[{"id": "1", "output": "x"}]'),
    ],
)
def test_a_utf8_byte_order_mark_is_dropped(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8-sig")
    assert list(read_rows(str(path))) == [{"id": "1", "output": "x"}]


def test_a_csv_with_old_mac_line_ends_still_reads(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b'output,expected\r"x\r\ny",y\rz,w\r')
    assert list(read_rows(str(path))) == [{"output": "x\r\ny", "expected": "y"}, {"output": "z", "expected": "w"}]


def test_read_completed_refuses_a_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": 1, "scores": {}}\n{"id": "\xff", "scores": {}}\n')
    with pytest.raises(DataError, match="out.jsonl:2: not a results line"):
        read_completed(str(path))


# ------------------------------------------------------------------ a results file that cannot be written
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_a_data_error_that_says_what_is_left():
    with pytest.raises(
        DataError,
        match=r"^cannot write /dev/full: No space left on device; the rows written so far "
        r"are complete, continue with --resume once there is space$",
    ):
        with ResultWriter("/dev/full") as writer:
            writer.write({"scores": {}})
            writer.flush()


def test_an_output_that_cannot_be_opened_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match=r"^cannot write .*/no/such/dir/out.jsonl: No such file or directory$"):
        ResultWriter(str(tmp_path / "no" / "such" / "dir" / "out.jsonl"))


# ------------------------------------------------------------------ orjson reads and writes what json does
def json_dumps_lines(records) -> bytes:
    """What the results file held before orjson: each record through json.dumps (utf8_json), a line each."""
    return b"".join((utf8_json(record, default=str) + "\n").encode("utf-8") for record in records)


#: Floats whose repr orjson writes otherwise (below 1e-4), and NaN and the infinities, which it writes as null.
AWKWARD_FLOATS = st.sampled_from([1e-05, 2.1e-05, 1.5e-07, -3e-10, 1e16, 1.2345e-300, math.nan, math.inf, -math.inf])


@dataclasses.dataclass
class Point:
    x: int


class Text(str):
    pass


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(records=st.lists(st.dictionaries(KEYS, JSON_VALUES | AWKWARD_FLOATS, max_size=5), max_size=6))
def test_results_lines_are_the_bytes_json_dumps_writes(records):
    assert json_lines(records) == json_dumps_lines(records)


def test_values_orjson_does_not_write_as_json_does_are_written_by_json():
    records = [
        {"tuple": (1, 2.5), "nested": {"a": [{}, [], {"b": None}]}, "text": 'caf\u00e9 \u2028 \x00 "q" \\'},
        {"big": 2**70, "surrogate": "\ud800", "scores": {"S": 1e-07}},
        {"subclass": Text("x"), "float": True, "dataclass": Point(1), "when": datetime.date(2024, 1, 2)},
        {1: "a non-text key", "nan": math.nan},
        {"deep": json.loads("[" * 300 + "]" * 300)},
    ]
    assert json_lines(records) == json_dumps_lines(records)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(rows=st.lists(ROWS, min_size=1, max_size=5), ascii_only=st.booleans())
def test_jsonl_rows_read_what_json_reads(rows, ascii_only):
    text = "".join((json.dumps(row, ensure_ascii=ascii_only) if ascii_only else utf8_json(row)) + "\n" for row in rows)
    read = list(jsonl_rows("a.jsonl", text.encode("utf-8").splitlines(keepends=True)))
    assert same_json(read, rows)


@pytest.mark.parametrize(
    "line",
    [
        '{"n": 12345678901234567890}',  # beyond 64 bits: orjson would read a float
        '{"n": -9223372036854775809}',
        '{"n": NaN, "i": -Infinity}',
        '{"t": "\\ud800"}',
        '{"n": 1e400}',
        '  {"n": 1.5e-07}  \r',
    ],
)
def test_lines_orjson_does_not_read_as_json_does_are_read_by_json(line):
    assert same_json(list(jsonl_rows("a.jsonl", [line.encode() + b"\n"])), [json.loads(line)])


def test_a_chunk_names_the_line_and_byte_offset_it_starts_at(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": 2}\n{"a": "\xff"}\n')
    with JsonlLines(str(path)) as source:
        assert next(source.rows()) == {"a": 1}
        assert source.peek(5) == [{"a": 2}]  # up to the line that is not a row; nothing taken
        chunk = source.next_chunk(1 << 16)
        assert (chunk.lineno, chunk.offset, len(chunk.lines)) == (2, 9, 3)
        assert source.next_chunk(1 << 16) is None
    rows, error = chunk.read()
    assert rows == [{"a": 2}]
    assert str(error).startswith(f"{path}:4: not UTF-8 text (byte 0xff at byte offset {path.read_bytes().index(0xFF)})")


def test_a_chunk_of_lines_reads_as_the_whole_file_does(tmp_path):
    lines = [json.dumps({"i": i, "t": "x" * (i % 7)}) + "\n" for i in range(500)]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(lines), encoding="utf-8-sig")
    chunks = []
    with JsonlLines(str(path)) as source:
        while (chunk := source.next_chunk(100)) is not None:
            chunks.append(chunk)
    assert len(chunks) > 1 and [row["i"] for c in chunks for row in c.rows()] == list(range(500))
    assert chunks[-1].offset == len(path.read_bytes()) - sum(map(len, chunks[-1].lines))


def test_standard_input_is_read_as_it_comes_and_its_last_line_needs_no_line_end(monkeypatch):
    class Stdin:
        buffer = io.BufferedReader(io.BytesIO(b'{"a": 1}\n{"a": 2}\n{"a": 3}'))  # type: ignore[arg-type]

    monkeypatch.setattr(sys, "stdin", Stdin)
    with JsonlLines("-") as source:
        chunks = []
        while (chunk := source.next_chunk(1 << 16)) is not None:
            chunks.append(chunk)
    assert [row for chunk in chunks for row in chunk.rows()] == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert [(chunk.lineno, chunk.offset) for chunk in chunks] == [(1, 0), (3, 18)]  # the last line once it ended


def test_a_line_chunk_reads_its_rows_before_the_error():
    chunk = LineChunk("a.jsonl", 7, 0, [b'{"a": 1}\n', b"[1]\n", b'{"a": 2}\n'])
    rows, error = chunk.read()
    assert rows == [{"a": 1}] and str(error) == "a.jsonl:8: expected a JSON object per line, got list"


@pytest.mark.parametrize("writer", ["jsonl", "parquet"])
def test_a_results_file_is_locked_while_a_writer_has_it_open(tmp_path, writer):
    from scorers.errors import ConfigError
    from scorers.io import ParquetResultWriter, ResultWriter, open_results

    path = tmp_path / f"out.{writer}"
    path.write_bytes(b"earlier results\n")
    with ResultWriter(str(path)) if writer == "jsonl" else ParquetResultWriter(str(path)):
        for append in (False, True):
            with pytest.raises(ConfigError, match=f"is being written by another run \\(process {os.getpid()}\\)"):
                open_results(str(path), append=append)
    with open_results(str(path), append=True):  # released on close
        pass
    with open_results("/dev/null", append=False), open_results("/dev/null", append=False):  # a device is shared
        pass
