"""How often G-Eval's sampled score interval (``score_mode: sampling``, ``wilson_bounded``) holds the mean it
estimates, beside a Student t interval, the obvious alternative: k samples drawn from a judge's distribution over
a 1-5 scale, many times, for a few shapes of that distribution (seeded; numpy).

Coverage is the share of draws whose 95 % interval holds the true mean; width is the interval's mean width on the
score's [0, 1]. A t interval is of width 0 when the k samples agree, so it misses whenever the judge is sure but not
certain; the Wilson interval with the bounded variance never is, and pays for it in width when the judge is sure.

    python benchmarks/sampling_interval_coverage.py                 # k = 3, 5, 10, 20; 20,000 draws each
    python benchmarks/sampling_interval_coverage.py --k 5 --draws 2000
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from scorers.judges.sampled import wilson

#: The judge's distribution over the values 1-5 of the scale.
SHAPES = {
    "sure of 4": [0, 0, 0.1, 0.8, 0.1],
    "mostly 5": [0, 0, 0, 0.1, 0.9],
    "spread": [0.1, 0.2, 0.3, 0.25, 0.15],
    "two ends": [0.5, 0, 0, 0, 0.5],
    "certain 3": [0, 0, 1, 0, 0],
}


def coverage(k: int, draws: int, seed: int) -> list[tuple[str, float, float, float, float]]:
    """Per shape: (name, Wilson coverage, Wilson width, t coverage, t width) over ``draws`` sets of k samples."""
    rng = np.random.default_rng(seed)
    values = np.arange(5) / 4  # 1-5 mapped onto [0, 1]
    rows = []
    for name, shape in SHAPES.items():
        mean = float(np.dot(shape, values))
        means = values[rng.choice(5, size=(draws, k), p=shape)]
        sample_means = means.mean(axis=1)
        bounds = np.array([wilson(m * k, k) for m in sample_means])
        held = (bounds[:, 0] <= mean + 1e-12) & (mean - 1e-12 <= bounds[:, 1])
        half = stats.t.ppf(0.975, k - 1) * means.std(axis=1, ddof=1) / np.sqrt(k)
        t_low, t_high = np.clip(sample_means - half, 0, 1), np.clip(sample_means + half, 0, 1)
        t_held = (t_low <= mean + 1e-12) & (mean - 1e-12 <= t_high)
        rows.append((name, held.mean(), np.mean(bounds[:, 1] - bounds[:, 0]), t_held.mean(), np.mean(t_high - t_low)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, action="append", help="samples per row (repeatable; default 3, 5, 10, 20)")
    parser.add_argument("--draws", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"95 % intervals, {args.draws:,} draws of k samples per shape (seed {args.seed})")
    print(f"{'k':>3} {'shape':<10} {'wilson_bounded':>15} {'width':>6} {'t':>7} {'width':>6}")
    for k in args.k or [3, 5, 10, 20]:
        for name, held, width, t_held, t_width in coverage(k, args.draws, args.seed):
            print(f"{k:>3} {name:<10} {held:>15.3f} {width:>6.2f} {t_held:>7.3f} {t_width:>6.2f}")


if __name__ == "__main__":
    main()
