"""Heuristic scorers: exact match, edit distance, numbers, JSON, lists, substrings, regexes.

Their numbers equal Braintrust autoevals' scorers of the same name on the same
inputs, except where autoevals is buggy; each such difference is stated in the
scorer's docstring.

>>> from scorers.heuristic import Levenshtein, NumericDiff
>>> Levenshtein()(output="kitten", expected="sitting").score
0.5714285714285714
>>> NumericDiff()(output=9, expected=10).score
0.9473684210526316
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache, partial
from typing import Any, Callable, Literal, Sequence, cast, get_args

from ._util import import_rapidfuzz, json_error_reason, lazy
from .base import Scorer
from .errors import ConfigError, ScorerError, ScorerInputError
from .fields import Field, as_str, require, text_field, to_text
from .params import param, seconds
from .registry import register
from .score import Score

__all__ = [
    "ExactMatch",
    "Levenshtein",
    "NumericDiff",
    "JSONDiff",
    "ValidJSON",
    "ListContains",
    "Contains",
    "RegexMatch",
]

JSON_TYPES = (dict, list, str, int, float, bool)

#: Deepest nesting of arrays and objects the JSON-aware scorers take: a deeper value is a ScorerInputError.
#: (Python's JSON parser and encoder stop near 1,000 levels, at a depth that depends on the caller's stack.)
MAX_JSON_DEPTH = 100


def _nesting_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar: 0), counted without recursion up to ``limit + 1``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:  # also ends a walk around a cycle
            break
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return deepest


def _too_deep() -> ValueError:
    return ValueError(f"nests arrays or objects more than {MAX_JSON_DEPTH} levels deep, which is not supported")


def _check_depth(value: Any) -> Any:
    """``value``, or ValueError when it nests deeper than :data:`MAX_JSON_DEPTH`."""
    if isinstance(value, (dict, list, tuple)) and _nesting_depth(value) > MAX_JSON_DEPTH:
        raise _too_deep()
    return value


def _loads(text: str) -> Any:
    """``json.loads``; nesting deeper than :data:`MAX_JSON_DEPTH` is a ValueError (not a JSONDecodeError)."""
    try:
        return _check_depth(json.loads(text))
    except RecursionError:  # raised cleanly by the C parser, far deeper than the limit
        raise _too_deep() from None


def _canonical_json(value: Any, *, sort_keys: bool, ensure_ascii: bool = False) -> str:
    try:
        return json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"is not JSON-serialisable: {exc}") from exc


@register
class ExactMatch(Scorer):
    """1 if output equals expected, else 0.

    Strings are compared as they are. When either side is a JSON object or array,
    both sides are compared as JSON text (a string side is parsed first), so
    ``'{"a": 1}'`` equals ``{"a": 1}``; key order matters, as in autoevals.
    Differences from autoevals: ``None`` is rejected (autoevals scores
    ``None`` vs ``"None"`` as equal); ``ignore_case``/``strip`` options.
    """

    name = "ExactMatch"
    description = "1 if output equals expected (JSON-aware), else 0"
    fields = (Field("output", JSON_TYPES), Field("expected", JSON_TYPES))
    example = 'ExactMatch()(output="Paris", expected="Paris")  # 1.0'

    ignore_case: bool = param("compare the texts casefolded", default=False)
    strip: bool = param("strip whitespace from both ends of the texts first", default=False)

    def _normalise(self, value: Any, as_json: bool, field: str) -> str:
        try:
            if as_json:
                text = _canonical_json(_check_depth(_maybe_parse_json(value)), sort_keys=False)
            else:
                text = as_str(value)
        except ValueError as exc:
            raise ScorerInputError(self.name, field, str(exc)) from exc
        if self.strip:
            text = text.strip()
        if self.ignore_case:
            text = text.casefold()
        return text

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: Any, expected: Any, **_: Any) -> Score:  # type: ignore[override]
        as_json = isinstance(output, (dict, list)) or isinstance(expected, (dict, list))
        same = self._normalise(output, as_json, "output") == self._normalise(expected, as_json, "expected")
        return self.make_score(1.0 if same else 0.0)

    def _score_columns(self, columns: dict[str, list[Any]]) -> list[Score | ScorerError]:
        outputs, expecteds = columns["output"], columns["expected"]  # strings: the fast path takes nothing else
        if self.strip or self.ignore_case:
            outputs = [self._normalise(text, False, "output") for text in outputs]
            expecteds = [self._normalise(text, False, "expected") for text in expecteds]
        same = [1.0 if output == expected else 0.0 for output, expected in zip(outputs, expecteds)]
        # a list of Scores is a list of outcomes (the cast skips a copy that only satisfies list invariance)
        return cast("list[Score | ScorerError]", Score.trusted_many(self.name, same, {"signature": self.signature()}))


#: The Unicode normal forms Levenshtein's ``normalize`` takes.
_NormalForm = Literal["NFC", "NFD", "NFKC", "NFKD"]
_NORMAL_FORMS: tuple[_NormalForm, ...] = get_args(_NormalForm)


@register
class Levenshtein(Scorer):
    """Normalised Levenshtein similarity, ``1 - distance / max(len)``, on code points.

    Equals autoevals' ``Levenshtein`` (two empty strings score 1). Text is not
    Unicode-normalised: NFC and NFD forms of "café" differ; pass
    ``normalize="NFC"`` to compare normalised forms. Batches use rapidfuzz's
    ``cpdist``. The cost grows with the product of the lengths, so a text longer
    than ``max_chars`` (100,000 characters by default: about 0.3 s) is a row's
    :class:`~scorers.errors.ScorerInputError`; ``max_chars=None`` lifts the limit.
    """

    name = "Levenshtein"
    description = "normalised edit-distance similarity 1 - d/max(len) (rapidfuzz)"
    fields = (text_field("output"), text_field("expected"))
    example = 'Levenshtein()(output="kitten", expected="sitting")  # 0.5714'

    normalize: str | None = param(
        "the Unicode normal form both texts are put in first (None: compared as given)",
        default=None,
        choices=_NORMAL_FORMS,
    )
    max_chars: int | None = param(
        "longest text a row may hold (the cost grows with the product of the lengths); None: no limit",
        default=100_000,
        ge=1,
        signed=False,
    )

    def params(self) -> dict[str, Any]:
        return {**super().params(), "rapidfuzz": import_rapidfuzz().__version__}

    def _prepare(self, text: str) -> str:
        if self.normalize is None:
            return text
        import unicodedata

        return unicodedata.normalize(cast(_NormalForm, self.normalize), text)  # one of them: checked in __init__

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: str, expected: str, **_: Any) -> Score:  # type: ignore[override]
        return self.make_score(
            import_rapidfuzz().distance.Levenshtein.normalized_similarity(
                self._prepare(output), self._prepare(expected)
            )
        )

    def _similarities(self, outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        import numpy as np

        if self.normalize is not None:
            outputs = [self._prepare(o) for o in outputs]
            expecteds = [self._prepare(e) for e in expecteds]
        rapidfuzz = import_rapidfuzz()
        sims = rapidfuzz.process.cpdist(
            outputs,
            expecteds,
            scorer=rapidfuzz.distance.Levenshtein.normalized_similarity,
            dtype=np.float64,
            workers=-1 if len(outputs) >= 4_000 else 1,
        )
        return sims.tolist()

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        return self._score_columns({"output": [r["output"] for r in rows], "expected": [r["expected"] for r in rows]})

    def _score_columns(self, columns: dict[str, list[Any]]) -> list[Score | ScorerError]:
        similarities = self._similarities(columns["output"], columns["expected"])
        # a list of Scores is a list of outcomes (the cast skips a copy that only satisfies list invariance)
        return cast(
            "list[Score | ScorerError]", Score.trusted_many(self.name, similarities, {"signature": self.signature()})
        )


def _to_number(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError("must be a number, got bool")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"must be a number, got the string {value[:40]!r}") from None
    try:
        number = float(value)
    except OverflowError:
        raise ValueError("is an integer beyond a float's range (about ±1.8e308), which is not supported") from None
    if not math.isfinite(number):
        raise ValueError(f"must be a finite number, got {number!r}")
    return number


def numeric_similarity(output: float, expected: float) -> float:
    """``1 - |e - o| / (|e| + |o|)``, 1 when both are 0; exact for huge magnitudes too."""
    scale = max(abs(output), abs(expected))
    if scale == 0:
        return 1.0
    o, e = output / scale, expected / scale
    return 1.0 - abs(e - o) / (abs(e) + abs(o))


@register
class NumericDiff(Scorer):
    """Relative closeness of two numbers: ``1 - |e - o| / (|e| + |o|)`` (both 0 → 1).

    Equals autoevals' ``NumericDiff``. Numeric strings such as ``"3.5"`` are
    accepted (LLM outputs are text); non-finite numbers are rejected.
    """

    name = "NumericDiff"
    description = "relative closeness of two numbers, 1 - |e-o|/(|e|+|o|)"
    fields = (
        Field("output", (int, float, str), convert=_to_number),
        Field("expected", (int, float, str), convert=_to_number),
    )
    example = "NumericDiff()(output=9, expected=10)  # 0.947"

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: float, expected: float, **_: Any) -> Score:  # type: ignore[override]
        return self.make_score(numeric_similarity(output, expected))


def _maybe_parse_json(value: Any) -> Any:
    """The object or array a string holds as JSON, else the value itself; too deep a one is a ValueError."""
    if isinstance(value, str):
        try:
            parsed = _loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(parsed, (dict, list)):
            return parsed
    return value


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
        if o is None and e is None:
            return 1.0
        if o is None or e is None:
            return 0.0
        both_dicts = isinstance(o, dict) and isinstance(e, dict)
        both_lists = isinstance(o, list) and isinstance(e, list)
        if (both_dicts or both_lists) and depth == MAX_JSON_DEPTH:  # strings holding JSON can nest it further
            raise _too_deep()
        if both_dicts:
            keys = list(dict.fromkeys([*o, *e]))  # in the values' order: sums and errors never depend on hashing
            if not keys:
                return 1.0
            return sum(self._similarity(o.get(k), e.get(k), depth + 1) for k in keys) / len(keys)
        if both_lists:
            longest = max(len(o), len(e))
            if longest == 0:
                return 1.0
            return sum(self._similarity(a, b, depth + 1) for a, b in zip(o, e)) / longest
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
        from .registry import get

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


@register
class Contains(Scorer):
    """1 if ``expected`` occurs in ``output`` as a substring.

    ``expected`` may be a list: ``mode="any"`` (default) needs one of them,
    ``mode="all"`` needs every one (the score is then the fraction found).
    """

    name = "Contains"
    description = "1 if expected (or any/all of a list) occurs in output"
    fields = (text_field("output"), Field("expected", (str, list, tuple)))
    example = 'Contains()(output="The capital is Paris.", expected="Paris")  # 1.0'

    ignore_case: bool = param("compare casefolded", default=False)
    mode: str = param(
        "'any': one of the expected strings must occur; 'all': the share of them that do",
        default="any",
        choices=("any", "all"),
    )

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: str, expected: Any, **_: Any) -> Score:  # type: ignore[override]
        needles = [expected] if isinstance(expected, str) else list(expected)
        require(all(isinstance(n, str) for n in needles), self.name, "expected", "must hold only strings")
        require(len(needles) > 0, self.name, "expected", "must not be an empty list")
        fold: Callable[[str], str] = (lambda s: s.casefold()) if self.ignore_case else (lambda s: s)
        haystack = fold(output)
        found = [n for n in needles if fold(n) in haystack]
        if self.mode == "any":
            return self.make_score(1.0 if found else 0.0, found=found)
        return self.make_score(len(found) / len(needles), found=found, missing=[n for n in needles if n not in found])


#: CPU seconds one match may take by default (``RegexMatch(timeout_s=...)``): a pattern that backtracks
#: catastrophically, such as ``(a|a)+$`` on a long run of ``a``, takes time exponential in the text's length.
REGEX_TIMEOUT_S = 1.0
#: The longest pattern :class:`RegexMatch` compiles: compiling takes time that grows faster than its length
#: (100,000 characters of ``a|a|…``: about 1 s).
MAX_PATTERN_CHARS = 10_000
#: The most items (characters, classes, groups, repeats) a pattern may have once each counted repetition is
#: written out its minimum number of times, as the matching engine compiles it (``(?:ab){3,5}`` counts 1 + 3 x 2):
#: ``(?:a{1000}){1000}`` would take 300 MB and 1 s to compile; this many, under 50 MB.
MAX_PATTERN_ITEMS = 100_000
#: The most literal characters in a row a pattern may hold: the regex engine builds its search tables for the
#: string they form, on the first match, in time that grows with the cube of its length and that ``timeout_s`` does
#: not count (2,000 ``a``: 2.5 s; 9,999: 325 s; this many: at most 0.4 s).
MAX_LITERAL_CHARS = 1_000
#: Compiled patterns at most this size are kept (by the engine's cache) for the next row.
_CACHED_PATTERN_ITEMS = 1_000


def _regex_module() -> Any:
    try:
        import regex
    except ImportError:
        raise ConfigError(
            "RegexMatch needs the Python package 'regex' (a dependency of scorers), which is not "
            "installed. Install it with: pip install 'regex>=2022.10.31'",
            scorer="RegexMatch",
        ) from None
    return regex


def _sre_parse() -> Any:
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]  # 3.11+; typeshed leaves it out
    except ImportError:  # Python 3.10
        import sre_parse
    return sre_parse


@lru_cache(maxsize=1024)
def _pattern_shape(pattern: str, flags: int) -> tuple[int, int]:
    """``(items, longest literal)`` of ``pattern`` (valid for :mod:`re`), read from :mod:`re`'s parse of it.

    ``items``: how many items it has once each counted repetition is written out its minimum number of times (at
    most :data:`MAX_PATTERN_ITEMS` + 1). ``longest literal``: the most characters in a row that the engine may join
    into one string to search for (literals, one-character classes and escapes, through non-capturing groups)."""
    sre_parse = _sre_parse()
    repeats = {getattr(sre_parse, name, None) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")} - {None}
    parsed = sre_parse.parse(pattern, flags)
    limit = MAX_PATTERN_ITEMS + 1
    total = 0
    stack: list[tuple[Any, int]] = [(parsed, 1)]
    while stack and total < limit:
        node, times = stack.pop()
        if isinstance(node, sre_parse.SubPattern):
            for op, av in node.data:
                total += times
                if op in repeats:  # (min, max, the item repeated)
                    stack.append((av[2], min(times * max(av[0], 1), limit)))
                elif isinstance(av, (tuple, list)):
                    stack.append((av, times))
        elif isinstance(node, (tuple, list)):  # a group's, branch's or condition's arguments: find the patterns
            stack.extend((child, times) for child in node if isinstance(child, (sre_parse.SubPattern, tuple, list)))
    return min(total, limit), _longest_literal(sre_parse, parsed)


def _longest_literal(sre_parse: Any, parsed: Any) -> int:
    """The longest run of one-character items in ``parsed``, read through non-capturing groups."""
    longest = 0
    sequences = [parsed]
    while sequences:
        run = 0
        walk = [iter(sequences.pop().data)]  # a sequence, and the non-capturing groups in it being read through
        while walk:
            item = next(walk[-1], None)
            if item is None:
                walk.pop()
                continue
            op, av = item
            if op is sre_parse.LITERAL or (op is sre_parse.IN and len(av) == 1 and av[0][0] is sre_parse.LITERAL):
                run += 1
                longest = max(longest, run)
            elif op is sre_parse.SUBPATTERN and av[0] is None:  # (?:...) and (?i:...): the engine joins through
                walk.append(iter(av[-1].data))
            else:  # a group, branch, repeat or condition: ends the run; its sequences have runs of their own
                run = 0
                found = [av] if isinstance(av, (tuple, list, sre_parse.SubPattern)) else []
                while found:
                    node = found.pop()
                    if isinstance(node, sre_parse.SubPattern):
                        sequences.append(node)
                    elif isinstance(node, (tuple, list)):
                        found.extend(node)
    return longest


@register
class RegexMatch(Scorer):
    r"""1 if ``output`` matches a regular expression.

    The pattern is the constructor's ``pattern`` or, when absent, ``expected``.
    ``full=True`` requires the whole output to match (``fullmatch``),
    otherwise a match anywhere counts (``search``).

    Patterns are Python's :mod:`re` syntax (``re`` checks them, with its error
    messages), matched by the `regex <https://pypi.org/project/regex/>`_ package
    (its ``VERSION0``, re-compatible), which can stop a match: one that takes more
    than ``timeout_s`` seconds of CPU time (1 by default; the engine counts the
    process's CPU time, all threads) is that row's
    :class:`~scorers.errors.ScorerInputError` (a pattern given with the row: field
    ``expected``; the constructor's: field ``output``); ``timeout_s=None`` lifts
    the limit. Below it the number does not depend on ``timeout_s``. A pattern
    longer than :data:`MAX_PATTERN_CHARS`, that holds more than
    :data:`MAX_PATTERN_ITEMS` items once its counted repetitions are written out,
    or more than :data:`MAX_LITERAL_CHARS` literal characters in a row, is refused
    (compiling it, or the engine's search tables, would take seconds or gigabytes).

    Where the engines differ, on rare patterns, the number follows ``regex``: a
    POSIX class such as ``[[:alpha:]]`` is one (``re`` reads a set of the
    characters ``[:alph`` and then ``]``, and warns), ``\B`` matches empty text
    (as ``re`` does from Python 3.14), and under ``ignore_case`` a backreference
    also matches characters that fold alike (``ſ`` and ``s``).
    """

    name = "RegexMatch"
    description = "1 if output matches a regular expression (pattern or expected)"
    fields = (text_field("output"), Field("expected", (str,), required=False))
    example = r'RegexMatch(pattern=r"\d{4}-\d{2}-\d{2}")(output="due 2024-06-11")  # 1.0'
    #: 2: matched by the regex package (a time limit); it differs from re on a few rare patterns (see above)
    algorithm_version = "2"

    pattern: str | None = param("the regular expression (None: each row's expected is its pattern)", default=None)
    full: bool = param("the whole output must match (fullmatch), not a part of it (search)", default=False)
    ignore_case: bool = param("match case-insensitively", default=False)
    timeout_s: float | None = seconds(
        "CPU seconds one match may take (a longer one is the row's error)", default=REGEX_TIMEOUT_S
    )

    def __post_init__(self) -> None:
        self._compiled = self._compile(self.pattern, "pattern") if self.pattern is not None else None

    def params(self) -> dict[str, Any]:
        return {**super().params(), "regex": _regex_module().__version__}

    def _compile(self, pattern: str, source: str) -> Any:
        """``pattern`` compiled by the regex package; one that is invalid or too large is a ConfigError for the
        constructor's ``pattern``, a ScorerInputError naming ``source`` for a row's."""
        regex = _regex_module()
        flags = re.IGNORECASE if self.ignore_case else 0
        try:
            if len(pattern) > MAX_PATTERN_CHARS:
                raise ValueError(
                    f"is a pattern of {len(pattern):,} characters, more than {MAX_PATTERN_CHARS:,} "
                    "(compiling takes time that grows faster than its length)"
                )
            re.compile(pattern, flags)  # the syntax accepted, and its error messages, are re's
            items, literal = _pattern_shape(pattern, flags)
            if items > MAX_PATTERN_ITEMS:
                raise ValueError(
                    f"is a pattern of more than {MAX_PATTERN_ITEMS:,} items once its counted "
                    "repetitions such as {1000} are written out (the engine builds every copy when it compiles: "
                    "time and memory): "
                    "repeat fewer times, or use an open bound such as {1,}"
                )
            if literal > MAX_LITERAL_CHARS:
                raise ValueError(
                    f"holds {literal:,} literal characters in a row, more than {MAX_LITERAL_CHARS:,} (the engine's "
                    "search tables for a literal take time that grows with the cube of its length, outside "
                    "timeout_s): to find a long text, use Contains"
                )
            return regex.compile(
                pattern,
                (regex.IGNORECASE if self.ignore_case else 0) | regex.VERSION0,
                cache_pattern=items <= _CACHED_PATTERN_ITEMS,
            )
        except (re.error, regex.error) as exc:
            reason, problem = str(exc), f"is not a valid regular expression: {exc}"
        except RecursionError:
            reason = problem = "nests groups more deeply than Python can parse"
        except ValueError as exc:
            reason = problem = str(exc)
        if source == "pattern":
            raise ConfigError(f"{self.name}: invalid regular expression {pattern[:200]!r}: {reason}", scorer=self.name)
        raise ScorerInputError(self.name, source, problem)

    # fields by keyword, as Scorer documents its hooks (mypy cannot match that to the base hook\'s **fields)
    def _score(self, *, output: str, expected: str | None = None, **_: Any) -> Score:  # type: ignore[override]
        compiled = self._compiled
        if compiled is None:
            if expected is None:
                raise ScorerInputError(
                    self.name, "expected", "is required (it is the pattern) when no pattern is configured"
                )
            compiled = self._compile(expected, "expected")
        try:
            match = (compiled.fullmatch if self.full else compiled.search)(output, timeout=self.timeout_s)
        except TimeoutError:
            field, against = (
                ("expected", "the output")
                if self._compiled is None
                else ("output", f"the pattern {compiled.pattern[:60]!r}")  # compiled is self._compiled: its pattern
            )
            raise ScorerInputError(
                self.name,
                field,
                f"took more than timeout_s={self.timeout_s} s of CPU time to match against {against} "
                "(a pattern that backtracks without end, as nested repeats such as (a|a)+ do on some texts): simplify "
                f"the pattern, or raise the limit with scorers.get({self.name!r}, timeout_s=...) or "
                f"-p {self.name}.timeout_s=... (null: no limit)",
            ) from None
        return self.make_score(1.0 if match else 0.0, match=match.group(0) if match else None)
