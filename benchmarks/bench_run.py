"""Whole runs through ``python -m scorers run``: the --workers speed-up and peak memory as the input grows.

1. ``--workers``: ROUGE-L + METEOR + BLEU on the same seeded rows at 1 and 2 workers (and more with
   ``--workers-max``), checking that the output files are identical, and reporting rows/s and the ratio.
2. Streaming: ExactMatch + Levenshtein on 100,000 and 1,000,000 rows, reporting rows/s and the peak RSS of
   each run (its own process), and the ratio of the peaks (a streaming run stays near 1).

    python benchmarks/bench_run.py                       # 200,000 rows for --workers; 100k / 1M for memory
    python benchmarks/bench_run.py --rows 20000 --memory-rows 10000 100000   # a quick look
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import make_pairs, write_json  # noqa: E402

#: Runs the CLI as a child and prints its wall time and peak RSS (KiB), measured by the kernel for that child.
_MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.run([sys.executable, "-m", "scorers", *sys.argv[1:]], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode
print(code, time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def write_rows(path: Path, n: int, seed: int) -> None:
    pairs = make_pairs(min(n, 50_000), seed=seed)
    with path.open("w") as fh:
        for i in range(n):
            output, expected = pairs[i % len(pairs)]
            fh.write(json.dumps({"id": i, "output": output, "expected": expected}) + "\n")


def measure(*args: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of ``python -m scorers ARGS``; fails loudly if the run fails."""
    result = subprocess.run([sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, check=True)
    code, seconds, rss = result.stdout.split()
    if code != "0":
        raise SystemExit(f"python -m scorers {' '.join(args)} exited {code}")
    return float(seconds), int(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="rows for the --workers comparison")
    parser.add_argument("--workers-max", type=int, default=2)
    parser.add_argument("--memory-rows", type=int, nargs=2, default=[100_000, 1_000_000])
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        data, warm = Path(tmp) / "rows.jsonl", Path(tmp) / "warm.jsonl"
        write_rows(data, args.rows, seed=7)
        write_rows(warm, 100, seed=7)
        scorers = ["-s", "ROUGE-L", "-s", "METEOR", "-s", "BLEU"]
        subprocess.run(
            [sys.executable, "-m", "scorers", "run", str(warm), *scorers, "-o", os.devnull],
            capture_output=True,
            check=True,
        )  # warm-up: WordNet index, page cache
        base = None
        for workers in range(1, args.workers_max + 1):
            out = Path(tmp) / f"out{workers}.jsonl"
            seconds, rss = measure(
                "run", str(data), *scorers, "--workers", str(workers), "-o", str(out), "--no-progress"
            )
            if workers > 1 and not filecmp.cmp(Path(tmp) / "out1.jsonl", out, shallow=False):
                raise SystemExit(f"--workers {workers} wrote a different file than --workers 1")
            base = base or seconds
            results.append(
                {
                    "case": f"ROUGE-L+METEOR+BLEU --workers {workers}",
                    "rows": args.rows,
                    "rows_per_s": args.rows / seconds,
                    "speedup": base / seconds,
                    "peak_rss_mib": rss / 1024,
                }
            )
        peaks = []
        for n in args.memory_rows:
            write_rows(data, n, seed=11)
            seconds, rss = measure(
                "run", str(data), "-s", "ExactMatch", "-s", "Levenshtein", "-o", os.devnull, "--no-progress"
            )
            peaks.append(rss)
            results.append(
                {
                    "case": f"ExactMatch+Levenshtein, {n:,} rows",
                    "rows": n,
                    "rows_per_s": n / seconds,
                    "peak_rss_mib": rss / 1024,
                }
            )
        results[-1]["peak_ratio"] = peaks[-1] / peaks[0]
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for r in results:
        extra = "".join(f"  {k} {r[k]:.2f}" for k in ("speedup", "peak_ratio") if k in r)
        print(f"{r['case']:<42} {r['rows_per_s']:>10,.0f} rows/s  peak RSS {r['peak_rss_mib']:7.1f} MiB{extra}")
    if args.json:
        write_json(args.json, results, {"load_average": load})


if __name__ == "__main__":
    main()
