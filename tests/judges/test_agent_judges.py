"""The built-in judges over trajectories and conversations (templates/*.yaml, issue 17).

Each judge answers from a LoopbackLLM over real HTTP: the prompt holds the transcript, whatever the conversation's
format; the score is the scripted verdict's; a row costs the number of requests its description (what ``show``
prints) says; usage is in the metadata; a malformed conversation and one over its budget are that row's
ScorerInputError, sent nowhere. ``python -m scorers run`` runs them over examples/conversations.jsonl.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers.cli.catalog import describe
from scorers.errors import ScorerInputError
from scorers.judges import RubricJudge, TemplatedJudge
from scorers.judges.conversation import DEFAULT_MAX_TOKENS, transcript
from scorers.llm import LLMEngine
from scorers.score import Score
from scorers.testing import LoopbackLLM, RecordedRequest, Reply, auto_reply

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "agents" / "fixtures"
EXAMPLES = REPO / "examples" / "conversations.jsonl"
FORMATS = ["openai_chat", "anthropic", "openai_responses"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "get_time", "description": "Local time in a time zone."}},
    {"type": "function", "name": "book_flight", "description": "Book a flight."},  # the Responses API's flat form
    {"name": "convert", "description": "Convert a currency.", "input_schema": {"type": "object"}},  # Anthropic's
]
#: Rubric grades the loopback answers with, per rubric judge, and the score they make.
GRADES = {
    "TrajectoryQuality": ({"progression": 5, "efficiency": 3, "tool_use": 4}, (4 + 2 + 3) / 12),
    "TrajectoryQualityWithReference": (
        {"progression": 5, "efficiency": 3, "tool_use": 4, "reference": 1},
        (4 + 2 + 3 + 0) / 16,
    ),
    "ConversationRubric": ({"helpfulness": 5, "consistency": 5, "clarity": 2}, (4 + 4 + 1) / 12),
}


@dataclass(frozen=True)
class Case:
    """A judge, the fields of a row besides its conversation, and what it shows of them in the prompt."""

    name: str
    fields: dict[str, Any] = field(default_factory=dict)
    shown: tuple[str, ...] = ()
    #: A second conversation field (a reference trajectory), given the same conversation.
    reference: str | None = None


CASES = [
    Case(
        "TaskCompletion",
        {"input": "Tell me the weather in Paris and Tokyo and the time in Tokyo."},
        ("The task:\nTell me the weather in Paris and Tokyo",),
    ),
    Case(
        "TaskCompletionWithReference",
        {"input": "Weather in Paris and Tokyo, time in Tokyo.", "expected": "Paris 18°C, Tokyo 24°C, 21:05 there."},
        ("Weather in Paris and Tokyo, time in Tokyo.", "Paris 18°C, Tokyo 24°C, 21:05 there."),
    ),
    Case(
        "ToolSelection",
        {"tools": TOOLS},
        (
            "- get_weather: Current weather in a city.\n- get_time: Local time in a time zone.\n"
            "- book_flight: Book a flight.\n- convert: Convert a currency.\n",
        ),
    ),
    Case("TrajectoryQuality"),
    Case("TrajectoryQualityWithReference", reference="expected"),
    Case(
        "RoleAdherence",
        {"role": "A travel assistant for a booking site; it talks about travel only."},
        ("The assistant's role:\nA travel assistant for a booking site",),
    ),
    Case("ConversationRubric"),
]
IDS = [case.name for case in CASES]


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def verdict(request: RecordedRequest) -> Reply:
    """The scripted verdict: choice B of a classifier, the GRADES of a rubric (named in the prompt's criteria)."""
    tool = request.body["tools"][0]["function"]
    if tool["name"] == "select_choice":
        return Reply.choice("B", reasons="part of it")
    properties = tool["parameters"]["properties"]
    (grades,) = [g for g, _ in GRADES.values() if set(g) == set(properties) - {"reasons"}]
    return Reply.tool_call({"reasons": "as graded", **grades}, name=tool["name"])


def expected_score(name: str) -> float:
    return GRADES[name][1] if name in GRADES else 0.5


def row(case: Case, conversation: Any) -> dict[str, Any]:
    return {**case.fields, "conversation": conversation} | ({case.reference: conversation} if case.reference else {})


@pytest.fixture(scope="module")
def server() -> Any:
    with LoopbackLLM(default=verdict) as loopback:
        yield loopback


def judge(name: str, server: LoopbackLLM, **settings: Any) -> Any:
    engine = LLMEngine(base_url=server.base_url, api_key="loopback", cache=False, max_reasks=0)
    return scorers.get(name, engine=engine, **settings)


def requests_per_row(name: str) -> int:
    """The number of requests per row that ``show`` prints for the judge."""
    text = describe(scorers.get(name))
    (count,) = re.findall(r"Requests per row: (\d+)\.", text)
    return int(count)


# ------------------------------------------------------------------ each judge
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_judge_shows_the_transcript_of_every_format_and_scores_the_verdict(
    case: Case, server: LoopbackLLM
) -> None:
    server.reset()
    conversations = [fixture(name) for name in FORMATS]
    scores = judge(case.name, server).score_batch([row(case, c) for c in conversations])
    prompts = [request.last_user_message for request in server.chat_requests]
    shown = transcript(fixture("openai_chat"))
    assert shown.startswith("system: You are a travel assistant.\nuser: What's the weather in Paris")
    assert transcript(fixture("anthropic")) == shown
    assert len(prompts) == len(conversations) * requests_per_row(case.name) == len(conversations)
    for prompt in prompts:
        assert shown in prompt
        for text in case.shown:
            assert text in prompt
        if case.reference:  # the reference trajectory is shown as a transcript too
            assert prompt.count(shown) == 2
    for score in scores:
        assert isinstance(score, Score)
        assert score.score == pytest.approx(expected_score(case.name))
        usage = score.metadata["usage"]
        assert usage["requests"] == 1 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    if case.name in GRADES:
        assert scores[0].metadata["criteria"] == GRADES[case.name][0]
    else:
        assert scores[0].metadata["choice"] == "B"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_show_says_one_request_per_row_and_lists_the_fields(case: Case) -> None:
    assert requests_per_row(case.name) == 1
    entry = scorers.get(case.name)
    assert set(entry.required_fields()) == set(row(case, []))
    assert describe(entry).startswith(f"{case.name}  (llm)")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_malformed_conversation_is_that_rows_input_error_and_is_not_sent(case: Case, server: LoopbackLLM) -> None:
    server.reset()
    bad = [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]
    call = {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
    not_json = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    rows = [row(case, fixture("openai_chat")), row(case, bad), row(case, not_json)]
    scores = judge(case.name, server).score_batch(rows)
    assert isinstance(scores[0], Score)
    assert isinstance(scores[1], ScorerInputError)
    assert "field 'conversation' at message 1: unknown role 'robot'" in str(scores[1])
    assert isinstance(scores[2], ScorerInputError) and "field 'conversation'" in str(scores[2])
    assert server.request_count == 1


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_conversation_over_its_budget_is_refused_saying_how_to_raise_it(case: Case, server: LoopbackLLM) -> None:
    server.reset()
    long = [{"role": "user", "content": "word " * 40_000}, {"role": "assistant", "content": "ok"}]
    with pytest.raises(ScorerInputError, match=rf"over its budget of {DEFAULT_MAX_TOKENS:,}.*max_tokens: \d+"):
        judge(case.name, server)(**row(case, long))
    assert server.request_count == 0


def test_the_conversational_rubric_is_any_rubric_over_a_conversation_field() -> None:
    """ConversationRubric is data: the same file with other criteria (or kind: geval) grades a dialogue too."""
    rubric = scorers.get("ConversationRubric")
    assert isinstance(rubric, RubricJudge)
    assert rubric.judge_kind == "rubric" and rubric.template.conversations == (("conversation", DEFAULT_MAX_TOKENS),)
    assert [c.name for c in rubric.criteria] == ["helpfulness", "consistency", "clarity"]
    assert rubric.threshold == 4


def test_tool_selection_shows_tools_given_in_any_shape_without_failing(server: LoopbackLLM) -> None:
    selection = judge("ToolSelection", server)
    conversation = fixture("openai_chat")
    for tools, shown in [
        ([], "could call:\n(none)\n"),
        (json.dumps(TOOLS[:1]), 'could call:\n[{"type": "function"'),  # JSON text (a CSV cell) shown as it is
        (["get_weather", {"name": "get_time"}], "could call:\n- get_weather\n- get_time\n"),
        ({"get_weather": {}}, 'could call:\n{"get_weather": {}}\n'),
    ]:
        prompt = selection.template.render({"tools": tools, "conversation": conversation})[0]["content"]
        assert shown in prompt


def test_the_judges_run_in_every_response_mode_the_loopback_answers() -> None:
    with LoopbackLLM(default=auto_reply) as auto:
        for case in CASES:
            built = scorers.get(case.name)
            assert isinstance(built, TemplatedJudge)
            for mode in built.response_modes:
                score = judge(case.name, auto, response_mode=mode)(**row(case, fixture("anthropic")))
                assert 0.0 <= score.score <= 1.0 and score.metadata["response_mode"] == mode


# ------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_python_m_scorers_run_over_the_example_conversations(tmp_path: Path) -> None:
    """TaskCompletion over examples/conversations.jsonl with each row's task (its first user request) as input;
    TrajectoryQuality and ConversationRubric read the conversation alone."""
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    tasks = tmp_path / "tasks.jsonl"
    with tasks.open("w", encoding="utf-8") as out:
        for example in rows:
            first_user = next(line for line in transcript(example["conversation"]).splitlines() if line[:6] == "user: ")
            out.write(json.dumps({**example, "input": first_user[6:]}) + "\n")
    results_path = tmp_path / "out.jsonl"
    names = ["TaskCompletion", "TrajectoryQuality", "ConversationRubric"]
    with LoopbackLLM(default=verdict) as loopback:
        env = {**os.environ, "OPENAI_BASE_URL": loopback.base_url, "OPENAI_API_KEY": "loopback", "SCORERS_CACHE": "off"}
        run = subprocess.run(
            [sys.executable, "-m", "scorers", "run", str(tasks), *(a for n in names for a in ("-s", n))]
            + ["-o", str(results_path), "--metadata", "--no-progress"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        prompts = [request.last_user_message for request in loopback.chat_requests]
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in results_path.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in results] == [r["id"] for r in rows]
    for result in results:
        assert result["scores"] == {name: pytest.approx(expected_score(name)) for name in names}
        assert all(result["metadata_scores"][name]["usage"]["requests"] == 1 for name in names)
    assert len(prompts) == len(rows) * len(names)  # one request per row and judge
    assert any("tool get_time: 21:05" in prompt for prompt in prompts)  # the Anthropic row
    assert any("call search(" in prompt for prompt in prompts)  # the Responses row
    assert any("The task:\nWho wrote The Left Hand of Darkness?" in prompt for prompt in prompts)
