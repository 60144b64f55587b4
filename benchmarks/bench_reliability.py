"""Bootstrap intervals of Krippendorff's alpha: ``scorers.stats.alpha_with_ci`` against the ``krippendorff``
package called once per resample (the loop a user writes around it), on the same seeded ratings.

Each level first checks that the two agree on the drawn rows (the first ``--check`` resamples of the
same draws, to 1e-12), then times ours on ``--resamples`` resamples and the package on
``--peer-resamples`` (it is slow: its time is scaled to ``--resamples``), and reports the ratio.

    python benchmarks/bench_reliability.py                    # 1,000 units x 5 raters, 2,000 resamples
    python benchmarks/bench_reliability.py --units 10000 --json /tmp/reliability.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import versions, write_json  # noqa: E402
from scorers.stats import alpha_with_ci, reliability  # noqa: E402


def ratings(units: int, raters: int, categories: int, seed: int = 0) -> np.ndarray:
    """Raters who mostly agree on a unit's category, 10 % of ratings missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, categories, units)
    noise = rng.integers(-1, 2, (units, raters)) * (rng.random((units, raters)) < 0.4)
    matrix = np.clip(truth[:, None] + noise, 0, categories - 1).astype(np.float64)
    matrix[rng.random((units, raters)) < 0.1] = np.nan
    return matrix


def peer(matrix: np.ndarray, level: reliability.Level, drawn: np.ndarray) -> list[float]:
    """The package's alpha on each resample's rows."""
    import krippendorff

    return [float(krippendorff.alpha(reliability_data=matrix[rows].T, level_of_measurement=level)) for rows in drawn]


def case(
    matrix: np.ndarray, level: reliability.Level, resamples: int, peer_resamples: int, check: int
) -> dict[str, Any]:
    pairable = matrix[(~np.isnan(matrix)).sum(axis=1) >= 2]
    # the same draws as alpha_with_ci's: the first `check` resamples of default_rng(0)
    drawn = np.random.default_rng(0).choice(len(pairable), size=(check, len(pairable)), replace=True)
    units = reliability._AlphaUnits.of(pairable, level)
    ours_drawn = units.figures(reliability._weights(np.random.default_rng(0), len(pairable), check))
    diff = float(np.max(np.abs(ours_drawn - peer(pairable, level, drawn))))
    if diff > 1e-12:
        raise AssertionError(f"{level}: the resampled alphas differ from the krippendorff package by {diff}")
    alpha_with_ci(matrix, level, resamples=10)  # imports and caches warm
    start = time.perf_counter()
    estimate = alpha_with_ci(matrix, level, resamples=resamples)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    peer(pairable, level, np.random.default_rng(1).choice(len(pairable), size=(peer_resamples, len(pairable))))
    package = (time.perf_counter() - start) * resamples / peer_resamples
    return {
        "level": level,
        "units": len(pairable),
        "raters": matrix.shape[1],
        "resamples": resamples,
        "ours_s": round(ours, 3),
        "package_s": round(package, 2),
        "ratio": round(package / ours, 1),
        "max_abs_diff": diff,
        "alpha": estimate.to_dict(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1000, help="units (rows; default: 1000)")
    parser.add_argument("--raters", type=int, default=5, help="raters (jurors; default: 5)")
    parser.add_argument("--categories", type=int, default=5, help="distinct values (default: 5)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default: 2000)")
    parser.add_argument(
        "--peer-resamples", type=int, default=100, help="resamples the package is timed on (default: 100)"
    )
    parser.add_argument("--check", type=int, default=20, help="resamples compared with the package (default: 20)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    matrix = ratings(args.units, args.raters, args.categories)
    print(f"{'level':<9} {'units':>6} {'resamples':>9} {'ours s':>8} {'package s':>10} {'ratio':>7}")
    results = []
    for level in reliability.LEVELS:
        r = case(matrix, level, args.resamples, args.peer_resamples, args.check)
        results.append(r)
        print(
            f"{level:<9} {r['units']:>6} {r['resamples']:>9} {r['ours_s']:>8} {r['package_s']:>10} {r['ratio']:>6}x",
            flush=True,
        )
    if args.json:
        write_json(args.json, results, {"versions": versions("numpy", "scipy", "krippendorff")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
