"""The protocols' registration: distinct names and paths, a server speaking only those it is given."""

from __future__ import annotations

import re

import pytest

from scorers.testing import LoopbackLLM, RecordedRequest
from scorers.testing.protocols import PROTOCOLS, ChatCompletionsAPI, protocol_for

from .wire import CHAT, RESPONSES, post


def test_each_protocol_has_its_own_name_and_paths() -> None:
    names = [protocol.name for protocol in PROTOCOLS]
    paths = [path for protocol in PROTOCOLS for path in protocol.paths]
    assert len(set(names)) == len(names) and len(set(paths)) == len(paths)
    for protocol in PROTOCOLS:
        for path in protocol.paths:
            assert protocol_for(path) is protocol
            assert RecordedRequest("POST", path, {}, {}, 0.0).api == protocol.name
    assert protocol_for("/v1/models") is None and RecordedRequest("GET", "/v1/models", {}, None, 0.0).api is None


def test_a_server_speaks_only_the_protocols_it_is_given() -> None:
    with LoopbackLLM(protocols=(ChatCompletionsAPI(),)) as server:
        assert CHAT.post(server).status == 200
        assert post(RESPONSES.url(server), RESPONSES.ask("hello")).status == 404
        assert [request.api for request in server.requests] == ["chat"]  # a path it does not speak is not recorded


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda protocol: protocol.name)
def test_every_protocol_lets_in_only_the_servers_key(protocol) -> None:
    with LoopbackLLM(api_key="right") as server:
        url = server.url + re.sub(r"\{[^{}]*\}", "m", protocol.paths[0])  # a path's variables given a value
        answer = post(url, {}, {"authorization": "Bearer wrong"})
        key = "invalid_api_key"
        assert answer.status == 401
        assert answer.json() == protocol.error(401, "Incorrect API key provided (loopback)", key, key)
        assert [(request.api, request.status) for request in server.requests] == [(protocol.name, 401)]
