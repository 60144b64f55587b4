"""``run --workers N`` against the machine it runs on (issue 28): the parallel ceiling, the speed-up, and where a
run's time goes.

1. The ceiling (:func:`ceiling`): N pure-Python busy loops at once, in N processes, against one alone. On an idle
   2-core machine two take about 1.1-1.2x the time of one (a ceiling of 1.65-1.8x); with a neighbour busy,
   up to 2x (a ceiling of 1.0x). It is measured before and after each pair of runs and averaged, so that the
   speed-up is stated as a share of what the machine gave during that same minute.
2. The speed-up: ``python -m scorers run FILE -s ROUGE-L --workers N`` against ``--workers 1``, each its own
   process timed from its start to its end, the results files compared byte for byte; the worker count the run
   used (its ``--summary-json``'s ``workers``) beside it, and the speed-up of the workers forced on
   (``SCORERS_WORKERS=always``), which is what the engine's rule saves where they do not pay.
3. The breakdown (``--breakdown``): the same work split into its parts, each timed alone in this process: start
   (a whole run of one row: interpreter, imports, scorer, summary), reading the input's chunks, parsing and scoring
   them into results lines (:meth:`BatchScorer.score_lines`), writing those bytes; then a workers run in this
   process (:func:`scorers.engines.local.score_jsonl`), with the CPU seconds this parent spent feeding the
   workers and writing, which is the serial part that workers cannot share.

    python benchmarks/bench_workers.py                          # 100,000 and 500,000 rows, 3 repeats
    python benchmarks/bench_workers.py --rows 100000 --repeat 1 --breakdown --json /tmp/workers.json
"""

from __future__ import annotations

import argparse
import filecmp
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_json  # noqa: E402

SPIN_S = 0.25  # how long one busy loop runs alone


def _spin(loops: int) -> None:
    total = 0
    for i in range(loops):
        total += i * i % 7


def _spin_in(processes: int, loops: int) -> float:
    """Seconds for ``processes`` processes each running ``loops`` iterations at once."""
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    started = time.perf_counter()
    running = [context.Process(target=_spin, args=(loops,)) for _ in range(processes)]
    for process in running:
        process.start()
    for process in running:
        process.join()
    return time.perf_counter() - started


def ceiling(processes: int = 2, seconds: float = SPIN_S) -> float:
    """The speed-up ``processes`` pure-Python processes can reach on this machine now: ``processes`` times one
    busy loop's time alone, over the time of ``processes`` of them at once (best of 3 each, interleaved).

    >>> 0.5 < ceiling(2, 0.02) < 2.5
    True
    """
    started = time.perf_counter()
    _spin(100_000)
    loops = max(1, int(100_000 * seconds / max(time.perf_counter() - started, 1e-6)))
    alone, together = [], []
    for _ in range(3):
        alone.append(_spin_in(1, loops))
        together.append(_spin_in(processes, loops))
    return processes * min(alone) / min(together)


def timed_run(data: Path, out: Path, workers: int, summary: Path | None = None, always: bool = False) -> float:
    """Wall seconds of one ``python -m scorers run`` of ROUGE-L, from its start to its end (``always``: with
    ``SCORERS_WORKERS=always``, the workers started and kept where the engine's rule would not)."""
    command = [sys.executable, "-m", "scorers", "run", str(data), "-s", "ROUGE-L", "-o", str(out), "--no-progress"]
    command += ["--workers", str(workers)] + (["--summary-json", str(summary)] if summary else [])
    started = time.perf_counter()
    env = {**os.environ, "SCORERS_WORKERS": "always"} if always else None
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def speedup(tmp: Path, data: Path, rows: int, workers: int) -> dict[str, Any]:
    """One comparison: the ceiling, ``--workers 1``, ``--workers N``, the ceiling again."""
    load_before = os.getloadavg()
    before = ceiling(workers)
    one = timed_run(data, tmp / "one.jsonl", 1)
    many = timed_run(data, tmp / "many.jsonl", workers, tmp / "summary.json")
    forced = timed_run(data, tmp / "forced.jsonl", workers, always=True)
    after = ceiling(workers)
    if not filecmp.cmp(tmp / "one.jsonl", tmp / "many.jsonl", shallow=False):
        raise SystemExit(f"--workers {workers} wrote a different file than --workers 1 ({rows:,} rows)")
    used = json.loads((tmp / "summary.json").read_text()).get("workers", str(workers))
    top = (before + after) / 2
    return {
        "case": f"ROUGE-L, {rows:,} rows, --workers {workers}",
        "rows": rows,
        "workers": workers,
        "workers_used": used,
        "one_s": one,
        "many_s": many,
        "speedup": one / many,
        "forced_s": forced,
        "forced_speedup": one / forced,
        "ceiling": top,
        "ceilings": [before, after],
        "share_of_ceiling": one / many / top,
        "load_average_before": list(load_before),
        "load_average": list(os.getloadavg()),
    }


def breakdown(tmp: Path, data: Path, workers: int) -> dict[str, float]:
    """The parts of a run, each timed alone in this process (see the module's docstring)."""
    from scorers.batch import BatchScorer
    from scorers.engines.local import score_jsonl
    from scorers.io import JsonlLines

    one_row = tmp / "one_row.jsonl"
    one_row.write_bytes(data.open("rb").readline())
    parts = {"start_s": timed_run(one_row, tmp / "start.jsonl", 1)}
    started = time.perf_counter()
    chunks = []
    with JsonlLines(str(data)) as source:
        while (chunk := source.next_chunk(1 << 17)) is not None:
            chunks.append(chunk)
    parts["read_s"] = time.perf_counter() - started
    unit = BatchScorer(["ROUGE-L"])
    started = time.perf_counter()
    for chunk in chunks:
        chunk.read()
    parts["parse_s"] = time.perf_counter() - started
    started = time.perf_counter()
    lines = [unit.score_lines(chunk).lines for chunk in chunks]
    parts["parse_score_serialise_s"] = time.perf_counter() - started
    started = time.perf_counter()
    with open(tmp / "written.jsonl", "wb") as out:
        for block in lines:
            out.write(block)
    parts["write_s"] = time.perf_counter() - started
    os.environ["SCORERS_WORKERS"] = "always"  # the workers' own path, whatever the load
    try:
        for count in sorted({1, workers}):
            wall, cpu = time.perf_counter(), time.process_time()
            with JsonlLines(str(data)) as source, open(tmp / "in_process.jsonl", "wb") as out:
                for scored in score_jsonl(unit, source, workers=count):
                    if scored is not None:
                        out.write(scored.lines)
            parts[f"score_jsonl_workers_{count}_s"] = time.perf_counter() - wall
            parts[f"score_jsonl_workers_{count}_parent_cpu_s"] = time.process_time() - cpu
    finally:
        del os.environ["SCORERS_WORKERS"]
    return parts


def write_rows(path: Path, rows: int) -> None:
    from bench_run import write_rows as write

    write(path, rows, seed=7)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 500_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true", help="also time the parts of a run (the first size)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for rows in args.rows:
            data = tmp / f"rows{rows}.jsonl"
            write_rows(data, rows)
            timed_run(data, tmp / "warm.jsonl", 1)  # the page cache
            for _ in range(args.repeat):
                r = speedup(tmp, data, rows, args.workers)
                results.append(r)
                print(
                    f"{r['case']:<36} {r['one_s']:6.2f} s / {r['many_s']:6.2f} s = {r['speedup']:.2f}x, ceiling "
                    f"{r['ceiling']:.2f}x: {r['share_of_ceiling']:.2f} of it; used {r['workers_used']}; workers forced "
                    f"{r['forced_speedup']:.2f}x; "
                    f"load {r['load_average'][0]:.2f}",
                    flush=True,
                )
            if args.breakdown and "breakdown" not in extra:
                extra["breakdown"] = {"rows": rows, "load_average_before": list(os.getloadavg())}
                extra["breakdown"].update(breakdown(tmp, data, args.workers))
                extra["breakdown"]["load_average"] = list(os.getloadavg())
                print(json.dumps(extra["breakdown"], indent=1), flush=True)
    for rows in args.rows:
        shares = [r["share_of_ceiling"] for r in results if r["rows"] == rows]
        ups = [r["speedup"] for r in results if r["rows"] == rows]
        print(
            f"{rows:>9,} rows: speed-up {min(ups):.2f}-{max(ups):.2f}x, "
            f"share of ceiling {min(shares):.2f}-{max(shares):.2f} (median {statistics.median(shares):.2f})"
        )
    if args.json:
        write_json(args.json, results, {"load_average": list(os.getloadavg()), **extra})


if __name__ == "__main__":
    main()
