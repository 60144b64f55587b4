"""Our scorers and judges inside a real ``braintrust.Eval``, run locally (``no_send_logs=True``), offline."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import scorers
from scorers import Scorer, UnknownArgumentError, text_field
from scorers.adapters.braintrust import DROPPED, scorer
from scorers.adapters.braintrust import scorers as bt_scorers
from scorers.agents.tool_calls import TrajectoryMatch
from scorers.testing import LoopbackLLM, Reply

from . import OnlyCapitals

braintrust = pytest.importorskip("braintrust")

ROWS = [
    {"input": "Capital of France?", "expected": "Paris"},
    {"input": "Capital of Italy?", "expected": "Rome"},
    {"input": "Largest planet?", "expected": "Jupiter"},
    {"input": "Author of Hamlet?", "expected": "William Shakespeare"},
]
ANSWERS = {
    "Capital of France?": "Paris",
    "Capital of Italy?": "Milan",
    "Largest planet?": "jupiter",
    "Author of Hamlet?": "Shakespeare",
}


def task(input: str) -> str:
    return ANSWERS[input]


def run_eval(scores: list, data: list[dict] | None = None) -> "braintrust.framework.EvalResultWithSummary":
    return braintrust.Eval(
        "scorers-adapter-test", data=lambda: list(data or ROWS), task=task, scores=scores, no_send_logs=True
    )


def test_braintrust_passes_exactly_these_extra_keywords() -> None:
    """What the wrapper drops is what Eval adds: the keywords it passes, recorded by a scorer that takes them all."""
    seen: list[set[str]] = []

    def record(**kwargs):
        seen.append(set(kwargs))
        return 1.0

    run_eval([record], ROWS[:1])
    assert seen == [{"input", "output", "expected", "metadata"} | DROPPED]


def test_summary_equals_ours(llm_env: LoopbackLLM) -> None:
    llm_env.script(Reply.choice("D", reasons="Milan is not Rome."), match="Milan")
    llm_env.script(Reply.choice("A", reasons="Leaves out the first name."), match="William")
    llm_env.default = Reply.choice("C", reasons="Same facts.")

    result = run_eval(bt_scorers("ExactMatch", "Levenshtein", "Factuality"))

    assert [r.error for r in result.results] == [None] * len(ROWS)
    assert [r.metadata.get("scorer_errors") for r in result.results] == [None] * len(ROWS)
    run = scorers.evaluate(
        [{**row, "output": task(row["input"])} for row in ROWS], ["ExactMatch", "Levenshtein", "Factuality"]
    )
    ours = run.collect()
    for bt_row, our_row in zip(result.results, ours):
        assert bt_row.scores == our_row.scores
    assert [r.scores["Factuality"] for r in result.results] == [1.0, 0.0, 1.0, 0.4]
    summary = {name: s.score for name, s in result.summary.scores.items()}
    figures = run.summary.to_dict()["scorers"]
    assert summary == pytest.approx({name: figures[name]["mean"] for name in summary})
    assert set(summary) == {"ExactMatch", "Levenshtein", "Factuality"}
    assert summary["ExactMatch"] == 0.25 and summary["Factuality"] == pytest.approx(0.6)
    # the judge went over real HTTP to the loopback server, once per row
    assert len(llm_env.chat_requests) == len(ROWS)  # ours came from the judge cache


def test_metadata_and_partial_fields_reach_the_scorer() -> None:
    class Echo(Scorer):
        """1 if the row's metadata names the output; reads a judge-style extra field bound with partial."""

        fields = (text_field("output"), text_field("topic"))

        def _score(self, *, output, topic, metadata):
            return self.make_score(float(metadata.get("answer") == output), topic=topic)

    data = [
        {"input": "Capital of France?", "expected": "Paris", "metadata": {"answer": "Paris"}},
        {"input": "Capital of Italy?", "expected": "Rome", "metadata": {"answer": "Rome"}},
    ]
    result = run_eval([scorer(Echo().partial(topic="geography"))], data)
    assert [r.scores for r in result.results] == [{"Echo": 1.0}, {"Echo": 0.0}]


def test_skipped_score_stays_none_and_is_left_out_of_the_average() -> None:
    result = run_eval([scorer(OnlyCapitals())])
    assert [r.scores["OnlyCapitals"] for r in result.results] == [1.0, 1.0, None, None]
    assert result.summary.scores["OnlyCapitals"].score == 1.0


def test_a_scorer_error_is_recorded_on_its_row_and_the_run_goes_on() -> None:
    data = [ROWS[0], ROWS[3], {"input": "Capital of France?", "expected": None}]
    result = run_eval(bt_scorers("Levenshtein"), data)
    good = [scorers.get("Levenshtein")(output=task(row["input"]), expected=row["expected"]).score for row in data[:2]]
    assert [r.scores.get("Levenshtein") for r in result.results] == [*good, None]
    errors = result.results[2].metadata["scorer_errors"]
    assert list(errors) == ["Levenshtein"] and "ScorerInputError" in errors["Levenshtein"]
    assert result.summary.scores["Levenshtein"].score == pytest.approx(sum(good) / 2)


def test_only_the_listed_keywords_are_dropped() -> None:
    wrapped = scorer("ExactMatch")
    assert wrapped(output="a", expected="a", input="q", metadata={}, trace=object(), id="1", tags=["t"])["score"] == 1.0
    with pytest.raises(UnknownArgumentError, match="'span'"):
        wrapped(output="a", expected="a", span=object())


def test_wrapping_checks_its_argument() -> None:
    with pytest.raises(scorers.ConfigError, match="not a scorer"):
        scorer(len)  # type: ignore[arg-type]
    with pytest.raises(scorers.ConfigError, match="parameters"):
        scorer(scorers.get("ExactMatch"), ignore_case=True)
    assert scorer("ExactMatch", ignore_case=True)(output="PARIS", expected="paris")["score"] == 1.0


# ------------------------------------------------------ agents and conversations
WEATHER = {"name": "get_weather", "arguments": {"city": "Paris"}}
OPENAI_MESSAGE = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "c2", "type": "function", "function": {"name": "search", "arguments": '{"q": "Paris"}'}},
    ],
}
AGENT_OUTPUTS = {
    "openai messages": [{"role": "user", "content": "Weather in Paris?"}, OPENAI_MESSAGE],
    "openai sdk object": "ChatCompletionMessage",  # built in agent() below
    "langchain messages": {
        "messages": [
            {"type": "human", "content": "Weather in Paris?"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [
                    {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"},
                    {"name": "search", "args": {"q": "Paris"}, "id": "c2", "type": "tool_call"},
                ],
            },
        ]
    },
    "calls": [WEATHER, {"name": "search", "args": {"q": "Paris"}}],
}


def agent(input: str) -> Any:
    if AGENT_OUTPUTS[input] == "ChatCompletionMessage":
        from openai.types.chat import ChatCompletionMessage

        return ChatCompletionMessage.model_validate(OPENAI_MESSAGE)
    return AGENT_OUTPUTS[input]


def test_tool_call_scorers_read_messages_and_calls_in_output() -> None:
    pytest.importorskip("openai")
    chosen = [scorers.get("ToolCallMatch"), scorers.get("ToolCallF1"), TrajectoryMatch(mode="superset")]
    data = [{"input": kind, "expected": [WEATHER]} for kind in AGENT_OUTPUTS]
    result = braintrust.Eval(
        "scorers-adapter-test", data=lambda: data, task=agent, scores=[scorer(s) for s in chosen], no_send_logs=True
    )
    ours = {s.name: s(output=[OPENAI_MESSAGE], expected=[WEATHER]).score for s in chosen}
    assert ours == {"ToolCallMatch": 2 / 3, "ToolCallF1": 2 / 3, "TrajectoryMatch": 1.0}  # search is extra
    assert [r.metadata.get("scorer_errors") for r in result.results] == [None] * len(data)
    assert [r.scores for r in result.results] == [ours] * len(data)
    assert result.summary.scores["ToolCallMatch"].score == pytest.approx(2 / 3)


@pytest.fixture
def logged_trace() -> Any:
    """A real ``braintrust.trace.LocalTrace`` whose spans are in its state's span cache, as Braintrust leaves them
    for the scorers of a logged experiment: the task, and two tool spans (the later one logged first)."""
    from braintrust.logger import BraintrustState
    from braintrust.span_cache import CachedSpan
    from braintrust.trace import LocalTrace

    state = BraintrustState()
    cache = state.span_cache
    cache.start()
    spans = [
        ("s2", {"q": "Paris"}, "search", "tool", 2.0),
        ("s1", {"city": "Paris"}, "get_weather", "tool", 1.0),
        ("s0", "Weather in Paris?", "task", "task", 0.5),
    ]
    for span_id, given, name, kind, start in spans:
        attributes = {"name": name, "type": kind}
        cache.queue_write(
            "root", span_id, CachedSpan(span_id, input=given, span_attributes=attributes, metrics={"start": start})
        )
    yield LocalTrace(
        object_type="experiment", object_id="x", root_span_id="root", ensure_spans_flushed=None, state=state
    )
    cache.dispose()


def test_calls_from_trace_reads_its_tool_spans(logged_trace: Any) -> None:
    wrapped = scorer("ToolCallMatch", calls_from_trace=True, order="in_order")
    given = {
        "input": "Weather in Paris?",
        "output": "18C.",
        "expected": [WEATHER],
        "metadata": {},
        "id": "1",
        "tags": None,
    }
    result = asyncio.run(wrapped.eval_async(**given, trace=logged_trace))
    assert result["score"] == 2 / 3  # get_weather as expected; search is extra
    assert result["metadata"]["unmatched_actual"] == [{"index": 1, "name": "search", "arguments": {"q": "Paris"}}]
    assert wrapped(**given, trace=logged_trace)["score"] == 2 / 3  # the synchronous form


def test_calls_from_trace_needs_a_trace_and_a_tool_call_scorer() -> None:
    with pytest.raises(scorers.ScorerInputError, match="is read from Braintrust's trace"):
        scorer("ToolCallF1", calls_from_trace=True)(output="x", expected="search", trace=None)
    with pytest.raises(scorers.ConfigError, match="calls_from_trace is for a scorer that reads tool calls"):
        scorer("ExactMatch", calls_from_trace=True)
