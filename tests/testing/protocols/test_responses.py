"""The Responses API, driven by the real openai client over real HTTP."""

from __future__ import annotations

import json

import openai
import pytest

from scorers.testing import Reply

from ..openai_clients import TOOL, ask, client, respond


def test_responses_are_scripted_and_recorded_like_chat(llm_server):
    llm_server.script(Reply.choice("A"), match="tool")
    llm_server.default = Reply.text("plain words", usage=(5, 2))
    tool = respond(
        llm_server,
        "tool please",
        tools=[{"type": "function", "name": "select_choice", "parameters": TOOL["function"]["parameters"]}],
    )
    (call,) = tool.output
    assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "select_choice", {"choice": "A"})
    assert call.call_id.startswith("call_") and tool.status == "completed"
    text = respond(llm_server, "text please")
    assert (text.output_text, text.usage.input_tokens, text.usage.output_tokens) == ("plain words", 5, 2)
    ask(llm_server, "chat")
    assert [r.api for r in llm_server.requests] == ["responses", "responses", "chat"]
    assert [r.last_user_message for r in llm_server.responses_requests] == ["tool please", "text please"]
    assert [r.path for r in llm_server.chat_requests] == ["/v1/chat/completions"]


def test_responses_string_input_and_faults(llm_server):
    llm_server.script(Reply.error(503, "busy"), times=1)
    with pytest.raises(openai.InternalServerError):
        client(llm_server).responses.create(model="m", input="just a string")
    reply = client(llm_server).responses.create(model="m", input="just a string")
    assert reply.output_text == "OK" and llm_server.responses_requests[1].messages == [
        {"role": "user", "content": "just a string"}
    ]
    assert [r.status for r in llm_server.requests] == [503, 200]


def test_responses_cut_at_max_output_tokens_are_incomplete(llm_server):
    llm_server.default = Reply.text("cut", finish_reason="length")
    reply = respond(llm_server, "x", max_output_tokens=16)
    assert (reply.status, reply.incomplete_details.reason) == ("incomplete", "max_output_tokens")
