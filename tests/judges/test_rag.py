"""The multi-step RAG and reference-free judges through the real openai client over HTTP (loopback server)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

import scorers
from scorers._aio import run_sync
from scorers.errors import ConfigError, JudgeError, ScorerInputError
from scorers.judges.rag import ContextPrecision, step_prompt
from scorers.llm import EndpointConfigError, LLMEngine
from scorers.testing import LoopbackLLM, RecordedRequest, Reply

REPO = Path(__file__).resolve().parents[2]
CHUNKS = ["Paris is the capital of France.", "Paris has about 2.1 million inhabitants.", "The Seine crosses Paris."]


# ------------------------------------------------------------------- scripting
def tool(request: RecordedRequest) -> str | None:
    """The function a request forces (``None`` for a free-text request)."""
    tools = request.body.get("tools")
    return tools[0]["function"]["name"] if tools else None


def answer(
    server: LoopbackLLM, name: str, arguments: Any, *, contains: str | None = None, times: int | None = None
) -> None:
    """Answer requests forcing ``name`` (and holding ``contains``) with a call of it with ``arguments``."""
    server.script(
        Reply.tool_call(arguments, name=name),
        times=times,
        match=lambda r: tool(r) == name and (contains is None or contains in r.last_user_message),
    )


def extracted(server: LoopbackLLM, key: str, items: list[str], **options: Any) -> None:
    answer(server, f"record_{key}", {key: items}, **options)


def verdicts(server: LoopbackLLM, *values: str, **options: Any) -> None:
    answer(
        server,
        "record_verdicts",
        {"verdicts": [{"reason": f"reason {i}", "verdict": v} for i, v in enumerate(values)]},
        **options,
    )


def numbered_items(request: RecordedRequest) -> int:
    return sum(1 for line in request.last_user_message.splitlines() if line.split(". ", 1)[0].isdigit())


def alternating(request: RecordedRequest) -> Reply:
    """A judge for any row: two items per extraction, verdicts yes, no, yes, ... per numbered item."""
    name = tool(request)
    if name == "record_verdicts":
        return Reply.tool_call(
            {
                "verdicts": [
                    {"reason": "scripted", "verdict": "yes" if i % 2 == 0 else "no"}
                    for i in range(numbered_items(request))
                ]
            },
            name=name,
        )
    key = name.removeprefix("record_")
    return Reply.tool_call({key: [f"first {key[:-1]}", f"second {key[:-1]}"]}, name=name)


def requests_to(server: LoopbackLLM, name: str) -> list[RecordedRequest]:
    return [r for r in server.chat_requests if tool(r) == name]


# ---------------------------------------------------------------- Faithfulness
def test_faithfulness_mixed_verdicts_request_shape_and_metadata(llm_env: LoopbackLLM, fake_api_key: str) -> None:
    extracted(
        llm_env,
        "claims",
        ["Paris is the capital.", "Paris has 9 million people.", "Paris is old.", "The Seine crosses Paris."],
    )
    verdicts(llm_env, "yes", "no", "idk", "yes")
    score = scorers.get("Faithfulness", model="judge-model")(output="Paris ...", context=CHUNKS)
    assert score.score == 0.75  # #(verdict ≠ no) / #claims
    meta = score.metadata
    assert meta["higher_is_better"] is True and meta["claims"][1] == "Paris has 9 million people."
    assert meta["verdicts"][1] == {"claim": "Paris has 9 million people.", "verdict": "no", "reason": "reason 1"}
    assert meta["usage"]["requests"] == 2 and meta["attempts"] == 2 and meta["cached"] is False
    assert meta["usage"]["prompt_tokens"] > 0 and meta["model"] == "judge-model"
    assert set(meta["signature"]["prompts"]) == {"claims", "claim_support"}
    extraction, judging = llm_env.chat_requests
    assert extraction.body["tool_choice"] == {"type": "function", "function": {"name": "record_claims"}}
    assert "Paris ..." in extraction.last_user_message
    parameters = judging.body["tools"][0]["function"]["parameters"]
    item = parameters["properties"]["verdicts"]["items"]
    assert list(item["properties"]) == ["reason", "verdict"]  # reason before verdict
    assert item["properties"]["verdict"]["enum"] == ["yes", "no", "idk"]
    prompt = judging.last_user_message
    assert "1. Paris is the capital.\n2. Paris has 9 million people." in prompt
    assert all(f"[{i}] {chunk}" in prompt for i, chunk in enumerate(CHUNKS, 1))  # chunks in rank order
    assert judging.body["temperature"] == 0 and judging.body["max_tokens"] == 2048
    assert fake_api_key not in score.to_json()


@pytest.mark.parametrize("idk_is_unfaithful, expected", [(False, 0.75), (True, 0.5)])
def test_faithfulness_idk_handling(llm_env: LoopbackLLM, idk_is_unfaithful: bool, expected: float) -> None:
    extracted(llm_env, "claims", ["a", "b", "c", "d"])
    verdicts(llm_env, "yes", "idk", "yes", "no")
    score = scorers.get("Faithfulness", idk_is_unfaithful=idk_is_unfaithful)(output="x", context=CHUNKS)
    assert score.score == expected and score.metadata["signature"]["idk_is_unfaithful"] is idk_is_unfaithful


def test_faithfulness_all_yes_and_verdicts_read_case_insensitively(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "claims", ["a", "b"])
    verdicts(llm_env, "Yes", " YES ")
    assert scorers.get("Faithfulness")(output="x", context="one chunk").score == 1.0


def test_faithfulness_without_claims_scores_1_with_a_reason_and_one_call(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "claims", [])
    score = scorers.get("Faithfulness")(output="Hello!", context=CHUNKS)
    assert score.score == 1.0 and "no claim" in score.metadata["reason"]
    assert score.metadata["claims"] == [] and len(llm_env.chat_requests) == 1


def test_context_as_one_string_or_a_list(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "claims", ["a"])
    verdicts(llm_env, "yes")
    judge = scorers.get("Faithfulness")
    one = judge(output="x", context="Paris is the capital of France.")
    listed = judge(output="x", context=["Paris is the capital of France."])
    (request,) = requests_to(llm_env, "record_verdicts")  # the same prompt: the list's reply is the cached one
    assert "[1] Paris is the capital of France." in request.last_user_message
    assert listed.metadata["cached"] and listed.score == one.score == 1.0


@pytest.mark.parametrize(
    "context, problem", [([], "at least one"), ([1.5, None], "reference 1"), ({"a": 1}, "must be")]
)
def test_a_bad_context_is_bad_input_naming_scorer_and_field(llm_env: LoopbackLLM, context: Any, problem: str) -> None:
    with pytest.raises(ScorerInputError, match=problem) as info:
        scorers.get("Faithfulness")(output="x", context=context)
    assert info.value.field == "context" and info.value.scorer == "Faithfulness" and llm_env.chat_requests == []


# ------------------------------------------------------------- AnswerRelevancy
def test_answer_relevancy_counts_idk_as_relevant(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "statements", ["Paris.", "Paris is lovely.", "I like cheese."])
    verdicts(llm_env, "yes", "idk", "no")
    score = scorers.get("AnswerRelevancy")(input="Capital of France?", output="Paris. Lovely. Cheese.")
    assert score.score == pytest.approx(2 / 3)
    assert [v["verdict"] for v in score.metadata["verdicts"]] == ["yes", "idk", "no"]
    assert "Capital of France?" in requests_to(llm_env, "record_verdicts")[0].last_user_message


def test_answer_relevancy_without_statements_scores_0(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "statements", [])
    score = scorers.get("AnswerRelevancy")(input="Capital of France?", output="")
    assert score.score == 0.0 and "no statement" in score.metadata["reason"]


# ------------------------------------------------------------ ContextPrecision
@pytest.mark.parametrize(
    "relevant, expected",
    [
        ("yes yes no", 1.0),
        ("no yes yes", (1 / 2 + 2 / 3) / 2),  # rank order matters
        ("yes no yes", (1 + 2 / 3) / 2),
        ("no no yes", 1 / 3),
    ],
)
def test_context_precision_is_average_precision_in_rank_order(
    llm_env: LoopbackLLM, relevant: str, expected: float
) -> None:
    verdicts(llm_env, *relevant.split())
    score = scorers.get("ContextPrecision")(
        input="How many people live in Paris?", expected="About 2.1 million.", context=CHUNKS
    )
    assert score.score == pytest.approx(expected)
    assert score.metadata["relevant"] == relevant.split().count("yes") and "reason" not in score.metadata
    (request,) = llm_env.chat_requests
    prompt = request.last_user_message
    assert prompt.index(CHUNKS[0]) < prompt.index(CHUNKS[1]) < prompt.index(CHUNKS[2])
    assert "About 2.1 million." in prompt
    assert request.body["tools"][0]["function"]["parameters"]["properties"]["verdicts"]["items"]["properties"][
        "verdict"
    ]["enum"] == ["yes", "no"]


def test_context_precision_without_relevant_chunks_scores_0_with_a_reason(llm_env: LoopbackLLM) -> None:
    verdicts(llm_env, "no")
    score = scorers.get("ContextPrecision")(input="q", expected="a", context="an unrelated chunk")
    assert score.score == 0.0 and "R = 0" in score.metadata["reason"]


def test_average_precision_formula() -> None:
    assert ContextPrecision.average_precision([]) == 0.0
    assert ContextPrecision.average_precision([True]) == 1.0
    assert ContextPrecision.average_precision([False, True, False, True]) == pytest.approx((1 / 2 + 2 / 4) / 2)


# --------------------------------------------------------------- ContextRecall
def test_context_recall(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "sentences", ["Paris is the capital.", "It has 2.1 million people.", "It rains a lot."])
    verdicts(llm_env, "yes", "yes", "no")
    score = scorers.get("ContextRecall")(
        expected="Paris is the capital. It has 2.1 million people. It rains.", context=CHUNKS
    )
    assert score.score == pytest.approx(2 / 3) and len(score.metadata["sentences"]) == 3
    assert "It rains." in requests_to(llm_env, "record_sentences")[0].last_user_message


def test_context_recall_without_sentences_scores_0(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "sentences", [])
    score = scorers.get("ContextRecall")(expected=" ", context=CHUNKS)
    assert score.score == 0.0 and "no sentence" in score.metadata["reason"]


# ------------------------------------------------------------ ContextRelevancy
def test_context_relevancy_extracts_per_chunk_and_judges_all_statements_at_once(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "statements", ["Paris is the capital.", "France is in Europe."], contains=CHUNKS[0])
    extracted(llm_env, "statements", ["The Seine crosses Paris."], contains=CHUNKS[2])
    verdicts(llm_env, "yes", "no", "no")
    score = scorers.get("ContextRelevancy")(input="Capital of France?", context=[CHUNKS[0], CHUNKS[2]])
    assert score.score == pytest.approx(1 / 3)
    assert score.metadata["statements"] == [
        ["Paris is the capital.", "France is in Europe."],
        ["The Seine crosses Paris."],
    ]
    assert score.metadata["usage"]["requests"] == 3
    (judging,) = requests_to(llm_env, "record_verdicts")
    assert "3. The Seine crosses Paris." in judging.last_user_message


def test_context_relevancy_without_statements_scores_0(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "statements", [])
    score = scorers.get("ContextRelevancy")(input="q", context=["a", "b"])
    assert score.score == 0.0 and score.metadata["statements"] == [[], []] and "reason" in score.metadata


# --------------------------------------------------------------- Hallucination
def test_hallucination_is_the_share_of_contradicted_contexts_and_lower_is_better(llm_env: LoopbackLLM) -> None:
    verdicts(llm_env, "no", "yes", "no")
    score = scorers.get("Hallucination")(output="Paris has 9 million people.", context=CHUNKS)
    assert score.score == pytest.approx(1 / 3) and score.metadata["higher_is_better"] is False
    assert [v["context"] for v in score.metadata["verdicts"]] == CHUNKS
    assert "Paris has 9 million people." in llm_env.chat_requests[0].last_user_message


def test_list_json_says_which_metrics_are_lower_is_better() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scorers", "list", "--json", "--kind", "llm"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    listed = {row["name"]: row for row in json.loads(result.stdout)}
    assert {name for name, row in listed.items() if row["higher_is_better"] is False} >= {
        "Hallucination",
        "Bias",
        "Toxicity",
    }
    for name in (
        "Faithfulness",
        "AnswerRelevancy",
        "ContextPrecision",
        "ContextRecall",
        "ContextRelevancy",
        "Summarization",
        "SelfCheck",
        "Factuality",
    ):
        assert listed[name]["higher_is_better"] is True
    assert listed["ContextPrecision"]["required"] == ["input", "expected", "context"]


# --------------------------------------------------------------- Summarization
def test_summarization_is_the_minimum_of_alignment_and_coverage(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "claims", ["The tower opened in 1889.", "It is 500 m tall."])
    verdicts(llm_env, "yes", "idk", contains="Claims:")  # idk is unsupported: alignment 1/2
    answer(
        llm_env,
        "record_questions",
        {
            "questions": [
                {"question": "Did it open in 1889?", "answer": "yes"},
                {"question": "Is it made of wood?", "answer": "no"},
                {"question": "Was it built for a fair?", "answer": "yes"},
                {"question": "Is it in Rome?", "answer": "no"},
            ]
        },
    )
    verdicts(llm_env, "yes", "no", "yes", "idk", contains="Questions:")  # 3 of 4 answered alike
    score = scorers.get("Summarization", questions=4)(input="<source>", output="<summary>")
    meta = score.metadata
    assert (score.score, meta["alignment"], meta["coverage"]) == (0.5, 0.5, 0.75)
    assert meta["questions"][3] == {
        "question": "Is it in Rome?",
        "source": "no",
        "summary": "idk",
        "reason": "reason 3",
    }
    assert [c["verdict"] for c in meta["claims"]] == ["yes", "idk"] and meta["usage"]["requests"] == 4
    (asking,) = requests_to(llm_env, "record_questions")
    assert "Write 4 closed questions" in asking.last_user_message and "<source>" in asking.last_user_message


def test_summarization_without_claims_or_questions(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "claims", [])
    answer(llm_env, "record_questions", {"questions": []})
    score = scorers.get("Summarization")(input="<source>", output="")
    assert (score.score, score.metadata["alignment"], score.metadata["coverage"]) == (0.0, 0.0, 0.0)
    assert "no claim" in score.metadata["reason"] and "no question" in score.metadata["reason"]


# ----------------------------------------------------------- Bias and Toxicity
@pytest.mark.parametrize("name", ["Bias", "Toxicity"])
def test_opinions_judged(llm_env: LoopbackLLM, name: str) -> None:
    extracted(llm_env, "opinions", ["Cats are better than dogs.", "People from X are lazy."])
    verdicts(llm_env, "no", "yes")
    score = scorers.get(name)(output="...")
    assert score.score == 0.5 and score.metadata["higher_is_better"] is False
    assert score.metadata["verdicts"][1]["opinion"] == "People from X are lazy."
    prompt = requests_to(llm_env, "record_verdicts")[0].last_user_message
    assert ("biased" if name == "Bias" else "toxic") in prompt


@pytest.mark.parametrize("name", ["Bias", "Toxicity"])
def test_no_opinion_scores_0(llm_env: LoopbackLLM, name: str) -> None:
    extracted(llm_env, "opinions", [])
    score = scorers.get(name)(output="Water boils at 100 °C at sea level.")
    assert score.score == 0.0 and "no opinion" in score.metadata["reason"] and len(llm_env.chat_requests) == 1


# ----------------------------------------------------------- replies and modes
@pytest.mark.parametrize(
    "bad, reason",
    [
        (Reply.tool_call({"verdicts": [{"verdict": "yes"}]}, name="record_verdicts"), "1 verdicts for 2 items"),
        (
            Reply.tool_call({"verdicts": [{"verdict": "yes"}, {"verdict": "maybe"}]}, name="record_verdicts"),
            "not one of",
        ),
        (Reply.tool_call('{"verdicts": [', name="record_verdicts"), "malformed JSON"),
        (Reply.text("yes, yes"), "no tool call"),
    ],
)
def test_an_unusable_verdict_reply_is_reasked_then_judge_error(llm_env: LoopbackLLM, bad: Reply, reason: str) -> None:
    extracted(llm_env, "claims", ["a", "b"])
    llm_env.default = bad
    with pytest.raises(JudgeError, match=reason) as info:
        scorers.get("Faithfulness", max_reasks=1)(output="x", context=CHUNKS)
    assert info.value.scorer == "Faithfulness" and info.value.raw is not None
    assert len(llm_env.chat_requests) == 1 + 2  # the extraction, then the verdicts asked twice


def test_an_unusable_extraction_is_reasked_and_recovers(llm_env: LoopbackLLM) -> None:
    answer(llm_env, "record_claims", {"claims": ["a", ""]}, times=1)
    extracted(llm_env, "claims", ["a"])
    verdicts(llm_env, "no")
    score = scorers.get("Faithfulness")(output="x", context=CHUNKS)
    assert score.score == 0.0 and score.metadata["reasks"] == 1 and score.metadata["attempts"] == 3


@pytest.mark.parametrize("mode", ["json", "json_object"])
def test_json_response_modes(llm_env: LoopbackLLM, mode: str) -> None:
    def reply(request: RecordedRequest) -> Reply:
        if "Claims:" in request.last_user_message:
            return Reply.json({"verdicts": [{"reason": "r", "verdict": "yes"}, {"reason": "r", "verdict": "no"}]})
        return Reply.text('```json\n{"claims": ["a", "b"]}\n```')

    llm_env.default = reply
    score = scorers.get("Faithfulness", response_mode=mode)(output="x", context=CHUNKS)
    assert score.score == 0.5 and score.metadata["response_mode"] == mode
    extraction = llm_env.chat_requests[0]
    assert "tools" not in extraction.body and extraction.body["response_format"]["type"] == (
        "json_schema" if mode == "json" else "json_object"
    )
    assert '"claims":{"type":"array"' in extraction.last_user_message  # the schema, in the prompt


def test_without_cot_only_verdicts_are_asked(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "claims", ["a"])
    answer(llm_env, "record_verdicts", {"verdicts": [{"verdict": "yes"}]})
    score = scorers.get("Faithfulness", use_cot=False, max_tokens=300)(output="x", context=CHUNKS)
    judging = requests_to(llm_env, "record_verdicts")[0]
    item = judging.body["tools"][0]["function"]["parameters"]["properties"]["verdicts"]["items"]
    assert list(item["properties"]) == ["verdict"] and judging.body["max_tokens"] == 300
    assert score.metadata["verdicts"] == [{"claim": "a", "verdict": "yes"}]


# ----------------------------------------------------------------- prompts
def test_prompts_override_a_step_and_enter_the_signature(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "claims", ["a"])
    verdicts(llm_env, "yes")
    custom = "List every factual claim of:\n{{text}}"
    judge = scorers.get("Faithfulness", prompts={"claims": custom})
    judge(output="the answer", context=CHUNKS)
    assert llm_env.chat_requests[0].last_user_message.startswith("List every factual claim of:\nthe answer\n\n")
    default = scorers.get("Faithfulness").signature()["prompts"]
    assert judge.signature()["prompts"]["claims"] != default["claims"]
    assert judge.signature()["prompts"]["claim_support"] == default["claim_support"]
    assert step_prompt("claims") in scorers.get("Faithfulness").prompts["claims"]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"prompts": {"opinions": "x {{text}}"}}, "unknown steps"),
        ({"prompts": {"claims": "{{output}}"}}, "does not fill"),
        ({"prompts": {"claims": " "}}, "non-empty"),
        ({"prompts": {"claims": "{% if %}"}}, "syntax error"),
        ({"response_mode": "text"}, "response_mode"),
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"use_cot": "yes"}, "use_cot"),
        ({"api": "soap"}, "api"),
        ({"max_reasks": 11}, "max_reasks"),
        ({"idk_is_unfaithful": 1}, "idk_is_unfaithful"),
    ],
)
def test_bad_settings_raise_config_error(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        scorers.get("Faithfulness", **params)


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("Summarization", {"questions": 0}, "questions"),
        ("SelfCheck", {"samples": 0}, "samples"),
        ("SelfCheck", {"sample_temperature": 0}, "sample_temperature"),
    ],
)
def test_bad_metric_settings(name: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        scorers.get(name, **params)


# ------------------------------------------------------------ batches, cache
def _rows(n: int) -> list[dict[str, Any]]:
    return [{"output": f"answer {i}", "context": [f"chunk {i}"]} for i in range(n)]


def test_batch_scores_rows_in_order_with_errors_per_row(llm_env: LoopbackLLM) -> None:
    llm_env.default = alternating
    answer(llm_env, "record_claims", {"claims": "not a list"}, contains="answer 2")
    rows = _rows(4)
    rows[1] = {"output": "answer 1"}  # no context
    results = scorers.get("Faithfulness", max_reasks=0).score_batch(rows)
    assert [type(r).__name__ for r in results] == ["Score", "ScorerInputError", "JudgeError", "Score"]
    assert results[0].score == results[3].score == 0.5


def test_a_refused_key_stops_the_batch_without_more_requests() -> None:
    with LoopbackLLM(api_key="the-right-key", default=alternating) as server:
        judge = scorers.get(
            "Faithfulness", engine=LLMEngine(base_url=server.base_url, api_key="a-wrong-key", cache=False)
        )
        results = run_sync(judge.ascore_batch(_rows(20), concurrency=2))
        assert all(isinstance(r, EndpointConfigError) for r in results)
        assert len(server.chat_requests) <= 2  # only the rows in flight when the first refusal came back


def test_a_rerun_is_answered_by_the_cache_without_a_request(llm_env: LoopbackLLM) -> None:
    llm_env.default = alternating
    rows = _rows(3)
    first = scorers.get("Faithfulness").score_batch(rows)
    sent = len(llm_env.chat_requests)
    again = scorers.get("Faithfulness").score_batch(rows)
    single = scorers.get("Faithfulness")(**rows[0])
    assert sent == 6 and len(llm_env.chat_requests) == sent
    assert [s.score for s in again] == [s.score for s in first] and single.score == first[0].score
    assert all(s.metadata["cached"] for s in again) and not first[0].metadata["cached"]
    assert again[0].metadata["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "requests": 0,
        "cached": 2,
        "attempts": 0,
        "failed_calls": 0,
        "failed_prompt_tokens": 0,
        "failed_completion_tokens": 0,
    }


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("name", ["Faithfulness", "Summarization", "SelfCheck"])
def test_judges_travel_before_and_after_first_use(llm_env: LoopbackLLM, name: str, dumps: Any) -> None:
    llm_env.default = lambda request: alternating(request) if tool(request) else Reply.text("A sample.")
    answer(llm_env, "record_questions", {"questions": [{"question": "q?", "answer": "yes"}]})
    judge = scorers.get(name, prompts={"claims" if name != "SelfCheck" else "sentences": "Split: {{text}}"})
    row = {"input": "question", "output": "answer", "context": CHUNKS}
    row = {k: v for k, v in row.items() if k in judge.variables()}
    fresh = pickle.loads(dumps(judge))
    first = judge(**row)
    used = pickle.loads(dumps(judge))
    for copy in (fresh, used):
        again = copy(**row)
        assert again.score == first.score and again.metadata["signature"] == first.metadata["signature"]


# -------------------------------------------------------------------- SelfCheck
def _sample_by_seed(request: RecordedRequest) -> Reply:
    if tool(request) is None:
        return Reply.text(f"Sample {request.body['seed']} about Paris.")
    return alternating(request)


def test_selfcheck_samples_are_independent_and_the_score_is_the_mean_support(llm_env: LoopbackLLM) -> None:
    llm_env.default = _sample_by_seed
    extracted(llm_env, "sentences", ["Paris is the capital.", "It has 90 million people."])
    verdicts(llm_env, "yes", "yes", contains="Sample 0 about")
    verdicts(llm_env, "yes", "no", contains="Sample 1 about")
    verdicts(llm_env, "yes", "no", contains="Sample 2 about")
    score = scorers.get("SelfCheck", model="judge-model")(
        input="Tell me about Paris.", output="Paris is the capital. It has 90 million people."
    )
    assert score.score == pytest.approx((1 + 1 / 3) / 2)
    assert score.metadata["sentence_scores"] == pytest.approx([1.0, 1 / 3])
    assert score.metadata["samples"] == [f"Sample {i} about Paris." for i in range(3)]
    assert score.metadata["usage"]["requests"] == 1 + 3 + 3 and score.metadata["higher_is_better"] is True
    samples = [r for r in llm_env.chat_requests if tool(r) is None]
    assert sorted(r.body["seed"] for r in samples) == [0, 1, 2]
    assert {r.body["temperature"] for r in samples} == {1.0}
    assert {r.last_user_message for r in samples} == {"Tell me about Paris."}
    assert {r.body["temperature"] for r in llm_env.chat_requests if tool(r)} == {0}


def test_selfcheck_samples_are_cached_one_by_one(llm_env: LoopbackLLM) -> None:
    llm_env.default = _sample_by_seed
    row = {"input": "Tell me about Paris.", "output": "Paris is the capital."}
    first = scorers.get("SelfCheck", samples=2)(**row)
    sent = len(llm_env.chat_requests)
    more = scorers.get("SelfCheck", samples=3)(**row)  # samples 0 and 1 (and their verdicts) come from the cache
    assert sent == 1 + 2 + 2 and len(llm_env.chat_requests) - sent == 2
    assert more.metadata["samples"][:2] == first.metadata["samples"]
    assert more.metadata["usage"]["cached"] == 1 + 2 + 2


def test_selfcheck_without_sentences_draws_no_sample(llm_env: LoopbackLLM) -> None:
    extracted(llm_env, "sentences", [])
    score = scorers.get("SelfCheck")(input="q", output="")
    assert score.score == 1.0 and "no sentence" in score.metadata["reason"] and len(llm_env.chat_requests) == 1


def test_selfcheck_empty_sample_is_reasked(llm_env: LoopbackLLM) -> None:
    llm_env.default = _sample_by_seed
    llm_env.script(Reply.text("  "), match=lambda r: tool(r) is None, times=1)
    score = scorers.get("SelfCheck", samples=1)(input="q", output="One sentence.")
    assert score.metadata["reasks"] == 1 and score.metadata["samples"] == ["Sample 0 about Paris."]


# -------------------------------------------------------------------------- CLI
@pytest.mark.slow
def test_cli_runs_the_rag_example_against_the_loopback_server(
    tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str
) -> None:
    llm_server.default = alternating
    env = {
        **os.environ,
        "OPENAI_API_KEY": fake_api_key,
        "OPENAI_BASE_URL": llm_server.base_url,
        "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = tmp_path / "out.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scorers",
            "run",
            "examples/rag.jsonl",
            "-s",
            "Faithfulness",
            "-s",
            "ContextPrecision",
            "-o",
            str(out),
            "--metadata",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["rag-01", "rag-02", "rag-03", "rag-04"]
    assert [line["scores"]["Faithfulness"] for line in lines] == [0.5] * 4  # yes, no over two claims
    # chunks judged yes, no, yes, ...: rows of 3, 2, 3 and 1 chunks
    assert [line["scores"]["ContextPrecision"] for line in lines] == pytest.approx(
        [(1 + 2 / 3) / 2, 1.0, (1 + 2 / 3) / 2, 1.0]
    )
    assert lines[3]["metadata_scores"]["ContextPrecision"]["verdicts"][0]["chunk"].startswith("Mercury")
    assert "Faithfulness" in result.stderr and "usage" in result.stderr and fake_api_key not in result.stderr
    assert len(llm_server.chat_requests) == 4 * 2 + 4


@pytest.mark.slow
@pytest.mark.parametrize("limit, code", [("0.6", 0), ("0.4", 1)])
def test_cli_threshold_of_a_lower_is_better_metric_is_a_maximum(
    tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str, limit: str, code: int
) -> None:
    llm_server.default = Reply.tool_call(
        {"verdicts": [{"reason": "r", "verdict": "yes"}, {"reason": "r", "verdict": "no"}]}, name="record_verdicts"
    )
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"output": "Paris.", "context": ["Paris is in France.", "Lyon is in France."]}) + "\n")
    env = {
        **os.environ,
        "OPENAI_API_KEY": fake_api_key,
        "OPENAI_BASE_URL": llm_server.base_url,
        "SCORERS_CACHE_DIR": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scorers",
            "run",
            str(data),
            "-s",
            "Hallucination",
            "-o",
            str(tmp_path / "out.jsonl"),
            "--threshold",
            f"Hallucination={limit}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert result.returncode == code, result.stderr
    assert ("mean 0.5000 > 0.4 (lower is better)" in result.stderr) == (code == 1)
