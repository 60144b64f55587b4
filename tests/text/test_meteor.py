"""METEOR: nltk's published values, and identical numbers to nltk's own meteor_score."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

pytest.importorskip("nltk")

import scorers.text.meteor as meteor  # noqa: E402
from scorers.errors import ConfigError, ScorerInputError  # noqa: E402
from scorers.registry import get  # noqa: E402
from scorers.text.meteor import METEOR  # noqa: E402

pytestmark = pytest.mark.usefixtures("offline_wordnet")


# ------------------------------------------------------------------ nltk's reference values
_REF1 = "It is a guide to action that ensures that the military will forever heed Party commands"
_REF2 = "It is the guiding principle which guarantees the military forces always being under the command of the Party"
_REF3 = "It is the practical guide for the army always to heed the directions of the party"
_HYP1 = "It is a guide to action which ensures that the military always obeys the commands of the party"

#: (output, expected, tokenizer, value, decimals): nltk's unit test and doctests (meteor_score.py and
#: meteor.doctest), written as texts; None decimals means the exact float.
NLTK_VECTORS = [
    ("THIS Is a tEST", ["this is a test", "this istest"], "whitespace", 0.9921875, None),
    (_HYP1, _REF1, "whitespace", 0.6944, 4),
    (_HYP1, [_REF1, _REF2, _REF3], "whitespace", 0.6944, 4),
    ("non matching hypothesis", "this is a cat", "whitespace", 0.0, None),
    ("x y z", "this is a cat", "whitespace", 0.0, None),
    ("John loves Mary", "The candidate has no alignment to any of the references", "nltk", 0.0, None),
    ("The cat sat on the mat", "The cat sat on the mat", "nltk", 0.9977, 4),
    ("on the mat sat the cat", "The cat sat on the mat", "nltk", 0.5, None),
    ("The cat was sat on the mat", "The cat sat on the mat", "nltk", 0.9654, 4),
    ("creates or updates a virtual machine scale set", "create or update a vm set", "nltk", 0.7806, 4),
    ("the cat is glad", "the cat is happy", "whitespace", 0.7361, 4),  # a WordNet synonym match
]


@pytest.mark.parametrize(("output", "expected", "tokenizer", "value", "decimals"), NLTK_VECTORS)
def test_nltk_reference_values(output: str, expected: Any, tokenizer: str, value: float, decimals: int | None) -> None:
    score = METEOR(tokenizer=tokenizer)(output=output, expected=expected).score
    assert (score if decimals is None else round(score, decimals)) == value


# ------------------------------------------------------------------ equivalence with nltk itself
class _IdentityStemmer:
    def stem(self, word: str) -> str:
        return word


class _NoWordNet:
    def synsets(self, word: str) -> list[Any]:
        return []


def nltk_meteor(
    output: str,
    expected: str | list[str],
    *,
    tokenizer: str = "nltk",
    preprocess: str = "lower",
    stemmer: str = "porter",
    synonyms: str = "wordnet",
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
) -> float:
    """The number nltk's own meteor_score gives for texts, tokenised as the scorer documents."""
    from nltk.corpus import wordnet
    from nltk.stem.porter import PorterStemmer
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.translate.meteor_score import meteor_score

    tokenize = NLTKWordTokenizer().tokenize if tokenizer == "nltk" else str.split
    references = [expected] if isinstance(expected, str) else expected
    return meteor_score(
        [tokenize(r) for r in references],
        tokenize(output),
        preprocess=str.lower if preprocess == "lower" else (lambda word: word),
        stemmer=PorterStemmer() if stemmer == "porter" else _IdentityStemmer(),
        wordnet=wordnet if synonyms == "wordnet" else _NoWordNet(),
        alpha=alpha,
        beta=beta,
        gamma=gamma,
    )


_VOCABULARY = (
    "the a of and to in is was it that he she they we you big large small little quick fast begin start car "
    "automobile happy glad house home road street answer reply talk speak close shut hard difficult end finish "
    "look see story tale children kids hear listen correct right rock stone ocean sea dog hound idea thought "
    "run runs running ran cat cats goose geese mouse mice went go goes going study studies studied learn "
    "learning better good best well Party party commands command guide guiding military army"
).split()
_UNICODE_WORDS = "café naïve Straße İstanbul Kelvin\u212a 日本語 東京 Привет мир ﬁne résumé Ωmega ñandú 😀".split()
_PUNCTUATION = ". , ; : ! ? ... -- – — ( ) [ ] { } < > \" ' `` '' « » “ ” ‘ ’ $ % & @ # *".split()
_CONTRACTIONS = (
    "don't can't cannot gimme gonna gotta lemme wanna more'n d'ye 'tis 'Twas I'm they'll it's 3,36 3.88".split()
)
#: Words that are their own Porter stem (nltk looks synonyms up for stems) and WordNet synonyms of several
#: others, so that a hypothesis word often has several free synonyms to choose from.
_SYNONYM_CLUSTERS = "big great bad fast quick firm start begin get go run move make take hold give keep the".split()
_SEPARATORS = (" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u3000")


def _text(rng: random.Random, words: list[str]) -> str:
    return "".join(w + rng.choice(_SEPARATORS) for w in words).strip()


def _edited(rng: random.Random, ref: list[str], pool: list[str]) -> list[str]:
    hyp = []
    for word in ref:
        r = rng.random()
        if r < 0.1:
            continue
        hyp.append(rng.choice(pool) if r < 0.25 else word.upper() if r < 0.3 else word)
    for _ in range(len(hyp) // 5):
        i = rng.randrange(max(1, len(hyp) - 1))
        hyp[i : i + 2] = hyp[i : i + 2][::-1]
    return hyp


def _generated_cases() -> list[tuple[str, Any]]:
    rng = random.Random(20241130)
    cases: list[tuple[str, Any]] = []
    pools = [
        (_VOCABULARY, 150),
        (_VOCABULARY + _UNICODE_WORDS, 40),
        (_VOCABULARY + _PUNCTUATION + _CONTRACTIONS, 50),
    ]
    for pool, count in pools:
        for _ in range(count):
            ref = [rng.choice(pool) for _ in range(rng.randint(1, 30))]
            cases.append((_text(rng, _edited(rng, ref, pool)), _text(rng, ref)))
    for _ in range(60):  # many synonym candidates per word: which free reference word is taken matters
        cases.append(
            (
                _text(rng, [rng.choice(_SYNONYM_CLUSTERS) for _ in range(rng.randint(1, 10))]),
                _text(rng, [rng.choice(_SYNONYM_CLUSTERS) for _ in range(rng.randint(1, 10))]),
            )
        )
    for _ in range(30):  # several references
        ref = [rng.choice(_VOCABULARY) for _ in range(rng.randint(3, 20))]
        refs = [_text(rng, _edited(rng, ref, _VOCABULARY)) for _ in range(rng.randint(2, 4))]
        cases.append((_text(rng, _edited(rng, ref, _VOCABULARY)), refs))
    long_ref = [rng.choice(_VOCABULARY) for _ in range(2500)]
    cases += [
        (_text(rng, _edited(rng, long_ref, _VOCABULARY)), _text(rng, long_ref)),
        (" ".join(f"h{i}" for i in range(3000)), " ".join(f"r{i}" for i in range(3000))),  # long and disjoint
        ("", ""),
        ("", "the cat"),
        ("the cat", ""),
        ("   ", "\t\n"),
        ("the cat", ["", "the dog"]),
        ("...", "..."),
        ("!!!", "?"),
        ("?!", "?!"),
        (".", "."),
        ("--", "—"),
        ("''", '"'),
        ("the the the the", "the"),
        ("the", "the the the the"),
        ("THE CAT", "the cat"),
        ("the big dog", "great the great dog"),
        ("the big dog", "great the bad dog"),
        ("Geese ran.", "The goose runs."),
        ("They cannot go.", "They can not go."),
        ("😀", "😀"),
        ("日本語 東京", "東京 日本語"),
        ("İstanbul", "istanbul"),
    ]
    return cases


GENERATED = _generated_cases()


@pytest.mark.parametrize(("output", "expected"), GENERATED, ids=[f"case{i}" for i in range(len(GENERATED))])
def test_identical_to_nltk_meteor_score(output: str, expected: Any) -> None:
    score = METEOR()(output=output, expected=expected).score
    assert score == nltk_meteor(output, expected)
    assert 0.0 <= score <= 1.0 and not math.isnan(score)


SETTINGS = [
    {"tokenizer": "whitespace"},
    {"preprocess": "none"},
    {"stemmer": "none"},
    {"synonyms": "none"},
    {"alpha": 0.5, "beta": 1.0, "gamma": 0.25},
    {"alpha": 0.0, "gamma": 1.0},
    {"alpha": 1.0, "beta": 0.0},
]


@pytest.mark.slow
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_identical_to_nltk_with_other_settings(settings: dict[str, Any]) -> None:
    scorer = METEOR(**settings)
    cases = GENERATED[::5]
    scores = [s.score for s in scorer.score_batch([{"output": o, "expected": e} for o, e in cases])]
    assert scores == [nltk_meteor(output, expected, **settings) for output, expected in cases]


def test_batch_equals_single_calls() -> None:
    scorer = METEOR()
    cases = GENERATED[:60] + GENERATED[:10]  # repeated texts share the batch's tokenisation
    batch = scorer.score_batch([{"output": o, "expected": e} for o, e in cases])
    assert [s.score for s in batch] == [scorer(output=o, expected=e).score for o, e in cases]


# ------------------------------------------------------------------ the tokenizer
from hypothesis import given  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_TRICKY = (
    "abcgimnotwaAZKk '\"`,.;:!?()[]{}<>-–—…«»“”‘’„$%&@#*_0123456789\t\n\u00a0\u3000\u2028\x1c"
    "\u0130\u0131\u212a\u017féß日"
)


@hypothesis_settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=40))
def test_tokenizer_matches_nltk_on_tricky_characters(text: str) -> None:
    from nltk.tokenize import NLTKWordTokenizer

    assert meteor._nltk_word_tokenizer()(text) == NLTKWordTokenizer().tokenize(text)


@hypothesis_settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_CONTRACTIONS + _PUNCTUATION + ["WANNA", "CanNot", "GIMME", "Gonna", "ok"]), max_size=12),
    st.sampled_from([" ", "", "\t", ",", "\u00a0"]),
)
def test_tokenizer_matches_nltk_on_contractions_and_quotes(words: list[str], separator: str) -> None:
    from nltk.tokenize import NLTKWordTokenizer

    text = separator.join(words)
    assert meteor._nltk_word_tokenizer()(text) == NLTKWordTokenizer().tokenize(text)


def _nltk_rules() -> list[Any]:
    from nltk.tokenize.destructive import NLTKWordTokenizer as t

    return [
        p for p, _ in (*t.STARTING_QUOTES, *t.PUNCTUATION, t.PARENS_BRACKETS, t.DOUBLE_DASHES, *t.ENDING_QUOTES)
    ] + [*t.CONTRACTIONS2, *t.CONTRACTIONS3]


@pytest.mark.parametrize("rule", _nltk_rules(), ids=lambda p: p.pattern)
def test_every_nltk_tokenizer_rule_has_a_trigger(rule: Any) -> None:
    """A rule without an entry still runs (so numbers stay right) but makes tokenising slower."""
    key = meteor._fingerprint(rule)
    assert key in meteor._TRIGGERS or key in meteor._CASELESS_TRIGGERS


def test_whitespace_rule_only_squeezes_what_str_split_splits() -> None:
    """Skipping nltk's \\s+ squeeze (without apostrophes) is safe only if str.split splits on all of \\s."""
    import regex

    squeeze = next(
        p for p in _nltk_rules() if meteor._TRIGGERS.get(meteor._fingerprint(p)) == ("'",) and p.pattern == r"\s+"
    )
    every_character = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    spaces = "".join(regex.compile(squeeze.pattern, squeeze.flags).findall(every_character))
    assert spaces and all(c.isspace() for c in spaces)


# ------------------------------------------------------------------ interface
def test_signature_names_every_setting_and_version() -> None:
    import nltk

    signature = METEOR()(output="a cat", expected="a cat").metadata["signature"]
    assert signature == {
        "scorer": "METEOR",
        "scorers_version": signature["scorers_version"],
        "algorithm": "1",
        "alpha": 0.9,
        "beta": 3.0,
        "gamma": 0.5,
        "preprocess": "lower",
        "stemmer": "porter",
        "synonyms": "wordnet",
        "tokenizer": "nltk",
        "nltk": nltk.__version__,
        "wordnet": "3.0",
    }
    plain = METEOR(tokenizer="whitespace", synonyms="none", stemmer="none", preprocess="none").signature()
    assert (plain["tokenizer"], plain["synonyms"], plain["stemmer"], plain["preprocess"]) == (
        "whitespace",
        "none",
        "none",
        "none",
    )
    assert "wordnet" not in plain


def test_registered_and_reports_best_reference() -> None:
    scorer = get("meteor")
    assert isinstance(scorer, METEOR)
    score = scorer(output="It is a cat.", expected=["It is a dog.", "It is the cat.", "It is a cat."])
    assert score.score == nltk_meteor("It is a cat.", ["It is a dog.", "It is the cat.", "It is a cat."])
    assert score.metadata["best_reference"] == 2


@pytest.mark.parametrize(
    "settings",
    [
        {"alpha": 1.5},
        {"alpha": -0.1},
        {"alpha": "0.9"},
        {"alpha": True},
        {"beta": -1},
        {"beta": math.inf},
        {"gamma": 2.0},
        {"gamma": math.nan},
        {"tokenizer": "punkt"},
        {"stemmer": "snowball"},
        {"preprocess": "upper"},
        {"synonyms": "omw"},
    ],
    ids=repr,
)
def test_bad_settings_raise_config_error(settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        METEOR(**settings)


@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ({"output": "a"}, "expected", "missing"),
        ({"output": None, "expected": "a"}, "output", "None"),
        ({"output": "a", "expected": []}, "expected", "empty list"),
        ({"output": "a", "expected": ["a", None]}, "expected", "reference 1"),
        ({"output": "a", "expected": True}, "expected", "bool"),
        ({"output": "a", "expected": {"a": 1}}, "expected", "must be"),
    ],
)
def test_bad_input_raises_scorer_input_error(fields: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(ScorerInputError) as info:
        METEOR()(**fields)
    assert info.value.field == field and problem in str(info.value)


def test_numbers_are_accepted_as_text() -> None:
    assert METEOR()(output=42, expected=42).score == nltk_meteor("42", "42")


def test_missing_nltk_raises_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from scorers.errors import MissingExtraError

    monkeypatch.setitem(__import__("sys").modules, "nltk", None)  # makes `import nltk` fail
    with pytest.raises(MissingExtraError, match=r"scorers\[text\]"):
        METEOR()


def test_synonyms_none_needs_no_wordnet(monkeypatch: pytest.MonkeyPatch) -> None:
    import scorers.text.wordnet

    def no_wordnet(**_: Any) -> None:
        raise AssertionError("WordNet looked up although synonyms='none'")

    monkeypatch.setattr(scorers.text.wordnet, "ensure_wordnet", no_wordnet)
    score = METEOR(synonyms="none")(output="the cat is glad", expected="the cat is happy").score
    assert score == nltk_meteor("the cat is glad", "the cat is happy", synonyms="none")


# ------------------------------------------------------------------ the synonym index
def _with_nltk_reader(**settings: Any) -> METEOR:
    scorer = METEOR(**settings)
    scorer._synonym_source = "nltk"  # nltk's WordNetCorpusReader, the slow reference path
    return scorer


@pytest.mark.slow
def test_index_path_gives_the_nltk_wordnet_paths_numbers() -> None:
    cases = [(o, e) for o, e, *_ in NLTK_VECTORS] + GENERATED
    rows = [{"output": o, "expected": e} for o, e in cases]
    for settings in ({}, {"tokenizer": "whitespace"}, {"stemmer": "none"}, {"preprocess": "none"}):
        indexed = [s.score for s in METEOR(**settings).score_batch(rows)]
        assert indexed == [s.score for s in _with_nltk_reader(**settings).score_batch(rows)], settings


@pytest.mark.slow
def test_index_synonym_sets_equal_nltks_over_a_sweep_of_wordnet() -> None:
    """Every 40th WordNet lemma, inflected forms of every 200th, exception-list forms, odd spellings."""
    from nltk.corpus import wordnet

    from scorers.text.wordnet import synonym_index

    index = synonym_index()
    reference = meteor._nltk_wordnet_synonyms()
    lemmas = sorted(wordnet.all_lemma_names())
    words = lemmas[::40]
    for lemma in lemmas[::200]:
        words += [lemma + suffix for suffix in ("s", "es", "ies", "ed", "ing", "er", "est", "men")]
        words += [lemma.upper(), lemma.title(), lemma[:-1], lemma[:-2] + "ies"]
    words += [
        "geese",
        "mice",
        "went",
        "was",
        "were",
        "better",
        "best",
        "children",
        "oxen",
        "feet",
        "ran",
        "Geese",
        "the",
        "a",
        "of",
        "",
        "_",
        "-",
        "'s",
        "3",
        "café",
        "İstanbul",
        "a\tb",
        "don't",
        "hot_dog",
        "s",
        "es",
    ]
    different = [w for w in words if index.synonyms(w) != reference(w)]
    assert not different and len(words) > 4000


@pytest.mark.slow
def test_cold_meteor_does_not_load_nltks_wordnet_reader() -> None:
    import os
    import subprocess
    import sys

    script = (
        "import nltk, scorers\n"
        "before = list(nltk.data.path)\n"
        "s = scorers.get('METEOR')(output='the cat is glad', expected='the cat is happy')\n"
        "print(round(s.score, 4), type(nltk.corpus.wordnet).__name__, nltk.data.path == before)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=dict(os.environ), check=True
    )
    assert done.stdout.split() == ["0.7361", "LazyCorpusLoader", "True"], done.stdout + done.stderr


# ------------------------------------------------------------------ without nltk's package
@pytest.fixture
def private_nltk_modules(monkeypatch: pytest.MonkeyPatch) -> Any:
    """METEOR on private copies of nltk's modules, as in a process that has not imported nltk; fresh caches."""
    from scorers.text import _ngrams, _nltk_modules

    monkeypatch.setattr(_nltk_modules, "nltk_imported", lambda: False)
    monkeypatch.setattr(_nltk_modules, "_PRIVATE", _nltk_modules._PrivateNltk())
    monkeypatch.setattr(_ngrams, "_stemmer", None)
    meteor._nltk_word_tokenizer.cache_clear()  # type: ignore[attr-defined]
    meteor.clear_caches()
    yield _nltk_modules
    meteor._nltk_word_tokenizer.cache_clear()  # type: ignore[attr-defined]
    meteor.clear_caches()


def test_private_nltk_modules_give_nltks_numbers(private_nltk_modules: Any) -> None:
    from nltk.stem.porter import PorterStemmer

    from scorers.text import _ngrams

    cases = GENERATED[::3]
    scores = [s.score for s in METEOR().score_batch([{"output": o, "expected": e} for o, e in cases])]
    assert scores == [nltk_meteor(output, expected) for output, expected in cases]
    stemmer = _ngrams._stemmer
    assert type(stemmer).__name__ == "PorterStemmer" and not isinstance(stemmer, PorterStemmer)  # a private copy's
    assert {"nltk.data", "nltk.stem.porter", "nltk.tokenize.destructive"} <= set(private_nltk_modules._PRIVATE._modules)
