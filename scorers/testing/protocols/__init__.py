"""The wire protocols the loopback server speaks, one module each, and :data:`PROTOCOLS`, their registration.

Adding one is a module with a :class:`ScriptedProtocol` (answered by the
server's scripted replies) or a :class:`ComputedProtocol` subclass, and its instance in :data:`PROTOCOLS`; the
package's docstring (:mod:`scorers.testing`) shows the interface at work.

>>> [(protocol.name, protocol.paths) for protocol in PROTOCOLS]  # doctest: +NORMALIZE_WHITESPACE
[('chat', ('/v1/chat/completions',)), ('responses', ('/v1/responses',)),
 ('completions', ('/v1/completions',)), ('embeddings', ('/v1/embeddings',)), ('anthropic', ('/v1/messages',)),
 ('gemini', ('/v1beta/models/{model:.+}:generateContent', '/v1/models/{model:.+}:generateContent')),
 ('bedrock', ('/model/{model_id}/converse',))]
"""

from __future__ import annotations

from .anthropic import AnthropicMessagesAPI
from .base import Ask, ComputedProtocol, ScriptedProtocol, ServerSettings, WireProtocol
from .bedrock import LOOPBACK_AWS_ACCESS_KEY_ID, LOOPBACK_AWS_SECRET_ACCESS_KEY, BedrockConverseAPI
from .chat import ChatCompletionsAPI
from .completions import CompletionsAPI
from .embeddings import EmbeddingsAPI
from .gemini import GenerateContentAPI
from .responses import ResponsesAPI

__all__ = [
    "PROTOCOLS",
    "AnthropicMessagesAPI",
    "Ask",
    "BedrockConverseAPI",
    "ChatCompletionsAPI",
    "CompletionsAPI",
    "ComputedProtocol",
    "EmbeddingsAPI",
    "GenerateContentAPI",
    "LOOPBACK_AWS_ACCESS_KEY_ID",
    "LOOPBACK_AWS_SECRET_ACCESS_KEY",
    "ResponsesAPI",
    "ScriptedProtocol",
    "ServerSettings",
    "WireProtocol",
    "protocol_for",
]

#: The protocols a :class:`~scorers.testing.LoopbackLLM` speaks by default; a new protocol is registered here.
PROTOCOLS: tuple[WireProtocol, ...] = (
    ChatCompletionsAPI(),
    ResponsesAPI(),
    CompletionsAPI(),
    EmbeddingsAPI(),
    AnthropicMessagesAPI(),
    GenerateContentAPI(),
    BedrockConverseAPI(),
)


def protocol_for(path: str, protocols: tuple[WireProtocol, ...] = PROTOCOLS) -> WireProtocol | None:
    """The protocol among ``protocols`` that answers ``path``, or None.

    >>> protocol_for("/v1/responses").name, protocol_for("/v1/models")
    ('responses', None)
    """
    return next((protocol for protocol in protocols if protocol.answers(path)), None)
