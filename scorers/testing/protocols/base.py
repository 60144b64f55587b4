"""The interface of a wire protocol the loopback server speaks, and the common form it reads requests into.

A protocol is stateless: it reads a request's JSON body and writes a reply's, so it is tested without a server.
:class:`ScriptedProtocol` (chat completions, the Responses API: the APIs a judge calls) answers with the server's
scripted :class:`~scorers.testing.Reply`; the server does the rest (rules, latency, faults, the request log).
:class:`ComputedProtocol` (embeddings, the legacy completions API) computes its answer from the request.

>>> from scorers.testing.protocols import ChatCompletionsAPI
>>> chat = ChatCompletionsAPI()
>>> body = {"model": "m", "messages": [{"role": "user", "content": "2+2?"}], "logprobs": True}
>>> chat.messages(body), chat.ask(body).logprobs, chat.invalid({"messages": "2+2?"})
([{'role': 'user', 'content': '2+2?'}], True, "body must be JSON with a 'messages' list")
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Protocol

from ..replies import Reply

__all__ = [
    "Ask",
    "ComputedProtocol",
    "CompletionsAnswerer",
    "ScriptedProtocol",
    "ServerSettings",
    "WireProtocol",
    "content_text",
    "word_count",
]


@dataclass(frozen=True)
class Ask:
    """What a generation request asks for, in the server's common form (read by
    :func:`~scorers.testing.auto_reply`, whatever the protocol)."""

    #: ``(name, parameters schema)`` of the function tool the request makes the model call, or None.
    forced_tool: tuple[str, Mapping[str, Any]] | None = None
    #: Whether the reply must be JSON (a ``json_schema`` or ``json_object`` response format).
    json: bool = False
    #: The JSON schema the response format gives, or None (none given, or no JSON asked).
    schema: Mapping[str, Any] | None = None
    #: Whether the request asks for the reply's log-probabilities.
    logprobs: bool = False
    #: The request's sampling seed, as sent (None when not given).
    seed: Any = None


class CompletionsAnswerer(Protocol):
    """What answers the legacy completions API (:class:`~scorers.testing.TextCompletions`)."""

    def answer(self, body: Any) -> tuple[int, dict[str, Any]]: ...


class ServerSettings(Protocol):
    """The server's settings a protocol reads (:class:`~scorers.testing.LoopbackLLM` has them)."""

    @property
    def logprobs(self) -> bool: ...

    @property
    def embedding_dim(self) -> int: ...

    @property
    def completions(self) -> CompletionsAnswerer: ...


class WireProtocol(ABC):
    """One API the server speaks: the paths it answers, how it reads a request, how it writes its errors.

    Subclass :class:`ScriptedProtocol` or :class:`ComputedProtocol`, not this class.
    """

    #: The API's name, :attr:`~scorers.testing.RecordedRequest.api` of its requests.
    name: ClassVar[str]
    #: The paths it answers to ``POST`` (aiohttp route patterns, e.g. ``"/v1/chat/completions"``).
    paths: ClassVar[tuple[str, ...]]

    def answers(self, path: str) -> bool:
        """Whether a request to ``path`` is one of this API's (override it for paths with variables)."""
        return path in self.paths

    def messages(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The conversation a request body holds, as chat messages (``{"role", "content"}``, the content a text
        or a list of parts with ``"text"``); ``[]`` for an API without one."""
        return []

    def ask(self, body: Mapping[str, Any]) -> Ask:
        """What a request body asks for beyond its messages (tools, a response format, logprobs)."""
        return Ask()

    def presented_key(self, headers: Mapping[str, str]) -> str | None:
        """The API key a request presents (its lower-cased ``headers``): OpenAI's ``Authorization: Bearer KEY``."""
        authorization = headers.get("authorization", "")
        return authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None

    def invalid_headers(self, headers: Mapping[str, str]) -> str | None:
        """Why a request's lower-cased ``headers`` cannot be answered (HTTP 400, e.g. a required version header
        missing), or None (OpenAI's APIs require none)."""
        return None

    def denied(self, method: str, url: str, headers: Mapping[str, str], body: bytes) -> tuple[int, str, str] | None:
        """Why a request's credentials are refused, as ``(HTTP status, message, error type)``, or None: a check
        beyond :meth:`presented_key` over the request as received (``url`` as sent, percent-escapes kept; lower-cased
        ``headers``; the raw ``body``), such as a signature's. None by default."""
        return None

    def client_env(self) -> dict[str, str]:
        """Environment variables a client of this API needs here besides the endpoint and key that
        :func:`~scorers.testing.loopback_env` sets (e.g. the test credentials a signed API checks)."""
        return {}

    def error(self, status: int, message: str, error_type: str, code: str | None) -> dict[str, Any]:
        """The JSON body of an error answered with HTTP ``status``: OpenAI's shape by default."""
        return {"error": {"message": message, "type": error_type, "param": None, "code": code}}

    def error_headers(self, status: int, error_type: str) -> dict[str, str]:
        """The headers of an error answered with HTTP ``status`` (besides ``Retry-After``): none by default."""
        return {}

    def model(self, path: str, body: Any) -> str | None:
        """The model a request names: its body's ``model`` by default (override it for a model in the path)."""
        return body.get("model") if isinstance(body, dict) else None


class ScriptedProtocol(WireProtocol):
    """An API answered by the server's scripted replies (a judge's API): the server checks the body with
    :meth:`invalid`, picks the :class:`~scorers.testing.Reply` (rules, then the default), waits its latency,
    serves faults (errors, hangs, drops, raw bodies) itself, and sends :meth:`render`'s body for the rest."""

    @abstractmethod
    def invalid(self, body: Any) -> str | None:
        """Why a request body cannot be answered (sent back with HTTP 400), or None when it can."""

    @abstractmethod
    def render(self, body: Mapping[str, Any], reply: Reply, server: ServerSettings) -> dict[str, Any]:
        """The JSON body that answers a valid request ``body`` with ``reply`` (a text, JSON or tool call)."""

    def usage(self, body: Mapping[str, Any], reply: Reply, choices: int = 1) -> tuple[int, int]:
        """``reply.usage``, else the words of the messages and of the reply (times the ``choices``)."""
        if reply.usage is not None:
            return reply.usage
        prompt = sum(word_count(content_text(m.get("content"))) for m in self.messages(body) if isinstance(m, dict))
        return prompt, word_count(reply.arguments if reply.kind == "tool" else reply.content or "") * choices


class ComputedProtocol(WireProtocol):
    """An API whose answer is computed from the request (scripted replies and faults do not apply)."""

    @abstractmethod
    def compute(self, body: Any, server: ServerSettings) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON body that answer a request ``body`` (which may be anything JSON, or None)."""


def content_text(content: Any) -> str:
    """A message's text: the content itself, or its parts' ``"text"`` joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def word_count(text: str) -> int:
    return len(text.split())
