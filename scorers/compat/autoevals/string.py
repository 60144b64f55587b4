"""autoevals' ``Levenshtein`` and ``EmbeddingSimilarity``, computed by our scorers of those names.

>>> Levenshtein()("abc", "abd").score
0.6666666666666667
>>> LevenshteinScorer is Levenshtein
True
"""
from __future__ import annotations

import json
from typing import Any

from ...registry import get
from ._adapter import Adapter
from .oai import configured_client, get_default_embedding_model

__all__ = ["Levenshtein", "LevenshteinScorer", "EmbeddingSimilarity"]


class Levenshtein(Adapter):
    """``1 - distance / max(len)`` on code points; numbers are compared as their ``str``."""

    def __init__(self) -> None:
        self.scorer = get("Levenshtein")


LevenshteinScorer = Levenshtein


class EmbeddingSimilarity(Adapter):
    """Cosine similarity of OpenAI embeddings, rescaled by ``expected_min`` as autoevals does.

    Our :class:`scorers.embedding.EmbeddingSimilarity` with ``provider="openai"``. The model is
    ``model``, else :func:`~scorers.compat.autoevals.oai.init`'s embedding model, else
    ``text-embedding-ada-002``; the client is ``client``, else ``api_key``/``base_url``, else
    ``init``'s client, else ``OPENAI_API_KEY``/``OPENAI_BASE_URL``. Lists and dicts are sent as
    their JSON text (as autoevals does; our scorer reads a list of ``expected`` as several references).
    """

    def __init__(self, prefix: str = "", model: str | None = None, expected_min: float = 0.7,
                 api_key: str | None = None, base_url: str | None = None, client: Any = None) -> None:
        if client is None and api_key is None and base_url is None:
            client = configured_client()
        self.scorer = get("EmbeddingSimilarity", provider="openai", model=model or get_default_embedding_model(),
                          prefix=prefix, expected_min=expected_min, client=client, api_key=api_key, base_url=base_url)

    def _fields(self, output: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        fields = super()._fields(output, kwargs)
        for name in ("output", "expected"):
            if isinstance(fields.get(name), (dict, list)):
                fields[name] = json.dumps(fields[name])
        return fields
