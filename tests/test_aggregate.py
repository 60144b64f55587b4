"""Aggregators: exact figures, and shards that merge into the figures of one pass."""

import math
import random
import statistics
from fractions import Fraction

import pytest

from scorers import MeanAggregator, Score, StatsAggregator


def _values(seed: int, n: int) -> list[float | None]:
    rng = random.Random(seed)
    pool = [0.0, 1.0, 0.5, 1 / 3, 2 / 3, 0.1, 5e-324, 1 - 2**-53]
    return [
        None if rng.random() < 0.05 else (rng.choice(pool) if rng.random() < 0.3 else rng.random()) for _ in range(n)
    ]


def _fill(agg, values):
    for value in values:
        agg.add(Score("S", value))
    return agg


def _shards(values, shards, seed):
    """``values`` cut at ``shards - 1`` seeded random places."""
    bounds = sorted(random.Random(seed).sample(range(1, len(values)), shards - 1))
    return [values[a:b] for a, b in zip([0, *bounds], [*bounds, len(values)])]


def _exact(values):
    xs = [Fraction(v) for v in values if v is not None]
    n = len(xs)
    mean = sum(xs) / n
    variance = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return float(mean), math.sqrt(float(variance))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shards", [1, 2, 3, 7])
def test_merged_shards_equal_one_pass_exactly(seed, shards):
    values = _values(seed, 500)
    whole = _fill(MeanAggregator(), values).result()
    parts = _shards(values, shards, seed)
    merged = MeanAggregator()
    for part in reversed(parts):  # merge order does not matter either
        merged.merge(_fill(MeanAggregator(), part))
    assert merged.result() == whole


@pytest.mark.parametrize("seed", range(5))
def test_figures_are_the_correctly_rounded_exact_values(seed):
    values = _values(seed, 300)
    result = _fill(MeanAggregator(), values).result()
    mean, stdev = _exact(values)
    scored = [v for v in values if v is not None]
    assert result["mean"] == mean
    assert result["stdev"] == stdev  # sqrt of the correctly rounded variance
    assert result["stdev"] == pytest.approx(statistics.stdev(scored), rel=1e-12)
    assert (result["n"], result["skipped"]) == (len(scored), len(values) - len(scored))
    assert (result["min"], result["max"]) == (min(scored), max(scored))


def test_constant_scores_have_zero_spread_without_cancellation():
    result = _fill(MeanAggregator(), [0.1] * 10_001).result()
    assert result["mean"] == 0.1 and result["stdev"] == 0.0


def test_empty_and_single():
    assert MeanAggregator().result() == {"n": 0, "mean": None, "stdev": None, "min": None, "max": None, "skipped": 0}
    assert _fill(MeanAggregator(), [None, 0.25]).result()["stdev"] == 0.0


def test_merge_refuses_another_kind_of_aggregator():
    with pytest.raises(TypeError, match="cannot merge"):
        MeanAggregator().merge(StatsAggregator(lambda totals, rows: {}, ["corpus"]))


def _corpus(totals, rows):
    return {"corpus_ratio": totals[0] / totals[1], "rows_seen": rows}


def test_stats_aggregator_sums_statistics_and_merges():
    scores = [Score("S", 0.5, {}, (i, 10)) for i in range(10)]
    whole = StatsAggregator(_corpus, ["corpus_ratio"])
    left, right = StatsAggregator(_corpus, ["corpus_ratio"]), StatsAggregator(_corpus, ["corpus_ratio"])
    for i, score in enumerate(scores):
        whole.add(score)
        (left if i < 4 else right).add(score)
    assert left.merge(right).result() == whole.result()
    assert whole.result()["corpus_ratio"] == 45 / 100 and whole.result()["corpus_rows"] == 10


def test_stats_aggregator_refuses_a_corpus_figure_over_part_of_the_rows():
    agg = StatsAggregator(_corpus, ["corpus_ratio"])
    agg.add(Score("S", 0.5, {}, (1, 2)))
    agg.add(Score("S", 0.5))  # a row without statistics
    result = agg.result()
    assert (
        result["corpus_ratio"] is None
        and "1 scored rows carry no sufficient statistics" in result["corpus_unavailable"]
    )
    assert result["n"] == 2


def _column(values, errors=()):
    """A ScoreColumn of ``values`` (None: skipped), the rows of ``errors`` failed."""
    from scorers.errors import ScorerInputError
    from scorers.score import ScoreColumn

    return ScoreColumn(
        "S",
        [math.nan if v is None else v for v in values],
        {},
        {i: ScorerInputError("S", "output", "is required but was missing") for i in errors},
    )


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shards", [1, 2, 3, 7])
def test_columns_add_exactly_what_their_scores_add_in_any_shard_order(seed, shards):
    """A column's vectorised sums (over distinct values) equal one pass over its Scores, columns and rows mixed."""
    values = _values(seed, 500)
    whole = _fill(MeanAggregator(), values).result()
    parts = _shards(values, shards, seed)
    merged = MeanAggregator()
    for k, part in enumerate(reversed(parts)):
        shard = MeanAggregator()
        if k % 2:
            _fill(shard, part)
        else:
            shard.add_column(_column(part))
        merged.merge(shard)
    assert merged.result() == whole


def test_a_columns_failed_rows_are_neither_scores_nor_skipped():
    agg = MeanAggregator()
    agg.add_column(_column([0.5, None, None, 1.0], errors=[2]))
    assert agg.result() == {"n": 2, "mean": 0.75, "stdev": math.sqrt(0.125), "min": 0.5, "max": 1.0, "skipped": 1}


def test_an_aggregator_reading_each_score_gets_each_score_of_a_column():
    """A subclass that overrides ``add`` (a judge's reads the metadata) is given the column's Scores one by one."""

    class Counting(MeanAggregator):
        def __init__(self):
            super().__init__()
            self.seen = []

        def add(self, score):
            super().add(score)
            self.seen.append(score.score)

    agg = Counting()
    agg.add_column(_column([0.5, None, 1.0], errors=[1]))
    stats = StatsAggregator(lambda totals, rows: {"c": rows}, ["c"])
    stats.add_column(_column([0.5, 1.0]))
    assert agg.seen == [0.5, 1.0] and agg.result()["n"] == 2
    assert stats.result()["corpus_unavailable"].startswith("2 scored rows")
