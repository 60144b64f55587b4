"""Threshold choice: where to cut a numeric judge's score so that its pass/fail agrees best with people.

A row passes when its score is at least the threshold; its outcome is positive when its label is (see
:func:`scorers.calibration.scores.binary_outcomes`). :func:`choose_threshold` tries every distinct
score of the development split as the threshold, keeps the one with the highest ``measure`` there
(ties: the lowest such threshold), and measures it on the test split with a percentile bootstrap
interval. Measures: ``kappa`` (Cohen's, pass/fail against the outcome), ``accuracy``, ``f1`` (of
passing as the positive outcome). The development figure picked the threshold, so it is optimistic;
the test figure is the one to quote.

The threshold is on the judge's score in [0, 1]; ``scale`` (a rating's or rubric's ``(min, max)``)
gives it on the judge's own scale too. It is a per-row cut: ``python -m scorers run --threshold NAME=X``
is another thing, the lowest *mean* score a run must reach.

>>> dev = ([0.2, 0.4, 0.6, 0.8, 0.9, 0.7], [0, 0, 1, 1, 1, 1])
>>> test = ([0.1, 0.5, 0.7, 0.9, 0.6, 0.2], [0, 0, 1, 1, 1, 0])
>>> choice = choose_threshold(dev, test, measure="accuracy", resamples=200)
>>> choice.threshold, choice.dev.value, choice.test.value
(0.6, 1.0, 1.0)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ConfigError, DataError
from ..options import THRESHOLD_MEASURES
from ..stats import agreement

__all__ = ["MEASURES", "ThresholdChoice", "choose_threshold"]

#: The agreement measures a threshold can maximise.
MEASURES = THRESHOLD_MEASURES

ArrayLike = Sequence[float] | np.ndarray


def _kappa(outcomes: np.ndarray, passes: np.ndarray) -> float:
    return agreement.cohen_kappa(outcomes.astype(int), passes.astype(int), categories=2)


def _f1(outcomes: np.ndarray, passes: np.ndarray) -> float:
    hits = float(np.sum((outcomes == 1) & (passes == 1)))
    wrong = float(np.sum(outcomes != passes))
    return float("nan") if hits + wrong == 0 else 2 * hits / (2 * hits + wrong)


def _accuracy(outcomes: np.ndarray, passes: np.ndarray) -> float:
    return float(np.mean(outcomes == passes))


_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "kappa": _kappa,
    "accuracy": _accuracy,
    "f1": _f1,
}
_UNDEFINED = {
    "kappa": "pass/fail and the outcomes all fall in one category",
    "accuracy": "no rows",
    "f1": "no row passes and no row is positive",
}


@dataclass
class ThresholdChoice:
    """The chosen threshold, its figure on the development split (which chose it) and on the test split."""

    measure: str
    threshold: float
    on_scale: float | None
    dev: agreement.Estimate
    test: agreement.Estimate
    candidates: list[dict[str, Any]]
    outcome: str
    splits: tuple[str, str]
    bootstrap: dict[str, Any]
    #: where the rows came from (the judge, the split), as :func:`scorers.calibration.fitting.threshold_for_judge`
    #: records it
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"measure", "threshold", "threshold_on_scale", "rule", "outcome", "dev", "test", "candidates",
        "bootstrap"}``; ``dev`` and ``test`` are figures (``value``, ``ci``, ``n``, ``split``)."""
        return {
            **self.provenance,
            "measure": self.measure,
            "threshold": self.threshold,
            "threshold_on_scale": self.on_scale,
            "rule": "a row passes when its score is at least the threshold",
            "outcome": self.outcome,
            "dev": {**self.dev.to_dict(), "split": self.splits[0], "note": "chose the threshold: optimistic"},
            "test": {**self.test.to_dict(), "split": self.splits[1]},
            "candidates": self.candidates,
            "bootstrap": self.bootstrap,
        }

    def table(self) -> str:
        """What the command line prints: the threshold, then the figures with their split and n."""
        scale = "" if self.on_scale is None else f" ({self.on_scale:g} on the judge's scale)"
        test = self.test
        ci = (
            ""
            if test.low is None
            else f", {int(self.bootstrap['confidence'] * 100)}% CI [{test.low:.4f}, {test.high:.4f}]"
        )
        value = "-" if test.value is None else f"{test.value:.4f}"
        reason = f" ({test.reason})" if test.reason else ""
        return "\n".join(
            [
                f"threshold for pass/fail by {self.measure} (outcome: {self.outcome}): score >= "
                f"{self.threshold:g}{scale}",
                f"  held-out {self.splits[1]} split: {self.measure} {value}{ci}, n={test.n}{reason}",
                f"  {self.splits[0]} split (chose it, optimistic): {self.measure} "
                f"{'-' if self.dev.value is None else f'{self.dev.value:.4f}'}, n={self.dev.n}",
            ]
        )


def choose_threshold(
    dev: tuple[ArrayLike, ArrayLike],
    test: tuple[ArrayLike, ArrayLike],
    *,
    measure: str = "kappa",
    outcome: str = "label score >= 0.5",
    scale: tuple[float, float] | None = None,
    splits: tuple[str, str] = ("dev", "test"),
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> ThresholdChoice:
    """The threshold on the judge's scores that maximises ``measure`` on ``dev`` (scores, 0/1 outcomes),
    measured on ``test`` with its percentile bootstrap interval (``resamples``, ``confidence``, ``seed``); see
    the module doc. A :class:`~scorers.errors.DataError` when no threshold gives a defined figure on ``dev``."""
    if measure not in MEASURES:
        raise ConfigError(f"threshold measure {measure!r}: choose {', '.join(MEASURES)}")
    function = _FUNCTIONS[measure]
    dev_scores, dev_outcomes = (np.asarray(v, float) for v in dev)
    test_scores, test_outcomes = (np.asarray(v, float) for v in test)
    tried = {float(t): function(dev_outcomes, (dev_scores >= t).astype(float)) for t in np.unique(dev_scores)}
    defined = {t: v for t, v in tried.items() if not np.isnan(v)}
    if not defined:
        raise DataError(
            f"threshold: {measure} is undefined at every threshold on the {splits[0]} split ({_UNDEFINED[measure]})"
        )
    best = max(defined.values())
    threshold = min(t for t, v in defined.items() if v == best)
    candidates = [{"threshold": t, "value": defined.get(t)} for t in tried]
    drawn: dict[str, Any] = {"resamples": resamples, "confidence": confidence, "seed": seed}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test_figure = agreement.with_ci(
            function, test_outcomes, (test_scores >= threshold).astype(float), undefined=_UNDEFINED[measure], **drawn
        )
    return ThresholdChoice(
        measure=measure,
        threshold=threshold,
        on_scale=None if scale is None else scale[0] + threshold * (scale[1] - scale[0]),
        dev=agreement.Estimate(best, None, None, len(dev_scores), "chose the threshold: no interval"),
        test=test_figure,
        candidates=candidates,
        outcome=outcome,
        splits=splits,
        bootstrap={"method": agreement.BOOTSTRAP_METHOD, **drawn, "over": f"{splits[1]} rows"},
    )
