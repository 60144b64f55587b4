"""GPTScore against a real completions endpoint (llama-cpp-python + Gemma 3 270M): structure, never values.

llama-cpp-python's server answers ``/v1/completions`` with ``echo`` and ``logprobs`` (the prompt's tokens,
``text_offset`` and ``token_logprobs``, null for the first) when the model keeps every position's logits
(``--logits_all``, its default). The base model's probabilities mean nothing here; the test checks the
shape: a score in [0, 1] that is exp of the average log-probability, over the output's tokens.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from scorers.judges.gptscore import GPTScore
from scorers.llm import LLMEngine

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def test_gptscore_reads_the_output_tokens_log_probabilities(real_llm_server: Any) -> None:
    # each prompt token costs llama-cpp-python a sort of the 262k-token vocabulary: a short prompt
    engine = LLMEngine(
        base_url=real_llm_server.base_url, api_key="local", model=real_llm_server.model, cache=False, timeout=300
    )
    scorer = GPTScore(template="Answer {aspect}.\nQ: {input}\nA: {output}", aspect="briefly", engine=engine)
    score = scorer(input="What is 2 + 2?", output="It is 4.")
    metadata = score.metadata
    assert score.score is not None and 0 < score.score <= 1
    assert math.isfinite(metadata["avg_logprob"]) and score.score == pytest.approx(math.exp(metadata["avg_logprob"]))
    assert metadata["token_count"] == len(metadata["tokens"]) >= 3
    assert "".join(token for token, _ in metadata["tokens"]).strip() == "It is 4."
    assert all(isinstance(logprob, float) for _, logprob in metadata["tokens"])
    assert metadata["model"] == real_llm_server.model and metadata["sent"]["echo"] is True
    assert metadata["usage"]["requests"] == 1 and metadata["usage"]["prompt_tokens"] > metadata["token_count"]
