"""ROUGE scorers: upstream vectors, exact equality with rouge-score itself, tokenizers, registry, errors."""

from __future__ import annotations

import json
import math
import random
from importlib import metadata
from pathlib import Path

import pytest

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")

import scorers  # noqa: E402
import scorers.text.rouge  # noqa: E402,F401  (registers ROUGE and its variants)
from scorers.errors import ConfigError, ScorerInputError  # noqa: E402
from scorers.text.rouge import REFERENCE, ROUGE  # noqa: E402

VECTORS = json.loads((Path(__file__).parent / "vectors" / "rouge_score_0.1.2.json").read_text(encoding="utf-8"))
PLACES = VECTORS["places"]

_PIECES = [
    "the",
    "The",
    "cats",
    "cat",
    "running",
    "runs",
    "ran",
    "generously",
    "happily",
    "meeting",
    "friends",
    "don't",
    "U.S.",
    "3.5",
    "a-b",
    "x_y",
    "café",
    "très",
    "naïve",
    "İstanbul",
    "我们",
    "今天散步",
    "Привет",
    "мир",
    "😀",
    "...",
    "!",
    "?",
    "\t",
    "\n",
    "\n\n",
    "  ",
    "a",
    "1,000",
    "e-mail",
    "(hi)",
    "ＡＢＣ",
]


def generated_rows(n: int, seed: int) -> list[tuple[str, list[str]]]:
    """Seeded (output, references) rows: Unicode, punctuation-only, empty, multi-line, multi-reference, long."""
    rng = random.Random(seed)

    def text(max_words: int) -> str:
        return " ".join(rng.choice(_PIECES) for _ in range(rng.randint(0, max_words)))

    rows = [
        ("", [""]),
        ("", ["a b"]),
        ("a b", [""]),
        ("... !!", ["?"]),
        ("我们今天散步", ["我们今天散步"]),
        ("the cat\nsat down", ["the cat sat\ndown", "cat", ""]),
    ]
    while len(rows) < n:
        out = text(rng.choice((5, 25, 100)))
        refs = [text(rng.choice((5, 25, 100))) for _ in range(rng.choice((1, 1, 2, 3)))]
        if rng.random() < 0.4:  # an edited copy, so longer n-grams and subsequences match
            refs[0] = " ".join(w for w in out.split(" ") if rng.random() > 0.2)
        rows.append((out, refs))
    return rows


ROWS = generated_rows(300, seed=11)
OUTPUTS = [r[0] for r in ROWS]
EXPECTEDS = [r[1] for r in ROWS]


def batch(scorer, outputs, expecteds):
    """``scorer.score_batch`` over rows built from two columns."""
    return scorer.score_batch([{"output": o, "expected": e} for o, e in zip(outputs, expecteds)])


@pytest.mark.parametrize("rouge_type, use_stemmer, target, prediction, prf", VECTORS["single"])
def test_upstream_vectors(rouge_type, use_stemmer, target, prediction, prf):
    score = ROUGE(rouge_type=rouge_type, use_stemmer=use_stemmer)(output=prediction, expected=target)
    got = (score.metadata["precision"], score.metadata["recall"], score.metadata["fmeasure"])
    assert got == pytest.approx(tuple(prf), abs=10**-PLACES)
    assert score.score == pytest.approx(prf[2], abs=10**-PLACES)


@pytest.mark.parametrize("rouge_type, targets, prediction, prf", VECTORS["multi"])
def test_upstream_multi_reference_vectors(rouge_type, targets, prediction, prf):
    score = ROUGE(rouge_type=rouge_type)(output=prediction, expected=targets)
    for key, value in zip(("precision", "recall", "fmeasure"), prf):
        if value is not None:
            assert score.metadata[key] == pytest.approx(value, abs=10**-PLACES)


@pytest.mark.parametrize("text, tokens", VECTORS["stemmed_tokens"])
def test_stemmed_tokens_vector(text, tokens):
    scorer = ROUGE(rouge_type="rouge1", use_stemmer=True)
    ids = scorer._cache.ids_of_words(scorer._prepared(text).split())
    vocab = {i: t for t, i in scorer._cache.vocab.items()}
    assert [vocab[i] for i in ids] == tokens


@pytest.mark.parametrize("use_stemmer", [False, True], ids=["plain", "stemmed"])
@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"])
def test_equals_rouge_score_on_generated_rows(rouge_type, use_stemmer):
    reference = rouge_scorer.RougeScorer([rouge_type], use_stemmer=use_stemmer)
    scores = batch(ROUGE(rouge_type=rouge_type, use_stemmer=use_stemmer), OUTPUTS, EXPECTEDS)
    for (output, refs), score in zip(ROWS, scores):
        native = reference.score_multi(refs, output)[rouge_type]
        got = (score.metadata["precision"], score.metadata["recall"], score.metadata["fmeasure"])
        assert got == tuple(native), (output, refs)
        assert score.score == min(1.0, native.fmeasure) and not math.isnan(score.score)


def test_single_call_equals_batch_and_best_reference_is_reported():
    scorer = ROUGE(rouge_type="rouge1")
    assert [scorer(output=o, expected=e).to_dict() for o, e in ROWS[:40]] == [
        s.to_dict() for s in batch(scorer, OUTPUTS[:40], EXPECTEDS[:40])
    ]
    score = scorer(output="the cat sat", expected=["a dog", "the cat sat", "the cat sat"])
    assert score.metadata["best_reference"] == 1 and score.score == 1.0 and score.metadata["nrefs"] == 3


def test_default_tokenizer_keeps_rouge_score_behaviour_on_non_ascii():
    assert ROUGE(rouge_type="rouge1")(output="我们今天散步", expected="我们今天散步").score == 0.0
    assert ROUGE(rouge_type="rouge1")(output="café", expected="caf").score == 1.0


def test_unicode_tokenizer():
    unicode_rouge = ROUGE(rouge_type="rouge1", tokenizer="unicode")
    assert unicode_rouge(output="我们今天散步", expected="我们今天散步").score == 1.0
    assert unicode_rouge(output="我们今天散步", expected="我们明天散步").score == pytest.approx(5 / 6)
    assert unicode_rouge(output="café", expected="caf").score == 0.0
    assert unicode_rouge(output="Café", expected="cafe\u0301").score == 1.0  # NFKC: composed = decomposed
    assert unicode_rouge(output="Привет, мир!", expected="привет мир").score == 1.0
    stemmed = ROUGE(rouge_type="rouge1", tokenizer="unicode", use_stemmer=True)
    assert stemmed(output="cats running", expected="cat runs").score == 1.0
    assert stemmed(output="Straßen", expected="straß").score == 0.0  # non-ASCII words are not stemmed


def test_registered_variants():
    for name, rouge_type in (
        ("ROUGE-1", "rouge1"),
        ("ROUGE-2", "rouge2"),
        ("ROUGE-L", "rougeL"),
        ("ROUGE-Lsum", "rougeLsum"),
        ("rougeL", "rougeL"),
    ):
        scorer = scorers.get(name)
        assert scorer.rouge_type == rouge_type
    assert scorers.get("ROUGE-1").name == "ROUGE-1"
    assert scorers.get("ROUGE-2", use_stemmer=True).use_stemmer


def test_signature():
    sig = ROUGE(rouge_type="rouge2", use_stemmer=True, tokenizer="unicode")(output="a", expected="a").metadata[
        "signature"
    ]
    assert {k: sig[k] for k in ("rouge_type", "use_stemmer", "tokenizer", "reference")} == {
        "rouge_type": "rouge2",
        "use_stemmer": True,
        "tokenizer": "unicode",
        "reference": REFERENCE,
    }
    assert sig["nltk_version"] == metadata.version("nltk")
    assert REFERENCE == f"rouge-score=={metadata.version('rouge-score')}"


@pytest.mark.parametrize(
    "settings", [{"rouge_type": "rouge0"}, {"rouge_type": "rougeX"}, {"rouge_type": 1}, {"tokenizer": "nltk"}]
)
def test_bad_settings_raise_config_error(settings):
    with pytest.raises(ConfigError):
        ROUGE(**settings)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"output": "a"}, "expected"),
        ({"expected": "a"}, "output"),
        ({"output": "a", "expected": []}, "expected"),
        ({"output": "a", "expected": [None]}, "expected"),
    ],
)
def test_bad_input_raises_scorer_input_error(kwargs, field):
    with pytest.raises(ScorerInputError) as info:
        ROUGE()(**kwargs)
    assert info.value.field == field


def test_one_scorer_shared_by_threads_gives_the_serial_numbers():
    from concurrent.futures import ThreadPoolExecutor

    shared = ROUGE(rouge_type="rouge2", use_stemmer=True)
    chunks = [(OUTPUTS[i::4], EXPECTEDS[i::4]) for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda c: [s.metadata["fmeasure"] for s in batch(shared, *c)], chunks * 3))
    serial = [
        [s.metadata["fmeasure"] for s in batch(ROUGE(rouge_type="rouge2", use_stemmer=True), *c)] for c in chunks * 3
    ]
    assert threaded == serial


ROUGE_TYPES = [f"rouge{n}" for n in range(0, 13)] + ["rouge01", "rouge99", "rougeL", "rougeLsum", "rougeLSum", "rouge"]


@pytest.mark.parametrize("rouge_type", ROUGE_TYPES)
def test_accepts_exactly_the_rouge_types_rouge_score_accepts(rouge_type):
    try:
        expected = rouge_scorer.RougeScorer([rouge_type]).score("a b c", "a b d")[rouge_type].fmeasure
    except ValueError:  # rouge-score refuses it (rouge0, rouge10, ...)
        with pytest.raises(ConfigError, match=r"unknown rouge_type .*use rouge1 to rouge9 \(rouge-score's range\)"):
            ROUGE(rouge_type=rouge_type)
        return
    assert ROUGE(rouge_type=rouge_type)(output="a b d", expected="a b c").score == expected


@pytest.mark.parametrize(
    "name,limit", [("ROUGE-L", 100_000), ("ROUGE-Lsum", 20_000), ("ROUGE-1", None), ("ROUGE-2", None)]
)
def test_the_lcs_types_bound_their_texts_by_default(name, limit):
    scorer = scorers.get(name)
    assert scorer.max_chars == limit
    assert scorers.get(name, max_chars=None).max_chars is None
    if limit is not None:
        long = "word " * (limit // 5) + "x"
        with pytest.raises(
            ScorerInputError,
            match=rf"{name}: field 'expected' has {limit + 1:,} characters \(reference 1\), "
            rf"more than max_chars={limit:,}",
        ):
            scorer(output="word", expected=["word", long])


def test_max_chars_refuses_a_row_and_leaves_the_others_and_the_numbers_alone():
    small = ROUGE(rouge_type="rougeLsum", max_chars=10)
    rows = [{"output": "the cat", "expected": "the cat sat down"}, {"output": "the cat", "expected": "the cat"}]
    outcomes = small.score_batch(rows)
    assert isinstance(outcomes[0], ScorerInputError) and outcomes[0].field == "expected"
    assert outcomes[1].score == ROUGE(rouge_type="rougeLsum")(**rows[1]).score == 1.0
    assert small.signature() == ROUGE(rouge_type="rougeLsum").signature()


def test_lone_surrogates_score_as_rouge_score_scores_them():
    output, expected = "the c\ud800at sat \udfff on", "the c\ud800at is \udfff here"
    for rouge_type in ("rouge1", "rougeL", "rougeLsum"):
        reference = rouge_scorer.RougeScorer([rouge_type]).score(expected, output)[rouge_type].fmeasure
        assert ROUGE(rouge_type=rouge_type)(output=output, expected=expected).score == reference
