"""Agreement between a judge and human labels: pure functions over paired arrays.

Categorical figures take integer codes (the position of each label in the scale's
label order); score figures take the labels' and the judge's normalised scores.

- :func:`accuracy`: share of rows where the judge's verdict equals the label.
- :func:`mean_abs_diff`: mean ``|judge score - label score|`` over rows.
- :func:`cohen_kappa`: Cohen's kappa, unweighted for nominal choices, quadratic-weighted
  (by the rank of each category) for ordinal scales; numpy only, the arithmetic of
  scikit-learn's ``cohen_kappa_score`` step for step (the tests check equal floats).
- :func:`spearman`, :func:`kendall`: ``scipy.stats.spearmanr`` / ``kendalltau`` (tau-b).
- :func:`with_ci`: a figure and its bootstrap confidence interval
  (``scipy.stats.bootstrap``, percentile method, rows resampled in pairs, seeded).
- :func:`confusion` (scikit-learn's ``confusion_matrix`` with ``labels``, numpy only),
  :func:`per_label`, :func:`stability`.

A figure that is undefined on the data (a correlation where one side is constant,
a kappa where both raters use one category) is ``value=None`` with a ``reason``,
never a NaN.

>>> labels, verdicts = [0, 0, 1, 1], [0, 1, 1, 1]
>>> float(accuracy(labels, verdicts)), cohen_kappa(labels, verdicts, categories=2)
(0.75, 0.5)
>>> confusion(labels, verdicts, categories=2).tolist()
[[1, 1], [0, 2]]
>>> figure = with_ci(accuracy, labels, verdicts, resamples=200, seed=0, vectorized=True)
>>> figure.value, figure.low <= figure.value <= figure.high
(0.75, True)
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "Estimate",
    "accuracy",
    "mean_abs_diff",
    "cohen_kappa",
    "spearman",
    "kendall",
    "with_ci",
    "confusion",
    "per_label",
    "stability",
    "BOOTSTRAP_METHOD",
]

#: The ``method`` given to ``scipy.stats.bootstrap``: the percentile interval of the resampled figures.
#: Not BCa: its jackknife acceleration is undefined (NaN) for the discrete figures here whenever the
#: leave-one-out values tie, e.g. an accuracy of 1 or a kappa over few categories.
BOOTSTRAP_METHOD = "percentile"

ArrayLike = Sequence[float] | np.ndarray


@dataclass(frozen=True)
class Estimate:
    """A figure over ``n`` rows with its bootstrap interval ``[low, high]``; ``reason`` says why one is ``None``."""

    value: float | None
    low: float | None
    high: float | None
    n: int
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"value", "ci": [low, high] | None, "n"}`` plus ``"reason"`` when something is undefined."""
        out: dict[str, Any] = {
            "value": self.value,
            "ci": None if self.low is None or self.high is None else [self.low, self.high],
            "n": self.n,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def accuracy(labels: ArrayLike, verdicts: ArrayLike, axis: int = -1) -> Any:
    """Share of rows where the verdict equals the label (over ``axis``, for vectorised bootstrap).

    >>> float(accuracy([0, 1, 2], [0, 1, 1]))
    0.6666666666666666
    """
    return np.mean(np.asarray(labels) == np.asarray(verdicts), axis=axis)


def mean_abs_diff(label_scores: ArrayLike, judge_scores: ArrayLike, axis: int = -1) -> Any:
    """Mean absolute difference of normalised scores (over ``axis``).

    >>> float(mean_abs_diff([1.0, 0.0, 0.5], [1.0, 1.0, 0.0]))
    0.5
    """
    return np.mean(np.abs(np.asarray(label_scores, float) - np.asarray(judge_scores, float)), axis=axis)


def cohen_kappa(labels: ArrayLike, verdicts: ArrayLike, *, categories: int, weighted: bool = False) -> float:
    """Cohen's kappa of integer codes ``0..categories-1``; ``weighted``: quadratic weights ``(i - j)²``.

    NaN when undefined (both raters use a single, identical category); :func:`with_ci` reports that as a reason.

    >>> cohen_kappa([0, 1, 2], [0, 2, 2], categories=3, weighted=True)
    0.8
    """
    matrix = confusion(labels, verdicts, categories=categories).astype(np.float64)
    # scikit-learn 1.9's cohen_kappa_score, operation for operation (float64 throughout): equal floats, not close ones
    sum0, sum1 = matrix.sum(axis=0), matrix.sum(axis=1)
    total = sum0.sum()
    if total == 0:  # no row: undefined
        return float("nan")
    expected = np.outer(sum0, sum1) / total
    if weighted:
        w_mat = np.zeros((categories, categories), dtype=np.float64)
        w_mat += np.arange(categories)
        w_mat = (w_mat - w_mat.T) ** 2
    else:
        w_mat = np.ones((categories, categories), dtype=np.float64)
        np.fill_diagonal(w_mat, 0)
    denominator = np.sum(w_mat * expected)
    if denominator == 0:  # both raters use one and the same category
        return float("nan")
    return float(1 - np.sum(w_mat * matrix) / denominator)


def _correlation(name: str, x: ArrayLike, y: ArrayLike) -> float:
    from scipy import stats  # scipy.stats takes seconds to import: not at `import scorers`

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN
        return float(getattr(stats, name)(x, y).statistic)


def spearman(label_scores: ArrayLike, judge_scores: ArrayLike) -> float:
    """Spearman's rank correlation (``scipy.stats.spearmanr``); NaN when one side is constant.

    >>> spearman([0.0, 0.5, 1.0], [0.1, 0.2, 0.9])
    1.0
    """
    return _correlation("spearmanr", label_scores, judge_scores)


def kendall(label_scores: ArrayLike, judge_scores: ArrayLike) -> float:
    """Kendall's tau-b (``scipy.stats.kendalltau``); NaN when one side is constant.

    >>> round(kendall([0.0, 0.5, 1.0], [0.1, 0.9, 0.2]), 4)
    0.3333
    """
    return _correlation("kendalltau", label_scores, judge_scores)


def with_ci(
    statistic: Callable[..., Any],
    x: ArrayLike,
    y: ArrayLike,
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    vectorized: bool = False,
    undefined: str = "undefined on these rows",
) -> Estimate:
    """``statistic(x, y)`` and its percentile bootstrap interval, the rows resampled in pairs.

    ``scipy.stats.bootstrap(..., paired=True, method="percentile", n_resamples=resamples,
    confidence_level=confidence, rng=numpy.random.default_rng(seed))``; ``vectorized``: ``statistic``
    takes ``axis`` (as :func:`accuracy` and :func:`mean_abs_diff` do). A NaN figure is ``value=None``
    with ``undefined`` as the reason; an interval is ``None`` when the figure is undefined in some
    resamples (the reason says in how many) or when there are fewer than 2 rows.
    """
    from scipy import stats

    x, y = np.asarray(x), np.asarray(y)
    n = len(x)
    if n == 0:
        return Estimate(None, None, None, 0, "no scored rows")
    value = float(statistic(x, y))
    if np.isnan(value):
        return Estimate(None, None, None, n, undefined)
    if n < 2:
        return Estimate(value, None, None, n, "a confidence interval needs at least 2 rows")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples: counted and reported below instead
        result = stats.bootstrap(
            (x, y),
            statistic,
            paired=True,
            vectorized=vectorized,
            n_resamples=resamples,
            confidence_level=confidence,
            method=BOOTSTRAP_METHOD,
            rng=np.random.default_rng(seed),
        )
    undefined_in = int(np.isnan(result.bootstrap_distribution).sum())
    if undefined_in:
        return Estimate(
            value,
            None,
            None,
            n,
            f"no confidence interval: the figure is undefined in {undefined_in} of {resamples} resamples ({undefined})",
        )
    return Estimate(value, float(result.confidence_interval.low), float(result.confidence_interval.high), n)


def confusion(labels: ArrayLike, verdicts: ArrayLike, *, categories: int) -> np.ndarray:
    """Counts ``[label][verdict]`` of integer codes ``0..categories-1`` (rows: labels, columns: verdicts).

    >>> confusion([0, 2, 2], [0, 1, 2], categories=3).tolist()
    [[1, 0, 0], [0, 0, 0], [0, 1, 1]]
    """
    true, pred = np.asarray(labels), np.asarray(verdicts)
    if true.shape != pred.shape or true.ndim != 1:
        raise ValueError(f"labels and verdicts must be 1-D of one length, got shapes {true.shape} and {pred.shape}")
    keep = (true >= 0) & (true < categories) & (pred >= 0) & (pred < categories)  # as scikit-learn: others ignored
    codes = true[keep].astype(np.int64) * categories + pred[keep].astype(np.int64)
    return np.bincount(codes, minlength=categories * categories).astype(np.int64).reshape(categories, categories)


def per_label(labels: ArrayLike, verdicts: ArrayLike, *, categories: int) -> list[dict[str, Any]]:
    """Per category: ``precision`` (of the judge's verdicts of it), ``recall`` (of the rows labelled it),
    ``support`` (rows labelled it), ``predicted`` (verdicts of it); a precision or recall with nothing
    to divide is ``None``.

    >>> first, second, third = per_label([0, 0, 1], [0, 1, 1], categories=3)
    >>> first
    {'precision': 1.0, 'recall': 0.5, 'support': 2, 'predicted': 1}
    >>> second["precision"], third["precision"], third["recall"]
    (0.5, None, None)
    """
    matrix = confusion(labels, verdicts, categories=categories)
    out = []
    for k in range(categories):
        hits, support, predicted = int(matrix[k, k]), int(matrix[k].sum()), int(matrix[:, k].sum())
        out.append(
            {
                "precision": hits / predicted if predicted else None,
                "recall": hits / support if support else None,
                "support": support,
                "predicted": predicted,
            }
        )
    return out


def stability(verdicts: Sequence[Sequence[Any]]) -> dict[str, float]:
    """Over rows judged ``k >= 2`` times: ``unchanged`` (share of rows whose verdict never changed) and
    ``pairwise_agreement`` (mean over rows of the share of the row's ``k(k-1)/2`` sample pairs that agree).

    >>> stability([["A", "A", "A"], ["A", "B", "A"]])
    {'unchanged': 0.5, 'pairwise_agreement': 0.6666666666666666}
    """
    unchanged = [len(set(row)) == 1 for row in verdicts]
    pairwise = [np.mean([a == b for a, b in itertools.combinations(row, 2)]) for row in verdicts]
    return {"unchanged": float(np.mean(unchanged)), "pairwise_agreement": float(np.mean(pairwise))}
