"""sacrebleu scorers: upstream vectors, exact equality with sacrebleu itself, corpus figures, signatures, errors."""

from __future__ import annotations

import json
import math
import random
import string
import sys
import types
from pathlib import Path

import pytest

sacrebleu = pytest.importorskip("sacrebleu")

import scorers  # noqa: E402
from scorers.errors import ConfigError, ScorerInputError  # noqa: E402
from scorers.text.bleu import BLEU  # noqa: E402
from scorers.text.chrf import ChrF  # noqa: E402
from scorers.text.ter import TER  # noqa: E402

VECTORS = json.loads((Path(__file__).parent / "vectors" / "sacrebleu_2.6.0.json").read_text(encoding="utf-8"))

_PIECES = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "Dog",
    "didn't",
    "U.S.",
    "3.5%",
    "1,000",
    "e-mail",
    "(hi)",
    "&quot;",
    "&amp;",
    "<skipped>",
    "café",
    "naïve",
    "Straße",
    "我们",
    "今天",
    "散步。",
    "Привет",
    "мир",
    "😀",
    "...",
    "!!",
    "-",
    "—",
    "«",
    "»",
    ",",
    ".",
    "?",
    "\t",
    "\n",
    "-\n",
    "\xa0",
    "  ",
    "'s",
    "A.",
    "x,y",
    "5.",
    ".5",
]


def generated_rows(
    n: int, seed: int, lengths: tuple[int, ...] = (6, 30, 120), nrefs: tuple[int, ...] = (1, 1, 2, 4)
) -> list[tuple[str, list[str]]]:
    """Seeded (output, references) rows: Unicode, punctuation-only, empty, multi-reference and long texts."""
    rng = random.Random(seed)

    def text(max_words: int) -> str:
        return " ".join(rng.choice(_PIECES) for _ in range(rng.randint(0, max_words)))

    rows = [
        ("", [""]),
        ("", ["a b"]),
        ("a b", [""]),
        ("... !!", ["?"]),
        ("hello world", ["hello world"]),
        ("我们今天去公园散步了。", ["我们今天在公园里散步。"]),
        ("the cat", ["the cat", "a cat", ""]),
    ]
    while len(rows) < n:
        hyp = text(rng.choice(lengths))
        refs = [text(rng.choice(lengths)) for _ in range(rng.choice(nrefs))]
        if rng.random() < 0.4:  # an edited copy, so higher n-grams match too
            words = hyp.split(" ")
            refs[0] = " ".join(w for w in words if rng.random() > 0.2)
        rows.append((hyp, refs))
    return rows


ROWS = generated_rows(300, seed=7)
OUTPUTS = [r[0] for r in ROWS]
EXPECTEDS = [r[1] for r in ROWS]


def batch(scorer, outputs, expecteds):
    """``scorer.score_batch`` over rows built from two columns."""
    return scorer.score_batch([{"output": o, "expected": e} for o, e in zip(outputs, expecteds)])


# ------------------------------------------------------------------ upstream vectors
@pytest.mark.parametrize(
    "smooth_method, smooth_value, lowercase, tokenize, expected",
    VECTORS["sentence_bleu"]["cases"] + VECTORS["sentence_bleu_zero"]["cases"],
)
def test_sentence_bleu_upstream_vectors(smooth_method, smooth_value, lowercase, tokenize, expected):
    table = VECTORS["sentence_bleu"] if expected else VECTORS["sentence_bleu_zero"]
    scorer = BLEU(smooth_method=smooth_method, smooth_value=smooth_value, lowercase=lowercase, tokenize=tokenize)
    score = scorer(output=table["hypothesis"], expected=[table["reference"]])
    assert abs(score.metadata["bleu"] - expected) < table["tolerance"]
    assert score.score == pytest.approx(expected / 100, abs=table["tolerance"] / 100)


def _corpus(scorer, outputs, expecteds):
    aggregator = scorer.aggregator()
    for score in batch(scorer, outputs, expecteds):
        aggregator.add(score)
    return aggregator.result()


@pytest.mark.parametrize("settings, expected", VECTORS["corpus_bleu"]["cases"])
def test_corpus_bleu_upstream_vectors(settings, expected):
    table = VECTORS["corpus_bleu"]
    expecteds = [list(refs) for refs in zip(*table["references"])]
    result = _corpus(BLEU(**settings), table["hypotheses"], expecteds)
    assert abs(result["corpus_bleu"] - expected) < table["tolerance"]
    assert result["corpus_score"] == pytest.approx(expected / 100)
    empty = _corpus(BLEU(**settings), ["", "", ""], expecteds)
    assert empty["corpus_bleu"] == table["empty_hypotheses_score"]


@pytest.mark.parametrize("order, expected", VECTORS["corpus_bleu_max_ngram_order"])
def test_corpus_bleu_max_ngram_order_vectors(order, expected):
    table = VECTORS["corpus_bleu"]
    result = _corpus(BLEU(max_ngram_order=order), table["hypotheses"], [list(r) for r in zip(*table["references"])])
    assert f"{result['corpus_bleu']:.2f}" == expected


@pytest.mark.parametrize("hypotheses, references, expected", VECTORS["raw_corpus_bleu_floor_0.01"])
def test_raw_bleu_vectors(hypotheses, references, expected):
    scorer = BLEU(tokenize="none", smooth_method="floor", smooth_value=0.01)
    scores = batch(scorer, hypotheses, [[ref] for ref in references[0]])
    if len(scores) == 1:  # one segment: raw_corpus_bleu (effective order on) is the sentence score
        assert scores[0].score == pytest.approx(expected, abs=1e-8)
    else:
        assert all(s.score == expected for s in scores)


@pytest.mark.parametrize("hypothesis, references, expected", VECTORS["chrf_sentence_eps"]["cases"])
def test_chrf_sentence_upstream_vectors(hypothesis, references, expected):
    score = ChrF(eps_smoothing=True)(output=hypothesis, expected=references)
    assert abs(score.metadata["chrf"] - expected) < VECTORS["chrf_sentence_eps"]["tolerance"]


@pytest.mark.parametrize(
    "table, settings",
    [
        ("chrf_corpus_beta3_eps", {"eps_smoothing": True}),
        ("chrf_corpus_beta3_effective_order", {}),
        ("chrf_corpus_beta3_keep_whitespace", {"whitespace": True}),
    ],
)
def test_chrf_corpus_upstream_vectors(table, settings):
    for hypotheses, references, expected in VECTORS[table]:
        result = _corpus(ChrF(beta=3, **settings), hypotheses, references)
        assert abs(result["corpus_chrf"] - expected) < 1e-4, (hypotheses, references)


@pytest.mark.parametrize("hypotheses, references, expected", VECTORS["ter_corpus"]["cases"])
def test_ter_corpus_upstream_vectors(hypotheses, references, expected):
    result = _corpus(TER(), hypotheses, references)
    assert abs(result["corpus_ter"] - 100 * expected) < VECTORS["ter_corpus"]["tolerance"]
    assert result["corpus_score"] == max(0.0, 1 - result["corpus_ter"] / 100)


# ------------------------------------------------------------- equality with sacrebleu
BLEU_SETTINGS = [
    {},
    {"tokenize": "intl"},
    {"tokenize": "zh"},
    {"tokenize": "char"},
    {"tokenize": "none"},
    {"lowercase": True},
    {"smooth_method": "floor"},
    {"smooth_method": "add-k", "smooth_value": 2},
    {"smooth_method": "none"},
    {"effective_order": False},
    {"max_ngram_order": 2},
]


@pytest.mark.parametrize(
    "settings", BLEU_SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default"
)
def test_bleu_equals_sacrebleu_on_generated_rows(settings):
    reference = sacrebleu.BLEU(**{"effective_order": True, **settings})
    scores = batch(BLEU(**settings), OUTPUTS, EXPECTEDS)
    for (hyp, refs), score in zip(ROWS, scores):
        native = reference.sentence_score(hyp, refs)
        assert (score.metadata["bleu"], score.metadata["bp"], score.metadata["precisions"]) == (
            native.score,
            native.bp,
            native.precisions,
        ), (hyp, refs)
        assert (score.metadata["sys_len"], score.metadata["ref_len"]) == (native.sys_len, native.ref_len)
        assert score.score == min(1.0, native.score / 100) and not math.isnan(score.score)


def test_bleu_single_call_equals_batch():
    scorer = BLEU()
    assert [scorer(output=o, expected=e).to_dict() for o, e in ROWS[:40]] == [
        s.to_dict() for s in batch(scorer, OUTPUTS[:40], EXPECTEDS[:40])
    ]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"word_order": 2},
        {"lowercase": True, "whitespace": True},
        {"eps_smoothing": True, "beta": 3},
        {"char_order": 4, "word_order": 1},
    ],
)
def test_chrf_equals_sacrebleu_on_generated_rows(settings):
    reference = sacrebleu.CHRF(**settings)
    scores = batch(ChrF(**settings), OUTPUTS, EXPECTEDS)
    for (hyp, refs), score in zip(ROWS, scores):
        assert score.metadata["chrf"] == reference.sentence_score(hyp, refs).score, (hyp, refs)


@pytest.mark.parametrize(
    "settings",
    [{}, {"normalized": True, "case_sensitive": True}, {"no_punct": True, "asian_support": True, "normalized": True}],
)
@pytest.mark.slow
def test_ter_equals_sacrebleu_on_generated_rows(settings):
    rows = [row for row in ROWS if len(" ".join([row[0], *row[1]])) < 400][:150]  # TER's search is slow on long texts
    reference = sacrebleu.TER(**settings)
    scores = batch(TER(**settings), [r[0] for r in rows], [r[1] for r in rows])
    for (hyp, refs), score in zip(rows, scores):
        native = reference.sentence_score(hyp, refs)
        assert score.metadata["ter"] == native.score, (hyp, refs)
        assert score.score == max(0.0, 1 - native.score / 100)


# ---------------------------------------------------------------------- corpus figures
def _reference_streams(expecteds: list[list[str]]) -> list[list[str | None]]:
    width = max(len(e) for e in expecteds)
    return [[e[i] if i < len(e) else None for e in expecteds] for i in range(width)]


@pytest.mark.parametrize("settings", [{}, {"tokenize": "intl", "lowercase": True}, {"smooth_method": "floor"}])
def test_aggregator_corpus_bleu_equals_sacrebleu_corpus_bleu(settings):
    result = _corpus(BLEU(**settings), OUTPUTS, EXPECTEDS)
    native = sacrebleu.corpus_bleu(OUTPUTS, _reference_streams(EXPECTEDS), **settings)
    assert result["corpus_bleu"] == native.score
    assert result["corpus_details"]["bp"] == native.bp
    metric = sacrebleu.BLEU(**settings)
    assert metric.corpus_score(OUTPUTS, _reference_streams(EXPECTEDS)).score == native.score
    assert result["corpus_signature"] == metric.get_signature().format()
    assert result["corpus_signature"].startswith("nrefs:var|") and "|eff:no|" in result["corpus_signature"]
    assert result["n"] == len(OUTPUTS) and result["corpus_rows"] == len(OUTPUTS)
    assert result["mean"] == pytest.approx(
        sum(s.score for s in batch(BLEU(**settings), OUTPUTS, EXPECTEDS)) / len(OUTPUTS)
    )


def test_corpus_bleu_signature_matches_sacrebleu_with_fixed_reference_count():
    outputs, expecteds = OUTPUTS[:50], [[e[0], e[0] + " x"] for e in EXPECTEDS[:50]]
    result = _corpus(BLEU(), outputs, expecteds)
    metric = sacrebleu.BLEU()
    native = metric.corpus_score(outputs, _reference_streams(expecteds))
    assert result["corpus_bleu"] == native.score
    assert result["corpus_signature"] == metric.get_signature().format()


@pytest.mark.slow
def test_corpus_chrf_and_ter_equal_sacrebleu():
    chrf = _corpus(ChrF(word_order=2), OUTPUTS, EXPECTEDS)
    assert chrf["corpus_chrf"] == sacrebleu.corpus_chrf(OUTPUTS, _reference_streams(EXPECTEDS), word_order=2).score
    rows = ROWS[:60]
    ter = _corpus(TER(), [r[0] for r in rows], [r[1] for r in rows])
    native = sacrebleu.corpus_ter([r[0] for r in rows], _reference_streams([r[1] for r in rows]))
    assert ter["corpus_ter"] == native.score and ter["corpus_score"] == max(0.0, 1 - native.score / 100)


def test_empty_aggregator_reports_no_corpus_figure():
    result = BLEU().aggregator().result()
    assert result["corpus_bleu"] is None and result["n"] == 0


# ------------------------------------------------------- row statistics, shards, merging
#: Short rows, so that TER's edit search stays quick on a few hundred of them, with 1, 2 or 4 references:
#: sacrebleu sums TER's average reference lengths as floats in row order, which is exact (and so equal to our
#: exact sum) when every average is a multiple of 1/4; see test_corpus_ter_with_three_references_is_the_exact_sum.
SHORT_ROWS = [row for row in generated_rows(320, seed=23, lengths=(4, 12, 25)) if len(row[1]) in (1, 2, 4)]


def _aggregate(scorer, scores):
    aggregator = scorer.aggregator()
    for score in scores:
        aggregator.add(score)
    return aggregator


@pytest.mark.parametrize(
    "name, key, native",
    [
        ("BLEU", "corpus_bleu", lambda o, r: sacrebleu.corpus_bleu(o, r)),
        ("chrF", "corpus_chrf", lambda o, r: sacrebleu.corpus_chrf(o, r)),
        ("chrF++", "corpus_chrf", lambda o, r: sacrebleu.corpus_chrf(o, r, word_order=2)),
        ("TER", "corpus_ter", lambda o, r: sacrebleu.corpus_ter(o, r)),
    ],
)
def test_merged_shards_give_sacrebleus_corpus_figure_exactly(name, key, native):
    rows = SHORT_ROWS if name == "TER" else ROWS
    outputs, expecteds = [r[0] for r in rows], [r[1] for r in rows]
    scorer = scorers.get(name)
    scores = batch(scorer, outputs, expecteds)
    one_pass = _aggregate(scorer, scores).result()
    thirds = [
        scores[: len(scores) // 3],
        scores[len(scores) // 3 : 2 * len(scores) // 3],
        scores[2 * len(scores) // 3 :],
    ]
    shards = [_aggregate(scorers.get(name), shard) for shard in thirds]
    merged = shards[0].merge(shards[1]).merge(shards[2]).result()
    reversed_merge = [_aggregate(scorers.get(name), shard) for shard in reversed(thirds)]
    merged_backwards = reversed_merge[0].merge(reversed_merge[1]).merge(reversed_merge[2]).result()
    reference = native(outputs, _reference_streams(expecteds))
    assert merged[key] == one_pass[key] == merged_backwards[key] == reference.score
    assert merged == one_pass == merged_backwards  # every figure: mean, stdev, corpus details, signature
    assert merged["corpus_rows"] == len(rows) and merged["n"] == len(rows)
    assert merged["corpus_signature"].startswith("nrefs:var|")


def test_row_statistics_are_in_score_stats_not_in_metadata():
    for name in ("BLEU", "chrF", "chrF++", "TER"):
        score = scorers.get(name)(output="the cat sat", expected=["the cat sat down", "a cat"])
        assert "stats" not in score.metadata and score.stats is not None
        assert score.stats[-2:] == (2, 4)  # the reference count and its square
    bleu = BLEU()(output="the cat sat on the mat", expected="the cat sat on a mat")
    assert bleu.stats == (6, 6, 5, 3, 2, 1, 6, 5, 4, 3, 1, 1)
    ter = TER()(output="the cat sat", expected="the cat sat down")
    assert ter.stats == (1, 4, 1, 1) and all(type(v) is int for v in ter.stats)  # integers where exact
    assert TER()(output="a", expected=["a b", "a b c d"]).stats == (1, 3, 2, 4)
    assert TER()(output="a", expected=["a b", "a b c d", "a"]).stats[1] == 7 / 3


def test_corpus_figure_survives_results_files():
    """Scores written as JSON and read back (a resumed run) give the same corpus figure."""
    scores = batch(BLEU(), OUTPUTS, EXPECTEDS)
    reread = [scorers.Score.from_dict(json.loads(s.to_json())) for s in scores]
    assert _aggregate(BLEU(), reread).result() == _aggregate(BLEU(), scores).result()


def test_corpus_signature_counts_references_exactly():
    outputs = ["a b", "c d", "e f"]
    same = _aggregate(BLEU(), batch(BLEU(), outputs, [["a b", "x"]] * 3)).result()
    assert same["corpus_signature"].startswith("nrefs:2|")
    mixed = _aggregate(BLEU(), batch(BLEU(), outputs, [["a"], ["a", "b", "c"], ["a", "b"]])).result()
    assert mixed["corpus_signature"].startswith("nrefs:var|")  # mean 2 references, but not all rows have 2


def test_corpus_ter_with_three_references_is_the_exact_sum():
    """sacrebleu rounds its float sum of average reference lengths; ours is exact (within a few ulps of it)."""
    rows = generated_rows(200, seed=5, lengths=(4, 12, 25), nrefs=(3,))
    outputs, expecteds = [r[0] for r in rows], [r[1] for r in rows]
    scores = batch(TER(), outputs, expecteds)
    ours = _aggregate(TER(), scores).result()
    from fractions import Fraction

    exact_length = sum(Fraction(s.stats[1]) for s in scores)
    assert ours["corpus_details"]["ref_length"] == float(exact_length)
    native = sacrebleu.corpus_ter(outputs, _reference_streams(expecteds))
    assert ours["corpus_ter"] == pytest.approx(native.score, rel=1e-12)


# ------------------------------------------------------------- sacrebleu's private parts
def test_fallbacks_of_sacrebleus_private_parts_give_identical_numbers():
    from sacrebleu.metrics.chrf import CHRF

    from scorers.text._sacrebleu import chrf_f_score, ter_from_stats

    assert frozenset(string.punctuation) == frozenset(CHRF._PUNCTS)
    for settings in ({}, {"word_order": 2}, {"eps_smoothing": True, "beta": 3}, {"char_order": 4, "word_order": 1}):
        scorer = ChrF(**settings)
        metric = sacrebleu.CHRF(**settings)
        stats = [s.stats[:-2] for s in batch(scorer, OUTPUTS, EXPECTEDS)]
        totals = [sum(column) for column in zip(*stats)]
        order = scorer.char_order + scorer.word_order
        for row in [*stats, totals, [0] * (3 * order)]:
            assert chrf_f_score(
                row, order=order, beta=scorer.beta, eps_smoothing=scorer.eps_smoothing
            ) == metric._compute_f_score(row)
    metric = sacrebleu.TER()
    ter_stats = [[0, 0], [3, 0], [0, 5], [2, 3.5], [7, 10 / 3], [12345, 678.25]]
    for stats in ter_stats:
        ours, theirs = ter_from_stats(stats), metric._compute_score_from_stats(stats)
        assert (ours.score, ours.num_edits, ours.ref_length) == (theirs.score, theirs.num_edits, theirs.ref_length)


@pytest.mark.parametrize("private", ["_compute_f_score", "_PUNCTS"])
def test_chrf_warns_and_keeps_its_numbers_when_a_private_part_is_gone(private, monkeypatch):
    import warnings

    from sacrebleu.metrics.chrf import CHRF

    rows = ROWS[:120]
    reference = [sacrebleu.sentence_chrf(h, refs, word_order=2).score for h, refs in rows]
    corpus = sacrebleu.corpus_chrf([r[0] for r in rows], _reference_streams([r[1] for r in rows]), word_order=2)
    monkeypatch.delattr(CHRF, private)  # as if a sacrebleu release had renamed it
    with pytest.warns(RuntimeWarning, match=f"no CHRF.{private}"):
        scorer = ChrF(word_order=2)
        scores = batch(scorer, [r[0] for r in rows], [r[1] for r in rows])
    assert [s.metadata["chrf"] for s in scores] == reference
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fallback is chosen once per scorer
        assert _aggregate(scorer, scores).result()["corpus_chrf"] == corpus.score


def test_corpus_ter_warns_and_keeps_its_number_when_the_private_part_is_gone(monkeypatch):
    from sacrebleu.metrics.ter import TER as SacreTER

    rows = SHORT_ROWS[:80]
    scores = batch(TER(normalized=True), [r[0] for r in rows], [r[1] for r in rows])
    corpus = sacrebleu.corpus_ter([r[0] for r in rows], _reference_streams([r[1] for r in rows]), normalized=True)
    monkeypatch.delattr(SacreTER, "_compute_score_from_stats")  # (sacrebleu's own scoring needs it: rows first)
    with pytest.warns(RuntimeWarning, match="no TER._compute_score_from_stats"):
        result = _aggregate(TER(normalized=True), scores).result()
    assert (result["corpus_ter"], result["corpus_details"]["num_edits"], result["corpus_details"]["ref_length"]) == (
        corpus.score,
        corpus.num_edits,
        corpus.ref_length,
    )


# -------------------------------------------------------- behaviour, signature, registry
def test_sentence_defaults_do_not_zero_short_outputs():
    assert BLEU()(output="hello world", expected="hello world").score == 1.0
    assert BLEU(effective_order=False)(output="hello world", expected="hello world").score == 0.0
    assert BLEU()(output="", expected="hello").score == 0.0
    assert BLEU()(output="hello", expected="").score == 0.0


def test_signature_holds_every_setting():
    score = BLEU(tokenize="intl", smooth_method="floor", smooth_value=0.2, lowercase=True)(
        output="a b c", expected=["a b c", "a b d"]
    )
    sig = score.metadata["signature"]
    assert sig["scorer"] == "BLEU" and sig["sacrebleu_version"] == sacrebleu.__version__
    assert {
        k: sig[k]
        for k in ("tokenize", "smooth_method", "smooth_value", "lowercase", "effective_order", "max_ngram_order")
    } == {
        "tokenize": "intl",
        "smooth_method": "floor",
        "smooth_value": 0.2,
        "lowercase": True,
        "effective_order": True,
        "max_ngram_order": 4,
    }
    assert (
        score.metadata["sacrebleu_signature"]
        == f"nrefs:2|case:lc|eff:yes|tok:intl|smooth:floor[0.20]|version:{sacrebleu.__version__}"
    )
    assert (
        ChrF(word_order=2)(output="a", expected="a").metadata["sacrebleu_signature"]
        == f"nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:{sacrebleu.__version__}"
    )
    assert (
        TER()(output="a", expected="a").metadata["sacrebleu_signature"]
        == f"nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:{sacrebleu.__version__}"
    )


def test_registry_names():
    assert scorers.get("chrF++").word_order == 2 and scorers.get("chrF++").name == "chrF++"
    assert isinstance(scorers.get("sacrebleu"), BLEU) and isinstance(scorers.get("ter"), TER)
    assert scorers.get("chrF").word_order == 0


def test_ter_score_mapping():
    score = TER()(output="the cat sat", expected="the cat sat down")
    assert score.metadata["ter"] == 25.0 and score.score == 0.75
    assert TER()(output="a b c d e", expected="x").score == 0.0  # TER 500 is floored at 0


@pytest.mark.parametrize(
    "settings",
    [
        {"tokenize": "bogus"},
        {"smooth_method": "bogus"},
        {"smooth_method": "exp", "smooth_value": 0.1},
        {"smooth_method": "floor", "smooth_value": -1},
        {"max_ngram_order": 0},
    ],
)
def test_bad_settings_raise_config_error(settings):
    with pytest.raises(ConfigError):
        BLEU(**settings)


def test_chrf_bad_settings_raise_config_error():
    with pytest.raises(ConfigError):
        ChrF(char_order=0, word_order=0)
    with pytest.raises(ConfigError):
        ChrF(beta=-1)


def test_sentencepiece_tokenizers_raise_instead_of_downloading(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # not installed
    with pytest.raises(ConfigError, match="sentencepiece"):
        BLEU(tokenize="flores200")
    monkeypatch.setitem(sys.modules, "sentencepiece", types.ModuleType("sentencepiece"))  # installed, no model
    from sacrebleu.tokenizers import tokenizer_spm

    monkeypatch.setattr(tokenizer_spm, "SACREBLEU_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match="download"):
        BLEU(tokenize="flores101")


def test_mecab_tokenizers_raise_config_error_when_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "MeCab", None)
    monkeypatch.setitem(sys.modules, "mecab_ko", None)
    for name in ("ja-mecab", "ko-mecab"):
        with pytest.raises(ConfigError, match="sacrebleu\\[(ja|ko)\\]"):
            BLEU(tokenize=name)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"output": "a"}, "expected"),
        ({"expected": "a"}, "output"),
        ({"output": "a", "expected": []}, "expected"),
        ({"output": "a", "expected": ["a", None]}, "expected"),
        ({"output": ["a"], "expected": "a"}, "output"),
    ],
)
@pytest.mark.parametrize("scorer", [BLEU, ChrF, TER])
def test_bad_input_raises_scorer_input_error(scorer, kwargs, field):
    with pytest.raises(ScorerInputError) as info:
        scorer()(**kwargs)
    assert info.value.field == field


def test_text_holding_the_batch_separator_word_is_scored_like_sacrebleu():
    rows = [("a \x00 b", ["a \x00 b c"]), ("x", ["x y"]), ("\x00", ["\x00"])]
    scores = batch(BLEU(), [r[0] for r in rows], [r[1] for r in rows])
    assert [s.metadata["bleu"] for s in scores] == [sacrebleu.sentence_bleu(h, refs).score for h, refs in rows]


def test_clipped_ngram_matches_equal_counter_arithmetic():
    from collections import Counter

    import numpy as np

    from scorers.text._ngrams import clipped_ngram_matches, concat_ids

    rng = random.Random(3)
    hyps = [[rng.randrange(6) for _ in range(rng.randrange(12))] for _ in range(60)]
    owner = [i for i in range(60) for _ in range(rng.randrange(1, 4))]
    refs = [[rng.randrange(6) for _ in range(rng.randrange(12))] for _ in owner]

    def grams(seq, n):
        return Counter(tuple(seq[i : i + n]) for i in range(len(seq) - n + 1))

    got = clipped_ngram_matches(*concat_ids(hyps), *concat_ids(refs), np.array(owner), 4)
    for i, hyp in enumerate(hyps):
        for n in range(1, 5):
            best = Counter()
            for ref, o in zip(refs, owner):
                if o == i:
                    best |= grams(ref, n)  # max count over references
            assert got[i, n - 1] == sum((grams(hyp, n) & best).values())


@pytest.mark.slow
def test_ter_worker_processes_are_the_callers_and_give_the_serial_numbers(tmp_path):
    """TER(processes=N): workers from the forkserver (this process runs threads), reused, stopped by close(),
    by the with block and by collection; none by default, none nested in a worker; the numbers are sacrebleu's."""
    import os
    import subprocess
    import textwrap

    script = tmp_path / "guarded.py"
    script.write_text(
        textwrap.dedent("""
        import gc, multiprocessing, threading
        from concurrent.futures import ProcessPoolExecutor
        import sacrebleu
        from scorers.text import ter

        outputs = [f"w{i % 7} the cat sat on mat number {i}" for i in range(80)]
        expecteds = [f"the cat w{i % 5} sat on the mat {i + 1}" for i in range(80)]
        rows = [{"output": o, "expected": e} for o, e in zip(outputs, expecteds)]

        def in_a_worker(_):  # a worker process (e.g. of the runner's workers) does not start workers of its own
            scorer = ter.TER(processes=2)
            scorer.score_batch(rows)
            return "_pool" not in vars(scorer) or not scorer._pool.started

        if __name__ == "__main__":
            stop = threading.Event()
            threading.Thread(target=stop.wait).start()  # a multi-threaded caller
            expected = [sacrebleu.sentence_ter(h, [r]).score for h, r in zip(outputs, expecteds)]
            assert len(rows) >= ter.TER_PARALLEL_MIN_ROWS
            default = ter.TER()
            assert [s.metadata["ter"] for s in default.score_batch(rows)] == expected
            assert "_pool" not in vars(default), "a default TER made a pool"
            with ter.TER(processes=2) as scorer:
                assert [s.metadata["ter"] for s in scorer.score_batch(rows)] == expected
                executor = scorer._pool._executor
                assert executor._mp_context.get_start_method() == "forkserver"
                assert [s.metadata["ter"] for s in scorer.score_batch(rows)] == expected
                assert scorer._pool._executor is executor, "the workers were not reused"
                processes = list(executor._processes.values())
                assert len(processes) == 2
                assert scorer(output=outputs[0], expected=expecteds[0]).metadata["ter"] == expected[0]
            assert not scorer._pool.started and not any(p.is_alive() for p in processes), "with did not stop them"
            assert [s.metadata["ter"] for s in scorer.score_batch(rows)] == expected  # started again
            processes = list(scorer._pool._executor._processes.values())
            del scorer
            gc.collect()
            for p in processes:
                p.join(30)
            assert not any(p.is_alive() for p in processes), "collecting the scorer did not stop its workers"
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver")) as outer:
                assert list(outer.map(in_a_worker, [0])) == [True], "a worker started workers of its own"
            stop.set()
            print("ok")
    """)
    )
    root = str(Path(__file__).resolve().parents[2])  # a script's folder, not the cwd, heads sys.path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=root, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_ter_processes_is_a_positive_integer_outside_the_signature():
    assert TER(processes=3).processes == 3 and TER().processes == 1
    assert TER(processes=3).signature() == TER().signature()
    for bad in (0, -1, 2.0, True, None):
        with pytest.raises(ConfigError, match="processes"):
            TER(processes=bad)


def test_ter_closes_without_ever_starting_workers():
    scorer = TER(processes=2)
    scorer.close()
    with scorer:
        assert scorer(output="a b", expected="a c").metadata["ter"] == 50.0  # one row: no workers
    assert "_pool" not in vars(scorer) or not scorer._pool.started


def test_text_modules_register_no_exit_hook_and_fork_nothing():
    import ast

    import scorers.text

    for path in sorted(Path(scorers.text.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        assert "atexit" not in imported, path.name
        assert '"fork"' not in path.read_text(encoding="utf-8"), path.name


def test_old_import_paths_still_work():
    from scorers.text import _sacrebleu, bleu, chrf, ter

    assert (bleu.ChrF, bleu.TER, bleu.sacrebleu_private) == (chrf.ChrF, ter.TER, _sacrebleu.sacrebleu_private)
    assert type(scorers.get("chrF++")) is chrf.ChrF and type(scorers.get("TER")) is ter.TER


def test_one_scorer_shared_by_threads_gives_the_serial_numbers():
    from concurrent.futures import ThreadPoolExecutor

    shared = BLEU()
    chunks = [(OUTPUTS[i::4], EXPECTEDS[i::4]) for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda c: [s.metadata["bleu"] for s in batch(shared, *c)], chunks * 3))
    serial = [[s.metadata["bleu"] for s in batch(BLEU(), *c)] for c in chunks * 3]
    assert threaded == serial


SURROGATES = [
    ("the c\ud800at sat \udfff on", ["the c\ud800at is \udfff here"]),
    ("\ud800", ["\ud800"]),
    ("a\udfffb", ["ab", "\udfff"]),
    ("x", ["\ud800\udc00"]),
]  # a pair of surrogates, not joined


@pytest.mark.parametrize("word_order", [0, 2])
def test_chrf_scores_lone_surrogates_as_sacrebleu_does(word_order):
    metric = ChrF(word_order=word_order)
    rows = [{"output": o, "expected": refs} for o, refs in SURROGATES]
    expected = [sacrebleu.sentence_chrf(o, refs, word_order=word_order).score for o, refs in SURROGATES]
    assert [metric(**row).metadata["chrf"] for row in rows] == expected
    assert [score.metadata["chrf"] for score in metric.score_batch(rows)] == expected


def test_bleu_and_ter_score_lone_surrogates_as_sacrebleu_does():
    for output, refs in SURROGATES:
        assert BLEU()(output=output, expected=refs).metadata["bleu"] == sacrebleu.sentence_bleu(output, refs).score
        assert TER()(output=output, expected=refs).metadata["ter"] == sacrebleu.sentence_ter(output, refs).score


def test_ter_bounds_its_texts_by_default():
    assert TER().max_chars == 5_000 and TER(max_chars=None).max_chars is None
    with pytest.raises(ScorerInputError, match=r"TER: field 'output' has 5,001 characters, more than max_chars=5,000"):
        TER()(output="x" * 5_001, expected="x")
    small = TER(max_chars=10)
    outcomes = small.score_batch(
        [
            {"output": "the cat", "expected": ["the cat", "the cat sat down"]},
            {"output": "the cat", "expected": "the cat"},
        ]
    )
    assert isinstance(outcomes[0], ScorerInputError) and "reference 1" in str(outcomes[0])
    assert outcomes[1].metadata["ter"] == 0.0
    assert small.signature() == TER().signature()


@pytest.mark.parametrize("name", ["BLEU", "chrF", "chrF++"])
def test_linear_metrics_have_no_length_limit(name):
    assert scorers.get(name).max_chars is None
