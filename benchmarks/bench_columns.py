"""Results as columns (issue 28): a streaming ``run`` of the columnar scorers at two sizes, this tree's against a
baseline tree's, each figure beside the other in one run.

``run -s ExactMatch -s Levenshtein -s NumericDiff`` (one row in three holds numbers as text; NumericDiff fails on
the others: its errors are a sparse column) on 100,000 and 1,000,000 rows, with and without ``--metadata``: rows/s, the peak RSS of each run and the
ratio of the larger run's peak to the smaller's (goal: at most 1.1, memory flat). ``--baseline DIR`` (a checkout
of the package before the change, e.g. ``git archive COMMIT scorers | tar -x -C DIR``) runs the same commands with
that tree first on ``PYTHONPATH``; the results files of both must be identical.

    python benchmarks/bench_columns.py --baseline /tmp/before
    python benchmarks/bench_columns.py --sizes 10000 100000        # a quick look
    python benchmarks/bench_columns.py --baseline /tmp/before -s ROUGE-L -s ROUGE-2   # other scorers
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_run import measure  # noqa: E402
from common import make_pairs, write_json  # noqa: E402

SCORERS = ["ExactMatch", "Levenshtein", "NumericDiff"]
HERE = str(Path(__file__).resolve().parents[1])


def write_rows(path: Path, n: int, seed: int) -> None:
    """``n`` rows of seeded text pairs; one in three holds two numbers as text instead."""
    pairs = make_pairs(min(n, 50_000), seed=seed)
    with path.open("w") as fh:
        for i in range(n):
            output, expected = pairs[i % len(pairs)] if i % 3 else (f"{i / 7:.3f}", str(i % 97))
            fh.write(json.dumps({"id": i, "output": output, "expected": expected}) + "\n")


def timed_run(tree: str, data: Path, out: Path, names: list[str], *options: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of ``python -m scorers run -s NAME...`` with ``tree`` first on PYTHONPATH."""
    os.environ["PYTHONPATH"] = tree
    chosen = [arg for name in names for arg in ("-s", name)]
    return measure(
        sys.executable, "-m", "scorers", "run", str(data), *chosen, "-o", str(out), "--no-progress", *options
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs=2, default=[100_000, 1_000_000])
    parser.add_argument("--baseline", metavar="DIR", help="a tree holding the package before the change")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("-s", "--scorer", action="append", dest="scorers", help=f"default: {' '.join(SCORERS)}")
    args = parser.parse_args()
    names = args.scorers or SCORERS
    trees = [("this tree", HERE)] + ([("baseline", args.baseline)] if args.baseline else [])
    load_before = os.getloadavg()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for options in ([], ["--metadata"]):
            peaks: dict[str, list[int]] = {label: [] for label, _ in trees}
            for n in args.sizes:
                data = tmp / "rows.jsonl"
                write_rows(data, n, seed=11)
                for label, tree in reversed(trees):  # the baseline first, then this tree
                    out = tmp / f"{label.replace(' ', '_')}.jsonl"
                    seconds, rss = timed_run(tree, data, out, names, *options)
                    peaks[label].append(rss)
                    results.append(
                        {
                            "case": f"{label}, {n:,} rows{' --metadata' if options else ''}",
                            "rows": n,
                            "rows_per_s": n / seconds,
                            "peak_rss_mib": rss / 1024,
                        }
                    )
                if args.baseline and not filecmp.cmp(tmp / "this_tree.jsonl", tmp / "baseline.jsonl", shallow=False):
                    raise SystemExit(
                        f"{n:,} rows {options}: this tree wrote a different results file than the baseline"
                    )
            for label, _ in trees:
                results.append(
                    {
                        "case": f"{label}, peak RSS {args.sizes[1]:,} / {args.sizes[0]:,}{' --metadata' if options else ''}",
                        "peak_ratio": peaks[label][1] / peaks[label][0],
                        "goal": 1.1,
                    }
                )
    load_after = os.getloadavg()
    for r in results:
        if "peak_ratio" in r:
            print(f"{r['case']:<55} {r['peak_ratio']:6.3f}  (goal <= {r['goal']})")
        else:
            print(f"{r['case']:<55} {r['rows_per_s']:>10,.0f} rows/s  peak {r['peak_rss_mib']:7.1f} MiB")
    print(f"{os.cpu_count()} CPUs, load average before/after {load_before[0]:.2f} / {load_after[0]:.2f}")
    if args.json:
        write_json(
            args.json,
            results,
            {
                "sizes": args.sizes,
                "scorers": names,
                "load_average_before": load_before,
                "load_average_after": load_after,
            },
        )


if __name__ == "__main__":
    main()
