"""The chat completions API, driven by the real openai client over real HTTP."""

from __future__ import annotations

import json

import openai
import pytest

from scorers.testing import LLAMA_CPP_JSON_SCHEMA_REJECTION, LoopbackLLM, RecordedRequest, Reply

from ..openai_clients import TOOL, ask, client


@pytest.mark.parametrize(
    "reply, content, tool",
    [
        (Reply.text("plain words"), "plain words", None),
        (Reply.json({"choice": "B"}), '{"choice": "B"}', None),
        (Reply.choice("A"), None, ("select_choice", {"choice": "A"})),
        (Reply.choice("Z", reasons="r"), None, ("select_choice", {"reasons": "r", "choice": "Z"})),
        (Reply.tool_call({"x": 1}, name="other_tool"), None, ("other_tool", {"x": 1})),
    ],
)
def test_reply_kinds(llm_server, reply, content, tool):
    llm_server.default = reply
    message = ask(llm_server, "hello").choices[0].message
    assert message.content == content
    if tool is None:
        assert not message.tool_calls
    else:
        call = message.tool_calls[0].function
        assert (call.name, json.loads(call.arguments)) == tool


def test_malformed_arguments_are_sent_verbatim(llm_server):
    llm_server.default = Reply.tool_call('{"choice": "A"')
    response = ask(llm_server, "hi")
    assert response.choices[0].message.tool_calls[0].function.arguments == '{"choice": "A"'
    assert response.choices[0].finish_reason == "tool_calls"


@pytest.mark.slow
@pytest.mark.parametrize(
    "reply, error",
    [
        (Reply.hang(60), openai.APITimeoutError),
        (Reply.drop(), openai.APIConnectionError),
        (Reply.error(500), openai.InternalServerError),
        (Reply.error(400, "bad"), openai.BadRequestError),
    ],
)
def test_faults(llm_server, reply, error):
    llm_server.default = reply
    with pytest.raises(error):
        # only the hang may time out: other replies get a timeout they never come near
        client(llm_server, timeout=1.0 if reply.kind == "hang" else 30.0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )


def test_records_what_was_sent(llm_server):
    ask(
        llm_server,
        "judge this",
        tools=[TOOL],
        tool_choice={"type": "function", "function": {"name": "select_choice"}},
        temperature=0,
    )
    (request,) = llm_server.chat_requests
    assert isinstance(request, RecordedRequest)
    assert request.body["tools"] == [TOOL]
    assert request.body["tool_choice"]["function"]["name"] == "select_choice"
    assert request.body["temperature"] == 0
    assert request.model == "gpt-4o-mini"
    assert request.last_user_message == "judge this"
    assert request.headers["authorization"] == "Bearer k"


def test_usage_defaults_to_word_counts_and_can_be_scripted(llm_server):
    llm_server.default = Reply.text("one two three")
    assert (ask(llm_server, "a b").usage.prompt_tokens, ask(llm_server, "a b").usage.completion_tokens) == (2, 3)
    llm_server.default = Reply.text("x", usage=(100, 7))
    usage = ask(llm_server, "a b").usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (100, 7, 107)


def test_server_api_key_rejects_others():
    with LoopbackLLM(api_key="right") as server:
        with pytest.raises(openai.AuthenticationError):
            ask(server, "x")
        assert server.chat_requests[0].status == 401


def test_a_llama_cpp_validation_error(llm_server):
    llm_server.default = Reply.validation_error()
    with pytest.raises(openai.InternalServerError) as info:
        ask(llm_server, "x", response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": {}}})
    assert info.value.status_code == 500
    assert info.value.body == {
        "message": LLAMA_CPP_JSON_SCHEMA_REJECTION,
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
