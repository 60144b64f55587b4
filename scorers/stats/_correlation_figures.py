"""Correlation's figures: coefficients, their bootstrap over groups, the tests between scorers.

The second step of :func:`scorers.stats.correlate` (:func:`scorers.stats.correlation.compute_correlation`):
a :class:`Bootstrap` draws the groups once and computes every figure of a scorer and human column on those
draws in one pass (:mod:`scorers.stats._coefficients`); :func:`coefficient`, :func:`williams_test` and
:func:`kendall_like` are the figures of one sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import ConfigError
from ..options import COEFFICIENTS, LEVELS, CorrelateOptions
from ._coefficients import BUDGET, Weighted, batched
from ._correlation_rows import ScoreTable, column_pairs, file_pairs
from .resample import bootstrap_indices

__all__ = [
    "CorrelationFigure",
    "MetricComparison",
    "WilliamsTest",
    "KendallLike",
    "Bootstrap",
    "coefficient",
    "williams_test",
    "kendall_like",
]


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
#: A level's step over one chunk of draws: (drawn groups, each row's repeats, where the chunk's resamples go).
_Update = Callable[[np.ndarray, np.ndarray, slice], None]
#: Groups up to this size get their within-group coefficients by pairwise comparison, all at once.
_SMALL_GROUP = 64


class _Series:
    """One scorer's values against one human column on a set of kept rows: every level's figures, resampled.

    :meth:`figure` computes all of them in one pass over the draws.
    """

    def __init__(
        self,
        table: ScoreTable,
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
        """Every level's figures, and each one's value on every resample (one pass over the draws)."""
        names, levels = self.coefficients, self.levels
        resampled = {(level, name): np.empty(self.draws.resamples) for level in levels for name in names}
        figures: dict[tuple[str, str], _Figure] = {}
        steps = {"summary": self._summary, "system": self._system, "global": self._global}
        updates = [steps[level](figures, resampled) for level in LEVELS if level in levels]
        rows = "system" in levels or "global" in levels  # their resamples weigh the drawn rows
        start = 0
        for drawn, weights in self.draws.chunks():
            done = slice(start, start + len(drawn))
            start += len(drawn)
            repeats = weights[:, self.group] if rows else weights
            for update in updates:
                update(drawn, repeats, done)
        return figures

    def _summary(
        self, figures: dict[tuple[str, str], _Figure], resampled: dict[tuple[str, str], np.ndarray]
    ) -> _Update:
        """The mean over groups of the within-group coefficient; resampled as the mean over the drawn groups."""
        present = np.zeros(len(self.table.groups), dtype=bool)
        present[self.group] = True
        per_group: dict[str, np.ndarray] = {}
        for name in self.coefficients:
            per_group[name] = values = self.per_group(name)
            used = int(np.sum(~np.isnan(values)))
            value = float(np.mean(values[~np.isnan(values)])) if used else math.nan
            figures[("summary", name)] = (value, resampled[("summary", name)], used, int(np.sum(present)) - used)

        def update(drawn: np.ndarray, repeats: np.ndarray, done: slice) -> None:
            for name, values in per_group.items():
                chosen = values[drawn]
                with np.errstate(invalid="ignore"):
                    counts = np.sum(~np.isnan(chosen), axis=1)
                    resampled[("summary", name)][done] = np.where(
                        counts > 0, np.nansum(chosen, axis=1) / np.maximum(counts, 1), math.nan
                    )

        return update

    def _system(self, figures: dict[tuple[str, str], _Figure], resampled: dict[tuple[str, str], np.ndarray]) -> _Update:
        """The coefficient between per-system means; resampled over the means of the drawn rows."""
        mx, my = self.system_means(self.x), self.system_means(self.y)
        present = ~np.isnan(mx)
        for name in self.coefficients:
            value = coefficient(name, mx[present], my[present])
            figures[("system", name)] = (value, resampled[("system", name)], int(np.sum(present)), 0)
        assert self.system is not None
        by_system = np.argsort(self.system, kind="stable")
        starts = np.searchsorted(self.system[by_system], np.arange(len(self.table.systems)))

        def update(drawn: np.ndarray, repeats: np.ndarray, done: slice) -> None:
            means = [_sums(repeats, v, by_system, starts) for v in (self.x, self.y, np.ones(len(self.x)))]
            with np.errstate(invalid="ignore", divide="ignore"):
                rx, ry = means[0] / means[2], means[1] / means[2]
            for name in self.coefficients:
                resampled[("system", name)][done] = batched(name, rx, ry, means[2] > 0)

        return update

    def _global(self, figures: dict[tuple[str, str], _Figure], resampled: dict[tuple[str, str], np.ndarray]) -> _Update:
        """The coefficient over all rows; resampled over the drawn rows, each as often as drawn."""
        for name in self.coefficients:
            figures[("global", name)] = (coefficient(name, self.x, self.y), resampled[("global", name)], len(self.x), 0)
        weighted = Weighted(self.x, self.y)

        def update(drawn: np.ndarray, repeats: np.ndarray, done: slice) -> None:
            for name, values in weighted.coefficients(self.coefficients, repeats).items():
                resampled[("global", name)][done] = values

        return update


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


def _kendall_like(
    table: ScoreTable,
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


class Bootstrap:
    """Every figure of ``table`` on the same bootstrap draws of its groups (``options``' resamples and seed),
    each series (a scorer and human column on a set of kept rows) computed once; ``progress(done, total)`` is
    called as resamples are computed (``total``: every pass's)."""

    def __init__(
        self, table: ScoreTable, options: CorrelateOptions, progress: Callable[[int, int], None] | None = None
    ) -> None:
        self.table, self.options, self.levels = table, options, options.chosen_levels
        counted = None if progress is None else _Counter(progress, self._passes() * options.resamples)
        self.draws = _Draws(len(table.groups), table.rows, options.resamples, options.seed, counted)
        self._series: dict[tuple[str, str, bytes], _Series] = {}

    def series(self, name: str, column: str, kept: np.ndarray) -> _Series:
        """Scorer ``name`` against human ``column`` on the ``kept`` rows."""
        key = (name, column, kept.tobytes())
        if key not in self._series:
            table = self.table
            self._series[key] = _Series(
                table, table.scores[name], table.human[column], kept, self.draws, self.levels, self.options.coefficients
            )
        return self._series[key]

    def _passes(self) -> int:
        """Passes over the draws: one per series, one per set of preference pairs."""
        table, options = self.table, self.options
        wanted = {
            (name, column, table.kept(name, column).tobytes()) for column in options.human for name in table.scorers
        }
        if options.compare:
            for column in options.human:
                for a, b in combinations(table.scorers, 2):
                    kept = (table.kept(a, column) & table.kept(b, column)).tobytes()
                    wanted |= {(a, column, kept), (b, column, kept)}
        return len(wanted) + (options.pairs is not None) + (options.pairs_from is not None)

    def figures(self) -> tuple[list[CorrelationFigure], dict[str, dict[str, int]]]:
        """Every scorer's figures against every human column, and the rows each pair left out."""
        table, options = self.table, self.options
        figures, left_out = [], {}
        for column in options.human:
            for name in table.scorers:
                failed = np.isnan(table.scores[name])
                left_out[f"{name}|{column}"] = {
                    "scorer failed": int(np.sum(failed)),
                    "human missing": int(np.sum(np.isnan(table.human[column]) & ~failed)),
                }
                series = self.series(name, column, table.kept(name, column))
                for level in self.levels:
                    for coef in options.coefficients:
                        value, resampled, n, skipped = series.figure(level, coef)
                        low, high = _interval(resampled, options.confidence)
                        figures.append(
                            CorrelationFigure(name, column, level, coef, _value(value), low, high, n, skipped)
                        )
        return figures, left_out

    def comparisons(self) -> tuple[list[MetricComparison], list[WilliamsTest]]:
        """Every pair of scorers on the rows both scored: the paired bootstrap, and Williams' test at system level."""
        table, options = self.table, self.options
        comparisons, williams = [], []
        for column in options.human:
            for a, b in combinations(table.scorers, 2):
                kept = table.kept(a, column) & table.kept(b, column)
                series_a, series_b = self.series(a, column, kept), self.series(b, column, kept)
                for level in self.levels:
                    for coef in options.coefficients:
                        va, da, _, _ = series_a.figure(level, coef)
                        vb, db, _, _ = series_b.figure(level, coef)
                        comparisons.append(_comparison(column, level, coef, a, b, va, vb, da - db, options.confidence))
                test = _williams(series_a, table.scores[b][kept]) if "system" in self.levels else None
                if test is not None:
                    williams.append(WilliamsTest(column, a, b, *test))
        return comparisons, williams

    def preferences(self) -> list[KendallLike]:
        """WMT's Kendall-like τ of every scorer over the preference pairs (``pairs``, ``pairs_from``)."""
        table, options = self.table, self.options
        ranked = []
        if options.pairs is not None:
            assert options.group_by is not None and options.system_key is not None
            found = file_pairs(table, options.pairs, options.group_by, options.system_key)
            ranked += _kendall_like(table, table.scorers, *found, self.draws, options.confidence)
        if options.pairs_from is not None:
            found = column_pairs(table, options.pairs_from, options.min_difference)
            ranked += _kendall_like(table, table.scorers, *found, self.draws, options.confidence)
        return ranked
