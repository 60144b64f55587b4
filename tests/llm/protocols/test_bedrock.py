"""The bedrock protocol: Converse bodies and replies read from shared vectors, then judges over real HTTP against the
loopback server, which checks every request's SigV4 signature (signed by botocore with the AWS chain's credentials,
sent by the engine's own aiohttp or httpx client): throttling retried, a refused signature a configuration error, a
guardrail a refusal, no secret anywhere, and the same scores as on chat."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

import scorers
from scorers.errors import ConfigError, JudgeRefused
from scorers.llm import LLMEngine
from scorers.llm.protocol import ChatRequest, InvalidReply
from scorers.llm.protocols import PROTOCOLS, ReplyRefused, Tokens
from scorers.llm.protocols.bedrock import JSON_TOOL, BedrockProtocol
from scorers.llm.transport import EndpointConfigError
from scorers.testing import LoopbackLLM, Reply, auto_reply
from scorers.testing.protocols import (
    LOOPBACK_AWS_ACCESS_KEY_ID,
    LOOPBACK_AWS_SECRET_ACCESS_KEY,
    BedrockConverseAPI,
)
from scorers.testing.protocols import (
    PROTOCOLS as SERVED,
)
from scorers.testing.protocols.bedrock import JSON_TOOL as LOOPBACK_JSON_TOOL

pytest.importorskip("botocore")

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
BEDROCK = BedrockProtocol()
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
PICK = {"type": "function", "function": {"name": "pick", "description": "Pick.", "parameters": SCHEMA}}
PNG = "iVBORw0KGgo="  # base64 of the PNG signature


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The loopback's test credentials in the environment, and nothing else of the AWS chain (no profile files, no
    instance metadata): what the protocol signs with."""
    values = {
        "AWS_ACCESS_KEY_ID": LOOPBACK_AWS_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": LOOPBACK_AWS_SECRET_ACCESS_KEY,
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def server(aws: dict[str, str]) -> Iterator[LoopbackLLM]:
    with LoopbackLLM() as running:
        yield running


def engine(server: LoopbackLLM, **options: Any) -> LLMEngine:
    return LLMEngine(
        **{"api": "bedrock", "base_url": server.url, "model": MODEL, "cache": False, "backoff_base": 0.01, **options}
    )


def ask(text: str = "Is it so?", **fields: Any) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **fields)


# ---------------------------------------------------------------------------------------------- bodies
BODIES = [
    pytest.param(
        ask(temperature=0, max_tokens=64),
        {
            "messages": [{"role": "user", "content": [{"text": "Is it so?"}]}],
            "inferenceConfig": {"maxTokens": 64, "temperature": 0},
        },
        id="text",
    ),
    pytest.param(
        ChatRequest(
            messages=[
                {"role": "system", "content": "Judge."},
                {"role": "developer", "content": [{"type": "text", "text": "Briefly."}]},
                {"role": "user", "content": "First."},
                {"role": "user", "content": "Second."},
            ]
        ),
        {
            "system": [{"text": "Judge."}, {"text": "Briefly."}],
            "messages": [{"role": "user", "content": [{"text": "First."}, {"text": "Second."}]}],
        },
        id="system-and-merged-turns",
    ),
    pytest.param(
        ChatRequest(
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Is this chart right?"},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                        {"type": "image_url", "image_url": {"url": "s3://bucket/charts/q3.JPG"}},
                        {
                            "type": "file",
                            "file": {
                                "file_data": "data:application/pdf;base64,JVBERi0=",
                                "filename": "Q3 report_v2.pdf",
                            },
                        },
                    ],
                }
            ]
        ),
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"text": "Is this chart right?"},
                        {"image": {"format": "png", "source": {"bytes": PNG}}},
                        {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/charts/q3.JPG"}}}},
                        {"document": {"format": "pdf", "name": "Q3 report v2", "source": {"bytes": "JVBERi0="}}},
                    ],
                }
            ]
        },
        id="attachments",
    ),
    pytest.param(
        ask(tools=[PICK], tool_choice={"type": "function", "function": {"name": "pick"}}),
        {
            "toolConfig": {
                "tools": [{"toolSpec": {"name": "pick", "description": "Pick.", "inputSchema": {"json": SCHEMA}}}],
                "toolChoice": {"tool": {"name": "pick"}},
            }
        },
        id="forced-tool",
    ),
    pytest.param(ask(tools=[PICK], tool_choice="required"), {"toolConfig": {"toolChoice": {"any": {}}}}, id="required"),
    pytest.param(ask(tools=[PICK], tool_choice="auto"), {"toolConfig": {"toolChoice": {"auto": {}}}}, id="auto"),
    pytest.param(ask(tools=[PICK], tool_choice="none"), {"toolConfig": None}, id="none"),
    pytest.param(
        ask(
            response_format={"type": "json_schema", "json_schema": {"name": "grade", "schema": SCHEMA, "strict": True}}
        ),
        {
            "toolConfig": {
                "tools": [{"toolSpec": {"inputSchema": {"json": SCHEMA}}}],
                "toolChoice": {"tool": {"name": JSON_TOOL}},
            }
        },
        id="json-schema",
    ),
    pytest.param(
        ask(response_format={"type": "json_object"}),
        {"toolConfig": {"tools": [{"toolSpec": {"name": JSON_TOOL, "inputSchema": {"json": {"type": "object"}}}}]}},
        id="json-object",
    ),
    pytest.param(
        ask(response_format={"type": "text"}, seed=7), {"toolConfig": None, "seed": None}, id="text-format-no-seed"
    ),
    pytest.param(
        ChatRequest(
            messages=[
                {"role": "user", "content": "Rate it."},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "t1", "function": {"name": "pick", "arguments": '{"score": 2}'}}],
                },
                {"role": "tool", "tool_call_id": "t1", "content": "Too low."},
            ]
        ),
        {
            "messages": [
                {"role": "user", "content": [{"text": "Rate it."}]},
                {
                    "role": "assistant",
                    "content": [{"toolUse": {"toolUseId": "t1", "name": "pick", "input": {"score": 2}}}],
                },
                {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "Too low."}]}}]},
            ]
        },
        id="tool-round-trip",
    ),
]


def subset(expected: Any, got: Any) -> bool:
    """Whether ``got`` holds ``expected`` (dicts: their keys, ``None`` for absent; lists: item by item)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(
            (key not in got) if value is None else subset(value, got.get(key)) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(subset, expected, got))
    return expected == got


@pytest.mark.parametrize("request_, expected", BODIES)
def test_bodies(request_: ChatRequest, expected: dict[str, Any]) -> None:
    body = BEDROCK.body(request_, MODEL, thinks=False)
    assert body["model"] == MODEL and subset(expected, body), body
    assert "model" not in BEDROCK.sent(body) and BEDROCK.sent(body)["api"] == "bedrock"


def test_a_reasoning_model_is_sent_no_temperature() -> None:
    assert BEDROCK.body(ask(temperature=0, max_tokens=9), MODEL, thinks=True)["inferenceConfig"] == {"maxTokens": 9}


@pytest.mark.parametrize(
    "request_, problem",
    [
        (ask(logprobs=True), "no log-probabilities"),
        (ask(reasoning_effort="low"), "additionalModelRequestFields"),
        (ask(tools=[PICK], response_format={"type": "json_object"}), "cannot go with other tools"),
        (ask(tools=[{"type": "web_search"}]), "function tools only"),
        (
            ChatRequest(
                messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]
            ),
            "Converse fetches no URL",
        ),
        (
            ChatRequest(
                messages=[
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "data:image/bmp;base64,Qk0="}}],
                    }
                ]
            ),
            "takes no image/bmp image",
        ),
        (
            ChatRequest(
                messages=[
                    {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}
                ]
            ),
            "'input_audio' content part",
        ),
    ],
)
def test_what_converse_cannot_take_is_a_config_error(request_: ChatRequest, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        BEDROCK.body(request_, MODEL, thinks=False)


def test_the_model_id_is_percent_encoded_in_the_path() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0"
    assert BEDROCK.path(MODEL) == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
    assert BEDROCK.path(arn).startswith(
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus."
    )


# ---------------------------------------------------------------------------------------------- replies
def converse(*content: dict[str, Any], stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": list(content)}},
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15, **usage},
    }


TOOL_USE = {"toolUse": {"toolUseId": "tooluse_1", "name": "select_choice", "input": {"reasons": "r", "choice": "Y"}}}


@pytest.mark.parametrize(
    "data, content, calls, finish",
    [
        (converse({"text": "Y"}), "Y", [], "stop"),
        (converse({"text": "cut"}, stop="max_tokens"), "cut", [], "length"),
        (converse({"text": "a"}, {"text": "b"}, stop="stop_sequence"), "ab", [], "stop"),
        (
            converse(TOOL_USE, stop="tool_use"),
            None,
            [("select_choice", '{"reasons": "r", "choice": "Y"}', "tooluse_1")],
            "tool_calls",
        ),
        (
            converse({"toolUse": {"toolUseId": "t", "name": JSON_TOOL, "input": {"score": 4}}}, stop="tool_use"),
            '{"score": 4}',
            [],
            "stop",
        ),
    ],
)
def test_replies(data: dict, content: str | None, calls: list, finish: str) -> None:
    result = BEDROCK.parse(data, model=MODEL)
    assert (result.content, [(c.name, c.arguments, c.id) for c in result.tool_calls]) == (content, calls)
    assert JSON_TOOL == LOOPBACK_JSON_TOOL  # the loopback reads this tool as a JSON ask
    assert (result.finish_reason, result.model, result.prompt_tokens, result.completion_tokens) == (
        finish,
        MODEL,
        10,
        5,
    )


def test_reasoning_is_kept_apart_from_the_verdict() -> None:
    thinking = {
        "reasoningContent": {"reasoningText": {"text": "The answer says 4; so does the reference.", "signature": "s"}}
    }
    result = BEDROCK.parse(
        converse(thinking, {"reasoningContent": {"redactedContent": "eA=="}}, {"text": "Y"}), model=MODEL
    )
    assert (result.content, result.reasoning) == ("Y", "The answer says 4; so does the reference.")


@pytest.mark.parametrize("stop", ["guardrail_intervened", "content_filtered"])
def test_a_withheld_reply_is_a_refusal(stop: str) -> None:
    with pytest.raises(ReplyRefused, match=stop):
        BEDROCK.parse(converse({"text": "Sorry, the model cannot answer this question."}, stop=stop), model=MODEL)


@pytest.mark.parametrize(
    "data", [converse(stop="malformed_tool_use"), converse(stop="malformed_model_output"), {"output": {}}, [], None]
)
def test_an_unusable_reply_is_asked_again(data: Any) -> None:
    with pytest.raises(InvalidReply):
        BEDROCK.parse(data, model=MODEL)


def test_tokens_count_the_prompt_cache() -> None:
    data = converse({"text": "Y"}, cacheReadInputTokens=1900, cacheWriteInputTokens=100)
    assert BEDROCK.tokens(data) == Tokens(prompt=2010, completion=5, cached_prompt=1900, reasoning=0)
    assert BEDROCK.tokens({"usage": "odd"}) == BEDROCK.tokens(None) == Tokens()


def test_capabilities_and_registration() -> None:
    assert PROTOCOLS.get("bedrock").name == "bedrock"
    capabilities = BEDROCK.capabilities
    assert not (capabilities.logprobs or capabilities.prompt_logprobs or capabilities.batch)
    assert capabilities.forced_tool and capabilities.json_schema and "image/png" in capabilities.attachments
    assert BEDROCK.endpoint.key_env == () and BEDROCK.endpoint.url_env[0] == "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"


# ---------------------------------------------------------------------------------------------- endpoint
def test_the_endpoint_is_regional_unless_set(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from scorers.llm.config import resolve

    assert resolve(api="bedrock").base_url == "https://bedrock-runtime.us-east-1.amazonaws.com"
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://proxy:8080")
    assert resolve(api="bedrock").base_url == "http://proxy:8080"
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://bedrock-proxy:8080")
    assert resolve(api="bedrock").base_url == "http://bedrock-proxy:8080"
    assert resolve(api="bedrock", base_url="http://mine").base_url == "http://mine"
    assert resolve(api="bedrock").api_key is None  # no key is asked for: the AWS chain signs


def test_no_region_is_a_config_error(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from scorers.llm.config import resolve

    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(ConfigError, match="no AWS region"):
        resolve(api="bedrock")


def test_no_credentials_is_a_config_error_before_any_request(
    server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ConfigError, match="no AWS credentials"):
        engine(server).complete_sync(ask())
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK-a-bedrock-api-key")
    with pytest.raises(ConfigError, match="AWS_BEARER_TOKEN_BEDROCK, is not one"):
        engine(server, transport="httpx").complete_sync(ask())
    assert server.request_count == 0


# ---------------------------------------------------------------------------------------------- over HTTP
@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_signed_requests_pass_the_servers_check_on_either_transport(server: LoopbackLLM, transport: str) -> None:
    """The model id's ``:`` and an ARN's ``/`` are sent percent-encoded exactly as signed (aiohttp would decode them
    unless told not to, and the signature would no longer match)."""
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0"
    server.default = Reply.text("Y")
    for model in (MODEL, arn):
        result = engine(server, transport=transport, model=model).complete_sync(ask())
        assert (result.content, result.attempts) == ("Y", 1)
    assert [(r.model, r.status) for r in server.requests] == [(MODEL, 200), (arn, 200)]
    assert "model" not in server.requests[0].body  # it is in the path


def test_many_first_requests_share_one_client(server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client is made without awaiting: 16 requests in flight from the start make one (and one HTTP session,
    closed with the loop's clients), not 16 whose sessions are never closed."""
    from scorers.llm import aclose

    made: list[Any] = []
    make = BedrockProtocol.client

    async def counted(self: BedrockProtocol, settings: Any) -> Any:
        made.append(await make(self, settings))
        return made[-1]

    monkeypatch.setattr(BedrockProtocol, "client", counted)

    async def burst() -> list[str | None]:
        judge = engine(server)
        try:
            return [r.content for r in await asyncio.gather(*(judge.complete(ask(str(i))) for i in range(16)))]
        finally:
            await aclose()

    server.default = Reply.text("Y")
    assert asyncio.run(burst()) == ["Y"] * 16
    assert len(made) == 1


def test_profile_credentials_and_session_tokens(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The rest of the AWS chain: a profile's temporary credentials, the session token sent and signed."""
    Path(aws["AWS_SHARED_CREDENTIALS_FILE"]).write_text(
        f"[judge]\naws_access_key_id = {LOOPBACK_AWS_ACCESS_KEY_ID}\n"
        f"aws_secret_access_key = {LOOPBACK_AWS_SECRET_ACCESS_KEY}\naws_session_token = FwoG-profile-token\n"
    )
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_PROFILE", "judge")
    with LoopbackLLM(default=Reply.text("Y")) as server:
        assert engine(server).complete_sync(ask()).content == "Y"
        assert server.requests[0].headers["x-amz-security-token"] == "FwoG-profile-token"
        monkeypatch.setenv("AWS_PROFILE", "absent")
        with pytest.raises(ConfigError, match="profile"):
            engine(server, transport="httpx").complete_sync(ask())


def test_credentials_changed_in_the_environment_sign_the_next_request(
    server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = Reply.text("Y")
    assert engine(server).complete_sync(ask()).content == "Y"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "rotated-but-wrong")
    with pytest.raises(EndpointConfigError, match="HTTP 403"):
        engine(server).complete_sync(ask())
    assert [r.status for r in server.requests] == [200, 403]


def test_throttling_is_retried(server: LoopbackLLM) -> None:
    server.script(Reply.rate_limited(retry_after=0), times=2)
    server.default = Reply.text("Y")
    result = engine(server).complete_sync(ask())
    assert (result.content, result.attempts) == ("Y", 3)
    assert [r.status for r in server.requests] == [429, 429, 200]


def test_a_refused_signature_is_a_configuration_error(aws: dict[str, str]) -> None:
    refusing = BedrockConverseAPI(credentials={LOOPBACK_AWS_ACCESS_KEY_ID: "another-secret"})
    with LoopbackLLM(protocols=(refusing,)) as server:
        with pytest.raises(EndpointConfigError, match=r"HTTP 403.*AWS_ACCESS_KEY_ID") as caught:
            engine(server).complete_sync(ask())
        assert caught.value.attempts == 1 and [r.status for r in server.requests] == [403]
    assert LOOPBACK_AWS_SECRET_ACCESS_KEY not in str(caught.value)


def test_a_guardrail_is_a_refusal_never_asked_again(server: LoopbackLLM) -> None:
    server.default = Reply.text("Sorry, the model cannot answer this question.", finish_reason="guardrail_intervened")
    with pytest.raises(JudgeRefused, match="guardrail"):
        engine(server, max_reasks=3).complete_sync(ask())
    assert server.request_count == 1


def test_a_validation_exception_is_rejected_at_once(server: LoopbackLLM) -> None:
    server.default = Reply.error(400, "The provided model identifier is invalid.")
    with pytest.raises(scorers.errors.JudgeError, match="model identifier is invalid") as caught:
        engine(server).complete_sync(ask())
    assert caught.value.attempts == 1


def test_no_aws_secret_in_results_cache_logs_or_errors(
    aws: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    canary, token = "aws/CANARY/secret+0123456789", "FwoG-CANARY-session-token"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", canary)
    monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    signing = BedrockConverseAPI(credentials={LOOPBACK_AWS_ACCESS_KEY_ID: canary})
    cache = tmp_path / "cache.sqlite"
    shown: list[str] = []
    caplog.set_level(logging.DEBUG)
    with LoopbackLLM(default=Reply.choice("C", reasons="same"), protocols=(signing,)) as server:
        judge = scorers.get("Factuality", engine=engine(server, cache=str(cache)))
        shown.append(json.dumps(judge(input="2+2?", output="4", expected="4").to_dict(), default=str))
        server.script(Reply.error(400, f"rejected: key {canary} token {token}"))
        for failing in (Reply.error(400, f"rejected: {canary} {token}"), Reply.error(500, f"down: {canary}")):
            server.rules.clear()
            server.default = failing
            with pytest.raises(scorers.errors.JudgeError) as caught:
                engine(server, max_retries=1).complete_sync(ask(f"{len(shown)}"))
            shown.append(str(caught.value))
    everything = "\n".join(shown) + caplog.text + cache.read_bytes().decode("latin-1")
    assert canary not in everything and token not in everything
    assert "rejected: " in everything and "down: " in everything


# ---------------------------------------------------------------------------------------------- judges
def judged(api: str, name: str, row: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> scorers.Score:
    """``name`` judged on ``api`` against a fresh loopback server answering with :func:`auto_reply`."""
    with LoopbackLLM(default=auto_reply, protocols=SERVED) as server:
        if api == "chat":
            monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
            options: dict[str, Any] = {"base_url": server.base_url, "model": "gpt-4o-mini"}
        else:
            options = {"base_url": server.url, "model": MODEL}
        score = scorers.get(name, engine=LLMEngine(api=api, cache=False, **options))(**row)
        assert {r.api for r in server.requests} == {api}
    return score


@pytest.mark.parametrize(
    "name, row",
    [
        ("Factuality", {"input": "What is 2+2?", "output": "4", "expected": "2+2 is 4"}),
        ("SummaryRubric", {"input": "The cat sat on the mat all day long.", "output": "A cat sat on a mat."}),
    ],
)
def test_a_classifier_and_a_rubric_score_as_on_chat(
    aws: dict[str, str], monkeypatch: pytest.MonkeyPatch, name: str, row: dict[str, str]
) -> None:
    on_bedrock, on_chat = judged("bedrock", name, row, monkeypatch), judged("chat", name, row, monkeypatch)
    assert on_bedrock.score is not None and on_bedrock.score == on_chat.score
    moved = {"sent", "model", "latency_s", "usage", "signature"}
    assert {k: v for k, v in on_bedrock.metadata.items() if k not in moved} == {
        k: v for k, v in on_chat.metadata.items() if k not in moved
    }
    assert on_bedrock.metadata["sent"]["api"] == "bedrock"


def test_a_json_mode_judge_scores_as_on_chat(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``json`` mode goes as the forced :data:`JSON_TOOL`; its input is the JSON chat would have read."""
    from scorers.judges import RubricJudge

    def rubric(api: str) -> float | None:
        with LoopbackLLM(default=Reply.json({"accurate": 4, "brief": 2}), protocols=SERVED) as server:
            url, model = (server.base_url, "gpt-4o-mini") if api == "chat" else (server.url, MODEL)
            judge = RubricJudge(
                "Grades",
                "Answer: {{output}}",
                criteria=[{"name": "accurate", "description": "Right."}, {"name": "brief", "description": "Short."}],
                scale={"min": 1, "max": 5},
                response_mode="json",
                engine=LLMEngine(api=api, base_url=url, model=model, cache=False, api_key="sk-loopback"),
            )
            return judge(output="Paris.").score

    assert rubric("bedrock") == rubric("chat") == pytest.approx((3 / 4 + 1 / 4) / 2)


def test_an_image_judge_sends_its_image_as_an_image_block(server: LoopbackLLM) -> None:
    from scorers import Attachment
    from scorers.attachments import TINY_PNG

    server.default = Reply.choice("A", reasons="One transparent pixel, as stated.")
    judge = scorers.get("CaptionFaithful", engine=engine(server))
    score = judge(input=Attachment.from_base64(TINY_PNG), output="A single transparent pixel.")
    (request,) = server.requests
    blocks = request.body["messages"][0]["content"]
    assert score.score == 1.0 and [next(iter(block)) for block in blocks] == ["text", "image", "text"]
    assert blocks[1]["image"] == {"format": "png", "source": {"bytes": TINY_PNG}}
    too_big = Attachment.from_base64(TINY_PNG[:-4] + "A" * 5_100_000)
    with pytest.raises(scorers.errors.ScorerError, match="limit of 3.75 MB"):
        judge(input=too_big, output="A pixel.")
    assert server.request_count == 1


def test_an_engine_worker_signs_with_the_drivers_credentials(
    server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an engine's worker the driver's AWS variables arrive as a scoped view (``scoped``), not in ``os.environ``:
    the client reads its key pair, region and secrets to redact from that view."""
    from scorers.llm.config import scoped

    driver = {name: os.environ[name] for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    for name in driver:
        monkeypatch.delenv(name)
    server.default = Reply.text("Y")
    with scoped({}, driver):
        result = engine(server).complete_sync(ask())
    assert (result.content, [r.status for r in server.requests]) == ("Y", [200])
