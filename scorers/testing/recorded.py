"""A request the loopback server received, and its reading in the server's common form.

>>> request = RecordedRequest("POST", "/v1/responses", {}, {"model": "m", "input": "2+2?"}, 0.0)
>>> request.api, request.messages, request.last_user_message, request.model
('responses', [{'role': 'user', 'content': '2+2?'}], '2+2?', 'm')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .protocols import protocol_for
from .protocols.base import Ask, WireProtocol, content_text

__all__ = ["RecordedRequest"]


@dataclass
class RecordedRequest:
    """A request the server received: method, path, lower-cased headers and the parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    #: HTTP status the server answered with (``0`` for a dropped connection or a hang).
    status: int = 0
    #: The query string's parameters (the last value of a repeated one).
    query: dict[str, str] = field(default_factory=dict)
    #: The body's size in bytes, as received.
    size: int = 0
    #: The protocol that answered it (None: the registered one whose path it is, if any).
    protocol: WireProtocol | None = field(default=None, repr=False, compare=False)

    @property
    def _protocol(self) -> WireProtocol | None:
        return self.protocol if self.protocol is not None else protocol_for(self.path)

    @property
    def api(self) -> str | None:
        """The name of the API the path is (``"chat"``, ``"responses"``, ``"completions"``, ``"embeddings"``:
        :attr:`~scorers.testing.protocols.WireProtocol.name`); ``None`` for other paths."""
        protocol = self._protocol
        return protocol.name if protocol is not None else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation, as chat messages: the chat ``messages``, the Responses ``input`` (a string input as
        one user message); ``[]`` for an API without one."""
        protocol = self._protocol
        return protocol.messages(self.body) if protocol is not None and isinstance(self.body, dict) else []

    @property
    def ask(self) -> Ask:
        """What the request asks for beyond its messages (a forced tool, JSON, logprobs), whatever its API."""
        protocol = self._protocol
        return protocol.ask(self.body) if protocol is not None and isinstance(self.body, dict) else Ask()

    @property
    def last_user_message(self) -> str:
        """Text of the last ``user`` message (content parts joined), ``""`` if none."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return content_text(message.get("content"))
        return ""

    @property
    def model(self) -> str | None:
        """The model the request names (in its body, or in its path for an API that puts it there)."""
        protocol = self._protocol
        if protocol is not None:
            return protocol.model(self.path, self.body)
        return self.body.get("model") if isinstance(self.body, dict) else None
