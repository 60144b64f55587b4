"""Statistics over results files.

:func:`compare`: results files of the same rows, each against a baseline, with
confidence intervals and paired significance tests (:mod:`scorers.stats.resample`).
"""

from __future__ import annotations

from .compare import Comparison, FigureComparison, SystemFigure, compare
from .metaeval import MetaEvaluation, meta_evaluate

__all__ = ["compare", "Comparison", "FigureComparison", "SystemFigure", "meta_evaluate", "MetaEvaluation"]
