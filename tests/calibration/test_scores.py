"""scorers.calibration.scores against scikit-learn on generated data: bins, ECE, Brier, isotonic and Platt maps."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss

from scorers.calibration import scores
from scorers.errors import ConfigError, DataError

from .vectors import VECTORS


@pytest.mark.parametrize("name, predicted, outcomes", VECTORS)
@pytest.mark.parametrize("strategy", scores.STRATEGIES)
@pytest.mark.parametrize("bins", [1, 5, 10])
def test_bins_equal_scikit_learns_calibration_curve(
    name: str, predicted: np.ndarray, outcomes: np.ndarray, strategy: Any, bins: int
) -> None:
    diagram = scores.reliability(predicted, outcomes, bins=bins, strategy=strategy)
    observed, mean_predicted = calibration_curve(outcomes, predicted, n_bins=bins, strategy=strategy)
    assert diagram.observed == tuple(observed) and diagram.mean_predicted == tuple(mean_predicted)
    # counts, independently: bin i holds edges[i] < p <= edges[i + 1] (the first from -inf, the last to +inf)
    inner = diagram.edges[1:-1]
    lows, highs = (-np.inf, *inner), (*inner, np.inf)
    counts = [int(np.sum((predicted > lo) & (predicted <= hi))) for lo, hi in zip(lows, highs)]
    assert diagram.counts == tuple(c for c in counts if c)
    gaps = np.abs(observed - mean_predicted)
    assert diagram.ece == pytest.approx(float(np.sum(np.array(diagram.counts) * gaps) / len(predicted)), abs=1e-12)


@pytest.mark.parametrize("name, predicted, outcomes", VECTORS)
def test_brier_equals_scikit_learn(name: str, predicted: np.ndarray, outcomes: np.ndarray) -> None:
    assert float(scores.brier(predicted, outcomes)) == pytest.approx(brier_score_loss(outcomes, predicted), abs=1e-12)


@pytest.mark.parametrize("name, predicted, outcomes", VECTORS)
def test_isotonic_map_equals_scikit_learn(name: str, predicted: np.ndarray, outcomes: np.ndarray) -> None:
    half = len(predicted) // 2
    fitted = scores.fit_map("isotonic", predicted[:half], outcomes[:half])
    reference = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(predicted[:half], outcomes[:half])
    np.testing.assert_allclose(fitted.x, reference.X_thresholds_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fitted.y, reference.y_thresholds_, rtol=0, atol=1e-12)
    held_out = np.concatenate([predicted[half:], [0.0, 1.0, -0.5, 1.5]])  # and beyond the train range: clipped
    np.testing.assert_allclose(fitted.apply(held_out), reference.predict(held_out), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name, predicted, outcomes", VECTORS)
def test_platt_map_equals_unpenalised_logistic_regression(
    name: str, predicted: np.ndarray, outcomes: np.ndarray
) -> None:
    fitted = scores.fit_map("platt", predicted, outcomes)
    assert isinstance(fitted, scores.PlattMap)
    reference = LogisticRegression(C=np.inf, tol=1e-12, max_iter=100_000).fit(predicted[:, None], outcomes)
    assert fitted.a == pytest.approx(reference.intercept_[0], abs=1e-6)
    assert fitted.b == pytest.approx(reference.coef_[0, 0], abs=1e-6)
    np.testing.assert_allclose(fitted.apply(predicted), reference.predict_proba(predicted[:, None])[:, 1], atol=1e-6)


@pytest.mark.parametrize(
    "predicted, outcomes, problem",
    [
        ([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], "separate its labels"),
        ([0.1, 0.5, 0.5, 0.9], [0, 0, 1, 1], "separate its labels"),  # quasi-separated: no maximum either
        ([0.9, 0.8, 0.1], [0, 0, 1], "separate its labels"),
        ([0.1, 0.8], [1, 1], "same outcome"),
        ([0.5, 0.5, 0.5], [1, 0, 1], "every train score is 0.5"),
    ],
)
def test_platt_refuses_data_without_a_maximum(predicted: list[float], outcomes: list[int], problem: str) -> None:
    with pytest.raises(DataError, match=problem):
        scores.fit_map("platt", predicted, outcomes)


def test_bad_input_is_refused() -> None:
    with pytest.raises(DataError, match=r"lie in \[0, 1\]"):
        scores.reliability([0.5, 1.2], [0, 1])
    with pytest.raises(DataError, match="0 or 1"):
        scores.reliability([0.5, 0.2], [0, 2])
    with pytest.raises(ConfigError, match="choose uniform or quantile"):
        scores.reliability([0.5], [1], strategy="equal")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="choose isotonic or platt"):
        scores.fit_map("beta", [0.5, 0.1], [1, 0])


def test_a_miscalibrated_judge_is_calibrated_on_held_out_rows() -> None:
    rng = np.random.default_rng(3)
    truth = rng.random(1200)
    outcomes = (rng.random(1200) < truth).astype(float)
    judge = np.sqrt(truth)  # too high everywhere in the middle
    train, held_out = (judge[:800], outcomes[:800]), (judge[800:], outcomes[800:])
    result = scores.calibrate_scores(train, held_out, method="isotonic", resamples=300, seed=5)
    before, after = result.figures["ece_before"], result.figures["ece_after"]
    assert (before.n, after.n, result.train_n) == (400, 400, 800)
    assert before.value > 0.1 and after.value < before.low  # type: ignore[operator]
    assert result.figures["brier_after"].value < result.figures["brier_before"].value  # type: ignore[operator]
    again = scores.calibrate_scores(train, held_out, method="isotonic", resamples=300, seed=5)
    assert again.figures == result.figures
    saved = result.to_dict(judge={"name": "J", "signature": {"scorer": "X:J"}})
    assert saved["format"] == "scorers-calibration" and saved["held_out"] == "test"
    assert scores.Bins.from_dict(saved["bins"]["after"]) == result.after
    assert "held-out test split only" in result.table()
    json.dumps(saved, allow_nan=False)


def test_a_saved_map_is_read_back_and_checked_against_the_judge(tmp_path: Any) -> None:
    result = scores.calibrate_scores(([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1]), ([0.3, 0.7], [0, 1]), resamples=100)
    signature = {"scorer": "LLMClassifier:Polite", "scorers_version": "1", "model": "m"}
    path = tmp_path / "map.json"
    path.write_text(json.dumps(result.to_dict(judge={"name": "Polite", "signature": signature})))
    saved = scores.load_calibration(str(path), "Polite")
    assert saved.map == result.map and saved.file == "map.json"
    saved.check("Polite", {**signature, "scorers_version": "2"})  # another release of scorers: the same judge
    with pytest.raises(ConfigError, match="fitted for another judge .*model: fitted for 'm', this judge 'n'"):
        saved.check("Polite", {**signature, "model": "n"})
    with pytest.raises(ConfigError, match="not a scorers-calibration file"):
        scores.load_calibration({"format": "scorers-meta-eval"}, "Polite")
    with pytest.raises(ConfigError, match="map.json: Expecting property name"):
        path.write_text("{")
        scores.load_calibration(str(path), "Polite")
