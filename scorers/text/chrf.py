"""sacrebleu's chrF and chrF++, number for number, with a batch path and the corpus figure.

Every score equals ``sacrebleu.sentence_chrf`` for the same settings, divided by
100; the run summary adds ``corpus_chrf``, equal to ``sacrebleu.corpus_chrf`` on
the same rows. chrF++ is :class:`ChrF` with ``word_order=2``, registered as ``chrF++``.

>>> from scorers.text.chrf import ChrF
>>> round(ChrF(word_order=2)(output="the cat sat on the mat", expected="the cat sat on a mat").metadata["chrf"], 4)
72.0304
"""

from __future__ import annotations

import string
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .._util import lazy
from ..errors import ConfigError, ScorerError
from ..params import param
from ..reasoning import strip_reasoning_param
from ..registry import register
from ..score import Score
from ._ngrams import TokenCache, clipped_ngram_matches
from ._sacrebleu import SacrebleuScorer, chrf_f_score, clamp_unit, sacrebleu_private, with_nrefs

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ChrF"]


@register(aliases=("chrf", "sacrebleu-chrf"))
class ChrF(SacrebleuScorer):
    """sacrebleu chrF (character n-gram F-score); chrF++ with ``word_order=2`` (registered as ``chrF++``).

    Defaults are ``sacrebleu.sentence_chrf``'s: ``char_order=6``, ``word_order=0``,
    ``beta=2``, whitespace ignored, effective-order averaging (``eps_smoothing=False``).
    ``score`` is chrF/100; ``metadata["chrf"]`` is sacrebleu's figure. With several
    references the one with the best F is used, as sacrebleu does. ``stats`` holds the
    best reference's [hypothesis, reference, match] counts per order, then ``nrefs``
    and ``nrefs²``. Summaries add ``corpus_chrf`` (= ``sacrebleu.corpus_chrf``).

    >>> ChrF()(output="the cat", expected="the cat").score
    1.0
    """

    name = "chrF"
    description = "sacrebleu chrF/100 (chrF++ with word_order=2); corpus chrF in summaries"
    example = 'ChrF()(output="the cat sat on the mat", expected="the cat sat on a mat")'
    algorithm_version = "1"
    native_key = "chrf"

    char_order: int = param("the longest character n-grams counted", default=6, ge=0)
    word_order: int = param("the longest word n-grams counted (2: chrF++)", default=0, ge=0)
    beta: int = param("weight of recall against precision in the F-score", default=2, ge=0)
    lowercase: bool = param("lowercase both sides first", default=False)
    whitespace: bool = param("count whitespace among the characters", default=False)
    eps_smoothing: bool = param("average the F-scores of all orders, smoothed (sacrebleu's eps)", default=False)
    reasoning_fields = ("output",)
    strip_reasoning: bool = strip_reasoning_param()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.char_order + self.word_order == 0:
            raise ConfigError(f"{self.name}: char_order and word_order cannot both be 0", scorer=self.name)

    def _build_metric(self) -> Any:
        from sacrebleu.metrics.chrf import CHRF

        return CHRF(
            char_order=self.char_order,
            word_order=self.word_order,
            beta=self.beta,
            lowercase=self.lowercase,
            whitespace=self.whitespace,
            eps_smoothing=self.eps_smoothing,
        )

    @lazy
    def _f_score(self) -> Callable[[Sequence[int]], float]:
        """chrF (0-100) from one segment's or the corpus' summed statistics."""
        return sacrebleu_private(
            self._metric,
            "_compute_f_score",
            partial(
                chrf_f_score, order=self.char_order + self.word_order, beta=self.beta, eps_smoothing=self.eps_smoothing
            ),
        )

    def params(self) -> dict[str, Any]:
        return {**super().params(), "sacrebleu_version": self._sacrebleu_version}

    @lazy
    def _words(self) -> TokenCache:
        return self._new_cache()

    def _new_cache(self) -> TokenCache:
        puncts = sacrebleu_private(self._metric, "_PUNCTS", frozenset(string.punctuation))

        def split_word(word: str) -> list[str]:  # chrF++'s punctuation splitting, one word at a time
            if len(word) > 1 and word[-1] in puncts:
                return [word[:-1], word[-1]]
            if len(word) > 1 and word[0] in puncts:
                return [word[0], word[1:]]
            return [word]

        return TokenCache(split_word)

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        if self.word_order and self._words.full():
            self._words = self._new_cache()
        prep: Callable[[str], str] = (lambda t: t.lower()) if self.lowercase else (lambda t: t)
        hyps = [prep(row["output"]) for row in rows]
        groups = [[prep(ref) for ref in row["expected"]] for row in rows]
        pair_hyp = [i for i, group in enumerate(groups) for _ in group]
        pair_ref = [ref for group in groups for ref in group]
        stats = self._pair_stats([hyps[i] for i in pair_hyp], pair_ref)
        f_score = self._f_score
        out: list[Score | ScorerError] = []
        at = 0
        for group in groups:
            best_stats, best_f = stats[at], -1.0
            for candidate in stats[at : at + len(group)]:  # the first reference with the best F, as sacrebleu picks
                f = f_score(candidate)
                if f > best_f:
                    best_f, best_stats = f, candidate
            at += len(group)
            out.append(
                self.make_score(
                    clamp_unit(best_f / 100),
                    stats=with_nrefs(best_stats, len(group)),
                    chrf=best_f,
                    nrefs=len(group),
                    sacrebleu_signature=self._sacrebleu_signature(len(group)),
                )
            )
        return out

    def _pair_stats(self, hyps: list[str], refs: list[str]) -> list[list[int]]:
        """sacrebleu's [hyp, ref, match] counts per order (characters, then words) for each pair."""
        columns = []  # per order: (hyp totals, ref totals, matches)
        if self.char_order:
            chars = (lambda t: t) if self.whitespace else (lambda t: "".join(t.split()))
            hyp_text, ref_text = [chars(t) for t in hyps], [chars(t) for t in refs]
            columns += self._order_columns(_code_points(hyp_text), _code_points(ref_text), self.char_order)
        if self.word_order:
            cache = self._words
            hyp_words = cache.ids_of_texts(hyps)
            ref_words = cache.ids_of_texts(refs)
            columns += self._order_columns(hyp_words, ref_words, self.word_order)
        stats = []
        for i in range(len(hyps)):
            row: list[int] = []
            for hyp_total, ref_total, matches in columns:
                ref_n = int(ref_total[i])
                row += [int(hyp_total[i]) if ref_n else 0, ref_n, int(matches[i])]
            stats.append(row)
        return stats

    @staticmethod
    def _order_columns(
        hyp: tuple[np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray], max_order: int
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        import numpy as np

        (hyp_ids, hyp_lens), (ref_ids, ref_lens) = hyp, ref
        matches = clipped_ngram_matches(hyp_ids, hyp_lens, ref_ids, ref_lens, np.arange(len(ref_lens)), max_order)
        return [
            (np.maximum(hyp_lens - n + 1, 0), np.maximum(ref_lens - n + 1, 0), matches[:, n - 1])
            for n in range(1, max_order + 1)
        ]

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        chrf = self._f_score(totals)
        return chrf, clamp_unit(chrf / 100), {"stats": list(totals)}


def _code_points(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    # surrogatepass: a lone surrogate (valid in JSON text) is a code point like any other, as sacrebleu counts it
    flat = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    return flat, lens


register(name="chrF++", aliases=("chrf++", "chrF2++"), word_order=2)(ChrF)
