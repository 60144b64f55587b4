"""Issue 15, items 1 and 10, on the Parquet and engine paths: a lone surrogate (``"\\ud800"``, valid JSON) and an
unwritable results file give a clear DataError (exit 2), never a traceback that loses the run.

Parquet strings and Arrow strings are UTF-8, which cannot hold a lone surrogate: an input value holding one is
refused (naming the row and column, and saying to write JSONL, which keeps it); the JSON text the run adds (errors,
stats, metadata, a worker's result) holds it as a ``\\u`` escape, read back as the same text.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers import Scorer
from scorers.batch import BatchScorer
from scorers.cli import main
from scorers.engines.cluster import rows_table, score_rows
from scorers.errors import DataError, ScorerInputError
from scorers.fields import Field
from scorers.io import ParquetResultWriter
from scorers.testing import LoopbackLLM, Reply

from .conftest import WORKERS

pq = pytest.importorskip("pyarrow.parquet")

SURROGATE = "\ud800"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="ascii")  # \\ud800 as JSON escapes
    return path


def decoded(path: Path) -> list[dict[str, Any]]:
    """A Parquet results file's records as the JSONL file holds them (JSON text columns read, nulls dropped)."""
    records = pq.read_table(path).to_pylist()
    for record in records:
        for key in ("errors", "stats", "metadata_scores"):
            if record.get(key) is None:
                record.pop(key, None)
            else:
                record[key] = json.loads(record[key])
    return records


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------- -o OUT.parquet
@pytest.mark.parametrize(
    ("row", "where"),
    [
        ({"output": "b" + SURROGATE, "expected": "b"}, "column 'output'"),
        ({"output": "b", "expected": "b", "tags": [{"note": "x"}, {"note": SURROGATE}]}, "column 'tags'"),
        ({"output": "b", "expected": "b", "note" + SURROGATE: 1}, "column name 'note\\ud800'"),
    ],
    ids=["value", "nested", "column-name"],
)
def test_parquet_refuses_an_input_surrogate_and_keeps_the_rows_before(
    row: dict[str, Any], where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"output": "a", "expected": "a"}, row, {"output": "c", "expected": "c"}]
    data, out = write_jsonl(tmp_path / "in.jsonl", rows), tmp_path / "out.parquet"
    assert main(["run", str(data), "-s", "ExactMatch", "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"cannot write {out}: row 1, {where}" in err and "lone surrogate" in err
    assert "-o OUT.jsonl" in err and "holds the 1 row before it" in err
    assert decoded(out) == [{"output": "a", "expected": "a", "scores": {"ExactMatch": 1.0}}]
    # JSONL carries every value JSON can: the same rows, all scored
    assert main(["run", str(data), "-s", "ExactMatch", "-o", str(tmp_path / "out.jsonl"), "--no-progress"]) == 0
    assert [r["scores"]["ExactMatch"] for r in jsonl(tmp_path / "out.jsonl")] == [1.0, float(row["output"] == "b"), 1.0]


def test_parquet_writes_a_judges_surrogate_in_metadata_and_errors(
    llm_env: LoopbackLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The input is plain text; the judge's server sends a lone surrogate (a JSON escape) in its reasons and in
    an error: both are written, and read back as the JSONL run's records."""
    llm_env.script(Reply.error(400, "refused " + SURROGATE), match="Nice")  # first: every prompt holds "Paris"
    llm_env.script(Reply.choice("C", reasons="same " + SURROGATE), match="Paris")
    rows = [{"input": "Capital of France?", "output": city, "expected": "Paris"} for city in ("Paris", "Nice")]
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    base = ["run", str(data), "-s", "Factuality", "--metadata", "--no-progress", "--no-cache"]
    assert main([*base, "-o", str(tmp_path / "out.jsonl")]) == 0
    assert main([*base, "-o", str(tmp_path / "out.parquet")]) == 0, capsys.readouterr().err
    written, expected = decoded(tmp_path / "out.parquet"), jsonl(tmp_path / "out.jsonl")
    for record in (*written, *expected):  # two runs, two timings
        for metadata in record.get("metadata_scores", {}).values():
            metadata.pop("latency_s")
    assert written == expected
    assert written[0]["metadata_scores"]["Factuality"]["rationale"] == "same " + SURROGATE
    assert SURROGATE in written[1]["errors"]["Factuality"]["message"]


def test_parquet_json_columns_hold_a_surrogate_as_an_escape(tmp_path: Path) -> None:
    record = {
        "output": "a",
        "scores": {"X": None},
        "errors": {"X": {"type": "ScorerInputError", "message": SURROGATE}},
        "stats": {"X": [1.0, 2.0]},
        "metadata_scores": {"X": {"why": "é" + SURROGATE, SURROGATE: [SURROGATE]}},
    }
    with ParquetResultWriter(str(tmp_path / "out.parquet")) as writer:
        writer.write(record)
    assert decoded(tmp_path / "out.parquet") == [record]


def test_parquet_keeps_a_column_the_first_row_lacks(tmp_path: Path) -> None:
    with ParquetResultWriter(str(tmp_path / "out.parquet")) as writer:
        writer.write({"output": "a", "scores": {"X": 1.0}})
        writer.write({"output": "b", "note": "kept", "scores": {"X": 0.0}})
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == [
        {"output": "a", "scores": {"X": 1.0}, "note": None, "errors": None, "stats": None, "metadata_scores": None},
        {"output": "b", "scores": {"X": 0.0}, "note": "kept", "errors": None, "stats": None, "metadata_scores": None},
    ]


def test_parquet_refuses_a_column_of_two_types_at_its_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_jsonl(
        tmp_path / "in.jsonl",
        [{"output": "a", "expected": "a", "id": 1}, {"output": "b", "expected": "b", "id": "two"}],
    )
    out = tmp_path / "out.parquet"
    assert main(["run", str(data), "-s", "ExactMatch", "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"cannot write {out}: row 1, column 'id' holds text, where the rows before hold numbers" in err
    assert "-o OUT.jsonl" in err and "holds the 1 row before it" in err
    assert [r["id"] for r in decoded(out)] == [1]


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([{"id": None}, {"id": 1}, {"id": "two"}], "row 2, column 'id' holds text, where the rows before hold numbers"),
        ([{"id": 1}, {"id": True}], "row 1, column 'id' holds booleans, where the rows before hold numbers"),
        ([{"id": 1}, {"id": 10**20}], "row 1, column 'id' holds an integer beyond 64 bits"),
    ],
    ids=["after-null", "bool", "big-int"],
)
def test_parquet_refuses_what_a_column_cannot_hold_at_its_row(
    rows: list[dict[str, Any]], problem: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.parquet"
    with pytest.raises(DataError, match=rf"cannot write {out}: {problem}.*holds the {len(rows) - 1} rows? before it"):
        with ParquetResultWriter(str(out)) as writer:
            for row in rows:
                writer.write({**row, "scores": {"X": 1.0}})
    assert [r["id"] for r in decoded(out)] == [row["id"] for row in rows[:-1]]


def test_parquet_refuses_nested_values_of_two_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_jsonl(
        tmp_path / "in.jsonl",
        [{"output": "a", "expected": "a", "meta": {"n": 1}}, {"output": "b", "expected": "b", "meta": {"n": "two"}}],
    )
    out = tmp_path / "out.parquet"
    assert main(["run", str(data), "-s", "ExactMatch", "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"cannot write {out}: column 'meta' cannot be one Parquet column" in err and "-o OUT.jsonl" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_under_parquet_is_a_data_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [{"output": "a", "expected": "a"}] * 3)
    out = tmp_path / "out.parquet"
    out.symlink_to("/dev/full")
    assert main(["run", str(data), "-s", "ExactMatch", "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"error: cannot write {out}: No space left on device;" in err and "-o OUT.jsonl" in err


def test_an_unwritable_parquet_path_stops_the_run_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [{"output": "a", "expected": "a"}])
    out = tmp_path / "missing" / "out.parquet"
    assert main(["run", str(data), "-s", "ExactMatch", "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"error: cannot write {out}: No such file or directory" in err
    assert "scorer " not in err  # no summary: nothing was scored


# ---------------------------------------------------------------- engines
def test_engine_input_refuses_a_surrogate_naming_row_and_field() -> None:
    with pytest.raises(DataError, match=r"row 11: the field 'output' holds a lone surrogate .*--engine local"):
        rows_table([{"output": "a"}, {"output": "b" + SURROGATE}], start=10)
    with pytest.raises(DataError, match=r"row 0: the field name 'x\\ud800' holds a lone surrogate"):
        rows_table([{"output": "a", "x" + SURROGATE: 1}])


def test_an_engine_run_refuses_a_surrogate_before_the_engine_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(
        tmp_path / "in.jsonl", [{"output": "a", "expected": "a"}, {"output": SURROGATE, "expected": "b"}]
    )
    assert (
        main(
            [
                "run",
                str(data),
                "-s",
                "ExactMatch",
                "-o",
                str(tmp_path / "out.jsonl"),
                "--engine",
                "ray",
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err and "row 1: the field 'output' holds a lone surrogate" in err


def test_engine_input_carries_nan() -> None:  # NaN != NaN, yet Arrow gives it back as it was
    assert str(rows_table([{"output": "a", "x": float("nan")}]).column("x").to_pylist()) == "[nan]"


class Echo(Scorer):
    """Puts its output in its metadata, and in its error when asked to fail."""

    name = "Echo"
    fields = (Field("output", (str,)),)

    def _score(self, *, output: str, **_: Any) -> Any:
        if output.startswith("fail"):
            raise ScorerInputError("Echo", "output", f"cannot be {output}")
        return self.make_score(1.0, echo=output)


def test_a_workers_result_text_is_utf8_with_a_surrogate_in_metadata_and_errors() -> None:
    import pyarrow as pa

    texts = asyncio.run(
        score_rows(BatchScorer([Echo()]), [{"output": "ok" + SURROGATE}, {"output": "fail" + SURROGATE}])
    )
    assert pa.array(texts, pa.string()).to_pylist() == texts  # an Arrow string column carries them
    first, second = (json.loads(text) for text in texts)
    assert first["metadata_scores"]["Echo"]["echo"] == "ok" + SURROGATE
    assert second["errors"]["Echo"]["message"] == "Echo: field 'output' cannot be fail" + SURROGATE


def test_a_judges_surrogate_comes_back_from_the_engine(engine: str, llm_env: LoopbackLLM) -> None:
    llm_env.script(Reply.error(400, "refused " + SURROGATE), match="Nice")  # first: every prompt holds "Paris"
    llm_env.script(Reply.choice("C", reasons="same " + SURROGATE), match="Paris")
    rows = [{"input": "Capital of France?", "output": city, "expected": "Paris"} for city in ("Paris", "Nice") * 4]
    results = list(scorers.evaluate(rows, ["Factuality"], engine=engine, workers=WORKERS, ordered=True))
    assert [r.results["Factuality"].metadata["rationale"] for r in results[::2]] == ["same " + SURROGATE] * 4
    assert all(SURROGATE in r.errors["Factuality"]["message"] for r in results[1::2])
