"""What a judge asks the model to reply, and how the reply is read back.

:class:`ReplyFormat` turns a JSON schema into the request parts of each response mode (a forced tool call, a
``json_schema`` or ``json_object`` response format) and reads the reply back as a mapping.

>>> fmt = ReplyFormat("record_rating", "Record the rating.", {"type": "object", "properties": {
...     "rating": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["rating"]})
>>> tools, tool_choice, response_format = fmt.request_parts("tools")
>>> tools[0]["function"]["name"], tool_choice, response_format
('record_rating', {'type': 'function', 'function': {'name': 'record_rating'}}, None)
>>> fmt.request_parts("json_object")[2]["type"]
'json_object'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .._util import json_loads
from ..llm import ChatResult, InvalidReply
from ..reasoning import split_reasoning

__all__ = ["ReplyFormat", "REASONS_DESCRIPTION", "answer_text", "judge_reasoning", "reasons_text"]

REASONS_DESCRIPTION = (
    "Your reasoning, step by step, written before you decide: weigh the evidence first and only then give your answer."
)


@dataclass(frozen=True)
class ReplyFormat:
    """The JSON object a judge asks for, as a forced tool call or a response format, and how to read it back."""

    tool: str
    description: str
    schema: Mapping[str, Any]

    def request_parts(self, mode: str) -> tuple[Any, Any, Any]:
        """``(tools, tool_choice, response_format)`` for ``mode`` (``text``: all ``None``)."""
        if mode == "tools":
            return (
                [
                    {
                        "type": "function",
                        "function": {
                            "name": self.tool,
                            "description": self.description,
                            "parameters": dict(self.schema),
                        },
                    }
                ],
                {"type": "function", "function": {"name": self.tool}},
                None,
            )
        if mode == "json":
            return (
                None,
                None,
                {
                    "type": "json_schema",
                    "json_schema": {"name": self.tool, "strict": True, "schema": dict(self.schema)},
                },
            )
        if mode == "json_object":  # servers that know only json_object take the schema here (llama.cpp, vLLM)
            return None, None, {"type": "json_object", "schema": dict(self.schema)}
        return None, None, None

    def schema_text(self) -> str:
        """The schema as compact JSON, for the prompt of the ``json_object`` mode."""
        return json.dumps(self.schema, ensure_ascii=False, separators=(",", ":"))

    def read(self, result: ChatResult, mode: str) -> dict[str, Any]:
        """The reply's JSON object; raises :class:`InvalidReply` (the engine re-asks) when there is none."""
        if mode == "tools":
            if not result.tool_calls:
                raise InvalidReply(f"no tool call in the reply (content: {(result.content or '')[:200]!r})")
            call = result.tool_calls[0]
            if call.name != self.tool:
                raise InvalidReply(f"called tool {call.name!r} instead of {self.tool!r}")
            text = call.arguments
        else:
            content = answer_text(result.content)
            if not content.strip():
                raise InvalidReply("the reply has no text content")
            text = _strip_code_fence(content)
        try:
            parsed = json_loads(text)  # orjson where it can: a cache hit's arguments are read once, fast
        except ValueError as exc:
            raise InvalidReply(f"malformed JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise InvalidReply("the JSON is not an object")
        return parsed


def answer_text(content: str | None) -> str:
    """A reply's text without its reasoning (``<think>`` blocks and the like: :func:`scorers.reasoning.split_reasoning`),
    which is never read as the verdict: braces or a choice inside the thinking are not the answer. Text without
    reasoning is returned as it is; a reasoning block the reply never closed (cut off by ``max_tokens``) is an
    :class:`InvalidReply` (re-asked) that says so.

    >>> answer_text('<think>maybe {"choice": "No"}</think>\\n{"choice": "Yes"}')
    '{"choice": "Yes"}'
    >>> answer_text("<think>first, the")
    Traceback (most recent call last):
    ...
    scorers.llm.protocol.InvalidReply: the reply's reasoning was cut off before its answer (a reasoning block never closed): raise max_tokens
    """
    if not content:
        return ""
    split = split_reasoning(content)
    if split.incomplete:
        raise InvalidReply(
            "the reply's reasoning was cut off before its answer (a reasoning block never closed): raise max_tokens"
        )
    return split.answer


def judge_reasoning(result: ChatResult) -> str | None:
    """The judge's own reasoning in a reply, kept apart from its verdict: the provider's reasoning field
    (``ChatResult.reasoning``: ``reasoning_content``, a thinking block, a Responses reasoning summary), then the
    ``<think>`` blocks of its text (``None``: neither).

    >>> judge_reasoning(ChatResult("<think>polite, it thanks</think>Yes", (), "stop", "m"))
    'polite, it thanks'
    """
    tagged = split_reasoning(result.content).reasoning if result.content else None
    thoughts = [thought for thought in (result.reasoning, tagged) if thought]
    return "\n\n".join(thoughts) if thoughts else None


def _strip_code_fence(text: str) -> str:
    match = re.fullmatch(r"\s*```(?:json)?\s*(.*?)\s*```\s*", text, re.S)
    return match.group(1) if match else text


def reasons_text(value: Any) -> str | None:
    """The ``reasons`` of a reply as text (a list of steps is joined by lines), or ``None``."""
    if isinstance(value, list):
        value = "\n".join(map(str, value))
    return value if isinstance(value, str) else None
