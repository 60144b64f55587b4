"""The loopback server's Gemini ``generateContent``, driven by the official ``google-genai`` SDK over real HTTP: the
SDK must read every reply shape the server sends (texts, function calls, JSON and enum replies, log-probabilities,
thoughts, usage, safety stops, a blocked prompt) and its errors (Google's shape, 429 ``RESOURCE_EXHAUSTED``)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, Iterator

import pytest

from scorers.testing import LoopbackLLM, Reply, auto_reply
from scorers.testing.protocols.gemini import GenerateContentAPI, prompt_blocked, resource_exhausted

genai = pytest.importorskip("google.genai", reason="google-genai (in the dev extra) drives the loopback")
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")

KEY = "loopback-gemini-key"
PICK = types.FunctionDeclaration(
    name="select_choice",
    description="Select a choice.",
    parameters=types.Schema(
        type="OBJECT",
        properties={"reasons": types.Schema(type="STRING"), "choice": types.Schema(type="STRING", enum=["Y", "N"])},
        required=["reasons", "choice"],
    ),
)
FORCED = types.ToolConfig(
    function_calling_config=types.FunctionCallingConfig(mode="ANY", allowed_function_names=["select_choice"])
)


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(api_key=KEY) as running:
        yield running


def generate(
    server: LoopbackLLM, contents: Any = "Is it so?", key: str = KEY, version: str = "v1beta", **config: Any
) -> Any:
    """One ``client.aio.models.generate_content`` call of the SDK against ``server`` (its retries off), to API
    ``version`` (the engine's ``v1beta`` unless told)."""
    base_url = server.base_url.removesuffix("/v1")
    options = types.HttpOptions(base_url=base_url, api_version=version, retry_options=None, timeout=30_000)

    async def call() -> Any:
        client = genai.Client(api_key=key, http_options=options)
        try:
            return await client.aio.models.generate_content(
                model="gemini-2.5-flash", contents=contents, config=types.GenerateContentConfig(**config)
            )
        finally:
            await client.aio.aclose()

    return asyncio.run(call())


def test_a_text_reply_and_what_the_server_read(server: LoopbackLLM) -> None:
    server.default = Reply.text("plain words")
    image = types.Part.from_bytes(data=b"\x89PNG fake", mime_type="image/png")
    reply = generate(server, ["Describe it.", image], system_instruction="You grade.", temperature=0)
    assert (reply.text, reply.candidates[0].finish_reason) == ("plain words", types.FinishReason.STOP)
    (request,) = server.requests
    assert (request.api, request.path, request.headers["x-goog-api-key"]) == (
        "gemini",
        "/v1beta/models/gemini-2.5-flash:generateContent",
        KEY,
    )
    system, user = request.messages
    assert system == {"role": "system", "content": [{"type": "text", "text": "You grade."}]}
    assert user["content"][0] == {"type": "text", "text": "Describe it."}
    assert user["content"][1]["inlineData"] == {
        "mimeType": "image/png",
        "data": base64.b64encode(b"\x89PNG fake").decode(),
    }
    assert request.last_user_message.startswith("Describe it.") and request.body["generationConfig"] == {
        "temperature": 0
    }
    assert generate(server, version="v1").text == "plain words"  # the SDK's default version
    assert server.requests[-1].path == "/v1/models/gemini-2.5-flash:generateContent"


def test_a_forced_function_call_arrives_as_an_args_object(server: LoopbackLLM) -> None:
    server.default = Reply.choice("Y", reasons="it is")
    reply = generate(server, tools=[types.Tool(function_declarations=[PICK])], tool_config=FORCED)
    (call,) = reply.function_calls
    assert (call.name, call.args) == ("select_choice", {"reasons": "it is", "choice": "Y"})
    properties = {"reasons": {"type": "string"}, "choice": {"type": "string", "enum": ["Y", "N"]}}
    read = {"type": "object", "properties": properties, "required": ["reasons", "choice"]}
    assert server.requests[0].ask.forced_tool == ("select_choice", read)  # the OpenAPI types read as JSON Schema's


def test_auto_reply_answers_a_forced_function_and_a_json_schema(server: LoopbackLLM) -> None:
    server.default = auto_reply
    (call,) = generate(server, tools=[types.Tool(function_declarations=[PICK])], tool_config=FORCED).function_calls
    assert call.args["choice"] in ("Y", "N") and isinstance(call.args["reasons"], str)
    schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}}}
    reply = generate(server, response_mime_type="application/json", response_json_schema=schema)
    assert 1 <= json.loads(reply.text)["score"] <= 5
    assert server.requests[-1].ask.schema == schema


def test_an_enum_reply_is_the_bare_label(server: LoopbackLLM) -> None:
    server.default = auto_reply
    enum = types.Schema(type="STRING", enum=["Y", "N"])
    reply = generate(server, response_mime_type="text/x.enum", response_schema=enum)
    assert reply.text in ("Y", "N")
    server.default = Reply.json("N")
    assert generate(server, response_mime_type="text/x.enum", response_schema=enum).text == "N"


def test_logprobs_are_served_when_asked_cut_to_logprobs(server: LoopbackLLM) -> None:
    server.default = Reply.text("4", top_logprobs=[{"4": -0.1, "3": -2.5, "5": -3.0}])
    assert generate(server).candidates[0].logprobs_result is None
    candidate = generate(server, response_logprobs=True, logprobs=2).candidates[0]
    (chosen,) = candidate.logprobs_result.chosen_candidates
    (step,) = candidate.logprobs_result.top_candidates
    assert (chosen.token, chosen.log_probability, candidate.avg_logprobs) == ("4", -0.1, -0.1)
    assert [(c.token, c.log_probability) for c in step.candidates] == [("4", -0.1), ("3", -2.5)]


def test_a_server_without_logprobs_serves_none() -> None:
    with LoopbackLLM(default=Reply.text("4", top_logprobs=[{"4": -0.1}]), logprobs=False) as server:
        assert generate(server, response_logprobs=True, logprobs=1).candidates[0].logprobs_result is None


@pytest.mark.parametrize(
    "reply, finish, text",
    [
        (Reply.text("cut", finish_reason="length"), types.FinishReason.MAX_TOKENS, "cut"),
        (Reply.text("", finish_reason="SAFETY"), types.FinishReason.SAFETY, None),
        (Reply.text("", finish_reason="RECITATION"), types.FinishReason.RECITATION, None),
        (Reply.tool_call('{"choice": "Y"'), types.FinishReason.MALFORMED_FUNCTION_CALL, None),
    ],
)
def test_finish_reasons(server: LoopbackLLM, reply: Reply, finish: Any, text: str | None) -> None:
    server.default = reply
    candidate = generate(server).candidates[0]
    assert candidate.finish_reason == finish
    assert (candidate.content.parts[0].text if candidate.content else None) == text
    if finish == types.FinishReason.SAFETY:
        assert candidate.safety_ratings[0].blocked is True


def test_a_blocked_prompt_has_no_candidates(server: LoopbackLLM) -> None:
    server.default = prompt_blocked("SAFETY")
    reply = generate(server)
    assert reply.candidates is None and reply.prompt_feedback.block_reason == types.BlockedReason.SAFETY
    assert reply.usage_metadata.prompt_token_count == 8


def test_usage_with_thoughts_and_cached_content(server: LoopbackLLM) -> None:
    server.default = Reply.text("Y", usage=(40, 1))
    reply = generate(server, thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=128))
    thought, answer = reply.candidates[0].content.parts
    assert thought.thought is True and (answer.text, reply.text) == ("Y", "Y")
    usage = reply.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.thoughts_token_count) == (40, 1, 9)
    assert usage.total_token_count == 50 and usage.cached_content_token_count is None
    usage = generate(server, thinking_config=types.ThinkingConfig(thinking_budget=128)).usage_metadata
    assert usage.thoughts_token_count == 9  # thoughts not shown are billed all the same
    assert generate(server, cached_content="cachedContents/abc").usage_metadata.cached_content_token_count == 40
    assert (
        generate(server, thinking_config=types.ThinkingConfig(thinking_budget=0)).usage_metadata.thoughts_token_count
        is None
    )


@pytest.mark.parametrize(
    "reply, error, status",
    [
        (resource_exhausted(7), errors.ClientError, "RESOURCE_EXHAUSTED"),
        (Reply.error(503, "overloaded"), errors.ServerError, "UNAVAILABLE"),
        (Reply.error(500), errors.ServerError, "INTERNAL"),
    ],
)
def test_errors_in_googles_shape(server: LoopbackLLM, reply: Reply, error: type, status: str) -> None:
    server.default = reply
    with pytest.raises(error) as raised:
        generate(server)
    assert (raised.value.code, raised.value.status) == (reply.status, status)
    if reply.status == 429:
        assert raised.value.details["error"]["details"] == [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
        ]
        assert raised.value.response.headers.get("retry-after") is None  # as Google's: the delay is in the body


def test_a_wrong_key_and_a_body_the_api_refuses(server: LoopbackLLM) -> None:
    with pytest.raises(errors.ClientError) as raised:
        generate(server, key="wrong")
    assert (raised.value.code, raised.value.status) == (401, "UNAUTHENTICATED")
    contents = [types.Content(role="assistant", parts=[types.Part(text="hi")])]
    with pytest.raises(errors.ClientError) as raised:
        generate(server, contents)
    assert (raised.value.code, raised.value.status) == (400, "INVALID_ARGUMENT")
    assert "Please use a valid role: user, model." in raised.value.message


def test_the_api_refuses_schema_keys_its_schema_has_not() -> None:
    api = GenerateContentAPI()
    declaration = {"name": "f", "parameters": {"type": "object", "additionalProperties": False}}
    body = {
        "contents": [{"role": "user", "parts": [{"text": "x"}]}],
        "tools": [{"functionDeclarations": [declaration]}],
    }
    assert 'Unknown name "additionalProperties"' in api.invalid(body)
    declaration["parameters"] = {"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2]}}}
    assert "enum: only allowed for STRING type" in api.invalid(body)
    declaration["parametersJsonSchema"] = declaration.pop("parameters")
    assert api.invalid(body) is None
    assert 'Unknown name "messages"' in api.invalid({**body, "messages": []})
    assert "logprobs" in api.invalid({**body, "generationConfig": {"responseLogprobs": True, "logprobs": 21}})
