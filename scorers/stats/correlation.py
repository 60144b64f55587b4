"""Correlation of metrics with human judgments, the way the metric papers measure it.

:func:`correlate` reads results rows (``python -m scorers run`` output: row fields and a
``scores`` object) that also carry human scores in row fields, and for every scorer and
human column gives, for each coefficient (Pearson, Spearman, Kendall τ-b and τ-c, from
``scipy.stats``):

- **summary level** (SummEval, BARTScore, G-Eval): within each group (``group_by``, a
  document), the correlation between the scorer and the human score across the group's
  rows (its systems), then the mean over groups. A group with fewer than two rows, or
  whose scorer or human scores are all equal, has no correlation: it is skipped and counted;
- **system level** (WMT): the correlation between per-system means (``system_key``);
- **global**: the correlation over all rows.

A row whose scorer failed (an error, or a null score) or whose human score is missing
(absent or null) is left out of that pair's figures and counted.

**Intervals.** Every figure gets a percentile bootstrap interval from ``resamples``
resamples of the groups (the rows, without ``group_by``), drawn with replacement by
``numpy.random.default_rng(seed).choice(G, (resamples, G))`` (groups numbered in the order
they first appear in the rows); a drawn group brings all its rows (twice if drawn twice). Every figure is computed on the same draws. A resample
whose figure is undefined (every drawn group skipped, or a constant side) is left out of
the interval.

**Is metric A better than metric B?** For every pair of scorers, level and coefficient:
the difference of the two correlations, on the rows both scored, with a paired bootstrap
over the same draws: the percentile interval of the resampled differences and a
two-sided p-value ``(1 + #{|d* - mean(d*)| >= |d|}) / (1 + resamples)`` (the resampled
differences, centred, as the null distribution). At system level also the **Williams
test** for dependent correlations (Williams 1959; Steiger 1980's T2; as Graham & Baldwin
2014 and the WMT metrics tasks use it) on the Pearson correlations: :func:`williams_test`.

**Relative-ranking pairs** (WMT's DARR). ``pairs``: preferences between two rows of the
same group, each ``{GROUP_BY: value, "better": SYSTEM, "worse": SYSTEM}`` (the system
names as in ``system_key``). A scorer is concordant on a pair when it scores the better
row higher, discordant when lower or equal (WMT 2017-2020 count a metric tie as
discordant); the figure is the Kendall-like τ ``(C - D) / (C + D)`` with a bootstrap
interval over the groups. ``pairs_from``: form the pairs from a human column instead,
every two rows of a group whose scores differ by more than ``min_difference`` (WMT's
DARR pairs direct assessments 25 points apart).

>>> rows = [{"doc": d, "sys": s, "human": h, "scores": {"M": m}}
...         for d, s, h, m in [(1, "a", 1, 0.1), (1, "b", 2, 0.3), (1, "c", 3, 0.2),
...                            (2, "a", 2, 0.2), (2, "b", 1, 0.1), (2, "c", 3, 0.5)]]
>>> result = correlate(rows, human=["human"], group_by="doc", system_key="sys", resamples=100)
>>> figure = result.figure("M", "human", "summary", "spearman")
>>> figure.value, figure.n, figure.skipped
(0.75, 2, 0)
>>> round(result.figure("M", "human", "global", "pearson").value, 4)
0.7426
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..options import COEFFICIENTS, LEVELS, CorrelateOptions
from ._correlation_figures import (
    Bootstrap,
    CorrelationFigure,
    KendallLike,
    MetricComparison,
    WilliamsTest,
    coefficient,
    kendall_like,
    williams_test,
)
from ._correlation_rows import ScoreTable, read_scores

__all__ = [
    "correlate",
    "read_scores",
    "compute_correlation",
    "Correlation",
    "CorrelationFigure",
    "MetricComparison",
    "WilliamsTest",
    "KendallLike",
    "ScoreTable",
    "CorrelateOptions",
    "coefficient",
    "williams_test",
    "kendall_like",
    "COEFFICIENTS",
    "LEVELS",
    "FORMAT",
    "FORMAT_VERSION",
]

#: The ``format`` of :meth:`Correlation.to_dict` (``correlate -o``), read back by the HTML report.
FORMAT = "scorers-correlation"
FORMAT_VERSION = 1
DEFAULT_RESAMPLES: int = CorrelateOptions.default("resamples")
DEFAULT_SEED: int = CorrelateOptions.default("seed")


def correlate(
    data: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    *,
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> Correlation:
    """Correlate scorers with human scores in the rows of a results file (a path) or in results records.

    The options are :class:`~scorers.options.CorrelateOptions`' (see the signature). ``human``: the row
    fields (dotted paths allowed) holding human scores. ``scorers``: the
    scorers (default: every one in the rows). ``group_by``: the field naming each row's group
    (document) for the summary level, and the unit of the bootstrap; ``system_key``: the field
    naming each row's system, for the system level. ``levels`` default to those the fields allow.
    ``pairs``: preference pairs for WMT's Kendall-like τ (a JSONL path or records; see the module
    doc); ``pairs_from``: a human column to form them from instead, every two rows of a group whose
    scores differ by more than ``min_difference`` (WMT's DARR: 25 points of direct assessment).
    ``compare``: test every pair of scorers (paired bootstrap; Williams at system level).
    ``progress(done, total)`` is called as bootstrap resamples are computed (``total``: every pass's).
    Raises :class:`DataError` for bad rows, :class:`ConfigError` for bad options.
    The steps: :class:`~scorers.options.CorrelateOptions` checks the options, :func:`read_scores` reads the
    rows, :func:`compute_correlation` computes the figures, :meth:`Correlation.table` shows them.
    """
    checked = CorrelateOptions(**options)
    return compute_correlation(read_scores(data, checked), checked, progress=progress)


# inspect.signature reads __signature__: the options are CorrelateOptions' fields
correlate.__signature__ = CorrelateOptions.signature(  # type: ignore[attr-defined]
    [inspect.Parameter("data", inspect.Parameter.POSITIONAL_OR_KEYWORD)],
    [inspect.Parameter("progress", inspect.Parameter.KEYWORD_ONLY, default=None)],
    returns="Correlation",
)


def compute_correlation(
    table: ScoreTable, options: CorrelateOptions, *, progress: Callable[[int, int], None] | None = None
) -> Correlation:
    """The figures of :func:`correlate` over the rows :func:`read_scores` read: every coefficient at every
    level with its bootstrap interval, the tests between scorers (``options.compare``) and the Kendall-like τ
    over preference pairs, all on the same draws.

    >>> rows = [{"doc": d, "human": h, "scores": {"M": m}} for d, h, m in [(1, 1, .1), (1, 2, .3), (2, 2, .2), (2, 3, .4)]]
    >>> options = CorrelateOptions(human=["human"], group_by="doc", resamples=50)
    >>> result = compute_correlation(read_scores(rows, options), options)
    >>> result.figure("M", "human", "summary", "pearson").value
    1.0
    """
    bootstrap = Bootstrap(table, options, progress)
    figures, left_out = bootstrap.figures()
    comparisons, williams = bootstrap.comparisons() if options.compare else ([], [])
    return Correlation(
        table.scorers,
        options.human,
        options.group_by,
        options.system_key,
        table.rows,
        len(table.groups),
        options.resamples,
        options.seed,
        options.confidence,
        tuple(figures),
        tuple(comparisons),
        tuple(williams),
        tuple(bootstrap.preferences()),
        left_out,
        table.source,
    )


@dataclass(frozen=True)
class Correlation:
    """The result of :func:`correlate`; :meth:`to_dict` for JSON, :meth:`table` for people."""

    scorers: tuple[str, ...]
    human: tuple[str, ...]
    group_by: str | None
    system_key: str | None
    rows: int
    groups: int
    resamples: int
    seed: int
    confidence: float
    figures: tuple[CorrelationFigure, ...]
    comparisons: tuple[MetricComparison, ...] = ()
    williams: tuple[WilliamsTest, ...] = ()
    kendall_like: tuple[KendallLike, ...] = ()
    #: per ``"scorer|human"``: rows left out because the scorer failed, and because the human score is missing
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the results file read, when :func:`correlate` was given a path
    results: str | None = None

    def figure(self, scorer: str, human: str, level: str, coefficient: str) -> CorrelationFigure:
        """The figure of ``scorer`` against ``human`` at ``level`` for ``coefficient``."""
        for f in self.figures:
            if (f.scorer, f.human, f.level, f.coefficient) == (scorer, human, level, coefficient):
                return f
        raise KeyError((scorer, human, level, coefficient))

    @property
    def levels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.level for f in self.figures))

    @property
    def coefficients(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.coefficient for f in self.figures))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "results": self.results,
            "scorers": list(self.scorers),
            "human": list(self.human),
            "group_by": self.group_by,
            "system_key": self.system_key,
            "rows": self.rows,
            "groups": self.groups,
            "bootstrap": {
                "method": "percentile",
                "resamples": self.resamples,
                "seed": self.seed,
                "confidence": self.confidence,
                "resampled": "groups" if self.group_by else "rows",
            },
            "left_out": self.left_out,
            "figures": [_clean(asdict(f)) for f in self.figures],
            "comparisons": [_clean(asdict(c)) for c in self.comparisons],
            "williams": [_clean(asdict(w)) for w in self.williams],
            "kendall_like": [_clean(asdict(k)) for k in self.kendall_like],
        }

    def table(self) -> str:
        """Plain-text tables: the figures per human column, then the comparisons and tests."""
        pct = f"{self.confidence:.0%}"
        lines = [
            f"{self.rows} rows"
            + (f", {self.groups} groups ({self.group_by})" if self.group_by else "")
            + (f", systems by {self.system_key}" if self.system_key else "")
            + f"; {pct} percentile bootstrap intervals, {self.resamples} resamples of the "
            f"{'groups' if self.group_by else 'rows'}, seed {self.seed}"
        ]
        for human in self.human:
            lines += ["", f"human: {human}", *self._figures_table(human)]
        if self.comparisons:
            lines += ["", "paired bootstrap, A - B (two-sided p):", *self._comparisons_table()]
        if self.williams:
            lines += ["", "Williams test, system-level Pearson (one-sided p of r(A) > r(B)):", *self._williams_table()]
        if self.kendall_like:
            lines += ["", "Kendall-like τ over preference pairs ((C - D) / (C + D); a metric tie is discordant):"]
            lines += self._kendall_like_table()
        counts = [
            f"{key}: {', '.join(f'{n} {why}' for why, n in reasons.items() if n)}"
            for key, reasons in self.left_out.items()
            if any(reasons.values())
        ]
        if counts:
            lines += ["", "rows left out: " + "; ".join(counts)]
        return "\n".join(lines)

    def _figures_table(self, human: str) -> list[str]:
        coefficients = self.coefficients
        body = []
        for scorer in self.scorers:
            for level in self.levels:
                found = [self.figure(scorer, human, level, c) for c in coefficients]
                n = f"{found[0].n}" + (f" ({found[0].skipped} skipped)" if found[0].skipped else "")
                body.append((scorer, level, n, *(_cell(f.value, f.low, f.high) for f in found)))
        return _aligned(("scorer", "level", "n", *coefficients), body)

    def _comparisons_table(self) -> list[str]:
        body = [
            (c.human, c.level, c.coefficient, c.a, c.b, _cell(c.difference, c.low, c.high, "+.4f"), _p(c.p_value))
            for c in self.comparisons
        ]
        return _aligned(("human", "level", "coefficient", "A", "B", "difference", "p"), body)

    def _williams_table(self) -> list[str]:
        body = [
            (w.human, w.a, w.b, f"{w.r_a:.4f}", f"{w.r_b:.4f}", f"{w.r_ab:.4f}", str(w.n), f"{w.t:.4f}", _p(w.p_value))
            for w in self.williams
        ]
        return _aligned(("human", "A", "B", "r(A)", "r(B)", "r(A,B)", "n", "t", "p"), body)

    def _kendall_like_table(self) -> list[str]:
        body = [
            (
                k.source,
                k.scorer,
                _cell(k.value, k.low, k.high),
                *map(str, (k.concordant, k.discordant, k.ties, k.skipped)),
            )
            for k in self.kendall_like
        ]
        return _aligned(("pairs", "scorer", "tau", "concordant", "discordant", "ties", "skipped"), body)


def _clean(value: Any) -> Any:
    """nan (an undefined figure) as None, for JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _cell(value: float | None, low: float | None, high: float | None, spec: str = ".4f") -> str:
    if value is None:
        return "-"
    return format(value, spec) + ("" if low is None or high is None else f" [{low:.4f}, {high:.4f}]")


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _aligned(header: tuple[str, ...], body: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *body]]
