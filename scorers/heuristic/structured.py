"""Heuristic scorers of structured values: JSON similarity, JSON validity (and schemas), list matching."""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Callable, Sequence

from .._util import import_rapidfuzz, json_error_reason, lazy
from ..base import Scorer
from ..errors import ConfigError, ScorerInputError
from ..fields import Field, to_text
from ..params import param
from ..registry import register
from ..score import Score
from ._json import JSON_TYPES, MAX_JSON_DEPTH, _canonical_json, _check_depth, _loads, _maybe_parse_json, _too_deep
from .text import Levenshtein, NumericDiff

__all__ = ["JSONDiff", "ValidJSON", "ListContains"]


#: What a scorer-valued parameter (JSONDiff's, ListContains') must be.
_A_SCORER = "a Scorer or a registered name, or None"


@register
class JSONDiff(Scorer):
    """Recursive similarity of two JSON values.

    Objects: mean over the union of keys (a missing key scores 0; ``{}`` vs
    ``{}`` is 1). Arrays: sum over aligned positions divided by the longer
    length. Strings: ``string_scorer`` (Levenshtein); numbers: ``number_scorer``
    (NumericDiff); ``null`` vs ``null`` is 1, ``null`` vs anything else 0; other
    type mixes compare their canonical JSON text (sorted keys, compact, non-ASCII
    ``\\u``-escaped as autoevals writes it) with ``string_scorer``. Strings
    holding a JSON object/array are parsed unless ``preserve_strings``.
    Equals autoevals' ``JSONDiff``; unlike autoevals, the constructor options
    are honoured and can name registered scorers (``string_scorer="ExactMatch"``).

    The cost of the string comparisons grows with the product of the two sides'
    sizes, so a side longer than ``max_chars`` as compact, ASCII-escaped JSON text
    (100,000 characters by default) is a row's :class:`~scorers.errors.ScorerInputError`;
    ``max_chars=None`` lifts the limit. Arrays and objects may nest at most
    :data:`MAX_JSON_DEPTH` levels (strings holding JSON included).
    """

    name = "JSONDiff"
    description = "recursive JSON similarity: key-union average, strings by Levenshtein, numbers by NumericDiff"
    fields = (Field("output", JSON_TYPES, nullable=True), Field("expected", JSON_TYPES, nullable=True))
    example = 'JSONDiff()(output={"a": 1, "b": "x"}, expected={"a": 1, "b": "y"})  # 0.5'
    #: 2: mixed-type values with non-ASCII text are compared as \u-escaped JSON (as autoevals), not raw UTF-8
    algorithm_version = "2"

    string_scorer: Scorer | str | None = param(
        "compares two strings: a Scorer or a registered name (None: Levenshtein)",
        default=None,
        expected=_A_SCORER,
    )
    number_scorer: Scorer | str | None = param(
        "compares two numbers: a Scorer or a registered name (None: NumericDiff)", default=None, expected=_A_SCORER
    )
    preserve_strings: bool = param("compare strings holding JSON as strings, not parsed", default=False)
    max_chars: int | None = param(
        "longest side, as compact ASCII-escaped JSON text (the cost grows with the product of the sides' sizes); "
        "None: no limit",
        default=100_000,
        ge=1,
        signed=False,
    )

    def __post_init__(self) -> None:
        # no limit of its own: max_chars bounds the strings it compares here
        self._strings = _resolve_scorer(
            self.string_scorer, partial(Levenshtein, max_chars=None), "string_scorer", self.name
        )
        self._numbers = _resolve_scorer(self.number_scorer, NumericDiff, "number_scorer", self.name)
        self.string_scorer, self.number_scorer = self._strings, self._numbers  # as resolved

    def params(self) -> dict[str, Any]:
        return {
            **super().params(),
            "string_scorer": self._strings.signature(),
            "number_scorer": self._numbers.signature(),
        }

    def _similarity(self, o: Any, e: Any, depth: int = 0) -> float:
        if not self.preserve_strings:
            o, e = _maybe_parse_json(o), _maybe_parse_json(e)
        if o is None or e is None:
            return 1.0 if o is e else 0.0
        if (isinstance(o, dict) and isinstance(e, dict)) or (isinstance(o, list) and isinstance(e, list)):
            return self._container_similarity(o, e, depth)
        if isinstance(o, str) and isinstance(e, str):
            return _inner_score(self._strings, o, e)
        if _is_number(o) and _is_number(e):  # bools count as 0/1, as in autoevals
            return _inner_score(self._numbers, _unbool(o), _unbool(e))
        # as autoevals: non-ASCII characters are \u-escaped, so "é" counts as the six characters \u00e9
        return _inner_score(
            self._strings,
            _canonical_json(o, sort_keys=True, ensure_ascii=True),
            _canonical_json(e, sort_keys=True, ensure_ascii=True),
        )

    def _container_similarity(self, o: dict[str, Any] | list[Any], e: dict[str, Any] | list[Any], depth: int) -> float:
        """Two objects: the mean over the union of keys; two arrays: the sum over aligned positions divided by the
        longer length (both empty: 1)."""
        if depth == MAX_JSON_DEPTH:  # strings holding JSON can nest it further
            raise _too_deep()
        if isinstance(o, dict) and isinstance(e, dict):
            keys = list(dict.fromkeys([*o, *e]))  # in the values' order: sums and errors never depend on hashing
            pairs: Any = ((o.get(k), e.get(k)) for k in keys)
            count = len(keys)
        else:
            pairs, count = zip(o, e), max(len(o), len(e))
        if count == 0:
            return 1.0
        return sum(self._similarity(a, b, depth + 1) for a, b in pairs) / count

    def _checked(self, field: str, value: Any) -> Any:
        """The value (parsed, unless ``preserve_strings``); one nested too deep, or longer than ``max_chars``
        as compact ASCII-escaped JSON text, is a ScorerInputError."""
        try:
            value = _check_depth(value if self.preserve_strings else _maybe_parse_json(value))
            size = (
                0
                if self.max_chars is None
                else len(json.dumps(value, ensure_ascii=True, separators=(",", ":"), skipkeys=True, default=repr))
            )
        except ValueError as exc:
            raise ScorerInputError(self.name, field, str(exc)) from exc
        if self.max_chars is not None and size > self.max_chars:
            raise self.too_long(field, f"{size:,} characters as JSON text")
        return value

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: Any, expected: Any, **_: Any) -> Score:  # type: ignore[override]
        output, expected = self._checked("output", output), self._checked("expected", expected)
        try:
            return self.make_score(self._similarity(output, expected))
        except ScorerInputError as exc:
            raise ScorerInputError(self.name, exc.field, f"holds a value the inner scorer rejected: {exc}") from exc
        except ValueError as exc:
            raise ScorerInputError(self.name, "output", str(exc)) from exc


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))


def _unbool(value: int | float) -> int | float:
    return int(value) if isinstance(value, bool) else value


def _inner_score(scorer: Scorer, output: Any, expected: Any) -> float:
    score = scorer(output=output, expected=expected).score
    return 0.0 if score is None else score


def _resolve_scorer(value: Scorer | str | type | None, default: Callable[[], Scorer], param: str, owner: str) -> Scorer:
    if value is None:
        return default()
    if isinstance(value, Scorer):
        return value
    if isinstance(value, type) and issubclass(value, Scorer):
        return value()
    if isinstance(value, str):
        from ..registry import get

        return get(value)
    raise ConfigError(
        f"{owner}: {param} must be a Scorer, a Scorer class or a registered name, got {value!r}", scorer=owner
    )


@register
class ValidJSON(Scorer):
    """1 if output is JSON (an object or array), or validates against ``schema``.

    ``output`` may be a JSON string or an already-parsed value. Without a
    schema, scalars (``"100"``) score 0, as in autoevals. With a schema
    (constructor or call-time ``schema=``) any JSON value is checked with
    jsonschema; the first validation error is in ``metadata["error"]``.
    Unlike autoevals, the constructor's ``schema`` is honoured.
    """

    name = "ValidJSON"
    description = "1 if output parses as a JSON object/array, or validates against a JSON schema"
    fields = (Field("output", JSON_TYPES), Field("schema", (dict, bool), required=False))
    example = 'ValidJSON(schema={"type": "object", "required": ["a"]})(output=\'{"a": 1}\')  # 1.0'

    schema: dict[str, Any] | bool | None = param(
        "the JSON schema output must validate against (None: any JSON object or array; a row's schema= wins)",
        default=None,
    )

    def __post_init__(self) -> None:
        if self.schema is not None:
            self._validator(self.schema, None)

    def _validator(self, schema: dict[str, Any] | bool, field: str | None) -> Any:
        """A validator for ``schema``. A bad schema is a ConfigError when it is the constructor's
        (``field`` None), a ScorerInputError naming ``field`` when a row gave it."""
        import jsonschema

        try:
            _check_depth(schema)
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)  # type: ignore[arg-type]  # true/false are schemas too; the stubs say dict
            unresolved = _unresolvable_reference(schema)
        except jsonschema.SchemaError as exc:
            reason = exc.message
        except ValueError as exc:
            reason = f"it {exc}"
        else:
            if unresolved is None:
                return cls(schema)
            reason = f"its $ref {unresolved!r} points to nothing in the schema (nothing is fetched: put it under $defs)"
        if field is None:
            raise ConfigError(f"{self.name}: invalid JSON schema: {reason}", scorer=self.name)
        raise ScorerInputError(self.name, field, f"is an invalid JSON schema: {reason}")

    # autoevals' signature (schema second), not the base eval's (expected second)
    def eval(self, output: Any, schema: Any = None, **kwargs: Any) -> Score:  # type: ignore[override]
        """autoevals' form: the schema is the second positional argument."""
        return self(output=output, schema=schema, **kwargs)

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: Any, schema: Any = None, **_: Any) -> Score:  # type: ignore[override]
        validator = self._validator(schema, "schema") if schema is not None else self._validator_of_constructor
        value = output
        try:
            value = _check_depth(_loads(output) if isinstance(output, str) else output)
        except json.JSONDecodeError as exc:
            where = f"at line {exc.lineno}, column {exc.colno}"
            return self.make_score(0.0, error=f"not JSON: {json_error_reason(exc)} {where}")
        except ValueError as exc:
            raise ScorerInputError(self.name, "output", str(exc)) from exc
        if validator is None:
            ok = isinstance(value, (dict, list))
            problem: dict[str, Any] = {} if ok else {"error": "not a JSON object or array"}
            return self.make_score(1.0 if ok else 0.0, **problem)
        extra = {} if schema is None else {"schema": schema}
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            return self.make_score(0.0, error=errors[0].message, **extra)
        return self.make_score(1.0, **extra)

    @lazy
    def _validator_of_constructor(self) -> Any:
        return None if self.schema is None else self._validator(self.schema, None)


#: Keywords whose values are data, not subschemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _unresolvable_reference(schema: dict[str, Any] | bool) -> str | None:
    """The first ``$ref`` of ``schema`` that resolves to nothing, fetching nothing; None when all resolve.

    Needs the ``referencing`` package (jsonschema >= 4.18); without it nothing is checked.
    """
    try:
        from referencing import Registry
        from referencing.exceptions import Unresolvable
        from referencing.jsonschema import DRAFT202012, specification_with
    except ImportError:
        return None
    if not isinstance(schema, dict):
        return None
    dialect = schema.get("$schema")
    specification = specification_with(dialect if isinstance(dialect, str) else "", default=DRAFT202012)
    stack: list[tuple[Any, Any]] = [(schema, Registry().resolver_with_root(specification.create_resource(schema)))]
    while stack:
        node, resolver = stack.pop()
        if isinstance(node, list):
            stack.extend((item, resolver) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        if node is not schema and specification.id_of(node):  # a subschema with its own base URI
            resolver = resolver.in_subresource(specification.create_resource(node))
        reference = node.get("$ref")
        if isinstance(reference, str):
            try:
                resolver.lookup(reference)
            except Unresolvable:
                return reference
        stack.extend((value, resolver) for key, value in node.items() if key not in _DATA_KEYWORDS)
    return None


@register
class ListContains(Scorer):
    """How well two lists match, element by element, under the best pairing.

    Each output element is paired with at most one expected element so as to
    maximise the summed ``pairwise_scorer`` similarity (optimal assignment);
    the score is that sum divided by the longer list's length, or by
    ``len(expected)`` when ``allow_extra_entities``. Both lists empty → 1; one
    empty → 0. Equals autoevals' ``ListContains``; the matched pairs are in
    ``metadata["pairs"]``.

    Every output element is compared with every expected one, so the cost grows
    with the product of the lists' lengths, and of their texts' lengths: a list
    of more than ``max_items`` elements (1,000 by default: well under a second
    with the default pairwise scorer, up to a million calls of another one), or
    whose elements hold more than ``max_chars`` characters together (100,000 by
    default; numbers count their digits, nested values their text), is a row's
    :class:`~scorers.errors.ScorerInputError`; ``None`` lifts either limit.
    """

    name = "ListContains"
    description = "optimal-assignment similarity of two lists (pairwise Levenshtein by default)"
    fields = (Field("output", (list, tuple)), Field("expected", (list, tuple)))
    example = 'ListContains()(output=["a", "b"], expected=["b", "a"])  # 1.0'

    pairwise_scorer: Scorer | str | type | None = param(
        "compares an output element with an expected one: a Scorer, its class or a registered name (None: Levenshtein)",
        default=None,
        expected="a Scorer, a Scorer class or a registered name, or None",
    )
    allow_extra_entities: bool = param("divide by len(expected), not the longer list's length", default=False)
    max_items: int | None = param(
        "most elements a list may have (every pair is compared); None: no limit", default=1_000, ge=1, signed=False
    )
    max_chars: int | None = param(
        "most characters a list's elements may hold together; None: no limit", default=100_000, ge=1, signed=False
    )

    def __post_init__(self) -> None:
        # no limit of its own: max_chars bounds all the text of a list here
        self._pairwise = _resolve_scorer(
            self.pairwise_scorer, partial(Levenshtein, max_chars=None), "pairwise_scorer", self.name
        )
        self.pairwise_scorer = self._pairwise  # as resolved

    def params(self) -> dict[str, Any]:
        return {**super().params(), "pairwise_scorer": self._pairwise.signature()}

    def _texts(self, field: str, items: Sequence[Any]) -> list[str]:
        """The elements as Levenshtein reads them; one it cannot read, or longer than its own ``max_chars``,
        is a ScorerInputError naming the field and the element."""
        pairwise = self._pairwise
        texts = []
        for at, item in enumerate(items):
            try:
                text = to_text(item)
            except (TypeError, ValueError) as exc:
                raise ScorerInputError(
                    self.name, field, f"has an element Levenshtein cannot compare (element {at}): {exc}"
                ) from exc
            if pairwise.max_chars is not None and len(text) > pairwise.max_chars:
                raise ScorerInputError(
                    self.name,
                    field,
                    f"has an element of {len(text):,} characters (element {at}), "
                    f"more than its pairwise scorer's max_chars={pairwise.max_chars:,}",
                )
            texts.append(text)
        return texts

    def _matrix(self, output: Sequence[Any], expected: Sequence[Any]) -> Any:
        import numpy as np

        if type(self._pairwise) is Levenshtein and self._pairwise.normalize is None:
            outs, exps = self._texts("output", output), self._texts("expected", expected)
            rapidfuzz = import_rapidfuzz()
            return rapidfuzz.process.cdist(
                outs, exps, scorer=rapidfuzz.distance.Levenshtein.normalized_similarity, dtype=np.float64
            )
        matrix = np.zeros((len(output), len(expected)))
        for i, o in enumerate(output):
            for j, e in enumerate(expected):
                try:
                    matrix[i, j] = _inner_score(self._pairwise, o, e)
                except ScorerInputError as exc:
                    field, at = ("expected", j) if exc.field == "expected" else ("output", i)
                    raise ScorerInputError(
                        self.name, field, f"has an element its pairwise scorer rejected (element {at}): {exc}"
                    ) from exc
        return matrix

    def _check_size(self, field: str, items: Sequence[Any]) -> None:
        """Refuse a list of more than ``max_items`` elements, or holding more than ``max_chars`` characters."""
        if self.max_items is not None and len(items) > self.max_items:
            raise ScorerInputError(
                self.name,
                field,
                f"has {len(items):,} elements, more than max_items={self.max_items:,} (a bound on "
                f"time and memory: every pair of elements is compared): raise it if the cost is acceptable, with "
                f"scorers.get({self.name!r}, max_items=...) or -p {self.name}.max_items=... (null: no limit)",
            )
        if self.max_chars is not None:
            size = sum(map(len, items)) if all(type(item) is str for item in items) else _text_size(items) - 2
            if size > self.max_chars:
                raise self.too_long(field, f"{size:,} characters in its elements together")

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: Sequence[Any], expected: Sequence[Any], **_: Any) -> Score:  # type: ignore[override]
        self._check_size("output", output)
        self._check_size("expected", expected)
        if not output and not expected:
            return self.make_score(1.0, pairs=[])
        if not output or not expected:
            return self.make_score(0.0, pairs=[])
        from scipy.optimize import linear_sum_assignment

        matrix = self._matrix(output, expected)
        rows, cols = linear_sum_assignment(matrix, maximize=True)
        pairs = [(output[i], expected[j], float(matrix[i, j])) for i, j in zip(rows, cols)]
        total = float(sum(p[2] for p in pairs))
        denominator = len(expected) if self.allow_extra_entities else max(len(output), len(expected))
        return self.make_score(min(max(total / denominator, 0.0), 1.0), pairs=pairs)


def _text_size(value: Any) -> int:
    """The characters of text ``value`` holds: strings, numbers as written (about their digits), through nested
    lists and mappings (keys too), counted without recursion; a list or mapping held twice (or in itself) counts once."""
    size = 0
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item)
        elif isinstance(item, bool) or item is None:
            size += 4
        elif isinstance(item, int):
            size += int(item.bit_length() * 0.30103) + 2  # not written out: it may have millions of digits
        elif isinstance(item, float):
            size += len(repr(item))
        elif isinstance(item, (dict, list, tuple)):
            if id(item) not in seen:
                seen.add(id(item))
                if isinstance(item, dict):
                    stack.extend(item.keys())
                    stack.extend(item.values())
                else:
                    stack.extend(item)
                size += 2
        else:
            size += len(item) if isinstance(item, (bytes, bytearray)) else 1
    return size
