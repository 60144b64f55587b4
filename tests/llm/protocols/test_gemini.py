"""The gemini wire protocol: its bodies (each accepted by the loopback server's reading of the API) and its reading
of replies, then judges end to end through its real client over real HTTP against the loopback server: a classifier,
G-Eval weighted by the logprobs the server sent, a rubric; 429 RESOURCE_EXHAUSTED retried, safety stops refused and
never asked again, a fake key nowhere in results, the cache, logs or errors."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Iterator

import pytest

import scorers
from scorers.errors import ConfigError, JudgeError, JudgeRefused
from scorers.judges import GEvalJudge, LLMClassifier, RubricJudge
from scorers.llm import ChatRequest, EndpointConfigError, LLMEngine
from scorers.llm.protocol import InvalidReply, TokenLogprob
from scorers.llm.protocols import PROTOCOLS, HTTPReply, ReplyRefused
from scorers.llm.protocols.gemini import GeminiProtocol, _status_meant, thinking_config
from scorers.testing import LoopbackLLM, Reply
from scorers.testing.protocols import GenerateContentAPI
from scorers.testing.protocols.gemini import prompt_blocked, resource_exhausted

GEMINI = GeminiProtocol()
SERVED = GenerateContentAPI()
KEY = "AIza-CANARY-gemini-0123456789"
PICK = {
    "type": "function",
    "function": {
        "name": "select_choice",
        "description": "Select a choice.",
        "parameters": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"reasons": {"type": "string"}, "choice": {"type": "string", "enum": ["Y", "N"]}},
            "required": ["reasons", "choice"],
            "additionalProperties": False,
        },
    },
}
FORCED = {"type": "function", "function": {"name": "select_choice"}}
PNG = "iVBORw0KGgo="


def body(**request: Any) -> dict[str, Any]:
    messages = request.pop("messages", [{"role": "user", "content": "Is it so?"}])
    return GEMINI.body(ChatRequest(messages=messages, **request), request.pop("model", "gemini-2.5-flash"), False)


# ---------------------------------------------------------------- bodies
def test_the_registration_and_what_it_serves() -> None:
    assert PROTOCOLS.get("gemini") is not None and type(PROTOCOLS.get("gemini")) is GeminiProtocol
    capabilities = GEMINI.capabilities
    assert (capabilities.logprobs, capabilities.prompt_logprobs, capabilities.batch) == (True, False, True)
    assert GEMINI.path("gemini-2.5-flash") == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert GEMINI.path("tunedModels/mine") == "/v1beta/tunedModels/mine:generateContent"
    assert GEMINI.endpoint.api_key({"GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "o"}) == "o"  # as google-genai reads
    assert GEMINI.endpoint.base_url({"GOOGLE_GEMINI_BASE_URL": "http://proxy"}) == "http://proxy"


def test_a_forced_tool_classifier_body() -> None:
    sent = body(
        messages=[{"role": "system", "content": "You judge."}, {"role": "user", "content": "Is it so?"}],
        tools=[PICK],
        tool_choice=FORCED,
        temperature=0,
        max_tokens=512,
        seed=7,
    )
    assert sent == {
        "model": "gemini-2.5-flash",
        "contents": [{"role": "user", "parts": [{"text": "Is it so?"}]}],
        "systemInstruction": {"parts": [{"text": "You judge."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "select_choice",
                        "description": "Select a choice.",
                        "parametersJsonSchema": {
                            k: v for k, v in PICK["function"]["parameters"].items() if k != "$schema"
                        },
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["select_choice"]}},
        "generationConfig": {"temperature": 0, "maxOutputTokens": 512, "seed": 7},
    }
    assert GEMINI.sent(sent) == {"api": "gemini", "generationConfig": sent["generationConfig"]}


SCHEMA = {"$schema": "x", "type": "object", "properties": {"score": {"type": "integer"}}, "additionalProperties": False}


@pytest.mark.parametrize(
    "request_fields, config",
    [
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "r", "schema": SCHEMA, "strict": True},
                }
            },
            {
                "responseMimeType": "application/json",
                "responseJsonSchema": {k: v for k, v in SCHEMA.items() if k != "$schema"},
            },
        ),
        ({"response_format": {"type": "json_object"}}, {"responseMimeType": "application/json"}),
        ({"response_format": {"type": "text"}}, None),
        ({"logprobs": True, "top_logprobs": 20}, {"responseLogprobs": True, "logprobs": 20}),
        ({"logprobs": True}, {"responseLogprobs": True}),
        ({"reasoning_effort": "low"}, {"thinkingConfig": {"thinkingBudget": 1024}}),
        ({"reasoning_effort": "none"}, {"thinkingConfig": {"thinkingBudget": 0}}),
        ({"reasoning_effort": "high", "model": "gemini-3-pro-preview"}, {"thinkingConfig": {"thinkingLevel": "high"}}),
    ],
)
def test_generation_config(request_fields: dict[str, Any], config: dict[str, Any] | None) -> None:
    sent = body(**request_fields)
    assert sent.get("generationConfig") == config
    assert SERVED.invalid({k: v for k, v in sent.items() if k != "model"}) is None


def test_content_parts_become_gemini_parts() -> None:
    parts = [
        {"type": "text", "text": "Does the chart answer it?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/chart.jpeg"}},
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
        {"type": "image_url", "image_url": {"url": "data:text/plain,a%20b"}},
    ]
    sent = body(messages=[{"role": "user", "content": parts}, {"role": "assistant", "content": "Yes."}])
    assert sent["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Does the chart answer it?"},
                {"inlineData": {"mimeType": "image/png", "data": PNG}},
                {"fileData": {"fileUri": "https://example.com/chart.jpeg", "mimeType": "image/jpeg"}},
                {"inlineData": {"mimeType": "audio/mp3", "data": "SUQz"}},
                {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}},
                {"inlineData": {"mimeType": "text/plain", "data": "YSBi"}},
            ],
        },
        {"role": "model", "parts": [{"text": "Yes."}]},
    ]
    assert SERVED.invalid({k: v for k, v in sent.items() if k != "model"}) is None
    with pytest.raises(ConfigError, match="'video_url' content part"):
        body(messages=[{"role": "user", "content": [{"type": "video_url", "video_url": "x"}]}])


def test_schemas_go_as_json_schema_which_the_openapi_subset_would_refuse() -> None:
    scale = {"type": "integer", "enum": [0, 2, 5]}  # e.g. the indices of a conversation's user messages
    schema = {"type": "object", "properties": {"score": scale}, "required": ["score"], "additionalProperties": False}
    sent = body(tools=[{"type": "function", "function": {"name": "f", "parameters": schema}}])
    (declaration,) = sent["tools"][0]["functionDeclarations"]
    assert declaration == {"name": "f", "parametersJsonSchema": schema}  # the constraints chat sends, all kept
    assert SERVED.invalid({k: v for k, v in sent.items() if k != "model"}) is None
    declaration["parameters"] = declaration.pop("parametersJsonSchema")
    assert "Unknown name" in SERVED.invalid({k: v for k, v in sent.items() if k != "model"})


def test_an_effort_gemini_2_does_not_know_is_refused() -> None:
    with pytest.raises(ConfigError, match="reasoning_effort 'xhigh'"):
        thinking_config("xhigh", "gemini-2.5-pro")


# ---------------------------------------------------------------- replies
def candidate(*parts: dict[str, Any], finish: str = "STOP", **fields: Any) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": finish, **fields}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13},
        "modelVersion": "gemini-2.5-flash-001",
    }


def test_function_calls_texts_and_thoughts() -> None:
    reply = candidate(
        {"text": "I weigh it.", "thought": True},
        {"functionCall": {"id": "c1", "name": "select_choice", "args": {"reasons": "r", "choice": "Y"}}},
    )
    result = GEMINI.parse(reply, model="gemini-2.5-flash")
    (call,) = result.tool_calls
    assert (call.name, call.arguments, call.id) == ("select_choice", '{"reasons": "r", "choice": "Y"}', "c1")
    assert (result.content, result.reasoning, result.finish_reason) == (None, "I weigh it.", "tool_calls")
    assert result.response_model == "gemini-2.5-flash-001"
    result = GEMINI.parse(candidate({"text": "4"}, {"text": "2"}, finish="MAX_TOKENS"), model="m")
    assert (result.content, result.finish_reason, result.reasoning) == ("42", "length", None)


@pytest.mark.parametrize(
    "reply, refused",
    [
        ({"candidates": [{"finishReason": "SAFETY"}]}, "finishReason SAFETY"),
        ({"candidates": [{"finishReason": "RECITATION", "content": {"parts": [{"text": "cut"}]}}]}, "RECITATION"),
        ({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}, "blockReason PROHIBITED_CONTENT"),
    ],
)
def test_safety_stops_are_refusals(reply: dict[str, Any], refused: str) -> None:
    with pytest.raises(ReplyRefused, match=refused):
        GEMINI.parse(reply, model="m")


@pytest.mark.parametrize(
    "reply, reason",
    [
        ({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}, "could not make the function call"),
        ({"candidates": []}, "no candidates"),
        ([], "not a JSON object"),
        (candidate({"text": "4"}, logprobsResult={"topCandidates": []}), "no chosenCandidates"),
        (
            candidate({"text": "4"}, logprobsResult={"chosenCandidates": [{"token": "4", "logProbability": 9}]}),
            "malformed",
        ),
    ],
)
def test_unreadable_replies(reply: Any, reason: str) -> None:
    with pytest.raises(InvalidReply, match=reason):
        GEMINI.parse(reply, model="m")


def test_logprobs_and_zeros_left_out() -> None:
    steps = {
        "chosenCandidates": [{"token": "4"}, {"token": "\n", "logProbability": -0.5}],
        "topCandidates": [{"candidates": [{"token": "4"}, {"token": "3", "logProbability": -2.5}]}],
    }
    result = GEMINI.parse(candidate({"text": "4\n"}, logprobsResult=steps), model="m")
    assert result.logprobs == (TokenLogprob("4", 0.0, (("4", 0.0), ("3", -2.5))), TokenLogprob("\n", -0.5, ()))
    assert GEMINI.parse(candidate({"text": "4"}), model="m").logprobs is None


def test_tokens_bill_thoughts_as_output() -> None:
    usage = {"promptTokenCount": 90, "candidatesTokenCount": 4, "thoughtsTokenCount": 30, "cachedContentTokenCount": 64}
    assert tuple(GEMINI.tokens({"usageMetadata": usage})) == (90, 34, 64, 30)
    assert tuple(GEMINI.tokens({"usageMetadata": {"promptTokenCount": "x"}})) == (0, 0, 0, 0)
    assert tuple(GEMINI.tokens(None)) == (0, 0, 0, 0)


def test_googles_statuses_as_they_mean() -> None:
    retry = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"retryDelay": "2.5s"}]}}
    assert _status_meant(429, {}, json.dumps(retry).encode()) == (429, {"retry-after": "2.5"})
    assert _status_meant(429, {"retry-after": "1"}, json.dumps(retry).encode()) == (429, {"retry-after": "1"})
    invalid_key = {"error": {"code": 400, "status": "INVALID_ARGUMENT", "details": [{"reason": "API_KEY_INVALID"}]}}
    assert _status_meant(400, {}, json.dumps(invalid_key).encode())[0] == 401
    assert _status_meant(400, {}, b"<html>") == (400, {})
    assert HTTPReply(*_status_meant(400, {}, b"{}"), b"{}").status == 400


# ---------------------------------------------------------------- end to end, over HTTP
@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(api_key=KEY) as running:
        yield running


def engine(server: LoopbackLLM, **settings: Any) -> LLMEngine:
    return LLMEngine(api="gemini", base_url=server.base_url, api_key=KEY, cache=False, **settings)


def classifier(server: LoopbackLLM, **settings: Any) -> LLMClassifier:
    prompt = "Does the answer agree with the reference?\nAnswer: {{output}}\nReference: {{expected}}"
    return LLMClassifier("Agrees", prompt, {"Y": 1.0, "N": 0.0}, engine=engine(server, **settings))


def test_a_classifier_through_the_real_client(server: LoopbackLLM) -> None:
    server.default = Reply.choice("Y", reasons="same city", usage=(40, 6))
    score = classifier(server, model="gemini-2.5-flash")(output="Paris", expected="Paris")
    assert (score.score, score.metadata["choice"]) == (1.0, "Y")
    (request,) = server.requests
    assert (request.api, request.path) == ("gemini", "/v1beta/models/gemini-2.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == KEY and "authorization" not in request.headers
    assert "model" not in request.body and request.ask.forced_tool[0] == "select_choice"
    assert score.metadata["sent"]["api"] == "gemini"


def test_g_eval_weighs_the_logprobs_the_server_sent(server: LoopbackLLM) -> None:
    alternatives = {"4": -0.2231, "3": -1.6094, "5": -4.0, "x": -2.0}
    server.default = Reply.text("4", top_logprobs=[alternatives])
    judge = GEvalJudge(
        "Coherence",
        "Summary: {{output}}",
        criteria="Is it well organised?",
        steps=["Read it.", "Rate it."],
        scale={"min": 1, "max": 5},
        top_logprobs=5,
        engine=engine(server),
    )
    score = judge(output="First this. Then that.")
    on_scale = {int(token): math.exp(lp) for token, lp in alternatives.items() if token.isdigit()}
    expected = sum(value * p for value, p in on_scale.items()) / sum(on_scale.values())
    assert score.metadata["expected_score"] == pytest.approx(expected)
    assert score.score == pytest.approx((expected - 1) / 4)
    config = server.requests[0].body["generationConfig"]
    assert (config["responseLogprobs"], config["logprobs"]) == (True, 5)


def test_g_eval_without_logprobs_served_is_an_endpoint_error() -> None:
    with LoopbackLLM(default=Reply.text("4"), logprobs=False, api_key=KEY) as server:
        judge = GEvalJudge(
            "Coherence",
            "Summary: {{output}}",
            criteria="Organised?",
            steps=["Rate it."],
            scale={"min": 1, "max": 5},
            engine=engine(server),
        )
        with pytest.raises(EndpointConfigError):
            judge(output="x")


def test_a_rubric_scores_as_on_chat(server: LoopbackLLM) -> None:
    criteria = [{"name": "accurate", "description": "Agrees.", "weight": 2}, {"name": "brief", "description": "Short."}]
    server.default = Reply.tool_call({"reasons": "right, long", "accurate": 5, "brief": 2}, name="grade_rubric")

    def rubric(api: str) -> Any:
        llm = LLMEngine(api=api, base_url=server.base_url, api_key=KEY, cache=False)
        judge = RubricJudge("Quality", "Answer: {{output}}", criteria=criteria, scale={"min": 1, "max": 5}, engine=llm)
        return judge(output="Paris.")

    on_gemini, on_chat = rubric("gemini"), rubric("chat")
    assert on_gemini.score == on_chat.score == pytest.approx((2 * (5 - 1) / 4 + (2 - 1) / 4) / 3)
    assert [r.api for r in server.requests] == ["gemini", "chat"]


def test_resource_exhausted_is_retried_after_the_delay_it_gives(server: LoopbackLLM) -> None:
    server.script(resource_exhausted(0), times=2)
    server.default = Reply.choice("N")
    score = classifier(server, max_retries=2)(output="Lyon", expected="Paris")
    assert score.score == 0.0 and [r.status for r in server.requests] == [429, 429, 200]


@pytest.mark.slow  # a 0.5 s timeout and two backoffs
@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_dropped_connection_and_a_hang_are_retried(server: LoopbackLLM, transport: str) -> None:
    server.script(Reply.drop(), times=1)
    server.script(Reply.hang(30), times=1)
    server.default = Reply.choice("Y")
    judge = classifier(server, transport=transport, max_retries=2, timeout=0.5)
    assert judge(output="x", expected="y").score == 1.0
    assert server.request_count == 3


@pytest.mark.parametrize(
    "stop", [Reply.text("", finish_reason="SAFETY"), Reply.text("", finish_reason="RECITATION"), prompt_blocked()]
)
def test_a_safety_stop_is_refused_and_never_asked_again(server: LoopbackLLM, stop: Reply) -> None:
    server.default = stop
    judge = classifier(server, max_reasks=2, max_retries=2)
    with pytest.raises(JudgeRefused):
        judge(output="x", expected="y")
    assert server.request_count == 1


def test_a_malformed_function_call_is_asked_again(server: LoopbackLLM) -> None:
    server.script(Reply.tool_call('{"choice": "Y"'), times=1)
    server.default = Reply.choice("Y")
    assert classifier(server, max_reasks=1)(output="x", expected="y").score == 1.0
    assert server.request_count == 2


def test_thoughts_are_billed(server: LoopbackLLM) -> None:
    server.default = Reply.choice("Y", usage=(40, 6))
    result = engine(server).complete_sync(
        ChatRequest(
            messages=[{"role": "user", "content": "Pick."}], tools=[PICK], tool_choice=FORCED, reasoning_effort="low"
        )
    )
    assert (result.prompt_tokens, result.completion_tokens, result.reasoning_tokens) == (40, 6 + 9, 9)


def test_the_providers_variables_point_a_judge_at_the_loopback(server: LoopbackLLM, monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url.removesuffix("/v1"))
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    server.default = Reply.choice("C", reasons="same facts")
    judge = scorers.get("Factuality", engine=LLMEngine(api="gemini", cache=False))
    assert judge(input="2+2?", output="4", expected="4").score is not None
    assert server.requests[-1].headers["x-goog-api-key"] == KEY


def test_a_key_the_api_calls_invalid_stops_the_run(server: LoopbackLLM) -> None:
    invalid = {
        "error": {
            "code": 400,
            "message": f"API key not valid: {KEY}",
            "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
        }
    }
    server.default = Reply.raw(invalid, status=400)
    with pytest.raises(EndpointConfigError) as raised:
        classifier(server)(output="x", expected="y")
    assert "HTTP 401" in str(raised.value) and KEY not in str(raised.value)


def test_the_key_is_nowhere(server: LoopbackLLM, tmp_path: Path, caplog, monkeypatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    server.script(Reply.error(400, f"rejected: key {KEY}"), match="rejected")
    server.script(Reply.error(500, f"down: key {KEY}"), match="down", times=1)
    server.default = Reply.choice("Y", reasons="no key here")
    llm = LLMEngine(api="gemini", base_url=server.base_url, cache=str(tmp_path / "cache.sqlite"), max_retries=1)
    judge = LLMClassifier("Agrees", "Answer: {{output}}", {"Y": 1.0, "N": 0.0}, engine=llm)
    scores = [judge(output=text) for text in ("fine", "once down")]
    with pytest.raises(JudgeError) as raised:
        judge(output="rejected")
    shown = [json.dumps(score.to_dict(), default=str) for score in scores] + [str(raised.value), caplog.text]
    stored = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    assert all(KEY not in text for text in shown) and all(KEY.encode() not in data for data in stored)
    assert "HTTP 400" in str(raised.value) and all(r.headers["x-goog-api-key"] == KEY for r in server.requests)


def test_extra_adds_top_level_fields_and_may_not_set_the_protocols(server: LoopbackLLM) -> None:
    server.default = Reply.text("fine")
    relaxed = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "threshold": "BLOCK_NONE"}]
    asked = [{"role": "user", "content": "Judge it."}]
    result = engine(server).complete_sync(ChatRequest(messages=asked, extra={"safetySettings": relaxed}))
    assert result.content == "fine" and server.requests[-1].body["safetySettings"] == relaxed
    with pytest.raises(ConfigError, match="generationConfig"):
        engine(server).complete_sync(
            ChatRequest(messages=asked, temperature=0, extra={"generationConfig": {"topP": 1}})
        )
