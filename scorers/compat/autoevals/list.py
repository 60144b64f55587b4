"""autoevals' ``ListContains``, computed by :class:`scorers.heuristic.ListContains`.

>>> ListContains(allow_extra_entities=True)(["a", "b"], ["a"]).score
1.0
"""
from __future__ import annotations

from typing import Any

from ...registry import get
from ._adapter import Adapter, our_scorer

__all__ = ["ListContains"]


class ListContains(Adapter):
    """Best-pairing similarity of two lists; ``pairwise_scorer`` may be an autoevals scorer (instance or class)."""

    def __init__(self, pairwise_scorer: Any = None, allow_extra_entities: bool = False) -> None:
        self.scorer = get("ListContains", pairwise_scorer=our_scorer(pairwise_scorer, "pairwise_scorer"),
                          allow_extra_entities=allow_extra_entities)
