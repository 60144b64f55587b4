"""What the server does alike for every scripted protocol (rules, faults, keys, usage, the request log), checked on
each of them over plain HTTP: a new protocol gets it all."""

from __future__ import annotations

import re
import urllib.error
from typing import Iterator

import pytest

from scorers.testing import LLAMA_CPP_JSON_SCHEMA_REJECTION, LoopbackLLM, Reply, auto_reply

from .wire import WIRES, Wire, post

pytestmark = pytest.mark.parametrize("wire", WIRES, ids=str)


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM() as running:
        yield running


def test_texts_and_tool_calls(server: LoopbackLLM, wire: Wire) -> None:
    server.default = Reply.text("plain words")
    body = wire.post(server).json()
    assert (wire.text(body), wire.tool(body)) == ("plain words", None)
    server.default = Reply.choice("A", reasons="r")
    assert wire.tool(wire.post(server).json()) == ("select_choice", {"reasons": "r", "choice": "A"})


@pytest.mark.parametrize(
    "match, text, expected",
    [
        ("France", "The capital of France?", "rule"),
        ("France", "The capital of Spain?", "default"),
        (re.compile(r"^\d+$"), "12345", "rule"),
        (re.compile(r"^\d+$"), "12a45", "default"),
        (lambda request: request.last_user_message.startswith("any"), "anything", "rule"),
    ],
)
def test_rules_match_the_last_user_message(server: LoopbackLLM, wire: Wire, match, text: str, expected: str) -> None:
    server.default = Reply.text("default")
    server.script(Reply.text("rule"), match=match)
    assert wire.text(wire.post(server, text).json()) == expected


def test_a_rule_answers_times_then_the_next(server: LoopbackLLM, wire: Wire) -> None:
    rule = server.script(Reply.error(503), times=2)
    assert [wire.post(server).status for _ in range(3)] == [503, 503, 200]
    assert rule.used == 2
    assert [(r.api, r.status) for r in server.requests] == [(wire.protocol.name, s) for s in (503, 503, 200)]


def test_a_reply_computed_from_the_request(server: LoopbackLLM, wire: Wire) -> None:
    server.default = lambda request: Reply.text(request.last_user_message.upper())
    assert wire.text(wire.post(server, "shout").json()) == "SHOUT"


@pytest.mark.parametrize(
    "reply, status, retry_after, error",
    [
        (Reply.error(503, "busy"), 503, None, ("busy", "server_error", "server_error")),
        (
            Reply.rate_limited(retry_after=7),
            429,
            "7",
            ("Rate limit reached (scripted)",) + ("rate_limit_exceeded",) * 2,
        ),
        (
            Reply.rate_limited(retry_after=0.25),
            429,
            "0.250",
            ("Rate limit reached (scripted)",) + ("rate_limit_exceeded",) * 2,
        ),
        (Reply.validation_error(), 500, None, (LLAMA_CPP_JSON_SCHEMA_REJECTION, "internal_server_error", None)),
    ],
)
def test_errors_in_the_protocols_shape(server: LoopbackLLM, wire: Wire, reply, status, retry_after, error) -> None:
    server.default = reply
    answer = wire.post(server)
    assert (answer.status, answer.headers.get("retry-after")) == (status, retry_after)
    message, error_type, code = error
    assert answer.json() == wire.protocol.error(status, message, error_type, code)


def test_raw_bodies_drops_and_hangs(server: LoopbackLLM, wire: Wire) -> None:
    server.default = Reply.raw("{not json", status=502)
    answer = wire.post(server)
    assert (answer.status, answer.text) == (502, "{not json")
    server.default = Reply.drop()
    with pytest.raises((ConnectionError, urllib.error.URLError)):
        wire.post(server)
    server.default = Reply.hang(60)
    with pytest.raises(TimeoutError):
        wire.post(server, timeout=0.5)  # a hang outlasts any timeout: the client's is cut short
    assert [r.status for r in server.requests] == [502, 0, 0]


def test_only_the_servers_key_is_let_in(wire: Wire) -> None:
    with LoopbackLLM(api_key="right") as server:
        answers = [wire.post(server, headers=headers).status for headers in ({}, wire.key("wrong"), wire.key("right"))]
        assert answers == [401, 401, 200]
        key = "invalid_api_key"
        assert wire.post(server).json() == wire.protocol.error(401, "Incorrect API key provided (loopback)", key, key)


def test_a_body_the_protocol_cannot_answer_is_a_400(server: LoopbackLLM, wire: Wire) -> None:
    answer = post(wire.url(server), {"model": "m"}, dict(wire.headers))
    problem = wire.protocol.invalid({"model": "m"})
    assert problem and answer.status == 400
    kind = "invalid_request_error"
    assert answer.json() == wire.protocol.error(400, problem, kind, kind)


def test_usage_is_word_counts_unless_scripted(server: LoopbackLLM, wire: Wire) -> None:
    server.default = Reply.text("one two three")
    assert wire.usage(wire.post(server, "a b").json()) == (2, 3)
    server.default = Reply.text("x", usage=(100, 7))
    assert wire.usage(wire.post(server, "a b").json()) == (100, 7)


def test_auto_reply_answers_a_forced_tool(server: LoopbackLLM, wire: Wire) -> None:
    server.default = auto_reply
    schema = {"type": "object", "properties": {"choice": {"type": "string", "enum": ["Y", "N"]}}}
    tools = {
        "chat": {"tools": [{"type": "function", "function": {"name": "pick", "parameters": schema}}]},
        "responses": {"tools": [{"type": "function", "name": "pick", "parameters": schema}]},
        "anthropic": {
            "tools": [{"name": "pick", "input_schema": schema}],
            "tool_choice": {"type": "tool", "name": "pick"},
        },
        "gemini": {
            "tools": [{"functionDeclarations": [{"name": "pick", "parametersJsonSchema": schema}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["pick"]}},
        },
    }[wire.protocol.name]
    name, arguments = wire.tool(post(wire.url(server), {**wire.ask("Is it so?"), **tools}, dict(wire.headers)).json())
    assert name == "pick" and arguments["choice"] in ("Y", "N")
    assert server.requests[-1].ask.forced_tool == ("pick", schema)
