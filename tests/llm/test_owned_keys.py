"""``extra_args`` cannot override what the engine sets (model, messages, tools, credentials, ...): refused at
construction, in code and in templates, with the keys the engine owns in the message."""

from __future__ import annotations

import pytest

from scorers.errors import ConfigError
from scorers.judges import LLMClassifier, RubricJudge
from scorers.judges.discovery import check_templates
from scorers.judges.rag import Faithfulness
from scorers.llm import ChatRequest, LLMEngine
from scorers.llm.protocol import engine_owned_keys
from scorers.testing import LoopbackLLM, Reply

#: Keys a judge's request is built from: none may come from extra_args.
OWNED = [
    "model",
    "messages",
    "tools",
    "tool_choice",
    "response_format",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "logprobs",
    "top_logprobs",
    "reasoning_effort",
    "api_key",
    "base_url",
    "input",
    "instructions",
    "max_output_tokens",
    "text",
    "reasoning",
    "include",
    "stream",
    "n",
]
#: What the refusal names as the setting to use instead.
INSTEAD = {
    "model": "model=",
    "temperature": "temperature=",
    "max_tokens": "max_tokens=",
    "tools": "response_mode=",
    "messages": "prompt= or messages=",
    "api_key": "OPENAI_API_KEY",
    "base_url": "OPENAI_BASE_URL",
    "n": "samples=",
}


def test_every_key_the_request_body_sets_is_owned():
    every_field = ChatRequest(
        messages=[{"role": "user", "content": "x"}],
        model="m",
        tools=[{"type": "function"}],
        tool_choice="auto",
        temperature=0,
        max_tokens=1,
        response_format={"type": "text"},
        reasoning_effort="low",
        logprobs=True,
        top_logprobs=1,
    )
    for api in ("chat", "responses"):
        for reasoning in (False, True):
            assert set(every_field.body("m", api=api, reasoning=reasoning)) <= engine_owned_keys()
    assert set(OWNED) <= engine_owned_keys()


@pytest.mark.parametrize("key", OWNED)
def test_a_judge_refuses_an_owned_key_in_extra_args(key):
    with pytest.raises(ConfigError) as info:
        LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, extra_args={key: "x", "top_p": 1})
    message = str(info.value)
    assert f"cannot set {key}" in message and "top_p" not in message.split("Keys the engine owns")[0]
    assert "Keys the engine owns: " + ", ".join(sorted(engine_owned_keys())) in message
    if key in INSTEAD:
        assert f"{key} (use {INSTEAD[key]}" in message


def test_every_kind_and_the_rag_judges_refuse_them():
    with pytest.raises(ConfigError, match="cannot set tools"):
        RubricJudge(
            "Tone", "Grade {{output}}", criteria=[{"name": "tone", "description": "Polite?"}], extra_args={"tools": []}
        )
    with pytest.raises(ConfigError, match=r"cannot set model \(use model=\), api_key"):
        Faithfulness(extra_args={"model": "gpt-4o", "api_key": "sk-other"})


def test_a_template_with_an_owned_key_is_a_problem_for_check(tmp_path):
    path = tmp_path / "polite.yaml"
    path.write_text(
        "prompt: Is {{output}} polite?\nchoice_scores: {Y: 1, N: 0}\n"
        "extra_args: {top_p: 0.9, messages: [{role: user, content: hi}]}\n"
    )
    (problem,) = check_templates([path])
    assert "extra_args" in str(problem) and "cannot set messages (use prompt= or messages=)" in str(problem)


def test_a_seed_in_extra_args_with_samples_is_refused():
    with pytest.raises(ConfigError, match="same seed"):
        LLMClassifier(
            "Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, samples=3, temperature=0.7, extra_args={"seed": 1}
        )


def test_the_engine_refuses_them_in_a_request_and_sends_other_extras(fake_api_key):
    with pytest.raises(ConfigError, match="ChatRequest extra cannot set base_url"):
        ChatRequest(messages=[{"role": "user", "content": "hi"}], extra={"base_url": "http://elsewhere/v1"})
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        judge = LLMClassifier(
            "Polite",
            "Is {{output}} polite?",
            {"Y": 1.0, "N": 0.0},
            extra_args={"top_p": 0.5, "seed": 7},
            engine=LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=False),
        )
        assert judge(output="Thanks!").score == 1.0
        (sent,) = server.chat_requests
    assert (sent.body["top_p"], sent.body["seed"], sent.body["model"]) == (0.5, 7, judge.engine.model)
