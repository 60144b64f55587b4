"""Credentials in the endpoint's URL (``http://user:pw@host``, ``?api-key=...``) appear nowhere we write: errors,
results, logs, ``repr``s; and the HTTP client's own refusal is reported as the client's."""

from __future__ import annotations

import json
import logging

import pytest

import scorers
from scorers import LLMClassifier
from scorers.errors import JudgeError
from scorers.llm import ChatRequest, EndpointConfigError, LLMEngine
from scorers.llm.redaction import mask_urls
from scorers.testing import LoopbackLLM, Reply

from .conftest import free_port

FAST = dict(timeout=30.0, backoff_base=0.001, backoff_max=0.01, max_retries=2, cache=False)
#: The secrets of the URLs below: none may be written anywhere.
SECRETS = ("pw-CANARY", "q-CANARY")


def with_credentials(base_url: str, *, query: bool = False) -> str:
    """``base_url`` with a user and password, and with ``query`` a secret query parameter as Azure-style endpoints
    take (the openai client appends the path after a base URL's query, so such a URL reaches no server)."""
    with_user = base_url.replace("http://", "http://user:pw-CANARY@")
    return f"{with_user}?api-version=2024-06-01&api-key=q-CANARY" if query else with_user


def our_log(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the engine logged (the HTTP client's own debug lines show the URL as the user gave it)."""
    return [record.getMessage() for record in caplog.records if record.name.startswith("scorers")]


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert not any(secret in text for secret in SECRETS), text


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://user:pw@host:8080/v1", "http://user:***@host:8080/v1"),
        ("redis://:s3cret@cache:6379/0?ttl=60", "redis://:***@cache:6379/0?ttl=60"),
        ("https://sk-token@host/v1", "https://***@host/v1"),
        ("http://user:p@ss@host/v1", "http://user:***@host/v1"),
        (
            "https://x.azure.com/openai?api-version=1&api-key=abc",
            "https://x.azure.com/openai?api-version=1&api-key=***",
        ),
        (
            "https://host/v1?key=a&access_token=b&sig=c&model=m",
            "https://host/v1?key=***&access_token=***&sig=***&model=m",
        ),
        ("error at htp://u:pw@host/v1/chat/completions.", "error at htp://u:***@host/v1/chat/completions."),
        ("http://host:8080/v1 (mail me@example.org)", "http://host:8080/v1 (mail me@example.org)"),
    ],
)
def test_mask_urls(url, shown):
    assert mask_urls(url) == shown


def test_an_unreachable_url_with_credentials_stops_the_run_without_showing_them(fake_api_key, caplog):
    caplog.set_level(logging.DEBUG)
    url = with_credentials(f"http://127.0.0.1:{free_port()}/v1", query=True)  # nothing listens there
    engine = LLMEngine(base_url=url, api_key=fake_api_key, transport="httpx", **FAST)
    judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, engine=engine)
    with pytest.raises(EndpointConfigError) as stopped:  # connections refused from the start: nothing listens
        list(scorers.evaluate([{"output": "hi"}], [judge]))
    message = str(stopped.value)
    assert "nothing answers at" in message and "ConnectionRefusedError" in message
    assert "http://user:***@127.0.0.1" in message and "api-key=***" in message
    with pytest.raises(JudgeError) as info:
        engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    assert_no_secret(
        message,
        json.dumps(stopped.value.to_dict()),
        str(info.value),
        repr(info.value),
        repr(engine),
        repr(engine.settings()),
        *our_log(caplog),
    )


def test_the_aiohttp_clients_refusal_is_its_own_not_a_body_that_is_not_json(fake_api_key):
    pytest.importorskip("aiohttp")
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        engine = LLMEngine(
            base_url=with_credentials(server.base_url), api_key=fake_api_key, transport="aiohttp", **FAST
        )
        with pytest.raises(EndpointConfigError) as info:  # a ConfigError: every request would be refused alike
            engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
        assert server.request_count == 0
    message = str(info.value)
    assert "the HTTP client (transport='aiohttp') refused the request" in message and "not JSON" not in message
    assert "credentials encoded in URL" in message and info.value.attempts == 1  # not retried
    assert_no_secret(message, repr(info.value), json.dumps(info.value.to_dict()))


def test_an_unusable_scheme_is_a_configuration_error_at_once(fake_api_key):
    engine = LLMEngine(base_url="htp://user:pw-CANARY@127.0.0.1:9/v1", api_key=fake_api_key, transport="httpx", **FAST)
    with pytest.raises(EndpointConfigError, match="UnsupportedProtocol") as info:
        engine.complete_sync(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    assert info.value.attempts == 1
    assert_no_secret(str(info.value), repr(info.value))


def test_a_server_message_echoing_the_url_is_masked_and_replies_keep_no_secret(fake_api_key, caplog):
    caplog.set_level(logging.DEBUG)
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        url = with_credentials(server.base_url)
        server.script(Reply.error(503, f"upstream {url} is busy"), match="fine", times=1)
        server.script(Reply.error(500, f"upstream {url} is down"), match="down")
        engine = LLMEngine(base_url=url, api_key=fake_api_key, transport="httpx", **FAST)
        judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, engine=engine)
        records = [
            result.to_record(with_metadata=True)
            for result in scorers.evaluate([{"output": "fine"}, {"output": "down"}], [judge])
        ]
    assert records[0]["scores"]["Polite"] == 1.0 and records[0]["metadata_scores"]["Polite"]["attempts"] == 2
    assert "upstream http://user:***@127.0.0.1" in records[1]["errors"]["Polite"]["message"]
    assert any("HTTP 503: upstream http://user:***@" in line for line in our_log(caplog))
    assert_no_secret(json.dumps(records), *our_log(caplog))
