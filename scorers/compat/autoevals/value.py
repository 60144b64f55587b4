"""autoevals' ``ExactMatch``, computed by :class:`scorers.heuristic.ExactMatch`.

>>> ExactMatch()({"a": 1}, '{"a": 1}').score
1.0
"""

from __future__ import annotations

from ...registry import get
from ._adapter import Adapter

__all__ = ["ExactMatch"]


class ExactMatch(Adapter):
    """1 if ``output`` equals ``expected`` (JSON-aware; key order matters), else 0."""

    def __init__(self) -> None:
        self.scorer = get("ExactMatch")
