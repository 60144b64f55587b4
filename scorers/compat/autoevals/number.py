"""autoevals' ``NumericDiff``, computed by :class:`scorers.heuristic.NumericDiff`.

>>> NumericDiff()(1, 2).score
0.6666666666666667
"""

from __future__ import annotations

from ...registry import get
from ._adapter import Adapter

__all__ = ["NumericDiff"]


class NumericDiff(Adapter):
    """``1 - |e - o| / (|e| + |o|)``; both 0 score 1."""

    def __init__(self) -> None:
        self.scorer = get("NumericDiff")
