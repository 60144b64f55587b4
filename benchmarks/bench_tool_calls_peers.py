"""ToolCallMatch beside the peers' deterministic tool-call metrics: rows per second, peak memory, and each one's
score on the cases where they disagree with us.

One run writes the seeded trajectories of ``bench_tool_calls.py`` (5-20 calls in OpenAI's chat format, each
scored against a perturbed copy) to a JSONL file, scores them with ours in this process, then with each peer in
its own venv, in a subprocess that reads the same file:

- DeepEval 4.3.1 ``ToolCorrectnessMetric(evaluation_params=[ToolCallParams.INPUT_PARAMETERS], async_mode=False)``,
  ``measure()`` per row (arguments compared, in any order; no ``available_tools``, so no LLM call);
- Ragas 0.4.3 ``ToolCallAccuracy(strict_order=False)`` (``ragas.metrics.collections``), ``batch_score()`` a chunk
  at a time;
- openevals 0.2.2 ``create_trajectory_match_evaluator(trajectory_match_mode="unordered")``, per row.

Each side's time is the scoring's, the conversion from the file's rows (OpenAI calls, arguments as JSON text)
into what the library takes included, reading the file not. Peak memory is each process's peak resident set
(``VmHWM`` on Linux, else ``ru_maxrss``), and its growth while scoring (over the peak after imports and a first row). The peers' venvs,
created once (pip, about 80-110 s each)::

    bash benchmarks/peers_setup.sh                  # .cache/peers-venv-{deepeval,ragas,openevals}
    python benchmarks/bench_tool_calls_peers.py     # 100,000 trajectories; --n 2000 for a quick look
    python benchmarks/bench_tool_calls_peers.py --peers openevals --json peers.json

A peer whose venv is missing is skipped, saying how to create it. The cases table runs every library on the
documented disagreements (issue 17): the same call twice, a pairing a greedy matcher misses, extra and missing
calls, ``1`` vs ``"1"``, ``true`` vs ``1``, ``1`` vs ``1.0``, an extra argument.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
#: Each peer: its venv, and the metric as the tables name it.
PEERS = {
    "deepeval": "DeepEval 4.3.1 ToolCorrectness",
    "ragas": "Ragas 0.4.3 ToolCallAccuracy",
    "openevals": "openevals 0.2.2 trajectory match",
}
#: The peers run with no network, telemetry or progress bars.
PEER_ENVIRONMENT = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_GRPC_LOGGING": "NO",
    "ERROR_REPORTING": "NO",
    "RAGAS_DO_NOT_TRACK": "true",
    "LANGSMITH_TRACING": "false",
    "OPENAI_API_KEY": "sk-unused",  # DeepEval builds its (unused) judge model at construction
    "TQDM_DISABLE": "1",
}

#: The cases where the libraries disagree: expected and actual calls as ``(name, arguments)``; ``arguments`` is
#: the argument rule (ours, and openevals' ``tool_args_match_mode``); ``mode`` openevals' trajectory mode, which
#: our TrajectoryMatch column uses too.
CASES: list[dict[str, Any]] = [
    {
        "case": "the same call twice, expected twice",
        "expected": [("search", {"q": "paris"}), ("search", {"q": "paris"})],
        "actual": [("search", {"q": "paris"}), ("search", {"q": "paris"})],
    },
    {
        "case": "two calls of one tool: the first pairing a greedy matcher takes is not the best",
        "expected": [("lookup", {"a": 1, "b": 1}), ("lookup", {"a": 1, "b": 2})],
        "actual": [("lookup", {"a": 1, "b": 2}), ("lookup", {"a": 9, "b": 1})],
    },
    {
        "case": "superset arguments: a valid pairing exists that first-fit misses",
        "expected": [("lookup", {"a": 1}), ("lookup", {"a": 1, "b": 2})],
        "actual": [("lookup", {"a": 1, "b": 2}), ("lookup", {"a": 1})],
        "arguments": "superset",
        "mode": "superset",
    },
    {
        "case": "one extra call",
        "expected": [("search", {"q": "paris"}), ("weather", {"city": "paris"})],
        "actual": [("search", {"q": "paris"}), ("weather", {"city": "paris"}), ("search", {"q": "london"})],
    },
    {
        "case": "a call retried (the same call once more)",
        "expected": [("search", {"q": "paris"})],
        "actual": [("search", {"q": "paris"}), ("search", {"q": "paris"})],
    },
    {
        "case": "one call missing",
        "expected": [("search", {"q": "paris"}), ("weather", {"city": "paris"}), ("book", {"id": 7})],
        "actual": [("search", {"q": "paris"}), ("weather", {"city": "paris"})],
    },
    {
        "case": '`1` vs `"1"`',
        "expected": [("get_user", {"id": 1})],
        "actual": [("get_user", {"id": "1"})],
    },
    {
        "case": "`true` vs `1`",
        "expected": [("notify", {"urgent": True})],
        "actual": [("notify", {"urgent": 1})],
    },
    {
        "case": "`1` vs `1.0`",
        "expected": [("get_user", {"id": 1})],
        "actual": [("get_user", {"id": 1.0})],
    },
    {
        "case": "an extra argument",
        "expected": [("search", {"q": "paris"})],
        "actual": [("search", {"q": "paris", "limit": 5})],
    },
]


def openai_calls(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, in MiB: Linux's VmHWM (``ru_maxrss`` survives ``exec``, so a
    child would report at least its parent's peak), elsewhere ``ru_maxrss`` (macOS reports bytes)."""
    status = Path("/proc/self/status")
    if status.exists():
        line = next(line for line in status.read_text().splitlines() if line.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def chunks(path: Path, size: int) -> Iterator[list[dict[str, Any]]]:
    """The rows of a JSONL file, ``size`` at a time."""
    batch = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            batch.append(json.loads(line))
            if len(batch) == size:
                yield batch
                batch = []
    if batch:
        yield batch


def measure(score_chunk: Callable[[list[dict[str, Any]]], list[float]], data: Path, chunk: int) -> dict[str, Any]:
    """Score every row of ``data`` (a first row before the clock and the memory baseline): rows, mean score,
    seconds by the clock and of CPU, peak memory and its growth while scoring."""
    first = next(chunks(data, 1))
    score_chunk(first)
    baseline = peak_rss_mib()
    elapsed = cpu = total = 0.0
    rows = 0
    for batch in chunks(data, chunk):
        start, start_cpu = time.perf_counter(), time.process_time()
        scores = score_chunk(batch)
        elapsed += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        total += sum(scores)
        rows += len(scores)
    peak = peak_rss_mib()
    return {
        "rows": rows,
        "mean": total / rows,
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "rows_per_s": rows / elapsed,
        "rows_per_cpu_s": rows / cpu,
        "peak_rss_mib": peak,
        "growth_mib": peak - baseline,
    }


# --- each peer, run in its own venv (only the standard library and the peer are importable there) ---


def deepeval_scorer() -> Callable[[list[dict[str, Any]]], list[float]]:
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    metric = ToolCorrectnessMetric(evaluation_params=[ToolCallParams.INPUT_PARAMETERS], async_mode=False)

    def calls(row: list[dict[str, Any]]) -> list[Any]:
        return [
            ToolCall(name=c["function"]["name"], input_parameters=json.loads(c["function"]["arguments"])) for c in row
        ]

    def score(batch: list[dict[str, Any]]) -> list[float]:
        out = []
        for row in batch:
            case = LLMTestCase(
                input="", actual_output="", tools_called=calls(row["output"]), expected_tools=calls(row["expected"])
            )
            out.append(float(metric.measure(case, _show_indicator=False)))
        return out

    return score


def ragas_scorer() -> Callable[[list[dict[str, Any]]], list[float]]:
    from ragas.messages import AIMessage, ToolCall
    from ragas.metrics.collections import ToolCallAccuracy

    metric = ToolCallAccuracy(strict_order=False)

    def calls(row: list[dict[str, Any]]) -> list[Any]:
        return [ToolCall(name=c["function"]["name"], args=json.loads(c["function"]["arguments"])) for c in row]

    def score(batch: list[dict[str, Any]]) -> list[float]:
        inputs = [
            {
                "user_input": [AIMessage(content="", tool_calls=calls(row["output"]))],
                "reference_tool_calls": calls(row["expected"]),
            }
            for row in batch
        ]
        return [float(result.value) for result in metric.batch_score(inputs)]

    return score


def openevals_scorer(
    mode: str = "unordered", arguments: str = "exact"
) -> Callable[[list[dict[str, Any]]], list[float]]:
    from openevals.trajectory.match import create_trajectory_match_evaluator

    evaluator = create_trajectory_match_evaluator(trajectory_match_mode=mode, tool_args_match_mode=arguments)

    def message(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": "", "tool_calls": calls}]

    def score(batch: list[dict[str, Any]]) -> list[float]:
        return [
            float(evaluator(outputs=message(row["output"]), reference_outputs=message(row["expected"]))["score"])
            for row in batch
        ]

    return score


def peer_cases(peer: str, cases: list[dict[str, Any]]) -> list[float | None]:
    """The peer's score on each case; None where it has no such argument rule (only openevals has superset)."""
    scores: list[float | None] = []
    for case in cases:
        arguments = case.get("arguments", "exact")
        row = {"output": openai_calls(case["actual"]), "expected": openai_calls(case["expected"])}
        if peer == "openevals":
            scores.append(openevals_scorer(case.get("mode", "unordered"), arguments)([row])[0])
        elif arguments != "exact":
            scores.append(None)
        else:
            scores.append((deepeval_scorer() if peer == "deepeval" else ragas_scorer())([row])[0])
    return scores


def run_peer(peer: str, data: Path, chunk: int) -> None:
    """In the peer's venv: print its figures and its score on each case as one JSON line."""
    warnings.simplefilter("ignore")  # Ragas warns on every length mismatch
    scorer = {"deepeval": deepeval_scorer, "ragas": ragas_scorer, "openevals": openevals_scorer}[peer]()
    result = measure(scorer, data, chunk)
    result["cases"] = peer_cases(peer, CASES)
    print(json.dumps(result))


# --- the run: data, ours, each peer, the tables ---


def venv_python(peer: str) -> Path:
    return ROOT / ".cache" / f"peers-venv-{peer}" / "bin" / "python"


def write_data(n: int, seed: int, chunk: int) -> Path:
    """The seeded trajectories as JSONL (``{output, expected}`` per line), written once per size and seed."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_tool_calls import rows

    path = ROOT / ".cache" / "bench-tool-calls" / f"trajectories-{n}-seed{seed}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with partial.open("w", encoding="utf-8") as out:
            for batch in rows(n, seed, chunk):
                out.writelines(json.dumps(row) + "\n" for row in batch)
        partial.rename(path)
    return path


def run_ours(data: Path, chunk: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    import scorers
    from scorers.errors import ScorerError

    def value(result: Any) -> float:
        if isinstance(result, ScorerError):  # a bug: let it raise
            raise result
        return float(result.score)

    scorer = scorers.get("ToolCallMatch")
    result = measure(lambda batch: [value(r) for r in scorer.score_batch(batch)], data, chunk)
    cases = []
    for case in CASES:
        arguments = case.get("arguments", "exact")
        fields = {"output": openai_calls(case["actual"]), "expected": openai_calls(case["expected"])}
        cases.append(
            {
                "ToolCallMatch": value(scorers.get("ToolCallMatch", arguments=arguments)(**fields)),
                "ToolCallMatch(extra_calls='ignore')": value(
                    scorers.get("ToolCallMatch", arguments=arguments, extra_calls="ignore")(**fields)
                ),
                "TrajectoryMatch": value(
                    scorers.get("TrajectoryMatch", mode=case.get("mode", "unordered"), arguments=arguments)(**fields)
                ),
            }
        )
    result["cases"] = cases
    return result


def number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="trajectories (default 100,000)")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--chunk", type=int, default=1_000, help="rows read and scored at a time")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=list(PEERS))
    parser.add_argument("--json", type=Path, help="write the figures and cases here")
    parser.add_argument("--peer", choices=list(PEERS), help=argparse.SUPPRESS)  # in the peer's venv
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.peer:
        run_peer(options.peer, options.data, options.chunk)
        return

    data = write_data(options.n, options.seed, options.chunk)
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f} at the start; {options.n:,} trajectories of 5-20 calls ({data})"
    )
    results: dict[str, Any] = {"ours": run_ours(data, options.chunk)}
    for peer in options.peers:
        python = venv_python(peer)
        if not python.exists():
            print(
                f"{PEERS[peer]}: skipped, no venv at {python.parents[1]}: create it with "
                f"`bash benchmarks/peers_setup.sh {peer}`"
            )
            continue
        command = [str(python), __file__, "--peer", peer, "--data", str(data), "--chunk", str(options.chunk)]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **PEER_ENVIRONMENT}, cwd=ROOT)
        if done.returncode != 0:
            print(f"{PEERS[peer]}: failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            continue
        results[peer] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"load average {os.getloadavg()[0]:.2f} at the end")

    ours = results["ours"]
    print(
        "\n| library | rows/s | rows per CPU second | speed × ours (CPU) | peak RSS (MiB) | growth while scoring "
        "(MiB) | mean score |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, result in results.items():
        label = "scorers ToolCallMatch" if name == "ours" else PEERS[name]
        print(
            f"| {label} | {result['rows_per_s']:,.0f} | {result['rows_per_cpu_s']:,.0f} | "
            f"{result['rows_per_cpu_s'] / ours['rows_per_cpu_s']:.2f}× | {result['peak_rss_mib']:,.0f} | "
            f"{result['growth_mib']:+,.0f} | {result['mean']:.4f} |"
        )
    print(
        "Peak RSS: each process's own peak resident set (VmHWM on Linux); growth: over that peak after imports "
        "and a first row. Time: the "
        "conversion from the rows' OpenAI calls and the scoring, not reading the file."
    )
    ran = [peer for peer in PEERS if peer in results]
    print(
        "\n| case | ToolCallMatch | ToolCallMatch (extra_calls='ignore') | TrajectoryMatch (openevals' mode) | "
        + " | ".join(PEERS[peer] for peer in ran)
        + " |"
    )
    print("| --- " * (4 + len(ran)) + "|")
    for index, case in enumerate(CASES):
        setting = []
        if "arguments" in case:
            setting.append(f"arguments={case['arguments']}")
        setting.append(f"openevals mode {case.get('mode', 'unordered')}")
        mine = ours["cases"][index]
        cells = [number(mine[key]) for key in mine] + [number(results[peer]["cases"][index]) for peer in ran]
        print(f"| {case['case']} ({', '.join(setting)}) | " + " | ".join(cells) + " |")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
