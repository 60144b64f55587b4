"""A leaderboard from pairwise verdicts: Bradley-Terry strengths by maximum likelihood, with bootstrap intervals.

:func:`rank` reads pairwise comparisons (a ``kind: pairwise`` judge's verdicts in results files of ``run``, or
any rows with a winner column such as human preference data; :mod:`scorers.stats._comparisons`) and fits the
**Bradley-Terry model** ``P(i beats j) = 1 / (1 + exp(-(theta_i - theta_j)))`` by maximum likelihood
(:mod:`scorers.stats._bradley_terry`), the strengths identified by a mean log-strength of 0.

- **Ties** (``ties``): ``davidson``, Davidson (1970)'s model, whose tie parameter ``nu`` is fitted jointly
  (``P(i) : P(j) : P(tie) = pi_i : pi_j : nu * sqrt(pi_i * pi_j)`` with ``pi = exp(theta)``); or
  ``half``, a tie is half a win each way.
- **Scale**: a rating ``anchor_rating + 400 * log10(odds)`` above the anchor (the mean strength, or the
  system ``anchor``): a 400-point gap is 10:1 odds, 200 points about 3:1.
- **Intervals**: a percentile bootstrap over prompts (``prompt``: all comparisons of a prompt resampled
  together), ``resamples`` draws of ``numpy.random.default_rng(seed).choice(P, (resamples, P))``; each draw's
  counts are the prompts' counts weighted by how often the draw holds them, fitted in one batch. A draw where
  some ranked system's strength has no finite maximum (it won, or lost, all its drawn comparisons, or was not
  drawn) is left out of the intervals, and counted.
- **Style control** (``style``): covariates ``(a - b) / (a + b)`` of the two answers' characters, markdown
  headers, list items or bold spans, fitted jointly (``d = theta_i - theta_j + beta . x``); each coefficient
  with its interval, and the leaderboard without style control beside it.
- **Position swap** (``swap``): a verdict whose two orders disagreed counts as a tie, is dropped, or (keep)
  every swapped verdict counts as two comparisons, one per order; the count is shown.
- **Undefined** figures are ``None`` with a reason: systems outside the largest connected comparison graph
  (no comparison links them to the ranked ones, so no maximum exists across them; the other components are
  listed), and, without ``prior``, systems whose strength is infinite (a system that won, or lost, every
  comparison: Ford 1957's condition fails). ``prior`` adds ``prior * sum(theta**2)`` (choix's ``alpha``).

>>> rows = [{"model_a": a, "model_b": b, "winner": w, "input": i}
...         for i, (a, b, w) in enumerate([("x", "y", "a"), ("y", "x", "a"), ("x", "y", "a"), ("y", "z", "b"),
...                                        ("z", "y", "a"), ("x", "z", "tie"), ("z", "x", "b")])]
>>> ranking = rank(rows, winner="winner", ties="half", resamples=0)
>>> [(s.system, round(s.rating)) for s in ranking.systems]
[('x', 1092), ('z', 1067), ('y', 841)]
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from scipy.sparse import csr_matrix

from .._util import did_you_mean
from ..errors import ConfigError
from ..options import RankOptions
from ._bradley_terry import Design, Fit, bounded, components, fit_counts, fit_many, strongly_connected
from ._comparisons import Comparisons, read_comparisons

__all__ = ["rank", "compute_ranking", "Ranking", "SystemRating", "Coefficient", "FORMAT", "FORMAT_VERSION", "SCALE"]

#: The ``format`` of :meth:`Ranking.to_dict` (``rank -o``), read back by the report's leaderboard.
FORMAT = "scorers-ranking"
FORMAT_VERSION = 1
#: Rating points per natural log-odds unit: 400 points are a factor of 10 in the odds.
SCALE = 400 / math.log(10)
SCALE_TEXT = "rating = anchor + 400·log10(odds): a 400-point gap is 10:1 odds, 200 points about 3.2:1"
#: Prompts drawn per chunk of bootstrap resamples (resamples x prompts), bounding memory on large data.
_DRAWN_PROMPTS = 1 << 22


@dataclass(frozen=True)
class SystemRating:
    """One system: its rating with its interval (None with a ``reason`` when undefined), its comparisons and
    wins, losses, ties, and its win rate against the field ((wins + ties / 2) / comparisons)."""

    system: str
    rank: int | None
    rating: float | None
    #: the natural log-strength (mean 0 over the ranked systems): the model's parameter
    strength: float | None
    low: float | None
    high: float | None
    comparisons: int
    wins: int
    losses: int
    ties: int
    win_rate: float | None
    reason: str | None = None
    #: the rating without style control (when style covariates are fitted) and its interval
    unstyled: float | None = None
    unstyled_low: float | None = None
    unstyled_high: float | None = None


@dataclass(frozen=True)
class Coefficient:
    """A fitted parameter with its bootstrap interval: a style covariate (log-odds per unit of the normalised
    difference; ``rating_points`` on the rating scale) or Davidson's tie parameter ``nu``."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    rating_points: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Ranking:
    """The result of :func:`rank`: :meth:`table` for people, :meth:`to_dict` for JSON (``scorers-ranking``)."""

    sources: tuple[str, ...]
    options: dict[str, Any]
    verdicts: str
    systems: tuple[SystemRating, ...]
    tie_parameter: Coefficient | None
    covariates: tuple[Coefficient, ...]
    wins: list[list[int]]
    ties: list[list[int]]
    counts: dict[str, Any]
    bootstrap: dict[str, Any]
    fit: dict[str, Any]
    components: list[list[str]] = field(default_factory=list)

    def system(self, name: str) -> SystemRating:
        """The entry of system ``name`` (a ``KeyError`` when there is none)."""
        for entry in self.systems:
            if entry.system == name:
                return entry
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "sources": list(self.sources),
            "options": self.options,
            "verdicts": self.verdicts,
            "model": {
                "name": "Bradley-Terry, maximum likelihood",
                "ties": self.options["ties"],
                "identification": "mean log-strength 0",
                "scale": SCALE_TEXT,
                "anchor": {"system": self.options["anchor"], "rating": self.options["anchor_rating"]},
                "prior": self.options["prior"],
            },
            "systems": [asdict(s) for s in self.systems],
            "tie_parameter": None if self.tie_parameter is None else asdict(self.tie_parameter),
            "covariates": [asdict(c) for c in self.covariates],
            "win_matrix": {"systems": list(self.counts["systems"]), "wins": self.wins, "ties": self.ties},
            "components": self.components,
            "counts": self.counts,
            "bootstrap": self.bootstrap,
            "fit": self.fit,
        }

    def table(self) -> str:
        """The leaderboard, the fitted parameters, the win matrix and what was left out, as plain text."""
        return ranking_table(self)


def rank(data: Any, **options: Any) -> Ranking:
    """Rank systems from pairwise verdicts: results files of ``run`` with a pairwise judge (paths), preference data
    files with a winner column, or rows (mappings). The options are :class:`~scorers.options.RankOptions`' (see
    the signature and the module doc). Raises :class:`DataError` for bad rows, :class:`ConfigError` for bad
    options. The steps: :func:`~scorers.stats._comparisons.read_comparisons`, :func:`compute_ranking`."""
    checked = RankOptions(**options)
    sources = _names(data)
    return compute_ranking(read_comparisons(data, checked), checked, sources)


# inspect.signature reads __signature__: the options are RankOptions' fields
rank.__signature__ = RankOptions.signature(  # type: ignore[attr-defined]
    [inspect.Parameter("data", inspect.Parameter.POSITIONAL_OR_KEYWORD)], returns="Ranking"
)


def _names(data: Any) -> tuple[str, ...]:
    if isinstance(data, (str, os.PathLike)):
        return (os.fspath(data),)
    if isinstance(data, Sequence) and all(isinstance(item, (str, os.PathLike)) for item in data):
        return tuple(os.fspath(item) for item in data)
    return ("rows",)


# ------------------------------------------------------------------ counts
def _pair_counts(found: Comparisons, systems: int) -> tuple[csr_matrix, np.ndarray, np.ndarray]:
    """Per prompt and unordered pair (i < j): wins of i, wins of j, ties, as a sparse ``P x (K * 3)`` matrix, and
    the pairs' systems."""
    low = np.minimum(found.first, found.second)
    high = np.maximum(found.first, found.second)
    pairs, cell = np.unique(low * systems + high, return_inverse=True)
    flipped = found.first > found.second
    outcome = np.where(flipped, 1.0 - found.outcome, found.outcome)
    kind = np.where(outcome == 1.0, 0, np.where(outcome == 0.0, 1, 2))
    counts = csr_matrix((np.ones(len(cell)), (found.prompt, cell * 3 + kind)), shape=(found.prompts, len(pairs) * 3))
    return counts, pairs // systems, pairs % systems


def _draws(rng: np.random.Generator, prompts: int, count: int) -> np.ndarray:
    """``count`` bootstrap resamples of the prompts, each as how often it drew each prompt (``count x P``): the
    next rows of ``rng.choice(prompts, (resamples, prompts))``."""
    drawn = rng.choice(prompts, (count, prompts)) + np.arange(count)[:, None] * prompts
    return np.bincount(drawn.ravel(), minlength=count * prompts).reshape(count, prompts).astype(float)


def _beaten(first: np.ndarray, second: np.ndarray, counts: np.ndarray, systems: int) -> np.ndarray:
    """``R x n x n``: how often i won against or tied with j, from pair counts ``R x K x 3``."""
    beaten = np.zeros((len(counts), systems, systems))
    beaten[:, first, second] += counts[..., 0] + counts[..., 2]
    beaten[:, second, first] += counts[..., 1] + counts[..., 2]
    return beaten


def _record(found: Comparisons) -> tuple[np.ndarray, np.ndarray]:
    """The win and tie matrices of every system (``wins[i][j]``: i beat j; ``ties`` symmetric)."""
    n = len(found.systems)
    wins, ties = np.zeros((n, n), int), np.zeros((n, n), int)
    np.add.at(wins, (found.first[found.outcome == 1.0], found.second[found.outcome == 1.0]), 1)
    np.add.at(wins, (found.second[found.outcome == 0.0], found.first[found.outcome == 0.0]), 1)
    drawn = found.outcome == 0.5
    np.add.at(ties, (found.first[drawn], found.second[drawn]), 1)
    return wins, ties + ties.T


# ------------------------------------------------------------------ the ranking
def compute_ranking(found: Comparisons, options: RankOptions, sources: Sequence[str] = ("rows",)) -> Ranking:
    """The ranking of :func:`rank` over the comparisons :func:`~scorers.stats._comparisons.read_comparisons`
    read."""
    n = len(found.systems)
    wins, ties = _record(found)
    reasons, groups = _unranked(found, wins, ties, options)
    ranked = [i for i in range(n) if i not in reasons]
    if options.anchor is not None:
        _check_anchor(options.anchor, found.systems, reasons)
    styled = _Model(found, ranked, options, style=bool(options.style))
    plain = _Model(found, ranked, options, style=False) if options.style else None
    rng = np.random.default_rng(options.seed)
    step = max(1, _DRAWN_PROMPTS // max(1, found.prompts))
    for start in range(0, options.resamples, step):
        weights = _draws(rng, found.prompts, min(step, options.resamples - start))
        for model in (styled, plain):
            if model is not None:
                model.resample(weights)
    for model in (styled, plain):
        if model is not None:
            model.resampled = model.collected()
    ratings = styled.ratings()
    unstyled = plain.ratings() if plain is not None else {}
    order = sorted(ranked, key=lambda i: -ratings[i][0] if i in ratings else math.inf)
    entries = []
    for position, i in enumerate([*order, *(i for i in range(n) if i not in ranked)], 1):
        games = int(wins[i].sum() + wins[:, i].sum() + ties[i].sum())
        value, low, high, strength = ratings.get(i, (None, None, None, None))
        extra = unstyled.get(i, (None, None, None, None))
        entries.append(
            SystemRating(
                system=found.systems[i],
                rank=position if i in ranked and value is not None else None,
                rating=value,
                strength=strength,
                low=low,
                high=high,
                comparisons=games,
                wins=int(wins[i].sum()),
                losses=int(wins[:, i].sum()),
                ties=int(ties[i].sum()),
                win_rate=float(wins[i].sum() + ties[i].sum() / 2) / games if games else None,
                reason=reasons.get(i) or styled.reason,
                unstyled=extra[0],
                unstyled_low=extra[1],
                unstyled_high=extra[2],
            )
        )
    return Ranking(
        sources=tuple(sources),
        options=options.model_dump(),
        verdicts=found.verdicts,
        systems=tuple(entries),
        tie_parameter=styled.tie_parameter(),
        covariates=styled.coefficients(options.style),
        wins=wins.tolist(),
        ties=ties.tolist(),
        counts=_counts(found, options),
        bootstrap={
            "method": "percentile",
            "unit": "prompt",
            "resamples": options.resamples,
            "used": styled.used,
            "left_out": options.resamples - styled.used,
            "seed": options.seed,
            "confidence": options.confidence,
            **({"used_without_style": plain.used} if plain is not None else {}),
        },
        fit=styled.fit_summary(),
        components=[[found.systems[i] for i in group] for group in groups],
    )


def _counts(found: Comparisons, options: RankOptions) -> dict[str, Any]:
    return {
        "systems": found.systems,
        "rows": found.rows,
        "comparisons": len(found.first),
        "prompts": found.prompts,
        "left_out": found.left_out,
        "swap": {"swapped": found.swapped, "disagreed": found.disagreed, "counted_as": options.swap},
        "without_metadata": found.without_metadata,
    }


def _unranked(
    found: Comparisons, wins: np.ndarray, ties: np.ndarray, options: RankOptions
) -> tuple[dict[int, str], list[list[int]]]:
    """Systems without a finite strength, with the reason, and the components of the comparison graph (largest
    first)."""
    n = len(found.systems)
    labels = components(n, wins + wins.T + ties, "weak")
    groups = sorted(
        (np.flatnonzero(labels == g).tolist() for g in set(labels.tolist())),
        key=lambda g: (-len(g), -int(wins[np.ix_(g, g)].sum() + ties[np.ix_(g, g)].sum()), g[0]),
    )
    reasons: dict[int, str] = {}
    main = groups[0]
    for group in groups[1:]:
        names = ", ".join(found.systems[i] for i in group)
        for i in group:
            if not wins[i].any() and not wins[:, i].any() and not ties[i].any():
                reasons[i] = "no comparison: every row that names it was left out (see the counts)"
                continue
            reasons[i] = (
                f"no comparison links it to the ranked systems (its component: {names}); strengths exist only "
                "within a connected comparison graph"
            )
    if options.prior == 0:
        _, directions = bounded((wins + ties)[np.ix_(main, main)])
        for local, direction in directions.items():
            i = main[local]
            games = int(wins[i].sum() + wins[:, i].sum() + ties[i].sum())
            if direction and games == (wins[i].sum() if direction > 0 else wins[:, i].sum()):
                played = "its only comparison" if games == 1 else f"all its {games} comparisons"
                why = f"{'won' if direction > 0 else 'lost'} {played}"
            elif direction:
                why = f"no ranked system {'beat or tied it' if direction > 0 else 'lost to or tied with it'}, directly or through others"
            else:
                why = "its wins and losses do not bound it against the ranked systems"
            infinity = {1: "+infinity", -1: "-infinity", 0: "infinite"}[direction]
            reasons[i] = f"{why}: its maximum-likelihood strength is {infinity} (--prior gives a finite one)"
    return reasons, groups


def _check_anchor(anchor: str, systems: list[str], reasons: Mapping[int, str]) -> None:
    if anchor not in systems:
        raise ConfigError(f"anchor {anchor!r} is not a system of the comparisons{did_you_mean(anchor, systems)}")
    index = systems.index(anchor)
    if index in reasons:
        raise ConfigError(f"anchor {anchor!r} has no finite strength: {reasons[index]}")


def _percentiles(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1 - confidence) / 2 * 100
    return np.percentile(values, tail, axis=0), np.percentile(values, 100 - tail, axis=0)


class _Model:
    """One Bradley-Terry fit of the ranked systems (with or without the style covariates) and its bootstrap, fed
    resamples a chunk at a time (:meth:`resample`)."""

    def __init__(self, found: Comparisons, ranked: list[int], options: RankOptions, *, style: bool) -> None:
        self.ranked, self.options, self.style = ranked, options, style
        self.anchor = None if options.anchor is None else ranked.index(found.systems.index(options.anchor))
        self.reason: str | None = None
        self.used = 0
        self.fit: Fit | None = None
        self.resampled: Fit | None = None
        self._fits: list[Fit] = []
        #: covariates no answer pair differs in are not estimable: left out of the design
        self.informed = np.ones(len(options.style) if style else 0, bool)
        if len(ranked) < 2:
            self.reason = "fewer than two systems have a finite strength: nothing to rank"
            return
        local = {system: k for k, system in enumerate(ranked)}
        keep = np.isin(found.first, ranked) & np.isin(found.second, ranked)
        first = np.array([local[i] for i in found.first[keep]], int)
        second = np.array([local[i] for i in found.second[keep]], int)
        sub = Comparisons(
            found.systems, first, second, found.outcome[keep], found.prompt[keep], found.prompts, found.x[keep], ""
        )
        self.prompt = sub.prompt
        self.pair_counts, self.pair_first, self.pair_second = _pair_counts(sub, len(ranked))
        pairs = len(self.pair_first)
        if style:
            self.informed = np.any(sub.x != 0, axis=0)
            self.design = Design.pairs(len(ranked), first, second, sub.x[:, self.informed])
            self.outcome = np.stack([sub.outcome == 1.0, sub.outcome == 0.0, sub.outcome == 0.5], axis=-1).astype(float)
            total = self.outcome[None]
        else:
            self.design = Design.pairs(len(ranked), self.pair_first, self.pair_second)
            total = np.asarray(self.pair_counts.sum(axis=0)).reshape(1, pairs, 3)
        self.fit = fit_counts(self.design, total, options.ties, options.prior)
        if not self.fit.converged[0]:
            self.reason = (
                "no finite maximum-likelihood fit: the strengths diverge (with Davidson's ties the tie parameter can "
                "grow with them; with style covariates these can separate the verdicts); --ties half or --prior "
                "gives a finite one"
            )

    def resample(self, weights: np.ndarray) -> None:
        """Fit the resamples ``weights`` (``R x P``: how often each drew each prompt); a resample where some
        ranked system has no finite strength (without a prior) or whose fit diverges is left out."""
        if self.fit is None or self.reason is not None:
            return
        drawn = np.asarray((self.pair_counts.T @ weights.T).T).reshape(len(weights), -1, 3)
        valid = np.ones(len(weights), bool)
        if self.options.prior == 0:
            valid = strongly_connected(_beaten(self.pair_first, self.pair_second, drawn, len(self.ranked)))
        ties, prior = self.options.ties, self.options.prior
        if self.style:
            kept = weights[valid]
            outcome, prompt = self.outcome, self.prompt
            fitted = fit_many(
                self.design, lambda part: kept[part][:, prompt, None] * outcome[None], len(kept), ties, prior, self.fit
            )
        else:
            fitted = fit_counts(self.design, drawn[valid], ties, prior, start=self.fit)
        self._fits.append(_select(fitted, fitted.converged))

    def collected(self) -> Fit | None:
        """Every resample fitted so far, in one :class:`Fit` (None when none was)."""
        if not self._fits:
            return None
        fits = self._fits
        self.used = sum(len(f.theta) for f in fits)
        return Fit(
            np.vstack([f.theta for f in fits]),
            np.vstack([f.beta for f in fits]),
            None if fits[0].nu is None else np.concatenate([f.nu for f in fits if f.nu is not None]),
            np.concatenate([f.log_likelihood for f in fits]),
            max(f.iterations for f in fits),
            np.concatenate([f.converged for f in fits]),
        )

    def _rating(self, theta: np.ndarray) -> np.ndarray:
        reference = 0.0 if self.anchor is None else theta[..., [self.anchor]]
        return self.options.anchor_rating + SCALE * (theta - reference)

    def ratings(self) -> dict[int, tuple[Any, ...]]:
        """Each ranked system's rating, interval and strength, by its index."""
        if self.fit is None or self.reason is not None:
            return {}
        point = self._rating(self.fit.theta[0])
        low = high = [None] * len(self.ranked)
        if self.resampled is not None and self.used:
            lows, highs = _percentiles(self._rating(self.resampled.theta), self.options.confidence)
            low, high = lows.tolist(), highs.tolist()
        theta = self.fit.theta[0]
        return {i: (float(point[k]), low[k], high[k], float(theta[k])) for k, i in enumerate(self.ranked)}

    def _interval(self, values: np.ndarray | None) -> tuple[float | None, float | None]:
        if values is None or not self.used:
            return None, None
        low, high = _percentiles(values, self.options.confidence)
        return float(low), float(high)

    def tie_parameter(self) -> Coefficient | None:
        if self.options.ties != "davidson":
            return None
        if self.fit is None or self.fit.nu is None or self.reason is not None:
            return Coefficient("nu", None, None, None, reason=self.reason or "nothing was fitted")
        resampled = None if self.resampled is None or self.resampled.nu is None else self.resampled.nu
        return Coefficient("nu", float(self.fit.nu[0]), *self._interval(resampled))

    def coefficients(self, names: Iterable[str]) -> tuple[Coefficient, ...]:
        out = []
        columns = np.cumsum(self.informed) - 1
        for k, name in enumerate(names):
            if self.fit is None or self.reason is not None or not self.informed[k]:
                reason = self.reason or (
                    "the two answers never differ in it: not estimable"
                    if self.fit is not None
                    else "nothing was fitted"
                )
                out.append(Coefficient(name, None, None, None, reason=reason))
                continue
            k = int(columns[k])
            value = float(self.fit.beta[0, k])
            resampled = None if self.resampled is None else self.resampled.beta[:, k]
            out.append(Coefficient(name, value, *self._interval(resampled), rating_points=value * SCALE))
        return tuple(out)

    def fit_summary(self) -> dict[str, Any]:
        if self.fit is None:
            return {"reason": self.reason}
        return {
            "method": "Newton's method with step halving on the log-likelihood (numpy), to steps below 1e-6",
            "iterations": self.fit.iterations,
            "log_likelihood": float(self.fit.log_likelihood[0]),
            "converged": bool(self.fit.converged[0]),
            "reason": self.reason,
        }


def _select(fit: Fit, keep: np.ndarray) -> Fit:
    return Fit(
        fit.theta[keep],
        fit.beta[keep],
        None if fit.nu is None else fit.nu[keep],
        fit.log_likelihood[keep],
        fit.iterations,
        fit.converged[keep],
    )


# The plain-text leaderboard of Ranking.table.


def _number(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def _interval(low: float | None, high: float | None, spec: str = ".1f") -> str:
    return "-" if low is None or high is None else f"[{low:{spec}}, {high:{spec}}]"


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def ranking_table(ranking: Ranking) -> str:
    """The leaderboard, the fitted parameters, the win matrix and what was left out."""
    options, counts, boot = ranking.options, ranking.counts, ranking.bootstrap
    where = options["anchor"] or "the mean strength"
    ties = "Davidson's tie parameter" if options["ties"] == "davidson" else "a tie half a win each way"
    lines = [
        f"Bradley-Terry by maximum likelihood over {counts['comparisons']} comparisons of {len(counts['systems'])} "
        f"systems on {counts['prompts']} prompts ({ranking.verdicts}); ties: {ties}"
        + (f"; prior {options['prior']:g}" if options["prior"] else ""),
        f"rating: {options['anchor_rating']:g} at {where}, + 400·log10(odds) against it: a 400-point gap is 10:1 "
        "odds, 200 points about 3.2:1",
    ]
    if boot["resamples"]:
        lines.append(
            f"{boot['confidence'] * 100:g} % intervals: percentile bootstrap over prompts, {boot['used']} of "
            f"{boot['resamples']} resamples (seed {boot['seed']})"
            + (
                f"; {boot['left_out']} left out: a system won or lost all its drawn comparisons, or was not drawn"
                if boot["left_out"]
                else ""
            )
        )
    styled = bool(options["style"])
    header = ["rank", "system", "rating", "interval", *(["no style", "interval"] if styled else [])]
    header += ["comparisons", "W-L-T", "win rate"]
    rows = [header]
    for s in ranking.systems:
        cells = [str(s.rank or "-"), s.system, _number(s.rating), _interval(s.low, s.high)]
        if styled:
            cells += [_number(s.unstyled), _interval(s.unstyled_low, s.unstyled_high)]
        cells += [str(s.comparisons), f"{s.wins}-{s.losses}-{s.ties}", _number(s.win_rate, ".3f")]
        rows.append(cells)
    lines += _columns(rows)
    lines += [f"{s.system}: no rating: {s.reason}" for s in ranking.systems if s.rating is None and s.reason]
    if ranking.tie_parameter is not None:
        nu = ranking.tie_parameter
        lines.append(f"tie parameter nu: {_number(nu.value, '.4f')} {_interval(nu.low, nu.high, '.4f')}")
    for c in ranking.covariates:
        lines.append(
            f"style {c.name}: {_number(c.value, '+.4f')} log-odds per unit of (a - b) / (a + b) "
            f"{_interval(c.low, c.high, '.4f')}, {_number(c.rating_points, '+.1f')} rating points"
        )
    lines += _win_matrix(ranking)
    lines += _notes(ranking)
    return "\n".join(lines)


def _win_matrix(ranking: Ranking) -> list[str]:
    names = list(ranking.counts["systems"])
    rows = [["wins-losses-ties of row vs column", *names]]
    for i, name in enumerate(names):
        cells = [name]
        for j in range(len(names)):
            played = ranking.wins[i][j] + ranking.wins[j][i] + ranking.ties[i][j]
            cells.append(
                "" if i == j else f"{ranking.wins[i][j]}-{ranking.wins[j][i]}-{ranking.ties[i][j]}" if played else "."
            )
        rows.append(cells)
    return _columns(rows)


def _notes(ranking: Ranking) -> list[str]:
    counts = ranking.counts
    swap = counts["swap"]
    lines = []
    if swap["swapped"]:
        lines.append(
            f"position swap: {swap['disagreed']} of {swap['swapped']} swapped verdicts disagreed between the two "
            f"orders, counted as: {swap['counted_as']}"
        )
    if counts["without_metadata"]:
        lines.append(
            f"{counts['without_metadata']} verdicts read from the score alone (a run without --metadata): a 0.5 of "
            "a swapped judge counts as a tie, its two orders cannot be told apart"
        )
    for reason, n in counts["left_out"].items():
        lines.append(f"{n} rows left out: {reason}")
    if len(ranking.components) > 1:
        shown = "; ".join(", ".join(group) for group in ranking.components)
        lines.append(f"the comparison graph has {len(ranking.components)} components: {shown}; the first is ranked")
    return lines
