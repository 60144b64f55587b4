"""Every scorer that runs offline, on the oddest values a row can carry: a Score in [0, 1] (or None), or a ScorerError.

Nothing else may escape a scorer (an OverflowError, a RecursionError, a UnicodeEncodeError): the runner would
record it as a bug on the row, and a worker could die of it. The values are those JSON (or a Python caller) can
carry: lone surrogates, control characters, numbers at and beyond the float limits, non-finite floats, nesting a
thousand levels deep (as values and as JSON text), and generated JSON values of every shape.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scorers
from scorers.errors import MissingExtraError, ScorerError
from scorers.registry import registry
from scorers.score import Score


def nested(depth: int, leaf: Any = None, *, as_dict: bool = False) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


ODD_VALUES: dict[str, Any] = {
    "None": None,
    "True": True,
    "0": 0,
    "10**309": 10**309,
    "-10**309": -(10**309),
    "10**5000": 10**5000,
    "1e308": 1e308,
    "-1e308": -1e308,
    "5e-324": 5e-324,
    "-5e-324": -5e-324,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "empty text": "",
    "space": " ",
    "lone surrogate": "\ud800",
    "surrogates in words": "the c\ud800t sat \udfff",
    "NUL": "\x00",
    "control characters": "a\x00b\x01\x1f\x7f c\r\n",
    "line separators": "\u2028\u2029",
    "BOM": "\ufeff",
    "text number beyond float": "1" + "0" * 400,
    "text NaN": "NaN",
    "text inf": "1e999",
    "JSON text of inf": "[1e999]",
    "JSON text with an escaped surrogate": '["\\ud800"]',
    "empty list": [],
    "empty dict": {},
    "list of None": [None],
    "surrogate key": {"\ud800": "\udfff"},
    "list of huge int": [10**309],
    "dict of nan": {"a": math.nan},
    "list of text": ["the cat", "\ud800"],
    "list 1000 deep": nested(1000),
    "dict 1000 deep": nested(1000, as_dict=True),
    "JSON text 1000 deep": "[" * 1000 + "]" * 1000,
    "JSON text 100000 deep": "[" * 100_000 + "]" * 100_000,
    "list 101 deep": nested(101, 1),
    "JSON text 101 deep": "[" * 101 + "1" + "]" * 101,
}

#: Scores a normal field holds while another holds an odd value.
NORMAL = "the cat sat on the mat"

FLOAT_LIMITS = st.sampled_from([1e308, -1e308, 5e-324, -5e-324, 10**309, -(10**309), 2**1024, math.nan, math.inf])
#: Any code point, surrogates and control characters included, and often one of those.
ODD_TEXT = st.text(
    st.characters(exclude_categories=()) | st.sampled_from("\ud800\udfff\x00\x1f\x7f\u2028\ufeff"), max_size=12
)
JSON_LIKE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | FLOAT_LIMITS | ODD_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(ODD_TEXT, children, max_size=4),
    max_leaves=10,
)
FIELD_VALUE = ODD_TEXT | FLOAT_LIMITS | JSON_LIKE | st.lists(ODD_TEXT, min_size=1, max_size=3)


def offline_scorers() -> list[str]:
    """Every registered scorer that needs no judge: heuristic, text and embedding (local models)."""
    return [name for name in scorers.names() if registry.entry(name).kind != "llm"]


#: Scorers that still let an untyped error through, with the fix that removes them from here (strict: a fix fails
#: the xfail, so the entry cannot outlive it).
KNOWN_UNTYPED: dict[str, str] = {}


def build(name: str) -> scorers.Scorer:
    try:
        return scorers.get(name)
    except MissingExtraError as exc:
        pytest.skip(str(exc))


def fields_of(scorer: scorers.Scorer) -> list[str]:
    return [f.name for f in scorer.fields] or ["output", "expected"]


def outcome(scorer: scorers.Scorer, row: dict[str, Any]) -> str | None:
    """None when ``scorer`` keeps the contract on ``row`` (called and batched), else what went wrong."""
    for path in ("call", "batch"):
        try:
            result = scorer(**row) if path == "call" else scorer.score_batch([row])[0]
        except ScorerError:
            continue
        except Exception as exc:  # noqa: BLE001  (what the test looks for)
            return f"{path}: {type(exc).__name__}: {str(exc)[:120]}"
        if isinstance(result, ScorerError):
            continue
        if not isinstance(result, Score):
            return f"{path}: returned {type(result).__name__}"
        if result.score is not None and not (0.0 <= result.score <= 1.0 and math.isfinite(result.score)):
            return f"{path}: score {result.score!r} outside [0, 1]"
    return None


def mark_known(names: list[str], *, strict: bool) -> list[Any]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_UNTYPED[name], strict=strict))
        if name in KNOWN_UNTYPED
        else name
        for name in names
    ]


@pytest.mark.parametrize("name", mark_known(offline_scorers(), strict=True))
def test_every_odd_value_in_every_field_gives_a_score_or_a_scorer_error(name):
    scorer = build(name)
    fields = fields_of(scorer)
    failures = []
    for field in fields:
        for label, value in ODD_VALUES.items():
            row = {f: NORMAL for f in fields if f != "schema"} | {field: value}
            problem = outcome(scorer, row)
            if problem is not None:
                failures.append(f"{field}={label}: {problem}")
    assert not failures, f"{name}:\n" + "\n".join(failures)


@pytest.mark.parametrize("name", mark_known(offline_scorers(), strict=False))  # generated: may miss a surrogate
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_generated_values_give_a_score_or_a_scorer_error(name, data):
    scorer = build(name)
    row = {field: data.draw(FIELD_VALUE, label=field) for field in fields_of(scorer)}
    assert outcome(scorer, row) is None
