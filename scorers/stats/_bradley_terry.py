"""The Bradley-Terry fit behind :func:`scorers.stats.rank`: maximum likelihood by Newton's method on counts, many
count sets (bootstrap resamples) at once.

A **design** has one row per comparison cell: the two systems (``first``, ``second``) and covariates ``x``. A
cell's linear predictor is ``d = theta[first] - theta[second] + beta . x``, the log-odds that ``first`` beats
``second``. Its counts are ``(wins of first, wins of second, ties)``; without covariates a cell is an unordered
pair of systems (counts summed over its comparisons), with covariates a single comparison. The strengths are
identified by a mean log-strength of 0: ``theta = B phi`` with ``B`` an orthonormal basis of the vectors that sum
to 0, so ``phi`` is free and ``sum(theta**2) == sum(phi**2)``.

Ties:

- ``half``: a tie is half a win each way, ``(W + T/2) log s(d) + (L + T/2) log s(-d)`` with ``s`` the logistic
  function (the plain Bradley-Terry likelihood of the counts with each tie split);
- ``davidson``: Davidson (1970), ``P(first) : P(second) : P(tie) = e^(d/2) : e^(-d/2) : nu``, with
  ``eta = log nu`` fitted jointly; a count set without ties has ``nu = 0`` (``eta = -inf``), plain Bradley-Terry.

``prior`` adds the penalty ``prior * sum(theta**2)`` (choix's ``alpha``). Newton's method with step halving on
this concave log-likelihood: the gradient and Hessian of every count set at once (``numpy``, batched
``numpy.linalg.solve``), until the largest step is below ``STEP_TOLERANCE``.

>>> import numpy as np
>>> design = Design.pairs(2, np.array([0]), np.array([1]))
>>> fit = fit_counts(design, np.array([[[3.0, 1.0, 0.0]]]), "half")
>>> round(float(fit.theta[0, 0] - fit.theta[0, 1]), 6) == round(float(np.log(3)), 6)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

#: Newton stops after a step in which no parameter moved by more than this (its convergence is quadratic).
STEP_TOLERANCE = 1e-6
MAX_ITERATIONS = 200
#: A fit whose strengths spread wider than this many log-odds units (odds of 7e10:1, 4,300 rating points)
#: diverges: no finite maximum (Newton's steps stall where the likelihood is flat in float64, well past this).
DIVERGED = 25.0
#: Bootstrap count sets fitted at once, bounding memory (count sets x design rows).
_CHUNK_CELLS = 1 << 20


def _sum_zero_basis(n: int) -> np.ndarray:
    """An orthonormal ``n x (n-1)`` basis of the vectors summing to 0."""
    if n == 1:
        return np.zeros((1, 0))
    q, _ = np.linalg.qr(np.eye(n) - 1.0 / n)
    return q[:, : n - 1]


@dataclass(frozen=True)
class Design:
    """Comparison cells of ``systems`` systems: ``first``/``second`` system indexes, covariates ``x`` (m x c)."""

    systems: int
    first: np.ndarray
    second: np.ndarray
    x: np.ndarray

    @classmethod
    def pairs(cls, systems: int, first: np.ndarray, second: np.ndarray, x: np.ndarray | None = None) -> Design:
        covariates = np.zeros((len(first), 0)) if x is None else np.asarray(x, float).reshape(len(first), -1)
        return cls(systems, np.asarray(first, int), np.asarray(second, int), covariates)


class _Layout:
    """What the gradient and Hessian need of a design, computed once: the cells' unordered pairs of systems (a
    cell's row of the design matrix is ``sign * (B[low] - B[high])`` then ``x``), so the strength blocks are sums
    over pairs (sparse ``pairs x cells`` matrices) scattered onto the systems, then taken to ``phi`` by ``B``."""

    def __init__(self, design: Design) -> None:
        n, m = design.systems, len(design.first)
        self.systems, self.basis = n, _sum_zero_basis(n)
        low, high = np.minimum(design.first, design.second), np.maximum(design.first, design.second)
        keys, pair = np.unique(low * n + high, return_inverse=True)
        self.low, self.high = keys // n, keys % n
        sign = np.where(design.first < design.second, 1.0, -1.0)
        cells = np.arange(m)
        self.signed = csr_matrix((sign, (pair, cells)), shape=(len(keys), m))
        self.summed = csr_matrix((np.ones(m), (pair, cells)), shape=(len(keys), m))
        self.x = design.x
        self.xx = np.einsum("mi,mj->mij", design.x, design.x).reshape(m, -1)
        self.phis, self.covariates = n - 1, design.x.shape[1]
        self.matrix_t = np.ascontiguousarray(
            np.hstack([self.basis[design.first] - self.basis[design.second], design.x]).T
        )
        #: each pair's direction over ``phi`` (``B[low] - B[high]``), and where its weight lands in the Laplacian
        self.vectors = self.basis[self.low] - self.basis[self.high]
        spots = np.concatenate(
            [self.low * n + self.high, self.high * n + self.low, self.low * (n + 1), self.high * (n + 1)]
        )
        signs = np.repeat([-1.0, -1.0, 1.0, 1.0], len(keys))
        self.laplacian = csr_matrix((signs, (np.tile(np.arange(len(keys)), 4), spots)), shape=(len(keys), n * n))

    def d(self, params: np.ndarray) -> np.ndarray:
        """The linear predictor of every cell, ``R x cells``."""
        return params[:, : self.phis + self.covariates] @ self.matrix_t

    def per_pair(self, values: np.ndarray, signed: bool = True) -> np.ndarray:
        """``R x cells`` summed per pair (``R x pairs``), each cell with its orientation's sign when ``signed``."""
        return np.asarray((self.signed if signed else self.summed) @ values.T).T

    def to_phi(self, per_pair: np.ndarray) -> np.ndarray:
        """A gradient over pairs (``R x pairs``, in the low system's direction) as one over ``phi``."""
        return per_pair @ self.vectors

    def curvature(self, per_pair: np.ndarray) -> np.ndarray:
        """``B^T L B`` of the weighted Laplacian ``L = sum_k h_k (e_low - e_high)(e_low - e_high)^T`` of each row of
        ``per_pair`` (``R x pairs``): the strength block of the Hessian."""
        n = self.systems
        laplacian = np.asarray((self.laplacian.T @ per_pair.T).T).reshape(len(per_pair), n, n)
        return self.basis.T @ laplacian @ self.basis


@dataclass(frozen=True)
class Fit:
    """Fitted parameters of each count set (rows): strengths ``theta`` (mean 0), covariates ``beta``, Davidson's
    ``nu`` (None under half), the log-likelihood, Newton's iterations and whether it converged to a finite
    maximum."""

    theta: np.ndarray
    beta: np.ndarray
    nu: np.ndarray | None
    log_likelihood: np.ndarray
    iterations: int
    converged: np.ndarray


def _summaries(counts: np.ndarray, ties: str) -> tuple[np.ndarray, ...]:
    """What the likelihood needs of the counts, computed once per chunk: the total per cell and, under half,
    the wins and the losses each with half the ties; under Davidson, half of wins minus losses and the ties."""
    wins, losses, drawn = counts[..., 0], counts[..., 1], counts[..., 2]
    total = wins + losses + drawn
    if ties == "half":
        return total, wins + drawn / 2, losses + drawn / 2
    return total, (wins - losses) / 2, drawn


def _rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products of two ``R x cells`` arrays."""
    return np.einsum("rm,rm->r", a, b)


def _cells(
    d: np.ndarray, eta: np.ndarray | None, counts: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The log-likelihood of each count set and, per cell, its derivatives in ``d`` (and ``eta``): ``(ll, (g_d,
    h_dd[, g_e, h_de, h_ee]))``."""
    np.clip(d, -700.0, 700.0, out=d)  # exp stays finite; strengths that far apart have diverged (DIVERGED)
    if eta is None:  # in place where it can be: these arrays are count sets x cells
        total, win_share, loss_share = counts
        p = np.exp(-d)
        p += 1.0
        ll = -_rows(total, np.log(p)) - _rows(loss_share, d)  # -log s(d) = log(1 + e^-d)
        np.reciprocal(p, out=p)  # s(d)
        weighted = total * p
        p -= 1.0
        p *= weighted  # the second derivative, -total s(d) s(-d)
        weighted -= win_share
        return ll, (np.negative(weighted, out=weighted), p)
    total, half_difference, drawn = counts
    first = np.exp(d / 2)
    second = 1.0 / first
    nu = np.exp(eta)[:, None]
    norm = first + second + nu
    p_first, p_second, p_tie = first / norm, second / norm, nu / norm
    ties = drawn.sum(axis=1) * np.where(np.isfinite(eta), eta, 0.0)  # no tie: nu = 0, no term
    ll = _rows(half_difference, d) + ties - _rows(total, np.log(norm))
    spread = p_first - p_second
    g_d = half_difference - total * spread / 2
    h_dd = -total * ((p_first + p_second) - spread**2) / 4
    return ll, (g_d, h_dd, drawn - total * p_tie, total * p_tie * spread / 2, -total * p_tie * (1.0 - p_tie))


def _objective(
    layout: _Layout, params: np.ndarray, counts: tuple[np.ndarray, ...], ties: str, prior: float
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    eta = params[:, -1] if ties == "davidson" else None
    ll, derivatives = _cells(layout.d(params), eta, counts)
    return ll - prior * np.sum(params[:, : layout.phis] ** 2, axis=1), derivatives


def fit_counts(
    design: Design,
    counts: np.ndarray,
    ties: Literal["half", "davidson"] | str,
    prior: float = 0.0,
    start: Fit | None = None,
) -> Fit:
    """The maximum-likelihood fit of every count set: ``counts`` is ``R x m x 3`` (wins of first, wins of
    second, ties per design cell); ``start``: a fit (of one count set) to start Newton's method from."""
    return _fit_chunk(_Layout(design), counts, ties, prior, start)


def fit_many(
    design: Design,
    counts_of: Callable[[slice], np.ndarray],
    runs: int,
    ties: str,
    prior: float = 0.0,
    start: Fit | None = None,
) -> Fit:
    """:func:`fit_counts` of ``runs`` count sets, ``counts_of(part)`` giving those of a slice, in chunks that bound
    memory (count sets x design rows)."""
    layout = _Layout(design)
    step = max(1, _CHUNK_CELLS // max(1, len(design.first)))
    parts = [_fit_chunk(layout, counts_of(slice(i, i + step)), ties, prior, start) for i in range(0, runs, step)]
    return Fit(
        np.vstack([p.theta for p in parts]).reshape(-1, design.systems),
        np.vstack([p.beta for p in parts]).reshape(-1, design.x.shape[1]),
        None if ties != "davidson" else np.concatenate([p.nu for p in parts if p.nu is not None] or [np.zeros(0)]),
        np.concatenate([p.log_likelihood for p in parts] or [np.zeros(0)]),
        max([p.iterations for p in parts] or [0]),
        np.concatenate([p.converged for p in parts] or [np.zeros(0, bool)]),
    )


def _start(layout: _Layout, counts: np.ndarray, davidson: bool, start: Fit | None) -> np.ndarray:
    runs, k = len(counts), layout.phis + layout.covariates
    params = np.zeros((runs, k + davidson))
    if start is not None:
        params[:, : layout.phis] = start.theta[0] @ layout.basis
        params[:, layout.phis : k] = start.beta[0]
    if davidson:
        has_ties = counts[..., 2].sum(axis=1) > 0
        share = counts[..., 2].sum(axis=1) / np.maximum(counts.sum(axis=(1, 2)), 1)
        guess = np.log(np.maximum(2 * share / np.maximum(1 - share, 1e-12), 1e-12))
        if start is not None and start.nu is not None and start.nu[0] > 0:
            guess = np.full(runs, np.log(start.nu[0]))
        params[:, k] = np.where(has_ties, guess, -np.inf)
    return params


def _fit_chunk(layout: _Layout, counts: np.ndarray, ties: str, prior: float, start: Fit | None) -> Fit:
    runs, phis, k = len(counts), layout.phis, layout.phis + layout.covariates
    davidson = ties == "davidson"
    has_ties = counts[..., 2].sum(axis=1) > 0
    params = _start(layout, counts, davidson, start)
    active = np.ones(runs, bool)
    summaries = _summaries(counts, ties)
    ll, derivatives = _objective(layout, params, summaries, ties, prior)
    iterations = 0
    for iterations in range(1, MAX_ITERATIONS + 1):
        gradient, hessian = _gradient_hessian(layout, params, derivatives, prior, has_ties)
        step = np.zeros_like(params)
        step[active] = _newton_step(hessian[active], gradient[active])
        params, ll, derivatives = _halving(layout, params, step, ll, derivatives, summaries, ties, prior)
        active &= np.max(np.abs(step), axis=1) > STEP_TOLERANCE
        if not active.any():
            break
    theta = params[:, :phis] @ layout.basis.T
    finite = np.ptp(theta, axis=1) < DIVERGED if phis else np.ones(runs, bool)
    return Fit(
        theta=theta,
        beta=params[:, phis:k],
        nu=np.exp(params[:, k]) if davidson else None,
        log_likelihood=ll,
        iterations=iterations,
        converged=~active & finite,
    )


def _newton_step(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """``-H^-1 g`` of each count set; through the pseudo-inverse where a Hessian is singular (a parameter the
    counts do not inform, such as a covariate that is 0 in every drawn comparison)."""
    try:
        step = np.linalg.solve(-hessian, gradient[..., None])[..., 0]
    except np.linalg.LinAlgError:
        step = (np.linalg.pinv(-hessian) @ gradient[..., None])[..., 0]
    return np.where(np.isfinite(step), step, 0.0)


def _gradient_hessian(
    layout: _Layout, params: np.ndarray, derivatives: tuple[np.ndarray, ...], prior: float, has_ties: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    runs, size = params.shape
    phis, k = layout.phis, layout.phis + layout.covariates
    g_d, h_dd = derivatives[:2]
    gradient = np.zeros((runs, size))
    hessian = np.zeros((runs, size, size))
    gradient[:, :phis] = layout.to_phi(layout.per_pair(g_d)) - 2 * prior * params[:, :phis]
    hessian[:, :phis, :phis] = layout.curvature(layout.per_pair(h_dd, signed=False)) - 2 * prior * np.eye(phis)
    if layout.covariates:
        gradient[:, phis:k] = g_d @ layout.x
        for c in range(layout.covariates):
            cross = layout.to_phi(layout.per_pair(h_dd * layout.x[:, c]))
            hessian[:, :phis, phis + c] = hessian[:, phis + c, :phis] = cross
        hessian[:, phis:k, phis:k] = (h_dd @ layout.xx).reshape(runs, layout.covariates, layout.covariates)
    if size > k:  # Davidson's eta; fixed at -inf (no tie parameter) where a count set has no tie
        g_e, h_de, h_ee = derivatives[2:]
        gradient[:, k] = np.where(has_ties, g_e.sum(axis=1), 0.0)
        cross_eta = np.hstack([layout.to_phi(layout.per_pair(h_de)), h_de @ layout.x])
        hessian[:, :k, k] = hessian[:, k, :k] = np.where(has_ties[:, None], cross_eta, 0.0)
        hessian[:, k, k] = np.where(has_ties, h_ee.sum(axis=1), -1.0)
    return gradient, hessian


def _halving(
    layout: _Layout,
    params: np.ndarray,
    step: np.ndarray,
    ll: np.ndarray,
    derivatives: tuple[np.ndarray, ...],
    counts: tuple[np.ndarray, ...],
    ties: str,
    prior: float,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    """Newton's step, halved (up to 40 times) for each count set whose log-likelihood it would lower."""
    scale = np.ones(len(params))
    for _ in range(40):
        trial = params + scale[:, None] * step
        trial_ll, trial_derivatives = _objective(layout, trial, counts, ties, prior)
        worse = trial_ll < ll - 1e-12 * np.maximum(1.0, np.abs(ll))
        if not worse.any():
            break
        scale = np.where(worse, scale / 2, scale)
    keep = ~worse
    if keep.all():
        return trial, trial_ll, trial_derivatives
    params = np.where(keep[:, None], trial, params)
    merged = tuple(np.where(keep[:, None], new, old) for new, old in zip(trial_derivatives, derivatives))
    return params, np.where(keep, trial_ll, ll), merged


# ------------------------------------------------------------------ when a finite maximum exists
def components(systems: int, beaten: np.ndarray, connection: Literal["weak", "strong"]) -> np.ndarray:
    """The component label of each system in the graph with an edge i -> j where ``beaten[i, j] > 0`` (i won
    against or tied with j)."""
    _, labels = connected_components(csr_matrix(beaten > 0), directed=True, connection=connection)
    return np.asarray(labels)


def bounded(beaten: np.ndarray) -> tuple[list[int], dict[int, int]]:
    """The systems of a connected comparison graph that get finite strengths, and every other one with its
    direction (+1: infinitely above them, -1: below, 0: neither). Ford (1957): the maximum exists exactly when
    every split of the systems has a win (or tie) across it each way, i.e. the graph is strongly connected;
    otherwise the largest strongly connected component is ranked (ties: the most comparisons within it), a
    system that reaches it through wins and is not reached back is above it, one reached and not reaching
    below; when no two systems bound each other, none is ranked."""
    labels = components(len(beaten), beaten, "strong")
    groups = [np.flatnonzero(labels == g).tolist() for g in sorted(set(labels.tolist()))]
    main = max(groups, key=lambda g: (len(g), beaten[np.ix_(g, g)].sum(), -g[0]))
    if len(main) == 1:  # no two systems bound each other: nothing is ranked
        return [], {i: 1 if not beaten[:, i].any() else -1 if not beaten[i].any() else 0 for i in range(len(beaten))}
    reach = np.isfinite(shortest_path(csr_matrix(beaten > 0), unweighted=True))
    out = {}
    for i in range(len(beaten)):
        if i not in main:
            up, down = bool(reach[i, main[0]]), bool(reach[main[0], i])
            out[i] = 1 if up and not down else -1 if down and not up else 0
    return main, out


def strongly_connected(beaten: np.ndarray) -> np.ndarray:
    """For each count set's ``beaten`` matrix (``R x n x n``), whether every system both won (or tied) against
    and lost (or tied) to the rest through the graph: the maximum-likelihood fit is finite."""
    return np.array([len(set(components(b.shape[0], b, "strong").tolist())) == 1 for b in beaten], bool)
