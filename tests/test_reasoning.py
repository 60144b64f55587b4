"""Reasoning text is never judged by mistake: tagged thinking in a judge's reply is not its verdict (the shared vectors
of tests/vectors/reasoning.json), and an unclosed block is no answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers.errors import JudgeError
from scorers.judges import GEvalJudge, LLMClassifier, PairwiseJudge, RatingJudge
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
    assert "No" in score.metadata["judge_reasoning"] and "Yes" not in score.metadata["judge_reasoning"]
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
    rated = judge(output="text")
    assert rated.metadata["rating"] == 4 and rated.metadata["judge_reasoning"] == "2? or 3?"
    llm_server.default = Reply.text("Clear enough.\n4")
    assert "judge_reasoning" not in judge(output="text").metadata  # only where the reply holds reasoning


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


# ------------------------------------------------------------------ the judged output
TEXT_METRICS = ["BLEU", "chrF", "ROUGE", "METEOR", "TER"]
REFERENCE = "The answer is 4."
COMPLETE = [vector for vector in DEFAULT_TAGS if not vector["incomplete"]]


@pytest.mark.parametrize("vector", COMPLETE, ids=_ids(COMPLETE))
@pytest.mark.parametrize("name", TEXT_METRICS)
def test_a_text_metric_scores_the_answer_not_the_reasoning(name: str, vector: dict[str, Any]) -> None:
    pytest.importorskip("sacrebleu")
    metric = scorers.get(name)
    tagged = metric(output=vector["text"], expected=REFERENCE)
    assert tagged.score == metric(output=vector["answer"], expected=REFERENCE).score
    assert "incomplete_reasoning" not in tagged.metadata and tagged.metadata["signature"] == metric.signature()
    batch = metric.score_batch([{"output": vector["text"], "expected": REFERENCE}, {"output": "4", "expected": "4"}])
    assert [s.score for s in batch] == [tagged.score, metric(output="4", expected="4").score]
    unstripped = scorers.get(name, strip_reasoning=False)
    assert unstripped.signature() == {**metric.signature(), "strip_reasoning": False}


@pytest.mark.parametrize("name", TEXT_METRICS)
def test_an_unclosed_reasoning_block_scores_as_an_empty_answer_and_says_so(name: str) -> None:
    pytest.importorskip("sacrebleu")
    metric = scorers.get(name)
    rows = [
        {"output": "<think>The answer is 4. Or is it", "expected": REFERENCE},
        {"output": REFERENCE, "expected": REFERENCE},
    ]
    cut, whole = metric.score_batch(rows)
    assert cut.metadata["incomplete_reasoning"] is True and "incomplete_reasoning" not in whole.metadata
    assert cut.score == metric(output="", expected=REFERENCE).score
    assert metric(**rows[0]).metadata["incomplete_reasoning"] is True


def test_the_examples_hold_no_reasoning_so_their_results_are_unchanged() -> None:
    """Text without a reasoning tag is passed on as the very same string: every example's numbers are as before."""
    examples = Path(__file__).parents[1] / "examples"
    values = [
        value
        for path in sorted(examples.rglob("*.jsonl"))
        for line in path.read_text().splitlines()
        if line.strip()
        for value in _strings(json.loads(line))
    ]
    assert values and all(split_reasoning(value).answer is value for value in values)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def test_a_judge_never_sees_the_outputs_reasoning_and_a_template_may_ask_for_it(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.choice("Yes")
    judge = classifier(llm_server, "tools")
    judge(output="<think>a secret plan</think>Thanks a lot!")
    assert "secret" not in json.dumps(llm_server.chat_requests[-1].body) and "Thanks a lot!" in json.dumps(
        llm_server.chat_requests[-1].body
    )
    cut = judge(output="<think>a secret plan")
    assert cut.metadata["incomplete_reasoning"] is True and "secret" not in json.dumps(
        llm_server.chat_requests[-1].body
    )
    sound = LLMClassifier(
        "Sound", "Reasoning: {{reasoning}}\nAnswer: {{output}}", {"Yes": 1, "No": 0}, engine=engine(llm_server)
    )
    sound(output="<think>2 + 2 = 4</think>4")
    assert llm_server.chat_requests[-1].body["messages"][0]["content"].startswith("Reasoning: 2 + 2 = 4\nAnswer: 4\n")
    sound(output="4")
    assert llm_server.chat_requests[-1].body["messages"][0]["content"].startswith("Reasoning: \nAnswer: 4\n")
    sound(output="<think>given</think>4", reasoning="passed as a field")
    assert llm_server.chat_requests[-1].body["messages"][0]["content"].startswith("Reasoning: passed as a field\n")
    kept = LLMClassifier(
        "Polite", "Is this polite?\n{{output}}", {"Yes": 1, "No": 0}, engine=engine(llm_server), strip_reasoning=False
    )
    kept(output="<think>a secret plan</think>Thanks a lot!")
    assert "<think>a secret plan</think>" in llm_server.chat_requests[-1].body["messages"][0]["content"]
    assert "strip_reasoning" not in judge.signature() and kept.signature()["strip_reasoning"] is False


MESSAGES = [
    ({"role": "assistant", "content": "The answer is 4.", "reasoning_content": "2 + 2 = 4"}, "2 + 2 = 4"),
    ({"role": "assistant", "content": "The answer is 4.", "reasoning": "2 + 2 = 4"}, "2 + 2 = 4"),
    (
        {
            "role": "assistant",
            "type": "message",
            "content": [
                {"type": "thinking", "thinking": "2 + 2 = 4", "signature": "sig"},
                {"type": "text", "text": "The answer is 4."},
            ],
        },
        "2 + 2 = 4",
    ),
    ({"role": "assistant", "content": "<think>2 + 2 = 4</think>The answer is 4."}, "2 + 2 = 4"),
    ({"role": "assistant", "content": "The answer is 4."}, ""),
]


@pytest.mark.parametrize("message, reasoning", MESSAGES)
def test_a_structured_outputs_reasoning_fields_are_never_the_answer(
    llm_server: LoopbackLLM, message: dict[str, Any], reasoning: str
) -> None:
    pytest.importorskip("sacrebleu")
    assert scorers.get("BLEU")(output=message, expected=REFERENCE).score == 1.0
    llm_server.default = Reply.choice("Yes")
    sound = LLMClassifier(
        "Sound", "Reasoning: {{reasoning}}\nAnswer: {{output}}", {"Yes": 1, "No": 0}, engine=engine(llm_server)
    )
    sound(output=message)
    prompt = llm_server.chat_requests[-1].body["messages"][0]["content"]
    assert prompt.startswith(f"Reasoning: {reasoning}\nAnswer: The answer is 4.\n")


CHAT_REPLY = {
    "id": "c1",
    "object": "chat.completion",
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": '{"choice": "Yes"}', "REASONING_KEY": 'No? {"choice": "No"}'},
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 5},
}
RESPONSES_REPLY = {
    "id": "r1",
    "object": "response",
    "status": "completed",
    "model": "m",
    "output": [
        {"type": "reasoning", "id": "rs1", "summary": [{"type": "summary_text", "text": 'No? {"choice": "No"}'}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": '{"choice": "Yes"}', "annotations": []}],
        },
    ],
    "usage": {"input_tokens": 5, "output_tokens": 5},
}


@pytest.mark.parametrize(
    "api, body",
    [
        ("chat", json.loads(json.dumps(CHAT_REPLY).replace("REASONING_KEY", "reasoning_content"))),
        ("chat", json.loads(json.dumps(CHAT_REPLY).replace("REASONING_KEY", "reasoning"))),
        ("responses", RESPONSES_REPLY),
    ],
)
def test_a_judges_reasoning_field_is_kept_apart_from_its_verdict(llm_server: LoopbackLLM, api: str, body: Any) -> None:
    llm_server.default = Reply.raw(body)
    judge = LLMClassifier(
        "Polite",
        "Is this polite?\n{{output}}",
        {"Yes": 1, "No": 0},
        response_mode="json_object",
        api=api,
        engine=engine(llm_server),
    )
    score = judge(output="Thanks!")
    assert score.metadata["choice"] == "Yes" and score.metadata["judge_reasoning"] == 'No? {"choice": "No"}'
    assert llm_server.request_count == 1


def test_a_pairwise_judge_compares_both_answers_without_their_reasoning(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.choice("A")
    judge = PairwiseJudge("Pref", "A: {{output}}\nB: {{other}}", other="other", engine=engine(llm_server))
    judge(output="<think>mine</think>Paris.", other="<think>theirs</think>Lyon.")
    prompt = llm_server.chat_requests[-1].body["messages"][0]["content"]
    assert prompt.startswith("A: Paris.\nB: Lyon.\n") and "think" not in prompt
    assert judge(output="Paris.", other="<think>cut").metadata["incomplete_reasoning"] is True
