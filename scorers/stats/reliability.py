"""Agreement among several raters (the jurors of a jury): Krippendorff's alpha and Fleiss' kappa, with intervals.

Ratings are a ``units x raters`` array of numbers, ``NaN`` where a rater did not rate the unit
(a juror that failed on the row). Nominal and ordinal values are codes (the position of a choice
in the scale), interval and ratio values are scores.

- :func:`krippendorff_alpha`: alpha at a level of measurement (``nominal``, ``ordinal``, ``interval``,
  ``ratio``), over every unit rated at least twice (a unit rated once has no pair); equal to the
  ``krippendorff`` package's ``alpha`` (tested to 1e-12).
- :func:`fleiss_kappa`: Fleiss' kappa of the values as nominal categories, over the units every rater
  rated (the others are left out); equal to statsmodels' ``fleiss_kappa`` of ``aggregate_raters``.
- :func:`alpha_with_ci`, :func:`fleiss_kappa_with_ci`: the figure as an :class:`~scorers.stats.agreement.Estimate`
  with a percentile bootstrap interval over the units it is computed on, drawn as
  :func:`scorers.stats.resample.bootstrap_indices` draws them from ``numpy.random.default_rng(seed)``.
- :func:`jury_agreement`: a jury's report: both figures, the share of unanimous units and each juror's
  agreement with the jury's verdict and with human labels (:class:`JuryAgreement`).

A figure undefined on the data (no unit rated twice, a single value throughout) is ``None`` with a
reason, never a NaN. The bootstrap is vectorised: each unit's statistics are computed once and a
resample is a weighting of the units by how often it drew each (a matrix product).

>>> ratings = [[1, 1, 1], [2, 2, 1], [3, 3, 3], [1, 2, float("nan")]]
>>> round(krippendorff_alpha(ratings, "nominal"), 4), round(krippendorff_alpha(ratings, "interval"), 4)
(0.4872, 0.7619)
>>> round(fleiss_kappa(ratings), 4)  # the first three units: the fourth has a missing rating
0.6538
>>> report = jury_agreement(ratings, ["a", "b", "c"], level="ordinal", verdicts=[1, 2, 3, 1], resamples=200)
>>> report.units, report.unanimous, report.per_juror["c"]["answered"]
(4, 0.5, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence, get_args

import numpy as np

from ..errors import ConfigError, DataError
from .agreement import BOOTSTRAP_METHOD, Estimate
from .resample import bootstrap_indices

__all__ = [
    "Level",
    "LEVELS",
    "krippendorff_alpha",
    "fleiss_kappa",
    "alpha_with_ci",
    "fleiss_kappa_with_ci",
    "JuryAgreement",
    "jury_agreement",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
#: The levels of measurement, in Stevens' order.
LEVELS: tuple[Level, ...] = get_args(Level)

#: Why each figure can be undefined (the ``reason`` of an Estimate whose value is ``None``).
NO_PAIRS = "no unit has ratings from 2 raters"
ONE_VALUE = "every rating is the same value: there is no disagreement to expect"
NO_COMPLETE_UNITS = "no unit was rated by every rater"
FEWER_THAN_TWO_RATERS = "Fleiss' kappa needs at least 2 raters"

#: The most numbers a block of resamples holds at once (resamples x units or pairs): bounds memory, not results.
_BLOCK = 1 << 22


# ------------------------------------------------------------------ input
def _ratings(ratings: Any) -> np.ndarray:
    """``ratings`` as a 2-D float array, or a DataError saying what is wrong with it."""
    try:
        matrix = np.asarray(ratings, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"ratings must be numbers (NaN for a missing rating): {exc}") from None
    if matrix.ndim != 2:
        raise DataError(f"ratings must be 2-D (units x raters), got shape {matrix.shape}")
    if np.isinf(matrix).any():
        raise DataError("ratings must be finite numbers (NaN for a missing rating), got an infinity")
    return matrix


def _level(level: str) -> str:
    if level not in LEVELS:
        raise ConfigError(f"level {level!r} is not a level of measurement: one of {', '.join(LEVELS)}")
    return level


def _check_values(matrix: np.ndarray, level: str, domain: Sequence[float] | None) -> None:
    """DataError for a rating off ``domain`` or, at the ratio level, below 0; ConfigError for a bad domain."""
    rated = matrix[~np.isnan(matrix)]
    if domain is not None:
        try:
            allowed = np.asarray(domain, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"domain must be numbers: {exc}") from None
        if allowed.ndim != 1 or not np.isfinite(allowed).all() or len(np.unique(allowed)) != len(allowed):
            raise ConfigError(f"domain must be distinct finite numbers, got {list(np.ravel(allowed))}")
        off = np.unique(rated[~np.isin(rated, allowed)])
        if len(off):
            shown = ", ".join(f"{value:g}" for value in off[:5]) + (", ..." if len(off) > 5 else "")
            raise DataError(f"ratings hold values off the domain {[float(v) for v in allowed]}: {shown}")
    if level == "ratio" and (rated < 0).any():
        raise DataError(f"ratio ratings must be at least 0, got {rated.min():g}")


# ------------------------------------------------------------------ sufficient statistics
def _value_counts(units: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
    """The distinct values of ``units`` (ascending), each rating's index among them (-1 where missing) and the
    ``(units, values)`` sparse count of each value in each unit."""
    from scipy import sparse

    present = ~np.isnan(units)
    values = np.unique(units[present])
    codes = np.full(units.shape, -1)
    codes[present] = np.searchsorted(values, units[present])
    row, column = np.nonzero(present)
    counts = sparse.csr_array((np.ones(len(row)), (row, codes[row, column])), shape=(len(units), len(values)))
    return values, codes, counts


def _differing_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of raters of a unit who gave it different values: the unit, the lower and the higher value index."""
    found = [(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))]
    for first in range(codes.shape[1]):
        for second in range(first + 1, codes.shape[1]):
            a, b = codes[:, first], codes[:, second]
            differ = np.flatnonzero((a >= 0) & (b >= 0) & (a != b))
            found.append((differ, np.minimum(a, b)[differ], np.maximum(a, b)[differ]))
    units, lower, upper = (np.concatenate(parts) for parts in zip(*found))
    return units, lower, upper


def _ratio_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``((a - b) / (a + b))²``, 0 where ``a + b`` is 0 (as the ``krippendorff`` package)."""
    sums = a + b
    return np.divide(a - b, sums, out=np.zeros(np.broadcast(a, b).shape), where=sums != 0) ** 2


@dataclass(frozen=True)
class _AlphaUnits:
    """The pairable units' statistics, from which alpha on any weighting of the units follows.

    With ``n_c`` the pairable values equal to value ``c`` (the coincidence matrix's margins), ``n`` their
    total and ``d`` the level's distance, alpha is ``1 - (n - 1) * sum_u D_u / sum_ck n_c n_k d_ck``, where
    a unit's observed disagreement ``D_u`` is ``sum_ck n_uc n_uk d_ck / (m_u - 1)`` over its ``m_u`` ratings.
    Interval works on each unit's moments (so continuous scores cost nothing more); the other levels on the
    distinct values, whose number bounds their cost.
    """

    level: str
    low: np.ndarray  # (U,) each unit's smallest and largest rating: a weighting with one value is undefined
    high: np.ndarray
    counts: Any  # (U, V) sparse count of each value in each unit; interval: (U, 3) dense m, sum, sum of squares
    values: np.ndarray  # (V,) the distinct pairable values; interval: empty
    observed: np.ndarray | None = None  # (U,) D_u where the distance is fixed (not ordinal)
    pairs: Any = None  # ordinal: (U, P) sparse, per unit and pair of values {c, k}: 2 / (m_u - 1) per rater pair
    pair_values: tuple[np.ndarray, np.ndarray] | None = None  # ordinal: (P,) value indices c < k of each pair

    @property
    def rows(self) -> int:
        return len(self.low)

    @property
    def width(self) -> int:
        """The widest array a resample makes: units, values or value pairs."""
        return max(self.rows, len(self.values), 0 if self.pairs is None else self.pairs.shape[1])

    @classmethod
    def of(cls, matrix: np.ndarray, level: str) -> "_AlphaUnits":
        units = matrix[(~np.isnan(matrix)).sum(axis=1) >= 2]
        m = (~np.isnan(units)).sum(axis=1).astype(np.float64)
        low, high = np.nanmin(units, axis=1, initial=np.inf), np.nanmax(units, axis=1, initial=-np.inf)
        if level == "interval":
            # centred on the mean of all pairable ratings: a shift leaves interval distances as they are,
            # and keeps sum-of-squares arithmetic from cancelling
            centred = units - (np.nanmean(units) if len(units) else 0.0)
            total, squares = np.nansum(centred, axis=1), np.nansum(centred**2, axis=1)
            spread = np.nansum((centred - (total / np.maximum(m, 1))[:, None]) ** 2, axis=1)
            moments = np.column_stack([m, total, squares])
            return cls(level, low, high, moments, np.empty(0), observed=2 * m * spread / (m - 1))
        values, codes, counts = _value_counts(units)
        if level == "nominal":
            observed = (m**2 - counts.multiply(counts).sum(axis=1)) / (m - 1)
            return cls(level, low, high, counts, values, observed=observed)
        unit, lower, upper = _differing_pairs(codes)
        weight = 2 / (m[unit] - 1)
        if level == "ratio":
            disagreement = weight * _ratio_distance(values[lower], values[upper])
            return cls(level, low, high, counts, values, observed=np.bincount(unit, disagreement, minlength=len(units)))
        from scipy import sparse

        ids, column = np.unique(lower * len(values) + upper, return_inverse=True)
        pairs = sparse.csr_array((weight, (unit, column)), shape=(len(units), len(ids)))
        return cls(level, low, high, counts, values, pairs=pairs, pair_values=(ids // len(values), ids % len(values)))

    def figures(self, weights: np.ndarray) -> np.ndarray:
        """Alpha on each row of ``weights`` (resamples x units: how often each unit counts); NaN where undefined."""
        n = weights @ self.counts
        if self.level == "interval":
            total, first, second = n.T
            expected = 2 * (total * second - first**2)
        else:
            total = n.sum(axis=1)
        if self.level == "ordinal":  # the interval distance of the values' mid-ranks among the pairable values
            ranks = np.cumsum(n, axis=1) - n / 2
            centred = ranks - ((n * ranks).sum(axis=1) / total)[:, None]
            expected = 2 * total * (n * centred**2).sum(axis=1)
            assert self.pair_values is not None
            lower, upper = self.pair_values
            observed = ((weights @ self.pairs) * (ranks[:, upper] - ranks[:, lower]) ** 2).sum(axis=1)
        else:
            assert self.observed is not None
            observed = weights @ self.observed
        if self.level == "nominal":
            expected = total**2 - (n**2).sum(axis=1)
        elif self.level == "ratio":
            expected = np.zeros(len(n))
            step = max(1, _BLOCK // max(len(self.values), 1))  # distances a block of values at a time
            for start in range(0, len(self.values), step):
                block = slice(start, start + step)
                distances = _ratio_distance(self.values[:, None], self.values[None, block])
                expected += ((n @ distances) * n[:, block]).sum(axis=1)
        one_value = weights @ (self.low < self.high) == 0  # no drawn unit holds two values: maybe one in all
        if one_value.any():
            drawn = weights[one_value] > 0
            low, high = np.where(drawn, self.low, np.inf).min(axis=1), np.where(drawn, self.high, -np.inf).max(axis=1)
            one_value[one_value] = low == high
        with np.errstate(divide="ignore", invalid="ignore"):
            alphas = 1 - (total - 1) * observed / expected
        return np.where(one_value, np.nan, alphas)


@dataclass(frozen=True)
class _FleissUnits:
    """The complete units' statistics: each unit's agreement ``P_i`` and its count of each category."""

    raters: int
    agreement: np.ndarray  # (U,)
    counts: Any  # (U, V) sparse

    @property
    def rows(self) -> int:
        return len(self.agreement)

    @property
    def width(self) -> int:
        return max(self.rows, self.counts.shape[1])

    @classmethod
    def of(cls, matrix: np.ndarray) -> "_FleissUnits":
        raters = matrix.shape[1]
        _, _, counts = _value_counts(matrix[~np.isnan(matrix).any(axis=1)])
        agreement = (counts.multiply(counts).sum(axis=1) - raters) / (raters * (raters - 1.0))
        return cls(raters, agreement, counts)

    def figures(self, weights: np.ndarray) -> np.ndarray:
        """Fleiss' kappa on each row of ``weights``, statsmodels' arithmetic; NaN where undefined."""
        units = weights.sum(axis=1)
        shares = (weights @ self.counts) / (units * self.raters)[:, None]
        expected = (shares**2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappas = ((weights @ self.agreement) / units - expected) / (1 - expected)
        return np.where((shares > 0).sum(axis=1) < 2, np.nan, kappas)


# ------------------------------------------------------------------ figures
def krippendorff_alpha(
    ratings: Any, level: Level = "nominal", *, domain: Sequence[float] | None = None
) -> float | None:
    """Krippendorff's alpha of ``ratings`` (units x raters, NaN = missing) at ``level``.

    ``domain``: the values a rating may take; a rating off it is a DataError. Values that never occur
    weigh nothing in alpha (as in Krippendorff's definition and the ``krippendorff`` package, whose
    ``value_domain`` it is), so the domain checks the ratings and never changes the figure; ordinal
    ranks are the order of the numbers. ``None`` when undefined: no unit rated twice, or a single value.

    >>> krippendorff_alpha([[1, 1], [2, 2], [3, 3]], "ordinal")
    1.0
    >>> krippendorff_alpha([[1, 1], [1, 1]]) is None
    True
    """
    return _value(_alpha_units(ratings, level, domain))


def fleiss_kappa(ratings: Any, *, domain: Sequence[float] | None = None) -> float | None:
    """Fleiss' kappa of ``ratings`` as nominal categories, over the units every rater rated.

    A unit with a missing rating is left out (Fleiss' kappa needs the same raters on every unit).
    ``domain`` checks the ratings as in :func:`krippendorff_alpha`. ``None`` when undefined: fewer
    than 2 raters, no complete unit, or a single category throughout.

    >>> round(fleiss_kappa([[0, 0, 0], [0, 1, 1], [1, 1, 1], [0, float("nan"), 0]]), 4)
    0.55
    """
    figure = _fleiss_units(ratings, domain)
    return None if figure is None else _value(figure)


def alpha_with_ci(
    ratings: Any,
    level: Level = "nominal",
    *,
    domain: Sequence[float] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """:func:`krippendorff_alpha` with its percentile bootstrap interval over the units rated at least twice.

    ``n`` is the number of those units. The interval is ``None`` (with a reason) when there are fewer
    than 2 of them or when alpha is undefined in some resample (one that drew a single value).

    >>> ratings = [[1, 1], [2, 2], [1, 2], [2, 3], [3, 3], [1, 1], [3, 2], [2, 2]]
    >>> estimate = alpha_with_ci(ratings, "ordinal", resamples=200)
    >>> round(estimate.value, 4), estimate.n, estimate.low < estimate.value < estimate.high
    (0.6954, 8, True)
    """
    _check_resampling(resamples, confidence)
    figure = _alpha_units(ratings, level, domain)
    return _estimate(figure, NO_PAIRS if not figure.rows else ONE_VALUE, resamples, confidence, seed)


def fleiss_kappa_with_ci(
    ratings: Any,
    *,
    domain: Sequence[float] | None = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """:func:`fleiss_kappa` with its percentile bootstrap interval over the units every rater rated (``n``).

    >>> fleiss_kappa_with_ci([[0, 0], [1, float("nan")]]).to_dict()
    {'value': None, 'ci': None, 'n': 1, 'reason': 'every rating is the same value: there is no disagreement to expect'}
    """
    _check_resampling(resamples, confidence)
    figure = _fleiss_units(ratings, domain)
    if figure is None:
        return Estimate(None, None, None, 0, FEWER_THAN_TWO_RATERS)
    reason = NO_COMPLETE_UNITS if not figure.rows else ONE_VALUE
    return _estimate(figure, reason, resamples, confidence, seed)


def _alpha_units(ratings: Any, level: str, domain: Sequence[float] | None) -> _AlphaUnits:
    matrix = _ratings(ratings)
    _check_values(matrix, _level(level), domain)
    return _AlphaUnits.of(matrix, level)


def _fleiss_units(ratings: Any, domain: Sequence[float] | None) -> _FleissUnits | None:
    matrix = _ratings(ratings)
    _check_values(matrix, "nominal", domain)
    return _FleissUnits.of(matrix) if matrix.shape[1] >= 2 else None


# ------------------------------------------------------------------ bootstrap
def _check_resampling(resamples: int, confidence: float) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise ConfigError(f"resamples must be an integer of at least 1, got {resamples!r}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be between 0 and 1, got {confidence!r}")


def _weights(rng: np.random.Generator, rows: int, resamples: int) -> np.ndarray:
    """How often each of ``rows`` rows is drawn in each of ``resamples`` bootstrap resamples (multinomial counts)."""
    drawn = bootstrap_indices(rng, rows, resamples) + rows * np.arange(resamples)[:, None]
    return np.bincount(drawn.ravel(), minlength=rows * resamples).reshape(resamples, rows).astype(np.float64)


def _value(units: _AlphaUnits | _FleissUnits) -> float | None:
    """The figure on all the units (each weighing 1), ``None`` where undefined."""
    value = units.figures(np.ones((1, units.rows)))[0] if units.rows else np.nan
    return None if np.isnan(value) else float(value)


def _estimate(
    units: _AlphaUnits | _FleissUnits, undefined: str, resamples: int, confidence: float, seed: int
) -> Estimate:
    """The figure on all the units and its percentile interval over ``resamples`` weightings drawn with ``seed``."""
    figure, rows, value = units.figures, units.rows, _value(units)
    if value is None:
        return Estimate(None, None, None, rows, undefined)
    if rows < 2:
        return Estimate(value, None, None, rows, "a confidence interval needs at least 2 rows")
    rng, block = np.random.default_rng(seed), max(1, _BLOCK // units.width)
    resampled = np.concatenate(
        [figure(_weights(rng, rows, min(block, resamples - start))) for start in range(0, resamples, block)]
    )
    undefined_in = int(np.isnan(resampled).sum())
    if undefined_in:
        reason = (
            f"no confidence interval: {undefined_in} of {resamples} resamples drew a single value"
            " (the figure is undefined)"
        )
        return Estimate(value, None, None, rows, reason)
    tail = (1 - confidence) / 2
    low, high = np.quantile(resampled, [tail, 1 - tail])
    return Estimate(value, float(low), float(high), rows)


# ------------------------------------------------------------------ juries
@dataclass(frozen=True)
class JuryAgreement:
    """How much a jury's jurors agree, with one another, with the jury's verdict and with human labels.

    ``units``: rows rated by at least 2 jurors (alpha's ``n``); ``fleiss_kappa`` is over the rows every
    juror rated (its ``n``); ``unanimous``: the share of ``units`` where every answering juror gave the
    same value. ``per_juror[name]``: ``answered`` (rows the juror rated), ``with_jury`` and ``with_labels``
    (``None`` without labels), each Krippendorff's alpha of the juror's column and the other column at
    the jury's level, over the rows both have. ``bootstrap`` says how every interval was drawn.
    """

    level: str
    jurors: tuple[str, ...]
    units: int
    alpha: Estimate
    fleiss_kappa: Estimate
    unanimous: float | None
    per_juror: dict[str, dict[str, Any]]
    bootstrap: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict: the Estimates as ``{"value", "ci", "n"[, "reason"]}``."""
        return {
            "level": self.level,
            "jurors": list(self.jurors),
            "units": self.units,
            "alpha": self.alpha.to_dict(),
            "fleiss_kappa": self.fleiss_kappa.to_dict(),
            "unanimous": self.unanimous,
            "per_juror": {
                name: {
                    "answered": figures["answered"],
                    "with_jury": figures["with_jury"].to_dict(),
                    "with_labels": None if figures["with_labels"] is None else figures["with_labels"].to_dict(),
                }
                for name, figures in self.per_juror.items()
            },
            "bootstrap": dict(self.bootstrap),
        }

    def table(self) -> str:
        """The human-readable lines the CLI prints."""
        level = f"{int(round(self.bootstrap['confidence'] * 100))}% CI"
        lines = [
            f"jury of {len(self.jurors)} ({', '.join(self.jurors)}), {self.level}: {self.units} rows rated by 2 or more"
            f", unanimous {_fmt(self.unanimous)}",
            f"{'figure':<22} {'value':>8}  {level:<20} {'n':>5}",
            _line("Krippendorff's alpha", self.alpha),
            _line("Fleiss' kappa", self.fleiss_kappa)
            + ("" if self.fleiss_kappa.reason else "  (rows every juror rated)"),
        ]
        for name, figures in self.per_juror.items():
            lines.append(_line(f"{name} with jury", figures["with_jury"]))
            if figures["with_labels"] is not None:
                lines.append(_line(f"{name} with labels", figures["with_labels"]))
        answered = ", ".join(f"{name} {figures['answered']}" for name, figures in self.per_juror.items())
        drawn = self.bootstrap
        lines.append(f"rows answered: {answered}")
        lines.append(f"bootstrap: {drawn['method']}, {drawn['resamples']} resamples of rows, seed {drawn['seed']}")
        return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _line(name: str, figure: Estimate) -> str:
    ci = "-" if figure.low is None else f"[{_fmt(figure.low)}, {_fmt(figure.high)}]"
    return f"{name:<22} {_fmt(figure.value):>8}  {ci:<20} {figure.n:>5}" + (
        f"  ({figure.reason})" if figure.reason else ""
    )


def _column(values: Any, rows: int, name: str) -> np.ndarray:
    """``verdicts`` or ``labels`` as a float column of ``rows`` values, or a DataError naming it."""
    try:
        column = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numbers (NaN where there is none): {exc}") from None
    if column.shape != (rows,) or np.isinf(column).any():
        raise DataError(
            f"{name} must be {rows} finite numbers or NaN, one per row of ratings, got shape {column.shape}"
        )
    return column


def jury_agreement(
    ratings: Any,
    jurors: Sequence[str],
    *,
    level: Level,
    domain: Sequence[float] | None = None,
    verdicts: Any = None,
    labels: Any = None,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> JuryAgreement:
    """The agreement report of a jury: ``ratings`` (rows x jurors, NaN where a juror gave no verdict).

    ``verdicts``: the jury's verdict per row (NaN where the row was not scored); ``labels``: human labels
    per row on the same coding (NaN where there is none). A juror's agreement with the jury or with the
    labels is Krippendorff's alpha of the two columns at ``level``; those columns may hold values off
    ``domain`` (a mean of jurors), so only the jurors' ratings are checked against it. Each figure's
    interval resamples the rows it is computed on, from ``numpy.random.default_rng(seed)``.
    A juror's figure with the jury is optimistic: its own verdict is part of the jury's.

    >>> report = jury_agreement([[0, 0], [1, 1], [1, 0]], ["a", "b"], level="nominal", resamples=100)
    >>> report.units, report.unanimous, report.alpha.n, report.per_juror["a"]["with_labels"]
    (3, 0.6666666666666666, 3, None)
    """
    matrix = _ratings(ratings)
    names = tuple(jurors)
    if len(names) != matrix.shape[1]:
        raise DataError(f"ratings have {matrix.shape[1]} columns for {len(names)} jurors ({', '.join(names)})")
    if len(set(names)) != len(names):
        raise ConfigError(f"juror names must be distinct, got {', '.join(names)}")
    _check_values(matrix, _level(level), domain)
    _check_resampling(resamples, confidence)
    drawn: dict[str, Any] = {"resamples": resamples, "confidence": confidence, "seed": seed}
    rows = len(matrix)
    jury = np.full(rows, np.nan) if verdicts is None else _column(verdicts, rows, "verdicts")
    human = None if labels is None else _column(labels, rows, "labels")
    rated = ~np.isnan(matrix)
    pairable = matrix[rated.sum(axis=1) >= 2]
    same = [len(np.unique(row[~np.isnan(row)])) == 1 for row in pairable]
    per_juror = {
        name: {
            "answered": int(rated[:, index].sum()),
            "with_jury": alpha_with_ci(np.column_stack([matrix[:, index], jury]), level, **drawn),
            "with_labels": None
            if human is None
            else alpha_with_ci(np.column_stack([matrix[:, index], human]), level, **drawn),
        }
        for index, name in enumerate(names)
    }
    return JuryAgreement(
        level=level,
        jurors=names,
        units=len(pairable),
        alpha=alpha_with_ci(matrix, level, **drawn),
        fleiss_kappa=fleiss_kappa_with_ci(matrix, **drawn),
        unanimous=float(np.mean(same)) if same else None,
        per_juror=per_juror,
        bootstrap={"method": BOOTSTRAP_METHOD, **drawn, "over": "rows"},
    )
