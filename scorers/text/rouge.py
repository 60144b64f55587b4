"""ROUGE-N, ROUGE-L and ROUGE-Lsum with rouge-score's numbers, batched.

The numbers equal ``rouge_score.rouge_scorer.RougeScorer([type], use_stemmer=...)
.score(target=expected, prediction=output)`` (and ``score_multi`` for several
references: the reference with the highest F wins, the first one on ties).
The score is the F-measure; precision, recall and F are in the metadata.

Tokenizers:

* ``"default"``: rouge-score's own tokenizer, kept for comparability with
  published ROUGE: lower-case, every character outside ``[a-z0-9]`` is a
  separator. It drops all other letters: ``"café"`` becomes ``caf``, and
  Chinese or Russian text has no tokens at all (identical strings score 0).
* ``"unicode"``: NFKC-normalised, lower-cased runs of Unicode letters and
  digits; CJK ideographs, kana and Hangul syllables are one token each (those
  scripts are not written with spaces). Not comparable with ROUGE-1.5.5 figures.

``use_stemmer=True`` applies nltk's Porter stemmer to tokens longer than three
characters, as rouge-score does (with ``"unicode"``: to ASCII tokens only).

>>> from scorers.text.rouge import ROUGE
>>> s = ROUGE(rouge_type="rouge1")(output="testing", expected="testing one two")
>>> s.score, s.metadata["precision"], round(s.metadata["recall"], 4)
(0.5, 1.0, 0.3333)
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Literal

from .._util import import_rapidfuzz, lazy
from ..base import Scorer
from ..errors import ConfigError
from ..fields import references_field, text_field
from ..params import param
from ..reasoning import strip_reasoning_param
from ..registry import register
from ..score import ScoreColumn
from ._ngrams import CachedSignature, TokenCache, clipped_ngram_matches, porter_stem, split_flat
from ._nltk_modules import nltk_version

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ROUGE", "TOKENIZERS"]

#: The rouge-score release whose numbers these scorers reproduce (checked by the tests).
REFERENCE = "rouge-score==0.1.2"
TOKENIZERS = ("default", "unicode")

#: rouge-score's ROUGE-N types: rouge1 to rouge9 (its pattern is ``rouge[0-9]$``, and it refuses rouge0).
_ROUGE_N = re.compile(r"rouge([1-9])$")
#: Default ``max_chars`` per LCS type: the cost grows with the product of the lengths (pure Python for
#: rougeLsum, as in rouge-score); ROUGE-N is linear and has no limit.
DEFAULT_MAX_CHARS = {"rougeL": 100_000, "rougeLsum": 20_000}
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")
_UNICODE_WORD = re.compile(r"[^\W_]+")
_ONE_CHAR_SCRIPTS = re.compile(
    "[\u3040-\u30ff\u3100-\u312f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)


def _default_word_splitter(stem: Callable[[str], str] | None) -> Callable[[str], list[str]]:
    """rouge-score's tokenizer applied to one whitespace-separated word.

    Its steps (lower-case, non-alphanumerics to spaces, split, stem tokens longer
    than 3, keep ``[a-z0-9]+``) never look across whitespace, so a text's tokens
    are its words' tokens in order, and each distinct word is tokenized once.
    """

    def split(word: str) -> list[str]:
        tokens = _NON_ALNUM.sub(" ", word.lower()).split()
        if stem is not None:
            tokens = [stem(t) if len(t) > 3 else t for t in tokens]
        return [t for t in tokens if _VALID_TOKEN.match(t)]

    return split


def _unicode_word_splitter(stem: Callable[[str], str] | None) -> Callable[[str], list[str]]:
    def split(word: str) -> list[str]:
        tokens = _UNICODE_WORD.findall(_ONE_CHAR_SCRIPTS.sub(r" \g<0> ", word))
        if stem is not None:
            tokens = [stem(t) if len(t) > 3 and t.isascii() else t for t in tokens]
        return tokens

    return split


@register(aliases=("rouge",))
class ROUGE(CachedSignature, Scorer):
    """ROUGE F-measure with rouge-score's numbers; ``rouge_type``: ``rouge1`` … ``rouge9``, ``rougeL``, ``rougeLsum``.

    ``expected`` is the target (reference), ``output`` the prediction, so
    precision is over the output's tokens and recall over the reference's. With
    several references the best F wins. ``rougeLsum`` splits texts into
    sentences at newlines (rouge-score's default; put one sentence per line).
    Registered variants: ``ROUGE-1``, ``ROUGE-2``, ``ROUGE-L``, ``ROUGE-Lsum``.

    ROUGE-L's and ROUGE-Lsum's cost grows with the product of the two texts'
    lengths, so a text longer than ``max_chars`` is a row's
    :class:`~scorers.errors.ScorerInputError`. By default (``max_chars="auto"``)
    that is 100,000 characters for rougeL (about 0.1 s), 20,000 for rougeLsum
    (about 2 s and 150 MB), and no limit for rougeN, whose cost is linear;
    ``max_chars=None`` lifts the limit.

    >>> ROUGE(rouge_type="rougeL")(output="testing one", expected="testing one two").metadata["recall"]
    0.6666666666666666
    """

    name = "ROUGE"
    kind = "text"
    description = "rouge-score ROUGE F-measure (rougeN, rougeL, rougeLsum; optional Porter stemming)"
    fields = (
        text_field("output", description="prediction (system output)"),
        references_field(description="target text, or a list of targets (best F wins)"),
    )
    example = 'ROUGE(rouge_type="rouge1")(output="the cat sat", expected="the cat sat down")'
    algorithm_version = "1"

    rouge_type: str = param(
        "rouge1 to rouge9 (n-grams), rougeL (longest common subsequence) or rougeLsum", default="rougeL"
    )
    use_stemmer: bool = param("Porter-stem the tokens (nltk)", default=False)
    tokenizer: str = param("how texts split into tokens", default="default", choices=TOKENIZERS)
    reasoning_fields = ("output",)
    strip_reasoning: bool = strip_reasoning_param()
    # the parameter takes "auto", which __post_init__ resolves to the int | None of Scorer.max_chars
    max_chars: int | Literal["auto"] | None = param(  # type: ignore[assignment]
        "longest text ('auto': 100,000 for rougeL, 20,000 for rougeLsum, no limit for rougeN); None: no limit",
        default="auto",
        ge=1,
        signed=False,
        expected="a positive integer, 'auto' or None",
    )

    def __post_init__(self) -> None:
        match = _ROUGE_N.match(self.rouge_type)
        if self.rouge_type not in ("rougeL", "rougeLsum") and match is None:
            raise ConfigError(
                f"{self.name}: unknown rouge_type {self.rouge_type!r}; use rouge1 to rouge9 (rouge-score's "
                "range), rougeL or rougeLsum",
                scorer=self.name,
            )
        if self.max_chars == "auto":
            self.max_chars = DEFAULT_MAX_CHARS.get(self.rouge_type)
        self.order = int(match.group(1)) if match else 0
        self._stem  # noqa: B018  (loaded now, so that a missing nltk fails here)

    @lazy
    def _stem(self) -> Callable[[str], str] | None:
        return porter_stem(self.name) if self.use_stemmer else None

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {**super().params(), "reference": REFERENCE}
        if self.use_stemmer:
            params["nltk_version"] = nltk_version(scorer=self.name)
        return params

    # -------------------------------------------------------------- tokens
    @lazy
    def _cache(self) -> TokenCache:
        return self._new_cache()

    def _new_cache(self) -> TokenCache:
        splitter = _default_word_splitter if self.tokenizer == "default" else _unicode_word_splitter
        return TokenCache(splitter(self._stem))

    def _prepared(self, text: str) -> str:
        """The text whose whitespace-separated words the cache tokenizes."""
        return unicodedata.normalize("NFKC", text).lower() if self.tokenizer == "unicode" else text

    def _sentence_ids(self, text: str, cache: TokenCache) -> list[list[int]]:
        """rougeLsum's sentences: the non-empty lines, each tokenized on its own."""
        return [cache.ids_of_words(self._prepared(line).split()) for line in text.split("\n") if line]

    # --------------------------------------------------------------- batch
    def _score_batch(self, rows: list[dict[str, Any]]) -> ScoreColumn:
        if self._cache.full():
            self._cache = self._new_cache()
        cache = self._cache
        sizes = [len(row["expected"]) for row in rows]
        if self.rouge_type == "rougeLsum":
            predictions = [self._sentence_ids(row["output"], cache) for row in rows]
            prf = [
                _summary_lcs_prf(self._sentence_ids(target, cache), predictions[i])
                for i, row in enumerate(rows)
                for target in row["expected"]
            ]
        else:
            prepared = [self._prepared(row["output"]) for row in rows]
            pred_ids, pred_lens = cache.ids_of_texts([prepared[i] for i, size in enumerate(sizes) for _ in range(size)])
            target_ids, target_lens = cache.ids_of_texts([self._prepared(t) for row in rows for t in row["expected"]])
            if self.order:
                prf = self._ngram_prf(pred_ids, pred_lens, target_ids, target_lens)
            else:
                prf = [
                    _lcs_prf(t, p) for p, t in zip(split_flat(pred_ids, pred_lens), split_flat(target_ids, target_lens))
                ]
        if len(prf) == len(rows):  # one reference each
            chosen = [(p, r, f, 1, 0) for p, r, f in prf]
        else:
            chosen, at = [], 0
            for size in sizes:
                scores = prf[at : at + size]
                best = max(range(size), key=lambda i: (scores[i][2], -i))  # first of the best F, like score_multi
                chosen.append((*scores[best], size, best))
                at += size
        rouge_type, signature = self.rouge_type, self.signature()

        def metadata(i: int) -> dict[str, Any]:  # made only when a row's metadata is read
            p, r, f, size, best = chosen[i]
            return {
                "precision": p,
                "recall": r,
                "fmeasure": f,
                "rouge_type": rouge_type,
                "nrefs": size,
                "best_reference": best,
                "signature": signature,
            }

        return ScoreColumn(self.name, [min(1.0, row[2]) for row in chosen], metadata)

    def _ngram_prf(
        self, pred_ids: np.ndarray, pred_lens: np.ndarray, target_ids: np.ndarray, target_lens: np.ndarray
    ) -> list[tuple[float, float, float]]:
        import numpy as np

        n = self.order
        overlap = clipped_ngram_matches(
            pred_ids, pred_lens, target_ids, target_lens, np.arange(len(target_lens)), max_order=n, min_order=n
        )[:, 0]
        # Element-wise IEEE operations in rouge-score's order, so the floats are the same as its Python ones.
        precision = overlap / np.maximum(pred_lens - n + 1, 1)
        recall = overlap / np.maximum(target_lens - n + 1, 1)
        total = precision + recall
        with np.errstate(invalid="ignore", divide="ignore"):
            fmeasure = np.where(total > 0, 2 * precision * recall / total, 0.0)
        return list(zip(precision.tolist(), recall.tolist(), fmeasure.tolist()))


def _fmeasure(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _lcs_prf(target: list[int], prediction: list[int]) -> tuple[float, float, float]:
    if not target or not prediction:
        return 0.0, 0.0, 0.0
    length = import_rapidfuzz().distance.LCSseq.similarity(target, prediction)
    precision, recall = length / len(prediction), length / len(target)
    return precision, recall, _fmeasure(precision, recall)


def _lcs_positions(ref: list[int], cand: list[int]) -> list[int]:
    """Positions in ``ref`` of one longest common subsequence with ``cand``.

    Which LCS is returned matters for rougeLsum's union: walking back from the
    end, a match is taken when the tokens agree, otherwise the candidate index
    moves only when that keeps a strictly longer prefix LCS (rouge-score's choice).
    """
    rows, cols = len(ref), len(cand)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        above, here, token = table[i - 1], table[i], ref[i - 1]
        for j in range(1, cols + 1):
            here[j] = above[j - 1] + 1 if token == cand[j - 1] else max(above[j], here[j - 1])
    positions = []
    i, j = rows, cols
    while i > 0 and j > 0:
        if ref[i - 1] == cand[j - 1]:
            positions.append(i - 1)
            i, j = i - 1, j - 1
        elif table[i][j - 1] > table[i - 1][j]:
            j -= 1
        else:
            i -= 1
    return positions


def _summary_lcs_prf(target: list[list[int]], prediction: list[list[int]]) -> tuple[float, float, float]:
    """Summary-level LCS (ROUGE-Lsum) with ROUGE-1.5.5's guard against counting a token twice."""
    if not target or not prediction:
        return 0.0, 0.0, 0.0
    target_len, prediction_len = sum(map(len, target)), sum(map(len, prediction))
    if not target_len or not prediction_len:
        return 0.0, 0.0, 0.0
    left_target = Counter(t for sentence in target for t in sentence)
    left_prediction = Counter(t for sentence in prediction for t in sentence)
    hits = 0
    for ref in target:
        union = sorted(set().union(*(_lcs_positions(ref, cand) for cand in prediction)))
        for token in (ref[i] for i in union):
            if left_prediction[token] > 0 and left_target[token] > 0:
                hits += 1
                left_prediction[token] -= 1
                left_target[token] -= 1
    precision, recall = hits / prediction_len, hits / target_len
    return precision, recall, _fmeasure(precision, recall)


for _name, _type, _aliases in (
    ("ROUGE-1", "rouge1", ("rouge1",)),
    ("ROUGE-2", "rouge2", ("rouge2",)),
    ("ROUGE-L", "rougeL", ("rougeL",)),
    ("ROUGE-Lsum", "rougeLsum", ("rougeLsum",)),
):
    register(name=_name, aliases=_aliases, rouge_type=_type)(ROUGE)
