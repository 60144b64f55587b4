"""ToolCallMatch on many trajectories: rows per second and peak memory.

Seeded trajectories of 5-20 calls in OpenAI's chat format (arguments as JSON text, as models write them), each
scored against a perturbed copy: a call dropped or added, two calls swapped, an argument changed or retyped
(``1`` vs ``"1"``). Rows are generated and scored in chunks, so the peak memory is the scoring's, not the data's.
The time is the scoring's (reading each format included, generating the rows not), by the clock and in CPU time.

    python benchmarks/bench_tool_calls.py                          # 100,000 trajectories, order any
    python benchmarks/bench_tool_calls.py --n 20000 --order in_order --arguments loose

The same trajectories through the peers' deterministic tool-call metrics (DeepEval's ToolCorrectness, Ragas'
ToolCallAccuracy, openevals' trajectory match), each in its own venv, with each one's score where they disagree
with ours: ``benchmarks/bench_tool_calls_peers.py``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scorers  # noqa: E402
from scorers.errors import ScorerError  # noqa: E402

TOOLS = ["search", "fetch_page", "get_weather", "book_flight", "send_email", "calculator", "read_file", "lookup_user"]
WORDS = ["paris", "london", "weather", "flight", "report", "invoice", "tokyo", "budget", "meeting", "alice", "bob"]


def random_arguments(rng: random.Random) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for key in rng.sample(["query", "city", "limit", "date", "options", "id"], rng.randint(1, 4)):
        if key == "limit":
            arguments[key] = rng.randint(1, 50)
        elif key == "options":
            arguments[key] = {"lang": rng.choice(["en", "fr"]), "safe": rng.random() < 0.5}
        elif key == "id":
            arguments[key] = rng.randint(1, 10_000)
        else:
            arguments[key] = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
    return arguments


def perturbed(calls: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """A copy of ``calls`` with one to three changes an agent makes."""
    actual = [dict(c) for c in calls]
    for _ in range(rng.randint(1, 3)):
        change = rng.choice(["drop", "add", "swap", "value", "type"])
        if change == "drop" and len(actual) > 1:
            actual.pop(rng.randrange(len(actual)))
        elif change == "add":
            actual.insert(rng.randrange(len(actual) + 1), {"name": rng.choice(TOOLS), "args": random_arguments(rng)})
        elif change == "swap" and len(actual) > 1:
            i, j = rng.sample(range(len(actual)), 2)
            actual[i], actual[j] = actual[j], actual[i]
        elif change in ("value", "type"):
            call = actual[rng.randrange(len(actual))]
            args = dict(call["args"])
            key = rng.choice(sorted(args))
            args[key] = str(args[key]) if change == "type" else random_arguments(rng).get(key, "changed")
            call["args"] = args
    return actual


def openai_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
        for i, c in enumerate(calls)
    ]


def rows(n: int, seed: int, chunk: int) -> Iterator[list[dict[str, Any]]]:
    """``n`` rows ``{output, expected}`` in chunks of ``chunk``."""
    rng = random.Random(seed)
    batch = []
    for _ in range(n):
        expected = [{"name": rng.choice(TOOLS), "args": random_arguments(rng)} for _ in range(rng.randint(5, 20))]
        batch.append({"output": openai_calls(perturbed(expected, rng)), "expected": openai_calls(expected)})
        if len(batch) == chunk:
            yield batch
            batch = []
    if batch:
        yield batch


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="trajectories (default 100,000)")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--chunk", type=int, default=1_000, help="rows generated and scored at a time")
    parser.add_argument("--order", default="any", choices=["any", "in_order", "exact"])
    parser.add_argument("--extra-calls", default="penalise", choices=["penalise", "ignore"])
    parser.add_argument("--arguments", default="exact", help="the default argument rule (exact, loose, ...)")
    options = parser.parse_args()

    scorer = scorers.get(
        "ToolCallMatch", order=options.order, extra_calls=options.extra_calls, arguments=options.arguments
    )
    scorer(output=[], expected=[])  # imports numpy and scipy before the clock and the memory baseline
    baseline = peak_rss_mib()
    elapsed = cpu = total = 0.0
    scored = calls = 0
    for batch in rows(options.n, options.seed, options.chunk):
        calls += sum(len(row["expected"]) + len(row["output"]) for row in batch)
        start, start_cpu = time.perf_counter(), time.process_time()
        results = scorer.score_batch(batch)
        elapsed += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        for result in results:
            if isinstance(result, ScorerError):  # a bug: let it raise
                raise result
            assert result.score is not None  # ToolCallMatch always gives a number
            total += result.score
        scored += len(results)
    print(
        f"ToolCallMatch(order={options.order!r}, extra_calls={options.extra_calls!r}, arguments={options.arguments!r})"
    )
    print(f"python {platform.python_version()}, {platform.machine()}, scorers {scorers.__version__}")
    print(f"{scored:,} trajectories ({calls:,} calls, both sides), mean score {total / scored:.4f}")
    print(f"{elapsed:.2f} s scoring: {scored / elapsed:,.0f} rows/s, {calls / elapsed:,.0f} calls/s")
    print(f"{cpu:.2f} s of CPU time: {scored / cpu:,.0f} rows/s per core busy (on a loaded machine, the fairer figure)")
    print(f"peak memory: {peak_rss_mib():,.0f} MiB resident ({peak_rss_mib() - baseline:+,.0f} MiB while scoring)")


if __name__ == "__main__":
    main()
