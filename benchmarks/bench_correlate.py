"""``correlate`` over large results files: rows/s and peak memory, with and without ``--group-by``.

Each case writes a seeded results file (10 systems per document, human scores 0-100, two scorers),
then runs ``python -m scorers correlate`` on it in a child process that reports its wall time and
peak RSS (``ru_maxrss``). Without ``--group-by`` the bootstrap resamples rows, with it documents
(10 rows each) and the summary and system levels are added.

    python benchmarks/bench_correlate.py                          # 100,000 and 1,000,000 rows, 1,000 resamples
    python benchmarks/bench_correlate.py --rows 20000 --resamples 200 --json /tmp/correlate.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import versions, write_json  # noqa: E402

SYSTEMS = 10

#: The child: runs the command's function as `python -m scorers correlate ARGS` would, then prints time and peak RSS.
CHILD = """
import resource, sys, time
import scipy.stats  # imported before the clock starts: the figures are the command's work
from scorers.cli import main
start = time.perf_counter()
code = main(["correlate", *sys.argv[1:]])
print(code, time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_results(path: Path, rows: int, seed: int = 0) -> None:
    """A results file of ``rows`` rows: document, system, a human score and the scores of A and B."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=rows)
    human = np.clip(np.round(quality * 15 + 60), 0, 100).astype(int).tolist()
    a = np.round(quality + rng.normal(size=rows), 4).tolist()
    b = np.round(rng.random(rows), 4).tolist()
    with path.open("w") as out:
        for i in range(rows):
            record = {"doc": f"d{i // SYSTEMS}", "system": f"s{i % SYSTEMS}", "human": human[i]}
            out.write(json.dumps({**record, "scores": {"A": a[i], "B": b[i]}}) + "\n")


def run(path: Path, rows: int, grouped: bool, resamples: int) -> dict[str, Any]:
    args = [str(path), "--human", "human", "--resamples", str(resamples), "--no-progress"]
    if grouped:
        args += ["--group-by", "doc", "--system-key", "system"]
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"correlate failed on {rows} rows:\n{done.stderr[-2000:]}")
    code, seconds, peak_kb = done.stdout.split()[-3:]
    return {
        "rows": rows,
        "group_by": "doc" if grouped else None,
        "resamples": resamples,
        "exit": int(code),
        "seconds": round(float(seconds), 1),
        "rows_per_s": round(rows / float(seconds)),
        "peak_rss_mb": round(int(peak_kb) / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="rows (repeatable; default 100000 and 1000000)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    parser.add_argument("--no-group-by", action="store_true", help="only the runs without --group-by")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    results = []
    print(f"{'rows':>9} {'group-by':>8} {'resamples':>9} {'seconds':>8} {'rows/s':>8} {'peak RSS':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows or [100_000, 1_000_000]:
            path = Path(tmp) / f"results-{rows}.jsonl"
            write_results(path, rows)
            for grouped in (False,) if args.no_group_by else (False, True):
                r = run(path, rows, grouped, args.resamples)
                results.append(r)
                print(
                    f"{rows:>9} {r['group_by'] or '-':>8} {r['resamples']:>9} {r['seconds']:>8} "
                    f"{r['rows_per_s']:>8} {r['peak_rss_mb']:>6} MB",
                    flush=True,
                )
    if args.json:
        write_json(args.json, results, {"versions": versions("numpy", "scipy")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
