"""Statistics over results files.

:func:`compare`: results files of the same rows, each against a baseline, with
confidence intervals and paired significance tests (:mod:`scorers.stats.resample`).
:func:`correlate`: how well scorers agree with human scores, at summary, system and
global level, with bootstrap intervals and tests between metrics (:mod:`scorers.stats.correlation`).
:func:`meta_evaluate`: how well a judge agrees with human labels (:mod:`scorers.stats.metaeval`).
:func:`rank`: a Bradley-Terry leaderboard from pairwise verdicts, with bootstrap intervals (:mod:`scorers.stats.ranking`).
:func:`jury_agreement`: how much several raters (a jury's jurors) agree, as Krippendorff's alpha
(:func:`krippendorff_alpha`) and Fleiss' kappa (:func:`fleiss_kappa`) with bootstrap intervals over rows,
and each juror's agreement with the jury and with labels (:mod:`scorers.stats.reliability`):

>>> from scorers.stats import jury_agreement, krippendorff_alpha
>>> round(krippendorff_alpha([[1, 2], [2, 2], [3, 3], [1, float("nan")]], "ordinal"), 4)
0.7778
>>> report = jury_agreement([[0, 0], [1, 1], [1, 0]], ["judge-a", "judge-b"], level="nominal", resamples=200)
>>> report.alpha.n, report.unanimous
(3, 0.6666666666666666)

Each takes its options as keyword arguments, declared once in a model (:class:`CompareOptions`,
:class:`CorrelateOptions`, :class:`MetaEvalOptions`, from :mod:`scorers.options`) that the command line
reads too, and is a chain of steps a caller may run one at a time:

- compare: :func:`read_results` per file, :func:`align_rows`, :func:`compare_rows`, :meth:`Comparison.table`;
- correlate: :func:`read_scores`, :func:`compute_correlation`, :meth:`Correlation.table`;
- meta_evaluate: :func:`sample_judges`, :func:`read_labels`, :func:`judge_rows`, :func:`agreement_report`,
  :meth:`MetaEvaluation.table`.
"""

from __future__ import annotations

from ..options import CompareOptions, CorrelateOptions, MetaEvalOptions, RankOptions
from .compare import Comparison, FigureComparison, SystemFigure, align_rows, compare, compare_rows, read_results
from .correlation import Correlation, ScoreTable, compute_correlation, correlate, read_scores
from .metaeval import (
    Judgments,
    LabelledRows,
    MetaEvaluation,
    agreement_report,
    judge_rows,
    meta_evaluate,
    read_labels,
    sample_judges,
)
from .ranking import Ranking, compute_ranking, rank
from .reliability import (
    JuryAgreement,
    Level,
    alpha_with_ci,
    fleiss_kappa,
    fleiss_kappa_with_ci,
    jury_agreement,
    krippendorff_alpha,
)

__all__ = [
    "compare",
    "CompareOptions",
    "read_results",
    "align_rows",
    "compare_rows",
    "Comparison",
    "FigureComparison",
    "SystemFigure",
    "correlate",
    "CorrelateOptions",
    "read_scores",
    "ScoreTable",
    "compute_correlation",
    "Correlation",
    "meta_evaluate",
    "MetaEvalOptions",
    "read_labels",
    "LabelledRows",
    "sample_judges",
    "judge_rows",
    "Judgments",
    "agreement_report",
    "MetaEvaluation",
    "krippendorff_alpha",
    "fleiss_kappa",
    "alpha_with_ci",
    "fleiss_kappa_with_ci",
    "jury_agreement",
    "JuryAgreement",
    "Level",
    "rank",
    "RankOptions",
    "compute_ranking",
    "Ranking",
]
