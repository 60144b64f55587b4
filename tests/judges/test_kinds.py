"""The judge kinds of the template DSL (rubric, rating, pairwise, geval) over real HTTP against LoopbackLLM."""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import scorers
from scorers.errors import ConfigError, JudgeError
from scorers.judges import GEvalJudge, LLMClassifier, PairwiseJudge, RatingJudge, RubricJudge
from scorers.judges.discovery import builtin_template_dir, check_templates, template_files
from scorers.judges.spec import json_schema
from scorers.llm import EndpointConfigError, LLMEngine
from scorers.testing import LoopbackLLM, Reply

CRITERIA = [
    {"name": "concise", "description": "No needless words."},
    {"name": "accurate", "description": "Agrees with the source.", "weight": 3},
]


def engine(server: LoopbackLLM, **settings: Any) -> LLMEngine:
    return LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False, max_reasks=1, **settings)


def rubric(server: LoopbackLLM, **settings: Any) -> RubricJudge:
    return RubricJudge(
        "Rubric", "Source: {{input}}\nSummary: {{output}}", criteria=CRITERIA, engine=engine(server), **settings
    )


# -------------------------------------------------------------------- rubric
@pytest.mark.parametrize(
    "grades, score, passed",
    [
        ({"concise": 5, "accurate": 5}, 1.0, True),
        ({"concise": 1, "accurate": 1}, 0.0, False),
        ({"concise": 1, "accurate": 5}, 0.75, True),  # weights 1 and 3: (0 + 3·1) / 4; raw mean (1 + 15) / 4 = 4
        ({"concise": 5, "accurate": 4}, (1 + 3 * 0.75) / 4, False),  # raw mean 4.25 < 4.5
    ],
)
def test_rubric_weighted_mean_and_threshold(llm_server: LoopbackLLM, grades: dict, score: float, passed: bool) -> None:
    threshold = 4.0 if grades == {"concise": 1, "accurate": 5} else 4.5
    llm_server.default = Reply.tool_call({"reasons": "checked", **grades}, name="grade_rubric")
    result = rubric(llm_server, threshold=threshold)(input="text", output="summary")
    assert math.isclose(result.score, score) and result.metadata["passed"] is passed
    assert result.metadata["criteria"] == grades and result.metadata["rationale"] == "checked"
    parameters = llm_server.chat_requests[0].body["tools"][0]["function"]["parameters"]
    assert list(parameters["properties"]) == ["reasons", "concise", "accurate"]  # reasons first
    assert parameters["properties"]["accurate"] == {
        "type": "integer",
        "enum": [1, 2, 3, 4, 5],
        "description": "Agrees with the source.",
    }


def test_rubric_grade_off_the_scale_is_reasked_then_a_judge_error(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.tool_call({"reasons": "x", "concise": 6, "accurate": 5}, name="grade_rubric")
    with pytest.raises(JudgeError, match="outside the scale"):
        rubric(llm_server)(input="t", output="s")
    assert len(llm_server.chat_requests) == 2  # one re-ask (max_reasks=1)


def test_rubric_json_object_mode_puts_the_schema_in_the_prompt_and_the_request(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.json({"concise": 4, "accurate": 2})
    result = rubric(llm_server, response_mode="json_object", use_cot=False)(input="t", output="s")
    body = llm_server.chat_requests[0].body
    assert body["response_format"]["type"] == "json_object" and "schema" in body["response_format"]
    assert '"concise"' in body["messages"][-1]["content"] and result.metadata["response_mode"] == "json_object"
    assert math.isclose(result.score, (0.75 + 3 * 0.25) / 4) and "passed" not in result.metadata


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"response_mode": "text"}, "structured reply"),
        ({"criteria": [{"name": "a", "description": "x", "anchors": {9: "too high"}}]}, "outside the scale"),
        ({"criteria": [{"name": "a", "description": "x"}, {"name": "a", "description": "y"}]}, "distinct"),
        ({"threshold": 7}, "threshold"),
        ({"scale": {"min": 5, "max": 1}}, "below max"),
        ({"criteria": []}, "criteria"),
    ],
)
def test_rubric_bad_settings_are_config_errors(settings: dict, message: str) -> None:
    arguments = {"criteria": CRITERIA, **settings}
    with pytest.raises(ConfigError, match=message):
        RubricJudge("Bad", "{{output}}", **arguments)


def test_the_shipped_rubric_example() -> None:
    judge = scorers.get("SummaryRubric")
    assert isinstance(judge, RubricJudge) and judge.threshold == 4.5 and (judge.scale.min, judge.scale.max) == (1, 5)
    assert [c.name for c in judge.criteria] == ["conciseness", "accuracy", "tone"]
    assert judge.required_fields() == ["input", "output"]


# -------------------------------------------------------------------- rating
@pytest.mark.parametrize(
    "mode, reply, rating",
    [
        ("tools", Reply.tool_call({"reasons": "ok", "rating": 10}, name="record_rating"), 10),
        ("json", Reply.json({"reasons": "ok", "rating": 1}), 1),
        ("text", Reply.text("Clear, a bit long.\nRating: 4/10"), 4),
    ],
)
def test_rating_maps_the_scale_onto_zero_one(llm_server: LoopbackLLM, mode: str, reply: Reply, rating: int) -> None:
    llm_server.default = reply
    judge = RatingJudge(
        "Clarity", "Rate {{output}}", scale={"min": 1, "max": 10}, response_mode=mode, engine=engine(llm_server)
    )
    result = judge(output="x")
    assert result.score == (rating - 1) / 9 and result.metadata["rating"] == rating
    assert result.metadata["response_mode"] == mode


def test_rating_needs_a_scale_and_rejects_a_rating_off_it(llm_server: LoopbackLLM) -> None:
    with pytest.raises(ConfigError, match="scale"):
        RatingJudge("R", "{{output}}", scale={"min": 3, "max": 3})
    llm_server.default = Reply.text("11")
    judge = RatingJudge(
        "R", "{{output}}", scale={"min": 1, "max": 10}, response_mode="text", use_cot=False, engine=engine(llm_server)
    )
    with pytest.raises(JudgeError, match="outside the scale"):
        judge(output="x")


# ------------------------------------------------------------------ pairwise
def test_pairwise_swap_asks_both_orders_and_reports_agreement(llm_server: LoopbackLLM) -> None:
    llm_server.script(Reply.choice("A", reasons="first is better"), match="A: mine")
    llm_server.script(Reply.choice("B", reasons="second is better"), match="A: theirs")
    judge = PairwiseJudge("Pref", "A: {{output}}\nB: {{expected}}", swap=True, engine=engine(llm_server))
    result = judge(output="mine", expected="theirs")
    assert result.score == 1.0 and result.metadata["agreement"] is True and result.metadata["position_bias"] is None
    assert result.metadata["winner"] == "output" and result.metadata["choices"] == ["A", "B"]
    first, second = (r.body["messages"][-1]["content"] for r in llm_server.chat_requests)
    assert first.startswith("A: mine\nB: theirs") and second.startswith("A: theirs\nB: mine")


@pytest.mark.parametrize(
    "picks, score, bias",
    [(["A", "A"], 0.5, "first"), (["B", "B"], 0.5, "second"), (["tie", "tie"], 0.5, None), (["B", "A"], 0.0, None)],
)
def test_pairwise_mean_of_both_orders(llm_server: LoopbackLLM, picks: list, score: float, bias: Any) -> None:
    llm_server.script(Reply.choice(picks[0]), match="A: mine")
    llm_server.script(Reply.choice(picks[1]), match="A: theirs")
    judge = PairwiseJudge(
        "Pref",
        "A: {{output}}\nB: {{reference}}",
        other="reference",
        swap=True,
        use_cot=False,
        engine=engine(llm_server),
    )
    result = judge(output="mine", reference="theirs")
    assert result.score == score and result.metadata["position_bias"] == bias


def test_pairwise_without_tie_and_with_one_output_shown(llm_server: LoopbackLLM) -> None:
    judge = PairwiseJudge("Pref", "{{output}} vs {{expected}}", allow_tie=False, engine=engine(llm_server))
    llm_server.default = Reply.choice("tie")
    with pytest.raises(JudgeError, match="not one of A, B"):
        judge(output="a", expected="b")
    with pytest.raises(ConfigError, match="must show both outputs"):
        PairwiseJudge("Pref", "Only {{output}}")


# --------------------------------------------------------------------- geval
def geval(server: LoopbackLLM, **settings: Any) -> GEvalJudge:
    arguments = {
        "criteria": "Is it coherent?",
        "steps": ["Read it.", "Judge the flow."],
        "scale": {"min": 1, "max": 5},
        "engine": engine(server),
        **settings,
    }
    return GEvalJudge("Coherence", "Text: {{output}}", **arguments)


def test_geval_logprobs_weights_the_alternatives_on_the_scale(llm_server: LoopbackLLM) -> None:
    # p(4)=0.6, p(5)=0.3, p(2)=0.005 (< min_prob: dropped), "x" is not a number
    llm_server.default = Reply.text(
        "4", top_logprobs=[{"4": math.log(0.6), "5": math.log(0.3), "2": math.log(0.005), "x": math.log(0.095)}]
    )
    result = geval(llm_server)(output="text")
    expected = (4 * 0.6 + 5 * 0.3) / 0.9
    assert math.isclose(result.metadata["expected_score"], expected)
    assert math.isclose(result.score, (expected - 1) / 4) and result.metadata["written_score"] == 4
    assert set(result.metadata["probabilities"]) == {"4", "5"}
    body = llm_server.chat_requests[0].body
    assert (
        body["logprobs"] is True and body["top_logprobs"] == 20 and "Judge the flow." in body["messages"][-1]["content"]
    )


def test_geval_top_token_mode_reads_the_number(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.json({"score": 2})
    result = geval(llm_server, score_mode="top_token", response_mode="json")(output="text")
    assert result.score == 0.25 and "probabilities" not in result.metadata
    assert "logprobs" not in llm_server.chat_requests[0].body


def test_geval_without_logprobs_is_a_config_error_never_a_fallback() -> None:
    with LoopbackLLM(default=Reply.text("4", top_logprobs=[{"4": -0.1}]), logprobs=False) as server:
        with pytest.raises(EndpointConfigError, match="logprobs"):
            geval(server)(output="text")
    with pytest.raises(ConfigError, match="logprobs"):
        GEvalJudge("G", "{{output}}", criteria="c", response_mode="tools")


def completion_with_logprobs(content: str, tokens: list[dict[str, Any]]) -> Reply:
    """A chat completion body as is, with ``tokens`` as its logprobs (what LoopbackLLM would not serve)."""
    return Reply.raw(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": {"content": tokens, "refusal": None},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
        }
    )


def test_geval_from_an_endpoint_without_top_logprobs_is_a_config_error_never_probability_1() -> None:
    """An endpoint that sends each token's logprob but no alternatives (``top_logprobs: []``): the written token
    was once taken as certain (p = 1) while the metadata said ``logprobs``."""
    reply = completion_with_logprobs("4", [{"token": "4", "logprob": -0.9, "top_logprobs": []}])
    with LoopbackLLM(default=reply) as server:
        judge = geval(server)
        with pytest.raises(EndpointConfigError) as info:
            judge(output="text")
        outcomes = judge.score_batch([{"output": "a"}, {"output": "b"}])
        url = server.base_url
    message = str(info.value)
    assert isinstance(info.value, ConfigError) and info.value.scorer == "Coherence"
    assert message.startswith("Coherence: ") and url in message
    assert "without the top_logprobs alternatives asked for (20 per token)" in message
    assert "score_mode='top_token'" in message
    assert all(isinstance(outcome, EndpointConfigError) for outcome in outcomes)


def test_geval_with_no_alternative_on_the_scale_is_the_rows_judge_error(llm_server: LoopbackLLM) -> None:
    """Every alternative off the scale or under min_prob: nothing to weigh (it was a ZeroDivisionError)."""
    llm_server.default = Reply.text("4", top_logprobs=[{"4": math.log(0.005), "four": math.log(0.9)}])
    judge = geval(llm_server)
    with pytest.raises(
        JudgeError,
        match=r"Coherence: no alternative of the score token '4' is a whole number on "
        r"the scale \[1, 5\] with probability >= min_prob 0.01 \(alternatives: 'four': 0.9, '4': 0.005\)",
    ) as info:
        judge(output="text")
    assert not isinstance(info.value, ConfigError)
    (outcome,) = judge.score_batch([{"output": "a"}])
    assert isinstance(outcome, JudgeError) and outcome.usage["failed_calls"] == 1


def test_geval_with_a_logprob_above_0_is_an_unusable_reply(llm_server: LoopbackLLM) -> None:
    """A log-probability of 1000 is no probability (e^1000 was an OverflowError): the reply is re-asked, then
    the row's JudgeError."""
    llm_server.default = Reply.text("4", top_logprobs=[{"4": -0.1, "5": 1000.0}])
    with pytest.raises(
        JudgeError,
        match=r"Coherence: the judge's reply was unusable after 2 asks: .*1000.0 is not "
        r"a log-probability \(a number <= 0\)",
    ) as info:
        geval(llm_server)(output="text")
    assert not isinstance(info.value, ConfigError) and len(llm_server.chat_requests) == 2


def test_geval_generates_steps_once_and_the_cache_pins_them(llm_server: LoopbackLLM, tmp_path: Path) -> None:
    llm_server.script(
        Reply.json({"steps": ["Read the text.", "Check each sentence follows."]}), match="evaluation steps"
    )
    llm_server.default = Reply.text("3", top_logprobs=[{"3": 0.0}])
    cached = LLMEngine(base_url=llm_server.base_url, api_key="placeholder", cache=str(tmp_path / "cache.sqlite"))
    judge = GEvalJudge("G", "Text: {{output}}", criteria="Is it coherent?", engine=cached)
    results = judge.score_batch([{"output": "a"}, {"output": "b"}])
    assert [r.metadata["steps"] for r in results] == [["Read the text.", "Check each sentence follows."]] * 2
    assert results[0].metadata["steps_generated"] is True and len(llm_server.chat_requests) == 3
    again = GEvalJudge("G", "Text: {{output}}", criteria="Is it coherent?", engine=cached)(output="c")
    assert again.metadata["steps"] == results[0].metadata["steps"]
    assert sum("evaluation steps" in r.last_user_message for r in llm_server.chat_requests) == 1


# ---------------------------------------------------- request settings (every kind)
def test_reasoning_model_gets_no_temperature_and_a_completion_token_bound(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.tool_call({"reasons": "r", "rating": 3}, name="record_rating")
    judge = RatingJudge(
        "R",
        "{{output}}",
        scale={"min": 1, "max": 5},
        model="o3-mini",
        reasoning_effort="low",
        engine=engine(llm_server),
    )
    result = judge(output="x")
    body = llm_server.chat_requests[0].body
    assert "temperature" not in body and "max_tokens" not in body and body["max_completion_tokens"] > 0
    assert body["reasoning_effort"] == "low" and result.metadata["sent"]["reasoning_effort"] == "low"


@pytest.mark.parametrize(
    "make",
    [
        lambda e: LLMClassifier("C", "{{output}}", {"Y": 1, "N": 0}, engine=e),
        lambda e: RubricJudge("Ru", "{{output}}", criteria=CRITERIA, engine=e),
        lambda e: RatingJudge("Ra", "{{output}}", scale={"min": 1, "max": 5}, engine=e),
        lambda e: PairwiseJudge("P", "{{output}} {{expected}}", engine=e),
    ],
    ids=["classifier", "rubric", "rating", "pairwise"],
)
def test_every_call_is_bounded_and_extra_args_pass_through(llm_server: LoopbackLLM, make: Any) -> None:
    judge = make(engine(llm_server))
    with_extra = make(engine(llm_server)).partial()
    assert judge.signature() == with_extra.signature()
    with_extra = type(judge).from_definition(judge.template, {**_settings(judge), "extra_args": {"top_p": 0.5}})
    assert judge.signature() != with_extra.signature()
    request = with_extra.build_request({"output": "x", "expected": "y"})
    body = request.body("m")
    assert body["max_tokens"] == with_extra.output_budget() > 0 and body["top_p"] == 0.5


def _settings(judge: Any) -> dict:
    kind = {
        "criteria": getattr(judge, "criteria", None),
        "scale": getattr(judge, "scale", None),
        "choice_scores": getattr(judge, "choice_scores", None),
    }
    return {"engine": judge._engine, **{k: v for k, v in kind.items() if v is not None}}


def test_responses_api_judges_through_function_call_items(llm_server: LoopbackLLM) -> None:
    llm_server.default = Reply.tool_call({"reasons": "r", "concise": 5, "accurate": 5}, name="grade_rubric")
    result = rubric(llm_server, api="responses")(input="t", output="s")
    assert result.score == 1.0 and llm_server.chat_requests == [] and len(llm_server.responses_requests) == 1
    body = llm_server.responses_requests[0].body
    assert (
        body["tool_choice"] == {"type": "function", "name": "grade_rubric"}
        and result.metadata["sent"]["api"] == "responses"
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: RubricJudge("Ru", "{{output}}", criteria=CRITERIA, threshold=3),
        lambda: GEvalJudge("G", "{{output}}", criteria="c", steps=["s"]),
        lambda: PairwiseJudge("P", "{{output}} {{expected}}", swap=True),
    ],
    ids=["rubric", "geval", "pairwise"],
)
def test_kinds_pickle(make: Any) -> None:
    judge = make()
    copy = pickle.loads(pickle.dumps(judge))
    assert copy.signature() == judge.signature() and copy.params() == judge.params()


# -------------------------------------------------------------- YAML + schema
def test_kinds_load_from_yaml_and_register(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "clarity.yaml").write_text(
        textwrap.dedent("""\
        kind: rating
        prompt: "Rate {{output}}"
        scale: {min: 0, max: 10}
        response_mode: json_object
        extra_args: {top_p: 0.9}
        """)
    )
    from scorers.judges.discovery import build_judge, load_template_file

    (definition,) = load_template_file(tmp_path / "clarity.yaml")
    judge = build_judge(definition)
    assert isinstance(judge, RatingJudge) and judge.scale.max == 10 and judge.response_mode == "json_object"
    assert judge.extra_args == {"top_p": 0.9} and judge.name == "Clarity"


def test_check_reports_kind_problems_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "kind: rubric\nprompt: x {{output}}\ncriteria:\n  - name: tone\n    description: d\n"
        "    anchors: {1: a, 9: b}\nthreshold: 9\n"
    )
    problems = check_templates([path])
    assert [(p.key, p.line) for p in problems] == [("criteria[0].anchors", 6)], problems
    path.write_text("kind: pairwise\nprompt: Only {{output}}\n")
    (problem,) = check_templates([path])
    assert "both outputs" in problem.message


def test_schema_command_validates_every_builtin_template() -> None:
    import yaml

    out = subprocess.run([sys.executable, "-m", "scorers", "schema"], capture_output=True, text=True, check=True)
    schema = json.loads(out.stdout)
    assert schema == json.loads(json.dumps(json_schema()))
    validator = jsonschema.Draft202012Validator(schema)
    for path in template_files([builtin_template_dir()]):
        assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == [], path.name
    assert list(validator.iter_errors({"kind": "rating", "prompt": "x"}))  # no scale
    assert list(validator.iter_errors({"kind": "rating", "scale": {"min": 1, "max": 3}}))  # no prompt
    assert not list(validator.iter_errors({"kind": "rating", "prompt": "x", "scale": {"min": 1, "max": 3}}))
    assert list(validator.iter_errors({"prompt": "x", "choice_scores": {"Y": 1}, "tempreature": 0}))


def test_a_server_that_rejects_json_schema_gets_a_hint_naming_the_mode_to_use(llm_server: LoopbackLLM) -> None:
    from scorers.llm import RequestRejected

    llm_server.default = Reply.validation_error()  # llama-cpp-python's HTTP 500 for response_format json_schema
    judge = LLMClassifier("C", "{{output}}", {"Y": 1, "N": 0}, response_mode="json", engine=engine(llm_server))
    with pytest.raises(RequestRejected, match="use response_mode='json_object'") as info:
        judge(output="x")
    assert info.value.status == 500 and len(llm_server.chat_requests) == 1  # not retried
