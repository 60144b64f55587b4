"""Score calibration: how far a judge's scores are from the rate at which people say yes, and a map that fixes it.

A judge's score (or, for a classifier that reports them, its probability of the positive choice) is
read as a forecast that a person labels the row positive; the outcome of a row is its label being the
``positive`` one, or its label score being at least ``cut``.

- :func:`reliability`: the reliability diagram's bins, equal to ``sklearn.calibration.calibration_curve``
  on the same data (``uniform``: ``bins`` equal-width bins on [0, 1]; ``quantile``: edges at the
  predictions' quantiles), with each bin's count; :attr:`Bins.ece` is the expected calibration error, the
  count-weighted mean gap ``|observed - mean predicted|`` over the non-empty bins; :func:`brier`.
- :func:`fit_map`: a monotone map from score to probability, fitted on the train split: ``isotonic``
  (``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)``, the fit by
  ``scipy.optimize.isotonic_regression``) or ``platt`` (``1 / (1 + exp(-(a + b·score)))``, a and b by
  maximum likelihood with 0/1 targets, scikit-learn's ``LogisticRegression(C=inf)``; Platt's smoothed
  targets are not used).
- :func:`calibrate_scores`: fit on the train split, measure on the held-out split: ECE and Brier score
  before and after the map, each with its percentile bootstrap interval (rows resampled, seeded), and the
  bins before and after; :meth:`ScoreCalibration.to_dict` is the saved file, which a judge applies with its
  ``calibration`` setting (:func:`load_calibration`).

>>> train = [0.9, 0.9, 0.8, 0.8, 0.2, 0.2, 0.1, 0.1]
>>> said_yes = [1, 0, 1, 0, 1, 0, 0, 0]  # a judge that is sure where people are not
>>> mapped = fit_map("isotonic", train, said_yes)
>>> [round(float(v), 3) for v in mapped.apply([0.15, 0.85])]
[0.25, 0.5]
>>> round(reliability(train, said_yes, bins=2).ece, 3)
0.225
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, DataError
from ..options import BIN_STRATEGIES, CALIBRATION_METHODS
from ..stats import agreement

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "METHODS",
    "STRATEGIES",
    "Bins",
    "reliability",
    "brier",
    "binary_outcomes",
    "predicted_values",
    "CalibrationMap",
    "IsotonicMap",
    "PlattMap",
    "fit_map",
    "map_from_dict",
    "ScoreCalibration",
    "calibrate_scores",
    "SavedCalibration",
    "load_calibration",
]

FORMAT = "scorers-calibration"
FORMAT_VERSION = 1
METHODS = CALIBRATION_METHODS
STRATEGIES = BIN_STRATEGIES

ArrayLike = Sequence[float] | np.ndarray


# ------------------------------------------------------------------ bins
@dataclass(frozen=True)
class Bins:
    """A reliability diagram: the bin ``edges`` (``count + 1`` of them) and, for each non-empty bin in order, its
    rows (``counts``), mean prediction and observed rate of positive outcomes."""

    strategy: str
    edges: tuple[float, ...]
    counts: tuple[int, ...]
    mean_predicted: tuple[float, ...]
    observed: tuple[float, ...]

    @property
    def n(self) -> int:
        return sum(self.counts)

    @property
    def ece(self) -> float:
        """Expected calibration error: ``sum(count · |observed - mean predicted|) / n`` over the bins."""
        gaps = np.abs(np.subtract(self.observed, self.mean_predicted))
        return float(np.dot(self.counts, gaps) / self.n)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "edges": list(self.edges),
            "n": self.n,
            "bins": [
                {"count": c, "mean_predicted": p, "observed": o}
                for c, p, o in zip(self.counts, self.mean_predicted, self.observed)
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Bins":
        rows = data["bins"]
        return cls(
            data["strategy"],
            tuple(data["edges"]),
            tuple(b["count"] for b in rows),
            tuple(b["mean_predicted"] for b in rows),
            tuple(b["observed"] for b in rows),
        )


def _checked(predicted: ArrayLike, outcomes: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    p, y = np.asarray(predicted, float), np.asarray(outcomes, float)
    if p.shape != y.shape or p.ndim != 1 or not len(p):
        raise DataError(f"predictions and outcomes must be non-empty and of one length, got {p.shape} and {y.shape}")
    if not (np.isfinite(p).all() and p.min() >= 0 and p.max() <= 1):
        raise DataError("predictions must lie in [0, 1]")
    if not np.isin(y, (0.0, 1.0)).all():
        raise DataError("outcomes must be 0 or 1 (a negative or a positive label)")
    return p, y


def reliability(
    predicted: ArrayLike, outcomes: ArrayLike, *, bins: int = 10, strategy: Literal["uniform", "quantile"] = "uniform"
) -> Bins:
    """The reliability diagram of predictions in [0, 1] against 0/1 outcomes, binned as
    ``sklearn.calibration.calibration_curve(outcomes, predicted, n_bins=bins, strategy=strategy)`` bins them
    (empty bins left out; a prediction on an inner edge goes to the bin below it).

    >>> diagram = reliability([0.1, 0.3, 0.8, 0.9], [0, 1, 1, 1], bins=2)
    >>> diagram.counts, [round(p, 3) for p in diagram.mean_predicted], diagram.observed
    ((2, 2), [0.2, 0.85], (0.5, 1.0))
    """
    if strategy not in STRATEGIES:
        raise ConfigError(f"bin strategy {strategy!r}: choose {' or '.join(STRATEGIES)}")
    if not isinstance(bins, int) or bins < 1:
        raise ConfigError(f"bins must be a positive integer, got {bins!r}")
    p, y = _checked(predicted, outcomes)
    edges = (
        np.percentile(p, np.linspace(0, 1, bins + 1) * 100) if strategy == "quantile" else np.linspace(0, 1, bins + 1)
    )
    ids = np.searchsorted(edges[1:-1], p)
    totals = np.bincount(ids, minlength=bins)
    sums = np.bincount(ids, weights=p, minlength=bins)
    positives = np.bincount(ids, weights=y, minlength=bins)
    full = totals != 0
    return Bins(
        strategy,
        tuple(float(e) for e in edges),
        tuple(int(c) for c in totals[full]),
        tuple(float(v) for v in sums[full] / totals[full]),
        tuple(float(v) for v in positives[full] / totals[full]),
    )


def brier(predicted: ArrayLike, outcomes: ArrayLike, axis: int = -1) -> Any:
    """The Brier score, ``mean((predicted - outcome)²)`` (over ``axis``: vectorised for the bootstrap).

    >>> float(brier([0.5, 1.0], [1, 1]))
    0.125
    """
    return np.mean((np.asarray(predicted, float) - np.asarray(outcomes, float)) ** 2, axis=axis)


# ------------------------------------------------------------------ outcomes and predictions
def binary_outcomes(
    labels: Sequence[Any], label_scores: Sequence[float], *, positive: str | None = None, cut: float = 0.5
) -> tuple[np.ndarray, str]:
    """Each row's outcome (1: positive) and the rule, in words: the label is ``positive``, or (without one) the
    label score is at least ``cut``.

    >>> binary_outcomes(["Y", "N"], [1.0, 0.0], positive="N")
    (array([0., 1.]), "label == 'N'")
    >>> binary_outcomes(["4", "2"], [0.75, 0.25], cut=0.5)[0].tolist()
    [1.0, 0.0]
    """
    if positive is not None:
        if positive not in {str(v) for v in labels}:
            raise DataError(f"positive label {positive!r} is no row's label")
        return np.array([float(str(v) == positive) for v in labels]), f"label == {positive!r}"
    return np.array([float(s >= cut) for s in label_scores]), f"label score >= {cut:g}"


def predicted_values(
    scores: ArrayLike, metadata: Sequence[Mapping[str, Any]], positive: str | None
) -> tuple[np.ndarray, str]:
    """What is calibrated, and its name: the probability of the ``positive`` choice where every judgment reports
    ``choice_probabilities`` holding it (a classifier drawing samples), else the judge's score.

    >>> predicted_values([1.0, 0.0], [{"choice_probabilities": {"Y": 0.8, "N": 0.2}}] * 2, "Y")
    (array([0.8, 0.8]), 'choice_probabilities.Y')
    >>> predicted_values([1.0, 0.0], [{}, {}], "Y")[1]
    'score'
    """
    found = [m.get("choice_probabilities") for m in metadata]
    if positive is not None and found and all(isinstance(p, Mapping) for p in found):
        return np.array([float(p.get(positive, 0.0)) for p in found]), f"choice_probabilities.{positive}"  # type: ignore[union-attr]
    return np.asarray(scores, float), "score"


# ------------------------------------------------------------------ maps
class CalibrationMap:
    """A monotone map from a judge's score (or choice probability) to the probability of a positive label."""

    method: str

    def apply(self, values: ArrayLike) -> np.ndarray:
        raise NotImplementedError

    def parameters(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, **self.parameters()}


@dataclass(frozen=True)
class IsotonicMap(CalibrationMap):
    """Piecewise linear through the points ``(x, y)`` (increasing x), constant beyond them (clipped)."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    method: str = field(default="isotonic", init=False)

    def apply(self, values: ArrayLike) -> np.ndarray:
        values = np.asarray(values, float)
        return np.interp(np.clip(values, self.x[0], self.x[-1]), self.x, self.y)

    def parameters(self) -> dict[str, Any]:
        return {"x": list(self.x), "y": list(self.y)}


@dataclass(frozen=True)
class PlattMap(CalibrationMap):
    """``1 / (1 + exp(-(a + b·score)))``."""

    a: float
    b: float
    method: str = field(default="platt", init=False)

    def apply(self, values: ArrayLike) -> np.ndarray:
        z = self.a + self.b * np.asarray(values, float)
        return np.exp(-np.logaddexp(0.0, -z))

    def parameters(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b}


def _isotonic(x: np.ndarray, y: np.ndarray) -> IsotonicMap:
    from scipy.optimize import isotonic_regression

    unique, inverse = np.unique(x, return_inverse=True)
    weights = np.bincount(inverse).astype(float)
    means = np.bincount(inverse, weights=y) / weights
    fitted = np.clip(isotonic_regression(means, weights=weights, increasing=True).x, 0.0, 1.0)
    keep = np.ones(len(fitted), bool)  # as scikit-learn: inner points on a flat stretch add nothing
    keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return IsotonicMap(tuple(map(float, unique[keep])), tuple(map(float, fitted[keep])))


def _platt(x: np.ndarray, y: np.ndarray) -> PlattMap:
    from scipy.optimize import minimize

    positives, negatives = x[y == 1], x[y == 0]
    if x.min() == x.max():
        raise DataError(f"platt: every train score is {x[0]:g}, so a slope cannot be fitted; use isotonic")
    if not (negatives.max() > positives.min() and positives.max() > negatives.min()):
        raise DataError(
            "platt: the train split's scores separate its labels (no score of one outcome lies between scores of "
            "the other), so the logistic fit has no maximum; use isotonic, or more rows"
        )
    design = np.column_stack([np.ones_like(x), x])

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = design @ theta
        return float(np.sum(np.logaddexp(0.0, z) - y * z)), design.T @ (np.exp(-np.logaddexp(0.0, -z)) - y)

    def hessian(theta: np.ndarray) -> np.ndarray:
        p = np.exp(-np.logaddexp(0.0, -(design @ theta)))
        return (design * (p * (1 - p))[:, None]).T @ design

    rate = y.mean()
    start = np.array([math.log(rate / (1 - rate)), 0.0])
    found = minimize(loss, start, jac=True, hess=hessian, method="trust-exact", options={"gtol": 1e-12})
    return PlattMap(float(found.x[0]), float(found.x[1]))


def fit_map(method: str, scores: ArrayLike, outcomes: ArrayLike) -> CalibrationMap:
    """The ``isotonic`` or ``platt`` map fitted to predictions and 0/1 outcomes (see the module doc); a
    :class:`~scorers.errors.DataError` when the rows hold one outcome only (nothing to calibrate against)."""
    if method not in METHODS:
        raise ConfigError(f"calibration method {method!r}: choose {' or '.join(METHODS)}")
    x, y = _checked(scores, outcomes)
    if y.min() == y.max():
        raise DataError(f"{method}: every train row has the same outcome ({int(y[0])}); a map needs both")
    return _isotonic(x, y) if method == "isotonic" else _platt(x, y)


def map_from_dict(data: Mapping[str, Any]) -> CalibrationMap:
    """A map from its :meth:`CalibrationMap.to_dict` (the ``map`` of a calibration file)."""
    method = data.get("method")
    try:
        if method == "isotonic":
            x, y = (tuple(float(v) for v in data[k]) for k in ("x", "y"))
            if not x or len(x) != len(y) or list(x) != sorted(x) or list(y) != sorted(y):
                raise ValueError("x and y must be increasing and of one length")
            return IsotonicMap(x, y)
        if method == "platt":
            return PlattMap(float(data["a"]), float(data["b"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"calibration map ({method}): {exc}") from None
    raise ConfigError(f"calibration map: method {method!r} is not one of {', '.join(METHODS)}")


# ------------------------------------------------------------------ fit and measure
@dataclass
class ScoreCalibration:
    """A map fitted on the train split and its figures on the held-out split (before and after the map)."""

    map: CalibrationMap
    input: str
    outcome: str
    train_n: int
    held_out: str
    before: Bins
    after: Bins
    figures: dict[str, agreement.Estimate]
    bootstrap: dict[str, Any]
    #: where the rows came from (the judge, the split, the rows left out), as
    #: :func:`scorers.calibration.fitting.calibrate_judge` records it
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, **provenance: Any) -> dict[str, Any]:
        """The calibration file (format ``scorers-calibration``, version 1); ``provenance`` adds its keys (judge,
        labels, split) to :attr:`provenance`'s."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "method": self.map.method,
            "map": self.map.to_dict(),
            "input": self.input,
            "outcome": self.outcome,
            **self.provenance,
            **provenance,
            "train_n": self.train_n,
            "held_out": self.held_out,
            "figures": {name: {**figure.to_dict(), "split": self.held_out} for name, figure in self.figures.items()},
            "bootstrap": self.bootstrap,
            "bins": {"before": self.before.to_dict(), "after": self.after.to_dict()},
        }

    def table(self) -> str:
        """The figures as the command line prints them, each with its split and n."""
        confidence = int(self.bootstrap["confidence"] * 100)
        lines = [
            f"score calibration ({self.map.method} map of {self.input}, fitted on {self.train_n} train rows; "
            f"outcome: {self.outcome})",
            f"every figure below is on the held-out {self.held_out} split only, before and after the map",
            "",
            f"{'figure':<14} {'value':>8}  {confidence}% CI{'':<14} {'n':>5}",
        ]
        for name, figure in self.figures.items():
            ci = "-" if figure.low is None else f"[{figure.low:.4f}, {figure.high:.4f}]"
            value = "-" if figure.value is None else f"{figure.value:.4f}"
            lines.append(f"{name:<14} {value:>8}  {ci:<20} {figure.n:>5}")
        for name, bins in (("before", self.before), ("after", self.after)):
            lines += ["", f"bins {name} ({bins.strategy}): count, mean predicted, observed"]
            lines += [f"  {c:>5}  {p:.3f}  {o:.3f}" for c, p, o in zip(bins.counts, bins.mean_predicted, bins.observed)]
        return "\n".join(lines)


def calibrate_scores(
    train: tuple[ArrayLike, ArrayLike],
    held_out: tuple[ArrayLike, ArrayLike],
    *,
    method: str = "isotonic",
    bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    input: str = "score",
    outcome: str = "label score >= 0.5",
    held_out_name: str = "test",
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> ScoreCalibration:
    """Fit ``method`` on ``train`` (predictions, outcomes) and measure ECE and Brier score on ``held_out``
    before and after the map, each with its percentile bootstrap interval (``resamples`` resamples of the
    held-out rows, ``seed``; the bins are drawn again in each resample).

    >>> train = ([0.9, 0.8, 0.8, 0.2, 0.1, 0.1], [1, 0, 1, 0, 1, 0])
    >>> result = calibrate_scores(train, ([0.9, 0.1, 0.8, 0.2], [1, 0, 0, 1]), bins=2, resamples=200)
    >>> round(result.figures["ece_before"].value, 3), round(result.figures["ece_after"].value, 3)
    (0.35, 0.042)
    """
    mapped = fit_map(method, *train)
    predicted, outcomes = _checked(*held_out)
    after = mapped.apply(predicted)
    drawn: dict[str, Any] = {"resamples": resamples, "confidence": confidence, "seed": seed}

    def ece(p: np.ndarray, y: np.ndarray) -> float:
        return reliability(p, y, bins=bins, strategy=strategy).ece

    figures = {
        "ece_before": agreement.with_ci(ece, predicted, outcomes, **drawn),
        "ece_after": agreement.with_ci(ece, after, outcomes, **drawn),
        "brier_before": agreement.with_ci(brier, predicted, outcomes, vectorized=True, **drawn),
        "brier_after": agreement.with_ci(brier, after, outcomes, vectorized=True, **drawn),
    }
    return ScoreCalibration(
        map=mapped,
        input=input,
        outcome=outcome,
        train_n=len(np.asarray(train[0])),
        held_out=held_out_name,
        before=reliability(predicted, outcomes, bins=bins, strategy=strategy),
        after=reliability(after, outcomes, bins=bins, strategy=strategy),
        figures=figures,
        bootstrap={"method": agreement.BOOTSTRAP_METHOD, **drawn, "over": f"{held_out_name} rows"},
    )


# ------------------------------------------------------------------ applied by a judge's setting
@dataclass(frozen=True)
class SavedCalibration:
    """A calibration file as a judge applies it: the map, what it reads, the judge it was fitted for."""

    map: CalibrationMap
    input: str
    signature: Mapping[str, Any]
    file: str | None = None

    @property
    def digest(self) -> str:
        """Short SHA-256 of the map and its input: the calibrated judge's signature holds it."""
        text = json.dumps({"map": self.map.to_dict(), "input": self.input}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def identity(self) -> dict[str, Any]:
        """What enters the calibrated judge's signature (never the file's path, which differs between machines)."""
        return {"method": self.map.method, "input": self.input, "hash": self.digest}

    def value(self, score: float, metadata: Mapping[str, Any]) -> float | None:
        """The raw value the map reads from a judgment (``None``: the judgment lacks it)."""
        if self.input == "score":
            return score
        probabilities = metadata.get("choice_probabilities")
        if not isinstance(probabilities, Mapping):
            return None
        return float(probabilities.get(self.input.split(".", 1)[1], 0.0))

    def check(self, judge: str, signature: Mapping[str, Any]) -> None:
        """A :class:`~scorers.errors.ConfigError` when ``signature`` (the judge's, without the calibration) is not
        the one the map was fitted for. Not compared: ``scorers_version`` and the template's file name (its
        hash is: a copied template file is the same judge)."""
        fitted, own = (_compared(s) for s in (self.signature, signature))
        if fitted != own:
            differ = sorted(k for k in fitted.keys() | own.keys() if fitted.get(k) != own.get(k))
            shown = ", ".join(f"{k}: fitted for {fitted.get(k)!r}, this judge {own.get(k)!r}" for k in differ)
            raise ConfigError(
                f"{judge}: calibration {self.file or 'map'} was fitted for another judge ({shown}); fit one for "
                "this judge with python -m scorers calibrate",
                scorer=judge,
            )


def _compared(signature: Mapping[str, Any]) -> dict[str, Any]:
    """A signature as :meth:`SavedCalibration.check` compares it (JSON values, without what it does not compare)."""
    kept: dict[str, Any] = json.loads(json.dumps(dict(signature), default=str))
    for key in ("scorers_version", "calibration"):
        kept.pop(key, None)
    if isinstance(kept.get("template"), dict):
        kept["template"].pop("file", None)
    return kept


def load_calibration(value: Any, judge: str) -> SavedCalibration:
    """A judge's ``calibration`` setting read: a calibration file's path, its parsed content (a mapping) or a
    :class:`SavedCalibration`; a :class:`~scorers.errors.ConfigError` naming ``judge`` when it is unusable."""
    if isinstance(value, SavedCalibration):
        return value
    file = None
    if isinstance(value, (str, os.PathLike)):
        file = os.fspath(value)
        try:
            with open(file, encoding="utf-8") as handle:
                value = json.load(handle)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{judge}: calibration {file}: {exc}", scorer=judge) from None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{judge}: calibration must be a file's path or its content, got {value!r}", scorer=judge)
    if value.get("format") != FORMAT or value.get("format_version") != FORMAT_VERSION:
        raise ConfigError(
            f"{judge}: calibration {file or ''} is not a {FORMAT} file of version {FORMAT_VERSION} "
            f"(format {value.get('format')!r}, version {value.get('format_version')!r})",
            scorer=judge,
        )
    signature = (value.get("judge") or {}).get("signature")
    if not isinstance(signature, Mapping):
        raise ConfigError(f"{judge}: calibration {file or ''} names no judge signature", scorer=judge)
    try:
        mapped = map_from_dict(value["map"])
    except (ConfigError, KeyError) as exc:
        raise ConfigError(f"{judge}: calibration {file or ''}: {exc}", scorer=judge) from None
    return SavedCalibration(mapped, str(value.get("input", "score")), signature, file and os.path.basename(file))
