"""Estimates from k independent samples of a judge (each its own seed, at a temperature above 0): the empirical
distribution over its answers and Wilson score intervals, for endpoints that give no log-probabilities.

A share ``x / n`` of ``n`` samples gets the Wilson score interval at ``level`` (95 %),
``(p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)`` with ``z`` the normal quantile; unlike the normal
approximation it is never empty or outside [0, 1], and a share of 0 or 1 gets a one-sided interval of width
about ``z²/n`` rather than a point. It is the set of shares ``μ`` that a normal test with variance ``μ(1 − μ)``
does not reject. A mean of values on [0, 1] (a G-Eval score) takes the same formula with ``p̂`` the mean
(``method: "wilson_bounded"``): ``μ(1 − μ)`` is the largest variance a value on [0, 1] of mean ``μ`` can have
(every value 0 or 1), so the interval is Wilson's exactly on a two-value scale and assumes the widest spread the
scale allows otherwise; it never shrinks to a point because k samples happen to agree, as a t interval would.

>>> stated = interval(3, 5)
>>> round(stated["low"], 4), round(stated["high"], 4), stated["level"], stated["n"], stated["method"]
(0.2307, 0.8824, 0.95, 5, 'wilson')
>>> shares(["A", "B", "A", "A"], ["A", "B", "C"])
{'A': 0.75, 'B': 0.25, 'C': 0.0}
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Hashable, Iterable, Sequence

__all__ = ["LEVEL", "wilson", "interval", "shares"]

#: The level of every sampling interval.
LEVEL = 0.95


def wilson(successes: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of the share ``successes / n`` (``successes`` may be fractional: ``n`` times a
    mean of values on [0, 1]).

    >>> [round(bound, 4) for bound in wilson(5, 5)]
    [0.5655, 1.0]
    """
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    share, z2 = successes / n, z * z
    centre = (share + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(share * (1 - share) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def interval(successes: float, n: int, method: str = "wilson", level: float = LEVEL) -> dict[str, Any]:
    """:func:`wilson` as a score's metadata states it: the bounds, the level, ``n`` and the
    method (``wilson``: a share of samples; ``wilson_bounded``: a mean of values on [0, 1])."""
    low, high = wilson(successes, n, level)
    return {"low": low, "high": high, "level": level, "n": n, "method": method}


def shares(values: Iterable[Hashable], support: Sequence[Hashable]) -> dict[str, float]:
    """The share of ``values`` that is each of ``support`` (every one present, in its order; they sum to 1)."""
    counted = list(values)
    return {str(option): sum(value == option for value in counted) / len(counted) for option in support}
