"""The :class:`Score` every scorer returns.

>>> s = Score("ExactMatch", 1.0, {"signature": {"scorer": "ExactMatch"}})
>>> Score.from_dict(s.to_dict()) == s
True
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ._util import is_number

__all__ = ["Score"]


@dataclass(slots=True)
class Score:
    """One scorer's verdict on one example.

    ``score`` is a finite float in [0, 1], or ``None`` when the scorer does not
    apply (skipped). ``metadata`` holds the details, including the reproducibility
    ``signature``; it must stay JSON-serialisable. ``stats`` holds the row's
    sufficient statistics for a corpus figure (e.g. BLEU's n-gram counts), summed
    over rows by the scorer's aggregator; results files keep them.
    """

    name: str
    score: float | None
    metadata: dict[str, Any] = field(default_factory=dict)
    stats: tuple[float, ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Score.name must be a non-empty string, got {self.name!r}")
        if self.score is not None:
            if not is_number(self.score):
                raise TypeError(f"{self.name}: score must be a float or None, got {type(self.score).__name__}")
            value = float(self.score)
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{self.name}: score must be a finite number in [0, 1], got {value!r}")
            self.score = value
        if not isinstance(self.metadata, dict):
            raise TypeError(f"{self.name}: metadata must be a dict, got {type(self.metadata).__name__}")
        if self.stats is not None:
            self.stats = tuple(self.stats)

    @classmethod
    def trusted(
        cls, name: str, score: float, metadata: dict[str, Any], stats: tuple[float, ...] | None = None
    ) -> "Score":
        """Build a Score without re-validating ``score``; only for values a kernel guarantees in [0, 1]."""
        instance = object.__new__(cls)
        instance.name = name
        instance.score = score
        instance.metadata = metadata
        instance.stats = stats
        return instance

    @classmethod
    def trusted_many(cls, name: str, scores: Iterable[float], metadata: dict[str, Any]) -> list["Score"]:
        """:meth:`trusted` Scores, one per value, each with its own shallow copy of ``metadata``.

        >>> [s.score for s in Score.trusted_many("Levenshtein", [1.0, 0.5], {})]
        [1.0, 0.5]
        """
        new = object.__new__
        out = []
        for score in scores:
            instance = new(cls)
            instance.name = name
            instance.score = score
            instance.metadata = metadata.copy()
            instance.stats = None
            out.append(instance)
        return out

    @property
    def skipped(self) -> bool:
        return self.score is None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "score": self.score, "metadata": self.metadata}
        if self.stats is not None:
            data["stats"] = list(self.stats)
        return data

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Score":
        stats = data.get("stats")
        return cls(
            name=data["name"],
            score=data.get("score"),
            metadata=dict(data.get("metadata") or {}),
            stats=None if stats is None else tuple(stats),
        )
