"""Reasoning text is never judged by mistake: tagged thinking in a judge's reply is not its verdict (the shared vectors
of tests/vectors/reasoning.json), and an unclosed block is no answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scorers.errors import JudgeError
from scorers.judges import GEvalJudge, LLMClassifier, RatingJudge
from scorers.judges.reply import answer_text
from scorers.llm import InvalidReply, LLMEngine
from scorers.reasoning import REASONING_TAGS, Reasoning, message_reasoning, reasoning_end, split_reasoning
from scorers.testing import LoopbackLLM, Reply

VECTORS: list[dict[str, Any]] = json.loads((Path(__file__).parent / "vectors" / "reasoning.json").read_text())


def _ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [vector["id"] for vector in vectors]


@pytest.mark.parametrize("vector", VECTORS, ids=_ids(VECTORS))
def test_split_reasoning(vector: dict[str, Any]) -> None:
    split = split_reasoning(vector["text"], vector.get("tags", REASONING_TAGS))
    assert split == Reasoning(vector["answer"], vector["reasoning"], vector["incomplete"])
    if vector["answer"] == vector["text"]:
        assert split.answer is vector["text"]  # untouched: the same object, byte for byte


DEFAULT_TAGS = [vector for vector in VECTORS if "tags" not in vector]


@pytest.mark.parametrize("vector", DEFAULT_TAGS, ids=_ids(DEFAULT_TAGS))
def test_a_judge_reply_is_read_without_its_reasoning(vector: dict[str, Any]) -> None:
    if vector["incomplete"]:
        with pytest.raises(InvalidReply, match="cut off"):
            answer_text(vector["text"])
    else:
        assert answer_text(vector["text"]) == vector["answer"]
        if vector["text"].rstrip().endswith(vector["answer"]) and vector["answer"]:  # the answer follows the reasoning
            assert vector["text"][reasoning_end(vector["text"]) :].strip() == vector["answer"]


def engine(server: LoopbackLLM) -> LLMEngine:
    return LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False, max_reasks=1)


def classifier(server: LoopbackLLM, mode: str) -> LLMClassifier:
    return LLMClassifier(
        "Polite", "Is this polite?\n{{output}}", {"Yes": 1, "No": 0}, response_mode=mode, engine=engine(server)
    )


@pytest.mark.parametrize(
    "mode, reply",
    [
        ("text", "<think>Rude? No: it thanks the reader.\nNo</think>\nIt thanks the reader.\nYes"),
        ("json_object", '<think>Maybe {"choice": "No"}? No, it is polite.</think>\n{"choice": "Yes", "reasons": "ok"}'),
        ("json", '<think>{"choice": "No"}</think>{"choice": "Yes", "reasons": "ok"}'),
        ("text", "weighing it, No is wrong.</think>Yes"),  # the template put <think> in the prompt
    ],
)
def test_a_verdict_inside_the_judges_thinking_is_not_its_verdict(
    llm_server: LoopbackLLM, mode: str, reply: str
) -> None:
    llm_server.default = Reply.text(reply)
    score = classifier(llm_server, mode)(output="Thanks a lot!")
    assert (score.score, score.metadata["choice"]) == (1.0, "Yes")
    assert "No" not in (score.metadata["rationale"] or "")
    assert llm_server.request_count == 1


def test_a_judge_reply_whose_thinking_never_ends_is_asked_again_then_fails(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.text('<think>Polite? Let me weigh {"choice": "Yes"} against', finish_reason="length")
    with pytest.raises(JudgeError, match="reasoning was cut off before its answer"):
        classifier(llm_server, "json_object")(output="Thanks a lot!")
    assert llm_server.request_count == 2  # the ask and one re-ask


def test_a_rating_in_text_mode_skips_the_numbers_of_the_thinking(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.text("<think>\n2? or 3?\n</think>\nClear enough.\n4")
    judge = RatingJudge(
        "Clear", "Rate {{output}}", scale={"min": 1, "max": 5}, response_mode="text", engine=engine(llm_server)
    )
    assert judge(output="text").metadata["rating"] == 4


def test_geval_weighs_the_score_token_after_the_thinking(llm_server: LoopbackLLM) -> None:
    judge = GEvalJudge(
        "Coherent",
        "Grade {{output}}",
        criteria="Coherence.",
        scale={"min": 1, "max": 5},
        steps=["Read it."],
        engine=engine(llm_server),
    )
    llm_server.default = Reply.text("4", top_logprobs=[{"4": -0.2231, "3": -1.6094}])
    plain = judge(output="text")
    llm_server.default = Reply.text(
        "<think>2</think>4",
        top_logprobs=[{"<think>": 0.0}, {"2": -0.01, "1": -5.0}, {"</think>": 0.0}, {"4": -0.2231, "3": -1.6094}],
    )
    thought = judge(output="text")
    assert thought.score == plain.score and thought.metadata["probabilities"] == plain.metadata["probabilities"]


@pytest.mark.parametrize(
    "message, reasoning",
    [
        ({"role": "assistant", "content": "4", "reasoning_content": "2 + 2"}, "2 + 2"),
        ({"role": "assistant", "content": "4", "reasoning": "2 + 2"}, "2 + 2"),
        ({"role": "assistant", "content": "4"}, None),
        (
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "a", "signature": "s"}, {"type": "text", "text": "4"}],
            },
            "a",
        ),
        (
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}],
            },
            "a\n\nb",
        ),
        ({"role": "assistant", "content": "4", "reasoning_content": "  "}, None),
    ],
)
def test_a_providers_reasoning_field_is_read_apart(message: dict[str, Any], reasoning: str | None) -> None:
    assert message_reasoning(message) == reasoning
