"""Heuristic scorers of one text or number against another: exact match, edit distance, numbers, substrings."""

from __future__ import annotations

import math
import operator
from array import array
from typing import Any, Callable, Literal, Sequence, cast, get_args

from .._util import import_rapidfuzz
from ..base import Scorer
from ..errors import ScorerInputError
from ..fields import Field, as_str, require, text_field
from ..params import param
from ..registry import register
from ..score import Score, ScoreColumn
from ._json import JSON_TYPES, _canonical_json, _check_depth, _maybe_parse_json

__all__ = ["ExactMatch", "Levenshtein", "NumericDiff", "Contains", "numeric_similarity"]


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

    def _score_columns(self, columns: dict[str, list[Any]]) -> ScoreColumn:
        outputs, expecteds = columns["output"], columns["expected"]  # strings: the fast path takes nothing else
        if self.strip or self.ignore_case:
            outputs = [self._normalise(text, False, "output") for text in outputs]
            expecteds = [self._normalise(text, False, "expected") for text in expecteds]
        same = map(float, map(operator.eq, outputs, expecteds))  # 1.0 or 0.0, in C
        return ScoreColumn(self.name, array("d", same), {"signature": self.signature()})


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

    def _similarities(self, outputs: Sequence[str], expecteds: Sequence[str]) -> Any:
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
        return sims  # a float64 array: the batch's ScoreColumn holds it as it is

    def _score_batch(self, rows: list[dict[str, Any]]) -> ScoreColumn:
        return self._score_columns({"output": [r["output"] for r in rows], "expected": [r["expected"] for r in rows]})

    def _score_columns(self, columns: dict[str, list[Any]]) -> ScoreColumn:
        similarities = self._similarities(columns["output"], columns["expected"])
        return ScoreColumn(self.name, similarities, {"signature": self.signature()})


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

    def _score_batch(self, rows: list[dict[str, Any]]) -> ScoreColumn:
        """:func:`numeric_similarity` over the rows at once: the same IEEE operations, element-wise."""
        import numpy as np

        output = np.fromiter(map(operator.itemgetter("output"), rows), np.float64, len(rows))
        expected = np.fromiter(map(operator.itemgetter("expected"), rows), np.float64, len(rows))
        scale = np.maximum(np.abs(output), np.abs(expected))
        both_zero = scale == 0
        scale[both_zero] = 1.0
        o, e = output / scale, expected / scale
        with np.errstate(invalid="ignore"):  # 0 / 0 where both are 0: those rows are set to 1 below
            similarity = 1.0 - np.abs(e - o) / (np.abs(e) + np.abs(o))
        similarity[both_zero] = 1.0
        return ScoreColumn(self.name, similarity, {"signature": self.signature()})


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
