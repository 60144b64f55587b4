"""Judges calibrated on the user's own labels: splits of labelled rows, few-shot example selection, score maps and
pass/fail thresholds, each fitted on one split and measured on a held-out one.

- :mod:`scorers.calibration.splits`: seeded train/dev/test splits, disjoint by rows or by groups.
- :mod:`scorers.calibration.fewshot`: :func:`select_examples` (greedy few-shot selection on dev, figures on
  the held-out test split) and :func:`score_splits` (every labelled row judged once, by split).
- :mod:`scorers.calibration.scores`: reliability bins, ECE and Brier score, and an isotonic or Platt map of the
  scores fitted on train and measured on test (:func:`~scorers.calibration.scores.calibrate_scores`).
- :mod:`scorers.calibration.threshold`: the pass/fail threshold chosen on dev and measured on test
  (:func:`~scorers.calibration.threshold.choose_threshold`).
- :mod:`scorers.calibration.fitting`: both, end to end from labelled rows and a judge, as
  ``python -m scorers calibrate --scores`` and ``--threshold`` run them.

The few-shot names are imported on first use: :mod:`scorers.options` reads the split defaults from here
without loading numpy or the judges.
"""

from __future__ import annotations

from typing import Any

from .splits import DEFAULT_FRACTIONS, SPLIT_NAMES, Splits, check_disjoint, parse_fractions, split_rows

__all__ = [
    "DEFAULT_FRACTIONS",
    "SPLIT_NAMES",
    "Splits",
    "check_disjoint",
    "parse_fractions",
    "split_rows",
    "FewShotSelection",  # noqa: F822
    "SplitScores",  # noqa: F822
    "select_examples",  # noqa: F822
    "score_splits",  # noqa: F822
    "prepare",  # noqa: F822
    "with_examples",  # noqa: F822
]

_FEWSHOT = ("FewShotSelection", "SplitScores", "select_examples", "score_splits", "prepare", "with_examples")


def __getattr__(name: str) -> Any:
    """The few-shot names, imported from :mod:`scorers.calibration.fewshot` when first asked for."""
    if name in _FEWSHOT:
        from . import fewshot

        return getattr(fewshot, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
