"""scorers.stats.agreement: each figure against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from scorers.stats import agreement

# (labels, verdicts, categories, weighted, kappa by hand)
KAPPA_CASES = [
    # po = 3/4; marginals 2,2 and 1,3: pe = (2·1 + 2·3)/16 = 1/2; κ = (3/4 - 1/2)/(1/2)
    ([0, 0, 1, 1], [0, 1, 1, 1], 2, False, 0.5),
    # complete disagreement on two balanced categories: po = 0, pe = 1/2
    ([0, 1], [1, 0], 2, False, -1.0),
    ([0, 1, 2, 2], [0, 1, 2, 2], 3, False, 1.0),
    # quadratic weights (i - j)²/4: observed 1/4 over 3 rows = 1/12; expected (1/9)(2 + 3/4 + 1) = 5/12; κ = 1 - 1/5
    ([0, 1, 2], [0, 2, 2], 3, True, 0.8),
    # the same rows unweighted: po = 2/3, pe = (1·1 + 1·0 + 1·2)/9 = 1/3; κ = (2/3 - 1/3)/(2/3)
    ([0, 1, 2], [0, 2, 2], 3, False, 0.5),
    # one step off on a 5-point scale costs little with quadratic weights: observed (1/16)/2 = 1/32;
    # marginals {0: 1, 4: 1} and {1: 1, 4: 1}: expected (1/4)(1/16 + 16/16 + 9/16 + 0) = 26/64; κ = 1 - (1/32)/(26/64)
    ([0, 4], [1, 4], 5, True, 1 - (1 / 32) / (26 / 64)),
]


@pytest.mark.parametrize("labels, verdicts, categories, weighted, expected", KAPPA_CASES)
def test_cohen_kappa_by_hand(
    labels: list[int], verdicts: list[int], categories: int, weighted: bool, expected: float
) -> None:
    assert agreement.cohen_kappa(labels, verdicts, categories=categories, weighted=weighted) == pytest.approx(expected)


def test_kappa_is_undefined_when_both_raters_use_one_category() -> None:
    estimate = agreement.with_ci(
        lambda x, y: agreement.cohen_kappa(x, y, categories=2),
        [1, 1, 1],
        [1, 1, 1],
        resamples=100,
        undefined="one category",
    )
    assert estimate.to_dict() == {"value": None, "ci": None, "n": 3, "reason": "one category"}


# (label scores, judge scores, accuracy of equal values, mean |diff| by hand)
SCORE_CASES = [
    ([1.0, 0.0, 0.5, 0.5], [1.0, 1.0, 0.0, 0.5], 0.5, (0 + 1 + 0.5 + 0) / 4),
    ([0.0, 0.25, 1.0], [0.0, 0.25, 1.0], 1.0, 0.0),
]


@pytest.mark.parametrize("labels, judged, accuracy, mad", SCORE_CASES)
def test_accuracy_and_mean_abs_diff(labels: list[float], judged: list[float], accuracy: float, mad: float) -> None:
    assert agreement.accuracy(labels, judged) == pytest.approx(accuracy)
    assert agreement.mean_abs_diff(labels, judged) == pytest.approx(mad)


# (x, y, spearman by hand, kendall tau-b by hand)
CORRELATION_CASES = [
    ([1, 2, 3, 4], [1, 2, 3, 4], 1.0, 1.0),
    ([1, 2, 3, 4], [4, 3, 2, 1], -1.0, -1.0),
    # ranks (1, 2, 3) vs (1, 3, 2): ρ = 1 - 6·2/(3·8) = 1/2; pairs: 2 concordant, 1 discordant: τ = 1/3
    ([0.0, 0.5, 1.0], [0.1, 0.9, 0.2], 0.5, 1 / 3),
    # a tie in y (ranks 1.5, 1.5, 3): ρ = Pearson of ranks = 0.8660; τ_b = (2 - 0)/sqrt(3 · 2)
    ([1, 2, 3], [0, 0, 1], np.sqrt(3) / 2, 2 / np.sqrt(6)),
]


@pytest.mark.parametrize("x, y, rho, tau", CORRELATION_CASES)
def test_correlations_by_hand(x: list[float], y: list[float], rho: float, tau: float) -> None:
    assert agreement.spearman(x, y) == pytest.approx(rho)
    assert agreement.kendall(x, y) == pytest.approx(tau)


def test_a_constant_side_makes_correlations_undefined_not_nan() -> None:
    estimate = agreement.with_ci(
        agreement.spearman, [1.0, 1.0, 1.0], [0.0, 0.5, 1.0], resamples=100, undefined="constant"
    )
    assert (estimate.value, estimate.low, estimate.high, estimate.reason) == (None, None, None, "constant")


def test_with_ci_is_scipy_percentile_bootstrap_paired_and_seeded() -> None:
    x = np.array([0.0, 0.4, 1.0, 1.0, 0.6, 0.0, 1.0, 0.4])
    y = np.array([0.0, 1.0, 1.0, 0.6, 0.6, 0.0, 1.0, 0.0])
    estimate = agreement.with_ci(agreement.mean_abs_diff, x, y, resamples=500, seed=7, vectorized=True)
    direct = stats.bootstrap(
        (x, y),
        agreement.mean_abs_diff,
        paired=True,
        vectorized=True,
        n_resamples=500,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert estimate.value == pytest.approx(np.mean(np.abs(x - y)))
    assert (estimate.low, estimate.high) == (direct.low, direct.high)
    assert estimate.low <= estimate.value <= estimate.high
    again = agreement.with_ci(agreement.mean_abs_diff, x, y, resamples=500, seed=7, vectorized=True)
    assert again == estimate


def test_an_interval_undefined_in_some_resamples_says_so() -> None:
    # 5 rows, one of them alone in its category: many resamples leave the labels constant
    estimate = agreement.with_ci(agreement.kendall, [0, 0, 0, 0, 1], [0, 0, 1, 0, 1], resamples=200, undefined="c")
    assert estimate.value is not None and estimate.low is None and estimate.high is None
    assert estimate.reason.startswith("no confidence interval: the figure is undefined in ")
    assert estimate.reason.endswith(" of 200 resamples (c)")


def test_no_rows_and_one_row() -> None:
    assert agreement.with_ci(agreement.accuracy, [], [], vectorized=True).reason == "no scored rows"
    one = agreement.with_ci(agreement.accuracy, [1], [1], vectorized=True)
    assert (one.value, one.low, one.reason) == (1.0, None, "a confidence interval needs at least 2 rows")


def test_confusion_and_per_label() -> None:
    labels, verdicts = [0, 0, 1, 2, 2, 2], [0, 1, 1, 2, 2, 0]
    assert agreement.confusion(labels, verdicts, categories=4).tolist() == [
        [1, 1, 0, 0],
        [0, 1, 0, 0],
        [1, 0, 2, 0],
        [0, 0, 0, 0],
    ]
    assert agreement.per_label(labels, verdicts, categories=4) == [
        {"precision": 1 / 2, "recall": 1 / 2, "support": 2, "predicted": 2},
        {"precision": 1 / 2, "recall": 1.0, "support": 1, "predicted": 2},
        {"precision": 1.0, "recall": 2 / 3, "support": 3, "predicted": 2},
        {"precision": None, "recall": None, "support": 0, "predicted": 0},  # nothing to divide: None, not 0
    ]


def _random_codes(seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    rng = np.random.default_rng(seed)
    categories = int(rng.integers(2, 8))
    n = int(rng.integers(1, 60))
    labels = rng.integers(0, categories, n)
    # judges that mostly agree, as in meta-eval, and some that do not: every cell of the matrix gets exercised
    verdicts = np.where(rng.random(n) < rng.random(), labels, rng.integers(0, categories, n))
    return labels, verdicts, categories


@pytest.mark.parametrize("seed", range(200))
def test_kappa_and_confusion_are_scikit_learns_numbers_exactly(seed: int) -> None:
    """numpy only, yet the very floats of scikit-learn (installed with the dev extra): equal, not approximately."""
    import warnings

    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    labels, verdicts, categories = _random_codes(seed)
    scale = list(range(categories))
    matrix = agreement.confusion(labels, verdicts, categories=categories)
    expected_matrix = confusion_matrix(labels, verdicts, labels=scale)
    assert matrix.dtype == expected_matrix.dtype and matrix.tolist() == expected_matrix.tolist()
    for weighted in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            expected = cohen_kappa_score(labels, verdicts, labels=scale, weights="quadratic" if weighted else None)
        got = agreement.cohen_kappa(labels, verdicts, categories=categories, weighted=weighted)
        assert (np.isnan(got) and np.isnan(expected)) or got == expected, (weighted, got, expected)


@pytest.mark.parametrize("labels, verdicts", [([1, 1, 1], [1, 1, 1]), ([0], [0]), ([2, 2], [2, 2])])
def test_kappa_is_nan_where_scikit_learn_gives_nan(labels: list[int], verdicts: list[int]) -> None:
    assert np.isnan(agreement.cohen_kappa(labels, verdicts, categories=3))
    assert np.isnan(agreement.cohen_kappa(labels, verdicts, categories=3, weighted=True))


def test_confusion_ignores_codes_outside_the_scale_as_scikit_learn_does() -> None:
    from sklearn.metrics import confusion_matrix

    labels, verdicts = [0, 1, 5, 1, -1], [0, 3, 1, 1, 0]
    assert (
        agreement.confusion(labels, verdicts, categories=2).tolist()
        == confusion_matrix(labels, verdicts, labels=[0, 1]).tolist()
        == [[1, 0], [0, 1]]
    )


def test_scorers_imports_no_scikit_learn() -> None:
    """Core installs without scikit-learn: meta-eval's kappa and confusion matrix must not need it."""
    import subprocess
    import sys

    code = (
        "import sys, scorers, scorers.stats.agreement as a; a.cohen_kappa([0, 1], [0, 1], categories=2); "
        "a.confusion([0], [0], categories=1); print('sklearn' in sys.modules)"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


@pytest.mark.parametrize(
    "samples, unchanged, pairwise",
    [
        ([["A", "A"], ["A", "B"]], 0.5, 0.5),
        # 3 samples: pairs per row 3; row 2 agrees on 1 of 3, row 3 on 0 of 3
        ([["Y", "Y", "Y"], ["Y", "N", "Y"], ["A", "B", "C"]], 1 / 3, (1 + 1 / 3 + 0) / 3),
        ([[0.5, 0.5, 0.5, 0.5]], 1.0, 1.0),
    ],
)
def test_stability(samples: list[list[object]], unchanged: float, pairwise: float) -> None:
    assert agreement.stability(samples) == pytest.approx({"unchanged": unchanged, "pairwise_agreement": pairwise})
