"""sacrebleu's TER, number for number, with a batch path and the corpus figure.

Every row is scored by sacrebleu's own ``sentence_score``; the score is
``max(0, 1 - TER/100)`` and the run summary adds ``corpus_ter``, equal to
``sacrebleu.corpus_ter`` on the same rows. TER's edit search is the costly part
(about 1.5 ms a pair of sentences; sacrebleu's own search, driven by a loop here that
counts its steps and refuses a row past ``max_steps``): ``TER(processes=N)`` spreads big batches over ``N`` worker
processes that the scorer owns (:mod:`scorers.text._pool`); close them with
:meth:`TER.close` or a ``with`` block. By default everything runs in the caller's process.

>>> from scorers.text.ter import TER
>>> TER()(output="the cat sat", expected="the cat sat down").score
0.75
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable, Sequence

from .._util import lazy, memoize
from ..errors import ScorerError, ScorerInputError
from ..params import param
from ..reasoning import strip_reasoning_param
from ..registry import register
from ..score import Score
from ._pool import ProcessPool
from ._sacrebleu import SacrebleuScorer, sacrebleu_private, ter_from_stats, with_nrefs

__all__ = ["TER", "TER_PARALLEL_MIN_ROWS", "MAX_TER_STEPS"]

#: Rows from which a TER scorer with ``processes > 1`` spreads a batch over its worker processes.
TER_PARALLEL_MIN_ROWS = 64

#: The most steps TER's edit search may take on one row by default (``TER(max_steps=...)``), about 0.75 µs each
#: on one core of a 2-core machine: a row is refused after about 8 s. A step is a cell of an edit-distance matrix
#: the beam search fills, 64 cells it allocates, or 16 word pairs the shift search scans. A pair of sentences takes
#: a few thousand; a paragraph pair far more, as the search tries up to 1,000 shift candidates, each a new edit
#: distance over the whole text (two 1,000-character paragraphs of English: 8 million, 6 s; two 2,000-character
#: texts over 4 words: 65 million, 54 s).
MAX_TER_STEPS = 10_000_000

#: TER's settings, in the order of sacrebleu's ``TER`` constructor arguments, then the step budget.
_TERSettings = tuple[bool, bool, bool, bool, "int | None"]


class _OverBudget(Exception):
    """TER's edit search on a row took more than its step budget (raised inside sacrebleu's search)."""


class _Steps:
    """A row's step budget; :meth:`spend` raises :class:`_OverBudget` once it is exceeded."""

    def __init__(self, budget: int | None) -> None:
        self.left = budget

    def spend(self, steps: int) -> None:
        if self.left is not None:
            self.left -= steps
            if self.left < 0:
                raise _OverBudget


@memoize
def _sacrebleu_ter(settings: _TERSettings) -> Any:
    """sacrebleu's TER metric with these settings, its edit search bounded to ``max_steps`` a row, per process.

    The search is sacrebleu's own (``lib_ter``'s shift search and beam edit distance, step for step), so its
    numbers are sacrebleu's; only the loop that drives it is this module's, to count the steps it takes."""
    from sacrebleu.metrics import lib_ter
    from sacrebleu.metrics.ter import TER as SacreTER

    normalized, no_punct, asian_support, case_sensitive, max_steps = settings
    shift = sacrebleu_private(lib_ter, "_shift", None)
    beam = sacrebleu_private(lib_ter, "BeamEditDistance", None)
    most_candidates = sacrebleu_private(lib_ter, "_MAX_SHIFT_CANDIDATES", None)
    beam_steps = sacrebleu_private(lib_ter, "_BEAM_WIDTH", None)
    if max_steps is None or shift is None or beam is None or most_candidates is None or beam_steps is None:
        return SacreTER(  # the unbounded search
            normalized=normalized, no_punct=no_punct, asian_support=asian_support, case_sensitive=case_sensitive
        )

    class CountedEditDistance(beam):  # type: ignore[misc, valid-type]
        """sacrebleu's beam edit distance, spending a step per matrix cell it fills and per 64 it allocates."""

        def __init__(self, words_ref: list[str], steps: _Steps) -> None:
            super().__init__(words_ref)
            self.steps = steps

        def __call__(self, words_hyp: list[str]) -> tuple[int, str]:
            known, _ = self._find_cache(words_hyp)
            rows, width = len(words_hyp) - known, self._n_words_ref + 1
            ratio = self._n_words_ref / len(words_hyp) if words_hyp else 1
            beam_width = math.ceil(ratio / 2 + beam_steps) if beam_steps < ratio / 2 else beam_steps
            self.steps.spend(rows * min(2 * beam_width, width) + width + rows * width // 64)
            return super().__call__(words_hyp)

    def edit_rate(words_hyp: list[str], words_ref: list[str], steps: _Steps) -> tuple[int, int]:
        """``lib_ter.translation_edit_rate``, the same loop, counting steps."""
        if not words_ref:
            return len(words_hyp), 0
        cached_ed = CountedEditDistance(words_ref, steps)
        shifts, input_words, checked = 0, words_hyp, 0
        while True:  # shift until a shift no longer lowers the edit distance
            steps.spend(len(input_words) * len(words_ref) // 16)  # the search for matching word runs
            delta, shifted, checked = shift(input_words, words_ref, cached_ed, checked)
            if checked >= most_candidates or delta <= 0:
                break
            shifts += 1
            input_words = shifted
        edit_distance, _ = cached_ed(input_words)
        return shifts + edit_distance, len(words_ref)

    class TER(SacreTER):  # sacrebleu's, by its name (in messages), with a bounded search
        def _compute_segment_statistics(self, hypothesis: str, ref_kwargs: dict[str, Any]) -> list[float]:
            """sacrebleu's, with one step budget for the row (all its references)."""
            steps, words_hyp, best = _Steps(max_steps), hypothesis.split(), int(1e16)
            ref_words = ref_kwargs["ref_words"]
            ref_lengths = 0
            for words_ref in ref_words:
                num_edits, ref_len = edit_rate(words_hyp, words_ref, steps)
                ref_lengths += ref_len
                best = min(best, num_edits)
            return [best, ref_lengths / len(ref_words)]

    return TER(normalized=normalized, no_punct=no_punct, asian_support=asian_support, case_sensitive=case_sensitive)


def _ter_chunk(
    settings: _TERSettings, rows: list[tuple[str, tuple[str, ...]]]
) -> list[tuple[float, int, float] | None]:
    """sacrebleu's public ``sentence_score`` on each (hypothesis, references): TER, edits, average reference length;
    None for a row whose edit search took more than its step budget.

    Runs in pool workers too. sacrebleu's own segment path (tokenising each text
    once, then its edit search) is used as is: doing it ourselves per distinct text
    bought under 10 % (benchmarks/bench_text.py), not worth a private API.
    """
    metric = _sacrebleu_ter(settings)
    out: list[tuple[float, int, float] | None] = []
    for hypothesis, references in rows:
        try:
            result = metric.sentence_score(hypothesis, list(references))
        except _OverBudget:
            out.append(None)
            continue
        out.append((result.score, result.num_edits, result.ref_length))
    return out


@register(aliases=("ter", "sacrebleu-ter"))
class TER(SacrebleuScorer):
    """sacrebleu TER (translation edit rate), mapped to [0, 1] as ``max(0, 1 - TER/100)``.

    TER counts edits (with shifts) per reference word, so lower is better and it
    can exceed 100; the score is ``1 - TER/100`` floored at 0 (TER 0 → 1.0, TER ≥ 100
    → 0.0). ``metadata["ter"]`` is sacrebleu's native TER, with ``num_edits`` and
    ``ref_length``; ``stats`` holds ``[edits, average reference length, nrefs, nrefs²]``.
    Defaults are ``sacrebleu.sentence_ter``'s (case-insensitive, no
    normalisation); each row is scored by sacrebleu's own ``sentence_score``. TER's
    edit search is costly (about 1.5 ms a pair of sentences, seconds for paragraphs). With ``processes=N`` (N > 1),
    batches of at least ``TER_PARALLEL_MIN_ROWS`` rows run it in ``N`` worker
    processes this scorer owns (started on first use, from a fresh process; see
    :mod:`scorers.text._pool`), with the same numbers; :meth:`close`, or leaving a
    ``with`` block, stops them, and so does collecting the scorer. Workers import
    the caller's ``__main__``, so a script guards its entry point with
    ``if __name__ == "__main__":``, as for the runner's ``workers`` (which spread a
    run over processes without this). The default, ``processes=1``, starts no process.
    Summaries add ``corpus_ter`` (= ``sacrebleu.corpus_ter``; lower is better) and
    ``corpus_score`` on the same mapping.

    The edit search's time and memory grow much faster than the text (two
    English texts of 5,000 characters: 37 s; of 1 MB, past 8 GB), so a
    hypothesis or reference longer than ``max_chars`` (5,000 characters by
    default) is a row's :class:`~scorers.errors.ScorerInputError`;
    ``max_chars=None`` lifts the limit. Within it, a long text over a few
    distinct words still makes the search try its 1,000 shift candidates, each a
    new edit distance (two 2,000-character texts over 4 words took 54 s), so a row
    whose search takes more than ``max_steps`` steps (:data:`MAX_TER_STEPS`, about
    8 s) is refused the same way; below it the number is sacrebleu's, step for
    step; ``max_steps=None`` lifts the limit.

    >>> TER()(output="the cat sat", expected="the cat sat down").metadata["ter"]
    25.0
    """

    name = "TER"
    description = "sacrebleu TER mapped to max(0, 1 - TER/100); corpus TER in summaries"
    example = 'TER()(output="the cat sat", expected="the cat sat down")  # TER 25 -> 0.75'
    algorithm_version = "1"
    native_key = "ter"

    normalized: bool = param("normalise punctuation and tokenise first (sacrebleu's normalized)", default=False)
    no_punct: bool = param("remove punctuation first", default=False)
    asian_support: bool = param("tokenise Asian scripts by character", default=False)
    case_sensitive: bool = param("compare case-sensitively", default=False)
    reasoning_fields = ("output",)
    strip_reasoning: bool = strip_reasoning_param()
    max_chars: int | None = param(
        "longest hypothesis or reference (the edit search's cost grows much faster); None: no limit",
        default=5_000,
        ge=1,
        signed=False,
    )
    max_steps: int | None = param(
        "most steps the edit search may take on a row; None: no limit", default=MAX_TER_STEPS, ge=1, signed=False
    )
    processes: int = param(
        "worker processes for big batches (1: none; the numbers are the same)", default=1, ge=1, signed=False
    )

    def _build_metric(self) -> Any:
        return _sacrebleu_ter(self._settings())

    def _settings(self) -> _TERSettings:
        return (self.normalized, self.no_punct, self.asian_support, self.case_sensitive, self.max_steps)

    @lazy
    def _from_stats(self) -> Callable[[Sequence[float]], Any]:
        """sacrebleu's ``TERScore`` (score, num_edits, ref_length) from summed [edits, reference length]."""
        return sacrebleu_private(self._metric, "_compute_score_from_stats", ter_from_stats)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "sacrebleu_version": self._sacrebleu_version}

    # ------------------------------------------------------------- processes
    @lazy
    def _pool(self) -> ProcessPool:
        """This scorer's worker processes (none start until a big batch needs them); never pickled."""
        return ProcessPool(self.processes, owner=self.name)

    def close(self) -> None:
        """Stop this scorer's worker processes, if any (a later big batch starts them again)."""
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.close()

    def __enter__(self) -> TER:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ter_rows(self, rows: list[tuple[str, tuple[str, ...]]]) -> list[tuple[float, int, float] | None]:
        """:func:`_ter_chunk` on every row; in the worker processes when there are some and the batch is big."""
        settings = self._settings()
        if self.processes > 1 and len(rows) >= TER_PARALLEL_MIN_ROWS:
            size = -(-len(rows) // (4 * self.processes))
            done = self._pool.map(
                partial(_ter_chunk, settings), [rows[i : i + size] for i in range(0, len(rows), size)]
            )
            if done is not None:
                return [r for chunk in done for r in chunk]
        return _ter_chunk(settings, rows)

    # ----------------------------------------------------------------- batch
    def _score_batch(self, rows: list[dict[str, Any]]) -> list[Score | ScorerError]:
        results = self._ter_rows([(row["output"], row["expected"]) for row in rows])
        out: list[Score | ScorerError] = []
        for row, result in zip(rows, results):
            if result is None:
                out.append(self._too_costly())
                continue
            ter, num_edits, ref_length = result
            nrefs = len(row["expected"])
            # The corpus figure sums these statistics. sacrebleu adds the rows' average reference
            # lengths as floats in row order, which rounds at every step when an average is not exact
            # (e.g. 3 references of 10 words in all); the aggregator sums exactly, so that shards merge
            # into the figure of one pass. The two agree whenever sacrebleu's float sum is exact: when
            # the averages are integers (kept as int here: one reference, or lengths divisible by their
            # count) or halves and quarters (2 or 4 references), as long as the sums stay below 2**50.
            average = int(ref_length) if float(ref_length).is_integer() else ref_length
            out.append(
                self.make_score(
                    self._unit(ter),
                    stats=with_nrefs([num_edits, average], nrefs),
                    ter=ter,
                    num_edits=num_edits,
                    ref_length=ref_length,
                    nrefs=nrefs,
                    sacrebleu_signature=self._sacrebleu_signature(nrefs),
                )
            )
        return out

    def _too_costly(self) -> ScorerInputError:
        return ScorerInputError(
            self.name,
            "output",
            f"and its reference(s) took more than max_steps={self.max_steps:,} steps of TER's edit search (about "
            "0.75 µs each; a long text over few distinct words, where the search tries up to 1,000 shifts, each a "
            "new edit distance): shorten the texts, or raise the limit with "
            f"scorers.get({self.name!r}, max_steps=...) or -p {self.name}.max_steps=... (null: no limit)",
        )

    @staticmethod
    def _unit(ter: float) -> float:
        return max(0.0, 1.0 - ter / 100)

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        result = self._from_stats(totals)
        return result.score, self._unit(result.score), {"num_edits": result.num_edits, "ref_length": result.ref_length}
