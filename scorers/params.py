"""Scorer parameters, declared once: a class attribute with its type, its default, its constraint and one line of help.

A :class:`~scorers.base.Scorer` subclass declares each parameter as an annotated class attribute whose value is
:func:`param`. From the declarations come the keyword-only constructor (its ``inspect.signature``), validation (a wrong value is a
:class:`~scorers.errors.ConfigError` naming the scorer, the parameter, what it must be and what it got), the
default :meth:`~scorers.base.Scorer.params` (the signed parameters, in declaration order),
:meth:`~scorers.base.Scorer.options` and the parameter table of ``python -m scorers show``. Checks that
involve several parameters, and state derived from them, go in the class's ``__post_init__``.

>>> from scorers import Scorer, param
>>> from scorers.fields import text_field
>>> class Shouting(Scorer):
...     fields = (text_field("output"),)
...     threshold: float = param("share of upper-case letters that counts as shouting", default=0.5, ge=0, le=1)
...     def _score(self, *, output):
...         letters = [c for c in output if c.isalpha()]
...         share = sum(c.isupper() for c in letters) / max(len(letters), 1)
...         return self.make_score(float(share >= self.threshold))
>>> Shouting(threshold=0.8)(output="HEY there").score, Shouting().params()
(0.0, {'threshold': 0.5})
>>> import inspect; inspect.signature(Shouting)
<Signature (*, threshold: 'float' = 0.5, name: 'str | None' = None) -> 'None'>
>>> Shouting(threshold=2)
Traceback (most recent call last):
...
scorers.errors.ConfigError: Shouting: threshold must be a number in [0, 1], got 2
>>> Shouting.options()["threshold"].help
'share of upper-case letters that counts as shouting'
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import types
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping, Union, get_args, get_origin, get_type_hints

from .errors import ConfigError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["Param", "param", "seconds", "declared_params", "signature_of"]


class _Required:
    """The default of a parameter that has none: the caller must give it."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Param:
    """One declared parameter: what :func:`param` returns and :meth:`Scorer.options() <scorers.base.Scorer.options>`
    lists (``name`` and ``annotation`` are filled in from the class attribute that holds it)."""

    #: One line: what the parameter does (``show`` prints it).
    help: str
    default: Any = REQUIRED
    #: The values allowed (besides None where the type allows None); None: any value of the type.
    choices: tuple[Any, ...] | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    #: Whether the default :meth:`~scorers.base.Scorer.params` returns it (it changes the number).
    signed: bool = True
    #: Completes "must be ..." in the error for a wrong value; derived from the type and constraint when None.
    expected: str | None = None
    name: str = ""
    #: The annotation as written (a string under ``from __future__ import annotations``).
    annotation: Any = None
    #: The module whose names the annotation is read with.
    module: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def allowed(self) -> str:
        """What a value must be, as "must be ..." ends: ``"a positive integer or None"``."""
        if self.expected is not None:
            return self.expected
        nullable = type(None) in _members(self.type)
        if self.choices is not None:
            text = f"one of {', '.join(map(str, self.choices))}"
        else:
            text = _described(self.type, self)
        return f"{text} or None" if nullable and text != "None" else text

    @property
    def type(self) -> Any:
        """The annotation, evaluated."""
        return _evaluated(self.module, self.annotation)

    def checked(self, value: Any, scorer: str) -> Any:
        """``value``, unchanged, when it is allowed; else a ConfigError naming ``scorer`` and this parameter."""
        from pydantic import ValidationError

        try:
            _adapter(self.module, self.annotation).validate_python(value)
            ok = True
        except ValidationError:
            ok = False
        if ok and value is not None:
            ok = (self.choices is None or value in self.choices) and _within(value, self)
        if not ok:
            raise ConfigError(f"{scorer}: {self.name} must be {self.allowed}, got {value!r}", scorer=scorer)
        return value


def param(
    help: str,
    *,
    default: Any = REQUIRED,
    choices: tuple[Any, ...] | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    signed: bool = True,
    expected: str | None = None,
) -> Any:
    """Declare a scorer parameter: ``name: TYPE = param("what it does", default=..., ge=..., choices=...)``.

    ``default`` omitted: the parameter is required. ``choices``, ``ge``/``gt``/``le``/``lt``: the values allowed
    (bounds apply to numbers). ``signed=False``: left out of :meth:`~scorers.base.Scorer.params` (a bound on
    cost, a number of processes: settings that never change a number). ``expected``: the "must be ..." text of
    the error, when the derived one would not say it well. The value is checked, never converted, and set as the
    instance attribute of the same name: ``__post_init__`` may normalise it.
    """
    return Param(help, default, choices, ge, gt, le, lt, signed, expected)


def seconds(help: str, *, default: float | None) -> Any:
    """A time limit in seconds: :func:`param` for a positive, finite number, or None (no limit); not signed (the
    number below the limit does not depend on it)."""
    return param(
        help, default=default, gt=0, lt=math.inf, signed=False, expected="a positive number of seconds or None"
    )


def declared_params(cls: type, inherited: Mapping[str, Param]) -> dict[str, Param]:
    """``inherited`` followed by the parameters ``cls`` itself declares, in the order written; the class
    attributes become the defaults (a required parameter leaves none)."""
    annotations = vars(cls).get("__annotations__", {})
    declared = dict(inherited)
    for name, spec in list(vars(cls).items()):
        if not isinstance(spec, Param):
            continue
        if name not in annotations:
            raise TypeError(f"{cls.__qualname__}.{name}: a parameter needs a type (name: TYPE = param(...))")
        declared[name] = replace(spec, name=name, annotation=annotations[name], module=cls.__module__)
        if spec.required:
            delattr(cls, name)
        else:
            setattr(cls, name, spec.default)
    return declared


def signature_of(params: Mapping[str, Param], base: inspect.Signature) -> inspect.Signature:
    """The constructor's signature: each parameter keyword-only, then ``base``'s (the base constructor's ``name``)."""
    own = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if p.required else p.default,
            annotation=p.annotation,
        )
        for p in params.values()
    ]
    rest = [p for p in base.parameters.values() if p.kind is p.KEYWORD_ONLY]
    return base.replace(parameters=own + rest)


# ------------------------------------------------------------------ validation
@functools.lru_cache(maxsize=None)
def _evaluated(module: str, annotation: Any) -> Any:
    if not isinstance(annotation, str):
        return annotation
    holder = types.SimpleNamespace(__annotations__={"value": annotation})
    return get_type_hints(holder, globalns=vars(sys.modules[module]))["value"]


@functools.lru_cache(maxsize=None)
def _adapter(module: str, annotation: Any) -> TypeAdapter[Any]:
    """pydantic's strict check of the annotation (loaded on the first value given: ``import scorers`` needs none)."""
    from pydantic import ConfigDict, TypeAdapter

    return TypeAdapter(_evaluated(module, annotation), config=ConfigDict(strict=True, arbitrary_types_allowed=True))


def _members(kind: Any) -> tuple[Any, ...]:
    """The members of a union (``int | None``: int and NoneType); any other type alone."""
    return get_args(kind) if get_origin(kind) in (Union, types.UnionType) else (kind,)


def _within(value: Any, spec: Param) -> bool:
    """Whether a number is within the bounds (a value of another type: always; NaN: never)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    return all(
        (
            spec.ge is None or value >= spec.ge,
            spec.gt is None or value > spec.gt,
            spec.le is None or value <= spec.le,
            spec.lt is None or value < spec.lt,
        )
    )


def _bounds(spec: Param) -> str:
    """The bounds as words: ``" in [0, 1)"``, ``" >= 2"``, or ``""``."""
    low = f"[{_number(spec.ge)}" if spec.ge is not None else f"({_number(spec.gt)}" if spec.gt is not None else None
    high = f"{_number(spec.le)}]" if spec.le is not None else f"{_number(spec.lt)})" if spec.lt is not None else None
    if low and high and "inf" not in high:
        return f" in {low}, {high}"
    if low:
        return f" {'>=' if low[0] == '[' else '>'} {low[1:]}"
    if high and "inf" not in high:
        return f" {'<=' if high[-1] == ']' else '<'} {high[:-1]}"
    return ""


def _number(bound: float | None) -> str:
    return str(int(bound)) if bound is not None and math.isfinite(bound) and bound == int(bound) else str(bound)


def _described(kind: Any, spec: Param) -> str:
    """A type and its bounds in words: ``a positive integer``, ``a number in [0, 1)``, ``True or False``."""
    members = [m for m in _members(kind) if m is not type(None)]
    if members == [Any]:
        return "any value"
    if members == [bool]:
        return "True or False"
    if members == [str]:
        return "a string"
    if members in ([int], [float], [int, float]):
        noun = "integer" if members == [int] else "number"
        unbounded_above = spec.le is None and (spec.lt is None or spec.lt == math.inf)
        if unbounded_above and ((spec.gt == 0 and spec.ge is None) or (noun == "integer" and spec.ge == 1)):
            return f"a positive {noun}"
        if unbounded_above and spec.ge == 0 and spec.gt is None:
            return f"a non-negative {noun}"
        return f"{'an' if noun == 'integer' else 'a'} {noun}{_bounds(spec)}"
    if not members:
        return "None"
    return " or ".join(getattr(m, "__name__", str(m)) for m in members)
