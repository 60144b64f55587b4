"""Judges calibrated on the user's own labels: splits of labelled rows and few-shot example selection.

- :mod:`scorers.calibration.splits`: seeded train/dev/test splits, disjoint by rows or by groups.
"""

from __future__ import annotations

from .splits import DEFAULT_FRACTIONS, SPLIT_NAMES, Splits, check_disjoint, parse_fractions, split_rows

__all__ = ["DEFAULT_FRACTIONS", "SPLIT_NAMES", "Splits", "check_disjoint", "parse_fractions", "split_rows"]
