"""Statistics over results files.

:func:`compare`: results files of the same rows, each against a baseline, with
confidence intervals and paired significance tests (:mod:`scorers.stats.resample`).
:func:`correlate`: how well scorers agree with human scores, at summary, system and
global level, with bootstrap intervals and tests between metrics (:mod:`scorers.stats.correlation`).
"""

from __future__ import annotations

from ..options import CompareOptions, CorrelateOptions, MetaEvalOptions
from .compare import Comparison, FigureComparison, SystemFigure, compare
from .correlation import Correlation, compute_correlation, correlate, read_scores
from .metaeval import MetaEvaluation, meta_evaluate

__all__ = [
    "compare",
    "CompareOptions",
    "Comparison",
    "FigureComparison",
    "SystemFigure",
    "correlate",
    "CorrelateOptions",
    "read_scores",
    "compute_correlation",
    "Correlation",
    "meta_evaluate",
    "MetaEvalOptions",
    "MetaEvaluation",
]
