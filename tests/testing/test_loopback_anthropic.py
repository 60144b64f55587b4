"""The loopback server's Messages API, driven by the official ``anthropic`` SDK over real HTTP: every reply shape it
serves passes the SDK's own types (validated strictly, not only read), and every error it serves is the SDK's
exception of that status."""

from __future__ import annotations

import asyncio
import base64
from typing import Any, Iterator

import pytest

from scorers.testing import LoopbackLLM, Reply, auto_reply
from scorers.testing.protocols.anthropic import LOOPBACK_THINKING

anthropic = pytest.importorskip("anthropic")

SCHEMA = {
    "type": "object",
    "properties": {"reasons": {"type": "string"}, "choice": {"type": "string", "enum": ["Y", "N"]}},
    "required": ["reasons", "choice"],
}
TOOL = {"name": "select_choice", "description": "Select a choice.", "input_schema": SCHEMA}
FORCED = {"tools": [TOOL], "tool_choice": {"type": "tool", "name": "select_choice", "disable_parallel_tool_use": True}}
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n not really a picture").decode()


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(api_key="sk-ant-loopback") as running:
        yield running


def create(server: LoopbackLLM, text: str = "Is it so?", **options: Any) -> Any:
    """``messages.create`` through the async SDK (what the judges use), its retries off; the validated Message."""

    async def call() -> Any:
        client = anthropic.AsyncAnthropic(
            base_url=server.base_url.removesuffix("/v1"), api_key="sk-ant-loopback", max_retries=0
        )
        async with client:
            raw = await client.messages.with_raw_response.create(
                model="claude-loopback",
                max_tokens=options.pop("max_tokens", 256),
                messages=options.pop("messages", [{"role": "user", "content": text}]),
                **options,
            )
            anthropic.types.Message.model_validate(raw.http_response.json())  # strictly, not the SDK's lenient read
            return await raw.parse()

    return asyncio.run(call())


def test_a_forced_tool_call_comes_back_as_a_tool_use_block_with_an_object_input(server: LoopbackLLM) -> None:
    server.default = Reply.choice("Y", reasons="it is", usage=(812, 64))
    message = create(server, system="You are a judge.", **FORCED)
    (block,) = message.content
    assert (block.type, block.name, block.input) == ("tool_use", "select_choice", {"reasons": "it is", "choice": "Y"})
    assert block.id.startswith("toolu_") and message.stop_reason == "tool_use"
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens) == (812, 64, 0)
    (request,) = server.requests
    assert request.api == "anthropic" and request.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer sk-ant-loopback"  # where anthropic 2.x puts the key
    assert request.headers["anthropic-version"]
    assert request.messages[0] == {"role": "system", "content": "You are a judge."}
    assert request.ask.forced_tool == ("select_choice", SCHEMA)


def test_text_and_auto_replies(server: LoopbackLLM) -> None:
    server.default = Reply.text("plain words")
    message = create(server)
    assert [(b.type, b.text) for b in message.content] == [("text", "plain words")]
    assert message.stop_reason == "end_turn"
    server.default = auto_reply
    (block,) = create(server, **FORCED).content
    assert block.input["choice"] in ("Y", "N")


def test_structured_output_arrives_as_json_text(server: LoopbackLLM) -> None:
    server.default = auto_reply
    message = create(server, output_config={"format": {"type": "json_schema", "schema": SCHEMA}})
    (block,) = message.content
    assert block.type == "text" and set(anthropic_json(block.text)) == {"reasons", "choice"}
    assert server.requests[0].ask.json and server.requests[0].ask.schema == SCHEMA


def anthropic_json(text: str) -> dict[str, Any]:
    import json

    value = json.loads(text)
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("finish_reason", ["refusal", "content_filter"])
def test_a_refusal(server: LoopbackLLM, finish_reason: str) -> None:
    server.default = Reply.text("", finish_reason=finish_reason)
    message = create(server)
    assert message.stop_reason == "refusal" and message.stop_details.type == "refusal"


def test_a_tool_call_cut_at_max_tokens_has_a_partial_input(server: LoopbackLLM) -> None:
    server.default = Reply.tool_call('{"reasons": "because', finish_reason="length")
    message = create(server, **FORCED)
    (block,) = message.content
    assert (block.type, block.input, message.stop_reason) == ("tool_use", {}, "max_tokens")


def test_thinking_comes_first_in_its_own_block(server: LoopbackLLM) -> None:
    server.default = Reply.json({"reasons": "r", "choice": "N"})
    message = create(
        server,
        max_tokens=4096,
        thinking={"type": "enabled", "budget_tokens": 1024},
        output_config={"format": {"type": "json_schema", "schema": SCHEMA}},
    )
    thinking, text = message.content
    assert (thinking.type, thinking.thinking, text.type) == ("thinking", LOOPBACK_THINKING, "text")
    assert 0 < message.usage.output_tokens_details.thinking_tokens < message.usage.output_tokens


def test_images_and_documents_are_taken(server: LoopbackLLM) -> None:
    content = [
        {"type": "text", "text": "Does the chart answer it?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PIXEL}},
    ]
    assert create(server, messages=[{"role": "user", "content": content}]).content[0].text == "OK"
    assert server.requests[0].last_user_message.strip() == "Does the chart answer it?"


@pytest.mark.parametrize(
    "reply, error, error_type, retry_after",
    [
        (Reply.rate_limited(retry_after=3), anthropic.RateLimitError, "rate_limit_error", "3"),
        (Reply.error(529, "Overloaded"), anthropic.OverloadedError, "overloaded_error", None),
        (Reply.error(500), anthropic.InternalServerError, "api_error", None),
        (Reply.error(400, "bad"), anthropic.BadRequestError, "invalid_request_error", None),
    ],
)
def test_errors_are_the_sdks_exceptions(server: LoopbackLLM, reply: Reply, error: Any, error_type, retry_after) -> None:
    server.default = reply
    with pytest.raises(error) as raised:
        create(server)
    assert raised.value.status_code == reply.status and raised.value.response.headers.get("retry-after") == retry_after
    assert raised.value.body == {"type": "error", "error": {"type": error_type, "message": reply.error_message}}


@pytest.mark.parametrize(
    "options, refusal",
    [
        ({"extra_body": {"temperature": 1.5}}, "temperature: Input should be a number from 0 to 1"),
        (
            {**FORCED, "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024}},
            "Thinking may not be enabled when tool_choice forces tool use.",
        ),
        (
            {"extra_body": {"response_format": {"type": "json_object"}}},
            "response_format: Extra inputs are not permitted",
        ),
        ({"messages": [{"role": "system", "content": "x"}]}, "messages.0.role: Input should be 'user' or 'assistant'"),
    ],
)
def test_what_the_api_refuses_is_a_400(server: LoopbackLLM, options: dict[str, Any], refusal: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as raised:
        create(server, **options)
    assert raised.value.body["error"] == {"type": "invalid_request_error", "message": refusal}


def test_a_wrong_key_and_a_missing_version(server: LoopbackLLM) -> None:
    async def call(**options: Any) -> Any:
        client = anthropic.AsyncAnthropic(base_url=server.base_url.removesuffix("/v1"), max_retries=0, **options)
        async with client:
            return await client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}])

    with pytest.raises(anthropic.AuthenticationError) as raised:
        asyncio.run(call(api_key="sk-ant-wrong"))
    assert raised.value.body["error"]["type"] == "authentication_error"
    with pytest.raises(anthropic.BadRequestError) as raised:
        asyncio.run(call(api_key="sk-ant-loopback", default_headers={"anthropic-version": anthropic.Omit()}))
    assert raised.value.body["error"]["message"] == "anthropic-version: header is required"
