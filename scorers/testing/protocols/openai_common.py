"""What OpenAI's chat completions and Responses APIs share: how a request asks for tools, JSON and logprobs (both
APIs' shapes read alike), and the shape of served log-probabilities.

>>> openai_ask({"tools": [{"type": "function", "name": "grade", "parameters": {"type": "object"}}]}).forced_tool
('grade', {'type': 'object'})
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from ..._util import is_int
from ..replies import Reply
from .base import Ask, ScriptedProtocol

__all__ = ["OpenAIProtocol", "openai_ask", "openai_messages", "served_logprobs"]


class OpenAIProtocol(ScriptedProtocol):
    """An OpenAI API a judge calls: the conversation in one field of the body, tools and formats read alike."""

    #: The body's field that holds the conversation.
    conversation: ClassVar[str]

    def messages(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return openai_messages(body.get(self.conversation))

    def ask(self, body: Mapping[str, Any]) -> Ask:
        return openai_ask(body)


def openai_ask(body: Mapping[str, Any]) -> Ask:
    """What a chat completions or Responses request asks for (either API's shape of tools and formats)."""
    json_format, schema = _response_format(body)
    include = body.get("include")
    return Ask(
        forced_tool=_forced_tool(body),
        json=json_format,
        schema=schema,
        logprobs=body.get("logprobs") is True
        or (isinstance(include, list) and "message.output_text.logprobs" in include),
        seed=body.get("seed"),
    )


def openai_messages(messages: Any) -> list[dict[str, Any]]:
    """A request's messages (chat ``messages``, Responses ``input``) as a list: a string is one user message."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return messages if isinstance(messages, list) else []


def _forced_tool(body: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """``(name, parameters schema)`` of the function tool the request asks for (both APIs' shapes), or None."""
    tools = [t for t in body.get("tools") or () if isinstance(t, dict) and t.get("type") == "function"]
    by_name = {}
    for tool in tools:
        function = tool["function"] if isinstance(tool.get("function"), dict) else tool  # chat | Responses
        by_name[str(function.get("name"))] = function.get("parameters") or {}
    if not by_name or body.get("tool_choice") == "none":
        return None
    choice = body.get("tool_choice")
    wanted = choice.get("function", choice).get("name") if isinstance(choice, dict) else None
    name = wanted if wanted in by_name else next(iter(by_name))
    return name, by_name[name]


def _response_format(body: Mapping[str, Any]) -> tuple[bool, Mapping[str, Any] | None]:
    """Whether a ``json_schema``/``json_object`` response format (Responses' ``text.format``, chat's
    ``response_format``) asks for JSON, and the schema it gives (None when it gives none)."""
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") not in ("json_schema", "json_object"):
        return False, None
    nested = fmt.get("json_schema")
    schema = nested.get("schema") if isinstance(nested, dict) else fmt.get("schema")
    return True, schema if isinstance(schema, dict) else None


def served_logprobs(reply: Reply, top: Any) -> list[dict[str, Any]]:
    """The reply's tokens in the shape both APIs use, each with its ``top`` most likely alternatives."""
    count = top if is_int(top) and top > 0 else 0
    tokens = reply.top_logprobs or ({(reply.arguments if reply.kind == "tool" else reply.content) or "": 0.0},)

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}

    served = []
    for alternatives in tokens:
        chosen = next(iter(alternatives))
        ranked = sorted(alternatives.items(), key=lambda pair: -pair[1])[:count]
        served.append({**entry(chosen, alternatives[chosen]), "top_logprobs": [entry(t, lp) for t, lp in ranked]})
    return served
