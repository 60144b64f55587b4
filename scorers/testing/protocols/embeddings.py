"""OpenAI's embeddings API (``POST /v1/embeddings``): deterministic fake vectors, the same for the same text.

>>> class Settings:
...     logprobs, embedding_dim, completions = True, 4, None
>>> status, reply = EmbeddingsAPI().compute({"input": ["a", "b"], "dimensions": 3}, Settings())
>>> status, [len(item["embedding"]) for item in reply["data"]], reply["usage"]
(200, [3, 3], {'prompt_tokens': 2, 'total_tokens': 2})
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from typing import Any, ClassVar

from .base import ComputedProtocol, ServerSettings, word_count

__all__ = ["EmbeddingsAPI", "fake_embedding"]


def fake_embedding(text: str, dim: int = 16) -> list[float]:
    """A deterministic unit vector for ``text`` (equal texts give equal vectors).

    >>> fake_embedding("a", 4) == fake_embedding("a", 4)
    True
    """
    values: list[float] = []
    counter = 0
    while len(values) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend(b / 127.5 - 1.0 for b in digest)
        counter += 1
    values = values[:dim]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


class EmbeddingsAPI(ComputedProtocol):
    """Embeddings: ``input`` (a text, a list of texts, a list of token ids or a list of such lists) in; one
    :func:`fake_embedding` per input out, of ``dimensions`` (else the server's ``embedding_dim``) floats, or
    base64 of little-endian float32 with ``encoding_format: "base64"``. Token ids are embedded as their JSON."""

    name: ClassVar[str] = "embeddings"
    paths: ClassVar[tuple[str, ...]] = ("/v1/embeddings",)

    def compute(self, body: Any, server: ServerSettings) -> tuple[int, dict[str, Any]]:
        body = body if isinstance(body, dict) else {}
        texts = _inputs(body.get("input"))
        if not isinstance(texts, list) or not texts:
            message = "'input' must be a string or a non-empty list"
            return 400, self.error(400, message, "invalid_request_error", "invalid_request_error")
        dim = int(body.get("dimensions") or server.embedding_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vector = fake_embedding(json.dumps(text) if not isinstance(text, str) else text, dim)
            encoded: Any = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii") if as_base64 else vector
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(word_count(t) if isinstance(t, str) else len(t) for t in texts)
        return 200, {
            "object": "list",
            "data": data,
            "model": body.get("model") or "loopback-embedding",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _inputs(inputs: Any) -> Any:
    """The request's inputs as a list: one text or one list of token ids is a list of one."""
    one = isinstance(inputs, (str, int)) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int))
    return [inputs] if one else inputs
