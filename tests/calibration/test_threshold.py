"""scorers.calibration.threshold: the chosen threshold against a brute force with scikit-learn's measures."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

from scorers.calibration.threshold import MEASURES, choose_threshold
from scorers.errors import ConfigError, DataError

from .vectors import VECTORS

REFERENCE = {"kappa": cohen_kappa_score, "accuracy": accuracy_score, "f1": f1_score}


@pytest.mark.parametrize("name, scores, outcomes", VECTORS)
@pytest.mark.parametrize("measure", MEASURES)
def test_the_threshold_maximises_the_measure_on_dev_and_is_measured_on_test(
    name: str, scores: np.ndarray, outcomes: np.ndarray, measure: str
) -> None:
    half = len(scores) // 2
    dev, test = (scores[:half], outcomes[:half]), (scores[half:], outcomes[half:])
    choice = choose_threshold(dev, test, measure=measure, resamples=200, seed=1)
    reference = REFERENCE[measure]
    brute = {float(t): reference(dev[1], (dev[0] >= t).astype(float)) for t in np.unique(dev[0])}
    best = max(brute.values())
    assert choice.dev.value == pytest.approx(best, abs=1e-12)
    assert choice.threshold == min(t for t, v in brute.items() if abs(v - best) < 1e-12)
    passes = (test[0] >= choice.threshold).astype(float)
    assert choice.test.value == pytest.approx(reference(test[1], passes), abs=1e-12)
    assert choice.test.n == len(test[0]) and choice.dev.n == half
    interval = stats.bootstrap(
        (test[1], passes),
        lambda y, p: REFERENCE[measure](y, p),
        paired=True,
        vectorized=False,
        n_resamples=200,
        method="percentile",
        rng=np.random.default_rng(1),
    ).confidence_interval
    assert (choice.test.low, choice.test.high) == pytest.approx((interval.low, interval.high), abs=1e-12)


def test_the_threshold_on_the_judges_scale_and_in_the_json() -> None:
    # a 1..5 rating normalised: 0, .25, .5, .75, 1; people say yes from 4 up
    dev = ([0.0, 0.25, 0.5, 0.75, 1.0, 0.75, 0.5], [0, 0, 0, 1, 1, 1, 0])
    choice = choose_threshold(dev, dev, measure="kappa", scale=(1, 5), resamples=100)
    assert (choice.threshold, choice.on_scale) == (0.75, 4.0)
    data = choice.to_dict()
    assert data["test"]["split"] == "test" and data["dev"]["split"] == "dev"
    assert data["rule"] == "a row passes when its score is at least the threshold"
    assert "held-out test split: kappa 1.0000" in choice.table()


def test_undefined_everywhere_and_unknown_measure() -> None:
    with pytest.raises(DataError, match="undefined at every threshold"):
        choose_threshold(([0.5, 0.5], [1, 1]), ([0.5], [1]), measure="kappa")
    with pytest.raises(ConfigError, match="choose kappa, accuracy, f1"):
        choose_threshold(([0.5], [1]), ([0.5], [1]), measure="auc")
