"""A judge calibrated on labelled rows, end to end: ``python -m scorers calibrate --scores`` and ``--threshold``.

Every labelled row is judged once (:func:`scorers.calibration.fewshot.score_splits`, through the engine's cache),
then :func:`calibrate_judge` fits a score map on the train split and measures it on the test split
(:func:`scorers.calibration.scores.calibrate_scores`), and :func:`threshold_for_judge` chooses a pass/fail
threshold on the dev split and measures it on the test split (:func:`scorers.calibration.threshold.choose_threshold`).
Rows the judge failed on are left out and counted (``failed_rows``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from ..errors import ConfigError, DataError
from ..runner import resolve_scorers
from .fewshot import prepare, score_splits
from .scores import ScoreCalibration, binary_outcomes, calibrate_scores, predicted_values
from .threshold import MEASURES, ThresholdChoice, choose_threshold

if TYPE_CHECKING:
    from ..base import Scorer
    from ..options import CalibrateOptions

__all__ = ["calibrate_judge", "threshold_for_judge", "split_outcomes"]


def split_outcomes(
    rows: Iterable[Mapping[str, Any]], judge: Scorer | str, options: CalibrateOptions
) -> tuple[Scorer, dict[str, tuple[np.ndarray, np.ndarray, str]], str, dict[str, Any]]:
    """Judge every labelled row once (:func:`scorers.calibration.fewshot.score_splits`) and return the judge, per
    split its scored rows' (forecasts, outcomes, what the forecast is), the outcome rule and the provenance (judge,
    label field, split, failed rows)."""
    (scorer,) = resolve_scorers([judge])
    if getattr(scorer, "calibration", None) is not None:
        raise ConfigError(f"{scorer.name} already maps its scores (calibration=): calibrate the judge without it")
    labelled, splits = prepare(rows, scorer, options)
    outcomes, rule = binary_outcomes(labelled.labels, labelled.scores, positive=options.positive, cut=options.cut)
    by_split = {}
    for name, judged in score_splits(scorer, labelled, splits, options).items():
        forecasts, read = predicted_values(judged.judge_scores, judged.metadata, options.positive)
        if not len(forecasts):
            raise DataError(f"calibrate: no row of the {name} split was scored ({len(judged.failures)} failed)")
        by_split[name] = (forecasts, outcomes[list(judged.indices)], read)
    provenance = {
        "judge": {"name": scorer.name, "signature": scorer.signature()},
        "label": options.label,
        "split": splits.to_dict(),
        "failed_rows": len(labelled.rows) - sum(len(f) for f, _, _ in by_split.values()),
    }
    return scorer, by_split, rule, provenance


def calibrate_judge(rows: Iterable[Mapping[str, Any]], judge: Scorer | str, **options: Any) -> ScoreCalibration:
    """``python -m scorers calibrate --scores METHOD``: judge the labelled ``rows`` once, fit the map ``scores``
    (``isotonic`` or ``platt``, required) on the train split and measure it on the test split
    (:func:`calibrate_scores`). The options are :class:`~scorers.options.CalibrateOptions`' (``label``,
    ``positive`` or ``cut``, ``bins``, ``bin_strategy``, ``split``, ``group``, ``seed``, ``resamples``...)."""
    from ..options import CalibrateOptions

    checked = CalibrateOptions(**options)
    if checked.scores is None:
        raise ConfigError("calibrate_judge: choose the map, scores='isotonic' or scores='platt'")
    _, by_split, rule, provenance = split_outcomes(rows, judge, checked)
    (x_train, y_train, read), (x_test, y_test, _) = by_split["train"], by_split["test"]
    result = calibrate_scores(
        (x_train, y_train),
        (x_test, y_test),
        method=checked.scores,
        bins=checked.bins,
        strategy=checked.bin_strategy,
        input=read,
        outcome=rule,
        resamples=checked.resamples,
        confidence=checked.confidence,
        seed=checked.seed,
    )
    result.provenance = provenance
    return result


def threshold_for_judge(rows: Iterable[Mapping[str, Any]], judge: Scorer | str, **options: Any) -> ThresholdChoice:
    """``python -m scorers calibrate --threshold MEASURE``: judge the labelled ``rows`` once, choose the threshold
    on the dev split and measure it on the test split (:func:`choose_threshold`; ``threshold`` names the measure).
    The options are :class:`~scorers.options.CalibrateOptions`' (``label``, ``positive`` or ``cut``, ``split``,
    ``group``, ``seed``, ``resamples``...); :attr:`ThresholdChoice.provenance` records the judge and the split."""
    from ..options import CalibrateOptions

    checked = CalibrateOptions(**options)
    if checked.threshold is None:
        raise ConfigError(f"threshold_for_judge: choose the measure, threshold= one of {', '.join(MEASURES)}")
    scorer, by_split, rule, provenance = split_outcomes(rows, judge, checked)
    scale = getattr(scorer, "scale", None)
    choice = choose_threshold(
        by_split["dev"][:2],
        by_split["test"][:2],
        measure=checked.threshold,
        outcome=rule,
        scale=None if scale is None else (scale.min, scale.max),
        resamples=checked.resamples,
        confidence=checked.confidence,
        seed=checked.seed,
    )
    choice.provenance = provenance
    return choice
