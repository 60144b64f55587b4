"""``rank``'s Bradley-Terry fit and bootstrap on 10 systems x 500 prompts, beside choix's fit of the same data.

Seeded preference data: every prompt compares every pair of systems once (45 comparisons a prompt, 22,500 in
all), verdicts drawn from known strengths with a length effect and 20 % ties. The comparisons are read once
(``read_comparisons``); the timings are of the fit (``compute_ranking`` with no resamples), of the fit with
1,000 bootstrap resamples over prompts (half-win ties, Davidson's ties, and half-win ties with the length
covariate), and of choix 0.4.1's ``opt_pairwise`` and ``ilsr_pairwise`` on the same comparisons (half-win
ties as duplicated comparisons), after checking that the strengths agree. Median of ``--repeat`` runs.

    python benchmarks/rank.py
    python benchmarks/rank.py --systems 20 --prompts 1000 --json /tmp/rank.json
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import versions, write_json  # noqa: E402
from scorers.options import RankOptions  # noqa: E402
from scorers.stats._comparisons import read_comparisons  # noqa: E402
from scorers.stats.ranking import compute_ranking  # noqa: E402


def rows(systems: int, prompts: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(scale=0.7, size=systems)
    out = []
    for prompt in range(prompts):
        for a in range(systems):
            for b in range(a + 1, systems):
                la, lb = (int(n) for n in rng.integers(20, 600, 2))
                d = strength[a] - strength[b] + 0.5 * (la - lb) / (la + lb)
                win = 0.8 / (1 + math.exp(-d))
                u = rng.random()
                winner = "a" if u < win else "tie" if u < win + 0.2 else "b"
                first, second = (a, b) if rng.random() < 0.5 else (b, a)
                if (first, second) != (a, b):
                    winner = {"a": "b", "b": "a", "tie": "tie"}[winner]
                    la, lb = lb, la
                row = {"prompt": prompt, "model_a": f"s{first}", "model_b": f"s{second}", "winner": winner}
                out.append(row | {"output": "x" * la, "expected": "y" * lb})
    return out


def timed(work: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> int:
    import choix

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the median is shown (default: 3)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    data = rows(args.systems, args.prompts)
    base = {"winner": "winner", "prompt": "prompt"}
    found = read_comparisons(data, RankOptions(**base))
    styled_found = read_comparisons(data, RankOptions(**base, style=("length",)))
    names = found.systems
    doubled = []
    for a, b, value in zip(found.first.tolist(), found.second.tolist(), found.outcome.tolist()):
        doubled += [(a, b), (a, b)] if value == 1.0 else [(b, a), (b, a)] if value == 0.0 else [(a, b), (b, a)]

    def ours(resamples: int, ties: str, style: bool = False) -> Any:
        options = RankOptions(**base, ties=ties, resamples=resamples, style=("length",) if style else ())
        return compute_ranking(styled_found if style else found, options)

    fit_s, fitted = timed(lambda: ours(0, "half"), args.repeat)
    opt_s, reference = timed(lambda: choix.opt_pairwise(len(names), doubled, alpha=0, tol=1e-10), args.repeat)
    ilsr_s, ilsr = timed(lambda: choix.ilsr_pairwise(len(names), doubled, alpha=0, tol=1e-10), args.repeat)
    strengths = np.array([fitted.system(name).strength for name in names])
    difference = max(
        float(np.max(np.abs(strengths - (reference - reference.mean())))),
        float(np.max(np.abs(strengths - (ilsr - ilsr.mean())))),
    )
    if difference > 1e-6:
        raise SystemExit(f"strengths differ from choix's by {difference:.2e}")
    davidson_s, _ = timed(lambda: ours(0, "davidson"), args.repeat)
    boot_s, _ = timed(lambda: ours(args.resamples, "half"), args.repeat)
    boot_davidson_s, _ = timed(lambda: ours(args.resamples, "davidson"), args.repeat)
    boot_style_s, _ = timed(lambda: ours(args.resamples, "half", style=True), 1)
    figures = {
        "systems": args.systems,
        "prompts": args.prompts,
        "comparisons": len(found.first),
        "resamples": args.resamples,
        "max_abs_difference_from_choix": difference,
        "fit_half_s": fit_s,
        "fit_davidson_s": davidson_s,
        "choix_opt_pairwise_s": opt_s,
        "choix_ilsr_pairwise_s": ilsr_s,
        "bootstrap_half_s": boot_s,
        "bootstrap_davidson_s": boot_davidson_s,
        "bootstrap_half_length_s": boot_style_s,
    }
    print(
        f"{args.systems} systems x {args.prompts} prompts = {len(found.first)} comparisons; strengths equal choix's "
        f"to {difference:.1e}; median of {args.repeat}"
    )
    print(f"  fit, half-win ties          {fit_s:8.3f} s")
    print(f"  fit, Davidson ties          {davidson_s:8.3f} s")
    print(f"  choix opt_pairwise          {opt_s:8.3f} s   ours {opt_s / fit_s:6.1f}x faster")
    print(f"  choix ilsr_pairwise         {ilsr_s:8.3f} s   ours {ilsr_s / fit_s:6.1f}x faster")
    print(f"  fit + {args.resamples} resamples, half  {boot_s:8.3f} s   {boot_s / fit_s:6.1f}x one fit")
    print(f"  fit + {args.resamples} resamples, Davidson {boot_davidson_s:5.3f} s")
    print(f"  fit + {args.resamples} resamples, half + length covariate {boot_style_s:6.3f} s (one run)")
    if args.json:
        write_json(args.json, [figures], {"versions": versions("numpy", "scipy", "choix")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
