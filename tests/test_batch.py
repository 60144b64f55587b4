"""The engine-neutral unit: every batch kind scores like the local run, bit for bit, also after pickling."""

from __future__ import annotations

import asyncio
import json
import pickle
from typing import Any

import cloudpickle
import pytest

import scorers
from scorers.base import Scorer
from scorers.batch import RESULT_COLUMN, BatchScorer, result_record
from scorers.errors import ConfigError, ScorerInputError
from scorers.fields import text_field
from scorers.io import LineChunk, json_line
from scorers.score import Score, ScoreColumn
from scorers.testing import LoopbackLLM, Reply

ROWS = [
    {"id": 1, "output": "The cat sat on the mat.", "expected": "A cat sat on the mat."},
    {"id": 2, "output": "Paris", "expected": ["Paris", "Paris, France"]},
    {"id": 3, "output": "", "expected": "something"},
    {"id": 4, "output": "no reference"},
]
SCORERS = ["ExactMatch", "Levenshtein", "BLEU", "ROUGE-L"]


def local_records(rows: list[dict[str, Any]], names: list[str], **options: Any) -> list[dict[str, Any]]:
    return [r.to_record() for r in scorers.evaluate(rows, names, **options)]


def columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return {k: [row.get(k) for row in rows] for k in keys}


def test_a_dict_of_columns_scores_like_the_local_run() -> None:
    rows = ROWS[:3]  # a dict of columns has every column in every row
    out = BatchScorer(SCORERS)(columns(rows))
    records = [result_record(dict(zip(out, values))) for values in zip(*out.values())]
    assert records == local_records(rows, SCORERS)
    assert all(isinstance(v, str) for v in out[RESULT_COLUMN])


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_the_unit_travels_and_scores_the_same(dumps: Any) -> None:
    unit = BatchScorer(SCORERS, mapping={"output": "answer"})
    rows = [{"answer": r["output"], **{k: v for k, v in r.items() if k != "output"}} for r in ROWS]
    before = asyncio.run(unit.score(rows))
    copy = pickle.loads(dumps(unit))
    after = asyncio.run(copy.score(rows))
    assert [r.to_record() for r in after] == [r.to_record() for r in before]
    assert [r.to_record() for r in before] == local_records(rows, SCORERS, mapping={"output": "answer"})


def test_pyarrow_and_pandas_batches_score_like_the_local_run() -> None:
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    rows = ROWS[:3]
    unit = BatchScorer(SCORERS)
    table = pa.Table.from_pylist([{**r, "expected": json.dumps(r["expected"])} for r in rows])
    expected = local_records([{**r, "expected": json.dumps(r["expected"])} for r in rows], SCORERS)
    for batch in (table, table.to_batches()[0], table.to_pandas()):
        out = unit(batch)
        out_rows = out.to_pylist() if hasattr(out, "to_pylist") else out.to_dict("records")
        assert [result_record(r) for r in out_rows] == expected
    assert isinstance(unit(pd.DataFrame(rows[:1])), pd.DataFrame)


def test_a_configuration_error_stops_the_batch() -> None:
    unit = BatchScorer(["Factuality"])  # no API key in the test environment
    with pytest.raises(ConfigError, match="API key|OPENAI_API_KEY"):
        unit({"input": ["q"], "output": ["a"], "expected": ["b"]})
    with pytest.raises(ConfigError, match="differ in length"):
        BatchScorer(["ExactMatch"])({"output": ["a"], "expected": []})
    with pytest.raises(ConfigError, match="concurrency"):
        BatchScorer(["ExactMatch"], concurrency=0)


def test_judges_run_on_the_workers_own_loop(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("C", reasons="same")
    unit = pickle.loads(pickle.dumps(BatchScorer(["Factuality", "ExactMatch"], concurrency=4)))
    batch = {"input": ["q"] * 6, "output": [f"a{i}" for i in range(6)], "expected": ["a1"] * 6}
    records = [result_record(dict(zip(batch | {RESULT_COLUMN: 0}, values))) for values in zip(*unit(batch).values())]
    assert [r["scores"]["Factuality"] for r in records] == [1.0] * 6
    assert [r["scores"]["ExactMatch"] for r in records] == [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert len(llm_env.chat_requests) == 6


def test_input_columns_named_like_the_results_keys_are_kept_apart() -> None:
    rows = [
        {"output": "a", "expected": "a", "scores": "mine", "stats": [1, 2], "errors": None, "input:scores": 0},
        {"output": "b", "expected": "c", "scores": "also mine", "stats": [], "errors": "none", "input:scores": 1},
    ]
    out = BatchScorer(["ExactMatch", "BLEU"])(columns(rows))
    records = [result_record(dict(zip(out, values))) for values in zip(*out.values())]
    assert records == local_records(rows, ["ExactMatch", "BLEU"])
    assert [r["scores"]["ExactMatch"] for r in records] == [1.0, 0.0]
    assert [(r["input:scores"], r["input:stats"], r["input:errors"], r["input:input:scores"]) for r in records] == [
        ("mine", [1, 2], None, 0),
        ("also mine", [], "none", 1),
    ]
    assert all(len(r["stats"]["BLEU"]) == 12 and "errors" not in r for r in records)


def test_result_texts_are_utf8_even_when_an_error_message_holds_a_lone_surrogate() -> None:
    class Quoting(Scorer):
        name = "Quoting"
        fields = (text_field("output"),)

        def _score(self, *, output, **_):
            raise ScorerInputError(self.name, "output", f"is not a number: {output}")

    texts = BatchScorer([Quoting()])(columns([{"output": "é"}, {"output": "x\ud800"}]))[RESULT_COLUMN]
    assert [json.loads(t)["errors"]["Quoting"]["message"] for t in texts] == [
        "Quoting: field 'output' is not a number: é",
        "Quoting: field 'output' is not a number: x\ud800",
    ]
    assert "é" in texts[0] and "\\ud800" in texts[1]
    assert all(t.encode("utf-8") for t in texts)  # what an Arrow string column (UTF-8) can carry


# ------------------------------------------------------------------ JSONL lines in, results lines out
class Fussy(Scorer):
    """Fails on some rows, carries statistics and metadata: every key a results record can hold."""

    name = "Fussy"
    fields = (text_field("output"),)

    def _score(self, *, output, **_):
        if output.startswith("x"):
            raise ScorerInputError(self.name, "output", "starts with x")
        if output == "boom":
            raise RuntimeError("a bug")
        return Score(self.name, len(output) % 2 * 1.0, {"length": len(output)}, (len(output), 1))


LINE_ROWS = [
    {"id": 1, "output": "abc", "expected": "abc", "scores": "an input column", "input:stats": [1]},
    {"id": 2, "output": "xyz", "expected": "xyw"},
    {"id": 3, "output": "boom", "expected": None, "meta": {"n": 1e-05, "big": 2**70}},
    {"id": 4, "output": "caf\u00e9 \ud800", "expected": "caf\u00e9"},
    {"id": 5, "output": "ab", "nan": float("nan")},
]


@pytest.mark.parametrize("metadata", [False, True])
def test_scored_lines_are_the_bytes_the_local_run_writes(metadata: bool) -> None:
    names = ["ExactMatch", Fussy(), "Levenshtein", "BLEU"]
    lines = [(json.dumps(row) + "\n").encode() for row in LINE_ROWS]
    unit = BatchScorer(names)
    scored = unit.score_lines(LineChunk("a.jsonl", 1, 0, [lines[0], b"\n", *lines[1:]]), metadata=metadata)
    run = scorers.evaluate(LINE_ROWS, BatchScorer(names).scorers)
    results = run.collect()
    assert scored.lines == b"".join(json_line(r.to_record(with_metadata=metadata)) for r in results)
    assert (scored.rows, scored.failed, scored.renamed, scored.error) == (5, 3, ["scores", "input:stats"], None)
    assert scored.summary.to_dict()["scorers"] == run.summary.to_dict()["scorers"]
    record = json.loads(scored.lines.splitlines()[1])
    assert list(record["scores"]) == ["ExactMatch", "Levenshtein", "BLEU", "Fussy"]  # the failed one last


COLUMN_ROWS = [
    {"output": "3", "expected": 3},
    {"output": 2.5, "expected": "2.5"},
    {"output": "kitten", "expected": "sitting"},
    {"output": 0, "expected": 0, "scores": 1},
    {"output": "1e308", "expected": -1e308},
    {"output": "x"},
]


@pytest.mark.parametrize("metadata", [False, True])
@pytest.mark.parametrize("rows", [COLUMN_ROWS, [r for r in COLUMN_ROWS if isinstance(r["output"], str)]])
def test_columns_are_written_as_their_scores_would_be(metadata: bool, rows: list[dict[str, Any]]) -> None:
    """The columnar scorers' ScoreColumns (failed rows among them) give the bytes and summary of their Scores."""
    names = ["NumericDiff", "ExactMatch", "Levenshtein"]
    unit = BatchScorer(names)
    assert any(isinstance(s.score_batch(unit.argument_rows(s, rows)), ScoreColumn) for s in unit.scorers)
    scored = unit.score_lines(
        LineChunk("a.jsonl", 1, 0, [(json.dumps(r) + "\n").encode() for r in rows]), metadata=metadata
    )
    run = scorers.evaluate(rows, BatchScorer(names).scorers)
    results = run.collect()
    assert scored.lines == b"".join(json_line(r.to_record(with_metadata=metadata)) for r in results)
    assert scored.summary.to_dict()["scorers"] == run.summary.to_dict()["scorers"]


def test_a_line_that_is_not_a_row_ends_the_chunk_after_the_rows_before_it() -> None:
    chunk = LineChunk("a.jsonl", 10, 0, [b'{"output": "a", "expected": "a"}\n', b'{"output": \n', b'{"output": "b"}\n'])
    scored = BatchScorer(["ExactMatch"]).score_lines(chunk)
    assert scored.rows == 1 and scored.lines.count(b"\n") == 1
    assert str(scored.error).startswith("a.jsonl:11: invalid JSON")


def test_scored_lines_stop_at_a_configuration_error() -> None:
    chunk = LineChunk("a.jsonl", 1, 0, [b'{"input": "q", "output": "a", "expected": "b"}\n'])
    with pytest.raises(ConfigError, match="API key|OPENAI_API_KEY"):
        BatchScorer(["ExactMatch", "Factuality"]).score_lines(chunk)
