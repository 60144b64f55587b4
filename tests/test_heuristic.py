"""Heuristic scorers: autoevals-equivalence vectors, our documented differences, and properties."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
from bounded import run_bounded
from hypothesis import given, settings
from hypothesis import strategies as st

import scorers
from scorers.errors import ConfigError, ScorerError, ScorerInputError
from scorers.heuristic import (
    Contains,
    ExactMatch,
    JSONDiff,
    Levenshtein,
    ListContains,
    NumericDiff,
    RegexMatch,
    ValidJSON,
)

# (output, expected, autoevals' score), written from autoevals' documented semantics.
LEVENSHTEIN = [
    ("kitten", "sitting", 1 - 3 / 7),
    ("", "", 1.0),
    ("abc", "", 0.0),
    ("", "abc", 0.0),
    ("flaw", "lawn", 0.5),
    ("Paris", "Paris", 1.0),
    ("café", "cafe\u0301", 0.6),  # NFC vs NFD differ by code points
    ("👍🏽", "👍", 0.5),
    (12, "12", 1.0),  # numbers are compared as their str
    (1.5, "1.50", 0.75),
]

EXACT_MATCH = [
    ("Paris", "Paris", 1.0),
    ("Paris", "paris", 0.0),
    ({"a": 1, "b": 2}, {"a": 1, "b": 2}, 1.0),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, 0.0),  # key order matters, as in autoevals
    ('{"a": 1}', {"a": 1}, 1.0),  # a string side is parsed when the other is JSON
    ('{"a":1}', '{"a": 1}', 0.0),  # two strings are compared as text
    ([1, 2], "[1,2]", 1.0),
    (1, 1, 1.0),
    (1, "1", 1.0),  # str(1) == "1"
    (1, 1.0, 0.0),  # str(1) != str(1.0)
    (True, "True", 1.0),
]

NUMERIC_DIFF = [
    (0, 0, 1.0),
    (9, 10, 1 - 1 / 19),
    (-1, 1, 0.0),
    (10, 10, 1.0),
    (0, 5, 0.0),
    (2.5, 5, 1 - 2.5 / 7.5),
    ("3", 4, 1 - 1 / 7),
    (1e308, 1e308, 1.0),  # no overflow to NaN
    (-1e308, 1e308, 0.0),
]

JSON_DIFF = [
    ({"a": 1, "b": "x"}, {"a": 1, "b": "y"}, 0.5),
    ({}, {}, 1.0),
    ({"a": 1}, {}, 0.0),
    ({"a": 1}, {"a": 1, "b": 2}, 0.5),
    ([1, 2, 3], [1, 2], 2 / 3),
    ([], [], 1.0),
    ('{"a": "kitten"}', {"a": "sitting"}, 1 - 3 / 7),  # JSON strings are parsed
    ({"a": {"b": {"c": 9}}}, {"a": {"b": {"c": 10}}}, 1 - 1 / 19),
    (None, None, 1.0),
    ({"a": None}, {"a": 1}, 0.0),
    ({"a": 1}, {"a": "1"}, 1 / 3),  # mixed types: Levenshtein of JSON texts 1 and "1"
    ("kitten", "sitting", 1 - 3 / 7),
    # mixed types hold non-ASCII text: compared as \u-escaped JSON, as autoevals writes it ('["caf\u00e9"]', 14 chars)
    (["café"], {"a": "café"}, 1 - 6 / 17),
    ({"名": 1}, ["名"], 1 - 4 / 12),
]

LIST_CONTAINS = [
    (["a", "b"], ["b", "a"], False, 1.0),
    (["a", "b", "c"], ["a", "b"], False, 2 / 3),
    (["a", "b", "c"], ["a", "b"], True, 1.0),
    ([], [], False, 1.0),
    ([], ["a"], False, 0.0),
    (["kitten"], ["sitting", "kitten"], False, 0.5),
    (["kitten", "sitting"], ["sitten"], True, 1 - 1 / 6),
]


@pytest.mark.parametrize("output,expected,score", LEVENSHTEIN)
def test_levenshtein_matches_autoevals(output, expected, score):
    assert Levenshtein()(output=output, expected=expected).score == pytest.approx(score, abs=1e-12)


@pytest.mark.parametrize("output,expected,score", EXACT_MATCH)
def test_exact_match_matches_autoevals(output, expected, score):
    assert ExactMatch()(output=output, expected=expected).score == score


@pytest.mark.parametrize("output,expected,score", NUMERIC_DIFF)
def test_numeric_diff_matches_autoevals(output, expected, score):
    assert NumericDiff()(output=output, expected=expected).score == pytest.approx(score, abs=1e-12)


@pytest.mark.parametrize("output,expected,score", JSON_DIFF)
def test_json_diff_matches_autoevals(output, expected, score):
    assert JSONDiff()(output=output, expected=expected).score == pytest.approx(score, abs=1e-12)


@pytest.mark.parametrize("output,expected,allow_extra,score", LIST_CONTAINS)
def test_list_contains_matches_autoevals(output, expected, allow_extra, score):
    result = ListContains(allow_extra_entities=allow_extra)(output=output, expected=expected)
    assert result.score == pytest.approx(score, abs=1e-12)
    assert all(len(pair) == 3 for pair in result.metadata["pairs"])


@pytest.mark.parametrize("stringify", [True, False], ids=["all str", "mixed types"])
@pytest.mark.parametrize("normalize", [None, "NFC"])
def test_levenshtein_batch_equals_single(stringify, normalize):
    rows = [{"output": str(o) if stringify else o, "expected": str(e) if stringify else e} for o, e, _ in LEVENSHTEIN]
    scorer = Levenshtein(normalize=normalize)
    assert scorer.score_batch(rows) == [scorer(**row) for row in rows]


def test_levenshtein_batch_records_bad_rows_and_keeps_bound_fields():
    results = Levenshtein().score_batch([{"output": "a", "expected": "a"}, {"output": None, "expected": "b"}])
    assert results[0].score == 1.0 and isinstance(results[1], ScorerInputError) and results[1].field == "output"
    bound = Levenshtein().partial(expected="abc")
    assert [s.score for s in bound.score_batch([{"output": "abc"}, {"output": "abd"}])] == pytest.approx([1, 2 / 3])


def test_autoevals_itself_agrees_on_the_vectors():
    autoevals = pytest.importorskip("autoevals")
    for output, expected, _ in LEVENSHTEIN:
        assert Levenshtein()(output=output, expected=expected).score == pytest.approx(
            autoevals.Levenshtein().eval(output, expected).score, abs=1e-12
        )
    for output, expected, _ in NUMERIC_DIFF[:7]:
        if isinstance(output, str):
            continue
        assert NumericDiff()(output=output, expected=expected).score == pytest.approx(
            autoevals.NumericDiff().eval(output, expected).score, abs=1e-12
        )
    for output, expected, _ in JSON_DIFF:
        if output is None:
            continue
        assert JSONDiff()(output=output, expected=expected).score == pytest.approx(
            autoevals.JSONDiff().eval(output, expected).score, abs=1e-12
        )
    for output, expected, allow, _ in LIST_CONTAINS:
        assert ListContains(allow_extra_entities=allow)(output=output, expected=expected).score == pytest.approx(
            autoevals.ListContains(allow_extra_entities=allow).eval(output, expected).score, abs=1e-12
        )


# -------------------------------------------------------------- our differences
@pytest.mark.parametrize(
    "schema,output,score",
    [
        ({"type": "object", "required": ["a"]}, '{"a": 1}', 1.0),
        ({"type": "object", "required": ["a"]}, '{"b": 1}', 0.0),  # autoevals ignores the constructor schema
        ({"type": "string"}, '"text"', 1.0),
        ({"type": "string"}, '{"a": 1}', 0.0),
        (None, '{"a": 1}', 1.0),
        (None, "[1, 2]", 1.0),
        (None, "100", 0.0),
        (None, "not json", 0.0),
        (None, {"a": 1}, 1.0),
    ],
)
def test_valid_json_honours_constructor_schema(schema, output, score):
    assert ValidJSON(schema=schema)(output=output).score == score


def test_valid_json_call_time_schema_and_positional_form():
    assert ValidJSON().eval('{"a": 1}', {"type": "object", "required": ["b"]}).score == 0.0
    assert ValidJSON().eval('{"b": 1}', {"type": "object", "required": ["b"]}).score == 1.0


def test_valid_json_bad_schema_is_a_config_error():
    with pytest.raises(ConfigError, match="invalid JSON schema"):
        ValidJSON(schema={"type": "no-such-type"})


@pytest.mark.parametrize(
    "kwargs,output,expected,score",
    [
        ({}, "The capital is Paris.", "Paris", 1.0),
        ({}, "The capital is Paris.", "paris", 0.0),
        ({"ignore_case": True}, "The capital is Paris.", "paris", 1.0),
        ({}, "red and blue", ["green", "blue"], 1.0),
        ({"mode": "all"}, "red and blue", ["green", "blue"], 0.5),
    ],
)
def test_contains(kwargs, output, expected, score):
    assert Contains(**kwargs)(output=output, expected=expected).score == score


REGEX_CASES = [
    ({"pattern": r"\d{4}-\d{2}-\d{2}"}, {"output": "due 2024-06-11"}, 1.0),
    ({"pattern": r"\d{4}-\d{2}-\d{2}", "full": True}, {"output": "due 2024-06-11"}, 0.0),
    ({}, {"output": "ABC", "expected": "abc"}, 0.0),
    ({"ignore_case": True}, {"output": "ABC", "expected": "abc"}, 1.0),
]


@pytest.mark.parametrize("kwargs,call,score", REGEX_CASES)
def test_regex_match(kwargs, call, score):
    assert RegexMatch(**kwargs)(**call).score == score


@pytest.mark.parametrize(
    "factory,kwargs,error,field",
    [
        (Levenshtein, {"output": None, "expected": "a"}, ScorerInputError, "output"),
        (Levenshtein, {"output": "a"}, ScorerInputError, "expected"),
        (Levenshtein, {"output": ["a"], "expected": "a"}, ScorerInputError, "output"),
        (NumericDiff, {"output": "twelve", "expected": 12}, ScorerInputError, "output"),
        (NumericDiff, {"output": float("nan"), "expected": 12}, ScorerInputError, "output"),
        (NumericDiff, {"output": True, "expected": 1}, ScorerInputError, "output"),
        (ExactMatch, {"output": None, "expected": "None"}, ScorerInputError, "output"),
        (RegexMatch, {"output": "x", "expected": "("}, ScorerInputError, "expected"),
        (Contains, {"output": "x", "expected": []}, ScorerInputError, "expected"),
        (Levenshtein, {"output": "a", "expected": "b", "expectd": "c"}, ScorerInputError, "expectd"),
    ],
)
def test_bad_input_raises_typed_error_naming_scorer_and_field(factory, kwargs, error, field):
    scorer = factory()
    with pytest.raises(error) as info:
        scorer(**kwargs)
    assert info.value.field == field
    assert str(info.value).startswith(f"{scorer.name}: field {field!r}")


@pytest.mark.parametrize(
    "factory,kwargs",
    [
        (Levenshtein, {"normalize": "NFX"}),
        (Contains, {"mode": "some"}),
        (RegexMatch, {"pattern": "("}),
        (JSONDiff, {"string_scorer": 3}),
    ],
)
def test_bad_parameters_raise_config_error(factory, kwargs):
    with pytest.raises(ConfigError):
        factory(**kwargs)


def test_json_diff_constructor_scorers_are_honoured():
    strict = JSONDiff(string_scorer="ExactMatch")
    assert strict(output={"a": "kitten"}, expected={"a": "sitting"}).score == 0.0
    assert strict.signature()["string_scorer"]["scorer"] == "ExactMatch"


def test_levenshtein_normalize_option():
    assert Levenshtein(normalize="NFC")(output="café", expected="cafe\u0301").score == 1.0


# ------------------------------------------------------------------ properties
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)
ANY_VALUE = JSON_VALUES | st.floats() | st.binary(max_size=5) | st.tuples(st.integers())

ALL_HEURISTIC = [
    "ExactMatch",
    "Levenshtein",
    "NumericDiff",
    "JSONDiff",
    "ValidJSON",
    "ListContains",
    "Contains",
    "RegexMatch",
]


@pytest.mark.parametrize("name", ALL_HEURISTIC)
@settings(max_examples=60, deadline=None)
@given(output=ANY_VALUE, expected=ANY_VALUE)
def test_every_scorer_returns_a_score_in_range_or_a_scorer_error(name, output, expected):
    scorer = scorers.get(name)
    try:
        result = scorer(output=output, expected=expected)
    except ScorerError:
        return
    assert result.name == scorer.name
    assert result.score is None or (0.0 <= result.score <= 1.0 and math.isfinite(result.score))
    json.dumps(result.to_dict(), default=str)


@settings(max_examples=80, deadline=None)
@given(a=st.text(), b=st.text())
def test_levenshtein_is_symmetric_and_one_on_identity(a, b):
    lev = Levenshtein()
    assert lev(output=a, expected=b).score == lev(output=b, expected=a).score
    assert lev(output=a, expected=a).score == 1.0


@settings(max_examples=80, deadline=None)
@given(value=JSON_VALUES)
def test_json_diff_of_a_value_with_itself_is_one(value):
    assert JSONDiff()(output=value, expected=value).score == pytest.approx(1.0)


# ------------------------------------------------------------------ odd values and limits (issue 15)
def nested(depth: int, leaf=1):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@pytest.mark.parametrize("value", [10**309, -(10**309), 10**5000], ids=["10**309", "-10**309", "10**5000"])
def test_integers_beyond_a_float_are_an_input_error_not_an_overflow(value):
    with pytest.raises(ScorerInputError, match="NumericDiff: field 'output' is an integer beyond a float's range"):
        NumericDiff()(output=value, expected=1)
    with pytest.raises(ScorerInputError, match="JSONDiff: field 'output'"):
        JSONDiff()(output={"a": value}, expected={"a": 1})
    with pytest.raises(ScorerInputError, match="NumericDiff: field 'output' must be a finite number"):
        NumericDiff()(output=str(10**309), expected=1)  # as text: float() gives inf


def test_numbers_at_the_float_limits_score():
    assert NumericDiff()(output=1e308, expected=-1e308).score == 0.0
    assert NumericDiff()(output=5e-324, expected=5e-324).score == 1.0
    assert NumericDiff()(output=1e308, expected=1e308).score == 1.0


def test_an_integer_too_long_to_write_is_an_input_error():
    with pytest.raises(ScorerInputError, match="ExactMatch: field 'expected' is an integer of about 5,000 digits"):
        ExactMatch()(output="1", expected=10**5000)
    with pytest.raises(ScorerInputError, match="Levenshtein: field 'output' is an integer"):
        Levenshtein()(output=10**5000, expected="1")


@pytest.mark.parametrize("name,field", [("ExactMatch", "expected"), ("JSONDiff", "expected"), ("ValidJSON", "output")])
@pytest.mark.parametrize("as_text", [False, True], ids=["value", "JSON text"])
def test_nesting_deeper_than_the_limit_is_an_input_error_naming_the_field(name, field, as_text):
    from scorers.heuristic import MAX_JSON_DEPTH

    def row(depth):
        value = "[" * depth + "1" + "]" * depth if as_text else nested(depth)
        return {"output": value} if name == "ValidJSON" else {"output": [1], field: value}  # a list: JSON mode

    assert scorers.get(name)(**row(MAX_JSON_DEPTH)).score is not None
    for depth in (MAX_JSON_DEPTH + 1, 1_000, 100_000 if as_text else 5_000):
        with pytest.raises(ScorerInputError, match=f"{name}: field '{field}' nests arrays or objects more than 100"):
            scorers.get(name)(**row(depth))


def test_json_diff_bounds_nesting_through_strings_that_hold_json():
    inner = json.dumps(nested(60))  # each side's own nesting is fine; parsed inside, 120 levels
    with pytest.raises(ScorerInputError, match="more than 100 levels"):
        JSONDiff()(output=nested(60, inner), expected=nested(60, inner))
    assert JSONDiff(preserve_strings=True)(output=nested(60, inner), expected=nested(60, inner)).score == 1.0


def test_valid_json_refuses_an_unresolvable_ref_at_construction():
    with pytest.raises(
        ConfigError, match=r"ValidJSON: invalid JSON schema: its \$ref '#/definitions/nope' points to nothing"
    ):
        ValidJSON(schema={"$ref": "#/definitions/nope"})
    with pytest.raises(ConfigError, match=r"\$ref 'http://example.com/s.json'.*nothing is fetched"):
        ValidJSON(schema={"properties": {"a": {"$ref": "http://example.com/s.json"}}})


def test_valid_json_refuses_an_unresolvable_ref_given_with_a_row_as_that_rows_error():
    with pytest.raises(ScorerInputError, match=r"ValidJSON: field 'schema' is an invalid JSON schema: its \$ref"):
        ValidJSON()(output="{}", schema={"$ref": "#/$defs/nope"})
    with pytest.raises(ScorerInputError, match="field 'schema' is an invalid JSON schema"):
        ValidJSON()(output="{}", schema={"type": "no-such-type"})


@pytest.mark.parametrize(
    "schema,output,score",
    [
        ({"$defs": {"n": {"type": "integer"}}, "items": {"$ref": "#/$defs/n"}}, "[1, 2]", 1.0),
        (
            {
                "$schema": "http://json-schema.org/draft-04/schema#",
                "definitions": {"n": {"type": "integer"}},
                "items": {"$ref": "#/definitions/n"},
            },
            '[1, "x"]',
            0.0,
        ),
        (
            {
                "$id": "http://x.test/root",
                "properties": {"a": {"$id": "sub", "$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}},
            },
            '{"a": 1}',
            0.0,
        ),
        ({"type": "array", "items": {"$ref": "#"}}, json.dumps(nested(99, [])), 1.0),  # recursive, at the depth limit
        ({"enum": [{"$ref": "not a reference: data"}]}, '{"$ref": "not a reference: data"}', 1.0),
    ],
)
def test_valid_json_resolvable_refs_still_validate(schema, output, score):
    assert ValidJSON(schema=schema)(output=output).score == score


@pytest.mark.parametrize(
    "text,error",
    [
        ('["abc', "Unterminated string starting at line 1, column 2"),
        ('["a\x01"]', "Invalid control character at line 1, column 4"),
        ('{"a" 1}', "Expecting ':' delimiter at line 1, column 6"),
        ("[1]\n[2]", "Extra data at line 2, column 1"),
    ],
)
def test_invalid_json_reason_is_followed_by_its_position_once(text, error):
    assert ValidJSON()(output=text).metadata["error"] == f"not JSON: {error}"


@pytest.mark.parametrize(
    "name,params,field,value",
    [
        ("Levenshtein", {}, "output", "x" * 11),
        ("Levenshtein", {"normalize": "NFC"}, "expected", "x" * 11),
        ("JSONDiff", {}, "output", {"a": "x" * 4}),  # {"a":"xxxx"}: 12 characters as JSON text
        ("JSONDiff", {}, "expected", "é" * 2),  # "\u00e9\u00e9": 14 characters, ASCII-escaped
    ],
)
def test_max_chars_refuses_a_longer_value_as_that_rows_error(name, params, field, value):
    scorer = scorers.get(name, max_chars=10, **params)
    row = {"output": "short", "expected": "short", field: value}
    with pytest.raises(
        ScorerInputError,
        match=rf"{name}: field '{field}' has \d+ characters.* more than max_chars=10 "
        rf".*max_chars=\.\.\.",
    ):
        scorer(**row)
    outcomes = scorer.score_batch([{"output": "a", "expected": "b"}, row, {"output": "a", "expected": "a"}])
    assert [type(o).__name__ for o in outcomes] == ["Score", "ScorerInputError", "Score"]
    assert scorers.get(name, max_chars=None, **params)(**row).score is not None


def test_max_chars_does_not_change_numbers_or_signatures():
    assert Levenshtein(max_chars=10)(output="kitten", expected="sitting").score == 1 - 3 / 7
    assert Levenshtein(max_chars=10).signature() == Levenshtein().signature()
    assert JSONDiff(max_chars=10).signature() == JSONDiff().signature()
    assert Levenshtein()(output="x" * 100_000, expected="x").score == 1 - 99_999 / 100_000  # the default: 100,000


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_max_chars_must_be_a_positive_integer(value):
    with pytest.raises(ConfigError, match="max_chars must be a positive integer or None"):
        Levenshtein(max_chars=value)


# ------------------------------------------------------------------ regular expressions: bounded (issue 15)
#: Catastrophic backtracking: exponential in the run of "a" (re took minutes; Python's re cannot be stopped).
BACKTRACKS = (r"(a|a)+$", "a" * 40 + "!")


def test_regex_match_a_pattern_from_the_row_that_backtracks_is_that_rows_error_naming_expected():
    pattern, text = BACKTRACKS
    scorer = RegexMatch(timeout_s=0.05)
    with pytest.raises(
        ScorerInputError,
        match=r"RegexMatch: field 'expected' took more than timeout_s=0\.05 s of CPU "
        r"time .*timeout_s=\.\.\. \(null: no limit\)",
    ):
        scorer(output=text, expected=pattern)
    outcomes = scorer.score_batch(
        [{"output": "aaa", "expected": "a+"}, {"output": text, "expected": pattern}, {"output": "b", "expected": "a"}]
    )
    assert [o.score if isinstance(o, scorers.Score) else type(o).__name__ for o in outcomes] == [
        1.0,
        "ScorerInputError",
        0.0,
    ]


def test_regex_match_the_constructors_pattern_that_backtracks_on_an_output_names_output():
    pattern, text = BACKTRACKS
    with pytest.raises(
        ScorerInputError,
        match=r"RegexMatch: field 'output' took more than timeout_s=0\.05 s .*"
        r"the pattern '\(a\|a\)\+\$'",
    ):
        RegexMatch(pattern=pattern, timeout_s=0.05)(output=text)


def test_regex_match_the_pattern_that_hung_re_scores():
    # re: 5.75 s at 27 characters, doubling with each one; the regex engine needs no backtracking here
    assert RegexMatch()(output="a" * 60 + "!", expected=r"(a+)+$").score == 0.0
    assert RegexMatch(full=True)(output="a" * 60, expected=r"(a+)+$").score == 1.0


def test_regex_match_timeout_does_not_change_numbers_or_signatures():
    for timeout in (0.5, None):
        for kwargs, call, score in REGEX_CASES:
            assert RegexMatch(**kwargs, timeout_s=timeout)(**call).score == score
    assert RegexMatch(timeout_s=5).signature() == RegexMatch().signature()
    assert RegexMatch(timeout_s=None).timeout_s is None
    from scorers.heuristic import REGEX_TIMEOUT_S

    assert RegexMatch().timeout_s == REGEX_TIMEOUT_S == 1.0


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, True, "1"])
def test_regex_match_timeout_must_be_a_positive_number(value):
    with pytest.raises(ConfigError, match="timeout_s must be a positive number of seconds or None"):
        RegexMatch(timeout_s=value)


@pytest.mark.parametrize(
    "pattern,problem",
    [
        ("(?:a{1000}){1000}", r"is a pattern of more than 100,000 items once its counted repetitions"),
        ("(?:(?:ab|cd){300}){300}", r"is a pattern of more than 100,000 items"),
        (".{100001}", r"is a pattern of more than 100,000 items"),
        ("a|" * 5000 + "a", r"is a pattern of 10,001 characters, more than 10,000"),
        ("(" * 5000 + ")" * 5000, r"nests groups more deeply than Python can parse"),  # was a RecursionError
        ("(", r"is not a valid regular expression: missing \)"),
    ],
)
def test_regex_match_a_pattern_too_large_to_compile_is_that_rows_error_or_a_config_error(pattern, problem):
    with pytest.raises(ScorerInputError, match=rf"RegexMatch: field 'expected' {problem}"):
        RegexMatch()(output="x", expected=pattern)
    with pytest.raises(ConfigError, match=r"RegexMatch: invalid regular expression"):
        RegexMatch(pattern=pattern)


def test_regex_match_patterns_at_the_limits_compile():
    from scorers.heuristic import MAX_PATTERN_CHARS, MAX_PATTERN_ITEMS, _pattern_shape

    assert _pattern_shape(r"(?:ab){3,5}", 0)[0] == 1 + 3 * 2 and _pattern_shape(r"(ab){3,5}", 0)[0] == 1 + 3 * 3
    assert _pattern_shape(r"[a-z]{1,64}", 0)[0] == 2
    assert RegexMatch()(output="a" * 99_998, expected=f"a{{{MAX_PATTERN_ITEMS - 1}}}").score == 0.0
    assert RegexMatch()(output="a", expected="a|" * (MAX_PATTERN_CHARS // 2 - 1) + "a").score == 1.0
    assert RegexMatch()(output="a" * 2000, expected="a{1,1000000}").score == 1.0  # an open part is not written out


def regex_match_error(pattern: str, text: str) -> str:
    """The ScorerInputError's message for ``pattern`` as a row's pattern (run bounded, in a child)."""
    with pytest.raises(ScorerInputError) as caught:
        RegexMatch()(output=text, expected=pattern)
    return str(caught.value)


@pytest.mark.parametrize(
    "pattern,literal",
    [
        ("a" * 9_999, "9,999"),
        ("(?:a)" * 1_001, "1,001"),
        ("[a]" * 1_001, "1,001"),
        (r"\x61" * 1_001, "1,001"),
        ("x+" + "ab" * 501 + "y?", "1,002"),
    ],
    ids=["9,999 a", "non-capturing groups", "one-character classes", "escapes", "inside"],
)
def test_regex_match_a_long_literal_is_refused_before_the_engine_builds_its_search_tables(pattern, literal):
    """The engine's tables for a literal took time cubic in its length outside timeout_s: 9,999 a's, 325 s."""
    message = run_bounded(regex_match_error, pattern, "ab" * 10_000, timeout_s=60, memory_mb=500)
    assert message.startswith(
        f"RegexMatch: field 'expected' holds {literal} literal characters in a row, more than 1,000"
    ), message
    with pytest.raises(ConfigError, match=f"holds {literal} literal characters in a row, more than 1,000"):
        RegexMatch(pattern=pattern)


def test_regex_match_literals_at_the_limit_score():
    from scorers.heuristic import MAX_LITERAL_CHARS, _pattern_shape

    assert _pattern_shape("a" * 5 + "(b)" + "c" * 3, 0)[1] == 5  # a capturing group ends a run
    assert _pattern_shape("(?:ab)(?i:cd)[e]\\x66", 0)[1] == 6  # non-capturing groups are read through
    assert _pattern_shape("a{500}" + "b" * 10, 0)[1] == 10  # a repeat is not a literal
    assert RegexMatch()(output="a" * 5_000, expected="a" * MAX_LITERAL_CHARS).score == 1.0
    assert RegexMatch()(output="b" * 5_000, expected="(a)" * 2_000).score == 0.0


#: (pattern, text): the syntax RegexMatch takes (Python's re), matched alike by re and the regex engine.
RE_SYNTAX = [
    (r"\d{4}-\d{2}-\d{2}", "due 2024-06-11"),
    (r"^\w+@\w+\.com$", "me@example.com"),
    (r"\bcat\b", "concat cat"),
    (r"colou?r", "color"),
    (r"(?P<y>\d+)-(?P=y)", "12-12"),
    (r"(a)(b)?\2", "ab b"),
    (r"(?<=\$)\d+", "cost $42"),
    (r"(?<!x)y", "xy y"),
    (r"foo(?=bar)", "foobaz foobar"),
    (r"(?!a)\w", "ab"),
    (r"a.*?b", "aXbYb"),
    (r"a.+b", "a\nb"),
    (r"(?s)a.+b", "a\nb"),
    (r"(?m)^b$", "a\nb\nc"),
    (r"\Aa|c\Z", "abc"),
    (r"end$", "the end\n"),
    (r"[^\W\d_]+", "42 é!"),
    (r"\s+", "a \t\u00a0b"),
    (r"\d", "\u0661"),
    (r"(?a)\w+", "café"),
    (r"(?x) a \  b  # comment", "a b"),
    (r"(?i)straße", "STRASSE"),
    (r"(?i)ǅ", "ǆ"),
    (r"(?i)k", "\u212a"),
    (r"[\u00e0-\u00ff]+", "voilà"),
    (r"(?:ab)+c", "ababc"),
    (r"a{2,}", "aaa"),
    (r"a{,2}b", "aaab"),
    (r"x*", ""),
    (r"(a|ab)(c|bcd)(d*)", "abcd"),
    (r"(?>a+)b", "aab"),
    (r"a++b", "aaab"),
    (r"(a)?(?(1)b|c)", "c"),
    (r"[[a]]", "a]"),
    (r"[a-z&&b]", "&"),
    (r"\N{EM DASH}", "a—b"),
    (r"\x41\u0042\U00000043", "ABC"),
    (r"[\]\\-]", "-"),
    (r"\b", ""),
    (r"", "x"),
]


@pytest.mark.filterwarnings("ignore:Possible:FutureWarning")  # re on [[ and && in a set
@pytest.mark.parametrize("ignore_case", [False, True])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("pattern,text", RE_SYNTAX)
def test_regex_match_agrees_with_re_on_its_syntax(pattern, text, full, ignore_case):
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    expected = compiled.fullmatch(text) if full else compiled.search(text)
    for scorer in (
        RegexMatch(full=full, ignore_case=ignore_case),
        RegexMatch(pattern=pattern, full=full, ignore_case=ignore_case),
    ):
        result = scorer(output=text) if scorer.pattern else scorer(output=text, expected=pattern)
        assert result.score == (1.0 if expected else 0.0)
        assert result.metadata["match"] == (expected.group(0) if expected else None)


def test_regex_match_keeps_re_errors_and_refuses_regex_only_syntax():
    for pattern in (r"\p{L}", r"(?V1)a", r"(?r)a", r"(?|a)", r"a{e<=1}x(?R)?"):
        with pytest.raises(ScorerInputError, match="RegexMatch: field 'expected' is not a valid regular expression"):
            RegexMatch()(output="a", expected=pattern)


@pytest.mark.filterwarnings("ignore:Possible:FutureWarning")  # re on [[ and && in a set
def test_regex_match_documented_differences_from_re():
    assert RegexMatch()(output="x", expected="[[:alpha:]]").score == 1.0  # re: a set of "[:alph", then "]"
    assert RegexMatch()(output="", expected=r"\B").score == 1.0  # re before Python 3.14: no match
    assert RegexMatch.algorithm_version == "2" and "regex" in RegexMatch().signature()


def test_regex_match_travels_with_its_compiled_pattern():
    import pickle

    scorer = pickle.loads(pickle.dumps(RegexMatch(pattern=r"\d+", ignore_case=True, timeout_s=0.5)))
    assert scorer(output="a1").score == 1.0 and scorer.timeout_s == 0.5


# ------------------------------------------------------------------ ListContains: bounded (issue 15)
@pytest.mark.parametrize("field", ["output", "expected"])
def test_list_contains_refuses_more_than_max_items_as_that_rows_error(field):
    row = {"output": ["a", "b"], "expected": ["b"], field: [str(i) for i in range(1001)]}
    with pytest.raises(
        ScorerInputError,
        match=rf"ListContains: field '{field}' has 1,001 elements, more than "
        r"max_items=1,000 .*max_items=\.\.\. \(null: no limit\)",
    ):
        ListContains()(**row)
    outcomes = ListContains().score_batch([{"output": ["a"], "expected": ["a"]}, row, {"output": [], "expected": []}])
    assert [type(o).__name__ for o in outcomes] == ["Score", "ScorerInputError", "Score"]
    assert ListContains(max_items=None)(**row).score is not None
    assert ListContains(max_items=2000)(**row).score is not None
    with pytest.raises(ScorerInputError, match="has 3 elements, more than max_items=2"):
        ListContains(max_items=2, pairwise_scorer="ExactMatch")(output=["a", "b", "c"], expected=["a"])


@pytest.mark.parametrize(
    "scorer_kwargs,items,size",
    [
        ({}, ["x" * 60_000, "y" * 60_000], "120,000"),  # each one short enough
        ({"pairwise_scorer": "ExactMatch"}, ["x" * 60_000, "y" * 60_000], "120,000"),
        ({"pairwise_scorer": "JSONDiff"}, [{"a": "x" * 100_001}], "100,004"),
    ],
)
def test_list_contains_refuses_elements_longer_than_max_chars_together(scorer_kwargs, items, size):
    # every pair is compared: Levenshtein on two lists of 2 x 300,000 characters took more than 30 s
    with pytest.raises(
        ScorerInputError,
        match=rf"ListContains: field 'expected' has {size} characters in its elements "
        r"together, more than max_chars=100,000 .*max_chars=\.\.\.",
    ):
        ListContains(**scorer_kwargs)(output=["x"], expected=items)
    if "pairwise_scorer" in scorer_kwargs and scorer_kwargs["pairwise_scorer"] == "JSONDiff":  # its own limit, per pair
        with pytest.raises(
            ScorerInputError,
            match=r"ListContains: field 'expected' has an element its pairwise scorer "
            r"rejected \(element 0\): JSONDiff: field 'expected' has 100,009",
        ):
            ListContains(max_chars=None, **scorer_kwargs)(output=["x"], expected=items)
    else:
        assert ListContains(max_chars=None, **scorer_kwargs)(output=["x"], expected=items).score is not None
    assert ListContains(max_chars=10)(output=["abcde", "fghij"], expected=["a"]).score == pytest.approx(0.2 / 2)


def test_list_contains_counts_numbers_and_nested_values_without_writing_them_out():
    from scorers.heuristic import _text_size

    assert _text_size(["ab", 12, None, {"k": [1.5]}]) == 2 + 2 + 3 + 4 + 2 + 1 + 2 + 3
    assert 4_000 < _text_size(10**4000) < 4_010
    cycle: list = []
    cycle.append(cycle)
    assert _text_size(cycle) == 2
    with pytest.raises(ScorerInputError, match="field 'output' has .* characters in its elements together"):
        ListContains(pairwise_scorer="NumericDiff")(output=[10**200_000, 1, 2], expected=[1])


def test_list_contains_limits_do_not_change_numbers_or_signatures():
    for output, expected, allow_extra, score in LIST_CONTAINS:
        scorer = ListContains(allow_extra_entities=allow_extra, max_items=None, max_chars=None)
        assert scorer(output=output, expected=expected).score == pytest.approx(score, abs=1e-12)
    assert ListContains(max_items=5, max_chars=5).signature() == ListContains().signature()


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_list_contains_max_items_must_be_a_positive_integer(value):
    with pytest.raises(ConfigError, match="max_items must be a positive integer or None"):
        ListContains(max_items=value)


def test_list_contains_names_itself_the_field_and_the_element_a_pairwise_scorer_rejects():
    with pytest.raises(
        ScorerInputError,
        match=r"ListContains: field 'expected' has an element Levenshtein cannot "
        r"compare \(element 1\)",
    ):
        ListContains()(output=["a"], expected=["a", None])
    with pytest.raises(
        ScorerInputError,
        match=r"ListContains: field 'expected' has an element its pairwise scorer "
        r"rejected \(element 0\): ExactMatch: field 'expected'",
    ):
        ListContains(pairwise_scorer="ExactMatch")(output=["a"], expected=[None])
    with pytest.raises(
        ScorerInputError,
        match=r"ListContains: field 'output' has an element of 11 characters "
        r"\(element 0\), more than its pairwise scorer's max_chars=10",
    ):
        ListContains(pairwise_scorer=Levenshtein(max_chars=10))(output=["x" * 11], expected=["a"])


# JSONDiff's result, error and all, for values whose keys a set would iterate in a hash-dependent order
JSONDIFF_BY_HASH_SEED = """
import math, sys
from scorers.heuristic import JSONDiff
output = {f"k{i}": i for i in range(1, 40)}
print(repr(JSONDiff()(output=output, expected={k: v * 1.37 + 0.1 for k, v in output.items()}).score))
try:
    JSONDiff()(output={"nan": math.nan, "huge": 10**400}, expected={"nan": 1, "huge": 2})
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_json_diff_gives_the_same_bytes_whatever_the_hash_seed():
    """Keys are visited in the values' order, not a set's: sums and the error reported never vary by process."""
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", JSONDIFF_BY_HASH_SEED], env=env, capture_output=True, timeout=120)
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        outputs.add(run.stdout)
    assert len(outputs) == 1, outputs
    assert b"NumericDiff: field 'output' must be a finite number, got nan" in outputs.pop()  # the first key's error
