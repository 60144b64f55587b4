"""The LLM engine behind the judges: requests, cache, retries, concurrency and usage.

>>> from scorers.llm import ChatRequest, LLMEngine, configure
>>> configure(model="gpt-4o-mini", max_concurrency=16)   # process-wide defaults
>>> configure(reset=True)

Modules: :mod:`~scorers.llm.protocol` (requests and replies of the chat and Responses APIs),
:mod:`~scorers.llm.transport` (HTTP clients, retries, typed HTTP errors), :mod:`~scorers.llm.engine`
(cache, re-asks, deadline: :class:`LLMEngine`), :mod:`~scorers.llm.cache` (SQLite and Redis),
:mod:`~scorers.llm.config` (settings and environment variables), :mod:`~scorers.llm.usage`.
Importing this package does not import ``openai``.
"""

from __future__ import annotations

from . import engine
from .cache import CacheError, LLMCache, RedisCache, cache_key
from .config import DEFAULT_DEADLINE, DEFAULT_MODEL, LLMSettings, configure, default_cache_path, is_reasoning_model

# The engine's names (requests, replies, errors, LLMEngine, complete): those its __all__ lists, added to ours below.
from .engine import *  # noqa: F403
from .usage import ModelUsage, Usage

# The engine's names first, then the settings, cache and usage.
__all__: list[str] = []
__all__ += engine.__all__
__all__ += [
    "configure",
    "LLMSettings",
    "DEFAULT_MODEL",
    "DEFAULT_DEADLINE",
    "is_reasoning_model",
    "default_cache_path",
    "LLMCache",
    "RedisCache",
    "CacheError",
    "cache_key",
    "Usage",
    "ModelUsage",
]
