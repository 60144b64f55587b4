"""The same runs on the local runner, Ray Data and Spark: rows/s, ratio to the local runner with one worker.

Two workloads through :func:`scorers.evaluate`:

* ``--text-scorers`` (ROUGE-L by default; e.g. ``ROUGE-L,Levenshtein,ExactMatch``) on ``--rows`` pairs
  (200,000 by default), every tenth row without its ``expected`` (an error row for each scorer): CPU-bound;
* the Factuality judge on ``--judge-rows`` rows (20,000 by default; 0 leaves it out) against
  :class:`scorers.testing.LoopbackLLM` with 50 ms latency, run in its own process
  (so the server does not share the driver's interpreter), no reply cache (every
  run pays its calls), ``--concurrency`` calls in flight per worker.

Runners: local with ``workers=1`` and ``workers=2`` (judges stay on the event loop,
so for them the local run is one process whatever ``workers`` says), Ray and Spark
with ``--workers`` workers (2), each on a local cluster started for the runs. The
job time counts reading the rows into the engine, scoring and receiving every
row back, ordered; the cluster's start and stop are reported apart, so each
engine's ``engine_vs_local`` (its job seconds over the local one-worker run's, after
start-up; the issue's goal is at most 1.4) is its steady-state cost: after a first
run (reported apart: Ray's and Spark's worker processes start and import scorers
then), ``--repeat`` runs, each paired with a local one-worker run just before it,
and the median of the pairs' ratios (their range beside it), as the load moves. Every run's records (scores and errors) are checked against the local
run's first. Requests are counted on the server.

    python benchmarks/bench_engines.py [--rows 200000] [--judge-rows 20000] [--workers 2] [--json out.json]
    python benchmarks/bench_engines.py --rows 50000 --text-scorers ROUGE-L,Levenshtein,ExactMatch --judge-rows 0 \
        --repeat 3 --json engines.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_judge import API_KEY, MODEL, ServerProcess, _rows  # noqa: E402
from benchmarks.common import make_pairs, write_json  # noqa: E402


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = run()
    return time.perf_counter() - started, value


def score(rows: list[dict[str, Any]], scorer: list[Any], *, engine: str, workers: int, concurrency: int) -> list[Any]:
    import scorers

    return [
        (r.scores, r.errors)
        for r in scorers.evaluate(rows, scorer, engine=engine, workers=workers, concurrency=concurrency, ordered=True)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="text rows (default: 200000)")
    parser.add_argument(
        "--text-scorers", default="ROUGE-L", help="the text workload's scorers, comma-separated (default: ROUGE-L)"
    )
    parser.add_argument("--judge-rows", type=int, default=20_000, help="judge rows (default: 20000; 0: no judge)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per judge reply (default: 0.05)")
    parser.add_argument("--concurrency", type=int, default=32, help="judge calls in flight per worker (default: 32)")
    parser.add_argument("--workers", type=int, default=2, help="workers of Ray and Spark (default: 2)")
    parser.add_argument("--engines", default="ray,spark", help="the engines measured (default: ray,spark)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each job (default: 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    import scorers
    import scorers.judges.template  # noqa: F401  (registers the built-in judges)
    from scorers.engines.ray import connect
    from scorers.engines.spark import session
    from scorers.llm import LLMEngine

    pairs = make_pairs(args.rows, seed=11)
    text_rows = [{"output": o} if i % 10 == 9 else {"output": o, "expected": e} for i, (o, e) in enumerate(pairs)]
    text = args.text_scorers
    workloads: list[tuple[str, list[dict[str, Any]], list[Any]]] = [
        (text, text_rows, [scorers.get(name) for name in text.split(",")])
    ]
    server = None
    if args.judge_rows:
        server = ServerProcess(args.latency)
        engine = LLMEngine(base_url=server.base_url, api_key=API_KEY, max_concurrency=args.concurrency, cache=False)
        judge = scorers.get("Factuality", model=MODEL, engine=engine)
        workloads.append(("Factuality judge", _rows(args.judge_rows), [judge]))
    results: list[dict[str, Any]] = []
    reference: dict[str, list[Any]] = {}

    def run(workload: str, rows: list[dict[str, Any]], scorer: list[Any], engine: str, workers: int) -> float:
        seconds, scores = timed(
            lambda: score(rows, scorer, engine=engine, workers=workers, concurrency=args.concurrency)
        )
        if reference.setdefault(workload, scores) != scores:
            raise SystemExit(f"{engine}: {workload} scores differ from the local run's")
        print(f"  {engine} x{workers} {workload}: {seconds:.2f} s", file=sys.stderr, flush=True)
        return seconds

    def measure(runner: str, workers: int, startup: float | None) -> None:
        """``repeat`` runs; on an engine, a first run (its workers start and import scorers) apart, then each run
        paired with a local one-worker run just before it (the load moves: each pair's ratio is of one moment)."""
        for workload, rows, scorer in workloads:
            before = server.count() if server else 0
            first = None if startup is None else run(workload, rows, scorer, runner, workers)
            times, ratios = [], []
            for _ in range(args.repeat):
                local_s = None if startup is None else run(workload, rows, scorer, "local", 1)
                times.append(run(workload, rows, scorer, runner, workers))
                if local_s is not None:
                    ratios.append(times[-1] / local_s)
            seconds = min(times)
            results.append(
                {
                    "workload": workload,
                    "runner": runner,
                    "workers": workers,
                    "rows": len(rows),
                    "job_s": round(seconds, 2),
                    "job_s_all": [round(t, 2) for t in times],
                    "rows_per_s": round(len(rows) / seconds),
                    "startup_s": None if startup is None else round(startup, 2),
                    "first_run_s": None if first is None else round(first, 2),
                    "paired_ratios": [round(r, 2) for r in ratios],
                    "requests": (server.count() - before) // (args.repeat + (first is not None)) if server else 0,
                    "load": round(os.getloadavg()[0], 2),
                }
            )

    starts = {"ray": connect, "spark": session}
    try:
        measure("local", 1, None)
        measure("local", 2, None)
        for runner in args.engines.split(","):
            context = starts[runner](None, args.workers)
            startup, _ = timed(context.__enter__)
            try:
                measure(runner, args.workers, startup)
            finally:
                stop, _ = timed(lambda: context.__exit__(None, None, None))
            for row in results[-len(workloads) :]:
                row["stop_s"] = round(stop, 2)
    finally:
        if server:
            server.stop()

    local = {r["workload"]: r for r in results if r["runner"] == "local" and r["workers"] == 1}
    print(
        f"\n{'workload':<17} {'runner':<6} {'workers':>7} {'rows':>7} {'job s':>7} {'range':>11} {'rows/s':>7} "
        f"{'vs local 1':>10} {'eng/local':>9} {'pairs':>11} {'start s':>7} {'1st run':>7} {'stop s':>6} "
        f"{'requests':>8} {'load':>5}"
    )
    for r in results:
        base = local[r["workload"]]
        r["vs_local_1"] = round(r["rows_per_s"] / base["rows_per_s"], 2)
        r["local_s"] = base["job_s"]
        # after start-up: the median of the paired runs' ratios (an engine), else seconds over the local run's
        pairs = sorted(r["paired_ratios"])
        r["engine_vs_local"] = pairs[len(pairs) // 2] if pairs else round(r["job_s"] / base["job_s"], 2)
        spread = f"{min(r['job_s_all']):.1f}-{max(r['job_s_all']):.1f}"
        paired = f"{pairs[0]:.2f}-{pairs[-1]:.2f}" if pairs else "-"
        print(
            f"{r['workload'][:17]:<17} {r['runner']:<6} {r['workers']:>7} {r['rows']:>7} {r['job_s']:>7.2f} "
            f"{spread:>11} {r['rows_per_s']:>7} {r['vs_local_1']:>9.2f}x {r['engine_vs_local']:>8.2f}x {paired:>11} "
            f"{r['startup_s'] or '-':>7} {r['first_run_s'] or '-':>7} {r.get('stop_s', '-'):>6} {r['requests']:>8} "
            f"{r['load']:>5}"
        )
    print(
        f"\n{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; eng/local: the job's seconds over the local "
        "one-worker run's, after start-up (start s apart)"
        + (
            f"; judge: {args.latency * 1000:.0f} ms per reply, {args.concurrency} calls in flight per worker, no cache"
            if server
            else ""
        )
    )
    if args.json:
        write_json(
            args.json,
            results,
            {
                "cpus": os.cpu_count(),
                "latency_s": args.latency,
                "concurrency": args.concurrency,
                "load": round(os.getloadavg()[0], 2),
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
