"""autoevals' LiteLLM clients: not provided; point ``init(client=openai.OpenAI(base_url=...))`` at a LiteLLM proxy.

>>> LiteLLMClient().chat
Traceback (most recent call last):
...
scorers.compat.autoevals._adapter.NotSupportedError: autoevals' LiteLLMClient is not provided by scorers; use init(client=openai.OpenAI(base_url=<your LiteLLM proxy>))
"""

from __future__ import annotations

from ._adapter import Unsupported

__all__ = ["LiteLLMClient", "AsyncLiteLLMClient"]


class LiteLLMClient(Unsupported):
    """Not provided."""

    instead = "init(client=openai.OpenAI(base_url=<your LiteLLM proxy>))"


class AsyncLiteLLMClient(LiteLLMClient):
    """Not provided."""
