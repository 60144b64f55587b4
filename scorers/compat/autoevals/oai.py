"""autoevals' ``init`` and default models, over :func:`scorers.llm.configure`.

``init(client=..., default_model=...)`` sets the client and the judge model of every
LLM judge (ours too, through ``configure(client=, model=)``); the default embedding model
is read by :class:`~scorers.compat.autoevals.string.EmbeddingSimilarity`. The settings are
process-wide, as ``configure``'s are (autoevals keeps them per context, so threads do not
see them). autoevals' client plumbing (``prepare_openai``, ``LLMClient``, the Braintrust
gateway and wrappers, OpenAI SDK v0) is not provided: those names raise when used.

>>> init(default_model={"completion": "gpt-4o", "embedding": "text-embedding-3-small"})
>>> get_default_model(), get_default_embedding_model()
('gpt-4o', 'text-embedding-3-small')
>>> init()
>>> get_default_model(), get_default_embedding_model()
('gpt-5-mini', 'text-embedding-ada-002')
"""

from __future__ import annotations

import threading
from typing import Any, Mapping

from ...errors import ConfigError
from ...llm import configure
from ._adapter import Unsupported, unsupported_function

__all__ = [
    "init",
    "get_default_model",
    "get_default_embedding_model",
    "DEFAULT_COMPLETION_MODEL",
    "DEFAULT_EMBEDDING_MODEL",
    "GATEWAY_URL",
    "LLMClient",
    "OpenAIV0Module",
    "OpenAIV1Module",
    "prepare_openai",
    "get_openai_wrappers",
]

#: autoevals' judge model when ``init`` names none.
DEFAULT_COMPLETION_MODEL = "gpt-5-mini"
#: autoevals' embedding model when ``init`` names none.
DEFAULT_EMBEDDING_MODEL = "text-embedding-ada-002"
#: autoevals' Braintrust gateway address (``scorers`` never sends requests there unless given it as a base URL).
GATEWAY_URL = "https://gateway.braintrust.dev"

_lock = threading.Lock()
_models: dict[str, str | None] = {"completion": None, "embedding": None}
_client: list[Any] = [None]

# Set to None by autoevals' own test fixtures (monkeypatch.setattr), which expect them to exist.
_named_wrapper: Any = None
_wrap_openai: Any = None
_openai_module: Any = None


def init(client: Any = None, is_async: bool = False, default_model: str | Mapping[str, str] | None = None) -> None:
    """Set (or, with no arguments, reset) the judges' client and default models.

    ``client`` is an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client; either serves both
    ``eval`` and ``eval_async``, so ``is_async`` changes nothing. ``default_model`` is a judge
    model name (the embedding model goes back to its default) or a mapping with ``completion``
    and/or ``embedding`` (only those given change); ``None`` resets both.
    """
    if not isinstance(is_async, bool):
        raise ConfigError(f"init(): is_async must be True or False, got {is_async!r}")
    if isinstance(default_model, str) or default_model is None:
        models = {"completion": default_model, "embedding": None}
    elif isinstance(default_model, Mapping):
        unknown = set(default_model) - {"completion", "embedding"}
        if unknown:
            raise ConfigError(f"init(): default_model takes the keys completion and embedding, got {sorted(unknown)}")
        models = {**_models, **default_model}
    else:
        raise ConfigError(f"init(): default_model must be a model name or a mapping, got {default_model!r}")
    with _lock:
        configure(client=client, model=models["completion"])
        _models.update(models)
        _client[0] = client


def get_default_model() -> str:
    """The judge model set by :func:`init`, else autoevals' default (``gpt-5-mini``)."""
    with _lock:
        return _models["completion"] or DEFAULT_COMPLETION_MODEL


def get_default_embedding_model() -> str:
    """The embedding model set by :func:`init`, else autoevals' default (``text-embedding-ada-002``)."""
    with _lock:
        return _models["embedding"] or DEFAULT_EMBEDDING_MODEL


def configured_client() -> Any:
    """The client given to :func:`init` (``None`` when none)."""
    with _lock:
        return _client[0]


_INSTEAD = "init(client=openai.OpenAI(...)) or scorers.configure(client=...)"


class LLMClient(Unsupported):
    """autoevals' client wrapper; give :func:`init` an ``openai`` client instead."""

    instead = _INSTEAD


class OpenAIV0Module(Unsupported):
    """The pre-1.0 ``openai`` module interface (not supported: openai>=1.40 is required)."""

    instead = _INSTEAD


class _OpenAIModule(type):
    def __getattr__(cls, name: str) -> Any:
        import openai

        return getattr(openai, name)


class OpenAIV1Module(metaclass=_OpenAIModule):
    """The ``openai`` module as a type: ``OpenAIV1Module.OpenAI`` is ``openai.OpenAI`` (for type casts)."""


prepare_openai = unsupported_function("prepare_openai", _INSTEAD)
get_openai_wrappers = unsupported_function("get_openai_wrappers", "braintrust.wrap_openai on your own client")
