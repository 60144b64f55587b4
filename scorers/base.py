"""The :class:`Scorer` base class: one keyword interface for every scorer.

A scorer declares the fields it reads (:class:`Field`) and implements one hook:
``_score`` (sync, CPU work) or ``_ascore`` (async, I/O work). The base class
validates arguments, binds ``partial`` arguments, wraps results in a
:class:`~scorers.score.Score` with a reproducibility signature, and provides the
sync/async bridges.

>>> from scorers import get
>>> lev = get("Levenshtein")
>>> lev(output="kitten", expected="sitting").score
0.5714285714285714
>>> lev.eval("kitten", "sitting").score   # autoevals' positional form
0.5714285714285714
"""
from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator, Mapping, Sequence

from ._aio import run_sync
from ._version import __version__
from .errors import ScorerError, ScorerInputError, UnknownArgumentError
from .score import Score

__all__ = ["Field", "Scorer", "Aggregator", "MeanAggregator", "STANDARD_FIELDS", "text_field", "require"]

#: Fields every scorer accepts, so that harnesses can pass them uniformly.
#: ``metadata`` is the harness's row metadata; scorers that do not read it ignore it.
STANDARD_FIELDS = ("input", "output", "expected", "metadata")

_MISSING = object()


@dataclass(frozen=True)
class Field:
    """A field a scorer reads.

    ``types`` are the accepted Python types (``None`` is never accepted for a
    required field); ``convert`` turns an accepted value into what the scorer
    works on and may raise ``ValueError``/``TypeError`` with a reason.
    """

    name: str
    types: tuple[type, ...] = (object,)
    required: bool = True
    description: str = ""
    convert: Callable[[Any], Any] | None = None
    #: Accept an explicit ``None`` (e.g. JSON ``null``) for a required field.
    nullable: bool = False

    def type_names(self) -> str:
        return " or ".join(t.__name__ for t in self.types)


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError("expects text, got bool")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"expects text, got the non-finite number {value!r}")
        return str(value)
    raise TypeError(f"expects text (str), got {type(value).__name__}")


def text_field(name: str, *, required: bool = True, description: str = "") -> Field:
    """A field holding text; numbers are accepted and turned into their ``str``."""
    return Field(name, (str, int, float), required=required, description=description, convert=_to_text)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic result objects.

    Allocating thousands of Scores otherwise triggers collections that walk the
    whole heap, which in a large process costs more than the scoring itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def require(condition: bool, scorer: str, field: str, problem: str) -> None:
    """Raise :class:`ScorerInputError` unless ``condition`` holds."""
    if not condition:
        raise ScorerInputError(scorer, field, problem)


class Aggregator:
    """Accumulates the scores of a run into summary figures (per scorer)."""

    def add(self, score: Score) -> None:
        raise NotImplementedError

    def result(self) -> dict[str, Any]:
        raise NotImplementedError


class MeanAggregator(Aggregator):
    """n, mean, stdev, min, max and skipped over the non-None scores, streaming."""

    def __init__(self) -> None:
        self.n = 0
        self.skipped = 0
        self._mean = 0.0
        self._m2 = 0.0
        self.min: float | None = None
        self.max: float | None = None

    def add(self, score: Score) -> None:
        if score.score is None:
            self.skipped += 1
            return
        x = score.score
        self.n += 1
        delta = x - self._mean
        self._mean += delta / self.n
        self._m2 += delta * (x - self._mean)
        self.min = x if self.min is None else min(self.min, x)
        self.max = x if self.max is None else max(self.max, x)

    def result(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": self._mean if self.n else None,
            "stdev": math.sqrt(self._m2 / (self.n - 1)) if self.n > 1 else (0.0 if self.n else None),
            "min": self.min,
            "max": self.max,
            "skipped": self.skipped,
        }


class Scorer:
    """Base class of all scorers.

    Subclasses set the class attributes and implement ``_score`` (sync) or
    ``_ascore`` (async). Constructor parameters that change the number must be
    returned by :meth:`params` so that they enter the signature.
    """

    #: Registered name; also ``Score.name``.
    name: str = ""
    #: Family: ``heuristic``, ``text``, ``embedding`` or ``llm``.
    kind: ClassVar[str] = "heuristic"
    #: One line shown by ``python -m scorers list``.
    description: ClassVar[str] = ""
    #: Fields read by the scorer; ``required`` ones must be given and not None.
    fields: ClassVar[tuple[Field, ...]] = ()
    #: Version of the scorer's algorithm; bump when its numbers change.
    algorithm_version: ClassVar[str] = "1"
    #: An example call shown by ``python -m scorers show``.
    example: ClassVar[str] = ""
    #: True when the scorer's core is ``_ascore`` (I/O bound).
    is_async: ClassVar[bool] = False

    def __init__(self, *, name: str | None = None) -> None:
        if name is not None:
            self.name = name
        if not self.name:
            self.name = type(self).__name__
        self._bound: dict[str, Any] = {}

    # ------------------------------------------------------------------ hooks
    def _score(self, **fields: Any) -> Score:
        raise NotImplementedError(f"{type(self).__name__} implements neither _score nor _ascore")

    async def _ascore(self, **fields: Any) -> Score:
        return self._score(**fields)

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        """Score validated rows together; override where a faster vectorised route exists."""
        return [self._score(**row) for row in rows]

    def _score_columns(self, columns: Mapping[str, Sequence[Any]]) -> list[Score] | None:
        """Columnar fast path of :meth:`score_batch`; return None when it does not apply.

        Override where whole columns can be validated and scored at once
        (e.g. all-``str`` columns handed to a C++ kernel); a column that needs
        per-row checks must make it return None, so the generic path runs.
        """
        return None

    def params(self) -> dict[str, Any]:
        """Every setting that changes the number (enters the signature)."""
        return {}

    def aggregator(self) -> Aggregator:
        """A fresh accumulator for run summaries (corpus-level figures go here)."""
        return MeanAggregator()

    # ------------------------------------------------------------- signature
    def signature(self) -> dict[str, Any]:
        """What is needed to reproduce this scorer's numbers."""
        return {
            "scorer": type(self).__name__ if self.name == type(self).__name__ else f"{type(self).__name__}:{self.name}",
            "scorers_version": __version__,
            "algorithm": self.algorithm_version,
            **self.params(),
        }

    def make_score(self, value: float | None, **metadata: Any) -> Score:
        """Build this scorer's :class:`Score`, signature included."""
        metadata["signature"] = self.signature()
        return Score(self.name, value, metadata)

    # ------------------------------------------------------------- arguments
    def accepted_fields(self) -> list[str]:
        names = [f.name for f in self.fields]
        return names + [s for s in STANDARD_FIELDS if s not in names]

    def required_fields(self) -> list[str]:
        return [f.name for f in self.fields if f.required]

    def _binding_plan(self) -> tuple[frozenset[str], tuple[tuple[str, bool, Callable[[Any], Any] | None], ...], tuple[str, ...]]:
        """What :meth:`_bind` needs, computed once per ``fields`` tuple.

        Returns the accepted names, per field ``(name, takes_str, convert)`` for
        the fast path of plain ``str`` values, and the undeclared standard fields.
        """
        cached = self.__dict__.get("_plan")
        if cached is None or cached[0] is not self.fields:
            names = {f.name for f in self.fields}
            fast = tuple((f.name, str in f.types or object in f.types,
                          None if f.convert is _to_text else f.convert) for f in self.fields)
            undeclared = tuple(s for s in STANDARD_FIELDS if s not in names)
            cached = (self.fields, (frozenset(names) | frozenset(STANDARD_FIELDS), fast, undeclared))
            self.__dict__["_plan"] = cached
        return cached[1]

    def _bind(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Merge bound arguments, reject unknown ones, validate declared fields.

        Undeclared standard fields that were given are passed through unvalidated.
        Plain ``str`` values of fields that take text skip the generic checks.
        """
        merged = {**self._bound, **kwargs} if self._bound else kwargs
        accepted, fast, undeclared = self._binding_plan()
        if not merged.keys() <= accepted:
            unknown = next(key for key in merged if key not in accepted)
            raise UnknownArgumentError(self.name, unknown, self.accepted_fields())
        out: dict[str, Any] = {}
        for (name, takes_str, convert), f in zip(fast, self.fields):
            value = merged.get(name, _MISSING)
            if takes_str and type(value) is str:
                out[name] = value if convert is None else self._convert(f, value)
            else:
                out[name] = self._check(f, value)
        for key in undeclared:  # given but undeclared standard fields pass through as they are
            if key in merged:
                out[key] = merged[key]
        return out

    def _check(self, f: Field, value: Any) -> Any:
        """Validate and convert one field's value (the general path of :meth:`_bind`)."""
        if value is None and f.nullable:
            return None
        if value is _MISSING or value is None:
            if f.required:
                raise ScorerInputError(
                    self.name, f.name, "is required but was missing" if value is _MISSING else "is required but was None"
                )
            return None
        if not isinstance(value, f.types):
            raise ScorerInputError(self.name, f.name, f"must be {f.type_names()}, got {type(value).__name__}")
        return value if f.convert is None else self._convert(f, value)

    def _convert(self, f: Field, value: Any) -> Any:
        try:
            return f.convert(value)  # type: ignore[misc]
        except (TypeError, ValueError) as exc:
            raise ScorerInputError(self.name, f.name, str(exc)) from exc

    # --------------------------------------------------------------- calling
    def __call__(self, **kwargs: Any) -> Score:
        """Score one example: ``scorer(output=..., expected=..., input=..., **vars)``."""
        if self.is_async:
            return run_sync(self.acall(**kwargs))
        return self._score(**self._bind(kwargs))

    async def acall(self, **kwargs: Any) -> Score:
        """Async form of :meth:`__call__`."""
        fields = self._bind(kwargs)
        if self.is_async:
            return await self._ascore(**fields)
        return self._score(**fields)

    def eval(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        """autoevals-compatible form: output and expected positionally."""
        return self(output=output, expected=expected, **kwargs)

    async def eval_async(self, output: Any, expected: Any = None, **kwargs: Any) -> Score:
        """autoevals-compatible async form."""
        return await self.acall(output=output, expected=expected, **kwargs)

    def partial(self, **kwargs: Any) -> "Scorer":
        """A copy with arguments bound; call-time arguments win, the name stays."""
        declared = {f.name for f in self.fields}
        for key in kwargs:
            if key not in declared and key not in STANDARD_FIELDS:
                raise UnknownArgumentError(self.name, key, self.accepted_fields())
        clone = copy.copy(self)
        clone._bound = {**self._bound, **kwargs}
        return clone

    # ----------------------------------------------------------------- batch
    def score_batch(
        self,
        outputs: Sequence[Any],
        expecteds: Sequence[Any] | None = None,
        inputs: Sequence[Any] | None = None,
        **columns: Sequence[Any],
    ) -> list[Score]:
        """Score many examples at once; raises on the first bad row.

        >>> from scorers import get
        >>> [s.score for s in get("ExactMatch").score_batch(["a", "b"], ["a", "c"])]
        [1.0, 0.0]
        """
        named = _named_columns(outputs, expecteds, inputs, columns)
        if not self._bound:
            fast = self._score_columns(named)
            if fast is not None:
                return fast
        n = len(outputs)
        results = self.score_rows([{k: v[i] for k, v in named.items()} for i in range(n)])
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results  # type: ignore[return-value]

    def score_rows(self, rows: Iterable[Mapping[str, Any]]) -> list[Score | ScorerError]:
        """Score rows of keyword arguments; a bad row yields its error, the rest go on."""
        results: list[Score | ScorerError | None] = []
        valid: list[dict[str, Any]] = []
        positions: list[int] = []
        for row in rows:
            try:
                valid.append(self._bind(row))
                positions.append(len(results))
                results.append(None)
            except ScorerError as exc:
                results.append(exc)
        if valid:
            try:
                scored: list[Score | ScorerError] = list(self._score_batch(valid))
            except ScorerError:
                scored = [self._score_one_safely(row) for row in valid]
            for pos, score in zip(positions, scored):
                results[pos] = score
        return results  # type: ignore[return-value]

    def _score_one_safely(self, row: dict[str, Any]) -> Score | ScorerError:
        try:
            return self._score(**row)
        except ScorerError as exc:
            return exc

    async def ascore_rows(
        self,
        rows: Sequence[Mapping[str, Any]],
        *,
        concurrency: int = 16,
        limit: asyncio.Semaphore | None = None,
        catch: type[Exception] | tuple[type[Exception], ...] = ScorerError,
    ) -> list[Score | Exception]:
        """Async batch: one result or caught error per row, in order.

        Async scorers run concurrently, bounded by ``limit`` (a semaphore shared
        with other work, e.g. a whole run) or else by ``concurrency``; sync ones
        use :meth:`score_rows`. Exceptions of type ``catch`` are returned in the
        row's place, others propagate. Scorers with a faster batch route (e.g. a
        judge's bulk cache lookup) override this.
        """
        if not self.is_async:
            return list(self.score_rows(rows))
        semaphore = limit or asyncio.Semaphore(max(1, concurrency))

        async def one(row: Mapping[str, Any]) -> Score | Exception:
            async with semaphore:
                try:
                    return await self.acall(**row)
                except catch as exc:
                    return exc

        return list(await asyncio.gather(*(one(row) for row in rows)))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({params})" if self.name == type(self).__name__ else f"{type(self).__name__}(name={self.name!r}{', ' + params if params else ''})"


def _named_columns(outputs: Sequence[Any], expecteds: Sequence[Any] | None, inputs: Sequence[Any] | None,
                   columns: Mapping[str, Sequence[Any]]) -> dict[str, Sequence[Any]]:
    named: dict[str, Sequence[Any]] = {"output": outputs}
    if expecteds is not None:
        named["expected"] = expecteds
    if inputs is not None:
        named["input"] = inputs
    named.update(columns)
    lengths = {k: len(v) for k, v in named.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"score_batch: columns have different lengths: {lengths}")
    return named
