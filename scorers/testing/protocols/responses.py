"""OpenAI's Responses API (``POST /v1/responses``), as the loopback server answers it.

>>> from scorers.testing import Reply
>>> class Settings:
...     logprobs, embedding_dim, completions = True, 16, None
>>> reply = ResponsesAPI().render({"input": "2+2?"}, Reply.text("4", finish_reason="length"), Settings())
>>> reply["status"], reply["incomplete_details"], reply["output"][0]["content"][0]["text"]
('incomplete', {'reason': 'max_output_tokens'}, '4')
"""

from __future__ import annotations

import time
import uuid
from typing import Any, ClassVar, Mapping

from ..replies import Reply
from .base import ServerSettings
from .openai_common import OpenAIProtocol, served_logprobs

__all__ = ["ResponsesAPI"]

#: The ``incomplete_details.reason`` of a reply by its ``finish_reason``.
INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


class ResponsesAPI(OpenAIProtocol):
    """The Responses API: ``input`` (a string, or a list of messages) in; one output item out, a
    ``function_call`` or a ``message`` with one ``output_text`` part (with ``logprobs`` when asked). A reply's
    ``finish_reason`` ``"length"`` or ``"content_filter"`` makes the response ``incomplete``."""

    name: ClassVar[str] = "responses"
    conversation: ClassVar[str] = "input"
    paths: ClassVar[tuple[str, ...]] = ("/v1/responses",)

    def invalid(self, body: Any) -> str | None:
        if isinstance(body, dict) and isinstance(body.get("input"), (list, str)):
            return None
        return "body must be JSON with a 'input' list"

    def render(self, body: Mapping[str, Any], reply: Reply, server: ServerSettings) -> dict[str, Any]:
        incomplete = INCOMPLETE_REASONS.get(reply.finish_reason or "")
        prompt_tokens, completion_tokens = self.usage(body, reply)
        return {
            "id": f"resp_{uuid.uuid4().hex[:16]}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "error": None,
            "model": body.get("model") or "loopback",
            "output": [self._item(body, reply, server)],
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "usage": {
                "input_tokens": prompt_tokens,
                "output_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    @staticmethod
    def _item(body: Mapping[str, Any], reply: Reply, server: ServerSettings) -> dict[str, Any]:
        """The output item: a ``function_call``, or a ``message`` with one ``output_text`` part."""
        if reply.kind == "tool":
            return {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:16]}",
                "call_id": f"call_{uuid.uuid4().hex[:12]}",
                "name": reply.tool_name,
                "arguments": reply.arguments,
                "status": "completed",
            }
        part: dict[str, Any] = {"type": "output_text", "text": reply.content or "", "annotations": []}
        include = body.get("include")
        if server.logprobs and isinstance(include, list) and "message.output_text.logprobs" in include:
            part["logprobs"] = served_logprobs(reply, body.get("top_logprobs"))
        return {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex[:16]}",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
