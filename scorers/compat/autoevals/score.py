"""autoevals' ``Score`` and ``Scorer``: the call forms ``eval(output, expected, **kw)``, ``eval_async``, ``__call__``.

>>> Score(name="Mine", score=0.5).as_dict()
{'name': 'Mine', 'score': 0.5, 'metadata': {}}
"""

from __future__ import annotations

import abc
import dataclasses
import warnings
from typing import Any, ClassVar

from ... import score as _score
from .serializable_data_class import SerializableDataClass

__all__ = ["Score", "Scorer"]


@dataclasses.dataclass
class Score(SerializableDataClass):
    """autoevals' verdict: ``name``, ``score`` (in [0, 1], or ``None`` when skipped), ``metadata`` and ``error``.

    ``error`` is kept for old code (autoevals deprecates it: errors are raised); setting it warns.
    The score is validated as :class:`scorers.Score` validates it (a finite number in [0, 1]).
    """

    name: str
    score: float | None = None
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: Exception | None = None

    def __post_init__(self) -> None:
        self.score = _score.Score(self.name, self.score, self.metadata).score
        if self.error is not None:
            warnings.warn(
                "Score.error is deprecated (as in autoevals): scorers raise their errors",
                DeprecationWarning,
                stacklevel=3,
            )

    def as_dict(self) -> dict[str, Any]:
        """``{name, score, metadata}`` (``error`` is left out, as in autoevals)."""
        return {"name": self.name, "score": self.score, "metadata": self.metadata}

    @classmethod
    def from_score(cls, score: _score.Score) -> "Score":
        """The autoevals form of one of our :class:`scorers.Score` results."""
        return cls(name=score.name, score=score.score, metadata=score.metadata)


class Scorer(abc.ABC):
    """autoevals' scorer interface: implement ``_run_eval_sync`` (and ``_run_eval_async`` for real async work).

    Fields bound with :meth:`partial` (a class method, as in autoevals) are merged under the call's.

    >>> class Shouting(Scorer):
    ...     def _run_eval_sync(self, output, expected=None, **kwargs):
    ...         return Score(name="Shouting", score=float(output.isupper() == kwargs.get("loud", True)))
    >>> Shouting()("HEY").score, Shouting.partial(loud=False)()("hey").score
    (1.0, 1.0)
    """

    _partial_kwargs: ClassVar[dict[str, Any]] = {}

    def eval(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        """Score one example (``expected`` omitted or ``None`` keeps a bound one)."""
        return self._run_eval_sync(output, **self._merged(expected, kwargs))

    async def eval_async(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        """Async form of :meth:`eval`."""
        return await self._run_eval_async(output, **self._merged(expected, kwargs))

    def __call__(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        return self.eval(output, expected, **kwargs)

    def _merged(self, expected: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        if expected is not None:
            kwargs["expected"] = expected
        return {**self._partial_kwargs, **kwargs}

    @abc.abstractmethod
    def _run_eval_sync(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        """Score one example."""

    async def _run_eval_async(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        """Score one example asynchronously; the default runs the sync form."""
        return self._run_eval_sync(output, expected, **kwargs)

    def _name(self) -> str:
        return type(self).__name__

    @classmethod
    def partial(cls, **kwargs: Any) -> type["Scorer"]:
        """A subclass with ``kwargs`` bound to every call (call-time arguments win); its name stays ``cls``'s."""
        bound = {**cls._partial_kwargs, **kwargs}
        return type(
            cls.__name__,
            (cls,),
            {
                "_partial_kwargs": bound,
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__doc__": cls.__doc__,
            },
        )

    @classmethod
    def _partial_args(cls) -> dict[str, Any]:
        """The fields bound by :meth:`partial`."""
        return dict(cls._partial_kwargs)
