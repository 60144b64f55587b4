"""Credentials in the endpoint's URL (``http://user:s3cret@host/v1``) stay out of the HTTP client's own log lines
(httpx's ``HTTP Request: POST <url>`` at INFO, the ``openai`` client's debug lines) as well as ours, while they are
still sent as HTTP Basic auth in place of the API key, as httpx sends a URL's credentials itself (issue 15, item 6).
Nothing here changes how logging is set up: the clients the engine makes are given the URL without them."""

from __future__ import annotations

import base64
import json
import logging

import pytest

import scorers
from scorers import LLMClassifier
from scorers.errors import JudgeError
from scorers.llm import ChatRequest, LLMEngine
from scorers.testing import LoopbackLLM, Reply

FAST = dict(timeout=30.0, backoff_base=0.001, backoff_max=0.01, max_retries=2, cache=False)
SECRET = "s3cret"
#: What the server sees: the URL's user and password as Basic auth, in place of ``Bearer <API key>``.
BASIC = "Basic " + base64.b64encode(f"user:{SECRET}".encode()).decode()


def with_credentials(base_url: str) -> str:
    return base_url.replace("http://", f"http://user:{SECRET}@")


def http_client_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The HTTP client's ``HTTP Request: ...`` lines (logger ``httpx`` or the ``httpx2`` the SDK may use)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.split(".")[0] in ("httpx", "httpx2") and "HTTP Request:" in record.getMessage()
    ]


def assert_nowhere(caplog: pytest.LogCaptureFixture, *texts: str) -> None:
    logged = [record.getMessage() for record in caplog.records]
    assert any(record.name.startswith("openai") for record in caplog.records)  # its debug lines were captured
    for text in (*texts, *logged):
        assert SECRET not in text, text


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every logger's records at DEBUG, for this test only (pytest restores the levels)."""
    caplog.set_level(logging.DEBUG)
    return caplog


def test_a_judge_call_sends_the_urls_credentials_as_basic_auth_and_logs_none(fake_api_key, debug_logs):
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        server.script(Reply.error(500, "upstream is down"), match="down")
        engine = LLMEngine(base_url=with_credentials(server.base_url), api_key=fake_api_key, transport="httpx", **FAST)
        judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, engine=engine)
        records = [
            result.to_record(with_metadata=True)
            for result in scorers.evaluate([{"output": "fine"}, {"output": "down"}], [judge])
        ]
        with pytest.raises(JudgeError) as info:
            engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "down"}]))
        requests, base_url = list(server.requests), server.base_url
    assert records[0]["scores"]["Polite"] == 1.0
    error = records[1]["errors"]["Polite"]
    assert error["type"] == "JudgeError" and "HTTP 500" in error["message"]
    assert len(requests) == 7 and {request.headers.get("authorization") for request in requests} == {BASIC}
    lines = http_client_lines(debug_logs)
    assert len(lines) == 7 and all(f"POST {base_url}/chat/completions" in line for line in lines), lines
    assert_nowhere(debug_logs, json.dumps(records), str(info.value), repr(info.value), repr(engine))


def test_a_sync_clients_async_copy_sends_its_urls_credentials_apart(fake_api_key, debug_logs):
    import openai

    with LoopbackLLM(default=Reply.choice("Y")) as server:
        client = openai.OpenAI(base_url=with_credentials(server.base_url), api_key=fake_api_key, max_retries=0)
        engine = LLMEngine(client=client, transport="httpx", **FAST)
        result = engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
        requests = list(server.requests)
    assert result.attempts == 1 and requests[0].headers.get("authorization") == BASIC
    assert len(http_client_lines(debug_logs)) == 1
    assert_nowhere(debug_logs, repr(result))
    assert SECRET in str(client.base_url)  # the user's own client is left as it was


def test_a_users_async_client_is_used_as_it_is(fake_api_key):
    import openai

    with LoopbackLLM(default=Reply.choice("Y")) as server:
        client = openai.AsyncOpenAI(base_url=with_credentials(server.base_url), api_key=fake_api_key, max_retries=0)
        engine = LLMEngine(client=client, **FAST)
        engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
        requests = list(server.requests)
    assert requests[0].headers.get("authorization") == BASIC  # httpx's own handling of the URL, untouched
    assert SECRET in str(client.base_url)


def test_openai_embeddings_send_the_urls_credentials_as_basic_auth_and_log_none(fake_api_key, debug_logs):
    from scorers.embedding.similarity import OpenAIEmbeddingSimilarity

    with LoopbackLLM() as server:
        scorer = OpenAIEmbeddingSimilarity(
            api_key=fake_api_key, base_url=with_credentials(server.base_url), model="text-embedding-3-small"
        )
        score = scorer(output="a cat", expected="a cat")
        requests = list(server.requests)
    assert score.score == pytest.approx(1.0)
    assert requests and {request.headers.get("authorization") for request in requests} == {BASIC}
    assert len(http_client_lines(debug_logs)) == len(requests)
    assert_nowhere(debug_logs, repr(score), json.dumps(scorer.signature()))
