"""The wire protocols the engine speaks, one module each, registered in :data:`PROTOCOLS` by their ``api`` name.

A plugin package adds one with an entry point in the ``scorers.protocols`` group (a :class:`WireProtocol`
subclass); see :mod:`scorers.llm.protocols.base` for the interface.

>>> PROTOCOLS.names()[:2], wire("chat").path("gpt-4o-mini")
(['chat', 'responses'], '/chat/completions')
"""

from __future__ import annotations

from typing import Any

from ...plugins import Registry
from .base import Capabilities, Endpoint, HTTPReply, ReplyRefused, Request, Settings, Tokens, WireProtocol

__all__ = [
    "PROTOCOLS",
    "Capabilities",
    "Endpoint",
    "HTTPReply",
    "ReplyRefused",
    "Request",
    "Settings",
    "Tokens",
    "WireProtocol",
    "wire",
]


def _protocol(entry_point: Any, loaded: Any) -> WireProtocol:
    if isinstance(loaded, type) and issubclass(loaded, WireProtocol):
        loaded = loaded()
    if not isinstance(loaded, WireProtocol):
        raise TypeError(f"{entry_point.value} is not a scorers.llm.protocols.WireProtocol")
    return loaded


#: The protocols by ``api`` name.
PROTOCOLS: Registry[WireProtocol] = Registry("wire protocol", group="scorers.protocols", accept=_protocol)


def _register_builtins() -> None:
    from .anthropic import AnthropicProtocol
    from .bedrock import BedrockProtocol
    from .chat import ChatAPI
    from .gemini import GeminiProtocol
    from .responses import ResponsesAPI

    for protocol in (ChatAPI(), ResponsesAPI(), AnthropicProtocol(), GeminiProtocol(), BedrockProtocol()):
        PROTOCOLS.register(protocol.name, protocol)


_register_builtins()


def wire(api: str) -> WireProtocol:
    """The protocol ``api`` names (a :class:`~scorers.errors.ConfigError` listing them for an unknown name)."""
    return PROTOCOLS.get(api)
