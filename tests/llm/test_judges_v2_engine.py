"""Reasoning models, the Responses API, logprobs, ``ChatResult.sent``, rejected requests and the deadline,
against the loopback server through the real openai client."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from scorers.errors import ConfigError, JudgeError
from scorers.llm import (
    ChatRequest,
    ChatResult,
    EndpointConfigError,
    InvalidReply,
    LLMEngine,
    RequestRejected,
    TokenLogprob,
    ToolCall,
    configure,
    is_reasoning_model,
)
from scorers.testing import LLAMA_CPP_JSON_SCHEMA_REJECTION, LoopbackLLM, Reply

TOOL = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "description": "Pick one.",
        "parameters": {
            "type": "object",
            "properties": {"choice": {"type": "string", "enum": ["A", "B"]}},
            "required": ["choice"],
        },
    },
}
FORCED = {"type": "function", "function": {"name": "select_choice"}}
SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "schema": {"type": "object", "properties": {"choice": {"type": "string"}}, "required": ["choice"]},
        "strict": True,
    },
}
FAST = dict(timeout=30.0, backoff_base=0.001, backoff_max=0.01, retry_after_max=0.5)
MESSAGES = [{"role": "user", "content": "Judge this"}]


def req(**fields) -> ChatRequest:
    return ChatRequest(messages=MESSAGES, **fields)


@pytest.fixture
def engine(llm_server: LoopbackLLM, fake_api_key: str, tmp_path) -> LLMEngine:
    return LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=tmp_path / "cache.sqlite", **FAST)


# ------------------------------------------------------------------------- reasoning models
@pytest.mark.parametrize(
    "model, expected",
    [
        ("o1", True),
        ("o1-mini", True),
        ("o3-mini-2025-01-31", True),
        ("o4-mini", True),
        ("O3", True),
        ("openai/o3", True),
        ("gpt-5", True),
        ("gpt-5-mini", True),
        ("gpt-5.1", True),
        ("gpt-6", True),
        ("gpt-12", True),
        ("gpt-4o", False),
        ("gpt-4o-mini", False),
        ("gpt-4.1-nano", False),
        ("gpt-3.5-turbo", False),
        ("omni", False),
        ("gemma", False),
        ("gpt-50x", False),
        ("llama-3-o1-tune", False),
    ],
)
def test_reasoning_model_names(model, expected):
    assert is_reasoning_model(model) is expected


@pytest.mark.parametrize(
    "model, reasoning, body",
    [
        ("gpt-4o-mini", None, {"temperature": 0, "max_tokens": 50, "top_p": 1}),
        ("o3-mini", None, {"max_completion_tokens": 50}),
        ("gpt-5-mini", None, {"max_completion_tokens": 50}),
        ("o3-mini", False, {"temperature": 0, "max_tokens": 50, "top_p": 1}),  # the setting overrides the name
        ("my-local-thinker", True, {"max_completion_tokens": 50}),
    ],
)
def test_reasoning_models_get_no_temperature_and_max_completion_tokens(
    llm_server, fake_api_key, model, reasoning, body
):
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=False, reasoning=reasoning, **FAST)
    result = engine.complete_sync(req(model=model, temperature=0, max_tokens=50, extra={"top_p": 1}))
    (sent,) = llm_server.chat_requests
    assert sent.body == {"model": model, "messages": MESSAGES, **body}
    assert result.sent == {"api": "chat", **body}


@pytest.mark.parametrize("model", ["o4-mini", "gpt-4o-mini"])
def test_reasoning_effort_is_sent_whenever_given(engine, llm_server, model):
    """A non-reasoning model gets it too: the caller asked for it; the endpoint may refuse it."""
    result = engine.complete_sync(req(model=model, reasoning_effort="low"))
    assert llm_server.chat_requests[0].body["reasoning_effort"] == "low"
    assert result.sent["reasoning_effort"] == "low"


def test_reasoning_is_configurable_process_wide(llm_server, fake_api_key):
    configure(base_url=llm_server.base_url, api_key=fake_api_key, cache=False, reasoning=True)
    LLMEngine(**FAST).complete_sync(req(temperature=0, max_tokens=5))
    configure(reasoning=None)  # back to deriving it from the model name (gpt-4o-mini: not reasoning)
    LLMEngine(**FAST).complete_sync(req(temperature=0, max_tokens=5))
    first, second = (r.body for r in llm_server.chat_requests)
    assert ("temperature" in first, first.get("max_completion_tokens")) == (False, 5)
    assert (second["temperature"], second["max_tokens"]) == (0, 5)


# ------------------------------------------------------------------------- the Responses API
def test_responses_body_has_the_responses_shape(engine, llm_server):
    llm_server.default = Reply.choice("B", usage=(12, 4))
    request = req(
        tools=[TOOL],
        tool_choice=FORCED,
        temperature=0,
        max_tokens=40,
        seed=3,
        reasoning_effort="low",
        logprobs=True,
        top_logprobs=2,
        extra={"store": False},
        api="responses",
        response_format=SCHEMA,
    )
    with pytest.raises(EndpointConfigError):  # a function call carries no logprobs in the Responses API
        engine.complete_sync(request)
    (sent,) = llm_server.responses_requests
    assert sent.path == "/v1/responses" and sent.api == "responses" and llm_server.chat_requests == []
    assert sent.body == {
        "model": "gpt-4o-mini",
        "input": MESSAGES,
        "tools": [
            {
                "type": "function",
                "name": "select_choice",
                "description": "Pick one.",
                "parameters": TOOL["function"]["parameters"],
                "strict": False,
            }
        ],
        "tool_choice": {"type": "function", "name": "select_choice"},
        "temperature": 0,
        "max_output_tokens": 40,
        "seed": 3,
        "reasoning": {"effort": "low"},
        "text": {"format": {"type": "json_schema", **SCHEMA["json_schema"]}},
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 2,
        "store": False,
    }


@pytest.mark.parametrize(
    "response_format, text",
    [
        ({"type": "json_object"}, {"format": {"type": "json_object"}}),
        ({"type": "text"}, {"format": {"type": "text"}}),
    ],
)
def test_responses_text_format(engine, llm_server, response_format, text):
    engine.complete_sync(req(response_format=response_format, api="responses"))
    assert llm_server.responses_requests[0].body["text"] == text


def test_responses_tools_keep_their_own_strictness_and_shape(engine, llm_server):
    strict = {"type": "function", "function": {**TOOL["function"], "strict": True}}
    native = {"type": "function", "name": "native", "parameters": {"type": "object"}, "strict": True}
    engine.complete_sync(req(tools=[strict, native], tool_choice="required", api="responses"))
    body = llm_server.responses_requests[0].body
    assert [t["strict"] for t in body["tools"]] == [True, True] and body["tools"][1] == native
    assert body["tool_choice"] == "required"


def test_responses_reply_is_read_from_output_items(engine, llm_server):
    llm_server.script(Reply.choice("B", usage=(12, 4)), match="tool")
    llm_server.script(Reply.text("Answer: A", finish_reason="length"), match="text")
    tool = engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "tool"}], api="responses"))
    assert tool.tool_calls == (ToolCall("select_choice", '{"choice": "B"}', tool.tool_calls[0].id),)
    assert tool.tool_calls[0].id.startswith("call_")  # the call_id, not the item id
    assert (tool.content, tool.finish_reason, tool.prompt_tokens, tool.completion_tokens) == (None, "tool_calls", 12, 4)
    text = engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "text"}], api="responses"))
    assert (text.content, text.tool_calls, text.finish_reason) == ("Answer: A", (), "length")
    assert text.sent == {"api": "responses"}


def test_api_precedence(llm_server, fake_api_key):
    configure(base_url=llm_server.base_url, api_key=fake_api_key, cache=False, api="responses")
    LLMEngine(**FAST).complete_sync(req())  # configured
    LLMEngine(api="chat", **FAST).complete_sync(req())  # the engine's own
    LLMEngine(api="chat", **FAST).complete_sync(req(api="responses"))  # the request's own
    assert [r.api for r in llm_server.requests] == ["responses", "chat", "responses"]


def test_the_api_is_part_of_the_cache_key(engine, llm_server):
    chat = engine.complete_sync(req())
    responses = engine.complete_sync(req(api="responses"))
    again = engine.complete_sync(req(api="responses"))
    assert (chat.cached, responses.cached, again.cached) == (False, False, True)
    assert [r.api for r in llm_server.requests] == ["chat", "responses"]
    assert again.sent == {"api": "responses"}


def test_responses_retries_and_reasks_like_chat(engine, llm_server):
    llm_server.script(Reply.error(503), times=1)
    llm_server.script(Reply.text("no tool"), times=1)
    llm_server.default = Reply.choice("A")

    def choice(result: ChatResult) -> str:
        if not result.tool_calls:
            raise InvalidReply("no tool call")
        return result.tool_calls[0].parse_arguments()["choice"]

    result = engine.complete_sync(req(api="responses"), validate=choice)
    assert (result.parsed, result.attempts, result.reasks) == ("A", 3, 1)
    assert len(llm_server.responses_requests) == 3


@pytest.mark.parametrize(
    "body, reason",
    [
        ({"object": "response", "status": "completed"}, "no output list"),
        ({"status": "failed", "output": [], "error": {"code": "server_error"}}, "the response failed"),
        (
            {
                "status": "completed",
                "output": [
                    {"type": "message", "content": [{"type": "output_text", "text": "x", "logprobs": [{"token": "x"}]}]}
                ],
            },
            "logprobs are malformed",
        ),
    ],
    ids=["no-output", "failed", "bad-logprobs"],
)
def test_odd_responses_bodies_are_reasked_then_reported(engine, llm_server, body, reason):
    llm_server.default = Reply.raw(body)
    with pytest.raises(JudgeError, match=reason) as info:
        engine.complete_sync(req(api="responses"))
    assert info.value.attempts == 3  # 1 ask + 2 re-asks


# ------------------------------------------------------------------------- logprobs
ALTERNATIVES = [{"4": -0.1, "3": -2.5, "5": -3.0}]


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_logprobs_with_top_alternatives(engine, llm_server, api):
    llm_server.default = Reply.text("4", top_logprobs=ALTERNATIVES)
    result = engine.complete_sync(req(logprobs=True, top_logprobs=2, api=api))
    assert result.logprobs == (TokenLogprob("4", -0.1, (("4", -0.1), ("3", -2.5))),)
    cached = engine.complete_sync(req(logprobs=True, top_logprobs=2, api=api))
    assert cached.cached and cached.logprobs == result.logprobs and cached.sent == result.sent


def test_logprobs_of_several_tokens_and_of_a_chat_tool_call(engine, llm_server):
    llm_server.script(Reply.text("Yes.", top_logprobs=[{"Yes": -0.2, "No": -1.8}, {".": -0.01}]), match="text")
    llm_server.script(Reply.choice("A"), match="tool")
    text = engine.complete_sync(
        ChatRequest(messages=[{"role": "user", "content": "text"}], logprobs=True, top_logprobs=5)
    )
    assert [(t.token, t.logprob, len(t.top)) for t in text.logprobs] == [("Yes", -0.2, 2), (".", -0.01, 1)]
    tool = engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "tool"}], logprobs=True))
    assert tool.logprobs == (TokenLogprob('{"choice": "A"}', 0.0, ()),)  # one token, no alternatives asked for


def test_logprobs_are_not_sent_unless_asked(engine, llm_server):
    llm_server.default = Reply.text("4", top_logprobs=ALTERNATIVES)
    result = engine.complete_sync(req())
    assert result.logprobs is None and "logprobs" not in llm_server.chat_requests[0].body


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_endpoint_without_logprobs_stops_the_run(fake_api_key, api):
    with LoopbackLLM(logprobs=False) as server:
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=False, **FAST)
        with pytest.raises(EndpointConfigError, match="returned no logprobs") as info:
            engine.complete_sync(req(logprobs=True, api=api))
        assert isinstance(info.value, ConfigError) and info.value.attempts == 1 and server.request_count == 1


def test_top_logprobs_needs_logprobs_and_api_is_checked():
    with pytest.raises(ConfigError, match="top_logprobs"):
        req(top_logprobs=3)
    with pytest.raises(ConfigError, match="api"):
        req(api="completions")


# ------------------------------------------------------------------------- ChatResult round trip
def test_result_round_trips_through_to_dict():
    result = ChatResult(
        content="4",
        tool_calls=(ToolCall("t", "{}", "call_1"),),
        finish_reason="stop",
        model="m",
        sent={"api": "chat", "temperature": 0},
        logprobs=(TokenLogprob("4", -0.1, (("4", -0.1),)),),
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert ChatResult.from_dict(data) == result


@pytest.mark.parametrize(
    "leave_out", [(), ("failed_prompt_tokens", "failed_completion_tokens", "logprobs"), ("sent",)], ids=str
)
def test_result_from_a_whole_or_older_dict_with_changes_is_the_replaced_result(leave_out):
    result = ChatResult(
        content=None,
        tool_calls=(ToolCall("select_choice", '{"choice": "A"}', "call_1"),),
        finish_reason="tool_calls",
        model="m",
        prompt_tokens=12,
        attempts=1,
        sent={"api": "chat"},
    )
    data = {k: v for k, v in json.loads(json.dumps(result.to_dict())).items() if k not in leave_out}
    rebuilt = ChatResult.from_dict(data, cached=True, attempts=0, latency_s=0.5)
    expected = dataclasses.replace(result, cached=True, attempts=0, latency_s=0.5, sent=data.get("sent", {}))
    assert rebuilt == expected and repr(rebuilt) == repr(expected) and rebuilt.parsed is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(rebuilt, "cached", False)


def test_a_reply_cached_before_sent_existed_gets_it_from_the_request(engine, llm_server):
    first = engine.complete_sync(req(temperature=0))
    settings, cache = engine._resolved()
    from scorers.llm import cache_key

    key = cache_key(req(temperature=0).body(settings.model), base_url=settings.base_url)
    old = {k: v for k, v in first.to_dict().items() if k not in ("sent", "logprobs")}
    cache.put(key, old, model=first.model)
    hit = engine.complete_sync(req(temperature=0))
    assert hit.cached and hit.sent == {"api": "chat", "temperature": 0} and hit.logprobs is None


# ------------------------------------------------------------------------- rejected requests
def test_a_500_validation_error_is_rejected_without_retries(engine, llm_server):
    llm_server.default = Reply.validation_error()
    with pytest.raises(RequestRejected) as info:
        engine.complete_sync(req(response_format=SCHEMA), scorer="Factuality")
    error = info.value
    assert (error.status, error.detail, error.attempts, error.scorer) == (
        500,
        LLAMA_CPP_JSON_SCHEMA_REJECTION,
        1,
        "Factuality",
    )
    assert str(error).startswith("Factuality: the endpoint rejected the request (HTTP 500): ")
    assert len(llm_server.chat_requests) == 1 and not isinstance(error, ConfigError)
    assert pickle.loads(pickle.dumps(error)).__dict__ == error.__dict__


def test_a_500_without_a_validation_message_is_still_retried(engine, llm_server):
    llm_server.script(Reply.error(500, "model is loading"), times=1)
    assert engine.complete_sync(req()).attempts == 2


# ------------------------------------------------------------------------- the deadline
def test_a_backoff_past_the_deadline_fails_at_once(llm_server, fake_api_key):
    llm_server.default = Reply.error(503, "busy")
    engine = LLMEngine(
        base_url=llm_server.base_url, api_key=fake_api_key, cache=False, backoff_base=120, backoff_max=120, deadline=30
    )
    with pytest.raises(JudgeError, match=r"deadline of 30 s .* after 1 attempt; last: HTTP 503: busy") as info:
        engine.complete_sync(req())
    assert info.value.attempts == 1 and len(llm_server.chat_requests) == 1


def test_a_hang_is_cut_at_the_deadline(llm_server, fake_api_key):
    llm_server.default = Reply.hang(60)
    engine = LLMEngine(base_url=llm_server.base_url, api_key=fake_api_key, cache=False, timeout=60, deadline=0.5)
    with pytest.raises(JudgeError, match="deadline of 0.5 s") as info:
        engine.complete_sync(req())
    assert info.value.attempts == 1 and not isinstance(info.value, ConfigError)


@pytest.mark.parametrize(
    "options",
    [dict(deadline=0), dict(deadline=-1), dict(deadline=float("inf")), dict(api="completions"), dict(reasoning="yes")],
)
def test_bad_new_options_raise_config_error(options):
    with pytest.raises(ConfigError):
        LLMEngine(**options)
    with pytest.raises(ConfigError):
        configure(**options)
