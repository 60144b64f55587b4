"""ToolLoop: hand-computed cases run in every input format the readers take, DeepEval's loop-detection examples
(tests/test_agent_loop_detection.py of confident-ai/deepeval) where they apply, and properties of the search."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scorers
from scorers.agents.loops import find_cycles, find_similar_turns, jaccard, shingles, tokens
from scorers.errors import ConfigError, ScorerInputError

from .in_formats import FORMATS, assistant, in_every_format, tool, trajectory, user


def loop(output: Any, **params: Any) -> scorers.Score:
    return scorers.get("ToolLoop", **params)(output=output)


def found(score: scorers.Score) -> list[tuple[Any, ...]]:
    """Each loop as (kind, start, repeats), with a cycle's period and length."""
    return [
        (x["kind"], x["start"], x["repeats"], *((x["period"], x["length"]) if x["kind"] == "cycle" else ()))
        for x in score.metadata["loops"]
    ]


def bare(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": arguments} for name, arguments in calls]


A, B, C = ("a", {}), ("b", {"k": 1}), ("c", {"k": [1, 2]})
X, Y = ("x", {}), ("y", {})


def named(*names: str) -> list[tuple[str, dict[str, Any]]]:
    return [(name, {}) for name in names]


# ----------------------------------------------------------------------------------------------- shared vectors
#: (case, calls, parameters, loops as (kind, start, repeats[, period, length])); each in every format.
CALL_VECTORS = [
    ("no calls", [], {}, []),
    ("distinct calls", [A, B, C], {}, []),
    ("the same call twice, within max_repeats=2", [B, B], {}, []),
    ("the same call three times", [B, B, B], {}, [("repeated_call", 0, 3)]),
    ("the same call three times, not in a row", [B, A, B, C, B], {}, [("repeated_call", 0, 3)]),
    ("the same tool, other arguments", [("f", {"n": 1}), ("f", {"n": 2}), ("f", {"n": 3})], {}, []),
    ("1 and 1.0 agree exactly", [("f", {"n": 1}), ("f", {"n": 1.0}), ("f", {"n": 1})], {}, [("repeated_call", 0, 3)]),
    (
        "key order does not matter",
        [("f", {"a": 1, "b": 2}), ("f", {"b": 2, "a": 1})] * 2,
        {},
        [("repeated_call", 0, 4)],
    ),
    (
        "a block of two three times: both calls repeated, and the cycle",
        [A, B] * 3,
        {},
        [("repeated_call", 0, 3), ("repeated_call", 1, 3), ("cycle", 0, 3, 2, 6)],
    ),
    ("a block of two three times, calls may repeat", [A, B] * 3, {"max_repeats": 5}, [("cycle", 0, 3, 2, 6)]),
    ("a block of two twice and a half", [A, B, A, B, A], {"max_repeats": 5}, []),
    (
        "a block of two twice and a half, max_cycles=1",
        [A, B, A, B, A],
        {"max_repeats": 5, "max_cycles": 1},
        [("cycle", 0, 2, 2, 5)],
    ),
    (
        "a block of three after a start, three times",
        [X, *[A, B, C] * 3, Y],
        {"max_repeats": 5},
        [("cycle", 1, 3, 3, 9)],
    ),
    (
        "a block of four with a call twice in it (a a b b)",
        [A, A, B, B] * 3,
        {"max_repeats": 10},
        [("cycle", 0, 3, 4, 12)],
    ),
    (
        "a b six times is one cycle of period 2, not also one of period 4",
        [A, B] * 6,
        {"max_repeats": 10},
        [("cycle", 0, 6, 2, 12)],
    ),
    ("a block longer than max_period", [*named("p", "q", "r")] * 3, {"max_repeats": 5, "max_period": 2}, []),
    (
        "case and spaces agree under loose",
        [("search", {"q": "Paris"}), ("search", {"q": " paris"}), ("search", {"q": "PARIS "})],
        {"arguments": "loose"},
        [("repeated_call", 0, 3)],
    ),
    (
        "case and spaces differ under exact",
        [("search", {"q": "Paris"}), ("search", {"q": " paris"}), ("search", {"q": "PARIS "})],
        {},
        [],
    ),
    (
        "an ignored request id",
        [("f", {"q": 1, "id": "r1"}), ("f", {"q": 1, "id": "r2"}), ("f", {"q": 1, "id": "r3"})],
        {"rules": {"*": {"id": "ignore"}}},
        [("repeated_call", 0, 3)],
    ),
    (
        "a numeric tolerance compares with the first call of the kind",  # 11 is within 1 of 10; 12 is not
        [("f", {"n": 10}), ("f", {"n": 11}), ("f", {"n": 12})],
        {"max_repeats": 1, "rules": {"f": {"n": {"rule": "numeric", "tolerance": 1}}}},
        [("repeated_call", 0, 2)],
    ),
    # DeepEval's examples (test_agent_loop_detection.py): its repetition_threshold=3 flags 3 calls, max_repeats=2
    (
        "DeepEval: a clean trace",
        [
            ("search_web", {"query": "Paris weather"}),
            ("get_forecast", {"city": "Paris"}),
            ("summarize", {"text": "It is sunny"}),
        ],
        {},
        [],
    ),
    ("DeepEval: four identical calls", [("search_web", {"query": "Paris weather"})] * 4, {}, [("repeated_call", 0, 4)]),
    (
        "DeepEval: the repetition check off (a bound above the calls)",
        [("search_web", {"query": "q"})] * 4,
        {"max_repeats": 4},
        [],
    ),
    (
        "DeepEval: the same name again with other arguments is no loop",
        [("search_web", {"q": "foo"}), ("other_tool", {"x": "bar"}), ("search_web", {"q": "baz"})],
        {"max_repeats": 1},
        [],
    ),
]


@pytest.mark.parametrize("form", [*FORMATS, "bare calls"])
@pytest.mark.parametrize(("case", "calls", "params", "loops"), CALL_VECTORS, ids=[v[0] for v in CALL_VECTORS])
def test_call_loops_in_every_format(case, calls, params, loops, form):
    value = bare(calls) if form == "bare calls" else in_every_format(trajectory(*calls))[form]
    score = loop(value, **params)
    assert found(score) == loops
    assert score.score == (0.0 if loops else 1.0)
    assert score.metadata["calls"] == len(calls)
    assert score.metadata["turns_checked"] is (form != "bare calls" or not calls)  # [] is an empty conversation
    assert json.loads(json.dumps(score.metadata)) == score.metadata


LONG = "I will search the catalogue for the requested part number and report back"  # 14 words
REWORDED = "I will search the catalogue for the part number requested and report back"  # the same 14 words
#: DeepEval's stagnation texts (its tests 4 and 10), reworded here: 36 and 39 words
STAGNANT = (
    "To answer this I must look up the train times from Lyon to Geneva for tomorrow morning. I will query the "
    "timetable tool with both stations and the date, then list the departures for the user."
)
SHUFFLED_A = (
    "I need to check the current opening hours of the city museum using the lookup tool. After reading the "
    "result I will summarise it clearly for the visitor. The museum hours lookup will let me answer fully."
)
SHUFFLED_B = (
    "Let me check the current opening hours of the city museum with the lookup tool. After I read the result "
    "I will clearly summarise it for the visitor. The lookup of museum hours will let me fully answer."
)

#: (case, the assistant turns' texts (one per call, then the answer), parameters, loops); turns are messages
#: 1, 3, 5, ... of the conversation (a user message first, a tool result after each call)
TURN_VECTORS = [
    ("identical turns in a row", [LONG, LONG, "Here it is."], {}, [("similar_turns", 1, 2)]),
    ("the same words reordered (sets of words)", [LONG, REWORDED, "Done."], {}, [("similar_turns", 1, 2)]),
    ("the same words reordered, as word pairs", [LONG, REWORDED, "Done."], {"ngram": 2}, []),
    (
        "case and punctuation are not tokens",
        ["Searching the WEB for Paris weather.", "searching the web, for paris weather!", "ok"],
        {},
        [("similar_turns", 1, 2)],
    ),
    ("short turns are not compared", ["Let me check.", "Let me check.", "Done."], {}, []),
    (
        "short turns, min_tokens=1",
        ["Let me check.", "Let me check.", "Done."],
        {"min_tokens": 1},
        [("similar_turns", 1, 2)],
    ),
    ("different turns", [LONG, "The part is in stock at the Lyon depot today", "ok"], {}, []),
    (
        "three in a row, max_turn_repeats=2",
        [LONG, LONG, LONG, "Done."],
        {"max_turn_repeats": 2},
        [("similar_turns", 1, 3)],
    ),
    ("three in a row, max_turn_repeats=3", [LONG, LONG, LONG, "Done."], {"max_turn_repeats": 3}, []),
    ("a turn without text between does not break the run", [LONG, None, LONG, "Done."], {}, [("similar_turns", 1, 2)]),
    ("a short turn between breaks the run", [LONG, "Wait.", LONG, "Done."], {}, []),
    ("Jaccard 4/6 under 0.9", ["a b c d e", "a b c d f", "z"], {"min_tokens": 1}, []),
    (
        "Jaccard 4/6 at 0.6",
        ["a b c d e", "a b c d f", "z"],
        {"min_tokens": 1, "similarity": 0.6},
        [("similar_turns", 1, 2)],
    ),
    (
        "Jaccard of pairs 3/5 at 0.6",
        ["a b c d e", "a b c d f", "z"],
        {"min_tokens": 1, "similarity": 0.6, "ngram": 2},
        [("similar_turns", 1, 2)],
    ),
    (
        "text without spaces is one word",
        ["东京明天的天气怎么样我来查一下", "东京明天的天气怎么样我来查一下", "好"],
        {},
        [],
    ),
    (
        "text without spaces, by characters",
        ["东京明天的天气怎么样我来查一下", "东京明天的天气怎么样我来查一下", "好"],
        {"tokens": "characters"},
        [("similar_turns", 1, 2)],
    ),
    # DeepEval's stagnation examples, at its similarity_threshold=0.75; our default 0.9 does not flag a rewording
    (
        "DeepEval: three identical long turns",
        [STAGNANT] * 3 + ["Done."],
        {"similarity": 0.75},
        [("similar_turns", 1, 3)],
    ),
    (
        "DeepEval: a reworded turn at 0.75",
        [SHUFFLED_A, SHUFFLED_B, "Done."],
        {"similarity": 0.75},
        [("similar_turns", 1, 2)],
    ),
    ("DeepEval: a reworded turn at the default 0.9", [SHUFFLED_A, SHUFFLED_B, "Done."], {}, []),
]


@pytest.mark.parametrize("form", FORMATS)
@pytest.mark.parametrize(("case", "texts", "params", "loops"), TURN_VECTORS, ids=[v[0] for v in TURN_VECTORS])
def test_near_identical_turns_in_every_format(case, texts, params, loops, form):
    calls = [(f"tool_{i}", {}) for i in range(len(texts) - 1)]  # distinct calls: only turns can loop
    chat = trajectory(*calls, texts=texts)
    score = loop(in_every_format(chat)[form], **params)
    assert found(score) == loops
    assert score.score == (0.0 if loops else 1.0)


def test_jaccard_values_as_computed_by_hand():
    a, b = tokens("a b c d e"), tokens("a b c d f")
    assert jaccard(shingles(a, 1), shingles(b, 1)) == 4 / 6
    assert jaccard(shingles(a, 2), shingles(b, 2)) == 3 / 5
    assert jaccard(shingles(tokens(SHUFFLED_A), 1), shingles(tokens(SHUFFLED_B), 1)) == pytest.approx(0.8, abs=0.1)
    assert shingles(["x"], 3) == frozenset({("x",)})


def test_the_metadata_names_each_loop_and_where_it_starts():
    chat = [
        user("Find the part."),
        assistant(LONG, ("c1", "lookup", {"part": "A-1"})),
        tool("c1", "not found"),
        assistant(LONG, ("c2", "lookup", {"part": "A-1"})),
        tool("c2", "not found"),
        assistant(None, ("c3", "lookup", {"part": "A-1"})),
        tool("c3", "not found"),
    ]
    score = loop(chat)
    assert score.score == 0.0
    repeated, turns = score.metadata["loops"]
    assert repeated == {
        "kind": "repeated_call",
        "start": 0,
        "repeats": 3,
        "name": "lookup",
        "arguments": {"part": "A-1"},
        "calls": [0, 1, 2],
    }
    assert turns == {"kind": "similar_turns", "start": 1, "repeats": 2, "messages": [1, 3], "similarity": 1.0}
    assert score.metadata["reason"] == "the call 'lookup' is made 3 times with the same arguments (calls [0, 1, 2])"
    cycle = loop(bare([A, B] * 3), max_repeats=5)
    assert cycle.metadata["loops"][0]["block"] == [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": 1}}]
    assert cycle.metadata["reason"] == "the calls a -> b repeat 3 times in a row from call 0"


def test_no_stop_words_are_built_in():
    # every word counts, in any language: two turns that share only English function words are not alike
    assert tokens("The the of and is a") == ["the", "the", "of", "and", "is", "a"]
    assert jaccard(shingles(tokens("the cat is on the mat"), 1), shingles(tokens("the dog is on the rug"), 1)) == 3 / 7


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_repeats": 0}, "max_repeats must be a positive integer"),
        ({"max_period": 1}, "max_period must be an integer >= 2"),
        ({"similarity": 0}, "similarity must be a number in (0, 1]"),
        ({"tokens": "bytes"}, "tokens must be one of words, characters"),
        ({"arguments": "exactly"}, "arguments: unknown rule 'exactly'"),
    ],
)
def test_bad_settings_are_config_errors(params, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[").replace("]", r"\]")):
        scorers.get("ToolLoop", **params)


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ("{not json", "is text that is not JSON"),
        ([{"role": "robot", "content": "hi"}], "unknown role 'robot'"),
        (3, "must be list or tuple or dict or str or Conversation"),
    ],
)
def test_bad_rows_are_input_errors_naming_the_field(output, problem):
    with pytest.raises(ScorerInputError, match="ToolLoop: field 'output'") as caught:
        loop(output)
    assert problem in str(caught.value)


# ------------------------------------------------------------------------------------------------- properties
def brute_cycles(kinds: list[int], max_cycles: int, max_period: int) -> set[tuple[int, int]]:
    """Every (start, period) where a block no shorter block repeats is repeated back to back more than
    ``max_cycles`` times, by trying each start and period."""
    out = set()
    for period in range(2, max_period + 1):
        for start in range(len(kinds)):
            block = kinds[start : start + period]
            if len(block) < period or any(period % d == 0 and block == block[d:] + block[:d] for d in range(1, period)):
                continue
            repeats = 1
            while kinds[start + repeats * period : start + (repeats + 1) * period] == block:
                repeats += 1
            if repeats > max_cycles:
                out.add((start, period))
    return out


KINDS = st.lists(st.integers(0, 2), max_size=24)


@settings(max_examples=300, deadline=None)
@given(KINDS, st.integers(1, 3), st.integers(2, 5))
def test_every_cycle_a_brute_force_finds_lies_in_a_reported_stretch(kinds, max_cycles, max_period):
    reported = find_cycles(kinds, max_cycles, max_period)
    for start, period, repeats, length in reported:
        assert repeats == length // period > max_cycles
        assert all(kinds[i] == kinds[i + period] for i in range(start, start + length - period))
        assert start == 0 or kinds[start - 1] != kinds[start - 1 + period]  # maximal on the left
        after = start + length
        assert after >= len(kinds) or kinds[after] != kinds[after - period]  # and on the right
    for start, period in brute_cycles(kinds, max_cycles, max_period):
        assert any(p == period and s <= start < s + n for s, p, _, n in reported)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([A, B, C, X]), max_size=20), st.integers(0, 20), st.integers(1, 3))
def test_a_loop_found_in_a_prefix_is_found_in_the_whole(calls, cut, max_repeats):
    prefix = loop(bare(calls[:cut]), max_repeats=max_repeats)
    whole = loop(bare(calls), max_repeats=max_repeats)
    if prefix.score == 0.0:
        assert whole.score == 0.0
        kinds = {(x["kind"], x.get("name")) for x in whole.metadata["loops"]}
        assert {(x["kind"], x.get("name")) for x in prefix.metadata["loops"]} <= kinds


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.frozensets(st.integers(0, 4), min_size=1)), max_size=12), st.floats(0.1, 1))
def test_similar_turns_runs_hold_each_pair_at_the_threshold(shingled, similarity):
    turns = list(enumerate(shingled))
    for run, least in find_similar_turns(turns, similarity, 1):
        pairs = [jaccard(shingled[a], shingled[b]) for a, b in zip(run, run[1:])]
        assert all(value >= similarity for value in pairs) and least == min(pairs)
