"""OpenAI's chat-completions API (``POST /chat/completions``), which every OpenAI-compatible server speaks.

The request's own shape is this API's, so the body is the request's fields as they are; a reasoning model is sent
``max_completion_tokens`` and no ``temperature``.

>>> from scorers.llm.protocol import ChatRequest
>>> ChatAPI().body(ChatRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=9), "o3", thinks=True)
{'model': 'o3', 'messages': [{'role': 'user', 'content': 'Hi'}], 'max_completion_tokens': 9}
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from ...reasoning import message_reasoning
from .base import Capabilities, Request, Tokens
from .openai_family import OpenAIProtocol
from .result import ChatResult, InvalidReply, ToolCall, arguments_text, put, reply_result, usage_count

__all__ = ["ChatAPI"]


class ChatAPI(OpenAIProtocol):
    """Chat completions: tools, ``tool_choice``, ``response_format`` and logprobs as the request gives them."""

    name: ClassVar[str] = "chat"
    route: ClassVar[str] = "/chat/completions"
    capabilities: ClassVar[Capabilities] = Capabilities(
        logprobs=True,
        prompt_logprobs=True,  # through the same endpoint's legacy completions API (GPTScore)
        batch=True,
        attachments=frozenset({"image", "audio", "document"}),
        attachment_bytes=(("image", 20_000_000), ("document", 32_000_000)),
        attachment_total_bytes=50_000_000,
        attachment_urls=frozenset({"image"}),
    )
    content_keys: ClassVar[frozenset[str]] = frozenset({"model", "messages", "tools", "tool_choice", "response_format"})

    def body(self, request: Request, model: str, thinks: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in request.messages]}
        put(body, "tools", None if request.tools is None else list(request.tools))
        put(body, "tool_choice", request.tool_choice)
        put(body, "temperature", None if thinks else request.temperature)
        put(body, "max_completion_tokens" if thinks else "max_tokens", request.max_tokens)
        put(body, "response_format", request.response_format)
        put(body, "seed", request.seed)
        put(body, "reasoning_effort", request.reasoning_effort)
        if request.logprobs:
            body["logprobs"] = True
            put(body, "top_logprobs", request.top_logprobs)
        return body

    def parse(self, data: Any, *, model: str) -> ChatResult:
        """Read the first choice of a chat-completion body; raise :class:`InvalidReply` on an odd shape."""
        if not isinstance(data, Mapping):
            raise InvalidReply(f"the completion is not a JSON object: {str(data)[:200]!r}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise InvalidReply("the completion has no choices")
        message = choices[0].get("message")
        if not isinstance(message, Mapping):
            raise InvalidReply("the completion's first choice has no message")
        calls = [_tool_call(call) for call in message.get("tool_calls") or ()]
        content = message.get("content")
        logprobs = choices[0].get("logprobs")
        return reply_result(
            data,
            self.tokens(data),
            model=model,
            content=content if isinstance(content, str) else None,
            calls=calls,
            finish_reason=choices[0].get("finish_reason"),
            logprobs=logprobs.get("content") if isinstance(logprobs, Mapping) else None,
            reasoning=message_reasoning(message),
        )

    def tokens(self, data: Any) -> Tokens:
        """``usage.prompt_tokens``/``completion_tokens``, and of those ``prompt_tokens_details.cached_tokens``
        and ``completion_tokens_details.reasoning_tokens``.

        >>> ChatAPI().tokens({"usage": {"prompt_tokens": 12, "completion_tokens": "3"}}), ChatAPI().tokens([])
        (Tokens(prompt=12, completion=3, cached_prompt=0, reasoning=0), Tokens(prompt=0, completion=0, cached_prompt=0, reasoning=0))
        """
        usage = data.get("usage") if isinstance(data, Mapping) else None
        if not isinstance(usage, Mapping):
            return Tokens()
        prompt_details = usage.get("prompt_tokens_details")
        completion_details = usage.get("completion_tokens_details")
        return Tokens(
            usage_count(usage, "prompt_tokens"),
            usage_count(usage, "completion_tokens"),
            usage_count(prompt_details, "cached_tokens"),
            usage_count(completion_details, "reasoning_tokens"),
        )


def _tool_call(call: Any) -> ToolCall:
    """One entry of a chat message's ``tool_calls``: ``{"id", "function": {"name", "arguments"}}``."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        raise InvalidReply(f"a tool call has no function: {str(call)[:200]!r}")
    return ToolCall(
        name=str(function.get("name") or ""), arguments=arguments_text(function.get("arguments")), id=call.get("id")
    )
