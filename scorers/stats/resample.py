"""Resampling of per-row sufficient statistics: paired bootstrap, approximate randomisation, intervals.

One mechanism serves every figure, as in sacrebleu's ``significance`` module: a
figure is a function of the column sums of its rows' statistics. For BLEU, chrF
and TER the statistics are sacrebleu's segment statistics and the function is the
corpus score; for a plain mean the statistic of a row is its score and the
function divides the sum by the number of rows. A resample draws rows (bootstrap)
or swaps the two systems' rows (approximate randomisation), sums the drawn rows'
statistics and applies the function.

The draws follow sacrebleu 2.x exactly, so that the same seed gives the same
numbers as ``sacrebleu.significance.PairedTest``: bootstrap indices are
``default_rng(seed).choice(rows, (resamples, rows))``, summed in float32 for
corpus figures (sacrebleu's choice; integer counts stay exact below 2**24);
approximate randomisation draws ``integers(2, (trials, rows), dtype=bool)`` and
then, for the system's interval, bootstrap indices from the same generator.

>>> import numpy as np
>>> a = Figure.mean(np.array([0.0, 0.5, 1.0, 0.5]))
>>> b = Figure.mean(np.array([0.5, 0.5, 1.0, 1.0]))
>>> test = paired_bootstrap(a, b, observed=0.25, resamples=200, seed=1)
>>> 0 < test.p_value <= 1, test.system.resample_mean > 0.5
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = [
    "Figure",
    "Interval",
    "PairedResult",
    "bootstrap_indices",
    "interval",
    "p_value",
    "paired_bootstrap",
    "approximate_randomisation",
    "baseline_interval",
]


@dataclass(frozen=True)
class Figure:
    """One system's per-row statistics (rows × k) and the figure computed from their column sums.

    ``bootstrap_dtype`` is the type the bootstrap sums in: float32 for corpus
    statistics (as sacrebleu does), float64 for scores.
    """

    stats: np.ndarray
    score: Callable[[Any], Any]
    bootstrap_dtype: Any = np.float64

    @classmethod
    def mean(cls, scores: np.ndarray) -> "Figure":
        """The mean of per-row scores: each row's statistic is its score."""
        rows = len(scores)
        return cls(np.asarray(scores, dtype=np.float64).reshape(rows, 1), lambda totals: totals[0] / rows)

    @property
    def rows(self) -> int:
        return len(self.stats)

    def bootstrap(self, indices: np.ndarray) -> np.ndarray:
        """The figure on each bootstrap resample (one row of ``indices`` each)."""
        stats = self.stats.astype(self.bootstrap_dtype)
        return np.array([self.score(stats[drawn].sum(0)) for drawn in indices])

    def shuffled(self, other: "Figure", keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The figures of the two pseudo-systems of each trial: rows where ``keep`` is false trade places."""
        first, second = keep @ self.stats + ~keep @ other.stats, ~keep @ self.stats + keep @ other.stats
        return (np.array([self.score(totals) for totals in first]), np.array([self.score(totals) for totals in second]))


@dataclass(frozen=True)
class Interval:
    """sacrebleu's bootstrap estimate: the mean of the resampled figures and the half-width of their 95 % range."""

    resample_mean: float
    halfwidth: float

    @property
    def low(self) -> float:
        return float(self.resample_mean - self.halfwidth)

    @property
    def high(self) -> float:
        return float(self.resample_mean + self.halfwidth)


@dataclass(frozen=True)
class PairedResult:
    """A paired test of a system against the baseline: the p-value and the system's bootstrap interval."""

    p_value: float
    system: Interval | None


def bootstrap_indices(rng: np.random.Generator, rows: int, resamples: int) -> np.ndarray:
    """``resamples`` draws of ``rows`` row indices with replacement."""
    return rng.choice(rows, size=(resamples, rows), replace=True)


def interval(resampled: np.ndarray) -> Interval:
    """Mean and 95 % half-width of resampled figures: the sorted values at ``n // 40`` and ``n - n // 40 - 1``.

    >>> interval(np.arange(80.0))
    Interval(resample_mean=39.5, halfwidth=37.5)
    """
    ordered = np.sort(resampled)
    cut = len(ordered) // 40
    return Interval(ordered.mean().item(), (0.5 * (ordered[len(ordered) - cut - 1] - ordered[cut])).item())


def p_value(null: np.ndarray, observed: float) -> float:
    """``(1 + #{null > observed}) / (1 + len(null))``, sacrebleu's count, so that p-values equal its ``PairedTest``.

    One defined case more: when the observed statistic and every trial are exactly 0 (two systems
    identical on every row) there is no difference to test and p is 1, where sacrebleu's count
    would give ``1 / (trials + 1)`` and call identical systems significantly different.

    >>> p_value(np.zeros(9), 0.0), p_value(np.array([0.1, 0.3, 0.5]), 0.4), p_value(np.array([0.4, 0.5]), 0.4)
    (1.0, 0.5, 0.6666666666666666)
    """
    if observed == 0 and not np.any(null):
        return 1.0
    return (int(np.sum(null > observed)) + 1) / (len(null) + 1)


def baseline_interval(baseline: Figure, resamples: int, seed: int) -> Interval:
    """The baseline's bootstrap interval: the first ``resamples`` draws of ``default_rng(seed)``."""
    return interval(baseline.bootstrap(bootstrap_indices(np.random.default_rng(seed), baseline.rows, resamples)))


def paired_bootstrap(baseline: Figure, system: Figure, observed: float, resamples: int, seed: int) -> PairedResult:
    """Paired bootstrap (Koehn 2004, as sacrebleu's ``bs`` test): both systems on the same resampled rows.

    ``observed`` is the absolute difference of the two figures on all rows. The
    p-value compares it with the resampled absolute differences, centred on their mean.
    """
    indices = bootstrap_indices(np.random.default_rng(seed), baseline.rows, resamples)
    resampled = system.bootstrap(indices)
    differences = np.abs(resampled - baseline.bootstrap(indices))
    return PairedResult(p_value(differences - differences.mean(), observed), interval(resampled))


def approximate_randomisation(
    baseline: Figure, system: Figure, observed: float, trials: int, seed: int, resamples: int
) -> PairedResult:
    """Paired approximate randomisation (as sacrebleu's ``ar`` test): each row's two outputs swapped at random.

    The p-value is the share of ``trials`` whose absolute difference is at least
    ``observed``; the system's interval comes from ``resamples`` bootstrap draws
    taken after the swaps from the same generator (none when 0).
    """
    rng = np.random.default_rng(seed)
    keep = rng.integers(2, size=(trials, baseline.rows), dtype=bool)
    first, second = baseline.shuffled(system, keep)
    estimate = interval(system.bootstrap(bootstrap_indices(rng, baseline.rows, resamples))) if resamples else None
    return PairedResult(p_value(np.abs(first - second), observed), estimate)
