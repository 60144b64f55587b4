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
    """``1 - distance / max(len)`` on code points; values that are not text are compared as their ``str()``
    (as autoevals does: ``[1, 2]`` is the text ``"[1, 2]"``); ``None`` is refused."""

    def __init__(self) -> None:
        self.scorer = get("Levenshtein")

    def _fields(self, output: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {
            name: value if value is None or isinstance(value, str) or name not in ("output", "expected") else str(value)
            for name, value in super()._fields(output, kwargs).items()
        }


LevenshteinScorer = Levenshtein


class EmbeddingSimilarity(Adapter):
    """Cosine similarity of OpenAI embeddings, rescaled by ``expected_min`` as autoevals does.

    Our :class:`scorers.embedding.EmbeddingSimilarity` with ``provider="openai"``. The model is
    ``model``, else :func:`~scorers.compat.autoevals.oai.init`'s embedding model, else
    ``text-embedding-ada-002``; the client is ``client``, else ``api_key``/``base_url``, else
    ``init``'s client, else ``OPENAI_API_KEY``/``OPENAI_BASE_URL``. Lists and dicts are sent as
    their JSON text, other values as their ``str()`` (as autoevals does; our scorer reads a list of
    ``expected`` as several references).
    """

    def __init__(
        self,
        prefix: str = "",
        model: str | None = None,
        expected_min: float = 0.7,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
    ) -> None:
        if client is None and api_key is None and base_url is None:
            client = configured_client()
        self.scorer = get(
            "EmbeddingSimilarity",
            provider="openai",
            model=model or get_default_embedding_model(),
            prefix=prefix,
            expected_min=expected_min,
            client=client,
            api_key=api_key,
            base_url=base_url,
        )

    def _fields(self, output: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        fields = super()._fields(output, kwargs)
        for name in ("output", "expected"):
            value = fields.get(name)
            if isinstance(value, (dict, list)):
                fields[name] = json.dumps(value)
            elif value is not None and not isinstance(value, str):
                fields[name] = str(value)
        return fields
