"""Tasks that need a new endpoint's client at once, while the protocol awaits in making it (Bedrock finds its AWS
credentials in a thread), end up sharing one: each client made is closed, none is left open and unreferenced (an
aiohttp "Unclosed client session", which benchmarks/judge_protocols.py showed on bedrock at 32 in flight)."""

from __future__ import annotations

import asyncio
from typing import Any

from scorers import LLMClassifier
from scorers.llm import LLMEngine, aclose
from scorers.llm.protocols import PROTOCOLS
from scorers.testing import LoopbackLLM, Reply


def test_tasks_asking_for_a_new_client_at_once_share_one_and_every_client_made_is_closed(fake_api_key, monkeypatch):
    chat = type(PROTOCOLS.get("chat"))
    make = chat.client
    made: list[Any] = []
    closed: list[Any] = []

    async def awaiting_client(self: Any, settings: Any) -> Any:
        await asyncio.sleep(0.01)  # as a protocol that looks for its credentials before making its client
        client = await make(self, settings)
        close = client.close

        async def counted_close() -> None:
            closed.append(client)
            await close()

        client.close = counted_close
        made.append(client)
        return client

    monkeypatch.setattr(chat, "client", awaiting_client)
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        engine = LLMEngine(base_url=server.base_url, api_key=fake_api_key, cache=False)
        judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Y": 1.0, "N": 0.0}, engine=engine)

        async def score() -> list[Any]:
            try:
                return await judge.ascore_batch([{"output": f"hi {i}"} for i in range(8)], concurrency=8)
            finally:
                await aclose()

        scores = asyncio.run(score())
    assert [s.score for s in scores] == [1.0] * 8
    assert len(made) == 8 and sorted(map(id, closed)) == sorted(map(id, made))
