"""Our scorers and judges as evaluators of a real ``langsmith.evaluate``, run locally and offline.

The client is LangSmith's silent one (no background thread, no ``GET /info``) and
``upload_results=False`` keeps the experiment in memory.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

import scorers
from scorers import ConfigError, Scorer, text_field
from scorers.adapters.langsmith import evaluator
from scorers.agents.tool_calls import TrajectoryMatch
from scorers.judges.discovery import build_judge, parse_template
from scorers.testing import LoopbackLLM, Reply

from . import OnlyCapitals

pydantic = pytest.importorskip("pydantic")
langsmith = pytest.importorskip("langsmith")
pytestmark = pytest.mark.filterwarnings("ignore:'upload_runs' parameter is in beta")
from langsmith import Client  # noqa: E402
from langsmith.schemas import Example, LangSmithInfo  # noqa: E402

QUESTIONS = [
    ("Capital of France?", "Paris"),
    ("Capital of Italy?", "Rome"),
    ("Largest planet?", "Jupiter"),
    ("Author of Hamlet?", "William Shakespeare"),
]
ANSWERS = {
    "Capital of France?": "Paris",
    "Capital of Italy?": "Milan",
    "Largest planet?": "jupiter",
    "Author of Hamlet?": "Shakespeare",
}


def target(inputs: dict) -> dict:
    return {"answer": ANSWERS[inputs["question"]]}


def examples(pairs=QUESTIONS, **extra_inputs: Any) -> list[Example]:
    return [Example(id=uuid.uuid4(), inputs={"question": q, **extra_inputs}, outputs={"answer": a}) for q, a in pairs]


def run(evaluators: list, data: list[Example] | None = None, app: Any = target) -> list[dict[str, Any]]:
    """Each example's {question, key: (score, comment, metadata, extra)}, in input order (``app``: the target)."""
    client = Client(api_key="offline", auto_batch_tracing=False, info=LangSmithInfo())
    data = data if data is not None else examples()
    results = langsmith.evaluate(
        app, data=data, evaluators=evaluators, upload_results=False, client=client, max_concurrency=0
    )
    by_example = {row["example"].id: row for row in results}
    assert len(by_example) == len(data)
    out = []
    for example in data:
        row = by_example[example.id]
        out.append(
            {
                "question": example.inputs["question"],
                **{r.key: (r.score, r.comment, r.metadata, r.extra) for r in row["evaluation_results"]["results"]},
            }
        )
    return out


def test_scores_equal_ours(llm_env: LoopbackLLM) -> None:
    llm_env.script(Reply.choice("D", reasons="Milan is not Rome."), match="Milan")
    llm_env.script(Reply.choice("A", reasons="Leaves out the first name."), match="William")
    llm_env.default = Reply.choice("C", reasons="Same facts.")
    rows = run(
        [
            evaluator("ExactMatch", outputs="answer", reference="answer"),
            evaluator(scorers.get("Levenshtein"), outputs="answer", reference="answer"),
            evaluator("Factuality", inputs="question", outputs="answer", reference="answer"),
        ]
    )

    ours = scorers.evaluate(
        [{"input": q, "output": ANSWERS[q], "expected": a} for q, a in QUESTIONS],
        ["ExactMatch", "Levenshtein", "Factuality"],
    ).collect()
    for row, our in zip(rows, ours):
        assert {key: row[key][0] for key in our.scores} == our.scores
    assert [row["Factuality"][:2] for row in rows] == [
        (1.0, "Same facts."),
        (0.0, "Milan is not Rome."),
        (1.0, "Same facts."),
        (0.4, "Leaves out the first name."),
    ]
    assert rows[1]["ExactMatch"][1] is None and rows[1]["ExactMatch"][2]["signature"]["scorer"] == "ExactMatch"
    assert rows[0]["Factuality"][2]["choice"] == "C"
    assert len(llm_env.chat_requests) == len(QUESTIONS)  # ours came from the judge cache


def test_single_key_dicts_need_no_mapping() -> None:
    rows = run([evaluator("ExactMatch")])
    assert [row["ExactMatch"][0] for row in rows] == [1.0, 0.0, 0.0, 0.0]


def test_fields_map_other_variables() -> None:
    class Topic(Scorer):
        fields = (text_field("output"), text_field("topic"))

        def _score(self, *, output, topic):
            return self.make_score(float(topic == "geography"), topic=topic)

    rows = run(
        [evaluator(Topic(), outputs="answer", fields={"topic": "inputs.topic"})],
        examples(QUESTIONS[:2], topic="geography"),
    )
    assert [row["Topic"][0] for row in rows] == [1.0, 1.0]
    assert rows[0]["Topic"][2]["topic"] == "geography"


def test_skipped_is_none_with_a_comment_never_a_number() -> None:
    rows = run([evaluator(OnlyCapitals(), inputs="question", outputs="answer")])
    assert [row["OnlyCapitals"][0] for row in rows] == [1.0, 1.0, None, None]
    assert rows[2]["OnlyCapitals"][1] == (
        "skipped: OnlyCapitals does not apply to this example (not a capital question)"
    )
    assert rows[2]["OnlyCapitals"][3] is None  # not an error


def test_a_scorer_error_is_that_examples_result_and_the_run_goes_on() -> None:
    data = examples(QUESTIONS[:2]) + [
        Example(id=uuid.uuid4(), inputs={"question": "Capital of France?"}, outputs={"answer": None})
    ]
    rows = run([evaluator("Levenshtein", outputs="answer", reference="answer")], data)
    assert [row["Levenshtein"][0] for row in rows] == [1.0, 0.0, None]
    score, comment, metadata, extra = rows[2]["Levenshtein"]
    assert comment == "ScorerInputError: Levenshtein: field 'expected' is required but was None"
    assert metadata["error"]["type"] == "ScorerInputError" and extra == {"error": True}


def test_a_key_the_example_lacks_is_named_in_the_comment() -> None:
    rows = run([evaluator("ExactMatch", outputs="answer", reference="gold")], examples(QUESTIONS[:1]))
    assert rows[0]["ExactMatch"][0] is None
    assert rows[0]["ExactMatch"][1] == (
        "ScorerInputError: ExactMatch: field 'expected' is mapped to "
        "reference_outputs.gold, which this example lacks (reference_outputs has: answer)"
    )


def test_a_config_error_is_raised(
    llm_env: LoopbackLLM, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Raised, not turned into a score; LangSmith then records it as an evaluator error and logs it."""
    monkeypatch.delenv("OPENAI_API_KEY")
    judge = evaluator("Factuality", inputs="question", outputs="answer", reference="answer")
    with pytest.raises(ConfigError):
        judge({"question": "Capital of France?"}, {"answer": "Paris"}, {"answer": "Paris"})
    with caplog.at_level(logging.ERROR, logger="langsmith"):
        rows = run([judge], examples(QUESTIONS[:1]))
    # LangSmith keys the result after the name of the evaluator's def in our source
    [(key, (score, comment, _, extra))] = [(k, v) for k, v in rows[0].items() if k != "question"]
    assert key == "scorers_evaluator" and score is None and extra == {"error": True}
    assert comment.startswith("ConfigError('no API key for the LLM judge")
    assert any(
        r.getMessage().startswith("Error running evaluator <DynamicRunEvaluator Factuality>")
        and "ConfigError" in r.getMessage()
        for r in caplog.records
    )
    assert len(llm_env.chat_requests) == 0


def test_several_keys_and_no_mapping_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"say which key of outputs holds it with outputs=\.\.\. "):
        evaluator("ExactMatch")({}, {"answer": "a", "sources": []}, {"answer": "a"})


def test_mapping_mistakes_are_found_when_building() -> None:
    with pytest.raises(ConfigError, match="must start with one of inputs., outputs., reference_outputs."):
        evaluator("ExactMatch", fields={"expected": "reference.answer"})
    with pytest.raises(ConfigError, match="mapped twice"):
        evaluator("ExactMatch", reference="answer", fields={"expected": "reference_outputs.answer"})
    with pytest.raises(ConfigError, match="parameters"):
        evaluator(scorers.get("ExactMatch"), ignore_case=True)
    with pytest.raises(ConfigError, match="not a scorer"):
        evaluator(len)  # type: ignore[arg-type]
    assert evaluator("ExactMatch", ignore_case=True)({}, {"a": "PARIS"}, {"a": "paris"})["score"] == 1.0


# ------------------------------------------------------ agents and conversations
class LangChainMessage(pydantic.BaseModel):
    """A stand-in for LangChain's message objects (langchain_core is not a dependency): the fields whose
    ``model_dump()`` langchain_core 1.x gives for AIMessage, HumanMessage and ToolMessage."""

    content: str
    type: str
    additional_kwargs: dict[str, Any] = {}
    response_metadata: dict[str, Any] = {}
    name: str | None = None
    id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    status: str | None = None


WEATHER = {"name": "get_weather", "arguments": {"city": "Paris"}}
OPENAI_CHAT = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "search", "arguments": '{"q": "Paris"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    {"role": "tool", "tool_call_id": "c2", "content": "..."},
    {"role": "assistant", "content": "18C in Paris."},
]
LANGCHAIN = [  # the same conversation, as LangChain messages
    LangChainMessage(type="human", content="Weather in Paris?"),
    LangChainMessage(
        type="ai",
        content="",
        tool_calls=[
            {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"},
            {"name": "search", "args": {"q": "Paris"}, "id": "c2", "type": "tool_call"},
        ],
    ),
    LangChainMessage(type="tool", content="18C", tool_call_id="c1", status="success"),
    LangChainMessage(type="tool", content="...", tool_call_id="c2", status="success"),
    LangChainMessage(type="ai", content="18C in Paris."),
]
AGENT_OUTPUTS = {
    "openai": {"messages": OPENAI_CHAT, "answer": "18C in Paris."},
    "langchain objects": {"messages": LANGCHAIN},
    "langchain dicts": {"messages": [m.model_dump() for m in LANGCHAIN], "answer": "18C in Paris."},
    "calls": {"tool_calls": [WEATHER, {"name": "search", "args": {"q": "Paris"}}]},
}


def agent(inputs: dict) -> dict:
    return AGENT_OUTPUTS[inputs["question"]]


def test_tool_call_scorers_read_messages_in_outputs() -> None:
    data = [
        Example(id=uuid.uuid4(), inputs={"question": kind}, outputs={"expected_tools": [WEATHER]})
        for kind in AGENT_OUTPUTS
    ]
    chosen = [
        scorers.get("ToolCallMatch"),
        scorers.get("ToolCallF1"),
        TrajectoryMatch(mode="unordered", name="Unordered"),
        TrajectoryMatch(mode="superset", name="Superset"),
    ]
    rows = run([evaluator(scorer) for scorer in chosen], data, agent)
    ours = {scorer.name: scorer(output=OPENAI_CHAT, expected=[WEATHER]).score for scorer in chosen}
    assert ours == {"ToolCallMatch": 2 / 3, "ToolCallF1": 2 / 3, "Unordered": 0.0, "Superset": 1.0}  # search: extra
    for row in rows:
        assert {name: row[name][0] for name in ours} == ours, row["question"]
        assert row["Unordered"][2]["parts_at"] == {"actual_call": 1, "reason": "no expected call matches it"}


def test_reference_messages_are_the_expected_calls() -> None:
    data = [Example(id=uuid.uuid4(), inputs={"question": "openai"}, outputs={"messages": OPENAI_CHAT, "note": "x"})]
    [row] = run([evaluator("ToolCallMatch"), evaluator("TrajectoryMatch", mode="strict")], data, agent)
    assert (row["ToolCallMatch"][0], row["TrajectoryMatch"][0]) == (1.0, 1.0)


def test_a_named_key_still_wins_and_bad_messages_are_that_examples_error() -> None:
    call = evaluator("ToolCallMatch", outputs="messages", reference="expected_tools")
    assert call({}, {"messages": LANGCHAIN, "answer": "x"}, {"expected_tools": [WEATHER]})["score"] == 2 / 3
    bad = call({}, {"messages": [{"role": "robot", "content": "hi"}]}, {"expected_tools": [WEATHER]})
    assert bad["score"] is None and bad["extra"] == {"error": True}
    assert bad["comment"].startswith(
        "ScorerInputError: ToolCallMatch: field 'output' at message 0: unknown role 'robot'"
    )


def test_a_conversation_judge_reads_outputs_messages(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("Y")
    judge = build_judge(
        parse_template(
            {
                "fields": {"conversation": "conversation"},
                "prompt": "{{conversation}}\nDid the assistant help the user?",
                "choice_scores": {"Y": 1, "N": 0},
            },
            name="ConversationHelpful",
        )
    )
    data = [Example(id=uuid.uuid4(), inputs={"question": "langchain objects"}, outputs={"answer": "18C"})]
    [row] = run([evaluator(judge)], data, agent)
    assert row["ConversationHelpful"][:2] == (1.0, None)
    [request] = llm_env.chat_requests
    assert request.last_user_message.startswith(
        "user: Weather in Paris?\nassistant:\n"
        '  call get_weather({"city": "Paris"})\n'
        '  call search({"q": "Paris"})\n'
        "tool get_weather: 18C\n"
    )
