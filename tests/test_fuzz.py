"""Random JSON in every field of every registered offline scorer: only Scores and ScorerErrors, each call bounded.

Hypothesis draws a row per example: random JSON values (and JSON text, tool calls in the shapes the agent readers
take, tool lists and JSON Schemas holding patterns) in each of the scorer's fields, under each of a few settings per
scorer. Every row is scored by a child process (``tests/bounded.py``), called and batched; the row's outcome must be
a :class:`~scorers.score.Score` in [0, 1] (or None) or a :class:`~scorers.errors.ScorerError`. A row that takes
longer than :data:`CALL_BOUND_S` or more than :data:`CALL_MEMORY_MB` of memory fails the test (the child is killed),
so a hang or a blow-up shows as the row that caused it, never as a stuck suite.

The judges are left out (each row would be a request to an endpoint). The embedding scorers run, on a tenth as
many rows (a model's forward pass each), when their model is on the machine (they never download here). The whole
module takes about a minute of CPU (on a loaded 2-core machine: 50 s of user time, 161 s of wall time).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import pytest
from bounded import BoundedWorker
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import scorers
from scorers.errors import ConfigError, MissingExtraError, ScorerError
from scorers.registry import registry
from scorers.score import Score

pytestmark = pytest.mark.slow  # each scorer setting's rows run in a child process (30 s of CPU in all)

#: The most seconds one row may take, called and batched: far above any bounded scorer's cost (RegexMatch: its
#: 1 s timeout; TER: about 8 s at its step budget), so only a hang or an unbounded cost reaches it.
CALL_BOUND_S = 60
#: The most memory one row may add to the child, in MiB.
CALL_MEMORY_MB = 1024
#: Rows per scorer setting (the environment variable SCORERS_FUZZ_EXAMPLES sets another number, for a longer run).
EXAMPLES = int(os.environ.get("SCORERS_FUZZ_EXAMPLES", "120"))
#: Rows for the embedding scorers: a model's forward pass per row, and their fields are text (a tenth as many).
MODEL_EXAMPLES = max(1, EXAMPLES // 10)

#: Settings besides the defaults, per scorer: the modes that take other code paths.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "ExactMatch": [{"ignore_case": True, "strip": True}],
    "Levenshtein": [{"normalize": "NFKC"}],
    "JSONDiff": [{"preserve_strings": True}, {"string_scorer": "ExactMatch"}],
    "ListContains": [{"allow_extra_entities": True, "pairwise_scorer": "JSONDiff"}],
    "Contains": [{"mode": "all", "ignore_case": True}],
    "RegexMatch": [{"full": True, "ignore_case": True}],
    "BLEU": [{"tokenize": "char", "smooth_method": "floor"}],
    "chrF": [{"whitespace": True, "eps_smoothing": True}],
    "TER": [{"normalized": True, "no_punct": True, "asian_support": True}],
    "ROUGE": [{"use_stemmer": True, "tokenizer": "unicode"}],
    "ToolCallF1": [{"multiset": False}],
    "ToolLoop": [
        {"max_repeats": 1, "tokens": "characters", "ngram": 3, "min_tokens": 1, "rules": {"*": {"n": "numeric"}}}
    ],
    "ToolPermission": [
        {
            "allow": ["s*", "[a-f]?"],
            "deny": ["*x*"],
            "constraints": [{"argument": "a", "prefix": "/a"}, {"argument": "u", "hosts": "h"}],
        }
    ],
    "ToolCallMatch": [
        {"arguments": "loose", "order": "in_order", "extra_calls": "ignore"},
        {"arguments": "ignore", "order": "exact"},
        {"rules": {"*": {"id": "ignore", "n": "numeric"}, "search": {"q": "loose"}}},
    ],
    "TrajectoryMatch": [{"mode": "unordered"}, {"mode": "subset", "arguments": "loose"}, {"mode": "superset"}],
    "StepBudget": [{"max_steps": 2, "max_tool_calls": 3, "hard_limits": {"steps": 4}}],
    "TokenBudget": [
        {"max_total_tokens": 100, "max_cost": 0.01, "prices": {"input": 1, "output": 2, "cache_read": 0.5}}
    ],
}


#: Scorers left out, and why.
NOT_FUZZED = {
    "CodeExecution": "each test in a row is a sandboxed process (thousands here); tests/code fuzzes its inputs' checks",
}


def offline_scorers() -> list[Any]:
    """``(name, settings)`` for every registered scorer that needs no judge, at its defaults and its variants."""
    cases = []
    for name in scorers.names():
        if registry.entry(name).kind == "llm" or name in NOT_FUZZED:
            continue
        for params in [{}, *VARIANTS.get(name, [])]:
            label = json.dumps(params, separators=(",", ":")) if params else "defaults"
            cases.append(pytest.param(name, params, id=f"{name}-{label}"))
    return cases


# ------------------------------------------------------------------------------------------------ the values
def choose(*strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """One of ``strategies``, each as likely (``st.one_of`` flattens nested choices, so the widest one would win)."""
    return st.sampled_from(strategies).flatmap(lambda strategy: strategy)


#: Few distinct names and keys, so that outputs and expectations often share them and the comparisons run.
_NAME_POOL = st.sampled_from(["search", "book"])
NAMES = st.one_of(_NAME_POOL, _NAME_POOL, _NAME_POOL, st.text(max_size=6))
_KEY_POOL = st.sampled_from(["q", "n", "id", ""])
KEYS = st.one_of(_KEY_POOL, _KEY_POOL, _KEY_POOL, st.text(max_size=4))
#: Text of every kind: any code point, and characters that make patterns, JSON and line breaks.
TEXT = st.text(max_size=30) | st.text(st.sampled_from("ab \n\u2028(){}[]*+?|.^$\\\"':,0123456789\ud800"), max_size=40)
NUMBERS = (
    st.integers() | st.floats() | st.sampled_from([10**400, -(10**309), 1e308, 5e-324, math.nan, math.inf, 0.1, 0.3])
)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT | KEYS, children, max_size=4),
    max_leaves=12,
)
ARGUMENTS = choose(st.dictionaries(KEYS, choose(NUMBERS, TEXT, JSON), max_size=4), JSON)


def as_json_text(value: Any) -> str:
    return json.dumps(value)  # NaN and infinities as JavaScript writes them, lone surrogates escaped


ARGUMENT_TEXT = ARGUMENTS.map(as_json_text) | TEXT
_ID_POOL = st.sampled_from(["call_1", "call_2"])
IDS = choose(_ID_POOL, _ID_POOL, _ID_POOL, TEXT, NUMBERS)
#: Tool calls as each reader takes them: bare, OpenAI chat, Anthropic, the Responses API, and messages.
CALL = st.one_of(
    st.fixed_dictionaries({"name": NAMES, "arguments": ARGUMENTS | ARGUMENT_TEXT}),
    st.fixed_dictionaries(
        {
            "id": IDS,
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": NAMES, "arguments": ARGUMENT_TEXT}),
        }
    ),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": IDS, "name": NAMES, "input": ARGUMENTS}),
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": IDS, "name": NAMES, "arguments": ARGUMENT_TEXT}
    ),
)
MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": TEXT | st.none(), "tool_calls": st.lists(CALL, max_size=3)}
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": IDS, "content": TEXT | JSON}),
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant", ""]), "content": TEXT | JSON}),
)
SCHEMA = st.recursive(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "object", "array", "boolean", "null"])},
        optional={
            "pattern": TEXT,
            "minimum": NUMBERS,
            "multipleOf": NUMBERS,
            "enum": st.lists(JSON, max_size=3),
            "maxLength": st.integers(-1, 10),
            "uniqueItems": st.booleans(),
            "format": st.sampled_from(["date", "email", "uri", "regex"]),
        },
    )
    | st.booleans(),
    lambda children: (
        st.fixed_dictionaries(
            {"type": st.just("object"), "properties": st.dictionaries(KEYS, children, max_size=3)},
            optional={"required": st.lists(KEYS, max_size=2), "additionalProperties": children},
        )
        | st.fixed_dictionaries({"anyOf": st.lists(children, max_size=3)})
        | st.fixed_dictionaries({"items": children})
    ),
    max_leaves=6,
)
#: A tool's parameters: a JSON Schema, or any other value.
PARAMETERS = choose(SCHEMA, SCHEMA, NUMBERS, TEXT, JSON)
TOOLS = st.lists(
    st.fixed_dictionaries(
        {"type": st.just("function"), "function": st.fixed_dictionaries({"name": NAMES, "parameters": PARAMETERS})}
    )
    | st.fixed_dictionaries({"name": NAMES, "input_schema": PARAMETERS}),
    max_size=3,
)
SHAPED = choose(
    st.lists(CALL, max_size=4),
    st.lists(MESSAGE, max_size=4),
    CALL,
    TOOLS,
    SCHEMA,
    st.lists(CALL, max_size=4).map(as_json_text),
    st.lists(TEXT, max_size=4),
)
#: One field's value: random JSON, the JSON text of it, plain text, or one of the shapes above.
VALUE = choose(JSON, JSON.map(as_json_text), TEXT, SHAPED)
#: Fields that read a shape get it more often (and random values as often as the others).
_TOOLS = TOOLS.filter(bool)
FIELD_VALUE = {"tools": choose(_TOOLS, _TOOLS, VALUE), "schema": choose(SCHEMA, SCHEMA, VALUE)}
#: The agent scorers' output and expected: tool calls and messages more often.
_CALLS = st.lists(CALL, min_size=1, max_size=4)
CALLS_VALUE = choose(_CALLS, _CALLS, _CALLS.map(as_json_text), st.lists(MESSAGE, min_size=1, max_size=4), VALUE)


def field_value(name: str, field: str) -> st.SearchStrategy[Any]:
    if field in FIELD_VALUE:
        return FIELD_VALUE[field]
    cls = registry.entry(name).scorer_class
    return CALLS_VALUE if cls is not None and cls.__module__.startswith("scorers.agents") else VALUE


# ------------------------------------------------------------------------------------------------ the child's side
_BUILT: dict[str, scorers.Scorer] = {}


def _scorer(name: str, params: dict[str, Any]) -> scorers.Scorer:
    key = f"{name} {sorted(params.items())!r}"
    if key not in _BUILT:
        _BUILT[key] = scorers.get(name, **params)
    return _BUILT[key]


def prepare(name: str, params: dict[str, Any]) -> list[str]:
    """Build the scorer in the child (a model loads here, outside the per-row limits); its fields."""
    scorer = _scorer(name, params)
    try:
        scorer(**{f.name: "warm up" for f in scorer.fields if f.required})
    except ScorerError:  # a field that takes no text: built all the same
        pass
    return [f.name for f in scorer.fields]


def outcome(name: str, params: dict[str, Any], row: dict[str, Any]) -> str | None:
    """None when the scorer gives a Score in [0, 1] or a ScorerError for ``row``, called and batched; else what
    came out instead."""
    scorer = _scorer(name, params)
    for path in ("call", "batch"):
        try:
            result = scorer(**row) if path == "call" else scorer.score_batch([row])[0]
        except ScorerError:
            continue
        except Exception as exc:  # what the test looks for
            return f"{path}: {type(exc).__name__}: {str(exc)[:300]}"
        if isinstance(result, ScorerError):
            continue
        if not isinstance(result, Score):
            return f"{path}: returned {type(result).__name__}"
        if result.score is not None and not (math.isfinite(result.score) and 0.0 <= result.score <= 1.0):
            return f"{path}: score {result.score!r} outside [0, 1]"
    return None


# ------------------------------------------------------------------------------------------------ the test
@pytest.fixture(scope="module")
def worker():
    with BoundedWorker() as child:
        yield child


@pytest.mark.parametrize("name,params", offline_scorers())
def test_random_json_in_every_field_gives_a_score_or_a_scorer_error_within_bounds(worker, name, params):
    try:
        fields = worker.call(prepare, name, params, timeout_s=600, memory_mb=None)
    except MissingExtraError as exc:
        pytest.skip(str(exc))
    except ConfigError as exc:  # a model that is not on this machine
        if registry.entry(name).kind != "embedding":
            raise
        pytest.skip(str(exc))

    @settings(
        max_examples=MODEL_EXAMPLES if registry.entry(name).kind == "embedding" else EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(row=st.fixed_dictionaries({field: field_value(name, field) for field in fields}))
    def fuzz(row: dict[str, Any]) -> None:
        problem = worker.call(outcome, name, params, row, timeout_s=CALL_BOUND_S, memory_mb=CALL_MEMORY_MB)
        assert problem is None, f"{name}({params}) on {row!r}: {problem}"

    fuzz()
