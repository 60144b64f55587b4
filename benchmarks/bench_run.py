"""Whole runs through ``python -m scorers run``, each figure printed next to its goal (issue 18).

1. Streaming: ExactMatch + Levenshtein on 1,000,000 rows, in rows/s (goal: at least 100,000), and the peak RSS of
   that run and of a 100,000-row one (goal: flat, a ratio near 1). Beside it, the floor: the same JSON lines read
   and the same results lines written (orjson, ``scorers.io``) by a process that scores nothing, so that the
   difference is what scoring and the run's bookkeeping cost.
2. ``--workers``: ROUGE-L alone on 100,000 and 500,000 rows at 1 and 2 workers (goal: at least 0.85 of the
   machine's parallel ceiling, and never under 1x), and the ROUGE-L + METEOR + BLEU mix, each time checking that the
   results files are identical. Beside each run with workers: the ceiling measured just before and after it
   (``bench_workers.ceiling``: N busy loops at once against one), the speed-up's share of it, the load average,
   and the workers the run used (its summary's ``workers``: absent where it used all it was asked for).

Each run is its own process, timed from its start (imports included) to its end.

    python benchmarks/bench_run.py                                   # the figures of the goals
    python benchmarks/bench_run.py --rows 20000 --memory-rows 10000 100000 --mix-rows 2000   # a quick look
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_workers import ceiling  # noqa: E402
from common import make_pairs, write_json  # noqa: E402

#: Runs a command as a child and prints its exit code, wall time and peak RSS (KiB), measured by the kernel.
_MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
print(code, time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

#: The floor: the rows of a JSONL file read and their results lines written as the run writes them, no scoring.
_FLOOR = """
import sys
from scorers.io import JsonlLines, json_lines
with JsonlLines(sys.argv[1]) as source, open(sys.argv[2], "wb") as out:
    while (chunk := source.next_chunk(1 << 17)) is not None:
        rows = list(chunk.rows())
        for row in rows:
            row["scores"] = {"ExactMatch": 0.0, "Levenshtein": 0.5}
        out.write(json_lines(rows))
"""

STREAM_SCORERS = ["-s", "ExactMatch", "-s", "Levenshtein"]
MIX_SCORERS = ["-s", "ROUGE-L", "-s", "METEOR", "-s", "BLEU"]


def write_rows(path: Path, n: int, seed: int) -> None:
    pairs = make_pairs(min(n, 50_000), seed=seed)
    with path.open("w") as fh:
        for i in range(n):
            output, expected = pairs[i % len(pairs)]
            fh.write(json.dumps({"id": i, "output": output, "expected": expected}) + "\n")


def measure(*command: str) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of ``command``; fails loudly if it fails."""
    result = subprocess.run([sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, check=True)
    code, seconds, rss = result.stdout.split()
    if code != "0":
        raise SystemExit(f"{' '.join(command)} exited {code}")
    return float(seconds), int(rss)


def run(data: Path, out: Path | str, scorers: list[str], *options: str) -> tuple[float, int]:
    return measure(
        sys.executable, "-m", "scorers", "run", str(data), *scorers, "-o", str(out), "--no-progress", *options
    )


def streaming(tmp: Path, sizes: list[int]) -> list[dict[str, Any]]:
    """ExactMatch + Levenshtein at each size, and the floor at the largest."""
    results, peaks = [], []
    data = tmp / "stream.jsonl"
    for n in sizes:
        write_rows(data, n, seed=11)
        seconds, rss = run(data, os.devnull, STREAM_SCORERS)
        peaks.append(rss)
        results.append(
            {
                "case": f"ExactMatch+Levenshtein, {n:,} rows",
                "rows": n,
                "rows_per_s": n / seconds,
                "peak_rss_mib": rss / 1024,
            }
        )
    seconds, rss = measure(sys.executable, "-c", _FLOOR, str(data), os.devnull)
    results.append(
        {
            "case": f"floor: read + write only, {sizes[-1]:,} rows",
            "rows": sizes[-1],
            "rows_per_s": sizes[-1] / seconds,
            "peak_rss_mib": rss / 1024,
            "floor_share": results[-1]["rows_per_s"] * seconds / sizes[-1],
        }
    )
    results[len(sizes) - 1]["goal_rows_per_s"] = 100_000
    results[len(sizes) - 1]["peak_ratio"] = peaks[-1] / peaks[0]
    return results


def workers(tmp: Path, case: str, scorers: list[str], rows: int, most: int) -> list[dict[str, Any]]:
    """``scorers`` on ``rows`` rows at 1 .. ``most`` workers; the files must be identical."""
    data = tmp / "workers.jsonl"
    write_rows(data, rows, seed=7)
    warm = tmp / "warm.jsonl"
    write_rows(warm, 100, seed=7)
    run(warm, os.devnull, scorers)  # WordNet's index, the page cache
    results, base = [], None
    for count in range(1, most + 1):
        out, summary = tmp / f"out{count}.jsonl", tmp / "summary.json"
        top = ceiling(count) if count > 1 else 1.0
        seconds, rss = run(data, out, scorers, "--workers", str(count), "--summary-json", str(summary))
        if count > 1:
            top = (top + ceiling(count)) / 2
        if count > 1 and not filecmp.cmp(tmp / "out1.jsonl", out, shallow=False):
            raise SystemExit(f"{case}: --workers {count} wrote a different file than --workers 1")
        base = base or seconds
        results.append(
            {
                "case": f"{case} --workers {count}",
                "rows": rows,
                "rows_per_s": rows / seconds,
                "peak_rss_mib": rss / 1024,
                "speedup": base / seconds,
                "ceiling": top,
                "share_of_ceiling": base / seconds / top,
                "workers_used": json.loads(summary.read_text()).get("workers", str(count)),
                "load_average": list(os.getloadavg()),
            }
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--memory-rows",
        type=int,
        nargs=2,
        default=[100_000, 1_000_000],
        help="the sizes of the streaming runs (rows/s is the larger one's)",
    )
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the ROUGE-L --workers comparison")
    parser.add_argument("--large-rows", type=int, default=500_000, help="rows of its larger run (0: none)")
    parser.add_argument("--mix-rows", type=int, default=50_000, help="rows of the three-metric --workers comparison")
    parser.add_argument("--workers-max", type=int, default=2)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        results = streaming(tmp, args.memory_rows)
        rouge = workers(tmp, "ROUGE-L", ["-s", "ROUGE-L"], args.rows, args.workers_max)
        rouge[1 if len(rouge) > 1 else 0]["goal_speedup"] = 1.7
        results += rouge
        if args.large_rows:
            results += workers(tmp, f"ROUGE-L, {args.large_rows:,} rows", ["-s", "ROUGE-L"], args.large_rows, 2)
        results += workers(tmp, "ROUGE-L+METEOR+BLEU", MIX_SCORERS, args.mix_rows, args.workers_max)
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for r in results:
        figures = f"{r['rows_per_s']:>10,.0f} rows/s"
        if "goal_rows_per_s" in r:
            figures += f" (goal >= {r['goal_rows_per_s']:,})"
        figures += f"  peak RSS {r['peak_rss_mib']:6.1f} MiB"
        if "peak_ratio" in r:
            figures += f" ({r['peak_ratio']:.2f}x the smaller run's; goal: flat, about 1)"
        if "floor_share" in r:
            figures += f"  ({r['floor_share']:.0%} of the run's time)"
        if "speedup" in r and "--workers 1" not in r["case"]:
            figures += f"  {r['speedup']:.2f}x --workers 1" + (
                f" (goal >= {r['goal_speedup']})" if "goal_speedup" in r else ""
            )
            figures += (
                f", ceiling {r['ceiling']:.2f}x: {r['share_of_ceiling']:.2f} of it (goal >= 0.85), "
                f"workers used {r['workers_used']}, load {r['load_average'][0]:.2f}"
            )
        print(f"{r['case']:<45} {figures}")
    if args.json:
        write_json(args.json, results, {"load_average": load})


if __name__ == "__main__":
    main()
