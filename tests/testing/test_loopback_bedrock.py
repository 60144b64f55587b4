"""The loopback's Bedrock Converse API, driven by botocore's own ``bedrock-runtime`` client: every reply shape it
parses, Bedrock's errors as ``ClientError`` codes, and the SigV4 signature checked (a wrong secret, an unknown key,
an unsigned, tampered or stale request are refused as Bedrock refuses them)."""

from __future__ import annotations

import datetime
import json
import urllib.request
from typing import Any, Iterator

import pytest

from scorers.testing import LoopbackLLM, Reply, auto_reply
from scorers.testing.protocols import (
    LOOPBACK_AWS_ACCESS_KEY_ID,
    LOOPBACK_AWS_SECRET_ACCESS_KEY,
    BedrockConverseAPI,
)
from scorers.testing.protocols.bedrock import JSON_TOOL

from .protocols.wire import post

botocore = pytest.importorskip("botocore")
from botocore.auth import SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from botocore.session import get_session  # noqa: E402

SESSION = get_session()  # one session: its clients share the service model it loaded once

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
ASK = [{"role": "user", "content": [{"text": "Is it so?"}]}]
SCHEMA = {"type": "object", "properties": {"choice": {"type": "string", "enum": ["Y", "N"]}}, "required": ["choice"]}
TOOLS = {"tools": [{"toolSpec": {"name": "pick", "description": "Pick one.", "inputSchema": {"json": SCHEMA}}}]}


@pytest.fixture(scope="module")
def running() -> Iterator[LoopbackLLM]:
    with LoopbackLLM() as server:
        yield server


@pytest.fixture
def server(running: LoopbackLLM) -> LoopbackLLM:
    running.reset()
    running.default = Reply.text("OK")
    return running


def bedrock(server: LoopbackLLM, secret: str = LOOPBACK_AWS_SECRET_ACCESS_KEY, **options: Any) -> Any:
    """botocore's Bedrock runtime client pointed at ``server``, its retries off."""
    return SESSION.create_client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=server.url,
        aws_access_key_id=options.pop("access_key", LOOPBACK_AWS_ACCESS_KEY_ID),
        aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1}),
        **options,
    )


def converse(server: LoopbackLLM, **request: Any) -> Any:
    return bedrock(server).converse(**{"modelId": MODEL, "messages": ASK, **request})


def refusal(call: Any) -> tuple[int, str, str]:
    """``(HTTP status, error code, message)`` of the ``ClientError`` ``call()`` raises."""
    with pytest.raises(ClientError) as caught:
        call()
    error = caught.value.response
    return error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Code"], error["Error"]["Message"]


# ---------------------------------------------------------------------------------------------- replies
@pytest.mark.parametrize(
    "reply, content, stop",
    [
        (Reply.text("plain words"), [{"text": "plain words"}], "end_turn"),
        (Reply.json({"score": 4}), [{"text": '{"score": 4}'}], "end_turn"),
        (Reply.text("cut", finish_reason="length"), [{"text": "cut"}], "max_tokens"),
        (Reply.text("Sorry.", finish_reason="guardrail_intervened"), [{"text": "Sorry."}], "guardrail_intervened"),
        (Reply.text("", finish_reason="content_filter"), [{"text": ""}], "content_filtered"),
        (Reply.tool_call('{"choice": "Y', name="pick"), [], "malformed_tool_use"),
        (Reply.tool_call('{"choice": "Y', name="pick", finish_reason="length"), [], "max_tokens"),
    ],
)
def test_every_reply_shape_parses_with_botocore(server: LoopbackLLM, reply: Reply, content: list, stop: str) -> None:
    server.default = reply
    answer = converse(server)
    assert answer["output"]["message"] == {"role": "assistant", "content": content}
    assert answer["stopReason"] == stop


def test_a_forced_tool_call_arrives_as_an_object(server: LoopbackLLM) -> None:
    server.default = Reply.choice("Y", reasons="same facts", name="pick")
    answer = converse(server, toolConfig={**TOOLS, "toolChoice": {"tool": {"name": "pick"}}})
    (block,) = answer["output"]["message"]["content"]
    assert block["toolUse"]["name"] == "pick" and block["toolUse"]["input"] == {"reasons": "same facts", "choice": "Y"}
    assert block["toolUse"]["toolUseId"].startswith("tooluse_") and answer["stopReason"] == "tool_use"


def test_usage_is_word_counts_unless_scripted(server: LoopbackLLM) -> None:
    server.default = Reply.text("one two three")
    usage = converse(server, system=[{"text": "Be brief."}])["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]) == (5, 3, 8)
    assert usage["cacheReadInputTokens"] == 0
    server.default = Reply.text("x", usage=(100, 7))
    assert converse(server)["usage"]["inputTokens"] == 100


def test_a_raw_reply_carries_reasoning_and_cached_tokens(server: LoopbackLLM) -> None:
    """Shapes no builder makes (reasoning blocks, prompt-cache counts) are scripted as raw Converse bodies."""
    server.default = Reply.raw(
        {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"reasoningContent": {"reasoningText": {"text": "Let me think.", "signature": "c2ln"}}},
                        {"text": "Y"},
                    ],
                }
            },
            "stopReason": "end_turn",
            "usage": {"inputTokens": 3, "outputTokens": 9, "totalTokens": 112, "cacheReadInputTokens": 100},
            "metrics": {"latencyMs": 5},
        }
    )
    answer = converse(server)
    assert answer["output"]["message"]["content"][0]["reasoningContent"]["reasoningText"]["text"] == "Let me think."
    assert answer["usage"]["cacheReadInputTokens"] == 100


def test_auto_reply_answers_the_tool_a_request_forces(server: LoopbackLLM) -> None:
    server.default = auto_reply
    second = {"toolSpec": {"name": "other", "inputSchema": {"json": {"type": "object"}}}}
    for choice, name in (({"tool": {"name": "pick"}}, "pick"), ({"any": {}}, "other"), ({"auto": {}}, "other")):
        config = {"tools": [second, *TOOLS["tools"]] if name == "other" else TOOLS["tools"], "toolChoice": choice}
        (block,) = converse(server, toolConfig=config)["output"]["message"]["content"]
        assert block["toolUse"]["name"] == name
    assert block["toolUse"]["input"] == {}
    assert server.requests[0].ask.forced_tool == ("pick", SCHEMA)
    server.default = Reply.text("x")
    output = {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": json.dumps(SCHEMA)}}}}
    converse(server, outputConfig=output)
    assert (server.requests[-1].ask.json, server.requests[-1].ask.schema) == (True, SCHEMA)


def test_a_forced_json_tool_asks_for_json_and_a_json_reply_is_its_input(server: LoopbackLLM) -> None:
    """The tool scorers sends a JSON response format as: a JSON reply answers it as on chat."""
    config = {"tools": [{"toolSpec": {"name": JSON_TOOL, "inputSchema": {"json": SCHEMA}}}]}
    config["toolChoice"] = {"tool": {"name": JSON_TOOL}}
    server.default = Reply.json({"choice": "N"})
    answer = converse(server, toolConfig=config)
    assert answer["output"]["message"]["content"][0]["toolUse"]["input"] == {"choice": "N"}
    assert (server.requests[-1].ask.json, server.requests[-1].ask.schema, server.requests[-1].ask.forced_tool) == (
        True,
        SCHEMA,
        None,
    )
    server.default = auto_reply
    (block,) = converse(server, toolConfig=config)["output"]["message"]["content"]
    assert block["toolUse"]["input"]["choice"] in ("Y", "N")
    server.default = Reply.text("not JSON")
    assert converse(server, toolConfig=config)["stopReason"] == "malformed_tool_use"
    config["tools"][0]["toolSpec"]["inputSchema"]["json"] = {"type": "object"}  # a json_object format: no schema
    converse(server, toolConfig=config)
    assert (server.requests[-1].ask.json, server.requests[-1].ask.schema) == (True, None)


def test_the_request_is_recorded_in_the_common_form(server: LoopbackLLM) -> None:
    image = {"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}
    messages = [{"role": "user", "content": [{"text": "Is this chart right?"}, image]}]
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0"
    converse(server, modelId=arn, messages=messages, system=[{"text": "You grade charts."}])
    (request,) = server.requests
    assert (request.api, request.model, request.last_user_message) == ("bedrock", arn, "Is this chart right?\n")
    assert request.messages[0] == {"role": "system", "content": [{"text": "You grade charts."}]}
    assert request.body["messages"][0]["content"][1]["image"]["source"]["bytes"] == "iVBORw=="  # sent as base64


def test_rules_match_and_the_server_key_is_the_access_key(server: LoopbackLLM) -> None:
    server.script(Reply.text("rule"), match="so?")
    assert converse(server)["output"]["message"]["content"] == [{"text": "rule"}]
    server.api_key = "AKIAOTHERKEY00000000"
    assert refusal(lambda: converse(server))[:2] == (401, "UnrecognizedClientException")
    server.api_key = LOOPBACK_AWS_ACCESS_KEY_ID
    assert converse(server)["stopReason"] == "end_turn"
    server.api_key = None


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "reply, status, code",
    [
        (Reply.rate_limited(retry_after=2), 429, "ThrottlingException"),
        (Reply.error(400, "bad"), 400, "ValidationException"),
        (Reply.error(403, "not allowed"), 403, "AccessDeniedException"),
        (Reply.error(404, "no such model"), 404, "ResourceNotFoundException"),
        (Reply.error(500), 500, "InternalServerException"),
        (Reply.error(503, "busy"), 503, "ServiceUnavailableException"),
        (Reply.error(424, "model failed"), 424, "ModelErrorException"),
        (Reply.error(429, "warming up", error_type="ModelNotReadyException"), 429, "ModelNotReadyException"),
    ],
)
def test_errors_are_botocores_modelled_exceptions(server: LoopbackLLM, reply: Reply, status: int, code: str) -> None:
    server.default = reply
    client = bedrock(server)
    with pytest.raises(getattr(client.exceptions, code)) as caught:
        client.converse(modelId=MODEL, messages=ASK)
    error = caught.value.response
    assert (error["ResponseMetadata"]["HTTPStatusCode"], error["Error"]["Message"]) == (status, reply.error_message)
    if reply.retry_after is not None:
        assert error["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "2"


@pytest.mark.parametrize(
    "messages, problem",
    [
        ([{"role": "assistant", "content": [{"text": "x"}]}], "must start with a user message"),
        ([ASK[0], ASK[0]], "must alternate between user and assistant"),
        ([{"role": "user", "content": [{"image": {"format": "bmp", "source": {"bytes": b"x"}}}]}], "format"),
    ],
)
def test_a_malformed_conversation_is_a_validation_exception(server: LoopbackLLM, messages: list, problem: str) -> None:
    status, code, message = refusal(lambda: converse(server, messages=messages))
    assert (status, code) == (400, "ValidationException") and problem in message


def test_a_tool_choice_naming_no_tool_is_a_validation_exception(server: LoopbackLLM) -> None:
    config = {**TOOLS, "toolChoice": {"tool": {"name": "absent"}}}
    assert refusal(lambda: converse(server, toolConfig=config))[:2] == (400, "ValidationException")


# ---------------------------------------------------------------------------------------------- signatures
def test_a_wrong_secret_is_refused(server: LoopbackLLM) -> None:
    call = lambda: bedrock(server, secret="not-the-secret").converse(modelId=MODEL, messages=ASK)  # noqa: E731
    status, code, message = refusal(call)
    assert (status, code) == (403, "InvalidSignatureException")
    assert message.startswith("The request signature we calculated does not match the signature you provided.")
    assert [r.status for r in server.requests] == [403]


def test_an_unknown_access_key_is_refused(server: LoopbackLLM) -> None:
    call = lambda: bedrock(server, access_key="AKIAUNKNOWN000000000").converse(modelId=MODEL, messages=ASK)  # noqa: E731
    assert refusal(call) == (
        403,
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
    )


def test_temporary_credentials_sign_with_their_session_token(server: LoopbackLLM) -> None:
    client = bedrock(server, aws_session_token="FwoGZXIvYXdzEXAMPLETOKEN")
    assert client.converse(modelId=MODEL, messages=ASK)["stopReason"] == "end_turn"
    assert server.requests[-1].headers["x-amz-security-token"] == "FwoGZXIvYXdzEXAMPLETOKEN"


def test_other_credentials_can_be_given_to_a_server() -> None:
    protocol = BedrockConverseAPI(credentials={"AKIAMINE000000000000": "my-secret"})
    with LoopbackLLM(protocols=(protocol,)) as server:
        assert bedrock(server, "my-secret", access_key="AKIAMINE000000000000").converse(modelId=MODEL, messages=ASK)
        assert refusal(lambda: converse(server))[1] == "UnrecognizedClientException"


def signed(server: LoopbackLLM, body: bytes, *, when: datetime.datetime | None = None, **changes: Any) -> dict:
    """The headers of a request of ``body`` signed by the loopback's credentials (at ``when``), then ``changes``."""
    request = AWSRequest(
        method="POST", url=f"{server.url}/model/m/converse", data=body, headers={"Content-Type": "application/json"}
    )
    signer = SigV4Auth(Credentials(LOOPBACK_AWS_ACCESS_KEY_ID, LOOPBACK_AWS_SECRET_ACCESS_KEY), "bedrock", "us-west-2")
    if when is None:
        signer.add_auth(request)
    else:  # add_auth signs at the current time: sign at another by its steps
        request.context["timestamp"] = when.strftime("%Y%m%dT%H%M%SZ")
        signer._modify_request_before_signing(request)
        signature = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        signer._inject_signature_to_request(request, signature)
    return {**dict(request.headers.items()), **changes}


def send(server: LoopbackLLM, body: bytes, headers: dict) -> tuple[int, str, str]:
    answer = post(f"{server.url}/model/m/converse", json.loads(body), headers)
    return answer.status, str(answer.headers.get("x-amzn-ErrorType", "")).split(":")[0], answer.json().get("message")


def test_any_region_is_accepted_and_the_signature_covers_the_body(server: LoopbackLLM) -> None:
    body = json.dumps({"messages": ASK}).encode()
    assert send(server, body, signed(server, body))[0] == 200
    tampered = json.dumps({"messages": [{"role": "user", "content": [{"text": "Is it not?"}]}]}).encode()
    assert send(server, tampered, signed(server, body))[:2] == (403, "InvalidSignatureException")


def test_an_unsigned_or_stale_request_is_refused(server: LoopbackLLM) -> None:
    body = json.dumps({"messages": ASK}).encode()
    assert send(server, body, {}) == (403, "MissingAuthenticationTokenException", "Missing Authentication Token")
    stale = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20)
    status, code, message = send(server, body, signed(server, body, when=stale))
    assert (status, code) == (403, "InvalidSignatureException") and message.startswith("Signature expired: ")
    ahead = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=20)
    assert send(server, body, signed(server, body, when=ahead))[2].startswith("Signature not yet current: ")
    garbled = {**signed(server, body), "Authorization": "AWS4-HMAC-SHA256 Credential=x"}
    assert send(server, body, garbled)[:2] == (403, "IncompleteSignatureException")


def test_a_signature_for_another_service_is_refused(server: LoopbackLLM) -> None:
    body = json.dumps({"messages": ASK}).encode()
    request = AWSRequest(method="POST", url=f"{server.url}/model/m/converse", data=body)
    SigV4Auth(Credentials(LOOPBACK_AWS_ACCESS_KEY_ID, LOOPBACK_AWS_SECRET_ACCESS_KEY), "s3", "us-east-1").add_auth(
        request
    )
    assert (
        send(server, body, dict(request.headers.items()))[2]
        == "Credential should be scoped to correct service: 'bedrock'."
    )


def test_a_plain_http_client_may_sign_with_botocore(server: LoopbackLLM) -> None:
    """What a non-botocore sender does: sign with botocore's signer, send the same bytes and headers itself."""
    body = json.dumps({"messages": ASK}).encode()
    url = f"{server.url}/model/{urllib.request.quote(MODEL, safe='')}/converse"
    request = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
    SigV4Auth(Credentials(LOOPBACK_AWS_ACCESS_KEY_ID, LOOPBACK_AWS_SECRET_ACCESS_KEY), "bedrock", "eu-west-1").add_auth(
        request
    )
    sent = urllib.request.Request(url, body, dict(request.headers.items()))
    with urllib.request.urlopen(sent) as answer:
        assert json.load(answer)["output"]["message"]["content"] == [{"text": "OK"}]
    assert server.requests[-1].model == MODEL


def test_loopback_env_points_bedrock_judges_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m scorers loopback --api bedrock``'s lines: the endpoint, the protocol and the test credentials."""
    import scorers
    from scorers.testing import loopback_env

    with LoopbackLLM(default=Reply.choice("C", reasons="same")) as server:
        env = loopback_env(server, "bedrock")
        assert env["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] == server.url
        assert env["AWS_SECRET_ACCESS_KEY"] == LOOPBACK_AWS_SECRET_ACCESS_KEY
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        score = scorers.get("Factuality")(input="2+2?", output="4", expected="4")
        assert (score.score, [r.api for r in server.requests]) == (1.0, ["bedrock"])
