"""Each provider's batch module against the loopback server over real HTTP: lines in the provider's shape, a batch
submitted, polled until it ends and read back, each reply the raw body the online endpoint sends (what the
protocol's parser reads) and each failed line a typed error; a failing management call a BatchAPIError without
the key."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Iterator

import pytest

from scorers.errors import BatchRequestError
from scorers.llm.batch.anthropic import AnthropicBatches
from scorers.llm.batch.core import BatchAPI
from scorers.llm.batch.deferral import Answer, BatchAPIError, Pending
from scorers.llm.batch.gemini import GeminiBatches
from scorers.llm.batch.openai import OpenAIBatches
from scorers.testing import LoopbackLLM, Reply

KEY = "test-key"


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(default=Reply.text("yes"), api_key=KEY) as running:
        running.script(Reply.error(500, "overloaded"), match="second")
        yield running


def openai_client(server: LoopbackLLM, key: str = KEY) -> Any:
    import openai

    return openai.AsyncOpenAI(base_url=server.base_url, api_key=key, max_retries=0)


def anthropic_client(server: LoopbackLLM, key: str = KEY) -> Any:
    anthropic = pytest.importorskip("anthropic")
    return anthropic.AsyncAnthropic(base_url=f"http://127.0.0.1:{server.port}", api_key=key, max_retries=0)


def gemini_client(server: LoopbackLLM, key: str = KEY) -> Any:
    """The client the gemini protocol posts with: the engine's HTTP client at the endpoint's root, its key header."""
    from scorers.llm.http import httpx_module

    return httpx_module().AsyncClient(base_url=f"http://127.0.0.1:{server.port}", headers={"x-goog-api-key": key})


def chat(question: str) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]}


def messages(question: str) -> dict[str, Any]:
    return {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": question}]}


def contents(question: str) -> dict[str, Any]:
    return {"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": [{"text": question}]}]}


def text_of(api: str, body: Any) -> str:
    if api == "chat":
        return body["choices"][0]["message"]["content"]
    if api == "anthropic":
        return body["content"][0]["text"]
    return body["candidates"][0]["content"]["parts"][0]["text"]


CASES = [
    pytest.param(OpenAIBatches(), "chat", chat, openai_client, id="chat"),
    pytest.param(  # importing the anthropic SDK takes seconds
        AnthropicBatches(), "anthropic", messages, anthropic_client, id="anthropic", marks=pytest.mark.slow
    ),
    pytest.param(GeminiBatches(), "gemini", contents, gemini_client, id="gemini"),
]


async def submitted_and_read(
    provider: BatchAPI, api: str, body: Callable[[str], dict[str, Any]], client: Any, server: LoopbackLLM
) -> dict[str, Any]:
    requests = [Pending("k-first", body("first?"), api, None), Pending("k-second", body("second?"), api, None)]
    batch_id = await provider.submit(client, [provider.line(r) for r in requests], requests[0])
    assert not (await provider.status(client, batch_id)).ended
    server.batches.advance()
    status = await provider.status(client, batch_id)
    assert status.ended
    return await provider.results(client, status)


@pytest.mark.parametrize(("provider", "api", "body", "make_client"), CASES)
def test_a_batch_is_submitted_polled_and_read_as_raw_replies_and_typed_errors(
    server: LoopbackLLM, provider: BatchAPI, api: str, body: Any, make_client: Callable[..., Any]
) -> None:
    async def scenario() -> dict[str, Any]:
        client = make_client(server)
        try:
            return await submitted_and_read(provider, api, body, client, server)
        finally:
            await _close(client)

    outcomes = asyncio.run(scenario())
    answer, failed = outcomes["k-first"], outcomes["k-second"]
    assert isinstance(answer, Answer) and text_of(api, answer.data) == "yes"
    assert isinstance(failed, BatchRequestError) and failed.reason == "errored" and "overloaded" in str(failed)
    assert server.batches.lines_received == 2 and server.chat_requests == []


@pytest.mark.parametrize(("provider", "api", "body", "make_client"), CASES)
def test_a_refused_management_call_is_a_batch_api_error_without_the_key(
    server: LoopbackLLM, provider: BatchAPI, api: str, body: Any, make_client: Callable[..., Awaitable[Any]]
) -> None:
    wrong = "sk-wrong-LEAKCANARY"

    async def scenario() -> None:
        client = make_client(server, wrong)
        try:
            request = Pending("k", body("first?"), api, None)
            await provider.submit(client, [provider.line(request)], request)
        finally:
            await _close(client)

    with pytest.raises(BatchAPIError) as raised:
        asyncio.run(scenario())
    assert "401" in str(raised.value) and wrong not in str(raised.value)
    assert "run the same command again to resume them" in str(raised.value)


async def _close(client: Any) -> None:
    close = getattr(client, "aclose", None) or client.close
    await close()


def test_a_protocol_says_it_has_a_batch_api_exactly_when_one_serves_it() -> None:
    from scorers.llm.batch.providers import BATCH_APIS
    from scorers.llm.protocols import PROTOCOLS

    served = {api for provider in BATCH_APIS for api in provider.apis}
    assert {name: PROTOCOLS.get(name).capabilities.batch for name in PROTOCOLS.names()} == {
        name: name in served for name in PROTOCOLS.names()
    }
