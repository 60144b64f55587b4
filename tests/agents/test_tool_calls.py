"""The deterministic tool-call scorers: ToolCallMatch, TrajectoryMatch, ToolCallValid and ToolCallF1.

Each case states its expected number; the shared vectors run through every order and policy they name. The
matching is checked against a greedy first-fit matcher (which misses a valid pairing that ours finds) and the fast
credit matrix against the per-pair explanation, on generated arguments and rules.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from bounded import run_bounded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scorers
from scorers.agents import FrozenDict, ToolCall, freeze, matching
from scorers.agents.matching import ArgumentRules, credit_matrix, explain_pair, match_calls
from scorers.errors import ConfigError, ScorerInputError

FIXTURES = Path(__file__).parent / "fixtures"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A call in OpenAI's chat format, arguments as JSON text (as a model writes them)."""
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def match(output: Any, expected: Any, **params: Any) -> scorers.Score:
    return scorers.get("ToolCallMatch", **params)(output=output, expected=expected)


# ----------------------------------------------------------------------------------------------- shared vectors
#: (case, expected calls, actual calls, scorer parameters, score)
VECTORS = [
    ("the same call twice, expected twice", [call("f", a=1)] * 2, [call("f", a=1)] * 2, {}, 1.0),
    ("both empty", [], [], {}, 1.0),
    ("no arguments on either side", [call("f")], [call("f")], {}, 1.0),
    ("names differ", [call("f", a=1)], [call("g", a=1)], {}, 0.0),
    ("an extra call, penalised", [call("f", a=1)], [call("f", a=1), call("g")], {}, 2 / 3),
    ("an extra call, ignored", [call("f", a=1)], [call("f", a=1), call("g")], {"extra_calls": "ignore"}, 1.0),
    ("a missing call, penalised", [call("f"), call("g")], [call("f")], {}, 2 / 3),
    ("a missing call, ignored", [call("f"), call("g")], [call("f")], {"extra_calls": "ignore"}, 0.5),
    ("half the arguments, and an extra call", [call("s", q="a", n=3)], [call("s", q="a", n=5), call("t")], {}, 1 / 3),
    (
        "half the arguments, extra ignored",
        [call("s", q="a", n=3)],
        [call("s", q="a", n=5), call("t")],
        {"extra_calls": "ignore"},
        0.5,
    ),
    ("nothing expected, extras penalised", [], [call("f")], {}, 0.0),
    ("nothing expected, extras ignored", [], [call("f")], {"extra_calls": "ignore"}, 1.0),
    ('1 vs "1" under exact', [call("f", x=1)], [call("f", x="1")], {}, 0.0),
    ('1 vs "1" under loose', [call("f", x=1)], [call("f", x="1")], {"arguments": "loose"}, 1.0),
    ("1 vs 1.0 under exact", [call("f", x=1)], [call("f", x=1.0)], {}, 1.0),
    ("true vs 1 under exact", [call("f", x=True)], [call("f", x=1)], {}, 0.0),
    (
        "case and spaces under loose",
        [call("f", c="New York")],
        [call("f", c=" new  york ")],
        {"arguments": "loose"},
        1.0,
    ),
    ("key order does not matter", [call("f", o={"a": 1, "b": 2})], [call("f", o={"b": 2, "a": 1})], {}, 1.0),
    (
        "within a numeric tolerance",
        [call("f", n=10)],
        [call("f", n=12)],
        {"rules": {"f": {"n": {"rule": "numeric", "tolerance": 2}}}},
        1.0,
    ),
    (
        "beyond a numeric tolerance",
        [call("f", n=10)],
        [call("f", n=12)],
        {"rules": {"f": {"n": {"rule": "numeric", "tolerance": 1.5}}}},
        0.0,
    ),
    (
        "a nested path under numeric tolerance",
        [call("book", where={"lat": 48.8566, "lon": 2.3522}, when="today")],
        [call("book", where={"lat": 48.86, "lon": 2.3522}, when="today")],
        {"rules": {"book": {"where.lat": {"rule": "numeric", "tolerance": 0.01}}}},
        1.0,
    ),
    (
        "the same nested values, exactly",
        [call("book", where={"lat": 48.8566, "lon": 2.3522}, when="today")],
        [call("book", where={"lat": 48.86, "lon": 2.3522}, when="today")],
        {},
        0.5,
    ),
    (
        "a nested path ignored",
        [call("book", where={"lat": 1, "id": "x"})],
        [call("book", where={"lat": 1, "id": "y"})],
        {"rules": {"*": {"where.id": "ignore"}}},
        1.0,
    ),
    (
        "a text scorer over the threshold",
        [call("search", q="weather in paris")],
        [call("search", q="weather in pariss")],
        {"rules": {"search": {"q": {"scorer": "Levenshtein", "threshold": 0.9}}}},
        1.0,
    ),
    (
        "a text scorer under the threshold",
        [call("search", q="weather in paris")],
        [call("search", q="weather in london")],
        {"rules": {"search": {"q": {"scorer": "Levenshtein", "threshold": 0.9}}}},
        0.0,
    ),
    (
        "an ignored key is left out of the credit",
        [call("f", q="a", request_id=1)],
        [call("f", q="a", request_id=2)],
        {"rules": {"*": {"request_id": "ignore"}}},
        1.0,
    ),
    ("a tool's arguments all ignored", [call("f", q="a")], [call("f", q="b")], {"rules": {"f": "ignore"}}, 1.0),
    ("superset: actual may add keys", [call("f", a=1)], [call("f", a=1, b=2)], {"arguments": "superset"}, 1.0),
    ("superset: actual may not drop keys", [call("f", a=1, b=2)], [call("f", a=1)], {"arguments": "superset"}, 0.5),
    ("subset: actual may drop keys", [call("f", a=1, b=2)], [call("f", a=1)], {"arguments": "subset"}, 1.0),
    ("subset: actual may not add keys", [call("f", a=1)], [call("f", a=1, b=2)], {"arguments": "subset"}, 0.5),
    ("a permutation, any order", [call("a"), call("b"), call("c")], [call("c"), call("a"), call("b")], {}, 1.0),
    (
        "a permutation, in order: a and b kept",
        [call("a"), call("b"), call("c")],
        [call("c"), call("a"), call("b")],
        {"order": "in_order"},
        2 / 3,
    ),
    (
        "a permutation, exact order",
        [call("a"), call("b"), call("c")],
        [call("c"), call("a"), call("b")],
        {"order": "exact"},
        0.0,
    ),
    ("in order, with an extra call between", [call("a"), call("b")], [call("a"), call("x"), call("b")], {}, 0.8),
    (
        "exact order, as many calls in the same order",
        [call("a", n=1), call("b")],
        [call("a", n=2), call("b")],
        {"order": "exact"},
        0.5,
    ),
    ("exact order, one call more", [call("a"), call("b")], [call("a"), call("b"), call("c")], {"order": "exact"}, 0.0),
]


@pytest.mark.parametrize("case,expected,actual,params,score", VECTORS, ids=[v[0] for v in VECTORS])
def test_tool_call_match_vectors(case, expected, actual, params, score):
    result = match(actual, expected, **params)
    assert result.score == pytest.approx(score, abs=1e-12)
    json.dumps(result.metadata)  # JSON-serialisable
    # the credit of each pair, as the metadata explains it, is the credit the matching used
    rules = ArgumentRules(params.get("arguments", "exact"), params.get("rules"))
    read = scorers.agents.read_tool_calls
    wanted, got = read(expected, scorer="t", field="expected"), read(actual, scorer="t", field="output")
    for pair in result.metadata["pairs"]:
        credit, _ = explain_pair(
            rules.for_tool(pair["name"]), wanted[pair["expected"]].arguments, got[pair["actual"]].arguments
        )
        assert credit == pair["credit"]


@pytest.mark.parametrize("order", ["any", "in_order", "exact"])
def test_the_same_call_twice_expected_twice_scores_1_in_every_order(order):
    calls = [call("get_weather", city="Paris")] * 2
    result = match(calls, calls, order=order)
    assert result.score == 1.0
    assert [(p["expected"], p["actual"]) for p in result.metadata["pairs"]] == [(0, 0), (1, 1)]


# ------------------------------------------------------------------------------------- greedy vs optimal pairing
def greedy_first_fit(expected: list[ToolCall], actual: list[ToolCall], agree) -> int:
    """How many expected calls a greedy matcher pairs: each takes the first unused actual call that agrees
    (openevals' and DeepEval's strategy)."""
    used: set[int] = set()
    for want in expected:
        found = next((j for j, got in enumerate(actual) if j not in used and agree(want, got)), None)
        if found is not None:
            used.add(found)
    return len(used)


def test_a_valid_assignment_a_greedy_matcher_misses_is_found():
    # under superset arguments, f(a=1) agrees with both actual calls; greedy gives it the first one, which
    # f(a=1, b=2) needed: one pair found where two exist
    expected = [call("f", a=1), call("f", a=1, b=2)]
    actual = [call("f", a=1, b=2), call("f", a=1, c=3)]
    rules = ArgumentRules("superset")
    read = scorers.agents.read_tool_calls
    wanted, got = read(expected, scorer="t", field="expected"), read(actual, scorer="t", field="output")

    def agree(want: ToolCall, have: ToolCall) -> bool:
        return (
            want.name == have.name and explain_pair(rules.for_tool(want.name), want.arguments, have.arguments)[0] == 1
        )

    assert greedy_first_fit(list(wanted), list(got), agree) == 1
    assert match(actual, expected, arguments="superset").score == 1.0
    assert (
        scorers.get("TrajectoryMatch", mode="superset", arguments="superset")(output=actual, expected=expected).score
        == 1.0
    )
    pairs = match(actual, expected, arguments="superset").metadata["pairs"]
    assert [(p["expected"], p["actual"]) for p in pairs] == [(0, 1), (1, 0)]


def test_partial_credit_pairs_by_maximum_total_not_first_fit():
    # expected 0 agrees half with either actual call; expected 1 agrees fully with actual 0 only
    expected = [call("s", q="a", n=1), call("s", q="b", n=2)]
    actual = [call("s", q="b", n=2), call("s", q="a", n=9)]
    result = match(actual, expected)
    assert result.score == pytest.approx(2 * 1.5 / 4)
    assert [(p["expected"], p["actual"], p["credit"]) for p in result.metadata["pairs"]] == [(0, 1, 0.5), (1, 0, 1.0)]


# ------------------------------------------------------------------------------------------------------ metadata
def test_the_metadata_says_why_a_score_is_what_it_is():
    expected = [call("search", q="paris", limit=10), call("weather", city="Paris")]
    actual = [call("search", q="Paris", limit=10), call("book", id=3)]
    result = match(actual, expected)
    assert result.score == pytest.approx(2 * 0.5 / 4)
    assert result.metadata["pairs"] == [
        {
            "expected": 0,
            "actual": 0,
            "name": "search",
            "credit": 0.5,
            "arguments": [
                {"path": "q", "rule": "exact", "agree": False, "expected": "paris", "actual": "Paris"},
                {"path": "limit", "rule": "exact", "agree": True, "expected": 10, "actual": 10},
            ],
        }
    ]
    assert result.metadata["unmatched_expected"] == [{"index": 1, "name": "weather", "arguments": {"city": "Paris"}}]
    assert result.metadata["unmatched_actual"] == [{"index": 1, "name": "book", "arguments": {"id": 3}}]


def test_a_verdict_leaves_out_the_side_that_lacks_the_argument():
    result = match([call("f", a=1)], [call("f", b=2)])
    verdicts = result.metadata["pairs"][0]["arguments"]
    assert verdicts == [
        {"path": "b", "rule": "exact", "agree": False, "expected": 2},
        {"path": "a", "rule": "exact", "agree": False, "actual": 1},
    ]


def test_nested_paths_are_explained_one_by_one():
    rules = {"book": {"where.lat": {"rule": "numeric", "tolerance": 0.01}}}
    result = match(
        [call("book", where={"lat": 48.86, "lon": 2.0})],
        [call("book", where={"lat": 48.8566, "lon": 2.35})],
        rules=rules,
    )
    assert [(v["path"], v["rule"], v["agree"]) for v in result.metadata["pairs"][0]["arguments"]] == [
        ("where.lat", "numeric(tolerance=0.01)", True),
        ("where.lon", "exact", False),
    ]
    assert result.score == 0.0  # the top-level key "where" agrees only if everything under it does


def test_exact_order_with_other_lengths_says_why():
    result = match([call("a")], [call("a"), call("b")], order="exact")
    assert result.score == 0.0
    assert "1 made, 2 expected" in result.metadata["reason"]


def test_in_order_keeps_the_heaviest_order_preserving_pairs():
    # in order, either a(x=1) (credit 1) or the two b calls (credit 0.5 each, 1 in all) can be kept; with
    # b's arguments equal, the two b pairs (2) win
    expected = [call("a", x=1), call("b", y=1), call("b", y=2)]
    actual = [call("b", y=1), call("b", y=2), call("a", x=1)]
    result = match(actual, expected, order="in_order")
    assert [(p["expected"], p["actual"]) for p in result.metadata["pairs"]] == [(1, 0), (2, 1)]
    assert result.score == pytest.approx(2 * 2 / 6)


def test_a_500_call_trajectory_scores_and_pairs_every_call():
    rng = random.Random(17)
    names = ["search", "fetch", "calc", "write", "read"]
    expected = [
        call(rng.choice(names), q=rng.choice("abcdefgh"), n=rng.randint(0, 20), opts={"deep": rng.random() < 0.5})
        for _ in range(500)
    ]
    actual = expected[:]
    rng.shuffle(actual)
    for order, score in (("any", 1.0), ("in_order", None), ("exact", None)):
        result = match(actual, expected, order=order, rules={"*": {"n": {"rule": "numeric", "tolerance": 1}}})
        assert score is None or result.score == score
        assert len(result.metadata["pairs"]) == 500 or order != "any"


# ------------------------------------------------------------- fast credit matrix == per-pair explanation
#: Few values, many of them equal under one rule and not another (1, 1.0, "1", true; "a", " A "), so that pairs
#: of calls often agree on some keys and not on others.
JSON_LEAF = st.sampled_from([None, True, 1, 1.0, "1", 2, 2.5, "2.5", "a", " A ", "true"])
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("xy"), inner, max_size=2),
    max_leaves=3,
)
ARGUMENTS = st.dictionaries(st.sampled_from("ab"), JSON_VALUE, max_size=2)
CALL = st.tuples(st.sampled_from("ffg"), ARGUMENTS)
#: One rule of each kind.
RULES = [
    "exact",
    "loose",
    "ignore",
    "subset",
    "superset",
    {"rule": "numeric", "tolerance": 1},
    {"scorer": "Levenshtein", "threshold": 0.5},
]
RULE = st.sampled_from(RULES)
PATH = st.sampled_from(["a", "b", "a.x", "b.y", "*"])


def retyped(value: Any) -> Any:
    """A value equal to ``value`` under ``loose`` only: a number or boolean as text, text with other case and spaces."""
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return f" {value.swapcase()} "
    return value


def changed(item: tuple[tuple[str, dict[str, Any]], str, Any, str]) -> tuple[str, dict[str, Any]]:
    """A call as it is, with one argument retyped, or with one argument set to another value."""
    (name, arguments), key, value, change = item
    if change == "retype" and key in arguments:
        return name, {**arguments, key: retyped(arguments[key])}
    return (name, {**arguments, key: value}) if change == "replace" else (name, arguments)


@settings(
    max_examples=300, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=st.data(), default=RULE, paths=st.dictionaries(PATH, RULE, max_size=2))
def test_the_credit_matrix_equals_each_pairs_explanation(data, default, paths):
    expected = data.draw(st.lists(CALL, max_size=4), label="expected")
    # actual calls: mostly the expected ones, some with one argument changed (often to a value equal under a looser
    # rule), so that pairs agree on some keys and not on others
    changes = st.sampled_from(["keep", "retype", "replace"])
    like_expected = st.tuples(st.sampled_from(expected), st.sampled_from("ab"), JSON_LEAF, changes).map(changed)
    actual = data.draw(st.lists(like_expected | CALL if expected else CALL, max_size=4), label="actual")
    rules = ArgumentRules(default, {"f": paths})
    wanted = [ToolCall(name, freeze(args)) for name, args in expected]
    got = [ToolCall(name, freeze(args)) for name, args in actual]
    for vectorise_from in (0, 10**9):  # the numpy route (a top-level key at a time) and the pair-by-pair one
        with mock.patch.object(matching, "VECTORISE_FROM", vectorise_from):
            matrix = credit_matrix(wanted, got, rules)
        for i, want in enumerate(wanted):
            for j, have in enumerate(got):
                same = want.name == have.name
                credit = explain_pair(rules.for_tool(want.name), want.arguments, have.arguments)[0] if same else 0.0
                assert matrix[i, j] == credit, (vectorise_from, want, have)
    # and no pairing does better than the one chosen
    best = match_calls(wanted, got, rules).total
    for seed in range(20):
        order = random.Random(seed).sample(range(len(got)), len(got))
        assert sum(matrix[i, j] for i, j in zip(range(len(wanted)), order)) <= best + 1e-9


#: Every leaf value, and each retyped, plus a few nested ones: every pair of them compared under each rule.
VALUES = [
    *[None, True, False, 1, 1.0, 2, 2.5, "1", "2.5", "a", " A ", "true", "1.0", "x"],
    *(retyped(v) for v in (True, 1, 2.5, "a")),
    [1, "a"],
    ["1", " A "],
    {"x": 1},
    {"x": "1"},
    {"x": 1, "y": 2},
]


@pytest.mark.parametrize("rule", RULES, ids=str)
@pytest.mark.parametrize("placement", ["default", "path", "parent"])
def test_either_route_gives_every_pair_of_values_the_same_credit(rule, placement):
    rules = {
        "default": ArgumentRules(rule),
        "path": ArgumentRules("exact", {"f": {"a": rule}}),
        "parent": ArgumentRules("exact", {"f": {"a": rule, "a.x": "loose"}}),
    }[placement]
    calls = [ToolCall("f", freeze({"a": value, "b": 1})) for value in VALUES]
    tool = rules.for_tool("f")
    expected = [[explain_pair(tool, e.arguments, a.arguments)[0] for a in calls] for e in calls]
    for vectorise_from in (0, 10**9):
        with mock.patch.object(matching, "VECTORISE_FROM", vectorise_from):
            assert credit_matrix(calls, calls, rules).tolist() == expected


# ------------------------------------------------------------------------------------------------ TrajectoryMatch
def conversation(*turns: Any) -> list[dict[str, Any]]:
    """A conversation in OpenAI's chat format: text is a user (odd turns) or assistant message, a list is an
    assistant message making those calls, each answered by a tool message."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if isinstance(turn, str):
            messages.append({"role": "user" if len(messages) % 2 == 0 else "assistant", "content": turn})
            continue
        calls = [{**c, "id": f"c{len(messages)}_{k}"} for k, c in enumerate(turn)]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    return messages


REFERENCE = conversation(
    "Weather and directions?", [call("get_weather", city="sf"), call("get_directions", to="presidio")]
)

#: (case, mode, actual, expected, score): openevals' documented semantics
TRAJECTORY_VECTORS = [
    ("strict: the same", "strict", REFERENCE, REFERENCE, 1.0),
    (
        "strict: message content is ignored",
        "strict",
        conversation(
            "Something else entirely", [call("get_weather", city="sf"), call("get_directions", to="presidio")]
        ),
        REFERENCE,
        1.0,
    ),
    (
        "strict: calls in another order within the message",
        "strict",
        conversation(
            "Weather and directions?", [call("get_directions", to="presidio"), call("get_weather", city="sf")]
        ),
        REFERENCE,
        1.0,
    ),
    (
        "strict: the same calls split across two messages",
        "strict",
        conversation(
            "Weather and directions?", [call("get_weather", city="sf")], [call("get_directions", to="presidio")]
        ),
        REFERENCE,
        0.0,
    ),
    (
        "strict: other arguments",
        "strict",
        conversation(
            "Weather and directions?", [call("get_weather", city="nyc"), call("get_directions", to="presidio")]
        ),
        REFERENCE,
        0.0,
    ),
    (
        "unordered: split and reordered",
        "unordered",
        conversation("?", [call("b")], [call("a")]),
        [call("a"), call("b")],
        1.0,
    ),
    ("unordered: one extra duplicate", "unordered", [call("a"), call("a"), call("b")], [call("a"), call("b")], 0.0),
    ("unordered: one missing", "unordered", [call("a")], [call("a"), call("b")], 0.0),
    ("superset: extra calls allowed", "superset", [call("a"), call("b"), call("c")], [call("a"), call("b")], 1.0),
    ("superset: a missing call", "superset", [call("a")], [call("a"), call("b")], 0.0),
    (
        "superset: a duplicate expected twice, made once",
        "superset",
        [call("a"), call("b")],
        [call("a"), call("a")],
        0.0,
    ),
    ("subset: fewer calls allowed", "subset", [call("a")], [call("a"), call("b")], 1.0),
    ("subset: an extra call", "subset", [call("a"), call("c")], [call("a"), call("b")], 0.0),
    ("subset: nothing called", "subset", [], [call("a")], 1.0),
]


@pytest.mark.parametrize("case,mode,actual,expected,score", TRAJECTORY_VECTORS, ids=[v[0] for v in TRAJECTORY_VECTORS])
def test_trajectory_match_modes(case, mode, actual, expected, score):
    result = scorers.get("TrajectoryMatch", mode=mode)(output=actual, expected=expected)
    assert result.score == score
    assert (result.metadata["parts_at"] is None) == (score == 1.0)
    json.dumps(result.metadata)


def human(text: str) -> dict[str, Any]:
    return {"type": "human", "content": text}


def ai(text: str = "", *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A LangChain AI message (as ``model_dump`` writes it) making ``calls`` (id, name, args)."""
    return {"type": "ai", "content": text, "tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in calls]}


def tool(text: str, call_id: str) -> dict[str, Any]:
    return {"type": "tool", "content": text, "tool_call_id": call_id}


def test_openevals_documented_examples_score_as_documented():
    """The LangChain agent-testing guide's trajectory match examples (strict, unordered, superset), in LangChain's
    message form: each is documented to pass."""
    weather = ("call_1", "get_weather", {"city": "San Francisco"})
    strict_reference = [
        human("What's the weather in San Francisco?"),
        ai("", weather),
        tool("It's 75 degrees and sunny in San Francisco.", "call_1"),
        ai("The weather in San Francisco is 75 degrees and sunny."),
    ]
    strict_run = [*strict_reference[:3], ai("It is 75 and sunny in San Francisco right now.")]
    assert scorers.get("TrajectoryMatch", mode="strict")(output=strict_run, expected=strict_reference).score == 1.0

    unordered_reference = [
        human("What's happening in SF today?"),
        ai("", ("call_1", "get_events", {"city": "SF"}), ("call_2", "get_weather", {"city": "SF"})),
        tool("Concert at the park in SF tonight.", "call_1"),
        tool("It's 75 degrees and sunny in SF.", "call_2"),
        ai("Today in SF: 75 degrees and sunny with a concert at the park tonight."),
    ]
    unordered_run = [
        human("What's happening in SF today?"),
        ai("", ("a", "get_weather", {"city": "SF"})),
        tool("It's 75 degrees and sunny in SF.", "a"),
        ai("", ("b", "get_events", {"city": "SF"})),
        tool("Concert at the park in SF tonight.", "b"),
        ai("Sunny, and a concert tonight."),
    ]
    unordered = scorers.get("TrajectoryMatch", mode="unordered")
    assert unordered(output=unordered_run, expected=unordered_reference).score == 1.0

    superset_reference = [
        human("Tell me about SF weather"),
        ai("", ("call_1", "get_weather", {"city": "San Francisco"})),
    ]
    superset_run = [
        human("Tell me about SF weather"),
        ai("", ("x", "get_weather", {"city": "San Francisco"}), ("y", "get_events", {"city": "San Francisco"})),
    ]
    superset = scorers.get("TrajectoryMatch", mode="superset")
    assert superset(output=superset_run, expected=superset_reference).score == 1.0  # other tools too: passes
    assert (
        scorers.get("TrajectoryMatch", mode="strict")(output=unordered_run, expected=unordered_reference).score == 0.0
    )


def test_promptfoos_set_variant_equals_its_tool_call_f1():
    """promptfoo's ``tool-call-f1``: P = |A∩E|/|A|, R = |A∩E|/|E| over sets of names; ``multiset=False`` equals it."""
    cases = [
        (["get_weather"], ["get_weather"], 1.0),
        (["get_weather", "get_weather"], ["get_weather"], 1.0),
        (["get_weather", "set_reminder"], ["get_weather"], 2 * 1 * 0.5 / 1.5),
        (["superdoc_search"], ["superdoc_search", "superdoc_edit"], 2 * 1 * 0.5 / 1.5),
        ([], ["get_weather"], 0.0),
    ]
    scorer = scorers.get("ToolCallF1", multiset=False)
    for called, value, f1 in cases:
        assert scorer(output=[call(n) for n in called], expected=value).score == pytest.approx(f1)
        assert scorer(output=[call(n) for n in called], expected=",".join(value)).score == pytest.approx(f1)


def test_trajectory_match_says_where_the_trajectories_part():
    strict = scorers.get("TrajectoryMatch")
    split = conversation(
        "Weather and directions?", [call("get_weather", city="sf")], [call("get_directions", to="presidio")]
    )
    assert strict(output=split, expected=REFERENCE).metadata["parts_at"] == {
        "message": 1,
        "reason": "the message's tool calls differ from the expected ones",
    }
    shorter = REFERENCE[:2]
    assert strict(output=shorter, expected=REFERENCE).metadata["parts_at"]["message"] == 2
    roles = [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"}]
    parted = strict(output=roles, expected=conversation("hi", "hello")).metadata["parts_at"]
    assert parted == {"message": 1, "reason": "the message's role is 'user', expected 'assistant'"}
    superset = scorers.get("TrajectoryMatch", mode="superset")
    result = superset(output=[call("a")], expected=[call("a"), call("b", x=1)])
    assert result.metadata["parts_at"] == {"expected_call": 1, "reason": "no actual call matches it"}
    assert result.metadata["unmatched_expected"] == [{"index": 1, "name": "b", "arguments": {"x": 1}}]


def test_trajectory_match_uses_the_argument_rules():
    loose = scorers.get("TrajectoryMatch", mode="unordered", arguments="loose")
    assert loose(output=[call("f", n="1")], expected=[call("f", n=1)]).score == 1.0
    ignored = scorers.get("TrajectoryMatch", mode="unordered", rules={"f": "ignore"})
    assert ignored(output=[call("f", n=2)], expected=[call("f", n=1)]).score == 1.0
    assert (
        scorers.get("TrajectoryMatch", mode="unordered")(output=[call("f", n="1")], expected=[call("f", n=1)]).score
        == 0.0
    )


@pytest.mark.parametrize(
    "fixture",
    ["openai_responses.json", "anthropic.json", "langchain.json", "langchain_serialised.json", "otel_genai.json"],
)
def test_the_same_conversation_in_each_format_matches_the_openai_chat_one(fixture):
    reference = json.loads((FIXTURES / "openai_chat.json").read_text(encoding="utf-8"))
    other = json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
    assert scorers.get("ToolCallMatch")(output=other, expected=reference).score == 1.0
    assert scorers.get("TrajectoryMatch", mode="unordered")(output=other, expected=reference).score == 1.0
    assert scorers.get("ToolCallF1")(output=other, expected=reference).score == 1.0


# -------------------------------------------------------------------------------------------------- ToolCallValid
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOL_FORMATS = {
    "OpenAI chat": [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}}],
    "Responses": [{"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}],
    "flat": [{"name": "get_weather", "parameters": WEATHER_SCHEMA}],
    "Anthropic": [{"name": "get_weather", "input_schema": WEATHER_SCHEMA}],
}


@pytest.mark.parametrize("tools", TOOL_FORMATS.values(), ids=TOOL_FORMATS.keys())
def test_tool_call_valid_scores_the_share_of_valid_calls(tools):
    calls = [
        call("get_weather", city="Paris", days=2),
        call("get_weather", city="Paris", days=0),
        call("get_weather", days=2),
        call("get_time", tz="UTC"),
    ]
    result = scorers.get("ToolCallValid", tools=tools)(output=calls)
    assert result.score == 0.25
    assert [(i["index"], i["error"]) for i in result.metadata["invalid"]] == [
        (1, "$.days: 0 is less than the minimum of 1"),
        (2, "the arguments: 'city' is a required property"),
        (3, "no tool is named 'get_time' (tools: get_weather)"),
    ]
    assert scorers.get("ToolCallValid")(output=calls, tools=tools).score == 0.25  # the tools in the row
    assert scorers.get("ToolCallValid")(output=calls, tools=json.dumps(tools)).score == 0.25  # as JSON text (CSV)


def test_tool_call_valid_with_no_calls_scores_1():
    assert scorers.get("ToolCallValid", tools=TOOL_FORMATS["flat"])(output=[]).score == 1.0


def test_a_rows_tools_win_over_the_scorers():
    scorer = scorers.get("ToolCallValid", tools=[{"name": "other"}])
    assert scorer(output=[call("get_weather", city="x")], tools=TOOL_FORMATS["flat"]).score == 1.0
    assert scorer(output=[call("get_weather", city="x")]).score == 0.0


def test_an_invalid_schema_is_a_config_error_or_the_rows_input_error():
    bad = [{"name": "f", "parameters": {"type": "objekt"}}]
    with pytest.raises(ConfigError, match="the tool 'f' has an invalid JSON Schema"):
        scorers.get("ToolCallValid", tools=bad)
    with pytest.raises(ScorerInputError, match="ToolCallValid: field 'tools' the tool 'f' has an invalid"):
        scorers.get("ToolCallValid")(output=[call("f")], tools=bad)


def test_a_remote_ref_is_never_fetched():
    tools = [{"name": "f", "parameters": {"$ref": "https://example.invalid/schema.json"}}]
    with pytest.raises(ScorerInputError, match="resolves to nothing"):
        scorers.get("ToolCallValid", tools=tools)(output=[call("f", a=1)])


# ----------------------------------------------------------------------------------------------------- ToolCallF1
@pytest.mark.parametrize(
    "actual,expected,multiset,score",
    [
        (["search", "search"], ["search"], True, 2 / 3),
        (["search", "search"], ["search"], False, 1.0),
        (["search"], ["search", "search"], True, 2 / 3),
        (["search"], ["search", "search"], False, 1.0),
        (["search", "fetch"], ["search", "summarise"], True, 0.5),
        (["search", "fetch"], ["search", "summarise"], False, 0.5),
        ([], [], True, 1.0),
        ([], ["search"], True, 0.0),
    ],
)
def test_tool_call_f1_multiset_and_set(actual, expected, multiset, score):
    result = scorers.get("ToolCallF1", multiset=multiset)(
        output=[call(n) for n in actual], expected=[call(n) for n in expected]
    )
    assert result.score == pytest.approx(score)


def test_tool_call_f1_reads_promptfoos_value_and_explains():
    scorer = scorers.get("ToolCallF1")
    result = scorer(output=[call("search"), call("search"), call("fetch")], expected="search, summarise")
    assert result.score == pytest.approx(2 * 1 / 5)
    assert result.metadata["missing"] == ["summarise"] and result.metadata["extra"] == ["fetch", "search"]
    assert scorer(output=[call("a")], expected=["a"]).score == 1.0
    assert scorer(output=[call("a")], expected='["a"]').score == 1.0


# ------------------------------------------------------------------------------------------- bad rules and values
@pytest.mark.parametrize(
    "params,message",
    [
        ({"arguments": "exactly"}, "arguments: unknown rule 'exactly'"),
        ({"arguments": 3}, "arguments: Input should be a valid dictionary"),
        ({"arguments": {"rule": "numeric", "tolerance": -1}}, "arguments['tolerance']: Input should be greater than"),
        (
            {"arguments": {"rule": "numeric", "tolerance": "1"}},
            "arguments['tolerance']: Input should be a valid number",
        ),
        ({"arguments": {"rule": "exact", "tolerance": 1}}, "arguments['tolerance']: Extra inputs are not permitted"),
        ({"rules": {"f": {"q": {"scorer": "NoSuchScorer", "threshold": 0.5}}}}, "rules['f']['q']: no scorer named"),
        ({"rules": {"f": {"q": {"scorer": "Levenshtein", "threshold": 1.5}}}}, "rules['f']['q']['threshold']"),
        ({"rules": {"f": {"q": {"scorer": "Levenshtein"}}}}, "rules['f']['q']['threshold']: Field required"),
        ({"rules": {"f": {"q": {"scorer": "Factuality", "threshold": 0.5}}}}, "must run locally"),
        ({"rules": ["f"]}, "rules must be a mapping of tool names"),
        ({"rules": {"f": {"a..b": "exact"}}}, "a path is keys joined by dots"),
        ({"order": "random"}, "order must be one of any, in_order, exact"),
        ({"extra_calls": "penalize"}, "extra_calls must be one of penalise, ignore"),
        ({"max_calls": 0}, "max_calls must be a positive integer"),
    ],
)
def test_bad_rules_are_config_errors(params, message):
    with pytest.raises(ConfigError, match="^ToolCallMatch: .*" + _escaped(message)):
        scorers.get("ToolCallMatch", **params)


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


def test_bad_modes_are_config_errors():
    with pytest.raises(ConfigError, match="mode must be one of strict, unordered, subset, superset"):
        scorers.get("TrajectoryMatch", mode="loose")
    with pytest.raises(ConfigError, match="TrajectoryMatch: arguments: unknown rule"):
        scorers.get("TrajectoryMatch", arguments="strict")


@pytest.mark.parametrize(
    "name,row,field,problem",
    [
        ("ToolCallMatch", {"output": "not json", "expected": []}, "output", "is text that is not JSON"),
        ("ToolCallMatch", {"output": [], "expected": [{"name": ""}]}, "expected", "a call with no name"),
        ("ToolCallMatch", {"output": [{"name": "f", "arguments": "{"}], "expected": []}, "output", "not valid JSON"),
        ("ToolCallMatch", {"output": 3, "expected": []}, "output", "must be"),
        ("ToolCallMatch", {"output": [call("a")] * 3, "expected": []}, "output", "more than max_calls=2"),
        ("TrajectoryMatch", {"output": [call("a")], "expected": REFERENCE}, "output", "message 0"),
        ("ToolCallValid", {"output": [call("a")], "tools": "the cat"}, "tools", "is text that is not JSON"),
        ("ToolCallValid", {"output": [call("a")], "tools": [{"parameters": {}}]}, "tools", "tool 0 is not a tool"),
        ("ToolCallValid", {"output": [call("a")]}, "tools", "is required"),
        ("ToolCallF1", {"output": [call("a")], "expected": [{"nom": "a"}]}, "expected", "a call with no name"),
    ],
)
def test_bad_values_are_input_errors_naming_scorer_and_field(name, row, field, problem):
    scorer = scorers.get(name, **({"max_calls": 2} if name == "ToolCallMatch" else {}))
    with pytest.raises(ScorerInputError, match=f"^{name}: field '{field}' .*{_escaped(problem)}") as caught:
        scorer(**row)
    assert caught.value.field == field
    assert isinstance(scorer.score_batch([row])[0], ScorerInputError)


def test_arguments_too_deep_to_compare_are_an_input_error():
    deep: Any = 1
    for _ in range(5_000):
        deep = FrozenDict({"a": deep})
    with pytest.raises(ScorerInputError, match="^ToolCallMatch: field 'output' holds arguments nested too deeply"):
        match([ToolCall("f", deep)], [ToolCall("f", deep)], arguments="loose")


def test_calls_and_conversations_built_in_python_are_read_as_they_are():
    calls = (ToolCall("f", freeze({"a": 1})),)
    conversation_value = scorers.agents.read_conversation(REFERENCE, scorer="t", field="output")
    assert match(calls, [call("f", a=1)]).score == 1.0
    assert match(conversation_value, REFERENCE).score == 1.0
    assert scorers.get("TrajectoryMatch")(output=conversation_value, expected=REFERENCE).score == 1.0


def test_the_signature_records_the_rules_and_the_text_scorers_own_signature():
    scorer = scorers.get("ToolCallMatch", rules={"f": {"q": {"scorer": "Levenshtein", "threshold": 0.9}}})
    signature = scorer.signature()
    rule = signature["rules"]["f"]["q"]
    assert (rule["scorer"], rule["threshold"], rule["signature"]["scorer"]) == ("Levenshtein", 0.9, "Levenshtein")
    assert (signature["arguments"], signature["order"], signature["extra_calls"]) == ("exact", "any", "penalise")


# ------------------------------------------------------------------------------------- NaN, tolerances, strict mode
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("expected", "actual", "params", "score"),
    [
        (NAN, NAN, {}, 1.0),
        (NAN, NAN, {"arguments": "loose"}, 1.0),
        (NAN, NAN, {"arguments": {"rule": "numeric", "tolerance": 1}}, 1.0),
        (NAN, 1, {"arguments": {"rule": "numeric", "tolerance": 1e300}}, 0.0),
        (INF, INF, {"arguments": {"rule": "numeric", "tolerance": 1}}, 1.0),
        (INF, -INF, {}, 0.0),
        (INF, 1e308, {"arguments": {"rule": "numeric", "tolerance": 1e308}}, 0.0),
        ([1, NAN], [1, NAN], {}, 1.0),
    ],
)
def test_nan_agrees_with_nan_and_the_metadata_stays_json(expected, actual, params, score):
    for vectorise_from in (0, 10**9):
        with mock.patch.object(matching, "VECTORISE_FROM", vectorise_from):
            result = match([call("f", x=actual)] * 3, [call("f", x=expected)] * 3, **params)
        assert result.score == score
    text = json.dumps(result.to_dict(), allow_nan=False)  # no bare NaN: what --metadata writes is JSON
    assert '"NaN"' in text or "Infinity" in text


def test_a_results_line_with_nan_arguments_is_json():
    from scorers.io import json_line

    result = match([{"name": "f", "arguments": {"x": NAN}}], [{"name": "f", "arguments": {"x": 1}}])
    line = json_line({"metadata": {"ToolCallMatch": result.metadata}}).decode()
    json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} written into {line}"))
    assert result.metadata["pairs"][0]["arguments"][0]["actual"] == "NaN"


@pytest.mark.parametrize(
    ("expected", "actual", "tolerance", "agree"),
    [
        (0.3, 0.4, 0.1, True),  # 0.4 - 0.3 is 0.10000000000000003 in binary floating point
        (0.4, 0.3, 0.1, True),
        ("0.3", "0.4", 0.1, True),
        (1.1, 1.2, 0.1, True),
        (0.3, 0.41, 0.1, False),
        (0.3, 0.40000000000000002, 0.1, True),  # the same float as 0.4
        (10**30, 10**30 + 5, 5, True),
        (10**30, 10**30 + 6, 5, False),
        (10**400, 1e308, 1e308, False),
        (1e-300, 2e-300, 1e-300, True),
        (1e-300, 2.0000000000000001e-300, 1e-300, True),
        (100, 100.5, 0.5, True),
        (100, 100.50000000000001, 0.5, False),
    ],
)
def test_a_numeric_tolerance_is_exact_for_decimals_as_written(expected, actual, tolerance, agree):
    rule = {"rule": "numeric", "tolerance": tolerance}
    for vectorise_from in (0, 10**9):
        with mock.patch.object(matching, "VECTORISE_FROM", vectorise_from):
            result = match([call("f", x=actual)] * 8, [call("f", x=expected)] * 8, arguments=rule)
        assert result.score == float(agree)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.decimals(min_value=-1000, max_value=1000, places=3),
    st.decimals(min_value=-1000, max_value=1000, places=3),
    st.decimals(min_value=0, max_value=100, places=2),
)
def test_numeric_agrees_exactly_when_the_decimals_differ_by_at_most_the_tolerance(e, a, tolerance):
    rule = {"rule": "numeric", "tolerance": float(tolerance)}
    result = match([call("f", x=float(a))], [call("f", x=float(e))], arguments=rule)
    assert result.score == float(abs(e - a) <= tolerance)


def test_strict_mode_says_it_compares_messages_when_given_bare_calls():
    bare = [call("get_weather", city="sf")]
    with pytest.raises(ScorerInputError) as caught:
        scorers.get("TrajectoryMatch")(output=bare, expected=REFERENCE)
    assert caught.value.field == "output"
    assert caught.value.problem.startswith(
        "is a list of tool calls, not a conversation: mode='strict' (the default) compares messages, each message's "
        "role and its calls, as openevals does; mode='unordered', 'subset' or 'superset' compares bare calls"
    )
    assert scorers.get("TrajectoryMatch", mode="unordered")(output=bare, expected=bare).score == 1.0


# ----------------------------------------------------------------------------- bounds on time and memory
def _outcomes() -> list[tuple[str, Any]]:
    """Each bounded case's score, or its typed error's message (run in one bounded child)."""
    found: list[tuple[str, Any]] = []
    for name, params, row, _ in _bounded_cases():
        try:
            found.append(("score", scorers.get(name, **params)(**row).score))
        except scorers.errors.ScorerError as error:
            found.append((type(error).__name__, str(error)))
    return found


def _distinct_keys(prefix: str, n: int) -> list[dict[str, Any]]:
    return [{"name": "f", "arguments": {f"{prefix}{i}": i}} for i in range(n)]


def _responses(n: int) -> str:
    """``n`` Responses function_call items as JSON text (100,000: 8 MB)."""
    item = {"type": "function_call", "call_id": "call_{:06}", "name": "lookup", "arguments": '{"q": "x"}'}
    return "[" + ", ".join(json.dumps(item).replace("{:06}", f"{i:06}") for i in range(n)) + "]"


def _bounded_cases() -> list[tuple[str, dict[str, Any], dict[str, Any], Any]]:
    """(scorer, parameters, row, the score or the start of the error): rows that took minutes or gigabytes."""
    return [
        # 1,000 calls a side, each with its own argument key (86 KB): 21-40 s on the dense route, a key at a time
        ("ToolCallMatch", {}, {"output": _distinct_keys("a", 1_000), "expected": _distinct_keys("e", 1_000)}, 0.0),
        (
            "ToolCallMatch",
            {"order": "in_order"},
            {"output": _distinct_keys("a", 1_000), "expected": _distinct_keys("a", 1_000)},
            1.0,
        ),
        (
            "TrajectoryMatch",
            {"mode": "unordered"},
            {"output": _distinct_keys("a", 1_000), "expected": _distinct_keys("a", 1_000)},
            1.0,
        ),
        # read until the limit, never whole
        (
            "ToolCallMatch",
            {},
            {"output": _responses(100_000), "expected": []},
            "ToolCallMatch: field 'output' holds 100,000 tool calls, more than max_calls=1,000 (refused while reading): "
            "a bound on time and memory, as pairing compares every expected call with every actual call of the same tool",
        ),
        # linear scorers take any number of calls; order="exact" compares only the pairs at the same position (a
        # matrix of 20,000 x 20,000 credits would be 3 GB)
        (
            "ToolCallMatch",
            {"order": "exact"},
            {"output": _distinct_keys("a", 20_000), "expected": _distinct_keys("a", 20_000)},
            1.0,
        ),
        ("ToolCallF1", {}, {"output": _responses(5_000), "expected": "lookup"}, 2 / 5_001),
        ("ToolCallValid", {"tools": [{"name": "lookup"}]}, {"output": _responses(5_000)}, 1.0),
        # a rule without a canonical form compares each distinct pair of values: within a budget, or refused
        (
            "ToolCallMatch",
            {"arguments": {"rule": "numeric", "tolerance": 1}},
            {
                "output": [{"name": "f", "arguments": {"v": list(range(i, i + 50))}} for i in range(1_000)],
                "expected": [{"name": "f", "arguments": {"v": list(range(i, i + 50))}} for i in range(1_000)],
            },
            "ToolCallMatch: field 'output' would take more than 2,000,000 comparisons of argument values to pair (the "
            "argument 'v' under the rule numeric(tolerance=1.0) alone: 100,000,000, every distinct expected value",
        ),
        (
            "ToolCallMatch",
            {"arguments": {"rule": "numeric", "tolerance": 1}},
            {"output": [call("f", v=i) for i in range(300)], "expected": [call("f", v=i) for i in range(300)]},
            1.0,
        ),
        # a rule path of 20,000 keys (473 MB when each prefix was kept)
        (
            "ToolCallMatch",
            {"rules": {"f": {".".join(["k"] * 20_000): "loose"}}},
            {"output": [call("f", k=1)], "expected": [call("f", k=1)]},
            1.0,
        ),
    ]


@pytest.mark.slow
def test_adversarial_rows_finish_in_bounds_or_are_typed_errors():
    found = run_bounded(_outcomes, timeout_s=120, memory_mb=600)
    for (name, params, _, expected), (kind, value) in zip(_bounded_cases(), found):
        if isinstance(expected, float):
            assert (kind, value) == ("score", expected), (name, params)
        else:
            assert kind == "ScorerInputError" and value.startswith(expected), value


def test_f1_and_valid_have_no_call_limit_and_the_matchers_say_why_they_have_one():
    for name in ("ToolCallF1", "ToolCallValid"):
        assert "max_calls" not in scorers.get(name).signature()
        with pytest.raises(ConfigError, match="max_calls"):
            scorers.get(name, max_calls=10)
    with pytest.raises(
        ScorerInputError, match=r"than max_calls=2 \(refused while reading\): a bound on time and memory"
    ):
        scorers.get("TrajectoryMatch", max_calls=2)(output=REFERENCE * 2, expected=REFERENCE)


# --- MCP calls: a function and an MCP server's tool of one name are different tools (unless tool_kinds="ignore")

#: The same search made as a function call, as an MCP call (Anthropic's block, Responses' item, JSON-RPC), and
#: as an expected MCP call written by hand.
FUNCTION_SEARCH = {"name": "search", "arguments": {"q": "x"}}
MCP_SEARCHES = {
    "anthropic": {"type": "mcp_tool_use", "id": "m1", "name": "search", "server_name": "docs", "input": {"q": "x"}},
    "responses": {"type": "mcp_call", "id": "m1", "name": "search", "arguments": '{"q": "x"}', "server_label": "a"},
    "json-rpc": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"q": "x"}},
    },
    "by-hand": {"type": "mcp_call", "name": "search", "arguments": {"q": "x"}},
}


@pytest.mark.parametrize("order", ["any", "in_order", "exact"])
@pytest.mark.parametrize("shape", MCP_SEARCHES)
def test_an_mcp_call_pairs_only_with_an_mcp_call_of_its_name(shape: str, order: str) -> None:
    mcp = MCP_SEARCHES[shape]
    assert match([mcp], [FUNCTION_SEARCH], order=order).score == 0.0
    assert match([FUNCTION_SEARCH], [mcp], order=order).score == 0.0
    assert match([mcp], [MCP_SEARCHES["by-hand"]], order=order).score == 1.0  # servers are not compared
    assert match([mcp], [FUNCTION_SEARCH], order=order, tool_kinds="ignore").score == 1.0
    both = match([FUNCTION_SEARCH, mcp], [mcp, FUNCTION_SEARCH], order="any")
    assert both.score == 1.0 and [p["name"] for p in both.metadata["pairs"]] == ["search", "search"]


@pytest.mark.parametrize("mode", ["strict", "unordered", "subset", "superset"])
def test_trajectories_tell_mcp_calls_from_function_calls(mode: str) -> None:
    def turn(call: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "?"}, {"role": "assistant", "content": [call]}]

    mcp = MCP_SEARCHES["anthropic"]
    function = {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}}
    trajectory = scorers.get("TrajectoryMatch", mode=mode)
    assert trajectory(output=turn(mcp), expected=turn(mcp)).score == 1.0
    assert trajectory(output=turn(mcp), expected=turn(function)).score == 0.0
    ignoring = scorers.get("TrajectoryMatch", mode=mode, tool_kinds="ignore")
    assert ignoring(output=turn(mcp), expected=turn(function)).score == 1.0


def test_the_rules_of_a_tool_apply_to_its_mcp_calls_and_unmatched_mcp_calls_say_so() -> None:
    loose = match([MCP_SEARCHES["responses"]], [{"type": "mcp_call", "name": "search", "arguments": {"q": " X "}}])
    assert loose.score == 0.0
    rules = {"search": {"q": "loose"}}
    expected = [{"type": "mcp_call", "name": "search", "arguments": {"q": " X "}}]
    assert match([MCP_SEARCHES["responses"]], expected, rules=rules).score == 1.0
    missed = match([MCP_SEARCHES["responses"]], [FUNCTION_SEARCH])
    assert missed.metadata["unmatched_actual"] == [
        {"index": 0, "name": "search", "arguments": {"q": "x"}, "kind": "mcp", "server": "a"}
    ]
    assert missed.metadata["unmatched_expected"] == [{"index": 0, "name": "search", "arguments": {"q": "x"}}]


def test_tool_kinds_signs_only_when_not_the_default() -> None:
    for name in ("ToolCallMatch", "TrajectoryMatch"):
        assert "tool_kinds" not in scorers.get(name).params()
        assert scorers.get(name, tool_kinds="ignore").params()["tool_kinds"] == "ignore"
    with pytest.raises(ConfigError, match="tool_kinds"):
        scorers.get("ToolCallMatch", tool_kinds="same")
