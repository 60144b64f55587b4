"""One conversation written in every format the agent readers take, for tests that run a case through each.

A conversation is given in OpenAI's chat format (user, assistant and tool messages; calls with ids) and
:func:`in_every_format` writes it again as OpenAI Responses items, Anthropic messages, LangChain messages (dicts
and the ``lc`` serialised form) and OpenTelemetry GenAI spans (OTLP JSON), with the bare list of its calls.
"""

from __future__ import annotations

import json
from typing import Any

#: The formats :func:`in_every_format` writes, the conversation's own first.
FORMATS = ("openai_chat", "openai_responses", "anthropic", "langchain", "langchain_serialised", "otel_genai")


def _calls(message: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """A chat message's calls as (id, name, arguments)."""
    return [
        (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]))
        for call in message.get("tool_calls") or []
    ]


def responses(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in chat:
        if message["role"] == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
            )
        elif message["role"] == "assistant":
            if message.get("content"):
                text = [{"type": "output_text", "text": message["content"], "annotations": []}]
                items.append({"type": "message", "role": "assistant", "content": text})
            items += [
                {"type": "function_call", "call_id": id_, "name": name, "arguments": json.dumps(arguments)}
                for id_, name, arguments in _calls(message)
            ]
        else:
            items.append({"role": message["role"], "content": message["content"]})
    return items


def anthropic(chat: list[dict[str, Any]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for message in chat:
        if message["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": message["content"]}
            if messages and messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list):
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        elif message["role"] == "assistant":
            blocks = [{"type": "text", "text": message["content"]}] if message.get("content") else []
            blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in _calls(message)]
            messages.append({"role": "assistant", "content": blocks})
        else:
            messages.append({"role": message["role"], "content": message["content"]})
    return {"model": "claude", "max_tokens": 1024, "messages": messages}


_LANGCHAIN_TYPES = {
    "user": ("human", "HumanMessage"),
    "assistant": ("ai", "AIMessage"),
    "tool": ("tool", "ToolMessage"),
}


def _langchain_dict(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _LANGCHAIN_TYPES[message["role"]][0], "content": message.get("content") or ""}
    if message["role"] == "assistant":
        out["tool_calls"] = [{"name": n, "args": a, "id": i, "type": "tool_call"} for i, n, a in _calls(message)]
    if message["role"] == "tool":
        out["tool_call_id"] = message["tool_call_id"]
    return out


def langchain(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_langchain_dict(message) for message in chat]


def langchain_serialised(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", _LANGCHAIN_TYPES[message["role"]][1]],
            "kwargs": _langchain_dict(message),
        }
        for message in chat
    ]


def _otel_message(message: dict[str, Any]) -> dict[str, Any]:
    if message["role"] == "tool":
        parts = [{"type": "tool_call_response", "id": message["tool_call_id"], "response": message["content"]}]
        return {"role": "tool", "parts": parts}
    parts = [{"type": "text", "content": message["content"]}] if message.get("content") else []
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in _calls(message)]
    return {"role": message["role"], "parts": parts}


def _span(start: int, **messages: list[dict[str, Any]]) -> dict[str, Any]:
    attributes = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]
    attributes += [
        {"key": f"gen_ai.{key}.messages", "value": {"stringValue": json.dumps([_otel_message(m) for m in value])}}
        for key, value in messages.items()
    ]
    return {"name": "chat", "startTimeUnixNano": str(start), "attributes": attributes, "status": {}}


def otel_genai(chat: list[dict[str, Any]]) -> dict[str, Any]:
    """One inference span per assistant message: the history before it as input, the message as output."""
    spans = [
        _span(index + 1, input=chat[:index], output=[message])
        for index, message in enumerate(chat)
        if message["role"] == "assistant"
    ]
    if chat and chat[-1]["role"] != "assistant":  # what follows the last answer: a span of inputs alone
        spans.append(_span(len(chat) + 1, input=chat))
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def in_every_format(chat: list[dict[str, Any]]) -> dict[str, Any]:
    """The conversation in each of :data:`FORMATS`."""
    return {
        "openai_chat": chat,
        "openai_responses": responses(chat),
        "anthropic": anthropic(chat),
        "langchain": langchain(chat),
        "langchain_serialised": langchain_serialised(chat),
        "otel_genai": otel_genai(chat),
    }


# ------------------------------------------------------------------------------------ building a conversation
def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str | None = None, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant message: its text and its calls, each (id, name, arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls
        ]
    return message


def tool(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def trajectory(*calls: tuple[str, dict[str, Any]], texts: list[str | None] | None = None) -> list[dict[str, Any]]:
    """A conversation that makes ``calls`` one per assistant turn, each answered, then answers: ``texts`` are
    the turns' texts (one per call, then the answer's)."""
    texts = texts if texts is not None else [None] * len(calls) + ["Done."]
    chat = [user("Please help.")]
    for index, (name, arguments) in enumerate(calls):
        call_id = f"call_{index}"
        chat += [assistant(texts[index], (call_id, name, arguments)), tool(call_id, f"result {index}")]
    return [*chat, assistant(texts[len(calls)])]
