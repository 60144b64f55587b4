"""The correlation coefficients of many samples at once, for the bootstrap of :mod:`scorers.stats.correlation`.

Each function gives what ``scipy.stats`` (pearsonr, spearmanr, kendalltau τ-b and τ-c) gives on
every sample, nan where :func:`scorers.stats.correlation.coefficient` is undefined (fewer than
two values, or a side constant), without a Python call per sample:

- :func:`batched`: samples of their own values, the rows of ``(b, s)`` arrays with a mask of the
  valid entries (per-system means of each resample; the rows of each group). Ranks and Kendall's
  pairs by pairwise comparison, so for small ``s``.
- :class:`Weighted`: samples that repeat the values of one set of rows, each row ``w[k, i]``
  times (the rows that each bootstrap resample draws). Pearson from weighted moments, Spearman's
  ranks from cumulative weights in one sorted order (array operations over all samples at once);
  Kendall's τ-b by one ``scipy.stats.kendalltau`` per sample (O(n log n)) and τ-c from its count.
"""

from __future__ import annotations

import math

import numpy as np

#: Elements of the largest temporary array a batch builds (pairwise comparisons, rows × resamples).
BUDGET = 1 << 21
#: Up to this many rows, :class:`Weighted` counts Kendall's pairs by one matrix of pair signs.
_PAIRWISE = 512


def _undefined(count: np.ndarray, distinct_x: np.ndarray, distinct_y: np.ndarray) -> np.ndarray:
    return (count < 2) | (distinct_x < 2) | (distinct_y < 2)


def _finish(values: np.ndarray, undefined: np.ndarray) -> np.ndarray:
    out = np.clip(values, -1.0, 1.0)  # as scipy does
    out[undefined] = np.nan
    return out


# ------------------------------------------------------------------ samples of their own values
def batched(name: str, x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The coefficient ``name`` of each row of ``x`` and ``y`` (shape ``(b, s)``) over the entries ``valid``."""
    size = x.shape[1]
    step = max(1, BUDGET // max(1, size * size))
    parts = [_batched(name, x[i : i + step], y[i : i + step], valid[i : i + step]) for i in range(0, len(x), step)]
    return np.concatenate(parts) if parts else np.empty(0)


def _batched(name: str, x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> np.ndarray:
    x, y = np.where(valid, x, 0.0), np.where(valid, y, 0.0)
    count = valid.sum(1)
    undefined = _undefined(count, _distinct(x, valid), _distinct(y, valid))
    with np.errstate(invalid="ignore", divide="ignore"):
        if name == "pearson":
            values = _pearson(x, y, valid)
        elif name == "spearman":
            values = _pearson(_ranks(x, valid), _ranks(y, valid), valid)
        else:
            values = _kendall(name, x, y, valid, count)
    return _finish(values, undefined)


def _distinct(v: np.ndarray, valid: np.ndarray) -> np.ndarray:
    ordered = np.sort(np.where(valid, v, np.inf), axis=1)
    count = valid.sum(1)
    inside = np.arange(1, v.shape[1]) < count[:, None]
    return np.minimum(count, 1) + np.sum((ordered[:, 1:] != ordered[:, :-1]) & inside, axis=1)


def _pearson(x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> np.ndarray:
    count = valid.sum(1, keepdims=True)
    dx = np.where(valid, x - np.sum(x, 1, keepdims=True, where=valid) / count, 0.0)
    dy = np.where(valid, y - np.sum(y, 1, keepdims=True, where=valid) / count, 0.0)
    dx /= np.abs(dx).max(1, keepdims=True)  # no overflow in the squares, as scipy scales
    dy /= np.abs(dy).max(1, keepdims=True)
    return np.sum(dx * dy, 1) / np.sqrt(np.sum(dx * dx, 1) * np.sum(dy * dy, 1))


def _ranks(v: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties sharing their mean rank) among each row's valid entries."""
    others = valid[:, None, :]
    below = np.sum((v[:, None, :] < v[:, :, None]) & others, axis=2)
    equal = np.sum((v[:, None, :] == v[:, :, None]) & others, axis=2)
    return below + (equal + 1) / 2


def _kendall(name: str, x: np.ndarray, y: np.ndarray, valid: np.ndarray, count: np.ndarray) -> np.ndarray:
    size = x.shape[1]
    pair = valid[:, :, None] & valid[:, None, :] & np.triu(np.ones((size, size), dtype=bool), 1)
    sx = np.sign(x[:, :, None] - x[:, None, :])
    sy = np.sign(y[:, :, None] - y[:, None, :])
    score = np.sum(sx * sy * pair, axis=(1, 2))
    if name == "kendall_c":
        classes = np.minimum(_distinct(x, valid), _distinct(y, valid))
        return 2 * score / (count.astype(float) ** 2 * (classes - 1) / classes)
    total = count * (count - 1) // 2
    tied_x = np.sum((sx == 0) & pair, axis=(1, 2))
    tied_y = np.sum((sy == 0) & pair, axis=(1, 2))
    return score / np.sqrt(total - tied_x) / np.sqrt(total - tied_y)


# ------------------------------------------------------------------ samples repeating one set of rows
class _Ties:
    """One side's rows in sorted order, grouped by equal value."""

    def __init__(self, v: np.ndarray) -> None:
        self.order = np.argsort(v, kind="stable")
        ordered = v[self.order]
        first = np.r_[True, ordered[1:] != ordered[:-1]] if len(v) else np.zeros(0, dtype=bool)
        self.starts = np.flatnonzero(first)
        self.ends = np.r_[self.starts[1:], len(v)] - 1
        self.dense = np.empty(len(v), dtype=np.intp)
        self.dense[self.order] = np.cumsum(first) - 1

    def weights(self, w: np.ndarray) -> np.ndarray:
        """Each value's total weight per sample: ``(c, values)``."""
        running = np.cumsum(w[:, self.order], axis=1)[:, self.ends]
        running[:, 1:] -= running[:, :-1].copy()
        return running


class Weighted:
    """The rows ``(x, y)``; :meth:`coefficients` of samples repeating row ``i`` ``w[k, i]`` times."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.n = len(x)
        self.tx, self.ty = _Ties(x), _Ties(y)
        self.x, self.y = x, y
        xc, yc = (x - x.mean(), y - y.mean()) if self.n else (x, y)
        xc = xc / (np.abs(xc).max(initial=0.0) or 1.0)
        yc = yc / (np.abs(yc).max(initial=0.0) or 1.0)
        self.moments = np.stack([xc, yc, xc * xc, yc * yc, xc * yc], axis=1)
        self._signs: np.ndarray | None = None

    def _concordance(self, w: np.ndarray, undefined: np.ndarray) -> np.ndarray:
        """Concordant minus discordant pairs of each sample.

        Up to ``_PAIRWISE`` rows: ``w A w / 2`` with ``A[i, j] = sign(x_i - x_j) sign(y_i - y_j)``; beyond,
        scipy's τ-b (a merge sort, O(n log n)) of each sample written out, times its denominator.
        """
        if self.n <= _PAIRWISE:
            if self._signs is None:
                self._signs = np.sign(self.x[:, None] - self.x) * np.sign(self.y[:, None] - self.y)
            return np.einsum("ki,ij,kj->k", w, self._signs, w) / 2
        from scipy import stats

        tau = [
            math.nan if skip else stats.kendalltau(np.repeat(self.x, drawn), np.repeat(self.y, drawn)).statistic
            for drawn, skip in zip(w, undefined)
        ]
        return np.asarray(tau) * self._denominator(w)

    def _denominator(self, w: np.ndarray) -> np.ndarray:
        """τ-b's ``sqrt(pairs not tied in x) sqrt(pairs not tied in y)``."""
        pairs = (total := w.sum(1)) * (total - 1) // 2
        return np.sqrt(pairs - _tied(self.tx.weights(w))) * np.sqrt(pairs - _tied(self.ty.weights(w)))

    def coefficients(self, names: tuple[str, ...], w: np.ndarray) -> dict[str, np.ndarray]:
        """Each coefficient in ``names`` of each sample (``w``: ``(c, n)`` integer repeats)."""
        w = w.astype(np.int64, copy=False)
        total = w.sum(1)
        wx, wy = self.tx.weights(w), self.ty.weights(w)
        distinct_x, distinct_y = np.sum(wx > 0, 1), np.sum(wy > 0, 1)
        undefined = _undefined(total, distinct_x, distinct_y)
        out = {}
        with np.errstate(invalid="ignore", divide="ignore"):
            if "pearson" in names:
                mx, my, xx, yy, xy = ((w @ self.moments) / total[:, None]).T
                out["pearson"] = _finish((xy - mx * my) / np.sqrt((xx - mx * mx) * (yy - my * my)), undefined)
            if "spearman" in names:
                middle = (total[:, None] + 1) / 2  # the mean of average ranks
                rx = (np.cumsum(wx, 1) - wx + (wx + 1) / 2 - middle)[:, self.tx.dense]
                ry = (np.cumsum(wy, 1) - wy + (wy + 1) / 2 - middle)[:, self.ty.dense]
                values = np.sum(w * rx * ry, 1) / np.sqrt(np.sum(w * rx * rx, 1) * np.sum(w * ry * ry, 1))
                out["spearman"] = _finish(values, undefined)
            if "kendall_b" in names or "kendall_c" in names:
                score = self._concordance(w, undefined)
                if "kendall_b" in names:
                    out["kendall_b"] = _finish(score / self._denominator(w), undefined)
                if "kendall_c" in names:
                    classes = np.minimum(distinct_x, distinct_y)
                    out["kendall_c"] = _finish(
                        2 * score / (total.astype(float) ** 2 * (classes - 1) / classes), undefined
                    )
        return out


def _tied(weights: np.ndarray) -> np.ndarray:
    return np.sum(weights * (weights - 1) // 2, 1)
