"""Bedrock's aiohttp sender goes through the environment's proxy (``HTTP_PROXY``/``HTTPS_PROXY``, ``NO_PROXY``) as
``trust_env`` would, reading it once per host rather than in a thread on every request."""

from __future__ import annotations

import asyncio

import pytest

from scorers.testing import LoopbackLLM

pytest.importorskip("aiohttp")
pytest.importorskip("botocore")


def test_requests_go_through_the_environments_proxy_read_once_per_host(monkeypatch):
    import aiohttp.helpers

    from scorers.llm.protocols.bedrock import _AiohttpSender

    read = aiohttp.helpers.get_env_proxy_for_url
    lookups = []
    monkeypatch.setattr(aiohttp.helpers, "get_env_proxy_for_url", lambda url: lookups.append(url) or read(url))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with LoopbackLLM() as proxy:  # the proxy: asked for a host that does not resolve, it gets the request
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))

        async def send() -> list[int]:
            sender = _AiohttpSender()
            try:
                url = "http://bedrock-runtime.invalid/model/m/converse"
                return [(await sender.post(url, b"{}", {}, 10.0)).status for _ in range(3)]
            finally:
                await sender.aclose()

        statuses = asyncio.run(send())
        asked = [(r.headers.get("host"), r.path) for r in proxy.requests]
    assert statuses == [403] * 3  # the loopback's Bedrock, as a proxy, refuses the unsigned requests
    assert asked == [("bedrock-runtime.invalid", "/model/m/converse")] * 3 and len(lookups) == 1
