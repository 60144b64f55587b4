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

from ._json import JSON_TYPES as JSON_TYPES
from ._json import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from .regex import MAX_LITERAL_CHARS as MAX_LITERAL_CHARS
from .regex import MAX_PATTERN_CHARS as MAX_PATTERN_CHARS
from .regex import MAX_PATTERN_ITEMS as MAX_PATTERN_ITEMS
from .regex import REGEX_TIMEOUT_S as REGEX_TIMEOUT_S
from .regex import RegexMatch
from .regex import _pattern_shape as _pattern_shape
from .structured import JSONDiff, ListContains, ValidJSON
from .structured import _text_size as _text_size
from .text import Contains, ExactMatch, Levenshtein, NumericDiff
from .text import numeric_similarity as numeric_similarity

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
