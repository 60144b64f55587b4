"""A classifier's choice probabilities estimated from its samples (issue 27), over real HTTP against LoopbackLLM on
chat and on Anthropic's Messages API (no log-probabilities, no seed on the wire): each choice's share of the
samples and its Wilson interval (checked against statsmodels), beside the metadata samples always had."""

from __future__ import annotations

import math
from typing import Any

import pytest

import scorers
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, Reply

from .conftest import wilson_reference

FACTS = {"input": "What is the capital of France?", "expected": "Paris", "output": "Paris is the capital."}
CHOICES = ("A", "B", "C", "D", "E")  # Factuality's
#: Shared vectors: the choice each sample (seed 0, 1, ...) picks.
VECTORS = [["C", "D", "C", "A", "C"], ["B", "B"], ["E", "A", "B", "C", "D", "E", "E", "A"]]


def factuality(**settings: Any) -> Any:
    return scorers.get("Factuality", engine=LLMEngine(max_reasks=0), **settings)


@pytest.mark.parametrize("picked", VECTORS)
def test_choice_probabilities_are_the_shares_of_the_samples(llm_server, script_samples, picked: list[str]) -> None:
    script_samples([Reply.choice(choice, reasons="why") for choice in picked])
    k = len(picked)
    meta = factuality(samples=k, temperature=0.7)(**FACTS).metadata
    assert meta["choice_probabilities"] == {c: pytest.approx(picked.count(c) / k) for c in CHOICES}
    assert list(meta["choice_probabilities"]) == list(CHOICES)  # every choice, in the template's order
    assert math.isclose(math.fsum(meta["choice_probabilities"].values()), 1.0)
    assert meta["temperature"] == 0.7
    for choice in CHOICES:
        stated = meta["choice_intervals"][choice]
        reference = wilson_reference(picked.count(choice), k)
        assert (stated["low"], stated["high"]) == pytest.approx(reference, abs=1e-12)
        assert (stated["level"], stated["n"], stated["method"]) == (0.95, k, "wilson")
    # what samples always gave, as it was
    assert sorted(meta["choices"]) == sorted(picked) and meta["aggregate"] == "mean"
    top = max(picked.count(c) for c in CHOICES)
    assert meta["agreement"] == pytest.approx(top / k) and meta["cached_samples"] == 0
    assert llm_server.request_count == k


def test_one_judgment_has_no_probabilities(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("C", reasons="why")
    meta = factuality()(**FACTS).metadata
    assert not {"choice_probabilities", "choice_intervals", "temperature"} & set(meta)


def test_the_metadata_samples_had_is_unchanged_beside_the_new_keys(llm_env: LoopbackLLM) -> None:
    """The keys of a sampled classifier's metadata: those it had (in their order, with their values), and three
    added before the signature."""
    llm_env.default = lambda request: Reply.choice(["C", "D", "C"][request.body["seed"]], reasons="why")
    meta = factuality(samples=3, temperature=0.7, aggregate="majority")(**FACTS).metadata
    had = ["choice", "rationale", "response_mode", "model", "sent", "usage", "latency_s", "attempts", "reasks"]
    had += ["cached", "choices", "agreement", "aggregate", "cached_samples"]
    added = ["choice_probabilities", "choice_intervals", "temperature"]
    assert list(meta) == [*had, *added, "signature"]
    assert (meta["choice"], meta["choices"], meta["agreement"]) == ("C", ["C", "D", "C"], pytest.approx(2 / 3))
