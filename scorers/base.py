"""The :class:`Scorer` base class: one keyword interface for every scorer.

A scorer declares the fields it reads (:class:`~scorers.fields.Field`) and
implements one of four hooks: ``_score`` (one row) or ``_score_batch`` (a list
of rows) for CPU work, ``_ascore`` or ``_ascore_batch`` for I/O work. Whether a
scorer is async follows from which hooks it overrides. The base class validates
and converts arguments, passes each hook only the fields the scorer declares
(plus standard fields the hook names), binds ``partial`` arguments, and offers
one batch pair, :meth:`Scorer.score_batch` / :meth:`Scorer.ascore_batch`.

>>> from scorers import get
>>> lev = get("Levenshtein")
>>> lev(output="kitten", expected="sitting").score
0.5714285714285714
>>> lev.eval("kitten", "sitting").score   # autoevals' positional form
0.5714285714285714
>>> [getattr(r, "score", r) for r in lev.score_batch([{"output": "a", "expected": "a"}, {"output": "a"}])]
[1.0, ScorerInputError("Levenshtein: field 'expected' is required but was missing")]
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
from operator import itemgetter
from types import MappingProxyType
from typing import Any, ClassVar, Iterable, Mapping, Sequence

from ._aio import DEFAULT_CONCURRENCY, run_sync
from ._util import did_you_mean, lazy, lazy_names
from ._version import __version__
from .aggregate import Aggregator, MeanAggregator
from .errors import PositionalArgumentError, ScorerError, ScorerInputError, UnknownArgumentError
from .fields import STANDARD_FIELDS, Field, to_text
from .params import Param, declared_params, signature_of
from .reasoning import Unanswered, without_reasoning
from .score import Score, ScoreColumn

__all__ = ["Scorer"]

_MISSING: Any = object()
_STR_OR_NONE = frozenset((str, type(None)))


class Scorer:
    """Base class of all scorers.

    Subclasses set the class attributes and implement ``_score`` or
    ``_score_batch`` (sync) or ``_ascore`` or ``_ascore_batch`` (async). Hooks
    take fields by keyword (``def _score(self, *, output, expected)``); a batch
    hook takes a list of such dicts. Constructor parameters are declared once, as
    class attributes (``ignore_case: bool = param("...", default=False)``, see
    :mod:`scorers.params`): the keyword-only constructor, validation,
    :meth:`params` (what enters the signature) and :meth:`options` come from them;
    ``__post_init__`` checks several at once and builds what derives from them.

    >>> from scorers import Scorer
    >>> class Shouting(Scorer):
    ...     fields = (Field("output", (str,)),)
    ...     def _score(self, *, output):
    ...         return self.make_score(float(output.isupper()))
    >>> Shouting()(output="HEY", input="ignored").score, Shouting.is_async
    (1.0, False)
    """

    #: Registered name; also ``Score.name``.
    name: str = ""
    #: Family: ``heuristic``, ``text``, ``embedding`` or ``llm``.
    kind: ClassVar[str] = "heuristic"
    #: The optional extra (``pip install 'scorers[EXTRA]'``) the scorer needs with its default parameters, or
    #: None; ``python -m scorers list`` marks a scorer whose extra is not installed.
    extra: ClassVar[str | None] = None
    #: One line shown by ``python -m scorers list`` (a templated judge sets its own per instance).
    description: str = ""
    #: Fields read by the scorer; ``required`` ones must be given and not None.
    fields: tuple[Field, ...] = ()
    #: Version of the scorer's algorithm; bump when its numbers change.
    algorithm_version: ClassVar[str] = "1"
    #: An example call shown by ``python -m scorers show`` (a templated judge sets its own per instance).
    example: str = ""
    #: False for a metric where lower is better (Hallucination, Bias, Toxicity); in ``list --json``.
    higher_is_better: ClassVar[bool] = True
    #: Longest text (in characters) a text field may hold, for a scorer whose cost grows faster than its input;
    #: a longer one is a row's ScorerInputError. None: no limit. Refuses rows, never changes a number.
    max_chars: int | None = None
    #: The fields whose reasoning (``<think>…</think>`` and the like) is left out before scoring while the scorer's
    #: ``strip_reasoning`` is on (:mod:`scorers.reasoning`): the ``output`` of the text metrics and the judges.
    reasoning_fields: tuple[str, ...] = ()
    #: Derived: True when the class overrides ``_ascore`` or ``_ascore_batch``.
    is_async: ClassVar[bool] = False
    #: Derived: standard fields a hook names in its signature (passed even when not declared).
    _asked: ClassVar[tuple[str, ...]] = ()
    #: Derived: the declared parameters (:func:`~scorers.params.param`), inherited ones first.
    _declared: ClassVar[dict[str, Param]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.is_async = cls._ascore is not Scorer._ascore or cls._ascore_batch is not Scorer._ascore_batch
        hook = cls._ascore if cls.is_async else cls._score
        parameters = inspect.signature(hook).parameters
        cls._asked = tuple(name for name in STANDARD_FIELDS if name in parameters)
        cls._declared = declared_params(cls, cls._declared)
        # a class with a constructor of its own describes itself (None: inspect reads its __init__)
        cls.__signature__ = (  # type: ignore[attr-defined]  # read by inspect.signature
            signature_of(cls._declared, _BASE_SIGNATURE) if cls.__init__ is Scorer.__init__ else None
        )

    def __init__(self, *, name: str | None = None, **params: Any) -> None:
        if name is not None:
            self.name = name
        if not self.name:
            self.name = type(self).__name__
        self._bound: dict[str, Any] = {}
        declared = self._declared
        unknown = next((key for key in params if key not in declared), None)
        if unknown is not None:  # the registry words it, with the parameters there are
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown!r}")
        for option in declared.values():
            if option.name in params:
                value = option.checked(params[option.name], self.name)
            elif option.required:
                raise TypeError(f"{type(self).__name__}() missing 1 required keyword-only argument: {option.name!r}")
            else:
                value = option.default
            setattr(self, option.name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        """Check what involves several parameters, and build what derives from them (called by the constructor
        once every declared parameter is set and valid); a wrong combination is a :class:`ConfigError`."""

    @classmethod
    def options(cls) -> dict[str, Param]:
        """The declared parameters by name, in the constructor's order: each with its ``default``, ``help``,
        ``choices`` and ``allowed`` (what a value must be).

        >>> from scorers import get
        >>> option = type(get("Contains")).options()["mode"]
        >>> option.default, option.choices, option.help
        ('any', ('any', 'all'), "'any': one of the expected strings must occur; 'all': the share of them that do")
        """
        return dict(cls._declared)

    # ------------------------------------------------------------------ hooks
    def _score(self, **fields: Any) -> Score:
        """Score one row; the default scores a batch of one."""
        if type(self)._score_batch is Scorer._score_batch:
            raise NotImplementedError(
                f"{type(self).__name__} implements none of _score, _score_batch, _ascore, _ascore_batch"
            )
        return _raise_error(self._score_batch([fields])[0])

    def _score_batch(self, rows: list[dict[str, Any]]) -> Sequence[Score | ScorerError]:
        """Score validated rows; override where a vectorised route exists. A row's ScorerError may be returned;
        a :class:`~scorers.score.ScoreColumn` (the scores as one array) may be, and then no Score is made."""
        return [_safely(self._score, row) for row in rows]

    def _score_columns(self, columns: dict[str, list[Any]]) -> Sequence[Score | ScorerError]:
        """Score validated rows given as one list per declared field; override where the kernel takes columns.

        :meth:`score_batch` calls it instead of ``_score_batch`` when every row of a batch binds on the fast
        path (plain values of the field's type, nothing to refuse); the default rebuilds the rows.
        """
        names = list(columns)
        return self._score_batch([dict(zip(names, values)) for values in zip(*columns.values())])

    async def _ascore(self, **fields: Any) -> Score:
        """Score one row asynchronously; the default scores a batch of one."""
        outcome = (await self._ascore_batch([fields], asyncio.Semaphore(1)))[0]
        return _raise_error(outcome)

    async def _ascore_batch(self, rows: list[dict[str, Any]], limit: asyncio.Semaphore) -> list[Score | ScorerError]:
        """Score validated rows concurrently, at most ``limit`` calls in flight; a row's ScorerError is returned."""

        async def one(row: dict[str, Any]) -> Score | ScorerError:
            async with limit:
                try:
                    return await self._ascore(**row)
                except ScorerError as exc:
                    return exc

        return list(await asyncio.gather(*(one(row) for row in rows)))

    def params(self) -> dict[str, Any]:
        """Every setting that changes the number (enters the signature): the declared parameters but those with
        ``signed=False``, in order, and ``strip_reasoning`` when it is off; a subclass adds what else decides its
        numbers (a library's version)."""
        params = {name: getattr(self, name) for name, option in self._declared.items() if option.signed}
        if self.reasoning_fields and params.get("strip_reasoning") is True:  # on (the default): as it always was
            del params["strip_reasoning"]
        return params

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

    def make_score(self, value: float | None, *, stats: tuple[float, ...] | None = None, **metadata: Any) -> Score:
        """Build this scorer's :class:`Score`, signature included."""
        metadata["signature"] = self.signature()
        return Score(self.name, value, metadata, stats)

    # ------------------------------------------------------------- arguments
    def accepted_fields(self) -> list[str]:
        names = [f.name for f in self.fields]
        return names + [s for s in STANDARD_FIELDS if s not in names]

    def required_fields(self) -> list[str]:
        return [f.name for f in self.fields if f.required]

    @classmethod
    def constructor_params(cls) -> list[str]:
        """The keyword parameters of the constructor (settings, not fields), and of the base constructors
        that a ``**settings`` parameter passes on to."""
        names: list[str] = []
        inits = (vars(klass)["__init__"] for klass in cls.__mro__[1:] if "__init__" in vars(klass))
        for signature in (inspect.signature(cls), *map(inspect.signature, inits)):
            parameters = signature.parameters.values()
            names += [
                p.name
                for p in parameters
                if p.name not in names
                and (p.kind is p.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"))
            ]
            if not any(p.kind is p.VAR_KEYWORD for p in parameters):
                break
        return names

    @lazy
    def _plan(
        self,
    ) -> tuple[frozenset[str], tuple[tuple[str, Field, bool, bool], ...], tuple[str, ...], tuple[str, ...]]:
        """Accepted names; per field (name, field, takes a plain str as is, converts a str); standard fields
        passed on; text fields (one text or references) that ``max_chars`` bounds."""
        declared = {f.name for f in self.fields}
        per_field = tuple(
            (f.name, f, str in f.types or object in f.types, f.convert not in (None, to_text)) for f in self.fields
        )
        passed = tuple(s for s in self._asked if s not in declared)
        texts = tuple(f.name for f in self.fields if f.text)
        return frozenset(declared) | frozenset(STANDARD_FIELDS), per_field, passed, texts

    @lazy
    def _stripped(self) -> tuple[str, ...]:
        """The fields whose reasoning is left out: :attr:`reasoning_fields` while ``strip_reasoning`` is on."""
        return self.reasoning_fields if getattr(self, "strip_reasoning", False) else ()

    def _flagged(self, row: Mapping[str, Any], outcome: Any) -> Any:
        """``outcome`` with ``incomplete_reasoning: True`` in its metadata when a field of ``row`` held a reasoning
        block that never closed (scored as an empty answer)."""
        if isinstance(outcome, Score) and any(type(row.get(name)) is Unanswered for name in self._stripped):
            return dataclasses.replace(outcome, metadata={**outcome.metadata, "incomplete_reasoning": True})
        return outcome

    def _unknown(self, key: str) -> UnknownArgumentError:
        accepted = self.accepted_fields()
        if key in self.constructor_params():
            hint = (
                f"; {key!r} is a parameter of the scorer, not a field: set it when building it, "
                f"e.g. scorers.get({self.name!r}, {key}=...)"
            )
        else:
            hint = did_you_mean(key, accepted)
        return UnknownArgumentError(self.name, key, accepted, hint=hint)

    def _bind(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Merge bound arguments, reject unknown ones, validate and convert the declared fields.

        Returns what the hooks receive: every declared field (None when an
        optional one is absent) and the standard fields the hook asks for.
        """
        merged = {**self._bound, **kwargs} if self._bound else kwargs
        if self._stripped:
            merged = without_reasoning(merged, self._stripped, reasoning_field="reasoning" in self._plan[0])
        accepted, per_field, passed, texts = self._plan
        if not merged.keys() <= accepted:
            raise self._unknown(next(key for key in merged if key not in accepted))
        out: dict[str, Any] = {}
        get = merged.get
        for name, f, takes_str, converts in per_field:
            value = get(name, _MISSING)
            if takes_str and type(value) is str:
                out[name] = self._convert(f, value) if converts else value
            else:
                out[name] = self._check(f, value)
        if passed:
            for key in passed:
                if key in merged:
                    out[key] = merged[key]
        if self.max_chars is not None:
            for name in texts:
                self._check_length(name, out[name])
        return out

    def _check_length(self, field: str, value: str | tuple[str, ...] | None) -> None:
        """Refuse a text (or a reference) longer than :attr:`max_chars`."""
        for at, text in enumerate((value,) if value is None or type(value) is str else value):
            # called only when max_chars is set
            if text is not None and len(text) > self.max_chars:  # type: ignore[operator]
                which = "" if type(value) is str else f" (reference {at})"
                raise self.too_long(field, f"{len(text):,} characters{which}")

    def too_long(self, field: str, size: str) -> ScorerInputError:
        """The error for a value of ``size`` (e.g. "200,000 characters") over :attr:`max_chars`."""
        return ScorerInputError(
            self.name,
            field,
            f"has {size}, more than max_chars={self.max_chars:,} (a bound on time and memory): "
            f"raise it if the cost is acceptable, with scorers.get({self.name!r}, max_chars=...) or "
            f"-p {self.name}.max_chars=... (null: no limit)",
        )

    def _check(self, f: Field, value: Any) -> Any:
        """Validate and convert one field's value (the general path of :meth:`_bind`)."""
        if value is None and f.nullable:
            return None
        if value is _MISSING or value is None:
            if f.required:
                raise ScorerInputError(
                    self.name,
                    f.name,
                    "is required but was missing" if value is _MISSING else "is required but was None",
                )
            return None
        if not isinstance(value, f.types):
            raise ScorerInputError(self.name, f.name, f"must be {f.type_names()}, got {type(value).__name__}")
        return value if f.convert is None else self._convert(f, value)

    def _convert(self, f: Field, value: Any) -> Any:
        try:
            return f.convert(value)  # type: ignore[misc]  # called only for a field whose convert is set
        except (TypeError, ValueError) as exc:
            raise ScorerInputError(self.name, f.name, str(exc)) from exc

    # --------------------------------------------------------------- calling
    def __call__(self, *args: Any, **kwargs: Any) -> Score:
        """Score one example: ``scorer(output=..., expected=..., input=..., **vars)``."""
        if args:
            raise PositionalArgumentError(self.name, len(args))
        if self.is_async:
            return run_sync(self.acall(**kwargs))
        fields = self._bind(kwargs)
        return self._flagged(fields, self._score(**fields)) if self._stripped else self._score(**fields)

    async def acall(self, *args: Any, **kwargs: Any) -> Score:
        """Async form of :meth:`__call__`."""
        if args:
            raise PositionalArgumentError(self.name, len(args))
        fields = self._bind(kwargs)
        score = await self._ascore(**fields) if self.is_async else self._score(**fields)
        return self._flagged(fields, score) if self._stripped else score

    def eval(self, output: Any, expected: Any = _MISSING, **kwargs: Any) -> Score:
        """autoevals-compatible form: output and expected positionally (an omitted expected keeps a bound one)."""
        if expected is not _MISSING:
            kwargs["expected"] = expected
        return self(output=output, **kwargs)

    async def eval_async(self, output: Any, expected: Any = _MISSING, **kwargs: Any) -> Score:
        """autoevals-compatible async form."""
        if expected is not _MISSING:
            kwargs["expected"] = expected
        return await self.acall(output=output, **kwargs)

    def partial(self, **fields: Any) -> "Scorer":
        """A copy with fields bound (call-time arguments win; the name stays).

        Parameters (settings such as ``ignore_case``) are not fields: pass them to
        ``scorers.get(name, **params)`` or the constructor.

        >>> from scorers import get
        >>> get("Levenshtein").partial(expected="abcd").eval("abc").score
        0.75
        """
        accepted = self._plan[0]
        for key in fields:
            if key not in accepted:
                raise self._unknown(key)
        clone = copy.copy(self)
        clone._bound = {**self._bound, **fields}
        return clone

    @property
    def bound_fields(self) -> Mapping[str, Any]:
        """The fields :meth:`partial` bound (read-only); a call's own arguments win over them.

        >>> from scorers import get
        >>> dict(get("Levenshtein").partial(expected="abcd").bound_fields)
        {'expected': 'abcd'}
        """
        return MappingProxyType(self._bound)

    # ----------------------------------------------------------------- batch
    def score_batch(self, rows: Iterable[Mapping[str, Any]]) -> Sequence[Score | ScorerError]:
        """Score rows of keyword arguments: a Score or the row's :class:`ScorerError`, in input order.

        A bad row does not stop the others. Any other exception is a bug and propagates. A scorer whose kernel
        takes columns (ExactMatch, Levenshtein, NumericDiff, ROUGE) returns a :class:`~scorers.score.ScoreColumn`: the
        same sequence of outcomes, its Scores made as they are read, its numbers in one array (``.values``).

        >>> from scorers import get
        >>> [s.score for s in get("ExactMatch").score_batch([{"output": "a", "expected": "a"},
        ...                                                  {"output": "b", "expected": "c"}])]
        [1.0, 0.0]
        """
        if self.is_async:
            return run_sync(self.ascore_batch(rows))
        rows = rows if type(rows) is list else list(rows)
        columns = self._bind_columns(rows)
        if columns is not None:
            try:
                return self._score_columns(columns)
            except ScorerError:  # the vectorised path refused the batch: the row path finds the row(s) at fault
                pass
        results, valid, positions = self._bind_rows(rows)
        if valid:
            try:
                outcomes = self._score_batch(valid)
            except ScorerError:  # the vectorised path refused the batch: find the row(s) at fault
                outcomes = [_safely(self._score, row) for row in valid]
            if type(outcomes) is ScoreColumn and not self._stripped:
                column = outcomes.placed(len(results), positions, results)
                if column is not None:
                    return column
            for position, row, outcome in zip(positions, valid, outcomes):
                results[position] = self._flagged(row, outcome) if self._stripped else outcome
        return results

    async def ascore_batch(
        self,
        rows: Iterable[Mapping[str, Any]],
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        limit: asyncio.Semaphore | None = None,
    ) -> Sequence[Score | ScorerError]:
        """Async form of :meth:`score_batch`; at most ``concurrency`` calls in flight (or a shared ``limit``)."""
        if not self.is_async:
            return self.score_batch(rows)
        results, valid, positions = self._bind_rows(rows)
        if valid:
            outcomes = await self._ascore_batch(valid, limit or asyncio.Semaphore(max(1, concurrency)))
            for position, row, outcome in zip(positions, valid, outcomes):
                results[position] = self._flagged(row, outcome) if self._stripped else outcome
        return results

    def _bind_columns(self, rows: list[Any]) -> dict[str, list[Any]] | None:
        """The rows' declared fields as columns, when every row binds as :meth:`_bind` would bind it with no
        error: plain dicts of known keys whose values are strings (None or absent for an optional field) within
        ``max_chars``. None sends the batch to the row path, which binds (and refuses) row by row.

        Checks run once per column, in C where they can (``set(map(type, ...))``), so a clean batch costs a
        few passes over its lists instead of a call per row and field.
        """
        accepted, per_field, passed, texts = self._plan
        if not rows or passed or set(map(type, rows)) != {dict} or not accepted.issuperset(set().union(*rows)):
            return None
        columns: dict[str, list[Any]] = {}
        for name, f, takes_str, converts in per_field:
            if not takes_str:
                return None
            column = self._column(rows, name, f, converts, self.max_chars if name in texts else None)
            if column is None:
                return None
            columns[name] = column
        if any("<" in value for name in self._stripped for value in columns.get(name, ()) if value is not None):
            return None  # a row with a reasoning tag, perhaps: the row path leaves the reasoning out
        return columns

    def _column(
        self, rows: list[dict[str, Any]], name: str, f: Field, converts: bool, limit: int | None
    ) -> list[Any] | None:
        """One field's column for :meth:`_bind_columns`, texts of at most ``limit`` characters (None: a row needs
        the row path)."""
        bound = self._bound
        if name in bound:
            default = bound[name]
            column = [row.get(name, default) for row in rows]
        else:
            try:
                column = list(map(itemgetter(name), rows))
            except KeyError:
                column = [row.get(name) for row in rows]
        if not self._plain(column, f, limit):
            return None
        if converts:
            try:
                column = [value if value is None else f.convert(value) for value in column]  # type: ignore[misc]
            except (TypeError, ValueError):  # the row path names the row and the reason
                return None
        return column

    @staticmethod
    def _plain(column: list[Any], f: Field, limit: int | None) -> bool:
        """Whether a column holds strings (None where the field may be None or absent) of at most ``limit``
        characters: what binds with nothing to refuse. Checked once per column (``set(map(type, ...))`` in C)."""
        kinds = set(map(type, column))
        if kinds == {str}:
            return limit is None or max(map(len, column)) <= limit
        if not (kinds <= _STR_OR_NONE and (f.nullable or not f.required)):
            return False
        return limit is None or all(len(v) <= limit for v in column if v is not None)

    def _bind_rows(self, rows: Iterable[Mapping[str, Any]]) -> tuple[list[Any], list[dict[str, Any]], list[int]]:
        results: list[Any] = []
        valid: list[dict[str, Any]] = []
        positions: list[int] = []
        for row in rows:
            if type(row) is not dict and not isinstance(row, Mapping):  # the type test skips a slow ABC check
                raise TypeError(
                    f"{self.name}: a batch is a list of rows, each a mapping of fields to values "
                    f"(e.g. {{'output': ..., 'expected': ...}}), got a {type(row).__name__}"
                )
            try:
                valid.append(self._bind(row))
            except ScorerError as exc:
                results.append(exc)
            else:
                positions.append(len(results))
                results.append(None)
        return results, valid, positions

    # -------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        """Everything but ``@lazy`` state (models, caches, clients, locks), which is rebuilt on first use."""
        state = self.__dict__.copy()
        for name in lazy_names(type(self)):
            state.pop(name, None)
        return state

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        if self.name == type(self).__name__:
            return f"{type(self).__name__}({params})"
        return f"{type(self).__name__}(name={self.name!r}{', ' + params if params else ''})"


#: The base constructor's signature: what follows the declared parameters in a subclass's.
_BASE_SIGNATURE = inspect.signature(Scorer.__init__)


def _safely(hook: Any, row: dict[str, Any]) -> Score | ScorerError:
    try:
        return hook(**row)
    except ScorerError as exc:
        return exc


def _raise_error(outcome: Score | ScorerError) -> Score:
    if isinstance(outcome, ScorerError):
        raise outcome
    return outcome
