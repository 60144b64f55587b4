"""A sketch of Anthropic's Messages API as a loopback protocol: all that adding a protocol takes is a module like
this one and its instance among the server's protocols (``PROTOCOLS``, or a server's ``protocols=``)."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Mapping

from scorers.testing import Reply
from scorers.testing.protocols import Ask, ScriptedProtocol, ServerSettings


class MessagesSketch(ScriptedProtocol):
    """``POST /v1/messages``: ``system`` apart, ``messages`` in; one ``text`` or ``tool_use`` block out (the tool's
    ``input`` an object); the key in ``x-api-key``; errors in Anthropic's shape."""

    name: ClassVar[str] = "messages"
    paths: ClassVar[tuple[str, ...]] = ("/v1/messages",)

    def messages(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages")
        return messages if isinstance(messages, list) else []

    def ask(self, body: Mapping[str, Any]) -> Ask:
        tools = {t.get("name"): t.get("input_schema") or {} for t in body.get("tools") or () if isinstance(t, dict)}
        choice = body.get("tool_choice")
        name = choice.get("name") if isinstance(choice, dict) and choice.get("type") == "tool" else None
        return Ask(forced_tool=(name, tools[name]) if name in tools else None, seed=body.get("seed"))

    def presented_key(self, headers: Mapping[str, str]) -> str | None:
        return headers.get("x-api-key")

    def invalid(self, body: Any) -> str | None:
        if (
            isinstance(body, dict)
            and isinstance(body.get("messages"), list)
            and isinstance(body.get("max_tokens"), int)
        ):
            return None
        return "messages: a list, and max_tokens: a whole number"

    def render(self, body: Mapping[str, Any], reply: Reply, server: ServerSettings) -> dict[str, Any]:
        if reply.kind == "tool":
            block = {"type": "tool_use", "id": "toolu_1", "name": reply.tool_name, "input": json.loads(reply.arguments)}
        else:
            block = {"type": "text", "text": reply.content or ""}
        input_tokens, output_tokens = self.usage(body, reply)
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [block],
            "stop_reason": "tool_use" if reply.kind == "tool" else "end_turn",
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }

    def error(self, status: int, message: str, error_type: str, code: str | None) -> dict[str, Any]:
        return {"type": "error", "error": {"type": error_type, "message": message}}
