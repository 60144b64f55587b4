"""The embeddings API: deterministic fake vectors, as floats or base64."""

from __future__ import annotations

import base64
import struct

import openai
import pytest

from scorers.testing import fake_embedding

from ..openai_clients import client


def _decode(embedding):
    if isinstance(embedding, str):  # an explicit encoding_format="base64" is handed back undecoded
        raw = base64.b64decode(embedding)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return embedding


@pytest.mark.parametrize("encoding", [openai.omit, "float", "base64"])
def test_embeddings_are_deterministic(llm_server, encoding):
    result = client(llm_server).embeddings.create(
        model="text-embedding-3-small", input=["a", "b", "a"], encoding_format=encoding
    )
    vectors = [_decode(d.embedding) for d in result.data]
    assert vectors[0] == pytest.approx(vectors[2]) and vectors[0] != pytest.approx(vectors[1])
    assert vectors[0] == pytest.approx(fake_embedding("a", 16), abs=1e-6)
    assert sum(v * v for v in vectors[1]) == pytest.approx(1.0, abs=1e-5)
