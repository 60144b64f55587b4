"""Hung judge requests against ordered output: a run with 3 % of requests hanging vs the same run without.

``--rows`` Factuality judgments (10,000 by default) through :func:`scorers.evaluate`
at ``--concurrency`` (16), against :class:`scorers.testing.LoopbackLLM` in its own
process answering after ``--latency`` seconds (0.2), with no reply cache. In the
faulted run the server leaves ``--hang-fraction`` of the requests (3 %, drawn
per request with a fixed seed) unanswered; the client gives up on each after the
per-request ``timeout`` (3 s) and retries it (``max_retries`` 4, the default).

The figures: each run's seconds and rows/s, the ratio faulted/clean (the issue's
target: under 2), requests and hung requests counted on the server, the most
requests the server had in flight at once, and the rows that ended with an error.
``slot bound`` is the ratio that slot occupancy alone implies for a long run: a
row holds its one of the ``concurrency`` slots through its retries, so a hung
request keeps it for the timeout plus the backoff before the retry, and the mean
time a row holds a slot grows from ``latency`` to about ``latency + hang_fraction
× (timeout + backoff + latency)``. No scheduler keeping ``concurrency`` rows in
flight does better; a clean run slowed by CPU rather than by slots measures less,
and a short run more (its last hung row alone adds the timeout to it).

Measured (2 shared cores, defaults): clean 146.7 s, hung 203.9 s (284 hung
requests, no row failed), ratio 1.39; before the runner's reorder buffer, 1,000
rows took 4.31x the clean run (now 1.28x).

    python benchmarks/bench_slow_requests.py [--rows 10000] [--concurrency 16] [--latency 0.2] [--json out.json]
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_judge import API_KEY, MODEL, _rows  # noqa: E402
from benchmarks.common import write_json  # noqa: E402

#: Seconds the client waits for one request before giving up on it (and retrying).
TIMEOUT_S = 3.0
#: How long a hung request is left unanswered: far past the timeout (the server drops it when the client goes).
HANG_S = 120.0


def _serve(conn: Any, latency: float, hang_fraction: float, seed: int) -> None:
    from scorers.testing import LoopbackLLM, RecordedRequest, Reply

    draw = random.Random(seed)
    hung = 0
    answer = Reply.choice("C", reasons="Compared the facts of both answers.")

    def reply(request: RecordedRequest) -> Reply:
        nonlocal hung
        if draw.random() < hang_fraction:
            hung += 1
            return Reply.hang(HANG_S)
        return answer

    with LoopbackLLM(default=reply, latency=latency) as server:
        conn.send(server.base_url)
        while (command := conn.recv()) != "stop":
            conn.send(
                {"requests": server.request_count, "hung": hung, "max_in_flight": server.max_in_flight}
                if command == "counts"
                else None
            )


class FaultyServer:
    """The loopback server in a child process, hanging on ``hang_fraction`` of the requests."""

    def __init__(self, latency: float, hang_fraction: float, seed: int = 15) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, latency, hang_fraction, seed), daemon=True)
        self._process.start()
        self.base_url: str = self._conn.recv()

    def counts(self) -> dict[str, int]:
        self._conn.send("counts")
        return self._conn.recv()

    def stop(self) -> None:
        self._conn.send("stop")
        self._process.join(timeout=10)


def run(rows: list[dict[str, str]], *, concurrency: int, latency: float, hang_fraction: float) -> dict[str, Any]:
    """One run against a fresh server: seconds, rows/s, the server's counts and the rows that failed."""
    import scorers
    from scorers._aio import run_sync
    from scorers.llm import aclose, configure

    server = FaultyServer(latency, hang_fraction)
    try:
        configure(
            reset=True,
            base_url=server.base_url,
            api_key=API_KEY,
            cache=False,
            timeout=TIMEOUT_S,
            max_concurrency=concurrency,
        )
        judge = scorers.get("Factuality", model=MODEL)
        started = time.perf_counter()
        results = scorers.evaluate(rows, [judge], concurrency=concurrency).collect()
        seconds = time.perf_counter() - started
        run_sync(aclose())
        failed = sum(1 for result in results if result.errors)
        if [result.index for result in results] != list(range(len(rows))):
            raise SystemExit("the results are not in input order")
        return {
            "seconds": round(seconds, 2),
            "rows_per_s": round(len(rows) / seconds, 1),
            "failed_rows": failed,
            **server.counts(),
        }
    finally:
        server.stop()
        configure(reset=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per answer")
    parser.add_argument("--hang-fraction", type=float, default=0.03)
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)

    rows = _rows(args.rows)
    clean = run(rows, concurrency=args.concurrency, latency=args.latency, hang_fraction=0.0)
    print(f"clean:  {clean}", flush=True)
    faulted = run(rows, concurrency=args.concurrency, latency=args.latency, hang_fraction=args.hang_fraction)
    print(f"hung:   {faulted}", flush=True)
    backoff_s = 0.375  # the mean first backoff: uniform between half and all of backoff_base (0.5 s)
    slot_bound = 1 + args.hang_fraction * (TIMEOUT_S + backoff_s + args.latency) / args.latency
    ratio = faulted["seconds"] / clean["seconds"]
    print(
        f"rows {args.rows}, concurrency {args.concurrency}, latency {args.latency} s, "
        f"{args.hang_fraction:.0%} of requests hung, timeout {TIMEOUT_S} s: hung/clean = {ratio:.2f} "
        f"(target < 2; slot bound {slot_bound:.2f})"
    )
    if args.json:
        write_json(
            args.json,
            [{"run": "clean", **clean}, {"run": "hung", **faulted}],
            {
                "rows": args.rows,
                "concurrency": args.concurrency,
                "latency_s": args.latency,
                "hang_fraction": args.hang_fraction,
                "timeout_s": TIMEOUT_S,
                "ratio": round(ratio, 3),
                "slot_bound": round(slot_bound, 3),
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
