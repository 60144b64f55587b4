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

import json
import math
import os
from array import array
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .._util import ABSENT, did_you_mean, is_int, is_number, lookup
from ..errors import ConfigError, DataError
from ..io import input_row, read_rows
from ._coefficients import BUDGET, Weighted, batched
from .resample import bootstrap_indices

__all__ = [
    "correlate",
    "Correlation",
    "CorrelationFigure",
    "MetricComparison",
    "WilliamsTest",
    "KendallLike",
    "coefficient",
    "williams_test",
    "kendall_like",
    "COEFFICIENTS",
    "LEVELS",
    "FORMAT",
    "FORMAT_VERSION",
]

#: The coefficients, as scipy.stats computes them: pearsonr, spearmanr, kendalltau(variant="b"/"c").
COEFFICIENTS = ("pearson", "spearman", "kendall_b", "kendall_c")
#: summary: mean over groups of the within-group correlation; system: over per-system means; global: over rows.
LEVELS = ("summary", "system", "global")
#: The ``format`` of :meth:`Correlation.to_dict` (``correlate -o``), read back by the HTML report.
FORMAT = "scorers-correlation"
FORMAT_VERSION = 1
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


def coefficient(name: str, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """One coefficient of scipy.stats; nan when undefined (fewer than two values, or a side constant).

    >>> coefficient("kendall_b", [1, 2, 3, 4], [1, 3, 2, 4]), coefficient("pearson", [1, 1], [1, 2])
    (0.6666666666666669, nan)
    """
    from scipy import stats

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    if name == "pearson":
        return float(stats.pearsonr(a, b).statistic)
    if name == "spearman":
        return float(stats.spearmanr(a, b).statistic)
    if name in ("kendall_b", "kendall_c"):
        return float(stats.kendalltau(a, b, variant=name[-1]).statistic)
    raise ConfigError(f"coefficient {name!r}: choose from {', '.join(COEFFICIENTS)}")


def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' t for ``r12 > r13`` where variable 1 (the human score) is shared, and its one-sided p-value.

    ``r12``: human vs metric A; ``r13``: human vs metric B; ``r23``: A vs B; ``n`` items (systems).
    ``t = (r12 - r13) sqrt((n-1)(1+r23)) / sqrt(2K(n-1)/(n-3) + ((r12+r13)/2)^2 (1-r23)^3)`` with
    ``K = 1 - r12² - r13² - r23² + 2 r12 r13 r23``, on ``n - 3`` degrees of freedom (Williams 1959;
    Steiger 1980, eq. 7); p is ``P(T >= t)``. Steiger's case A (n 103, r12 .4, r13 .5, r23 .1):

    >>> t, p = williams_test(0.4, 0.5, 0.1, 103)
    >>> round(t, 4), round(p, 4)
    (-0.8913, 0.8125)
    """
    from scipy import stats

    if n <= 3:
        raise ConfigError(f"the Williams test needs more than 3 items, got {n}")
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    denominator = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denominator)
    return t, float(stats.t.sf(t, n - 3))


def kendall_like(better: Sequence[float] | np.ndarray, worse: Sequence[float] | np.ndarray) -> float:
    """WMT's Kendall-like τ over relative-ranking pairs: ``(C - D) / (C + D)``; a metric tie is discordant.

    ``better[i]`` and ``worse[i]`` are the metric's scores of the rows people preferred and did not.

    >>> kendall_like([0.9, 0.5, 0.4, 0.3], [0.1, 0.6, 0.4, 0.2])
    0.0
    """
    b, w = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
    if not len(b):
        return math.nan
    concordant = int(np.sum(b > w))
    return (2 * concordant - len(b)) / len(b)


@dataclass(frozen=True)
class CorrelationFigure:
    """One coefficient at one level for one scorer and human column, with its bootstrap interval.

    ``n``: the groups averaged (summary), systems (system) or rows (global); ``skipped``: the
    groups left out at summary level (too small or constant on a side), else 0.
    """

    scorer: str
    human: str
    level: str
    coefficient: str
    value: float | None
    low: float | None
    high: float | None
    n: int
    skipped: int = 0


@dataclass(frozen=True)
class MetricComparison:
    """Is ``a``'s correlation with ``human`` higher than ``b``'s? The paired bootstrap over groups.

    ``difference`` is ``a - b`` on the rows both scored; ``p_value`` is two-sided.
    """

    human: str
    level: str
    coefficient: str
    a: str
    b: str
    value_a: float | None
    value_b: float | None
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None


@dataclass(frozen=True)
class WilliamsTest:
    """The Williams test at system level (Pearson): ``t`` for ``r(human, a) > r(human, b)``.

    ``p_value`` is one-sided, P(T >= t): small when ``a`` correlates better; ``1 - p_value`` when ``b`` does.
    """

    human: str
    a: str
    b: str
    r_a: float
    r_b: float
    r_ab: float
    n: int
    t: float
    p_value: float


@dataclass(frozen=True)
class KendallLike:
    """WMT's Kendall-like τ of one scorer over the preference pairs, with its bootstrap interval.

    ``source``: the pairs file, or the human column the pairs were formed from; ``skipped``: pairs
    where the scorer failed on a row of the pair.
    """

    scorer: str
    source: str
    value: float | None
    low: float | None
    high: float | None
    concordant: int
    discordant: int
    ties: int
    skipped: int


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
        coefficients = self.coefficients
        for human in self.human:
            lines += ["", f"human: {human}"]
            body = []
            for scorer in self.scorers:
                for level in self.levels:
                    found = [self.figure(scorer, human, level, c) for c in coefficients]
                    n = f"{found[0].n}" + (f" ({found[0].skipped} skipped)" if found[0].skipped else "")
                    body.append((scorer, level, n, *(_cell(f.value, f.low, f.high) for f in found)))
            lines += _aligned(("scorer", "level", "n", *coefficients), body)
        if self.comparisons:
            lines += ["", "paired bootstrap, A - B (two-sided p):"]
            body = [
                (c.human, c.level, c.coefficient, c.a, c.b, _cell(c.difference, c.low, c.high, "+.4f"), _p(c.p_value))
                for c in self.comparisons
            ]
            lines += _aligned(("human", "level", "coefficient", "A", "B", "difference", "p"), body)
        if self.williams:
            lines += ["", "Williams test, system-level Pearson (one-sided p of r(A) > r(B)):"]
            body = [
                (
                    w.human,
                    w.a,
                    w.b,
                    f"{w.r_a:.4f}",
                    f"{w.r_b:.4f}",
                    f"{w.r_ab:.4f}",
                    str(w.n),
                    f"{w.t:.4f}",
                    _p(w.p_value),
                )
                for w in self.williams
            ]
            lines += _aligned(("human", "A", "B", "r(A)", "r(B)", "r(A,B)", "n", "t", "p"), body)
        if self.kendall_like:
            lines += ["", "Kendall-like τ over preference pairs ((C - D) / (C + D); a metric tie is discordant):"]
            body = [
                (
                    k.source,
                    k.scorer,
                    _cell(k.value, k.low, k.high),
                    str(k.concordant),
                    str(k.discordant),
                    str(k.ties),
                    str(k.skipped),
                )
                for k in self.kendall_like
            ]
            lines += _aligned(("pairs", "scorer", "tau", "concordant", "discordant", "ties", "skipped"), body)
        counts = [
            f"{key}: {', '.join(f'{n} {why}' for why, n in reasons.items() if n)}"
            for key, reasons in self.left_out.items()
            if any(reasons.values())
        ]
        if counts:
            lines += ["", "rows left out: " + "; ".join(counts)]
        return "\n".join(lines)


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


def _aligned(header: tuple[str, ...], body: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *body]]


# ------------------------------------------------------------------ reading
def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _number(value: Any) -> float:
    """``value`` as a float; nan for an integer beyond float's range or a non-finite number."""
    try:
        number = float(value)
    except OverflowError:  # an integer such as 10**400
        return math.nan
    return number if math.isfinite(number) else math.nan


@dataclass(frozen=True)
class _Table:
    """The rows as arrays: each row's group and system index, every scorer's and human column's values."""

    group: np.ndarray  # (rows,) int
    system: np.ndarray | None  # (rows,) int
    groups: Sequence[str]
    systems: list[str]
    scores: dict[str, np.ndarray]
    human: dict[str, np.ndarray]

    @property
    def rows(self) -> int:
        return len(self.group)


class _Reader:
    """Reads results rows in one pass into columns of floats (a million rows stay a few arrays, not dicts)."""

    def __init__(
        self,
        name: str | None,
        human: Sequence[str],
        group_by: str | None,
        system_key: str | None,
        pairs_from: str | None,
    ) -> None:
        self.name, self.human, self.group_by, self.system_key = name, human, group_by, system_key
        self.pairs_from = pairs_from
        self.rows = 0
        self.fields: dict[str, None] = {}  # every row field seen, for the message on a missing one
        self.scores: dict[str, array[float]] = {}
        self.columns: dict[str, array[float]] = {column: array("d") for column in human}
        self.seen: dict[str, bool] = dict.fromkeys(human, False)
        self.groups: dict[str, int] = {}
        self.systems: dict[str, int] = {}
        self.group: array[int] = array("q")
        self.system: array[int] = array("q")
        self.missing: dict[str, int] = {}  # --group-by / --system-key: the first row without the field

    def add(self, record: Any) -> None:
        self.rows += 1
        number = self.rows
        if not isinstance(record, Mapping) or not isinstance(record.get("scores"), Mapping):
            raise DataError(
                f'{self.name or "rows"}: row {number} has no "scores" object; correlate reads the results files of '
                "`scorers run`"
            )
        row = input_row(record)
        self.fields.update(dict.fromkeys(row))
        failed = record.get("errors") or {}
        for name, value in record["scores"].items():
            if name not in self.scores:
                self.scores[name] = array("d", [math.nan]) * (number - 1)
            self.scores[name].append(self._score(value, name in failed, number, name))
        for values in self.scores.values():
            if len(values) < number:
                values.append(math.nan)
        for column in self.human:
            self.columns[column].append(self._human(row, column, number))
        if self.group_by is not None:
            self.group.append(self._index(row, self.group_by, number, self.groups))
        if self.system_key is not None:
            self.system.append(self._index(row, self.system_key, number, self.systems))

    def _score(self, value: Any, failed: bool, number: int, name: str) -> float:
        """A row's score; nan when the scorer failed (an error) or gave none."""
        if value is None or failed or not is_number(value):
            return math.nan
        number_ = _number(value)
        if math.isnan(number_) and not (isinstance(value, float) and math.isnan(value)):
            raise DataError(f"row {number}: the score of {name} is {_short(value)}, not a finite number")
        return number_

    def _human(self, row: Mapping[str, Any], column: str, number: int) -> float:
        """A row's human score; nan when missing (absent or null)."""
        value = lookup(row, column)
        if value is ABSENT:
            return math.nan
        self.seen[column] = True
        if value is None:
            return math.nan
        number_ = _number(value) if is_number(value) else math.nan
        if math.isnan(number_):
            raise DataError(f"row {number}: the human score {column!r} is {_short(value)}, not a finite number")
        return number_

    def _index(self, row: Mapping[str, Any], path: str, number: int, index: dict[str, int]) -> int:
        value = lookup(row, path)
        if value is ABSENT or value is None:
            self.missing.setdefault(path, number)
            return -1
        return index.setdefault(_key(value), len(index))

    def table(self, scorers: Sequence[str]) -> _Table:
        if not self.rows:
            raise DataError(f"{self.name or 'rows'}: no rows")
        fields = list(self.fields)
        for column in self.human:
            if not self.seen[column]:
                raise _no_field("--pairs-from" if column == self.pairs_from else "--human", column, fields)
        for option, path in (("--group-by", self.group_by), ("--system-key", self.system_key)):
            if path is None or path not in self.missing:
                continue
            index = self.groups if option == "--group-by" else self.systems
            if not index:
                raise _no_field(option, path, fields)
            raise DataError(f"row {self.missing[path]} has no field {path!r} ({option})")
        return _Table(
            np.frombuffer(self.group, dtype=np.int64) if self.group_by else np.arange(self.rows, dtype=np.int64),
            None if self.system_key is None else np.frombuffer(self.system, dtype=np.int64),
            list(self.groups) if self.group_by is not None else range(self.rows),  # type: ignore[arg-type]
            list(self.systems),
            {name: np.frombuffer(self.scores[name], dtype=float) for name in scorers},
            {column: np.frombuffer(values, dtype=float) for column, values in self.columns.items()},
        )


def _field(record: Mapping[str, Any], path: str, number: int, option: str) -> str:
    value = lookup(input_row(record), path)
    if value is ABSENT or value is None:
        raise DataError(f"row {number} has no field {path!r} ({option})")
    return _key(value)


def _no_field(option: str, path: str, fields: list[str]) -> DataError:
    listed = ", ".join(fields[:30]) + (f" and {len(fields) - 30} more" if len(fields) > 30 else "")
    return DataError(
        f"{option} {path}: no field {path!r} in any row{did_you_mean(path, fields)} "
        f"(the rows' fields: {listed or 'none'})"
    )


def _short(value: Any) -> str:
    text = _key(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def _read(
    data: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    human: Sequence[str],
    group_by: str | None,
    system_key: str | None,
    pairs_from: str | None,
) -> _Reader:
    name = os.fspath(data) if isinstance(data, (str, os.PathLike)) else None
    reader = _Reader(name, human, group_by, system_key, pairs_from)
    for record in read_rows(name, "jsonl") if name is not None else data:  # type: ignore[union-attr]
        reader.add(record)
    return reader


# ------------------------------------------------------------------ figures
class _Draws:
    """The bootstrap's draws of the groups, made ``BUDGET // rows`` resamples at a time (bounded memory).

    The chunks are the rows of ``default_rng(seed).choice(groups, (resamples, groups))``, taken in
    pieces from one generator (numpy's bounded integers draw the same stream either way: tested).
    ``weights`` of a chunk: how often each group was drawn in each resample.
    """

    def __init__(
        self, groups: int, rows: int, resamples: int, seed: int, progress: Callable[[int], None] | None
    ) -> None:
        self.groups, self.resamples, self.seed, self.progress = groups, resamples, seed, progress
        self.step = max(1, BUDGET // max(rows, groups, 1))

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        rng = np.random.default_rng(self.seed)
        for start in range(0, self.resamples, self.step):
            count = min(self.step, self.resamples - start)
            drawn = bootstrap_indices(rng, self.groups, count)
            offsets = (np.arange(count, dtype=np.int64) * self.groups)[:, None]
            weights = np.bincount((drawn + offsets).ravel(), minlength=count * self.groups)
            yield drawn, weights.reshape(count, self.groups)
            if self.progress is not None:
                self.progress(count)


#: (value, resampled values, n, skipped) of one figure
_Figure = tuple[float, np.ndarray, int, int]
#: Groups up to this size get their within-group coefficients by pairwise comparison, all at once.
_SMALL_GROUP = 64


class _Series:
    """One scorer's values against one human column on a set of kept rows: every level's figures, resampled.

    :meth:`figure` computes all of them in one pass over the draws.
    """

    def __init__(
        self,
        table: _Table,
        x: np.ndarray,
        y: np.ndarray,
        kept: np.ndarray,
        draws: _Draws,
        levels: Sequence[str],
        coefficients: Sequence[str],
    ) -> None:
        self.table, self.draws, self.levels, self.coefficients = table, draws, tuple(levels), tuple(coefficients)
        self.x, self.y = x[kept], y[kept]
        self.group = table.group[kept]
        self.system = None if table.system is None else table.system[kept]
        self._figures: dict[tuple[str, str], _Figure] | None = None

    def figure(self, level: str, name: str) -> _Figure:
        if self._figures is None:
            self._figures = self._compute()
        return self._figures[(level, name)]

    def per_group(self, name: str) -> np.ndarray:
        """The coefficient within each group (nan where skipped), over every group of the table."""
        values = np.full(len(self.table.groups), math.nan)
        sizes = np.bincount(self.group, minlength=len(values))
        order = np.argsort(self.group, kind="stable")
        ordered = self.group[order]
        position = np.arange(len(order)) - (np.cumsum(sizes) - sizes)[ordered]
        width = 1
        while width < _SMALL_GROUP:
            width *= 2
            chosen = (sizes > width // 2) & (sizes <= width)
            slot = np.cumsum(chosen) - 1
            rows = chosen[ordered]
            shape = (int(chosen.sum()), width)
            x, y, valid = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool)
            where = (slot[ordered[rows]], position[rows])
            x[where], y[where], valid[where] = self.x[order[rows]], self.y[order[rows]], True
            values[chosen] = batched(name, x, y, valid)
        for group in np.flatnonzero(sizes > width):
            first = np.searchsorted(ordered, group)
            rows = order[first : first + sizes[group]]
            values[group] = coefficient(name, self.x[rows], self.y[rows])
        return values

    def system_means(self, values: np.ndarray) -> np.ndarray:
        """Per-system means on all rows (nan for a system without rows)."""
        assert self.system is not None
        systems = len(self.table.systems)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(self.system, values, systems) / np.bincount(self.system, minlength=systems)

    def _compute(self) -> dict[tuple[str, str], _Figure]:
        names, levels = self.coefficients, self.levels
        resampled = {(level, name): np.empty(self.draws.resamples) for level in levels for name in names}
        figures: dict[tuple[str, str], _Figure] = {}
        per_group: dict[str, np.ndarray] = {}
        if "summary" in levels:
            present = np.zeros(len(self.table.groups), dtype=bool)
            present[self.group] = True
            for name in names:
                per_group[name] = values = self.per_group(name)
                used = int(np.sum(~np.isnan(values)))
                value = float(np.mean(values[~np.isnan(values)])) if used else math.nan
                figures[("summary", name)] = (value, resampled[("summary", name)], used, int(np.sum(present)) - used)
        if "system" in levels:
            mx, my = self.system_means(self.x), self.system_means(self.y)
            present = ~np.isnan(mx)
            for name in names:
                value = coefficient(name, mx[present], my[present])
                figures[("system", name)] = (value, resampled[("system", name)], int(np.sum(present)), 0)
            assert self.system is not None
            by_system = np.argsort(self.system, kind="stable")
            starts = np.searchsorted(self.system[by_system], np.arange(len(self.table.systems)))
        if "global" in levels:
            for name in names:
                figures[("global", name)] = (
                    coefficient(name, self.x, self.y),
                    resampled[("global", name)],
                    len(self.x),
                    0,
                )
            weighted = Weighted(self.x, self.y)
        start = 0
        for drawn, weights in self.draws.chunks():
            done = slice(start, start + len(drawn))
            start += len(drawn)
            for name, values in per_group.items():
                chosen = values[drawn]
                with np.errstate(invalid="ignore"):
                    counts = np.sum(~np.isnan(chosen), axis=1)
                    resampled[("summary", name)][done] = np.where(
                        counts > 0, np.nansum(chosen, axis=1) / np.maximum(counts, 1), math.nan
                    )
            if "system" in levels or "global" in levels:
                repeats = weights[:, self.group]
            if "system" in levels:
                means = [_sums(repeats, v, by_system, starts) for v in (self.x, self.y, np.ones(len(self.x)))]
                with np.errstate(invalid="ignore", divide="ignore"):
                    rx, ry = means[0] / means[2], means[1] / means[2]
                for name in names:
                    resampled[("system", name)][done] = batched(name, rx, ry, means[2] > 0)
            if "global" in levels:
                for name, values in weighted.coefficients(names, repeats).items():
                    resampled[("global", name)][done] = values
        return figures


def _sums(repeats: np.ndarray, values: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per resample and system: the sum of ``values`` over the drawn rows, ``(resamples, systems)``."""
    out = np.zeros((len(repeats), len(starts)))
    if len(order):
        sums = np.add.reduceat(repeats[:, order] * values[order], np.minimum(starts, len(order) - 1), axis=1)
        empty = np.r_[starts[1:], len(order)] == starts  # a system without kept rows
        out[:, ~empty] = sums[:, ~empty]
    return out


class _Counter:
    """Adds up resamples done and hands ``(done, total)`` to a progress callback."""

    def __init__(self, progress: Callable[[int, int], None], total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, count: int) -> None:
        self.done += count
        self.progress(self.done, self.total)


def _interval(resampled: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    finite = resampled[np.isfinite(resampled)]
    if not len(finite):
        return None, None
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def _value(value: float) -> float | None:
    return None if math.isnan(value) else value


def correlate(
    data: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    *,
    human: Sequence[str],
    scorers: Sequence[str] | None = None,
    group_by: str | None = None,
    system_key: str | None = None,
    coefficients: Sequence[str] = COEFFICIENTS,
    levels: Sequence[str] | None = None,
    pairs: str | os.PathLike[str] | Iterable[Mapping[str, Any]] | None = None,
    pairs_from: str | None = None,
    min_difference: float = 0.0,
    compare: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
    progress: Callable[[int, int], None] | None = None,
) -> Correlation:
    """Correlate scorers with human scores in the rows of a results file (a path) or in results records.

    ``human``: the row fields (dotted paths allowed) holding human scores. ``scorers``: the
    scorers (default: every one in the rows). ``group_by``: the field naming each row's group
    (document) for the summary level, and the unit of the bootstrap; ``system_key``: the field
    naming each row's system, for the system level. ``levels`` default to those the fields allow.
    ``pairs``: preference pairs for WMT's Kendall-like τ (a JSONL path or records; see the module
    doc); ``pairs_from``: a human column to form them from instead, every two rows of a group whose
    scores differ by more than ``min_difference`` (WMT's DARR: 25 points of direct assessment).
    ``compare``: test every pair of scorers (paired bootstrap; Williams at system level).
    ``progress(done, total)`` is called as bootstrap resamples are computed (``total``: every pass's).
    Raises :class:`DataError` for bad rows, :class:`ConfigError` for bad options.
    """
    if not human and pairs is None and pairs_from is None:
        raise ConfigError(
            "correlate needs a human score column (--human COLUMN) or preference pairs (--pairs, --pairs-from)"
        )
    for name in coefficients:
        if name not in COEFFICIENTS:
            raise ConfigError(f"coefficient {name!r}: choose from {', '.join(COEFFICIENTS)}")
    possible = [lv for lv in LEVELS if (lv != "summary" or group_by) and (lv != "system" or system_key)]
    levels = possible if levels is None else list(levels)
    for level in levels:
        if level not in possible:
            needs = {"summary": "group_by (--group-by)", "system": "system_key (--system-key)"}.get(level)
            raise ConfigError(
                f"level {level!r}: " + (f"needs {needs}" if level in LEVELS else f"choose from {', '.join(LEVELS)}")
            )
    if not is_int(resamples) or resamples < 1:
        raise ConfigError(f"resamples must be a positive integer, got {resamples!r}")
    if not is_int(seed) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if pairs is not None and (group_by is None or system_key is None):
        raise ConfigError("preference pairs need group_by and system_key (--group-by, --system-key)")
    if pairs_from is not None and group_by is None:
        raise ConfigError("pairs formed from a human column need group_by (--group-by): pairs are within a group")
    if not is_number(min_difference) or not min_difference >= 0:
        raise ConfigError(f"min_difference must be a number at least 0, got {min_difference!r}")
    columns = list(dict.fromkeys([*human, *([pairs_from] if pairs_from is not None else [])]))
    reader = _read(data, columns, group_by, system_key, pairs_from)
    found = list(reader.scores)
    if scorers is None:
        scorers = found
    missing = [name for name in scorers if name not in found]
    if missing:
        raise ConfigError(
            f"no scores of {', '.join(missing)} in these rows{did_you_mean(missing[0], found)} "
            f"(scorers: {', '.join(found) or 'none'})"
        )
    if not scorers:
        raise DataError("no scorer in these rows")
    table = reader.table(scorers)
    del reader

    def own(name: str, column: str) -> np.ndarray:
        return ~(np.isnan(table.scores[name]) | np.isnan(table.human[column]))

    wanted = [(name, column, own(name, column)) for column in human for name in scorers]
    if compare:
        for column in human:
            for i, a in enumerate(scorers):
                for b in scorers[i + 1 :]:
                    kept = own(a, column) & own(b, column)
                    wanted += [(a, column, kept), (b, column, kept)]
    passes = (
        len({(name, column, kept.tobytes()) for name, column, kept in wanted})
        + (pairs is not None)
        + (pairs_from is not None)
    )
    counted = None if progress is None else _Counter(progress, passes * resamples)
    draws = _Draws(len(table.groups), table.rows, resamples, seed, counted)
    cache: dict[tuple[str, str, bytes], _Series] = {}

    def series(name: str, column: str, kept: np.ndarray) -> _Series:
        key = (name, column, kept.tobytes())
        if key not in cache:
            cache[key] = _Series(table, table.scores[name], table.human[column], kept, draws, levels, coefficients)
        return cache[key]

    figures, left_out = [], {}
    for column in human:
        for name in scorers:
            left_out[f"{name}|{column}"] = {
                "scorer failed": int(np.sum(np.isnan(table.scores[name]))),
                "human missing": int(np.sum(np.isnan(table.human[column]) & ~np.isnan(table.scores[name]))),
            }
            for level in levels:
                for coef in coefficients:
                    value, resampled, n, skipped = series(name, column, own(name, column)).figure(level, coef)
                    figures.append(
                        CorrelationFigure(
                            name, column, level, coef, _value(value), *_interval(resampled, confidence), n, skipped
                        )
                    )
    comparisons, williams = [], []
    if compare:
        for column in human:
            for i, a in enumerate(scorers):
                for b in scorers[i + 1 :]:
                    kept = own(a, column) & own(b, column)
                    for level in levels:
                        for coef in coefficients:
                            va, da, _, _ = series(a, column, kept).figure(level, coef)
                            vb, db, _, _ = series(b, column, kept).figure(level, coef)
                            comparisons.append(_comparison(column, level, coef, a, b, va, vb, da - db, confidence))
                    if "system" in levels:
                        test = _williams(series(a, column, kept), table.scores[b][kept])
                        if test is not None:
                            williams.append(WilliamsTest(column, a, b, *test))
    ranked = []
    if pairs is not None:
        assert group_by is not None and system_key is not None
        ranked += _kendall_like(table, scorers, *_file_pairs(table, pairs, group_by, system_key), draws, confidence)
    if pairs_from is not None:
        ranked += _kendall_like(table, scorers, *_column_pairs(table, pairs_from, min_difference), draws, confidence)
    return Correlation(
        tuple(scorers),
        tuple(human),
        group_by,
        system_key,
        table.rows,
        len(table.groups),
        resamples,
        seed,
        confidence,
        tuple(figures),
        tuple(comparisons),
        tuple(williams),
        tuple(ranked),
        left_out,
        os.fspath(data) if isinstance(data, (str, os.PathLike)) else None,
    )


def _comparison(
    column: str, level: str, coef: str, a: str, b: str, va: float, vb: float, draws: np.ndarray, confidence: float
) -> MetricComparison:
    if math.isnan(va) or math.isnan(vb):
        return MetricComparison(column, level, coef, a, b, _value(va), _value(vb), None, None, None, None)
    difference = va - vb
    finite = draws[np.isfinite(draws)]
    low, high = _interval(finite, confidence)
    p_value = None
    if len(finite):
        null = np.abs(finite - finite.mean())
        p_value = (int(np.sum(null >= abs(difference))) + 1) / (len(finite) + 1)
    return MetricComparison(column, level, coef, a, b, va, vb, difference, low, high, p_value)


def _williams(sa: _Series, scores_b: np.ndarray) -> tuple[float, float, float, int, float, float] | None:
    """Williams' test on the system means of the rows both scored: (r_a, r_b, r_ab, n, t, p), or None."""
    ma, mh, mb = sa.system_means(sa.x), sa.system_means(sa.y), sa.system_means(scores_b)
    present = ~np.isnan(ma)
    n = int(np.sum(present))
    r_a = coefficient("pearson", mh[present], ma[present])
    r_b = coefficient("pearson", mh[present], mb[present])
    r_ab = coefficient("pearson", ma[present], mb[present])
    if n <= 3 or any(math.isnan(r) for r in (r_a, r_b, r_ab)) or abs(r_ab) == 1.0:
        return None
    t, p = williams_test(r_a, r_b, r_ab, n)
    return r_a, r_b, r_ab, n, t, p


def _file_pairs(
    table: _Table,
    pairs: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    group_by: str,
    system_key: str,
) -> tuple[str, np.ndarray, np.ndarray]:
    """The rows each preference pair names: (where the pairs came from, better rows, worse rows)."""
    assert table.system is not None
    name = os.fspath(pairs) if isinstance(pairs, (str, os.PathLike)) else "pairs"
    records = list(read_rows(name, "jsonl")) if isinstance(pairs, (str, os.PathLike)) else list(pairs)
    where: dict[tuple[int, int], int] = {}
    for row, (g, s) in enumerate(zip(table.group.tolist(), table.system.tolist())):
        if (g, s) in where:
            raise DataError(
                f"rows {where[(g, s)] + 1} and {row + 1} have the same {group_by} and {system_key}: "
                "preference pairs need one row per group and system"
            )
        where[(g, s)] = row
    group_index = {key: i for i, key in enumerate(table.groups)}
    system_index = {key: i for i, key in enumerate(table.systems)}
    better, worse = [], []
    for number, pair in enumerate(records, 1):
        if not isinstance(pair, Mapping):
            raise DataError(f"{name}: pair {number} is not an object")
        g = group_index.get(_field(pair, group_by, number, f"pair, {group_by}"))
        ends = [system_index.get(_field(pair, side, number, "pair")) for side in ("better", "worse")]
        rows = [None if g is None or s is None else where.get((g, s)) for s in ends]
        if rows[0] is None or rows[1] is None:
            raise DataError(
                f"{name}: pair {number} ({_key(dict(pair))}) names no row of the results "
                f"(rows are found by {group_by} and {system_key})"
            )
        better.append(rows[0])
        worse.append(rows[1])
    return name, np.array(better, dtype=np.int64), np.array(worse, dtype=np.int64)


def _column_pairs(table: _Table, column: str, min_difference: float) -> tuple[str, np.ndarray, np.ndarray]:
    """Every two rows of a group whose human scores differ by more than ``min_difference`` (WMT's DARR)."""
    values = table.human[column]
    better, worse = [], []
    order = np.argsort(table.group, kind="stable")
    for rows in np.split(order, np.flatnonzero(np.diff(table.group[order])) + 1):
        rated = [int(r) for r in rows if not math.isnan(values[r])]
        for i, a in enumerate(rated):
            for b in rated[i + 1 :]:
                if abs(values[a] - values[b]) > min_difference:
                    better.append(a if values[a] > values[b] else b)
                    worse.append(b if values[a] > values[b] else a)
    source = f"{column}, difference > {min_difference:g}"
    return source, np.array(better, dtype=np.int64), np.array(worse, dtype=np.int64)


def _kendall_like(
    table: _Table,
    scorers: Sequence[str],
    source: str,
    better: np.ndarray,
    worse: np.ndarray,
    draws: _Draws,
    confidence: float,
) -> list[KendallLike]:
    out = []
    groups = table.group[better]
    counts = []
    for scorer in scorers:
        b, w = table.scores[scorer][better], table.scores[scorer][worse]
        kept = ~(np.isnan(b) | np.isnan(w))
        concordant = np.zeros(len(table.groups))
        discordant = np.zeros(len(table.groups))
        np.add.at(concordant, groups[kept], (b[kept] > w[kept]).astype(float))
        np.add.at(discordant, groups[kept], (b[kept] <= w[kept]).astype(float))
        counts.append((concordant, discordant))
    resampled: list[list[np.ndarray]] = [[] for _ in scorers]
    for _, weights in draws.chunks():
        for k, (concordant, discordant) in enumerate(counts):
            c, d = weights @ concordant, weights @ discordant
            with np.errstate(invalid="ignore", divide="ignore"):
                resampled[k].append((c - d) / (c + d))
    for k, scorer in enumerate(scorers):
        b, w = table.scores[scorer][better], table.scores[scorer][worse]
        kept = ~(np.isnan(b) | np.isnan(w))
        concordant, discordant = counts[k]
        out.append(
            KendallLike(
                scorer,
                source,
                _value(kendall_like(b[kept], w[kept])),
                *_interval(np.concatenate(resampled[k]), confidence),
                int(concordant.sum()),
                int(discordant.sum()),
                int(np.sum(b[kept] == w[kept])),
                int(np.sum(~kept)),
            )
        )
    return out
