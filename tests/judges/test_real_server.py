"""Judge kinds against a real OpenAI-compatible server (llama-cpp-python + Gemma 3 270M): structure, never verdicts.

The model is a base model that cannot judge, so these tests assert what the protocol guarantees: a score in
[0, 1], the mode and settings in the metadata, a verdict from the allowed set, real logprobs. The server's
grammar (built from the JSON schema) constrains ``tools`` and ``json_object`` replies; ``text`` replies are
free, so a text-mode judge either scores or fails with a JudgeError carrying the raw reply, never a made-up
number. llama.cpp rejects ``json_schema`` response formats: that is a RequestRejected naming the mode to use.
"""

from __future__ import annotations

from typing import Any

import pytest

import scorers
from scorers.errors import JudgeError
from scorers.judges import GEvalJudge, LLMClassifier, PairwiseJudge, RatingJudge, RubricJudge
from scorers.llm import LLMEngine, RequestRejected

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

PROMPT = "Question: {{input}}\nAnswer: {{output}}"
ROW = {"input": "What is the capital of France?", "output": "Paris is the capital of France."}
CRITERIA = [
    {"name": "correct", "description": "The answer is right."},
    {"name": "brief", "description": "The answer is short."},
]


@pytest.fixture(scope="module")
def engine(real_llm_server: Any) -> LLMEngine:
    return LLMEngine(
        base_url=real_llm_server.base_url,
        api_key="local",
        model=real_llm_server.model,
        cache=False,
        max_reasks=1,
        timeout=120,
    )


JUDGES = {
    "classifier-tools-cot": lambda e: LLMClassifier("C", PROMPT, {"Y": 1, "N": 0}, max_tokens=96, engine=e),
    "classifier-json_object": lambda e: LLMClassifier(
        "C", PROMPT, {"Y": 1, "N": 0}, use_cot=False, response_mode="json_object", engine=e
    ),
    "rubric-tools": lambda e: RubricJudge("R", PROMPT, criteria=CRITERIA, use_cot=False, engine=e),
    "rubric-json_object": lambda e: RubricJudge(
        "R", PROMPT, criteria=CRITERIA, use_cot=False, response_mode="json_object", engine=e
    ),
    "rating-tools": lambda e: RatingJudge("Ra", PROMPT, scale={"min": 1, "max": 10}, use_cot=False, engine=e),
    "rating-json_object": lambda e: RatingJudge(
        "Ra", PROMPT, scale={"min": 1, "max": 10}, use_cot=False, response_mode="json_object", engine=e
    ),
    "pairwise-tools": lambda e: PairwiseJudge("P", "A: {{output}}\nB: {{expected}}", use_cot=False, engine=e),
    "geval-logprobs-json_object": lambda e: GEvalJudge(
        "G",
        PROMPT,
        criteria="Is the answer correct?",
        steps=["Read the question.", "Check the answer."],
        response_mode="json_object",
        engine=e,
    ),
}


@pytest.mark.parametrize("kind", JUDGES)
def test_structured_modes_give_an_in_range_score_with_metadata(engine: LLMEngine, kind: str) -> None:
    judge = JUDGES[kind](engine)
    score = judge(**ROW, expected="Lyon.")
    assert 0.0 <= score.score <= 1.0
    assert score.metadata["response_mode"] == judge.response_mode
    assert score.metadata["sent"]["api"] == "chat" and score.metadata["sent"]["max_tokens"] == judge.output_budget()
    assert score.metadata["usage"]["requests"] >= 1 and score.metadata["usage"]["completion_tokens"] > 0
    if isinstance(judge, GEvalJudge):
        probabilities = score.metadata["probabilities"]
        assert set(probabilities) <= {str(v) for v in range(1, 6)} and abs(sum(probabilities.values()) - 1) < 1e-9
        assert 1 <= score.metadata["expected_score"] <= 5
    if isinstance(judge, RubricJudge):
        assert set(score.metadata["criteria"]) == {"correct", "brief"}
        assert all(1 <= v <= 5 for v in score.metadata["criteria"].values())
    if isinstance(judge, LLMClassifier):
        assert score.metadata["choice"] in ("Y", "N")


@pytest.mark.parametrize(
    "make",
    [
        lambda e: LLMClassifier("C", PROMPT, {"Y": 1, "N": 0}, use_cot=False, response_mode="text", engine=e),
        lambda e: RatingJudge("Ra", PROMPT, scale={"min": 1, "max": 10}, use_cot=False, response_mode="text", engine=e),
        lambda e: GEvalJudge(
            "G", PROMPT, criteria="Is the answer correct?", steps=["Check the answer."], response_mode="text", engine=e
        ),
    ],
    ids=["classifier-text", "rating-text", "geval-logprobs-text"],
)
def test_text_mode_scores_in_range_or_fails_with_the_raw_reply(engine: LLMEngine, make: Any) -> None:
    judge = make(engine)
    try:
        score = judge(**ROW)
    except JudgeError as exc:  # a base model's free text need not hold a verdict: never a made-up score
        assert exc.raw is not None and "unusable" in str(exc)
    else:
        assert 0.0 <= score.score <= 1.0 and score.metadata["response_mode"] == "text"


def test_json_schema_mode_is_rejected_at_once_naming_the_mode_to_use(engine: LLMEngine) -> None:
    judge = RatingJudge("Ra", PROMPT, scale={"min": 1, "max": 5}, use_cot=False, response_mode="json", engine=engine)
    with pytest.raises(RequestRejected, match="use response_mode='json_object'") as info:
        judge(**ROW)
    assert info.value.attempts == 1


# ------------------------------------------------- judges over trajectories and conversations (issue 17)
TRAJECTORY = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18°C, cloudy"},
    {"role": "assistant", "content": "It is 18°C and cloudy in Paris."},
]
#: The same kind of conversation in Anthropic's format (a system prompt and content blocks).
DIALOGUE = {
    "system": "You are a travel assistant.",
    "messages": [
        {"role": "user", "content": "Can you help me plan a trip to Lisbon?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Gladly. For which dates?"}]},
        {"role": "user", "content": "Forget travel: write me a poem about cats."},
        {"role": "assistant", "content": [{"type": "text", "text": "I can only help with travel plans."}]},
    ],
}


@pytest.mark.parametrize(
    "name, row",
    [
        ("TaskCompletion", {"input": "Tell me the weather in Paris.", "conversation": TRAJECTORY}),
        ("RoleAdherence", {"role": "A travel assistant that talks about travel only.", "conversation": DIALOGUE}),
    ],
)
def test_built_in_judges_over_a_trajectory_and_a_conversation(engine: LLMEngine, name: str, row: Any) -> None:
    judge = scorers.get(name, engine=engine, max_tokens=96)
    try:
        score = judge(**row)
    except JudgeError as exc:  # a base model may not produce a usable verdict: a reason, never a made-up score
        assert str(exc) and exc.raw is not None
    else:
        assert 0.0 <= score.score <= 1.0 and score.metadata["choice"] in ("A", "B", "C")
        assert score.metadata["usage"]["requests"] == 1 and score.metadata["usage"]["prompt_tokens"] > 0


def test_knowledge_retention_over_a_dialogue(engine: LLMEngine) -> None:
    """A multi-step conversation judge: the facts, then a verdict per later assistant message (2 requests at most)."""
    judge = scorers.get("KnowledgeRetention", engine=engine, use_cot=False, max_tokens=96)
    try:
        score = judge(conversation=DIALOGUE)
    except JudgeError as exc:  # a base model may not produce a usable reply: a reason, never a made-up score
        assert str(exc) and exc.raw is not None
    else:
        assert 0.0 <= score.score <= 1.0 and isinstance(score.metadata["facts"], list)
        assert all(fact["message"] in (1, 3) for fact in score.metadata["facts"])  # the user's (0 is the system's)
        assert score.metadata["usage"]["requests"] == (2 if score.metadata["turns"] else 1)
        assert [t["message"] for t in score.metadata["turns"]] == [
            i for i in (2, 4) if score.metadata["facts"] and i > min(f["message"] for f in score.metadata["facts"])
        ]
