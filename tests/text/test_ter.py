"""TER's step budget: a row whose edit search would take longer is refused; below it the number is sacrebleu's."""

from __future__ import annotations

import random

import pytest
from bounded import run_bounded

sacrebleu = pytest.importorskip("sacrebleu")

from scorers.errors import ConfigError, ScorerInputError  # noqa: E402
from scorers.text.ter import MAX_TER_STEPS, TER  # noqa: E402


def few_words(length: int, seed: int) -> str:
    """``length`` characters of words drawn from a 4-word vocabulary: TER's costliest kind of text."""
    rng = random.Random(seed)
    text = ""
    while len(text) < length:
        text += rng.choice("abcd") + " "
    return text[:length]


def ter_of(output: str, expected: str, **params: object) -> str:
    """TER's number for the row, or its ScorerInputError's message (run bounded, in a child)."""
    try:
        return repr(TER(**params)(output=output, expected=expected).metadata["ter"])
    except ScorerInputError as exc:
        return str(exc)


@pytest.mark.slow
def test_a_row_past_the_step_budget_is_refused_within_its_bound():
    """Two 2,000-character texts over 4 words took 48 s within max_chars; now a refusal once max_steps are spent
    (the default, 10 million, about 8 s; a tenth of it here, to keep the test short)."""
    assert TER().max_steps == MAX_TER_STEPS == 10_000_000
    output, expected = few_words(2_000, 1), few_words(2_000, 2)
    message = run_bounded(ter_of, output, expected, max_steps=1_000_000, timeout_s=60, memory_mb=1_000)
    assert message.startswith(
        "TER: field 'output' and its reference(s) took more than max_steps=1,000,000 steps of TER's edit search"
    ), message
    assert "-p TER.max_steps=... (null: no limit)" in message


def test_below_the_budget_the_number_is_sacrebleus():
    # 40-character texts over 4 words: the search tries its 1,000 shift candidates (about 150,000 steps)
    rows = [(few_words(40, seed), few_words(40, seed + 100)) for seed in range(2)]
    for output, expected in rows:
        reference = sacrebleu.sentence_ter(output, [expected]).score
        assert TER()(output=output, expected=expected).metadata["ter"] == reference
        assert TER(max_steps=None)(output=output, expected=expected).metadata["ter"] == reference
        assert TER(max_steps=200_000)(output=output, expected=expected).metadata["ter"] == reference


def test_a_refused_row_leaves_the_rest_of_the_batch_scored():
    rows = [
        {"output": "the cat sat", "expected": ["the cat sat down"]},
        {"output": few_words(200, 1), "expected": [few_words(200, 2), few_words(200, 3)]},
        {"output": "a b", "expected": ["a b"]},
    ]
    results = TER(max_steps=50_000).score_batch(rows)
    assert results[0].metadata["ter"] == 25.0 and results[2].metadata["ter"] == 0.0
    assert isinstance(results[1], ScorerInputError) and "max_steps=50,000" in str(results[1])
    assert TER(max_steps=50_000).signature() == TER().signature()  # a bound, not a setting of the number


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_max_steps_must_be_a_positive_integer_or_none(value):
    with pytest.raises(ConfigError, match="TER: max_steps must be a positive integer or None"):
        TER(max_steps=value)
