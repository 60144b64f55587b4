"""Aggregators turn a run's scores into summary figures; shards of a run merge into one.

Every aggregator has ``add(score)``, ``merge(other)`` and ``result()``. Merging
the aggregators of shards gives exactly the figures of one pass over all rows:
:class:`MeanAggregator` keeps exact sums (no rounding until ``result``), and
corpus figures (:class:`StatsAggregator`) come from summed per-row sufficient
statistics (``Score.stats``), as sacrebleu computes its corpus scores.

>>> from scorers.score import Score
>>> whole, left, right = MeanAggregator(), MeanAggregator(), MeanAggregator()
>>> for i, x in enumerate([0.1, 0.7, 0.2, 0.9]):
...     whole.add(Score("s", x)); (left if i < 2 else right).add(Score("s", x))
>>> left.merge(right).result() == whole.result()
True
>>> whole.result()["mean"]
0.475
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from .score import Score, ScoreColumn

__all__ = ["Aggregator", "MeanAggregator", "StatsAggregator"]

#: Scores are finite floats, so every score is a multiple of 2**-1074; sums are kept as exact integers in that unit.
_SHIFT = 1074


class Aggregator:
    """Accumulates one scorer's scores over a run into summary figures."""

    def add(self, score: Score) -> None:
        raise NotImplementedError

    def add_column(self, column: ScoreColumn) -> None:
        """:meth:`add` each Score of ``column`` (its failed rows are not scores: the caller counts its errors)."""
        for outcome in column:
            if isinstance(outcome, Score):
                self.add(outcome)

    def add_error(self, error: Mapping[str, Any]) -> None:
        """Take note of a row the scorer failed on (its error record); nothing by default."""

    def merge(self, other: "Aggregator") -> "Aggregator":
        """Fold ``other`` (the same scorer's aggregator over other rows) into this one; returns ``self``."""
        raise NotImplementedError

    def result(self) -> dict[str, Any]:
        raise NotImplementedError

    def _check_same(self, other: "Aggregator") -> None:
        if type(other) is not type(self):
            raise TypeError(f"cannot merge a {type(other).__name__} into a {type(self).__name__}")


class MeanAggregator(Aggregator):
    """n, mean, stdev (sample), min, max and skipped over the non-None scores.

    Sums are exact, so the figures do not depend on row order or on how the rows
    were split into shards; each figure is the correctly rounded float of the exact value.
    """

    def __init__(self) -> None:
        self.n = 0
        self.skipped = 0
        self._sum = 0  # sum of x, in units of 2**-1074
        self._sum_sq = 0  # sum of x*x (exact), in units of 2**-2148
        self.min: float | None = None
        self.max: float | None = None

    def add(self, score: Score) -> None:
        x = score.score
        if x is None:
            self.skipped += 1
            return
        self._add_value(x, 1)

    def _add_value(self, x: float, count: int) -> None:
        """Add ``count`` rows scoring ``x``."""
        numerator, denominator = x.as_integer_ratio()  # denominator = 2**k, k <= 1074
        shift = _SHIFT + 1 - denominator.bit_length()
        self.n += count
        self._sum += (numerator << shift) * count
        self._sum_sq += ((numerator * numerator) << (2 * shift)) * count  # square the small numerator, then scale
        if self.min is None or x < self.min:
            self.min = x
        if self.max is None or x > self.max:
            self.max = x

    def add_column(self, column: ScoreColumn) -> None:
        """Add a column's scores at once: the same exact sums, taken over its distinct values and their counts.

        >>> one, many = MeanAggregator(), MeanAggregator()
        >>> column = ScoreColumn("s", [0.1, 0.7, float("nan"), 0.1], {})
        >>> for outcome in column: one.add(outcome)
        >>> many.add_column(column); many.result() == one.result()
        True
        """
        if type(self).add is not MeanAggregator.add:  # a subclass reads more of each Score (its metadata)
            super().add_column(column)
            return
        import numpy as np

        values = column.values
        scored = values[~np.isnan(values)]
        self.skipped += len(values) - len(scored) - len(column.errors)
        distinct, counts = np.unique(scored, return_counts=True)
        for x, count in zip(distinct.tolist(), counts.tolist()):
            self._add_value(x, count)

    def merge(self, other: Aggregator) -> "MeanAggregator":
        self._check_same(other)
        assert isinstance(other, MeanAggregator)
        self.n += other.n
        self.skipped += other.skipped
        self._sum += other._sum
        self._sum_sq += other._sum_sq
        if other.min is not None and (self.min is None or other.min < self.min):
            self.min = other.min
        if other.max is not None and (self.max is None or other.max > self.max):
            self.max = other.max
        return self

    def result(self) -> dict[str, Any]:
        n = self.n
        mean = float(Fraction(self._sum, n << _SHIFT)) if n else None
        if n > 1:  # (n * sum(x^2) - sum(x)^2) / (n (n - 1)), exact until the final rounding
            variance = Fraction(n * self._sum_sq - self._sum * self._sum, (n * (n - 1)) << (2 * _SHIFT))
            stdev: float | None = math.sqrt(float(variance))
        else:
            stdev = 0.0 if n else None
        return {"n": n, "mean": mean, "stdev": stdev, "min": self.min, "max": self.max, "skipped": self.skipped}


class StatsAggregator(Aggregator):
    """The mean figures plus a corpus figure computed from the rows' summed ``Score.stats``.

    ``corpus(totals, rows)`` turns the element-wise sums into figures. A corpus
    figure over part of the rows would be wrong, so when some scored rows carry
    no statistics the corpus figures are ``None`` and ``corpus_unavailable`` says why.
    Sums of integers are exact; float statistics are summed as exact fractions.
    """

    def __init__(self, corpus: Callable[[Sequence[float], int], dict[str, Any]], keys: Sequence[str]) -> None:
        self._mean = MeanAggregator()
        self._corpus = corpus
        self._keys = tuple(keys)
        self._totals: list[Any] | None = None
        self._rows = 0
        self._without_stats = 0

    @property
    def corpus(self) -> Callable[[Sequence[float], int], dict[str, Any]]:
        """The callback ``corpus(totals, rows)`` that turns summed statistics into the corpus figures."""
        return self._corpus

    @property
    def keys(self) -> tuple[str, ...]:
        """The names of the corpus figures, the headline one first."""
        return self._keys

    def add(self, score: Score) -> None:
        self._mean.add(score)
        stats = score.stats
        if stats is None:
            self._without_stats += 1
            return
        self._rows += 1
        if self._totals is None:
            self._totals = [v if isinstance(v, int) else Fraction(v) for v in stats]
            return
        if len(stats) != len(self._totals):
            raise ValueError(f"{score.name}: statistics of {len(stats)} values, expected {len(self._totals)}")
        totals = self._totals
        for i, value in enumerate(stats):
            totals[i] += value if isinstance(value, int) else Fraction(value)

    def merge(self, other: Aggregator) -> "StatsAggregator":
        self._check_same(other)
        assert isinstance(other, StatsAggregator)
        self._mean.merge(other._mean)
        self._rows += other._rows
        self._without_stats += other._without_stats
        if other._totals is not None:
            if self._totals is None:
                self._totals = list(other._totals)
            else:
                self._totals = [a + b for a, b in zip(self._totals, other._totals)]
        return self

    def result(self) -> dict[str, Any]:
        figures = self._mean.result()
        figures["corpus_rows"] = self._rows
        if self._without_stats or self._totals is None:
            figures.update({key: None for key in self._keys})
            if self._without_stats:
                figures["corpus_unavailable"] = (
                    f"{self._without_stats} scored rows carry no sufficient statistics "
                    "(e.g. results written by an older version); a corpus figure over "
                    "part of the rows would be wrong"
                )
            return figures
        totals = [v if isinstance(v, int) else float(v) for v in self._totals]
        figures.update(self._corpus(totals, self._rows))
        return figures
