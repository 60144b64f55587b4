"""The server itself: its lifecycle, ports, latency, the request log and the model list."""

from __future__ import annotations

import asyncio
import time

import openai
import pytest

from scorers.testing import LoopbackLLM, Reply

from .openai_clients import ask, client


def test_models(llm_server):
    assert [m.id for m in client(llm_server).models.list()] == list(llm_server.models)


def test_latency_and_max_in_flight():
    with LoopbackLLM(latency=0.05, default=Reply.text("ok")) as server:

        async def burst() -> None:
            async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as aclient:
                await asyncio.gather(
                    *(
                        aclient.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
                        for i in range(12)
                    )
                )

        started = time.perf_counter()
        asyncio.run(burst())
        assert time.perf_counter() - started >= 0.05
        assert server.max_in_flight > 1
        assert server.in_flight == 0
        assert server.request_count == 12


def test_reset_and_not_running():
    server = LoopbackLLM()
    with pytest.raises(RuntimeError):
        server.base_url
    with server:
        server.script(Reply.text("x"))
        ask(server, "x")
        server.reset()
        assert server.rules == [] and server.requests == []


@pytest.mark.slow  # 13 bodies of 1 to 4 MB: about 3 s
def test_the_record_is_bounded_and_the_count_exact():
    """Every body was kept (300 requests of 1 MB: 51 -> 341 MB): now the newest, within a number and a size."""
    with LoopbackLLM(record_limit=3) as server:
        for i in range(10):
            ask(server, f"q{i}")
        assert server.request_count == 10
        assert [r.last_user_message for r in server.requests] == ["q7", "q8", "q9"]
    megabyte = "x" * 2**20
    with LoopbackLLM(record_bytes=3 * 2**20) as server:
        for i in range(12):
            ask(server, f"{i} {megabyte}")
        assert server.request_count == 12 and 1 <= len(server.requests) < 3
        assert sum(r.size for r in server.requests) <= 3 * 2**20 < 12 * 2**20
        assert server.requests[-1].last_user_message.startswith("11 ")
        ask(server, "y" * (4 * 2**20))  # one body over the whole budget: kept alone, the newest
        assert server.request_count == 13 and [r.last_user_message[0] for r in server.requests] == ["y"]
    assert (LoopbackLLM().record_limit, LoopbackLLM().record_bytes) == (1_000, 32 * 2**20)


def test_a_stopped_servers_port_is_never_given_to_a_new_one():
    ports = []
    for _ in range(25):
        with LoopbackLLM() as server:
            ports.append(server.port)
    assert len(set(ports)) == len(ports)


def test_records_the_query_string(llm_server):
    openai.OpenAI(
        base_url=llm_server.base_url, api_key="k", max_retries=0, default_query={"api-version": "2026-01-01"}
    ).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert llm_server.chat_requests[0].query == {"api-version": "2026-01-01"}


def test_a_server_on_a_given_port():
    with LoopbackLLM() as first:
        port = first.port
    with LoopbackLLM(port=port) as server:  # the port a stopped server had: free again at once
        assert server.base_url == f"http://127.0.0.1:{port}/v1"
        assert ask(server, "hi").choices[0].message.content == "OK"
        with pytest.raises(RuntimeError, match="failed to start"):
            LoopbackLLM(port=port).start()
