"""The columns a worker scores CPU-bound rows into (scorers.engines.cluster.score_columns) and the driver reads
back (batch_results): every row's scores, errors, statistics and metadata equal the local run's, for scorers
that return a ScoreColumn (shared metadata, errors as a sparse column), a list of Scores (per-row metadata,
corpus statistics) or fail on some rows; and the same through Ray and Spark."""

from __future__ import annotations

from typing import Any

import pytest

import scorers
from scorers.batch import BatchScorer

from .conftest import WORKERS

pytest.importorskip("pyarrow", reason="the engines need pyarrow: pip install 'scorers[ray]' or 'scorers[spark]'")

WORDS = "the a cat dog sat ran on under mat log quick brown fox jumps over lazy".split()
#: 300 pairs of short sentences; every seventh row lacks ``expected`` and one row's output is None: errors
ROWS: list[dict[str, Any]] = [
    {"output": " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 3 + i % 4))}
    | ({} if i % 7 == 6 else {"expected": " ".join(WORDS[(i + k) % len(WORDS)] for k in range(1, 3 + i % 3))})
    for i in range(300)
]
ROWS[11]["output"] = None
NUMBERS: list[dict[str, Any]] = [{"output": str(i % 9), "expected": str(i % 4)} for i in range(60)] + [
    {"output": "seven", "expected": "7"}
]
#: (scorers, rows): a ScoreColumn with shared metadata and errors (Levenshtein), lists with per-row metadata
#: (ROUGE-L) and statistics (BLEU), rows that fail (NumericDiff on text)
CASES = [
    (["Levenshtein", "ExactMatch"], ROWS),
    (["ROUGE-L", "BLEU"], ROWS),
    (["NumericDiff", "ExactMatch"], NUMBERS),
    (["ExactMatch", "Levenshtein", "ROUGE-L", "NumericDiff"], ROWS),
]


def records(run: Any) -> list[dict[str, Any]]:
    return [r.to_record(with_metadata=True) for r in sorted(run, key=lambda r: r.index)]


@pytest.mark.parametrize(("names", "rows"), CASES, ids=["+".join(names) for names, _ in CASES])
def test_columns_read_back_equal_the_local_run(names: list[str], rows: list[dict[str, Any]]) -> None:
    from scorers.engines.cluster import batch_results, rows_table, score_columns, split

    unit = BatchScorer(names)
    results = []
    for block in split(rows_table(rows, start=5), workers=2, size=40):  # several blocks, indices from 5
        results += batch_results(score_columns(unit, block), rows, 5)
    local = list(scorers.evaluate(rows, names, start=5))
    assert [r.index for r in results] == [r.index for r in local]
    assert records(results) == records(local) and any(r.errors for r in local)
    assert [r.results for r in results] == [r.results for r in local]  # Score objects, stats as tuples


def test_a_scorers_rows_metadata_is_each_its_own() -> None:
    from scorers.engines.cluster import batch_results, rows_table, score_columns

    table = rows_table([{"output": "a", "expected": "a"}] * 3)
    first, second, _ = batch_results(score_columns(BatchScorer(["Levenshtein"]), table), [{}] * 3, 0)
    first.results["Levenshtein"].metadata["mine"] = True
    assert "mine" not in second.results["Levenshtein"].metadata


@pytest.mark.slow
@pytest.mark.parametrize(("names", "rows"), CASES, ids=["+".join(names) for names, _ in CASES])
def test_an_engines_records_equal_the_local_run(engine: str, names: list[str], rows: list[dict[str, Any]]) -> None:
    local = scorers.evaluate(rows, names)
    expected = records(local)
    run = scorers.evaluate(rows, names, engine=engine, workers=WORKERS, ordered=True)
    assert records(run) == expected
    assert run.summary.to_dict()["scorers"] == local.summary.to_dict()["scorers"]
