"""Small helpers used across the package instead of ad-hoc idioms.

- :func:`optional_import`: import a package from an extra, or raise :class:`MissingExtraError`.
- :func:`memoize`: a process-wide, thread-safe cache of a function's results (computed once per arguments).
- :class:`lazy`: per-instance state built on first use, thread-safe, and left out when the owner is pickled.
- :func:`did_you_mean`: the closest names to a misspelled one, for an error message.
- :func:`json_error_reason`: why ``json`` refused a text, without the dangling "at" of some of its messages.
- :func:`lookup`: the value at a key or dotted path of a row (``meta.answer``, ``choices.0``), or :data:`ABSENT`.
- :func:`is_int`, :func:`is_number`: an ``int`` (or ``int``/``float``) that is not a ``bool``, for argument checks.
- :func:`spell_out_keywords`: a ``**keywords`` parameter shown in the signature as the keywords it takes.

>>> class Model:
...     @lazy
...     def table(self) -> dict:
...         return {"built": True}
>>> m = Model()
>>> "table" in vars(m), m.table["built"], "table" in vars(m)
(False, True, True)
>>> lazy_names(Model)   # what Scorer.__getstate__ leaves out
frozenset({'table'})
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import inspect
import json
import re
import threading
import types
from types import ModuleType
from typing import Annotated, Any, Callable, Generic, Iterable, Mapping, TypeGuard, TypeVar, Union, get_args, get_origin

import orjson

from .errors import MissingExtraError

__all__ = [
    "optional_import",
    "memoize",
    "lazy",
    "lazy_names",
    "did_you_mean",
    "json_error_reason",
    "ABSENT",
    "lookup",
    "is_int",
    "is_number",
    "spell_out_keywords",
    "annotation_text",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def is_int(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is an ``int`` and not a ``bool`` (``True`` is an ``int`` to Python, not to an argument check).

    >>> is_int(3), is_int(True), is_int(3.0), is_int("3")
    (True, False, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is an ``int`` or a ``float`` and not a ``bool`` (no finiteness check).

    >>> is_number(3), is_number(0.5), is_number(float("nan")), is_number(False), is_number("1")
    (True, True, True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def optional_import(module: str, *, scorer: str, extra: str, package: str | None = None) -> ModuleType:
    """``import module``, or raise :class:`MissingExtraError` naming the scorer and the extra to install.

    >>> optional_import("json", scorer="X", extra="text").__name__
    'json'
    >>> optional_import("no_such_module_xyz", scorer="BLEU", extra="text")
    Traceback (most recent call last):
    ...
    scorers.errors.MissingExtraError: BLEU needs the Python package 'no-such-module-xyz', which is not installed. Install it with: pip install 'scorers[text]' (from a clone of scorers: pip install '.[text]')
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        name = package or module.split(".")[0].replace("_", "-")
        raise MissingExtraError(scorer, name, extra) from exc


def missing_from_extra(extra: str) -> list[str]:
    """The packages of ``scorers[extra]`` that are not installed, read off the installed package's metadata (empty
    where scorers runs from a checkout that was never installed, so nothing can be said).

    >>> missing_from_extra("no-such-extra")
    []
    """
    try:
        requirements = importlib.metadata.requires("scorers") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    missing = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        if re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", marker) is None:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", spec.strip())
        if name is None or name.group() == "scorers":  # an extra made of other extras ("all")
            continue
        try:
            importlib.metadata.version(name.group())
        except importlib.metadata.PackageNotFoundError:
            missing.append(name.group())
    return missing


def memoize(func: F) -> F:
    """Cache ``func``'s result per arguments for the life of the process; each is computed once, under a lock.

    Unlike ``functools.cache``, two threads asking for the same missing key do not both compute it
    (a model load must happen once). Exceptions are not cached.

    >>> calls = []
    >>> @memoize
    ... def square(x: int) -> int:
    ...     calls.append(x)
    ...     return x * x
    >>> square(3), square(3), calls
    (9, 9, [3])
    """
    results: dict[Any, Any] = {}
    locks: dict[Any, threading.Lock] = {}
    guard = threading.Lock()

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        try:
            return results[key]
        except KeyError:
            pass
        with guard:
            lock = locks.setdefault(key, threading.Lock())
        with lock:
            if key not in results:
                results[key] = func(*args, **kwargs)
            return results[key]

    def cached(*args: Any, **kwargs: Any) -> Any:
        """The result for these arguments if it was computed, else None (computes nothing)."""
        return results.get((args, tuple(sorted(kwargs.items()))) if kwargs else args)

    # the two attributes memoize documents, on a function whose declared type (F, the caller's) lacks them
    wrapper.cached = cached  # type: ignore[attr-defined]
    wrapper.cache_clear = results.clear  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]  # F: the wrapper takes and returns what func does


class lazy(Generic[T]):
    """A cached attribute built on first access (thread-safe) and never pickled.

    A non-data descriptor: once built, the value sits in the instance's
    ``__dict__`` and is read at plain attribute speed; ``del obj.attr`` drops it.

    Heavy or process-bound state (models, token caches, clients, locks, template
    environments) goes behind ``@lazy``; :class:`~scorers.base.Scorer` drops it
    when pickled, and the receiving process rebuilds it on first use.
    """

    def __init__(self, build: Callable[[Any], T]) -> None:
        self._build = build
        self._lock = threading.RLock()
        self.name = build.__name__
        self.__doc__ = build.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            pass
        with self._lock:
            if self.name not in obj.__dict__:
                obj.__dict__[self.name] = self._build(obj)
            return obj.__dict__[self.name]


def lazy_names(cls: type) -> frozenset[str]:
    """Names of the :class:`lazy` attributes of ``cls`` and its bases."""
    return frozenset(name for klass in cls.__mro__ for name, value in vars(klass).items() if isinstance(value, lazy))


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` naming the candidates closest to a misspelled ``name``, or ``""``.

    >>> did_you_mean("tokenise", ["tokenize", "lowercase"])
    "; did you mean 'tokenize'?"
    """
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(map(repr, close))}?" if close else ""


def json_error_reason(exc: json.JSONDecodeError) -> str:
    """The reason of a JSON decoding error, to be followed by where it is ("at line 1, column 5").

    Some of ``json``'s messages end in "at" ("Unterminated string starting at"), which a position
    phrase would double:

    >>> try:
    ...     json.loads('["abc')
    ... except json.JSONDecodeError as exc:
    ...     print(f"{json_error_reason(exc)} at column {exc.colno}")
    Unterminated string starting at column 2
    """
    return exc.msg.removesuffix(" at")


#: What :func:`lookup` returns for a path the data does not hold (``None`` is a value).
ABSENT: Any = object()


def lookup(data: Mapping[str, Any], path: str) -> Any:
    """The value at a key or a dotted path (``meta.answer``, ``choices.0``), or :data:`ABSENT`.

    >>> row = {"meta": {"answer": "Paris"}, "choices": ["a", "b"], "a.b": 1}
    >>> lookup(row, "meta.answer"), lookup(row, "choices.1"), lookup(row, "a.b"), lookup(row, "nope") is ABSENT
    ('Paris', 'b', 1, True)
    """
    if path in data:
        return data[path]
    value: Any = data
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, (list, tuple)) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return ABSENT
    return value


def spell_out_keywords(
    function: Callable[..., Any], annotations: Mapping[str, Any], defaults: Mapping[str, Any]
) -> None:
    """Have ``inspect.signature(function)`` (``help()``, IDEs) list the keywords that ``function``'s last parameter,
    a ``**keywords``, takes: one keyword-only parameter per entry of ``annotations`` (its type, shown as text),
    defaulting to ``defaults[name]`` (``None`` when not there). A model's fields declare them once.

    >>> def build(name: str, **options: Any) -> None: ...
    >>> spell_out_keywords(build, {"size": Annotated[int, "at least 1"], "mode": str | None}, {"size": 3})
    >>> inspect.signature(build)
    <Signature (name: 'str', *, size: 'int' = 3, mode: 'str | None' = None) -> 'None'>
    """
    signature = inspect.signature(function)
    keywords = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=defaults.get(name), annotation=annotation_text(annotation)
        )
        for name, annotation in annotations.items()
    ]
    # inspect.signature reads __signature__, which a function's declared type does not list
    function.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*list(signature.parameters.values())[:-1], *keywords]
    )


def annotation_text(annotation: Any) -> str:
    """``annotation`` as text, without its ``Annotated`` constraints (a model checks them), for a signature."""
    if get_origin(annotation) is Annotated:
        return annotation_text(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return " | ".join(annotation_text(arg) for arg in get_args(annotation))
    if annotation is type(None):
        return "None"
    return annotation.__name__ if isinstance(annotation, type) else str(annotation).replace("typing.", "")


def json_loads(text: str | bytes) -> Any:
    """What ``json.loads(text)`` returns, read by orjson where it can (several times faster), else by json itself
    (NaN, integers beyond 64 bits, lone surrogates: what orjson refuses), whose error a malformed text raises.

    >>> json_loads('{"a": [1, 2.5, "x"]}'), json_loads("NaN") != json_loads("NaN")
    ({'a': [1, 2.5, 'x']}, True)
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


@memoize
def import_rapidfuzz() -> ModuleType:
    """rapidfuzz with its ``distance`` and ``process`` modules, imported once under a lock, on first use (so a broken
    rapidfuzz fails its scorers' rows, not ``import scorers``): two threads importing ``rapidfuzz.distance`` at once
    can get it half initialised, since its modules import each other.

    >>> import_rapidfuzz().distance.Levenshtein.normalized_similarity("kitten", "sitting")
    0.5714285714285714
    """
    import rapidfuzz.distance
    import rapidfuzz.process

    return rapidfuzz
