"""Anthropic's Messages API (``POST /v1/messages``), as the loopback server answers it.

The request: ``system`` apart from ``messages`` (user and assistant turns whose content is a text or content
blocks), ``max_tokens`` required, ``tools`` with an ``input_schema``, ``tool_choice`` ``{type: auto | any | tool |
none}``, structured output as ``output_config.format`` (a JSON schema), extended thinking as ``thinking``; the key
in ``x-api-key`` (or ``Authorization: Bearer``) and an ``anthropic-version`` header on every request. A body the API would refuse (a field it
does not know, ``temperature`` above 1, a forced tool with thinking on, a ``system`` message) is a 400 with its
reason, so a client that sends OpenAI's shapes is caught here.

The reply: ``content`` blocks (a ``thinking`` block first when thinking is on, then one ``text`` block, or one
``tool_use`` block whose ``input`` is an object), ``stop_reason`` and ``usage``. A scripted reply's
``finish_reason`` in the chat vocabulary is translated (``length`` -> ``max_tokens``, ``content_filter`` ->
``refusal``); Anthropic's own values (``refusal``, ``max_tokens``, ...) are served as given. Tool arguments that
are not a JSON object (a truncated call) are served as the empty ``input`` ``{}``. Errors have Anthropic's body
``{"type": "error", "error": {"type", "message"}}`` with its error types (``rate_limit_error`` for 429,
``overloaded_error`` for 529, ...).

>>> from scorers.testing import Reply
>>> class Settings:
...     logprobs, embedding_dim, completions = True, 16, None
>>> body = {"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "Which?"}]}
>>> reply = AnthropicMessagesAPI().render(body, Reply.choice("A", finish_reason="length"), Settings())
>>> reply["content"][0]["input"], reply["stop_reason"], reply["usage"]["output_tokens"]
({'choice': 'A'}, 'max_tokens', 2)
>>> AnthropicMessagesAPI().invalid({**body, "response_format": {"type": "json_object"}})
'response_format: Extra inputs are not permitted'
"""

from __future__ import annotations

import json
import uuid
from typing import Any, ClassVar, Mapping

from ..._util import is_int
from ..replies import Reply
from .base import Ask, ScriptedProtocol, ServerSettings, content_text, word_count

__all__ = ["ANTHROPIC_VERSION", "AnthropicMessagesAPI"]

#: The ``anthropic-version`` of the Messages API's documented shapes (every request must send one; any is taken).
ANTHROPIC_VERSION = "2023-06-01"

#: The body fields the Messages API takes (any other is a 400, as the API answers it).
_FIELDS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "stream",
        "metadata",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "service_tier",
        "cache_control",
        "container",
        "inference_geo",
    }
)

#: ``stop_reason`` by a scripted reply's ``finish_reason`` in the chat vocabulary (Anthropic's own pass as given).
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}

#: Anthropic's ``error.type`` by HTTP status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

#: The error types the server gives when a reply scripts none (OpenAI's): replaced by Anthropic's for the status.
_OPENAI_DEFAULT_TYPES = frozenset({"rate_limit_exceeded", "server_error", "invalid_api_key"})

#: The thinking text served when a request turns thinking on.
LOOPBACK_THINKING = "Loopback thinking: the verdict is scripted, not reasoned."


class AnthropicMessagesAPI(ScriptedProtocol):
    """The Messages API (see the module docstring)."""

    name: ClassVar[str] = "anthropic"
    paths: ClassVar[tuple[str, ...]] = ("/v1/messages",)

    def messages(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The ``system`` text as a system message, then the ``messages`` as given (blocks keep their ``text``)."""
        messages = body.get("messages")
        conversation = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        system = content_text(body.get("system"))
        return [{"role": "system", "content": system}, *conversation] if system else conversation

    def ask(self, body: Mapping[str, Any]) -> Ask:
        fmt = body.get("output_config", {}).get("format") if isinstance(body.get("output_config"), dict) else None
        structured = isinstance(fmt, dict) and fmt.get("type") == "json_schema"
        schema = fmt.get("schema") if structured and isinstance(fmt, dict) else None
        return Ask(
            forced_tool=_forced_tool(body),
            json=structured,
            schema=schema if isinstance(schema, dict) else None,
        )

    def presented_key(self, headers: Mapping[str, str]) -> str | None:
        """The key in ``x-api-key`` (the API's documented header), else in ``Authorization: Bearer`` (what the
        ``anthropic`` SDK 2.x sends)."""
        return headers.get("x-api-key") or super().presented_key(headers)

    def invalid_headers(self, headers: Mapping[str, str]) -> str | None:
        return None if headers.get("anthropic-version") else "anthropic-version: header is required"

    def invalid(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "body must be a JSON object"
        for name in ("model", "messages", "max_tokens"):
            if name not in body:
                return f"{name}: Field required"
        extra = next((name for name in body if name not in _FIELDS), None)
        if extra is not None:
            return f"{extra}: Extra inputs are not permitted"
        return _invalid_settings(body) or _invalid_messages(body["messages"]) or _invalid_tools(body)

    def render(self, body: Mapping[str, Any], reply: Reply, server: ServerSettings) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        thinking = body.get("thinking")
        thinks = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
        if thinks:
            content.append({"type": "thinking", "thinking": LOOPBACK_THINKING, "signature": uuid.uuid4().hex})
        if reply.kind == "tool":
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{uuid.uuid4().hex[:24]}",
                    "name": reply.tool_name,
                    "input": _tool_input(reply.arguments),
                }
            )
        else:
            content.append({"type": "text", "text": reply.content or ""})
        default_stop = "tool_use" if reply.kind == "tool" else "end_turn"
        stop_reason = _STOP_REASONS.get(reply.finish_reason or "", reply.finish_reason or default_stop)
        input_tokens, output_tokens = self.usage(body, reply)
        thinking_tokens = word_count(LOOPBACK_THINKING) if thinks else 0
        if thinks and reply.usage is None:
            output_tokens += thinking_tokens
        usage: dict[str, Any] = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        }
        if thinks:
            usage["output_tokens_details"] = {"thinking_tokens": min(thinking_tokens, output_tokens)}
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "loopback",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": {"type": "refusal", "category": None, "explanation": None}
            if stop_reason == "refusal"
            else None,
            "usage": usage,
        }

    def error(self, status: int, message: str, error_type: str, code: str | None) -> dict[str, Any]:
        """Anthropic's error body; the type is Anthropic's for the status unless the reply scripted its own."""
        if error_type in _OPENAI_DEFAULT_TYPES:
            error_type = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": error_type, "message": message}}


def _forced_tool(body: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """``(name, input schema)`` of the tool a request asks for: the one ``tool_choice`` names, else the first
    (as for OpenAI's APIs: ``auto`` and ``any`` get a call too); None without tools or with ``none``."""
    by_name = {
        str(tool.get("name")): tool.get("input_schema") or {}
        for tool in body.get("tools") or ()
        if isinstance(tool, dict)
    }
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    if not by_name or kind == "none":
        return None
    wanted = choice.get("name") if isinstance(choice, dict) and kind == "tool" else None
    name = wanted if wanted in by_name else next(iter(by_name))
    return name, by_name[name]


def _tool_input(arguments: str) -> dict[str, Any]:
    """A scripted call's arguments as the ``input`` object; ``{}`` for any that are not a JSON object."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _invalid_settings(body: Mapping[str, Any]) -> str | None:
    """Why the generation settings of a body are refused (``max_tokens``, ``temperature``, ``thinking`` with a
    forced tool, ``system``), or None."""
    max_tokens = body["max_tokens"]
    if not is_int(max_tokens) or max_tokens < 1:
        return "max_tokens: Input should be a whole number of at least 1"
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, (int, float)) and 0 <= temperature <= 1):
        return "temperature: Input should be a number from 0 to 1"
    if body.get("stream"):
        return "stream: the loopback server answers whole messages only"
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        return "system: Input should be a string or a list of text blocks"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not is_int(budget) or not 1024 <= budget < max_tokens:
            return "thinking.budget_tokens: must be at least 1024 and less than max_tokens"
    choice = body.get("tool_choice")
    thinks = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    if thinks and isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    fmt = body.get("output_config", {}).get("format") if isinstance(body.get("output_config"), dict) else None
    if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") == "json_schema" and "schema" in fmt):
        return "output_config.format: Input should be {type: json_schema, schema: {...}}"
    return None


#: The content block types a request's messages may hold.
_BLOCK_TYPES = frozenset({"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"})


def _invalid_messages(messages: Any) -> str | None:
    """Why a request's ``messages`` are refused (a role other than user/assistant, an unknown block), or None."""
    if not isinstance(messages, list) or not messages:
        return "messages: Input should be a non-empty list"
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        content = message.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            return f"messages.{index}.content: Input should be a string or a list of content blocks"
        for number, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in _BLOCK_TYPES:
                return f"messages.{index}.content.{number}.type: Input tag {kind!r} does not match any block type"
            source = block.get("source")
            if kind in ("image", "document") and not (isinstance(source, dict) and source.get("type")):
                return f"messages.{index}.content.{number}.source: Field required"
    return None


def _invalid_tools(body: Mapping[str, Any]) -> str | None:
    """Why ``tools`` or ``tool_choice`` are refused (OpenAI's function shape, a choice of an unknown tool)."""
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            return "tools: Input should be a list"
        for index, tool in enumerate(tools):
            if not isinstance(tool, dict) or not tool.get("name") or not isinstance(tool.get("input_schema"), dict):
                return f"tools.{index}: name and input_schema are required"
    choice = body.get("tool_choice")
    if choice is None:
        return None
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice: Input should be {type: auto | any | tool | none}"
    names = {tool.get("name") for tool in tools or ()}
    if choice["type"] == "tool" and choice.get("name") not in names:
        return f"tool_choice.name: no tool named {choice.get('name')!r}"
    return None
