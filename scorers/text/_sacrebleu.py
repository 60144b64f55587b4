"""What sacrebleu's scorers share: the one door to sacrebleu's private parts, its fallbacks, the base class.

:func:`sacrebleu_private` is the only place that reads a private part of sacrebleu;
:func:`chrf_f_score` and :func:`ter_from_stats` are its public-API fallbacks (the
tests check they give identical numbers). :class:`SacrebleuScorer` holds the fields,
signatures and corpus aggregation of :class:`~scorers.text.bleu.BLEU`,
:class:`~scorers.text.chrf.ChrF` and :class:`~scorers.text.ter.TER`.

Each row's sufficient statistics go to ``Score.stats``; the scorers' aggregators
(:class:`~scorers.aggregate.StatsAggregator`) sum them exactly, so a run summary
reports the **corpus** figure papers quote (``corpus_bleu``, ``corpus_chrf``,
``corpus_ter``), equal to ``sacrebleu.corpus_bleu`` & co. on the same rows, and
shards of a run merge into the figure of one pass. A row's statistics are
sacrebleu's segment statistics followed by the row's number of references and its
square: summed, those two tell exactly whether all rows had the same number of
references (the ``nrefs`` of the corpus signature).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, ClassVar, Sequence, TypeVar

from .._util import lazy, optional_import
from ..aggregate import Aggregator, StatsAggregator
from ..base import Scorer
from ..fields import references_field, text_field
from ._ngrams import CachedSignature

__all__ = ["SacrebleuScorer", "chrf_f_score", "clamp_unit", "sacrebleu_private", "ter_from_stats", "with_nrefs"]

T = TypeVar("T")


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
    warnings.warn(
        f"sacrebleu {version} has no {owner_name}.{name}; scorers uses its public-API equivalent, which "
        "gives sacrebleu 2.6.0's numbers (check them against this release)",
        RuntimeWarning,
        stacklevel=2,
    )
    return fallback


def chrf_f_score(stats: Sequence[int], *, order: int, beta: int, eps_smoothing: bool) -> float:
    """chrF (0-100) from [hypothesis, reference, match] counts per order: the fallback of ``CHRF._compute_f_score``.

    Per order, precision and recall (a missing side counts as 1e-16) and their
    F-beta; with ``eps_smoothing`` the mean F over all orders, else the F-beta of
    precision and recall averaged over the orders where both sides have n-grams.
    The floating-point operations are sacrebleu's, in its order, so the floats are equal.
    """
    eps, factor = 1e-16, beta**2
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


def ter_from_stats(stats: Sequence[float]) -> Any:
    """sacrebleu's ``TERScore`` from [edits, reference length]: the fallback of ``TER._compute_score_from_stats``."""
    from sacrebleu.metrics.ter import TERScore

    edits, ref_length = stats[0], stats[1]
    if ref_length > 0:
        rate = edits / ref_length
    else:  # an empty reference: any edit is a full error
        rate = 1.0 if edits > 0 else 0.0
    return TERScore(100 * rate, edits, ref_length)


def clamp_unit(value: float) -> float:
    """sacrebleu's 100-point figures can exceed 100 by one ulp (exp(log(100)))."""
    return min(1.0, max(0.0, value))


def with_nrefs(stats: Sequence[float], nrefs: int) -> tuple[float, ...]:
    """A row's ``Score.stats``: sacrebleu's segment statistics, then the reference count and its square."""
    return (*stats, nrefs, nrefs * nrefs)


class SacrebleuScorer(CachedSignature, Scorer):
    """Shared parts of the sacrebleu scorers: fields, signatures, corpus aggregation.

    State that is rebuilt rather than pickled (sacrebleu's metric object, token
    caches, signature strings) sits behind ``@lazy``.
    """

    kind = "text"
    extra = "text"
    fields = (text_field("output", description="hypothesis (system output)"), references_field())
    #: Key of the native figure in metadata and of the corpus figure (``corpus_<key>``) in summaries.
    native_key: ClassVar[str] = ""

    def __post_init__(self) -> None:
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
        return StatsAggregator(
            self._corpus_figures, (f"corpus_{self.native_key}", "corpus_score", "corpus_signature", "corpus_details")
        )

    def _corpus_figures(self, totals: Sequence[Any], rows: int) -> dict[str, Any]:
        *metric_totals, nrefs_sum, nrefs_squares = totals
        # The reference counts are all equal exactly when their variance is 0: rows * sum(k^2) == (sum k)^2.
        nrefs: int | str = nrefs_sum // rows if rows * nrefs_squares == nrefs_sum * nrefs_sum else "var"
        native, score, details = self._corpus_from_stats(metric_totals)
        return {
            f"corpus_{self.native_key}": native,
            "corpus_score": score,
            "corpus_signature": self._sacrebleu_signature(nrefs, corpus=True),
            "corpus_details": details,
        }

    def _corpus_from_stats(self, totals: list[Any]) -> tuple[float, float, dict[str, Any]]:
        raise NotImplementedError
