"""The :class:`Score` every scorer returns, and :class:`ScoreColumn`, a batch of them held as columns.

>>> s = Score("ExactMatch", 1.0, {"signature": {"scorer": "ExactMatch"}})
>>> Score.from_dict(s.to_dict()) == s
True
>>> column = ScoreColumn("ExactMatch", [1.0, 0.0], {"signature": {"scorer": "ExactMatch"}})
>>> column[1] == Score("ExactMatch", 0.0, {"signature": {"scorer": "ExactMatch"}}), column.scores()
(True, [1.0, 0.0])
"""

from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence, overload

from ._util import is_number

if TYPE_CHECKING:
    import numpy as np

    from .errors import ScorerError

__all__ = ["Score", "ScoreColumn"]


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


class ScoreColumn(Sequence["Score | ScorerError"]):
    """One scorer's outcomes over a batch, held as columns: a row's :class:`Score` is made when it is read.

    ``values`` holds the scores as float64 (NaN: skipped, or the row failed); every row's metadata is one
    shared mapping (each Score read gets its own shallow copy) or
    ``metadata(i)`` builds row ``i``'s; ``errors`` is sparse, ``{row: ScorerError}``. It is a sequence of
    outcomes, as :meth:`Scorer.score_batch <scorers.base.Scorer.score_batch>` returns: indexing and iterating
    make the Scores; it equals a list of equal outcomes. Readers of whole columns (the run's summary and
    results writer) take :meth:`scores` and :attr:`values` instead and build no object per row.

    ``values`` must hold finite floats in [0, 1] (or NaN): a kernel's guarantee, not checked.

    >>> column = ScoreColumn("Levenshtein", [0.5, float("nan")], {})
    >>> list(column), column.scores(), column.values.dtype.name
    ([Score(name='Levenshtein', score=0.5, metadata={}), Score(name='Levenshtein', score=None, metadata={})], \
[0.5, None], 'float64')
    """

    __slots__ = ("name", "_values", "_metadata", "errors")

    def __init__(
        self,
        name: str,
        values: "Sequence[float] | np.ndarray | array[float]",
        metadata: Mapping[str, Any] | Callable[[int], dict[str, Any]],
        errors: Mapping[int, "ScorerError"] | None = None,
    ) -> None:
        self.name = name
        #: a float64 buffer: a numpy array or an ``array("d")`` (numpy is imported only when ``values`` is read)
        self._values: Any = values if hasattr(values, "tolist") else array("d", values)
        self._metadata = metadata
        self.errors: dict[int, ScorerError] = dict(errors or {})

    @property
    def values(self) -> "np.ndarray":
        """The scores as a float64 numpy array; NaN where a row was skipped or failed (see :attr:`errors`)."""
        import numpy as np

        return np.asarray(self._values, dtype=np.float64)

    @property
    def shared_metadata(self) -> Mapping[str, Any] | None:
        """The metadata every row shares, or None when each row has its own (:meth:`metadata`)."""
        return None if callable(self._metadata) else self._metadata

    def metadata(self, i: int) -> dict[str, Any]:
        """Row ``i``'s metadata: a shallow copy of the shared mapping, or the row's own."""
        shared = self._metadata
        return shared(i) if callable(shared) else dict(shared)

    def scores(self) -> list[float | None]:
        """Each row's score as :attr:`Score.score` reads, None where skipped or failed, with no Score made."""
        values: list[float | None] = self._values.tolist()
        if any(map(math.isnan, values)):  # type: ignore[arg-type]  # floats: tolist of a float64 buffer
            return [None if value != value else value for value in values]
        return values

    def placed(
        self, n: int, positions: Sequence[int], outcomes: "Sequence[Score | ScorerError | None]"
    ) -> "ScoreColumn | None":
        """This column's rows put at ``positions`` of a column of ``n`` rows, whose other rows failed with the
        errors of ``outcomes`` (a batch's rows, those of ``positions`` None); None where the rows' metadata is
        not shared (each row's builder reads its own index) or where this column has errors.

        >>> from scorers.errors import ScorerInputError
        >>> error = ScorerInputError("Levenshtein", "expected", "is required but was missing")
        >>> column = ScoreColumn("Levenshtein", [0.5], {}).placed(2, [1], [error, None])
        >>> column.scores(), column[0] is error
        ([None, 0.5], True)
        """
        if len(positions) == n:
            return self
        if callable(self._metadata) or self.errors:
            return None
        values = array("d", [math.nan]) * n
        for position, value in zip(positions, self._values.tolist()):
            values[position] = value
        taken = set(positions)
        errors = {i: outcome for i, outcome in enumerate(outcomes) if i not in taken}
        return ScoreColumn(self.name, values, self._metadata, errors)  # type: ignore[arg-type]  # the rest failed

    def __len__(self) -> int:
        return len(self._values)

    def _row(self, i: int, value: float) -> "Score | ScorerError":
        if self.errors and i in self.errors:
            return self.errors[i]
        instance = object.__new__(Score)
        instance.name = self.name
        instance.score = None if value != value else value
        instance.metadata = self.metadata(i)
        instance.stats = None
        return instance

    @overload
    def __getitem__(self, index: int) -> "Score | ScorerError": ...

    @overload
    def __getitem__(self, index: slice) -> "list[Score | ScorerError]": ...

    def __getitem__(self, index: int | slice) -> "Score | ScorerError | list[Score | ScorerError]":
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if not -n <= index < n:
            raise IndexError("ScoreColumn index out of range")
        index %= n
        return self._row(index, float(self._values[index]))

    def __iter__(self) -> "Iterator[Score | ScorerError]":
        return map(self._row, range(len(self)), self._values.tolist())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (list, tuple, ScoreColumn)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __add__(self, other: "Sequence[Score | ScorerError]") -> "list[Score | ScorerError]":
        return [*self, *other]

    def __radd__(self, other: "Sequence[Score | ScorerError]") -> "list[Score | ScorerError]":
        return [*other, *self]

    def __repr__(self) -> str:
        return f"ScoreColumn({self.name!r}, {len(self)} rows, {len(self.errors)} errors)"

    def __reduce__(self) -> Any:
        return (_column, (self.name, self._values.tolist(), self._metadata, self.errors))


def _column(name: str, values: list[float], metadata: Any, errors: Any) -> ScoreColumn:
    """A :class:`ScoreColumn` back from :meth:`ScoreColumn.__reduce__` (a pickle)."""
    return ScoreColumn(name, values, metadata, errors)
