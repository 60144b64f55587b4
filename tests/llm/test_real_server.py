"""The engine against a real OpenAI-compatible server: llama-cpp-python with Gemma 3 270M (``real_llm_server``).

The model is a base model that cannot judge, so these tests check the protocol only: shapes, valid JSON,
bounds and logprob structure, never a verdict or a logprob value. Each call takes 1-3 s on one thread.
"""

from __future__ import annotations

import json

import pytest

from scorers.errors import ConfigError
from scorers.llm import ChatRequest, ChatResult, EndpointConfigError, InvalidReply, LLMEngine, RequestRejected

CHOICES = ["A", "B", "C", "D", "E"]
TOOL = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "description": "Call this function to select a choice.",
        "parameters": {
            "type": "object",
            "properties": {"choice": {"type": "string", "enum": CHOICES}},
            "required": ["choice"],
        },
    },
}
FORCED = {"type": "function", "function": {"name": "select_choice"}}
PROMPT = [{"role": "user", "content": "Is 2 + 2 = 4? Answer by choosing one of the options A, B, C, D or E."}]


@pytest.fixture
def engine(real_llm_server) -> LLMEngine:
    # timeout and deadline generous for a loaded 2-core machine; the tests assert no times
    return LLMEngine(
        base_url=real_llm_server.base_url,
        api_key="placeholder",
        model=real_llm_server.model,
        cache=False,
        timeout=120,
        deadline=600,
    )


def choice_of(result: ChatResult) -> str:
    if not result.tool_calls:
        raise InvalidReply("no tool call")
    choice = result.tool_calls[0].parse_arguments().get("choice")
    if choice not in CHOICES:
        raise InvalidReply(f"choice {choice!r} is not an option")
    return choice


def test_a_forced_tool_call_has_valid_json_arguments_and_logprobs(engine):
    result = engine.complete_sync(
        ChatRequest(
            messages=PROMPT,
            tools=[TOOL],
            tool_choice=FORCED,
            temperature=0,
            max_tokens=32,
            logprobs=True,
            top_logprobs=3,
        ),
        validate=choice_of,
    )
    (call,) = result.tool_calls
    assert call.name == "select_choice" and json.loads(call.arguments) == {"choice": result.parsed}
    assert (
        result.attempts == 1
        and result.reasks == 0
        and result.sent == {"api": "chat", "temperature": 0, "max_tokens": 32, "logprobs": True, "top_logprobs": 3}
    )
    # the grammar picks tokens the raw distribution ranks low; llama.cpp then adds the chosen one to the top 3
    assert result.logprobs and all(1 <= len(token.top) <= 4 and token.logprob <= 0 for token in result.logprobs)


def test_text_logprobs_carry_top_alternatives(engine):
    result = engine.complete_sync(
        ChatRequest(messages=PROMPT, temperature=0, max_tokens=4, logprobs=True, top_logprobs=5)
    )
    assert result.logprobs is not None and 1 <= len(result.logprobs) <= 4
    for token in result.logprobs:
        assert isinstance(token.token, str) and token.logprob <= 0
        assert len(token.top) == 5 and all(isinstance(t, str) and lp <= 0 for t, lp in token.top)
        assert [lp for _, lp in token.top] == sorted((lp for _, lp in token.top), reverse=True)


def test_max_tokens_bounds_a_text_reply(engine):
    result = engine.complete_sync(ChatRequest(messages=PROMPT, temperature=0, max_tokens=6))
    assert isinstance(result.content, str) and result.tool_calls == ()
    assert 1 <= result.completion_tokens <= 6 and result.finish_reason in ("length", "stop")
    assert result.logprobs is None


def test_json_object_response_format(engine):
    result = engine.complete_sync(
        ChatRequest(messages=PROMPT, response_format={"type": "json_object"}, temperature=0, max_tokens=24)
    )
    assert result.content is not None and result.content.lstrip().startswith("{")
    if result.finish_reason == "stop":  # not cut at max_tokens: the grammar made it a whole JSON object
        assert isinstance(json.loads(result.content), dict)


def test_json_schema_is_rejected_at_once(engine):
    schema = {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "schema": {
                "type": "object",
                "properties": {"choice": {"type": "string", "enum": CHOICES}},
                "required": ["choice"],
            },
        },
    }
    with pytest.raises(RequestRejected) as info:
        engine.complete_sync(ChatRequest(messages=PROMPT, response_format=schema, max_tokens=16), scorer="Judge")
    assert (info.value.status, info.value.attempts) == (500, 1)  # one attempt, not max_retries + 1
    assert "json_schema" in info.value.detail and not isinstance(info.value, ConfigError)


def test_the_responses_api_is_not_served_and_stops_the_run(engine):
    with pytest.raises(EndpointConfigError, match="HTTP 404") as info:
        engine.complete_sync(ChatRequest(messages=PROMPT, max_tokens=4, api="responses"))
    assert info.value.attempts == 1
