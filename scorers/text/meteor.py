"""METEOR with nltk's numbers (``nltk.translate.meteor_score``), offline and fast.

The score is nltk 3.10.4's ``meteor_score``: words are aligned in three stages
(exact, Porter stem, WordNet synonym), each stage matching hypothesis words from
the last to the first with the latest still-free reference word; then

    P = m / len(hyp),  R = m / len(ref),  Fmean = P·R / (α·P + (1-α)·R)
    penalty = γ · (chunks / m)^β,  METEOR = (1 - penalty) · Fmean

and several references give the best of the single-reference scores. An empty
side, or no match at all, scores 0.0 as in nltk.

We reproduce that algorithm rather than calling it so that stems, WordNet
synonym sets and tokenisations are computed once per distinct word or text
instead of once per pair; the numbers are identical (the tests compare with
nltk itself). WordNet comes from :mod:`scorers.text.wordnet` (no download), and
its synonym sets from a compact index built once from the same files
(:func:`~scorers.text.wordnet.synonym_index`), not from nltk's corpus reader,
whose load costs seconds and ~190 MB.

Texts are split into words by nltk's ``NLTKWordTokenizer`` (the same as
``nltk.word_tokenize(text, preserve_line=True)``; it needs no punkt data), or
on whitespace with ``tokenizer="whitespace"``.

nltk's package itself is not imported (its ``__init__`` imports scipy and
scikit-learn, about 2 s): the tokenizer's rules, the Porter stemmer and
``nltk.data.find`` come from nltk's own module files run as private copies
(:mod:`scorers.text._nltk_modules`), or from nltk's modules where the process
has imported nltk already. A cold call is then mostly ``import scorers``.

>>> from scorers.text.meteor import METEOR
>>> round(METEOR()(output="the cat is glad", expected="the cat is happy").score, 4)
0.7361
"""

from __future__ import annotations

import math
import re
import warnings
import zlib
from typing import Any, Callable, Iterable

from .._util import memoize
from ..base import Scorer
from ..errors import ScorerError
from ..fields import references_field, text_field
from ..params import param
from ..reasoning import strip_reasoning_param
from ..registry import register
from ..score import Score
from ._ngrams import porter_stem
from ._nltk_modules import nltk_module, nltk_version

__all__ = ["METEOR", "clear_caches"]

TOKENIZERS = ("nltk", "whitespace")
PREPROCESSORS = ("lower", "none")
STEMMERS = ("porter", "none")
SYNONYMS = ("wordnet", "none")

#: Distinct words kept per word cache before it is emptied (bounds memory in long runs).
_WORD_CACHE_LIMIT = 500_000


# ---------------------------------------------------------------- tokenising
# Characters (or, for the case-insensitive contraction rules, lower-case
# substrings) without which one of NLTKWordTokenizer's rewrite rules cannot
# match, keyed by a CRC of the rule's pattern and flags. A rule missing from
# this table (a changed nltk) simply always runs, so the output stays nltk's.
# One entry is not about matching: the whitespace-squeezing rule (0x09F447D7)
# only matters to the later rules needing a literal space, which all need an
# apostrophe; the final str.split splits on every character that rule's \s
# matches (a test checks this over all of Unicode).
_TRIGGERS: dict[int, tuple[str, ...]] = {
    0xF5F97B16: tuple("«“‘„`"),
    0x552B5817: ('"',),
    0x7A6ACDC1: ("`",),
    0xA552A2E6: ('"', "'"),
    0x0A4C0891: ("'",),
    0x97E6B5A4: (".",),
    0x20BD63CF: (":", ","),
    0xF3ECCE43: (":", ","),
    0x9CBCC8E7: (".",),
    0x5AEC1400: tuple(";@#$%&"),
    0x85436E84: tuple("\u2012\u2013\u2014\u2015"),
    0x2FF832EA: (".",),
    0x4D8DE2A1: ("?", "!"),
    0x9A8F529F: ("'",),
    0x68070C76: ("*",),
    0xBDA0B379: tuple("»”’"),
    0x536BAC96: ("'",),
    0x251244EA: ('"',),
    0xB1A97009: ("'",),
    0x1322D0FE: ("'",),
    0x09F447D7: ("'",),
    0x118E0A43: tuple("[](){}<>"),
    0x5680D0BE: ("-",),
    0x531EC6D3: ("'",),
    0x8CBBF7CF: ("'",),
}
_CASELESS_TRIGGERS: dict[int, str] = {
    0xE043691E: "can",
    0x987E9949: "d'",
    0xC7EF1006: "gim",
    0x33D3300C: "gon",
    0xCC3C995D: "got",
    0xAF200B39: "lem",
    0xE3D748D8: "more'",
    0x9148CCB4: "wan",
}


def _fingerprint(pattern: Any) -> int:
    return zlib.crc32(f"{pattern.pattern}\x00{pattern.flags}".encode())


class _WordTokenizer:
    """nltk's ``NLTKWordTokenizer().tokenize``, output for output, without its per-call overhead.

    It runs nltk's own rewrite rules in nltk's order on the same regex engines,
    but calls the engines directly and skips a rule when the text lacks a
    character the rule needs (see ``_TRIGGERS``).
    """

    def __init__(self) -> None:
        import regex

        nltk_tokenizer = nltk_module("nltk.tokenize.destructive", scorer="METEOR").NLTKWordTokenizer

        def rule(pattern: Any, template: str) -> tuple[Any, Any, tuple[str, ...] | None, str | None]:
            key = _fingerprint(pattern)
            if not isinstance(pattern, re.Pattern):  # nltk's timed wrapper around a `regex` pattern
                pattern = regex.compile(pattern.pattern, pattern.flags)
            return pattern, _replacement(template), _TRIGGERS.get(key), _CASELESS_TRIGGERS.get(key)

        t = nltk_tokenizer
        self._before_padding = [
            rule(p, r) for p, r in (*t.STARTING_QUOTES, *t.PUNCTUATION, t.PARENS_BRACKETS, t.DOUBLE_DASHES)
        ]
        self._after_padding = [rule(p, r) for p, r in t.ENDING_QUOTES]
        self._after_padding += [rule(p, r" \1 \2 ") for p in (*t.CONTRACTIONS2, *t.CONTRACTIONS3)]

    @staticmethod
    def _apply(rules: list[tuple[Any, Any, tuple[str, ...] | None, str | None]], text: str) -> str:
        lowered = text.lower() if text.isascii() else None
        for engine, replacement, triggers, caseless in rules:
            if triggers is not None:
                for char in triggers:
                    if char in text:
                        break
                else:
                    continue
            elif caseless is not None and lowered is not None and caseless not in lowered:
                continue
            text = engine.sub(replacement, text)
        return text

    def __call__(self, text: str) -> list[str]:
        text = self._apply(self._before_padding, text)
        return self._apply(self._after_padding, " " + text + " ").split()


_GROUP_REFERENCE = re.compile(r"\\(?:(\d)(?!\d)|g<(\d+)>)")


def _replacement(template: str) -> str | Callable[[Any], str]:
    """A substitution template made a function (the regex engine re-reads a string template on every call).

    Only literal text with ``\\N`` and ``\\g<N>`` group references is converted; any
    other template is returned unchanged.
    """
    parts: list[str | int] = []
    position = 0
    for reference in _GROUP_REFERENCE.finditer(template):
        parts.append(template[position : reference.start()])
        parts.append(int(reference.group(1) or reference.group(2)))
        position = reference.end()
    parts.append(template[position:])
    if "\\" in "".join(p for p in parts if isinstance(p, str)):
        return template
    pieces = [p for p in parts if p != ""]
    if all(isinstance(p, str) for p in pieces):
        return template

    def substitute(match: Any) -> str:
        return "".join([p if isinstance(p, str) else (match.group(p) or "") for p in pieces])

    return substitute


@memoize
def _nltk_word_tokenizer() -> _WordTokenizer:
    """The tokenizer, built once per process."""
    return _WordTokenizer()


# ---------------------------------------------------------------- word facts
class _Lexicon:
    """Stems and WordNet synonym sets, computed once per distinct word."""

    def __init__(self, stem: Callable[[str], str] | None, synonyms_of: Callable[[str], Iterable[str]] | None) -> None:
        self._stem = stem
        self._synonyms_of = synonyms_of
        self._stems: dict[str, str] = {}
        self._synonyms: dict[str, frozenset[str]] = {}

    def stem(self, word: str) -> str:
        stem = self._stems.get(word)
        if stem is None:
            if len(self._stems) >= _WORD_CACHE_LIMIT:
                self._stems.clear()
            stem = self._stems[word] = self._stem(word) if self._stem is not None else word
        return stem

    def synonyms(self, word: str) -> frozenset[str]:
        """The word and the one-word lemma names of all its WordNet synsets (nltk's METEOR synonym set)."""
        synonyms = self._synonyms.get(word)
        if synonyms is None:
            if len(self._synonyms) >= _WORD_CACHE_LIMIT:
                self._synonyms.clear()
            names = {word}
            if self._synonyms_of is not None:
                names.update(self._synonyms_of(word))
            synonyms = self._synonyms[word] = frozenset(names)
        return synonyms


@memoize
def _lexicon(stemmer: str, synonyms: str, source: str = "index") -> _Lexicon:
    """The process-wide stems and synonym sets for these settings (``clear_caches`` forgets them).

    ``source``: where WordNet synonym sets come from, ``"index"`` (the compact index, the default) or
    ``"nltk"`` (nltk's corpus reader, the reference)."""
    stem = porter_stem("METEOR") if stemmer == "porter" else None
    synonyms_of = None
    if synonyms == "wordnet":
        synonyms_of = _index_synonyms() if source == "index" else _nltk_wordnet_synonyms()
    return _Lexicon(stem, synonyms_of)


def _index_synonyms() -> Callable[[str], Iterable[str]]:
    from .wordnet import synonym_index

    try:
        return synonym_index().synonyms
    except (ValueError, KeyError, IndexError) as exc:  # WordNet files nltk reads differently: use nltk itself
        warnings.warn(
            f"METEOR: cannot index WordNet's synonyms ({exc}); using nltk's WordNet reader, which takes "
            "seconds to load",
            RuntimeWarning,
            stacklevel=3,
        )
        return _nltk_wordnet_synonyms()


def _nltk_wordnet_synonyms() -> Callable[[str], Iterable[str]]:
    """Synonym sets read through nltk's own WordNet reader: the reference the index is tested against."""
    from .wordnet import nltk_may_read_copy, wordnet_reader

    wordnet = wordnet_reader()  # also in a process that unpickled the scorer

    def synonyms_of(word: str) -> set[str]:
        with nltk_may_read_copy():  # a built copy is on nltk's path only while nltk reads it
            return {
                name
                for synset in wordnet.synsets(word)
                for name in (lemma.name() for lemma in synset.lemmas())
                if "_" not in name
            }

    return synonyms_of


def clear_caches() -> None:
    """Forget the stems and WordNet synonym sets cached so far (to free memory, or to time a cold start)."""
    _lexicon.cache_clear()  # type: ignore[attr-defined]  # memoize's .cache_clear


# ---------------------------------------------------------------- alignment
Word = tuple[int, str]  # (position in the original text, word form at this stage)


def _match_stage(hyp: list[Word], ref: list[Word], matches: list[tuple[int, int]]) -> tuple[list[Word], list[Word]]:
    """One exact-form stage: each hypothesis word, last first, takes the latest free equal reference word."""
    free: dict[str, list[int]] = {}
    for j, word in ref:
        free.setdefault(word, []).append(j)
    hyp_left: list[Word] = []
    taken: set[int] = set()
    for i, word in reversed(hyp):
        positions = free.get(word)
        if positions:
            j = positions.pop()
            matches.append((i, j))
            taken.add(j)
        else:
            hyp_left.append((i, word))
    hyp_left.reverse()
    return hyp_left, [w for w in ref if w[0] not in taken] if taken else ref


def _synonym_stage(hyp: list[Word], ref: list[Word], matches: list[tuple[int, int]], lexicon: _Lexicon) -> None:
    """Each hypothesis word, last first, takes the latest free reference word among its synonyms (itself included)."""
    free: dict[str, list[int]] = {}
    for j, word in ref:
        free.setdefault(word, []).append(j)
    for i, word in reversed(hyp):
        synonyms = lexicon.synonyms(word)
        best_j, best_word = -1, None
        if len(synonyms) < len(free):  # look up the fewer words: linear time on long disjoint texts
            for candidate in synonyms:
                positions = free.get(candidate)
                if positions and positions[-1] > best_j:
                    best_j, best_word = positions[-1], candidate
        else:
            for candidate, positions in free.items():
                if positions and positions[-1] > best_j and candidate in synonyms:
                    best_j, best_word = positions[-1], candidate
        if best_word is not None:
            free[best_word].pop()
            matches.append((i, best_j))


def _align(hyp: list[str], ref: list[str], lexicon: _Lexicon, use_synonyms: bool) -> list[tuple[int, int]]:
    """(hypothesis, reference) position pairs of the METEOR alignment, sorted by hypothesis position."""
    matches: list[tuple[int, int]] = []
    hyp_left, ref_left = _match_stage(list(enumerate(hyp)), list(enumerate(ref)), matches)
    if hyp_left and ref_left:
        stem = lexicon.stem
        hyp_left, ref_left = _match_stage(
            [(i, stem(w)) for i, w in hyp_left], [(j, stem(w)) for j, w in ref_left], matches
        )
        if use_synonyms and hyp_left and ref_left:
            _synonym_stage(hyp_left, ref_left, matches, lexicon)
    matches.sort()
    return matches


def _chunks(matches: list[tuple[int, int]]) -> int:
    """Fewest runs of matches adjacent in both texts (1 for no match, as nltk counts)."""
    chunks = 1
    for (i0, j0), (i1, j1) in zip(matches, matches[1:]):
        if i1 != i0 + 1 or j1 != j0 + 1:
            chunks += 1
    return chunks


def _meteor(
    matched: int, hyp_length: int, ref_length: int, chunks: int, alpha: float, beta: float, gamma: float
) -> float:
    """nltk's formula, with its operations in its order so that the floats are the same."""
    if matched == 0:  # nltk's ZeroDivisionError branch: no match or an empty side
        return 0.0
    precision = float(matched) / hyp_length
    recall = float(matched) / ref_length
    fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall)
    penalty = gamma * (float(chunks) / matched) ** beta
    return min(1.0, max(0.0, (1 - penalty) * fmean))  # [0, 1] up to float rounding


# ---------------------------------------------------------------- scorer
@register
class METEOR(Scorer):
    """METEOR (Banerjee & Lavie), with nltk's ``meteor_score`` numbers; several references give the best.

    >>> from scorers.text.meteor import METEOR
    >>> score = METEOR()(output="The cats are sitting on the mat.",
    ...                  expected=["A cat sat on the mat.", "The cat is sitting on the mat."])
    >>> round(score.score, 4), score.metadata["best_reference"]
    (0.8648, 1)
    """

    name = "METEOR"
    kind = "text"
    extra = "text"
    description = (
        "METEOR (nltk meteor_score): exact, stem and WordNet-synonym unigram alignment with a fragmentation penalty"
    )
    fields = (
        text_field("output", description="the hypothesis text"),
        references_field(description="the reference text, or a list of references (the best score counts)"),
    )
    example = 'METEOR()(output="the cat is glad", expected="the cat is happy")'
    algorithm_version = "1"

    alpha: float = param("weight of precision against recall in the F-mean", default=0.9, ge=0, le=1)
    beta: float = param("shape of the fragmentation penalty", default=3.0, ge=0, lt=math.inf)
    gamma: float = param("most the fragmentation penalty can take off", default=0.5, ge=0, le=1)
    preprocess: str = param("'lower': lowercase the tokens (nltk's default)", default="lower", choices=PREPROCESSORS)
    stemmer: str = param("the stemmer of the stem stage", default="porter", choices=STEMMERS)
    synonyms: str = param("where the synonym stage finds synonyms", default="wordnet", choices=SYNONYMS)
    tokenizer: str = param("how texts split into words", default="nltk", choices=TOKENIZERS)
    reasoning_fields = ("output",)
    strip_reasoning: bool = strip_reasoning_param()

    def __post_init__(self) -> None:
        self.alpha, self.beta, self.gamma = float(self.alpha), float(self.beta), float(self.gamma)
        self._nltk_version = nltk_version(scorer=self.name)
        #: Where synonym sets come from (numbers are equal either way; "nltk" is the slow reference path).
        self._synonym_source = "index"
        self._wordnet_version: str | None = None
        if self.synonyms == "wordnet":
            from .wordnet import ensure_wordnet, wordnet_version

            ensure_wordnet()
            self._wordnet_version = wordnet_version()

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {**super().params(), "nltk": self._nltk_version}
        if self._wordnet_version is not None:
            params["wordnet"] = self._wordnet_version
        return params

    # ------------------------------------------------------------ scoring
    def _tokenize_function(self) -> Callable[[str], list[str]]:
        split = _nltk_word_tokenizer() if self.tokenizer == "nltk" else str.split
        if self.preprocess == "lower":
            return lambda text: [token.lower() for token in split(text)]
        return split

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        tokenize = self._tokenize_function()
        lexicon = _lexicon(self.stemmer, self.synonyms, self._synonym_source)
        use_synonyms = self.synonyms != "none"
        words: dict[str, list[str]] = {}  # each distinct text is tokenised once per batch

        def words_of(text: str) -> list[str]:
            found = words.get(text)
            if found is None:
                found = words[text] = tokenize(text)
            return found

        signature = self.signature()
        scores: list[Score | ScorerError] = []
        for row in rows:
            hyp = words_of(row["output"])
            best, best_index = -1.0, 0
            for index, reference in enumerate(row["expected"]):
                ref = words_of(reference)
                matches = _align(hyp, ref, lexicon, use_synonyms)
                value = _meteor(len(matches), len(hyp), len(ref), _chunks(matches), self.alpha, self.beta, self.gamma)
                if value > best:
                    best, best_index = value, index
            metadata: dict[str, Any] = {"signature": dict(signature)}
            if len(row["expected"]) > 1:
                metadata["best_reference"] = best_index
            scores.append(Score(self.name, best, metadata))
        return scores
