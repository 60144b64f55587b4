"""OpenAI's Responses API (``POST /responses``): the chat-shaped request converted (``input``, flat function tools,
``text.format``, ``reasoning.effort``, ``include`` for logprobs) and the reply's output items read back.

>>> from scorers.llm.protocol import ChatRequest
>>> ResponsesAPI().body(ChatRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=50), "o4-mini", True)
{'model': 'o4-mini', 'input': [{'role': 'user', 'content': 'Hi'}], 'max_output_tokens': 50}
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping, Sequence

from ...reasoning import message_reasoning
from .base import Capabilities, Request, Tokens
from .openai_family import OpenAIProtocol
from .result import ChatResult, InvalidReply, ToolCall, arguments_text, put, reply_result, usage_count

__all__ = ["ResponsesAPI"]

#: What the Responses API is asked to include for output-text log-probabilities.
_RESPONSES_LOGPROBS = "message.output_text.logprobs"

#: ``finish_reason`` of an ``incomplete`` Responses reply, by ``incomplete_details.reason``.
_INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


class ResponsesAPI(OpenAIProtocol):
    """The Responses API: tools, tool choice and response format converted from the chat shape."""

    name: ClassVar[str] = "responses"
    route: ClassVar[str] = "/responses"
    capabilities: ClassVar[Capabilities] = Capabilities(
        logprobs=True,
        batch=True,
        attachments=frozenset({"image", "audio", "document"}),
        attachment_bytes=(("image", 20_000_000), ("document", 32_000_000)),
        attachment_total_bytes=50_000_000,
        attachment_urls=frozenset({"image", "document"}),
    )
    content_keys: ClassVar[frozenset[str]] = frozenset({"model", "input", "tools", "tool_choice"})

    def body(self, request: Request, model: str, thinks: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "input": [_input_message(m) for m in request.messages]}
        put(body, "tools", None if request.tools is None else [_tool(t) for t in request.tools])
        put(body, "tool_choice", _tool_choice(request.tool_choice))
        put(body, "temperature", None if thinks else request.temperature)
        put(body, "max_output_tokens", request.max_tokens)
        put(body, "text", None if request.response_format is None else {"format": _format(request.response_format)})
        put(body, "seed", request.seed)
        put(body, "reasoning", None if request.reasoning_effort is None else {"effort": request.reasoning_effort})
        if request.logprobs:
            body["include"] = [_RESPONSES_LOGPROBS]
            put(body, "top_logprobs", request.top_logprobs)
        return body

    def sent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The generation settings, ``text.format`` (the response format: content) left out."""
        sent = super().sent(body)
        text = sent.pop("text", None)
        if isinstance(text, Mapping):
            text = {k: v for k, v in text.items() if k != "format"}
        if text:
            sent["text"] = text
        return sent

    def parse(self, data: Any, *, model: str) -> ChatResult:
        """Read a Responses body: ``function_call`` output items are the tool calls, the ``output_text`` parts of
        ``message`` items the content (joined) and their logprobs. ``finish_reason`` is given in the chat
        vocabulary: ``"tool_calls"`` or ``"stop"`` when completed, ``"length"`` when cut at
        ``max_output_tokens``; the summaries of ``reasoning`` items are the reply's ``reasoning``, never its content.
        Raises :class:`InvalidReply` on an odd shape or a failed response."""
        if not isinstance(data, Mapping):
            raise InvalidReply(f"the response is not a JSON object: {str(data)[:200]!r}")
        output = data.get("output")
        if not isinstance(output, list):
            raise InvalidReply("the response has no output list")
        if data.get("status") == "failed":
            raise InvalidReply(f"the response failed: {str(data.get('error'))[:300]}")
        calls, texts, tokens = _output(output)
        thoughts = [
            message_reasoning(item) for item in output if isinstance(item, Mapping) and item.get("type") == "reasoning"
        ]
        return reply_result(
            data,
            self.tokens(data),
            model=model,
            content="".join(texts) if texts else None,
            calls=calls,
            finish_reason=_finish_reason(data, calls),
            logprobs=tokens,
            reasoning="\n\n".join(thought for thought in thoughts if thought) or None,
        )

    def tokens(self, data: Any) -> Tokens:
        """``usage.input_tokens``/``output_tokens``, of those ``input_tokens_details.cached_tokens`` and
        ``output_tokens_details.reasoning_tokens``."""
        usage = data.get("usage") if isinstance(data, Mapping) else None
        if not isinstance(usage, Mapping):
            return Tokens()
        return Tokens(
            usage_count(usage, "input_tokens"),
            usage_count(usage, "output_tokens"),
            usage_count(usage.get("input_tokens_details"), "cached_tokens"),
            usage_count(usage.get("output_tokens_details"), "reasoning_tokens"),
        )


def _input_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A chat message as a Responses input item: text content as it is, content parts as Responses' own."""
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    return {**message, "content": [_input_part(part, message.get("role")) for part in content]}


def _input_part(part: Mapping[str, Any], role: Any) -> dict[str, Any]:
    """A chat content part as Responses': ``input_text`` (``output_text`` in an assistant's message),
    ``input_image`` (its URL or data URI, ``detail`` as given or ``auto``), ``input_file`` (file name and data URI
    or URL); ``input_audio`` is the same in both."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "output_text" if role == "assistant" else "input_text", "text": part.get("text")}
    if kind == "image_url":
        image = part.get("image_url") or {}
        return {"type": "input_image", "image_url": image.get("url"), "detail": image.get("detail", "auto")}
    if kind == "file":
        return {"type": "input_file", **(part.get("file") or {})}
    return dict(part)


def _tool(tool: Mapping[str, Any]) -> Any:
    """A chat-shaped function tool in the Responses shape; ``strict`` is ``False`` unless the tool says
    otherwise (the Responses API's own default is ``True``, which many judge schemas do not satisfy).
    Other tools (already in the Responses shape, built-in tools) are sent as given."""
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, Mapping):
        return tool
    converted: dict[str, Any] = {"type": "function", "name": function.get("name")}
    put(converted, "description", function.get("description"))
    converted["parameters"] = function.get("parameters", {"type": "object", "properties": {}})
    converted["strict"] = function.get("strict", False)
    return converted


def _tool_choice(choice: str | Mapping[str, Any] | None) -> Any:
    """``{"type": "function", "function": {"name": N}}`` becomes ``{"type": "function", "name": N}``."""
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def _format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """A chat ``response_format`` as the Responses API's ``text.format``."""
    schema = response_format.get("json_schema")
    if response_format.get("type") == "json_schema" and isinstance(schema, Mapping):
        return {"type": "json_schema", **schema}
    return dict(response_format)


def _output(output: list[Any]) -> tuple[list[ToolCall], list[str], list[Any] | None]:
    """The tool calls (``function_call`` items), the texts and the logprobs (``None``: none sent) of the
    ``output_text`` parts of ``message`` items of a Responses body's ``output``, in order."""
    calls: list[ToolCall] = []
    texts: list[str] = []
    tokens: list[Any] | None = None
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "function_call":
            calls.append(
                ToolCall(
                    name=str(item.get("name") or ""),
                    arguments=arguments_text(item.get("arguments")),
                    id=item.get("call_id"),
                )
            )
        elif kind == "message":
            for part in _output_text_parts(item):
                texts.append(str(part.get("text") or ""))
                if isinstance(part.get("logprobs"), list):
                    tokens = [*(tokens or ()), *part["logprobs"]]
    return calls, texts, tokens


def _output_text_parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``output_text`` parts of a Responses ``message`` item's ``content``."""
    return [
        part for part in message.get("content") or () if isinstance(part, Mapping) and part.get("type") == "output_text"
    ]


def _finish_reason(data: Mapping[str, Any], calls: Sequence[ToolCall]) -> str:
    """A Responses body's outcome in the chat vocabulary (see :meth:`ResponsesAPI.parse`)."""
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return _INCOMPLETE_REASONS.get(str(reason), str(reason))
    return "tool_calls" if calls else "stop"
