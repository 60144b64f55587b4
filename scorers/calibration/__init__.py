"""Judges calibrated on the user's own labels: splits of labelled rows and few-shot example selection.

- :mod:`scorers.calibration.splits`: seeded train/dev/test splits, disjoint by rows or by groups.
- :mod:`scorers.calibration.fewshot`: :func:`select_examples` (greedy few-shot selection on dev, figures on
  the held-out test split) and :func:`score_splits` (every labelled row judged once, by split).

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
