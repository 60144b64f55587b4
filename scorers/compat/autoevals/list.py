"""autoevals' ``ListContains``, computed by :class:`scorers.heuristic.ListContains`.

>>> ListContains(allow_extra_entities=True)(["a", "b"], ["a"]).score
1.0
"""

from __future__ import annotations

from typing import Any, cast

from ...heuristic import Levenshtein as _Levenshtein
from ...heuristic import ListContains as _ListContains
from ...registry import get
from ._adapter import Adapter, our_scorer

__all__ = ["ListContains"]


class ListContains(Adapter):
    """Best-pairing similarity of two lists; ``pairwise_scorer`` may be an autoevals scorer (instance or class).

    With the default (Levenshtein) pairwise scorer, elements that are not text are compared as their
    ``str()``, as autoevals' ``Levenshtein`` compares them.
    """

    def __init__(self, pairwise_scorer: Any = None, allow_extra_entities: bool = False) -> None:
        self.scorer = get(
            "ListContains",
            pairwise_scorer=our_scorer(pairwise_scorer, "pairwise_scorer"),
            allow_extra_entities=allow_extra_entities,
        )

    def _fields(self, output: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        fields = super()._fields(output, kwargs)
        if type(cast(_ListContains, self.scorer).pairwise_scorer) is _Levenshtein:
            for name in ("output", "expected"):
                if isinstance(fields.get(name), (list, tuple)):
                    fields[name] = [e if e is None or isinstance(e, str) else str(e) for e in fields[name]]
        return fields
