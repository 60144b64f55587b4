"""LLMClassifier through the real openai client over HTTP against the loopback server."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path
from typing import Any

import autoevals
import cloudpickle
import openai
import pytest

import scorers
from scorers.errors import ConfigError, JudgeError, ScorerInputError, UnknownArgumentError
from scorers.judges import LLMClassifier, parse_text_choice, read_reply
from scorers.judges.discovery import build_judge, load_template_file
from scorers.llm.engine import ChatResult, InvalidReply, LLMEngine, ToolCall
from scorers.testing import LoopbackLLM, RecordedRequest, Reply

MODEL = "gpt-4o-mini"
FACTS = {"input": "What is the capital of France?", "expected": "Paris", "output": "Paris is the capital."}
FACTUALITY = {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}


def factuality(**params: Any) -> LLMClassifier:
    return scorers.get("Factuality", model=MODEL, **params)


def body(server: LoopbackLLM, index: int = -1) -> dict[str, Any]:
    return server.chat_requests[index].body


# --------------------------------------------------------------- request shape
def test_tools_request_shape_and_metadata(llm_env: LoopbackLLM, fake_api_key: str) -> None:
    llm_env.default = Reply.choice("C", reasons="Both name Paris.")
    score = factuality()(**FACTS)
    assert score.score == 1.0 and score.name == "Factuality"
    sent = body(llm_env)
    assert sent["model"] == MODEL and sent["temperature"] == 0
    (tool,) = sent["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "select_choice"
    parameters = tool["function"]["parameters"]
    assert list(parameters["properties"]) == ["reasons", "choice"]  # reasons before choice
    assert parameters["required"] == ["reasons", "choice"]
    assert parameters["properties"]["choice"] == {
        **parameters["properties"]["choice"],
        "type": "string",
        "enum": ["A", "B", "C", "D", "E"],
    }
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
    assert "response_format" not in sent and "seed" not in sent
    (message,) = sent["messages"]
    assert message["role"] == "user"
    assert all(value in message["content"] for value in FACTS.values())
    meta = score.metadata
    assert meta["choice"] == "C" and meta["rationale"] == "Both name Paris." and meta["response_mode"] == "tools"
    assert meta["usage"]["prompt_tokens"] > 0 and meta["usage"]["completion_tokens"] > 0
    assert meta["attempts"] == 1 and meta["cached"] is False and meta["latency_s"] >= 0
    signature = meta["signature"]
    assert signature["model"] == MODEL and signature["scorers_version"] == scorers.__version__
    assert signature["template"]["name"] == "Factuality" and len(signature["template"]["hash"]) == 16
    assert signature["response_mode"] == "tools" and signature["use_cot"] is True
    assert fake_api_key not in score.to_json()


def test_without_cot_only_choice_is_asked(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("A")
    score = factuality(use_cot=False, temperature=None, max_tokens=64)(**FACTS)
    sent = body(llm_env)
    assert list(sent["tools"][0]["function"]["parameters"]["properties"]) == ["choice"]
    assert "temperature" not in sent and sent["max_tokens"] == 64
    assert score.score == 0.4 and "rationale" not in score.metadata


@pytest.mark.parametrize(
    "mode, reply, choice",
    [
        ("tools", Reply.tool_call('  { "reasons": "ok",  "choice": " B " }'), "B"),  # odd whitespace, padded choice
        ("tools", Reply.tool_call({"reasons": ["one", "two"], "choice": "E"}), "E"),
        ("json", Reply.json({"reasons": "superset", "choice": "B"}), "B"),
        ("json", Reply.text('```json\n{"reasons": "r", "choice": "D"}\n```'), "D"),
        ("text", Reply.text("The answer adds detail.\nIt agrees otherwise.\n\n**B**"), "B"),
        ("text", Reply.text("Reasoning here.\nFinal answer: D."), "D"),
    ],
)
def test_response_modes(llm_env: LoopbackLLM, mode: str, reply: Reply, choice: str) -> None:
    llm_env.default = reply
    score = factuality(response_mode=mode)(**FACTS)
    assert (score.score, score.metadata["choice"], score.metadata["response_mode"]) == (
        FACTUALITY[choice],
        choice,
        mode,
    )
    sent = body(llm_env)
    assert ("tools" in sent, "response_format" in sent) == {
        "tools": (True, False),
        "json": (False, True),
        "text": (False, False),
    }[mode]
    if mode == "json":
        schema = sent["response_format"]["json_schema"]["schema"]
        assert list(schema["properties"]) == ["reasons", "choice"]
        assert schema["properties"]["choice"]["enum"] == list(FACTUALITY)


# ------------------------------------------------------------ unusable replies
BAD_REPLIES = [
    ("tools", Reply.text("C"), "no tool call"),
    ("tools", Reply.tool_call({"choice": "C"}, name="other_tool"), "instead of 'select_choice'"),
    ("tools", Reply.tool_call('{"choice": "C"'), "malformed JSON"),
    ("tools", Reply.tool_call("[1, 2]"), "not an object"),
    ("tools", Reply.choice("F", reasons="made up"), "not one of"),
    ("tools", Reply.choice("c"), "not one of"),
    ("tools", Reply.tool_call({"reasons": "no choice"}), "no 'choice'"),
    ("json", Reply.text("C because it matches"), "malformed JSON"),
    ("json", Reply.json({"choice": "Z"}), "not one of"),
    ("text", Reply.text("I cannot decide."), "no line"),
    ("text", Reply.text(""), "no text content"),
]


@pytest.mark.parametrize("mode, reply, reason", BAD_REPLIES, ids=[f"{m}-{r}" for m, _, r in BAD_REPLIES])
def test_unusable_reply_is_reasked_then_judge_error(llm_env: LoopbackLLM, mode: str, reply: Reply, reason: str) -> None:
    llm_env.default = reply
    judge = factuality(response_mode=mode, max_reasks=2)
    with pytest.raises(JudgeError) as info:
        judge(**FACTS)
    assert reason in str(info.value)
    assert info.value.raw is not None and info.value.scorer == "Factuality"
    assert len(llm_env.chat_requests) == 3


@pytest.mark.parametrize("bad", [Reply.text("no tool"), Reply.choice("Z"), Reply.tool_call("{oops")])
def test_reask_recovers(llm_env: LoopbackLLM, bad: Reply) -> None:
    llm_env.script(bad, times=1)
    llm_env.default = Reply.choice("D", reasons="Berlin is wrong")
    score = factuality()(**FACTS)
    assert score.score == 0.0 and score.metadata["attempts"] == 2
    assert len(llm_env.chat_requests) == 2


@pytest.mark.parametrize(
    "text, choices, expected",
    [
        ("C", "ABCDE", "C"),
        ("reasoning\nC", "ABCDE", "C"),
        ("reasoning\n(C)", "ABCDE", "C"),
        ("reasoning\nThe answer is E.", "ABCDE", "E"),
        ("B is my pick\n\n", "ABCDE", "B"),
        ("A\nthen B\nthen nothing", "ABCDE", "B"),
        ("Actually unsure", "ABCDE", None),
        ("Yes, it is funny.", ["Yes", "No", "Unsure"], "Yes"),
        ("Incorrect", ["Correct", "Incorrect"], "Incorrect"),
        ("", "AB", None),
    ],
)
def test_parse_text_choice(text: str, choices: Any, expected: str | None) -> None:
    assert parse_text_choice(text, choices) == expected


@pytest.mark.parametrize(
    "arguments, reason",
    [('{"choice": "Q"}', "'Q' is not one of"), ("{", "malformed JSON"), ('{"reasons": "r"}', "no 'choice'")],
)
def test_read_reply_raises_invalid_reply(arguments: str, reason: str) -> None:
    result = ChatResult(
        content=None, tool_calls=(ToolCall("select_choice", arguments),), finish_reason="stop", model=MODEL
    )
    with pytest.raises(InvalidReply, match=reason):
        read_reply(result, "tools", ("A", "B"))


# --------------------------------------------------------- self-consistency
def _by_seed(choices: dict[int, str]) -> Any:
    def reply(request: RecordedRequest) -> Reply:
        return Reply.choice(choices[request.body["seed"]], reasons=f"sample {request.body['seed']}", usage=(10, 5))

    return reply


@pytest.mark.parametrize("aggregate, expected_score", [("majority", 1.0), ("mean", 2 / 3)])
def test_samples_aggregate_with_agreement(llm_env: LoopbackLLM, aggregate: str, expected_score: float) -> None:
    llm_env.default = _by_seed({0: "C", 1: "D", 2: "C"})
    judge = factuality(samples=3, temperature=0.7, aggregate=aggregate)
    score = judge(**FACTS)
    assert score.score == pytest.approx(expected_score)
    meta = score.metadata
    assert meta["choice"] == "C" and meta["choices"] == ["C", "D", "C"] and meta["agreement"] == pytest.approx(2 / 3)
    assert sorted(r.body["seed"] for r in llm_env.chat_requests) == [0, 1, 2]
    assert meta["usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 15,
        "total_tokens": 45,
        "requests": 3,
        "cached": 0,
        "attempts": 3,
        "failed_calls": 0,
        "failed_prompt_tokens": 0,
        "failed_completion_tokens": 0,
    }
    assert meta["signature"]["samples"] == 3 and meta["signature"]["aggregate"] == aggregate


def test_majority_tie_goes_to_the_lowest_score(llm_env: LoopbackLLM) -> None:
    llm_env.default = _by_seed({0: "C", 1: "D"})
    score = factuality(samples=2, temperature=1, aggregate="majority")(**FACTS)
    assert (score.score, score.metadata["choice"], score.metadata["agreement"]) == (0.0, "D", 0.5)


def test_samples_are_cached_separately(llm_env: LoopbackLLM) -> None:
    llm_env.default = _by_seed({0: "C", 1: "D", 2: "C"})
    judge = factuality(samples=3, temperature=0.7, aggregate="majority")
    first = judge(**FACTS)
    second = judge(**FACTS)
    assert len(llm_env.chat_requests) == 3
    assert second.score == first.score and second.metadata["choices"] == first.metadata["choices"]
    assert second.metadata["cached"] is True and second.metadata["cached_samples"] == 3


def test_cached_rerun_makes_no_request(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("B", reasons="adds the population")
    first = factuality()(**FACTS)
    second = factuality()(**FACTS)
    assert len(llm_env.chat_requests) == 1
    assert (second.score, second.metadata["cached"], first.metadata["cached"]) == (0.6, True, False)


# ------------------------------------------------------------- configuration
@pytest.mark.parametrize(
    "params, message",
    [
        ({"response_mode": "grammar"}, "response_mode"),
        ({"samples": 0}, "samples"),
        ({"samples": 3}, "temperature > 0"),
        ({"samples": 2, "temperature": 0.5, "aggregate": "median"}, "aggregate"),
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"use_cot": "yes"}, "use_cot"),
        ({"max_reasks": -1}, "max_reasks"),
        ({"choice_scores": {"A": 1}}, "choice_scores"),
    ],
)
def test_bad_parameters_raise_config_error(params: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        factuality(**params)


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (("J", "{{output}}", {True: 1, "No": 0}), {}, "boolean"),
        (("J", "{{output}}", {"Y": 2}), {}, r"\[0, 1\]"),
        (("J", "{{output}}", {}), {}, "non-empty"),
        (("J", None, {"Y": 1}), {}, "exactly one of"),
        (("J", "{{output}}", {"Y": 1}), {"messages": [{"role": "user", "content": "x"}]}, "exactly one of"),
        (("J", None, {"Y": 1}), {"messages": [{"role": "bot", "content": "x"}]}, "role"),
        (("J", "{{output}}", {"Y.": 1, "N": 0}), {"response_mode": "text"}, "punctuation"),
        (("J", "{% if %}", {"Y": 1}), {}, "syntax error"),
    ],
)
def test_bad_construction(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LLMClassifier(*args, **kwargs)


def test_fields_come_from_the_template() -> None:
    judge = scorers.get("ClosedQA", model=MODEL)
    assert [f.name for f in judge.fields] == ["input", "output", "criteria"]
    assert judge.required_fields() == ["input", "output", "criteria"]
    with pytest.raises(UnknownArgumentError, match="critera"):
        judge(input="q", output="a", critera="typo")
    described = judge.describe()
    assert described["variables"] == ["input", "output", "criteria"]
    assert described["choice_scores"] == {"Y": 1.0, "N": 0.0} and described["description"]


def test_a_missing_variable_is_bad_input_naming_the_variable_and_the_file(llm_env: LoopbackLLM) -> None:
    judge = scorers.get("Translation", model=MODEL)
    with pytest.raises(ScorerInputError) as info:
        judge(input="Bonjour", expected="Hello", output="Hi")
    message = str(info.value)
    assert "'language'" in message and "Translation" in message and "translation.yaml" in message
    assert "template variable" in message and info.value.field == "language"
    assert not isinstance(info.value, ConfigError)  # the row's data: a run records it and goes on
    assert llm_env.chat_requests == []


def test_messages_template_sends_system_and_user(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("Y")
    judge = LLMClassifier(
        "Tone",
        messages=[{"role": "system", "content": "You grade tone."}, {"role": "user", "content": "Reply: {{output}}"}],
        choice_scores={"Y": 1, "N": 0},
        model=MODEL,
        use_cot=False,
    )
    assert judge(output="Thanks!").score == 1.0
    roles = [m["role"] for m in body(llm_env)["messages"]]
    assert roles == ["system", "user"] and "select_choice" in body(llm_env)["messages"][-1]["content"]


def test_non_string_values_render_as_json(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("Y")
    judge = LLMClassifier("Valid", "Data: {{output}}", {"Y": 1, "N": 0}, model=MODEL)
    judge(output={"city": "Paris", "ok": True, "n": None})
    assert 'Data: {"city": "Paris", "ok": true, "n": null}' in body(llm_env)["messages"][0]["content"]


@pytest.mark.parametrize(
    "value, problem",
    [
        (object(), "cannot be shown in a judge prompt: cannot render a object"),
        ({"a": {1, 2}, "b": object()}, "cannot render a object"),
        (float("nan"), "is NaN"),
    ],
)
def test_a_value_the_prompt_cannot_show_is_bad_input_of_its_row(llm_env: LoopbackLLM, value: Any, problem: str) -> None:
    llm_env.default = Reply.choice("Y")
    judge = LLMClassifier("Valid", "Data: {{output}}", {"Y": 1, "N": 0}, model=MODEL)
    with pytest.raises(ScorerInputError, match=problem) as info:
        judge(output=value)
    assert info.value.field == "output" and not isinstance(info.value, ConfigError)
    good, bad = judge.score_batch([{"output": "fine"}, {"output": value}])
    assert good.score == 1.0 and isinstance(bad, ScorerInputError) and len(llm_env.chat_requests) == 1


# ----------------------------------------------------------- foreign formats
def test_autoevals_template_file_works_unchanged(llm_env: LoopbackLLM) -> None:
    (definition,) = load_template_file(Path(autoevals.__file__).parent / "templates" / "factuality.yaml")
    llm_env.default = Reply.choice("A", reasons="subset")
    score = build_judge(definition, model=MODEL)(**FACTS)
    assert score.score == 0.4 and score.name == "Factuality"


def test_openai_evals_spec_file_works(llm_env: LoopbackLLM, tmp_path: Path) -> None:
    from tests.judges.test_template import EVALS_SPEC_FILE

    path = tmp_path / "modelgraded.yaml"
    path.write_text(EVALS_SPEC_FILE)
    letter, likert, unscored = load_template_file(path)
    llm_env.script(Reply.choice("B", reasons="adds"), match="Candidate: Paris")
    llm_env.script(Reply.choice("4", reasons="good pun"), match="Rate this joke")
    llm_env.script(Reply.choice("A"), match="Is flying possible")
    assert build_judge(letter, model=MODEL)(input="q", expected="e", output="Paris").score == 0.6
    assert build_judge(likert, model=MODEL)(output="a pun").score == 0.75
    with pytest.raises(ConfigError, match="no choice_scores"):
        build_judge(unscored, model=MODEL)
    judge = build_judge(unscored, model=MODEL, choice_scores={"A": 0, "B": 1})
    assert judge(output="flying").score == 0.0 and judge.use_cot is True
    sent = [r.body for r in llm_env.chat_requests]
    assert sent[0]["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"] == list("ABCDE")
    assert sent[1]["messages"][0] == {"role": "system", "content": "You rate jokes."}


# ------------------------------------------------------------------ batch run
@pytest.mark.slow
def test_batch_run_every_fault_ends_scored_or_typed(llm_env: LoopbackLLM) -> None:
    from scorers.runner import evaluate

    faults = {
        "row-ok": (None, (1.0, None)),
        "row-429-once": (dict(reply=Reply.rate_limited(retry_after=0), times=1), (1.0, None)),
        "row-500-once": (dict(reply=Reply.error(500), times=1), (1.0, None)),
        "row-drop-once": (dict(reply=Reply.drop(), times=1), (1.0, None)),
        "row-hang-once": (dict(reply=Reply.hang(5), times=1), (1.0, None)),
        "row-500-always": (dict(reply=Reply.error(503)), (None, "JudgeError")),
        "row-hang-always": (dict(reply=Reply.hang(5)), (None, "JudgeError")),
        "row-no-tool": (dict(reply=Reply.text("plain text, no tool")), (None, "JudgeError")),
        "row-malformed": (dict(reply=Reply.tool_call("{broken")), (None, "JudgeError")),
        "row-out-of-enum": (dict(reply=Reply.choice("Z")), (None, "JudgeError")),
        "row-malformed-once": (dict(reply=Reply.tool_call("{broken"), times=1), (1.0, None)),
        "row-wrong": (dict(reply=Reply.choice("D", reasons="wrong")), (0.0, None)),
    }
    for name, (rule, _outcome) in faults.items():
        if rule:
            llm_env.script(rule["reply"], match=f"{name}\n", times=rule.get("times"))
    llm_env.default = Reply.choice("C", reasons="same", usage=(100, 10))
    rows = [{"input": "q", "expected": "e", "output": f"{name}\n"} for name in faults]
    rows.append({"input": "q", "output": "row-missing-expected"})  # a later row without a value: its own error
    # a timeout well above any reply's time, so only the scripted hangs time out
    engine = LLMEngine(timeout=1.0, max_retries=1, max_reasks=1, backoff_base=0.01)
    run = evaluate(rows, [factuality(engine=engine)], concurrency=4)
    outcomes = {
        r.row["output"].strip(): (r.scores["Factuality"], r.errors.get("Factuality", {}).get("type")) for r in run
    }
    assert outcomes == {
        **{name: outcome for name, (_rule, outcome) in faults.items()},
        "row-missing-expected": (None, "ScorerInputError"),
    }
    summary = run.summary.scorers["Factuality"]
    assert summary["n"] == 7 and summary["errors"] == 6
    usage = summary["usage"]
    assert usage["by_model"][MODEL]["requests"] == 7 and usage["prompt_tokens"] >= 600


# -------------------------------------------------- batch path (ascore_batch)
def _row(i: int) -> dict[str, str]:
    return {"input": f"question {i}", "expected": f"answer {i}", "output": f"reply {i}"}


def _choice_by_row(request: RecordedRequest) -> Reply:
    """Row i gets choice "ABCDE"[i % 5], so a row's Score tells which row it belongs to."""
    i = int(request.last_user_message.split("reply ")[1].split()[0])
    if "response_format" in request.body:
        return Reply.json({"reasons": f"row {i}", "choice": "ABCDE"[i % 5]}, usage=(20 + i, 5))
    return Reply.choice("ABCDE"[i % 5], reasons=f"row {i}", usage=(20 + i, 5))


def _batch(judge: LLMClassifier, rows: list[dict[str, Any]], **options: Any) -> list[Any]:
    return scorers._aio.run_sync(judge.ascore_batch(rows, **options))


def _without_timing(score: Any) -> dict[str, Any]:
    return {**score.to_dict(), "metadata": {k: v for k, v in score.metadata.items() if k != "latency_s"}}


def _expected_choice(i: int) -> str:
    return "ABCDE"[i % 5]


@pytest.mark.parametrize(
    "params",
    [{}, {"use_cot": False}, {"response_mode": "json"}, {"samples": 3, "temperature": 0.5, "aggregate": "majority"}],
    ids=["tools", "no-cot", "json", "samples"],
)
def test_batch_gives_the_per_row_scores_and_a_cached_rerun_sends_nothing(
    llm_env: LoopbackLLM, tmp_path: Path, params: dict
) -> None:
    llm_env.default = _choice_by_row
    rows = [_row(i) for i in range(12)]
    per_row = factuality(engine=LLMEngine(cache=str(tmp_path / "per-row.sqlite")), **params)
    batch = factuality(engine=LLMEngine(cache=str(tmp_path / "batch.sqlite")), **params)
    expected = [per_row(**row) for row in rows]
    first = _batch(batch, rows, concurrency=4)
    asks = len(rows) * per_row.samples
    assert len(llm_env.chat_requests) == 2 * asks
    assert [_without_timing(s) for s in first] == [_without_timing(s) for s in expected]
    cached_per_row = [per_row(**row) for row in rows]
    cached = _batch(batch, rows, concurrency=4)
    assert len(llm_env.chat_requests) == 2 * asks  # the re-runs sent nothing
    assert [_without_timing(s) for s in cached] == [_without_timing(s) for s in cached_per_row]
    assert all(s.metadata["cached"] is True and s.metadata["usage"]["requests"] == 0 for s in cached)
    assert [s.metadata["choice"] for s in cached] == [_expected_choice(i) for i in range(12)]


@pytest.mark.parametrize(
    "params",
    [{}, {"use_cot": False}, {"response_mode": "json"}, {"samples": 3, "temperature": 0.5}],
    ids=["tools", "no-cot", "json", "samples"],
)
def test_a_cached_batch_rerun_sends_nothing_and_gives_the_first_runs_scores(
    llm_env: LoopbackLLM, tmp_path: Path, params: dict
) -> None:
    llm_env.default = _choice_by_row
    judge = factuality(engine=LLMEngine(cache=str(tmp_path / "cache.sqlite")), **params)
    rows = [_row(i) for i in range(30)]
    first = _batch(judge, rows, concurrency=8)
    assert len(llm_env.chat_requests) == len(rows) * judge.samples
    llm_env.reset()
    again = _batch(judge, rows, concurrency=8)
    assert llm_env.chat_requests == []
    calls = ("usage", "latency_s", "attempts", "cached") + (("cached_samples",) if judge.samples > 1 else ())

    def verdict(score: Any) -> tuple[Any, dict[str, Any]]:
        return score.score, {k: v for k, v in score.metadata.items() if k not in calls}

    assert [verdict(s) for s in again] == [verdict(s) for s in first]
    assert [s.metadata["choice"] for s in again] == [_expected_choice(i) for i in range(30)]
    assert all(s.metadata["cached"] is True and s.metadata["attempts"] == 0 for s in again)
    assert {s.metadata["usage"]["cached"] for s in again} == {judge.samples}
    assert {s.metadata["usage"]["requests"] for s in again} == {0}


def test_batch_mixes_hits_and_misses_in_input_order(llm_env: LoopbackLLM) -> None:
    llm_env.default = _choice_by_row
    judge = factuality()
    rows = [_row(i) for i in range(20)]
    _batch(judge, rows[::2])  # even rows are cached
    llm_env.reset()
    results = _batch(judge, rows, concurrency=3)
    assert sorted(int(r.last_user_message.split("reply ")[1].split()[0]) for r in llm_env.chat_requests) == list(
        range(1, 20, 2)
    )
    assert [s.metadata["choice"] for s in results] == [_expected_choice(i) for i in range(20)]
    assert [s.metadata["cached"] for s in results] == [i % 2 == 0 for i in range(20)]


def test_batch_reasks_a_cached_reply_that_no_longer_validates(llm_env: LoopbackLLM) -> None:
    from scorers.llm.cache import cache_key, open_cache

    llm_env.default = _choice_by_row
    judge = factuality()
    rows = [_row(i) for i in range(4)]
    _batch(judge, rows)
    settings = judge.engine.settings()
    stale = judge.build_request({k: v for k, v in rows[2].items()})
    key = cache_key(stale.body(settings.model), base_url=settings.base_url)
    bad = ChatResult(
        content=None, tool_calls=(ToolCall("select_choice", '{"choice": "Z"}'),), finish_reason="stop", model=MODEL
    )
    open_cache(settings.cache).put(key, bad.to_dict(), model=MODEL)
    llm_env.reset()
    results = _batch(judge, rows)
    assert len(llm_env.chat_requests) == 1 and "reply 2" in llm_env.chat_requests[0].last_user_message
    assert [s.metadata["cached"] for s in results] == [True, True, False, True]
    assert results[2].metadata["choice"] == _expected_choice(2)
    assert _batch(judge, rows)[2].metadata["cached"] is True  # the fresh reply replaced the stale one


def test_batch_returns_errors_per_row(llm_env: LoopbackLLM) -> None:
    llm_env.default = _choice_by_row
    llm_env.script(Reply.choice("Z"), match="reply 3\n")
    judge = factuality(max_reasks=0)
    rows = [_row(i) for i in range(5)]
    rows[1] = {"input": "q", "output": "reply 1"}  # no expected
    results = _batch(judge, rows)
    assert [type(r).__name__ for r in results] == ["Score", "ScorerInputError", "Score", "JudgeError", "Score"]
    assert [r.metadata["choice"] for r in results if isinstance(r, scorers.Score)] == ["A", "C", "E"]
    assert not isinstance(results[1], ConfigError)  # this row's data: a run records it and goes on
    assert [type(r).__name__ for r in judge.score_batch(rows)] == [type(r).__name__ for r in results]


def test_batch_without_an_api_key_fails_each_row_before_any_request(llm_server: LoopbackLLM) -> None:
    judge = factuality(engine=LLMEngine(base_url=llm_server.base_url))
    results = _batch(judge, [_row(i) for i in range(3)])
    assert [type(r) for r in results] == [ConfigError] * 3 and llm_server.chat_requests == []


def test_a_refused_key_fails_the_batch_without_more_requests_and_stops_a_run() -> None:
    from scorers.llm import EndpointConfigError
    from scorers.runner import evaluate

    with LoopbackLLM(api_key="the-right-key") as server:
        judge = factuality(engine=LLMEngine(base_url=server.base_url, api_key="a-wrong-key", cache=False))
        rows = [_row(i) for i in range(40)]
        results = _batch(judge, rows, concurrency=4)
        assert all(isinstance(r, EndpointConfigError) for r in results)
        assert len(server.chat_requests) <= 4  # only those in flight when the first refusal came back
        with pytest.raises(ConfigError, match="authentication failed"):
            evaluate(rows, [judge], concurrency=4).collect()


def test_batch_misses_stay_within_the_limit(llm_env: LoopbackLLM) -> None:
    import asyncio

    llm_env.default = _choice_by_row
    llm_env.latency = 0.05
    judge = factuality()
    rows = [_row(i) for i in range(12)]
    _batch(judge, rows[:4])
    llm_env.reset()

    async def run() -> list[Any]:
        return await judge.ascore_batch(rows, limit=asyncio.Semaphore(3), concurrency=100)

    results = scorers._aio.run_sync(run())
    assert len(llm_env.chat_requests) == 8 and llm_env.max_in_flight <= 3
    assert [s.metadata["choice"] for s in results] == [_expected_choice(i) for i in range(12)]


def test_samples_batch_asks_only_the_missing_samples(llm_env: LoopbackLLM) -> None:
    from scorers.llm.cache import cache_key, open_cache

    llm_env.default = _by_seed({0: "C", 1: "D", 2: "C"})
    judge = factuality(samples=3, temperature=0.7)
    first = _batch(judge, [FACTS])[0]
    settings = judge.engine.settings()
    sample_one = judge.build_request({k: FACTS[k] for k in ("input", "expected", "output")}, sample=1)
    open_cache(settings.cache).put(
        cache_key(sample_one.body(settings.model), base_url=settings.base_url),
        {"content": "not a tool call", "tool_calls": [], "finish_reason": "stop", "model": MODEL},
        model=MODEL,
    )
    llm_env.reset()
    again = _batch(judge, [FACTS])[0]
    assert [r.body["seed"] for r in llm_env.chat_requests] == [1]
    assert again.score == first.score and again.metadata["choices"] == ["C", "D", "C"]
    assert again.metadata["cached_samples"] == 2 and again.metadata["cached"] is False


def test_runner_uses_the_batch_cache(llm_env: LoopbackLLM) -> None:
    from scorers.runner import evaluate

    llm_env.default = _choice_by_row
    rows = [_row(i) for i in range(30)]
    first = evaluate(rows, [factuality()], concurrency=4, chunk_size=8).collect()
    assert len(llm_env.chat_requests) == 30
    again = evaluate(rows, [factuality()], concurrency=4, chunk_size=8)
    results = again.collect()
    assert len(llm_env.chat_requests) == 30
    assert [r.scores for r in results] == [r.scores for r in first]
    assert again.summary.scorers["Factuality"]["usage"]["cached"] == 30


# ------------------------------------------------------------------- pickling
BUILTIN_JUDGES = ["Factuality", "Battle", "ClosedQA", "Humor", "Possible", "Security", "Sql", "Summary", "Translation"]


def _last_choice(request: RecordedRequest) -> Reply:
    """Any judge's last choice (read from the request's enum), with reasons and fixed usage."""
    enum = request.body["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"]
    return Reply.choice(enum[-1], reasons=f"picked {enum[-1]}", usage=(40, 8))


def _hand_built(**options: Any) -> LLMClassifier:
    return LLMClassifier(
        "Grounded",
        "Is {{output}} supported by {{context}}?",
        {"Yes": 1.0, "Partly": 0.5, "No": 0.0},
        model=MODEL,
        **options,
    )


def _travel_cases() -> list[str]:
    return [*BUILTIN_JUDGES, "hand-built"]


def _make(name: str) -> LLMClassifier:
    return _hand_built() if name == "hand-built" else scorers.get(name, model=MODEL)


def _values(judge: LLMClassifier) -> dict[str, str]:
    return {variable: f"the {variable} of the row" for variable in judge.template.variables}


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("name", _travel_cases())
def test_judges_travel_before_and_after_first_use(
    llm_env: LoopbackLLM, monkeypatch: pytest.MonkeyPatch, fake_api_key: str, name: str, dumps: Any
) -> None:
    monkeypatch.setenv("SCORERS_CACHE", "off")  # every call below reaches the server
    llm_env.default = _last_choice
    judge = _make(name)
    fresh = pickle.loads(dumps(judge))  # before first use
    row = _values(judge)
    first = judge(**row)
    payload = dumps(judge)
    assert fake_api_key.encode() not in payload  # the key came from the environment; it stays there
    used = pickle.loads(payload)  # after first use: its engine, compiled templates and lazy state are rebuilt
    for copy in (fresh, used):
        assert "engine" not in vars(copy) and "_compiled" not in vars(copy.template)
        again = copy(**row)
        assert _without_timing(again) == _without_timing(first)
        assert again.metadata["cached"] is False and again.metadata["attempts"] == 1
        batch = copy.score_batch([row, {**row, "output": "another output"}])
        assert [_without_timing(s) for s in batch[:1]] == [_without_timing(first)]
        assert batch[1].metadata["choice"] == first.metadata["choice"]
    assert len(llm_env.chat_requests) == 1 + 2 * 3
    assert (
        len({json.dumps(r.body, sort_keys=True) for r in llm_env.chat_requests if "another" not in r.last_user_message})
        == 1
    )  # the copies sent the very request the original sent


def test_a_judge_with_its_own_engine_travels_with_its_settings(
    llm_server: LoopbackLLM, fake_api_key: str, tmp_path: Path
) -> None:
    llm_server.default = _last_choice
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=tmp_path / "own.sqlite", max_reasks=0)
    judge = _hand_built(engine=engine)
    first = judge(output="x", context="y")
    for dumps in (pickle.dumps, cloudpickle.dumps):
        copy = pickle.loads(dumps(judge))
        assert copy.engine is not engine and copy.engine.settings().cache == tmp_path / "own.sqlite"
        again = copy(output="x", context="y")  # from the engine's cache file: the same reply, no request
        assert again.metadata["cached"] is True and again.metadata["choice"] == first.metadata["choice"]
    assert len(llm_server.chat_requests) == 1


@pytest.mark.parametrize("via", ["client", "engine"])
def test_a_judge_with_an_openai_client_refuses_to_pickle_clearly_but_copies(llm_server: LoopbackLLM, via: str) -> None:
    llm_server.default = _last_choice
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="k")
    judge = _hand_built(client=client) if via == "client" else _hand_built(engine=LLMEngine(client=client, cache=False))
    for dumps in (pickle.dumps, cloudpickle.dumps):
        with pytest.raises(TypeError, match="client= cannot be pickled"):
            dumps(judge)
    bound = judge.partial(context="the context")  # a shallow copy shares the client
    assert (bound.client or bound.engine._options["client"]) is client
    assert bound(output="x").metadata["choice"] == "No" and len(llm_server.chat_requests) == 1


def _score_in_child(payload: bytes, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run in a spawned process: unpickle judges, score a row with each, return the scores as dicts."""
    judges = pickle.loads(payload)
    return [_without_timing(judge(**row)) for judge, row in zip(judges, rows)]


@pytest.mark.slow
def test_judges_work_in_a_fresh_process(llm_env: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    import concurrent.futures
    import multiprocessing

    monkeypatch.setenv("SCORERS_CACHE", "off")  # the child reads the same environment: it asks the server
    llm_env.default = _last_choice
    judges = [scorers.get("Factuality", model=MODEL), _hand_built()]
    rows = [_values(judge) for judge in judges]
    here = [_without_timing(judge(**row)) for judge, row in zip(judges, rows)]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        there = pool.submit(_score_in_child, pickle.dumps(judges), rows).result(timeout=120)
    assert there == here
    assert len(llm_env.chat_requests) == 4


# ------------------------------------------------------------- run summaries
def test_judge_aggregators_of_shards_merge_into_the_whole(llm_env: LoopbackLLM) -> None:
    llm_env.default = _choice_by_row
    judge = factuality()
    results = judge.score_batch([_row(i) for i in range(10)])
    cached = judge.score_batch([_row(i) for i in range(4)])
    whole, left, right = judge.aggregator(), judge.aggregator(), judge.aggregator()
    for i, score in enumerate(results + cached):
        whole.add(score)
        (left if i % 3 else right).add(score)
    merged = pickle.loads(pickle.dumps(left)).merge(pickle.loads(pickle.dumps(right)))
    assert merged.result() == whole.result()
    assert whole.result()["usage"]["requests"] == 10 and whole.result()["usage"]["cached"] == 4


def test_the_batch_path_leaves_the_garbage_collector_on(llm_env: LoopbackLLM) -> None:
    seen: list[bool] = []

    def reply(request: RecordedRequest) -> Reply:
        seen.append(gc.isenabled())
        return _choice_by_row(request)

    llm_env.default = reply
    assert gc.isenabled()
    results = factuality().score_batch([_row(i) for i in range(40)])
    assert all(isinstance(r, scorers.Score) for r in results) and seen == [True] * 40 and gc.isenabled()
