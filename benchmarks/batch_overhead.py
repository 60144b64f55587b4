"""The batch path's overhead per row: the same run of a one-request judge sent online and through the loopback
batch API (``Run(batch=True)``), both against a loopback server with zero latency and a batch clock of zero, so
that what differs is our own work: the deferred pass, the batch file, its upload and download, the second pass
that reads each reply through the engine.

Each run is a child process timed around ``Run.execute`` alone (wall and CPU seconds; imports excluded); the
server runs in this process, so its work is not counted. Online and batch runs take turns; the figures are medians.
The results files are checked equal (latency aside) first.

    python benchmarks/batch_overhead.py                   # 2,000 rows, Factuality, 3 turns
    python benchmarks/batch_overhead.py --rows 500 --turns 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: One run in a child process: ``base_url mode rows out cache`` → the seconds of ``Run.execute`` (wall, CPU).
_RUN = """
import json, sys, time
import scorers
from scorers.llm import configure

base_url, mode, rows, out, cache = sys.argv[1:]
configure(base_url=base_url, api_key="bench-key", cache=cache)
data = [{"input": f"question {i}?", "output": f"answer {i}", "expected": f"answer {i % 7}"} for i in range(int(rows))]
run = scorers.Run(data, ["Factuality"], output=out, batch=mode == "batch", batch_poll_s=0.001)
wall, cpu = time.perf_counter(), time.process_time()
result = run.execute(handle_signals=False)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "failed": result.failed_rows}))
"""


def one_run(base_url: str, mode: str, rows: int, folder: Path, turn: int) -> dict[str, Any]:
    out, cache = folder / f"{mode}-{turn}.jsonl", folder / f"{mode}-{turn}.sqlite"
    command = [sys.executable, "-c", _RUN, base_url, mode, str(rows), str(out), str(cache)]
    measured = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    if measured["failed"]:
        raise SystemExit(f"{mode} run {turn}: {measured['failed']} rows failed")
    return measured


def scores(path: Path) -> list[Any]:
    return [json.loads(line)["scores"] for line in path.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    options = parser.parse_args()

    from scorers.testing import LoopbackLLM, Reply
    from scorers.testing.batches import BatchClock

    figures: dict[str, list[dict[str, Any]]] = {"online": [], "batch": []}
    with tempfile.TemporaryDirectory() as tmp, LoopbackLLM(default=Reply.choice("C", reasons="r")) as server:
        server.batches.clock = BatchClock(validating_s=0, in_progress_s=0, finalizing_s=0)
        folder = Path(tmp)
        for turn in range(options.turns):
            for mode in ("online", "batch"):
                figures[mode].append(one_run(server.base_url, mode, options.rows, folder, turn))
        if scores(folder / "online-0.jsonl") != scores(folder / "batch-0.jsonl"):
            raise SystemExit("the batch run's scores differ from the online run's")
        lines, batches = server.batches.lines_received, server.batches.created

    rows = options.rows
    median = {
        mode: {k: statistics.median(f[k] for f in runs) for k in ("wall", "cpu")} for mode, runs in figures.items()
    }
    report = {
        "rows": rows,
        "batches": batches,
        "lines": lines,
        **{f"{mode}_{k}_us_per_row": 1e6 * median[mode][k] / rows for mode in median for k in ("wall", "cpu")},
        "overhead_wall_us_per_row": 1e6 * (median["batch"]["wall"] - median["online"]["wall"]) / rows,
        "overhead_cpu_us_per_row": 1e6 * (median["batch"]["cpu"] - median["online"]["cpu"]) / rows,
        "ratio_wall": median["batch"]["wall"] / median["online"]["wall"],
        "ratio_cpu": median["batch"]["cpu"] / median["online"]["cpu"],
    }
    print(f"{rows} rows of Factuality, loopback at zero latency, {options.turns} turns (medians):")
    print(f"{'path':8} {'wall µs/row':>12} {'CPU µs/row':>12}")
    for mode in ("online", "batch"):
        print(f"{mode:8} {report[f'{mode}_wall_us_per_row']:12.0f} {report[f'{mode}_cpu_us_per_row']:12.0f}")
    print(
        f"batch overhead: {report['overhead_wall_us_per_row']:+.0f} µs/row wall, "
        f"{report['overhead_cpu_us_per_row']:+.0f} µs/row CPU; batch/online {report['ratio_wall']:.2f}× wall, "
        f"{report['ratio_cpu']:.2f}× CPU ({batches // options.turns} batch a run, {lines // options.turns} lines)"
    )
    if options.json:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
