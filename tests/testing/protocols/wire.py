"""Each scripted protocol's request and reply shapes, so that one test checks a behaviour on every protocol."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from typing import Any, Callable

from scorers.testing import LoopbackLLM
from scorers.testing.protocols import (
    AnthropicMessagesAPI,
    ChatCompletionsAPI,
    GenerateContentAPI,
    ResponsesAPI,
    ScriptedProtocol,
)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status, headers and body."""

    status: int
    headers: Message
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def post(url: str, body: Any, headers: dict[str, str] | None = None, timeout: float = 30.0) -> Answer:
    """POST ``body`` as JSON to ``url`` with the standard library's client; an HTTP error is an answer too."""
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return Answer(answer.status, answer.headers, answer.read().decode())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.headers, error.read().decode())


@dataclass(frozen=True)
class Wire:
    """How to ask a protocol for a reply over plain HTTP, and read one back."""

    protocol: ScriptedProtocol
    #: The body of a request whose last user message is the text given.
    ask: Callable[[str], dict[str, Any]]
    #: The headers that present an API key.
    key: Callable[[str], dict[str, str]]
    #: A reply body's text and its tool call ``(name, arguments)``, None when it has none.
    text: Callable[[dict[str, Any]], str | None]
    tool: Callable[[dict[str, Any]], tuple[str, Any] | None]
    #: A reply body's ``(prompt tokens, completion tokens)``.
    usage: Callable[[dict[str, Any]], tuple[int, int]]
    #: The headers every request sends (a version header the API requires).
    headers: tuple[tuple[str, str], ...] = ()

    def url(self, server: LoopbackLLM) -> str:
        return server.base_url.removesuffix("/v1") + self.protocol.paths[0]

    def post(
        self, server: LoopbackLLM, text: str = "hello", *, headers: dict[str, str] | None = None, timeout: float = 30.0
    ) -> Answer:
        """POST a request asking ``text`` to the protocol's path on ``server``."""
        return post(self.url(server), self.ask(text), {**dict(self.headers), **(headers or {})}, timeout)

    def __str__(self) -> str:
        return self.protocol.name


def _chat_tool(body: dict[str, Any]) -> tuple[str, Any] | None:
    calls = body["choices"][0]["message"].get("tool_calls")
    return (calls[0]["function"]["name"], json.loads(calls[0]["function"]["arguments"])) if calls else None


def _responses_item(body: dict[str, Any]) -> dict[str, Any]:
    (item,) = body["output"]
    return item


def _anthropic_block(body: dict[str, Any]) -> dict[str, Any]:
    (block,) = body["content"]
    return block


CHAT = Wire(
    ChatCompletionsAPI(),
    ask=lambda text: {"model": "m", "messages": [{"role": "user", "content": text}]},
    key=lambda key: {"authorization": f"Bearer {key}"},
    text=lambda body: body["choices"][0]["message"]["content"],
    tool=_chat_tool,
    usage=lambda body: (body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]),
)
RESPONSES = Wire(
    ResponsesAPI(),
    ask=lambda text: {"model": "m", "input": [{"role": "user", "content": text}]},
    key=lambda key: {"authorization": f"Bearer {key}"},
    text=lambda body: (
        _responses_item(body)["content"][0]["text"] if _responses_item(body)["type"] == "message" else None
    ),
    tool=lambda body: (
        (_responses_item(body)["name"], json.loads(_responses_item(body)["arguments"]))
        if _responses_item(body)["type"] == "function_call"
        else None
    ),
    usage=lambda body: (body["usage"]["input_tokens"], body["usage"]["output_tokens"]),
)
ANTHROPIC = Wire(
    AnthropicMessagesAPI(),
    ask=lambda text: {"model": "c", "max_tokens": 64, "messages": [{"role": "user", "content": text}]},
    key=lambda key: {"x-api-key": key},
    text=lambda body: _anthropic_block(body).get("text"),
    tool=lambda body: (
        (_anthropic_block(body)["name"], _anthropic_block(body)["input"])
        if _anthropic_block(body)["type"] == "tool_use"
        else None
    ),
    usage=lambda body: (body["usage"]["input_tokens"], body["usage"]["output_tokens"]),
    headers=(("anthropic-version", "2023-06-01"),),
)


def _gemini_part(body: dict[str, Any], kind: str) -> Any:
    """The first part of a Gemini reply's candidate holding ``kind`` (``text``, ``functionCall``), or None."""
    return next((part[kind] for part in body["candidates"][0]["content"]["parts"] if kind in part), None)


GEMINI = Wire(
    GenerateContentAPI(),
    ask=lambda text: {"contents": [{"role": "user", "parts": [{"text": text}]}]},
    key=lambda key: {"x-goog-api-key": key},
    text=lambda body: _gemini_part(body, "text"),
    tool=lambda body: (
        (call["name"], call["args"]) if (call := _gemini_part(body, "functionCall")) is not None else None
    ),
    usage=lambda body: (body["usageMetadata"]["promptTokenCount"], body["usageMetadata"]["candidatesTokenCount"]),
)
#: Every scripted protocol the server speaks.
WIRES = (CHAT, RESPONSES, ANTHROPIC, GEMINI)
