"""The anthropic protocol: the Messages API body of each judge request shape, the reading of each reply shape, and
(further down) judges through the real ``anthropic`` SDK over real HTTP against the loopback server."""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
from pathlib import Path
from typing import Any, Callable

import pytest

import scorers
from scorers.errors import ConfigError, JudgeError, JudgeRefused
from scorers.judges import RatingJudge, RubricJudge
from scorers.llm import EndpointConfigError, LLMEngine
from scorers.llm.protocol import ChatRequest, InvalidReply
from scorers.llm.protocols import ReplyRefused, Tokens
from scorers.llm.protocols.anthropic import (
    DEFAULT_MAX_TOKENS,
    AnthropicProtocol,
    messages_body,
    structured_schema,
)
from scorers.testing import LoopbackLLM, Reply, auto_reply
from scorers.testing.protocols.anthropic import LOOPBACK_THINKING

PROTOCOL = AnthropicProtocol()
ROW = {"input": "What is 2+2?", "output": "4", "expected": "4"}
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n pixels").decode()
PDF = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4 pages").decode()
TEXT = "data:text/plain;base64," + base64.b64encode("a plain note".encode()).decode()


def judge_request(name: str = "Factuality", **params: Any) -> ChatRequest:
    """The request a built-in judge sends for :data:`ROW`."""
    (request,) = scorers.get(name, **params)._row_requests(ROW)
    return request


def body_of(request: ChatRequest, model: str = "claude-haiku-4-5", thinks: bool = False) -> dict[str, Any]:
    return messages_body(request, model, thinks=thinks)


# ------------------------------------------------------------------------------------------ bodies
def test_a_classifier_in_tools_mode_forces_its_tool() -> None:
    request = judge_request(response_mode="tools")
    body = body_of(request)
    (tool,) = request.tools or ()
    assert body["tools"] == [
        {
            "name": "select_choice",
            "description": tool["function"]["description"],
            "input_schema": tool["function"]["parameters"],
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "select_choice", "disable_parallel_tool_use": True}
    assert body["messages"] == [{"role": "user", "content": request.messages[-1]["content"]}]
    assert body["max_tokens"] == request.max_tokens and body["temperature"] == request.temperature
    assert "output_config" not in body and "seed" not in body


def test_json_mode_is_structured_output_with_the_schema_cut_to_the_api_subset() -> None:
    request = judge_request(response_mode="json")
    body = body_of(request)
    assert "tools" not in body and "tool_choice" not in body
    schema = (request.response_format or {})["json_schema"]["schema"]
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": structured_schema(schema)}}
    assert body["output_config"]["format"]["schema"]["additionalProperties"] is False


def test_text_mode_sends_the_prompt_alone() -> None:
    body = body_of(judge_request(response_mode="text"))
    assert set(body) == {"model", "max_tokens", "messages", "temperature"}


def test_a_rating_judge_keeps_its_bounds_in_the_description() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 10, "description": "The rating."},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "minItems": 2, "uniqueItems": True},
            "either": {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "null"}]},
            "nested": {"type": "object", "properties": {"x": {"not": {"type": "null"}, "type": "string"}}},
        },
        "if": {"required": ["score"]},
        "then": {"required": ["tags"]},
        "additionalProperties": True,
    }
    assert structured_schema(schema) == {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "description": "The rating. (minimum: 1, maximum: 10)"},
            "tags": {
                "type": "array",
                "items": {"type": "string", "description": "(maxLength: 20)"},
                "description": "(minItems: 2, uniqueItems: true)",
            },
            "either": {"anyOf": [{"type": "string", "description": '(pattern: "^a")'}, {"type": "null"}]},
            "nested": {
                "type": "object",
                "properties": {"x": {"type": "string", "description": '(not: {"type": "null"})'}},
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
        "description": '(if: {"required": ["score"]}, then: {"required": ["tags"]})',
    }


def test_system_and_developer_messages_fold_into_system_and_turns_alternate() -> None:
    request = ChatRequest(
        messages=[
            {"role": "system", "content": "Be a strict judge."},
            {"role": "developer", "content": [{"type": "text", "text": "Use the rubric."}]},
            {"role": "user", "content": "First part."},
            {"role": "user", "content": [{"type": "text", "text": "Second part."}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "look", "arguments": '{"q": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "found"},
            {"role": "user", "content": "Now judge."},
        ]
    )
    body = body_of(request)
    assert body["system"] == "Be a strict judge.\n\nUse the rubric."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "look", "input": {"q": 1}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "found"},
                {"type": "text", "text": "Now judge."},
            ],
        },
    ]
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS  # the API requires one; the request gave none


def test_images_and_documents_become_base64_blocks() -> None:
    content = [
        {"type": "text", "text": "Does the chart answer the question?"},
        {"type": "image_url", "image_url": {"url": PNG}},
        {"type": "image_url", "image_url": {"url": "https://example.org/chart.png"}},
        {"type": "file", "file": {"file_data": PDF, "filename": "report.pdf"}},
        {"type": "file", "file": {"file_data": TEXT, "filename": "note.txt"}},
    ]
    (message,) = body_of(ChatRequest(messages=[{"role": "user", "content": content}]))["messages"]
    assert message["content"] == [
        {"type": "text", "text": "Does the chart answer the question?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG.split(",", 1)[1]}},
        {"type": "image", "source": {"type": "url", "url": "https://example.org/chart.png"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF.split(",", 1)[1]},
        },
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "a plain note"}},
    ]


@pytest.mark.parametrize(
    "part, refusal",
    [
        ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}, "takes no audio"),
        ({"type": "image_url", "image_url": {"url": "data:image/tiff;base64,AAAA"}}, "not image/tiff"),
        ({"type": "image_url", "image_url": {"url": "/tmp/chart.png"}}, "base64 data URI"),
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64,not base64!"}}, "not valid base64"),
    ],
)
def test_content_the_api_cannot_take_is_a_config_error(part: dict[str, Any], refusal: str) -> None:
    with pytest.raises(ConfigError, match=refusal):
        body_of(ChatRequest(messages=[{"role": "user", "content": [part]}]))


@pytest.mark.parametrize(
    "model, temperature, sent",
    [
        ("claude-haiku-4-5", 0, 0.0),
        ("claude-sonnet-4-6", 1.7, 1.0),  # Anthropic's range ends at 1
        ("claude-3-5-sonnet-20241022", 0.3, 0.3),
        ("claude-opus-4-7", 0, None),  # 4.7 and later refuse sampling settings
        ("claude-opus-5", 0, None),
        ("claude-sonnet-5-1-20270101", 0, None),
    ],
)
def test_temperature(model: str, temperature: float, sent: float | None) -> None:
    body = body_of(ChatRequest(messages=[{"role": "user", "content": "x"}], temperature=temperature), model)
    assert body.get("temperature") == sent


def test_reasoning_effort_turns_thinking_on_within_max_tokens() -> None:
    request = judge_request(response_mode="json", reasoning_effort="high")
    body = body_of(request)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert body["max_tokens"] == (request.max_tokens or 0) + 16384 and "temperature" not in body
    assert "thinking" not in body_of(judge_request(response_mode="json", reasoning_effort="none"))
    assert body_of(judge_request(response_mode="json"), thinks=True)["thinking"]["budget_tokens"] == 8192


def test_a_forced_tool_with_thinking_is_refused_before_sending() -> None:
    with pytest.raises(ConfigError, match="response_mode='json'"):
        body_of(judge_request(response_mode="tools", reasoning_effort="low"))


@pytest.mark.parametrize(
    "request_, refusal",
    [
        (ChatRequest(messages=[{"role": "user", "content": "x"}], logprobs=True), "no log-probabilities"),
        (ChatRequest(messages=[{"role": "user", "content": "x"}], response_format={"type": "json_object"}), "schema"),
        (ChatRequest(messages=[{"role": "user", "content": "x"}], reasoning_effort="huge"), "no thinking budget"),
        (ChatRequest(messages=[{"role": "narrator", "content": "x"}]), "role"),
    ],
)
def test_what_the_api_cannot_do_is_a_config_error(request_: ChatRequest, refusal: str) -> None:
    with pytest.raises(ConfigError, match=refusal):
        body_of(request_)


def test_chat_tool_choices() -> None:
    tools = [{"type": "function", "function": {"name": "pick", "parameters": {"type": "object"}}}]
    choices = {
        choice: body_of(ChatRequest(messages=[{"role": "user", "content": "x"}], tools=tools, tool_choice=choice))[
            "tool_choice"
        ]
        for choice in ("auto", "none", "required")
    }
    assert choices == {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}


def test_sent_settings_leave_the_content_out() -> None:
    body = body_of(judge_request(response_mode="json"))
    assert PROTOCOL.sent(body) == {"api": "anthropic", "max_tokens": body["max_tokens"], "temperature": 0.0}


# ------------------------------------------------------------------------------------------ replies
def message(*blocks: dict[str, Any], stop_reason: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5, **usage},
    }


def test_a_tool_use_reads_as_chats_tool_call() -> None:
    reply = message(
        {"type": "tool_use", "id": "toolu_1", "name": "select_choice", "input": {"reasons": "same", "choice": "C"}},
        stop_reason="tool_use",
    )
    result = PROTOCOL.parse(reply, model="claude-haiku-4-5")
    (call,) = result.tool_calls
    assert (call.name, call.arguments, call.id) == ("select_choice", '{"reasons": "same", "choice": "C"}', "toolu_1")
    assert (result.content, result.finish_reason, result.response_model) == (None, "tool_calls", reply["model"])
    assert (result.prompt_tokens, result.completion_tokens, result.model) == (10, 5, "claude-haiku-4-5")


def test_text_blocks_are_the_content_and_thinking_stays_apart() -> None:
    reply = message(
        {"type": "thinking", "thinking": "Let me weigh it.", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": '{"choice": '},
        {"type": "text", "text": '"A"}'},
    )
    result = PROTOCOL.parse(reply, model="m")
    assert (result.content, result.tool_calls, result.finish_reason) == ('{"choice": "A"}', (), "stop")


@pytest.mark.parametrize(
    "stop_reason, finish_reason",
    [
        ("max_tokens", "length"),
        ("stop_sequence", "stop"),
        ("model_context_window_exceeded", "length"),
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reasons_in_the_chat_vocabulary(stop_reason: str, finish_reason: str) -> None:
    reply = message({"type": "tool_use", "id": "t", "name": "select_choice", "input": {}}, stop_reason=stop_reason)
    assert PROTOCOL.parse(reply, model="m").finish_reason == finish_reason


def test_a_refusal_raises_reply_refused() -> None:
    reply = message({"type": "text", "text": "I can't help with that."}, stop_reason="refusal")
    reply["stop_details"] = {"type": "refusal", "category": "cyber", "explanation": None}
    with pytest.raises(ReplyRefused) as refused:
        PROTOCOL.parse(reply, model="m")
    assert "category cyber" in refused.value.reason and "I can't help with that." in refused.value.reason


@pytest.mark.parametrize("reply", [[], {"type": "message"}, {"content": "text"}, None])
def test_an_odd_shape_is_an_invalid_reply(reply: Any) -> None:
    with pytest.raises(InvalidReply):
        PROTOCOL.parse(reply, model="m")


def test_tokens_count_cache_reads_and_writes_as_prompt_and_thinking_as_reasoning() -> None:
    reply = message(
        {"type": "text", "text": "x"},
        cache_read_input_tokens=700,
        cache_creation_input_tokens=100,
    )
    reply["usage"]["output_tokens_details"] = {"thinking_tokens": 3}
    assert PROTOCOL.tokens(reply) == Tokens(prompt=810, completion=5, cached_prompt=700, reasoning=3)
    assert PROTOCOL.tokens({"usage": {"input_tokens": "x"}}) == Tokens() == PROTOCOL.tokens([])


# ------------------------------------------------------------------------------------------ over real HTTP
#: The key every request presents; a canary that must appear nowhere but in the requests' headers.
KEY = "sk-ant-CANARY-4f1d9c0123456789"
FAST = dict(timeout=30.0, backoff_base=0.001, backoff_max=0.01, max_retries=2)
needs_sdk = pytest.mark.skipif(importlib.util.find_spec("anthropic") is None, reason="the anthropic extra")


def engine_on(server: LoopbackLLM, api: str = "anthropic", **options: Any) -> LLMEngine:
    """An engine on ``server`` speaking ``api`` (the loopback's ``/v1`` URL: the anthropic client drops the suffix)."""
    return LLMEngine(api=api, base_url=server.base_url, api_key=KEY, **{"cache": False, **FAST, **options})


def judged(build: Callable[[LLMEngine], Any], api: str, reply: Any = auto_reply, **row: Any) -> tuple[Any, Any]:
    """The score ``build``'s judge gives ``row`` on ``api`` (against a fresh server answering ``reply``), and the
    requests it made."""
    with LoopbackLLM(default=reply, api_key=KEY) as server:
        score = build(engine_on(server, api))(**(row or ROW))
        return score, [r for r in server.requests if r.api is not None]


#: Result metadata that says how a verdict travelled (and the judge's own thinking, which chat's loopback sends none
#: of), not what it was.
TRAVEL = {"sent", "signature", "usage", "latency_s", "cached", "judge_reasoning"}


def verdict(score: Any) -> tuple[Any, dict[str, Any]]:
    """A score and what the judge read, without how it travelled."""
    return score.score, {k: v for k, v in score.metadata.items() if k not in TRAVEL}


JUDGES: dict[str, Callable[[LLMEngine], Any]] = {
    "classifier-tools": lambda engine: scorers.get("Factuality", engine=engine),
    "classifier-json": lambda engine: scorers.get("Factuality", engine=engine, response_mode="json"),
    "classifier-text": lambda engine: scorers.get("Factuality", engine=engine, response_mode="text"),
    "rating-json": lambda engine: RatingJudge(
        "Helpful",
        "Rate the answer {{output}} to {{input}}.",
        scale={"min": 1, "max": 10},
        response_mode="json",
        engine=engine,
    ),
    "rating-json-thinking": lambda engine: RatingJudge(
        "Helpful",
        "Rate the answer {{output}} to {{input}}.",
        scale={"min": 1, "max": 10},
        response_mode="json",
        reasoning_effort="low",
        engine=engine,
    ),
    "rubric-tools": lambda engine: RubricJudge(
        "Graded",
        "Grade the answer {{output}} to {{input}}.",
        criteria=[
            {"name": "accurate", "description": "Agrees with {{expected}}."},
            {"name": "brief", "description": "Short."},
        ],
        scale={"min": 1, "max": 5},
        engine=engine,
    ),
}


@needs_sdk
@pytest.mark.parametrize("judge", JUDGES)
def test_a_judge_scores_as_on_chat_for_the_same_verdict(judge: str) -> None:
    score, requests = judged(JUDGES[judge], "anthropic")
    on_chat, _ = judged(JUDGES[judge], "chat")
    assert score.score is not None and verdict(score) == verdict(on_chat)
    (request,) = requests
    assert (request.api, request.path, request.headers["authorization"]) == (
        "anthropic",
        "/v1/messages",
        f"Bearer {KEY}",
    )
    assert request.headers["anthropic-version"] and score.metadata["sent"]["api"] == "anthropic"
    assert ("thinking" in request.body) == judge.endswith("thinking")
    assert score.metadata.get("judge_reasoning") == (LOOPBACK_THINKING if judge.endswith("thinking") else None)


@needs_sdk
def test_usage_reads_cache_and_thinking_tokens() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [
            {"type": "thinking", "thinking": "weighing", "signature": "s"},
            {"type": "tool_use", "id": "toolu_1", "name": "select_choice", "input": {"reasons": "r", "choice": "C"}},
        ],
        "stop_reason": "tool_use",
        "usage": {
            "input_tokens": 12,
            "output_tokens": 40,
            "cache_read_input_tokens": 800,
            "cache_creation_input_tokens": 100,
            "output_tokens_details": {"thinking_tokens": 25},
        },
    }
    with LoopbackLLM(default=Reply.raw(body), api_key=KEY) as server:
        result = engine_on(server).complete_sync(ChatRequest(messages=[{"role": "user", "content": "Which?"}]))
    assert (result.prompt_tokens, result.cached_prompt_tokens) == (912, 800)
    assert (result.completion_tokens, result.reasoning_tokens, result.reasoning) == (40, 25, "weighing")
    assert result.tool_calls[0].arguments == '{"reasons": "r", "choice": "C"}' and result.content is None


@needs_sdk
@pytest.mark.parametrize(
    "fault", [Reply.rate_limited(retry_after=0), Reply.error(529, "Overloaded"), Reply.error(500), Reply.drop()]
)
def test_rate_limits_overload_and_dropped_connections_are_retried(fault: Reply) -> None:
    with LoopbackLLM(default=Reply.choice("C", reasons="same"), api_key=KEY) as server:
        server.script(fault, times=1)
        score = scorers.get("Factuality", engine=engine_on(server))(**ROW)
        statuses = [r.status for r in server.requests]
    assert score.score == 1.0 and statuses == [0 if fault.kind == "drop" else fault.status, 200]


@needs_sdk
def test_a_wrong_key_is_a_config_error_naming_anthropics_variable(caplog: pytest.LogCaptureFixture) -> None:
    with LoopbackLLM(api_key="sk-ant-the-right-one") as server:
        with pytest.raises(EndpointConfigError) as error:
            engine_on(server).complete_sync(ChatRequest(messages=[{"role": "user", "content": "x"}]))
        assert server.request_count == 1
    assert "HTTP 401" in str(error.value) and "ANTHROPIC_API_KEY" in str(error.value) and KEY not in str(error.value)


@needs_sdk
def test_a_refusal_is_judge_refused_and_never_asked_again(tmp_path: Path) -> None:
    with LoopbackLLM(default=Reply.text("I can't help with that.", finish_reason="refusal"), api_key=KEY) as server:
        engine = engine_on(server, cache=tmp_path / "cache.sqlite")
        for _ in range(2):
            with pytest.raises(JudgeRefused, match="refused"):
                engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "Judge this."}]))
        assert server.request_count == 2  # once per call: not re-asked, not retried, not cached


@needs_sdk
def test_a_tool_call_cut_at_max_tokens_is_asked_again() -> None:
    with LoopbackLLM(default=Reply.choice("C", reasons="same"), api_key=KEY) as server:
        server.script(Reply.tool_call('{"reasons": "the facts agr', finish_reason="length"), times=1)
        score = scorers.get("Factuality", engine=engine_on(server))(**ROW)
        assert score.score == 1.0 and server.request_count == 2


@needs_sdk
def test_the_key_appears_in_no_result_cache_log_or_error(tmp_path: Path, monkeypatch, caplog) -> None:
    """ANTHROPIC_API_KEY (a canary) reaches the server in its header and nowhere else: not in results, the cache
    file, any library's DEBUG log, or the messages of errors whose server text echoes it."""
    caplog.set_level(logging.DEBUG)
    cache = tmp_path / "cache.sqlite"
    with LoopbackLLM(default=Reply.choice("C", reasons="same"), api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url.removesuffix("/v1"))
        server.script(Reply.error(400, f"invalid x-api-key {KEY}"), match="rejected")
        server.script(Reply.error(500, f"upstream saw {KEY}"), match="down")
        judge = scorers.get("Factuality", engine=LLMEngine(api="anthropic", cache=cache, **FAST))
        rows = [ROW, {**ROW, "output": "rejected"}, {**ROW, "output": "down"}]
        records = [result.to_record(with_metadata=True) for result in scorers.evaluate(rows, [judge])]
        with pytest.raises(JudgeError) as error:
            judge.engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "down"}]))
        presented = {r.headers.get("authorization") for r in server.requests}
    assert presented == {f"Bearer {KEY}"} and records[0]["scores"]["Factuality"] == 1.0
    errors = [record["errors"]["Factuality"] for record in records[1:]]
    assert [(e["type"], "HTTP 400" in e["message"] or "HTTP 500" in e["message"]) for e in errors] == [
        ("RequestRejected", True),
        ("JudgeError", True),
    ]
    shown = [json.dumps(records), str(error.value), repr(error.value), repr(judge.engine)]
    shown += [record.getMessage() for record in caplog.records]
    shown += [path.read_bytes().decode("utf-8", "replace") for path in tmp_path.rglob("*") if path.is_file()]
    assert any(record.name.startswith(("anthropic", "httpx")) for record in caplog.records)  # their logs were read
    assert all(KEY not in text for text in shown)


@needs_sdk
def test_samples_keep_their_own_cache_entries_without_a_seed_on_the_wire(tmp_path: Path) -> None:
    """The Messages API has no ``seed``: a classifier's samples send the same body, and the cache tells them apart
    by the seed the request carries (a second run reads each sample's own verdict, not the last one stored)."""
    verdicts = iter("ABCDEF")
    with LoopbackLLM(default=lambda request: Reply.choice(next(verdicts), reasons="r"), api_key=KEY) as server:
        engine = engine_on(server, cache=tmp_path / "cache.sqlite")
        judge = scorers.get("Factuality", engine=engine, samples=3, temperature=0.7)
        first, again = judge(**ROW), judge(**ROW)
        assert server.request_count == 3 and "seed" not in server.requests[0].body
    assert sorted(first.metadata["choices"]) == ["A", "B", "C"]  # the samples went out together, in any order
    assert again.metadata["choices"] == first.metadata["choices"] and again.metadata["cached"]
