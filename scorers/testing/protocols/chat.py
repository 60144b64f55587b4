"""OpenAI's chat completions API (``POST /v1/chat/completions``), as the loopback server answers it.

>>> from scorers.testing import Reply
>>> class Settings:
...     logprobs, embedding_dim, completions = True, 16, None
>>> body = {"model": "m", "messages": [{"role": "user", "content": "Which?"}], "n": 2}
>>> reply = ChatCompletionsAPI().render(body, Reply.choice("A"), Settings())
>>> [choice["message"]["tool_calls"][0]["function"]["arguments"] for choice in reply["choices"]], reply["usage"]
(['{"choice": "A"}', '{"choice": "A"}'], {'prompt_tokens': 1, 'completion_tokens': 4, 'total_tokens': 5})
"""

from __future__ import annotations

import time
import uuid
from typing import Any, ClassVar, Mapping

from ..replies import Reply
from .base import ServerSettings
from .openai_common import OpenAIProtocol, served_logprobs

__all__ = ["ChatCompletionsAPI"]


class ChatCompletionsAPI(OpenAIProtocol):
    """Chat completions: ``messages`` in; a ``choices`` list of ``n`` messages (a text, or a tool call whose
    arguments come with their logprobs when asked, as llama.cpp's do) out."""

    name: ClassVar[str] = "chat"
    conversation: ClassVar[str] = "messages"
    paths: ClassVar[tuple[str, ...]] = ("/v1/chat/completions",)

    def invalid(self, body: Any) -> str | None:
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            return None
        return "body must be JSON with a 'messages' list"

    def render(self, body: Mapping[str, Any], reply: Reply, server: ServerSettings) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.kind == "tool":
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": reply.tool_name, "arguments": reply.arguments},
                }
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.kind == "tool" else "stop")
        choices = body.get("n")
        n: int = choices if isinstance(choices, int) and choices > 0 else 1
        logprobs = None
        if server.logprobs and body.get("logprobs") is True:
            logprobs = {"content": served_logprobs(reply, body.get("top_logprobs")), "refusal": None}
        prompt_tokens, completion_tokens = self.usage(body, reply, n)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "loopback",
            "choices": [
                {"index": i, "message": message, "finish_reason": finish, "logprobs": logprobs} for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
