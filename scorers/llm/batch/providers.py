"""The batch APIs by the protocols they serve: :func:`batch_api`."""

from __future__ import annotations

from ...errors import ConfigError
from .anthropic import AnthropicBatches
from .core import BatchAPI
from .gemini import GeminiBatches
from .openai import OpenAIBatches

__all__ = ["BATCH_APIS", "batch_api"]

#: Every provider's batch API (a new one is a module and its instance here).
BATCH_APIS: tuple[BatchAPI, ...] = (OpenAIBatches(), AnthropicBatches(), GeminiBatches())


def batch_api(api: str) -> BatchAPI:
    """The batch API that takes requests of protocol ``api``; a ConfigError (before any request) for one without.

    >>> batch_api("chat").name
    'openai'
    >>> batch_api("completions")
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: run --batch: the completions API has no batch API here (it serves the api settings anthropic, chat, gemini, responses); run this judge without --batch
    """
    for provider in BATCH_APIS:
        if api in provider.apis:
            return provider
    served = sorted(name for provider in BATCH_APIS for name in provider.apis)
    raise ConfigError(
        f"run --batch: the {api} API has no batch API here (it serves the api settings {', '.join(served)}); "
        "run this judge without --batch"
    )
