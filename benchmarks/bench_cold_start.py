"""Cold start: the wall time of one METEOR call in a fresh interpreter, against the goal and the old way.

Each case is a ``python -c`` command run in a fresh subprocess; the cases take
turns (one run of each per round, for ``--repeats`` rounds) so that a slow
spell of a shared machine hits them alike, and the best and median of each are
reported. Cases:

* ``METEOR cold``: ``import scorers; scorers.get('METEOR')(output=..., expected=...)``, goal < 1 s;
* ``METEOR cold, old way``: the same after ``import nltk``, which is what every
  cold call cost before scorers stopped importing nltk's package (nltk's
  ``__init__`` imports scipy, scikit-learn, ...); its ratio to the first is the speed-up;
* ``METEOR cold, class``: ``from scorers.text.meteor import METEOR`` and a call, without
  the registry lookup (what METEOR itself costs beyond ``import scorers``);
* ``import nltk``, ``import scorers`` and ``python -c pass`` alone, for scale.

Both METEOR commands print their score, and the run fails (exit status 1) unless the numbers are
identical; a goal missed is reported in the table, not in the exit status (shared machines are slow).
A first untimed run builds the WordNet copy and its synonym index if this machine has none.

    python benchmarks/bench_cold_start.py                    # 7 rounds
    python benchmarks/bench_cold_start.py --repeats 3 --json /tmp/cold.json
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import write_json  # noqa: E402

_CALL = "print(repr(METEOR_CALL(output='the cat sat', expected='a cat sat').score))"


@dataclass
class ColdCase:
    """One command, timed in fresh interpreters."""

    name: str
    code: str
    goal_s: float | None = None
    note: str = ""


CASES = [
    ColdCase(
        "METEOR cold",
        "import scorers; " + _CALL.replace("METEOR_CALL", "scorers.get('METEOR')"),
        goal_s=1.0,
        note="scorers.get('METEOR')(...) in a fresh interpreter",
    ),
    ColdCase(
        "METEOR cold, old way",
        "import nltk, scorers; " + _CALL.replace("METEOR_CALL", "scorers.get('METEOR')"),
        note="nltk's package imported, as scorers did before",
    ),
    ColdCase(
        "METEOR cold, class",
        "from scorers.text.meteor import METEOR; " + _CALL.replace("METEOR_CALL", "METEOR()"),
        note="no registry lookup",
    ),
    ColdCase("import nltk", "import nltk"),
    ColdCase("import scorers", "import scorers"),
    ColdCase("python -c pass", "pass"),
]


def run_once(code: str) -> tuple[float, str]:
    """Wall time of ``python -c code`` (start to exit) and its standard output; raises if it fails."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"python -c {code!r} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return elapsed, done.stdout.strip()


def measure(cases: Sequence[ColdCase], repeats: int) -> list[dict[str, Any]]:
    """Time every case ``repeats`` times, taking turns; check that the METEOR commands print one number."""
    times: dict[str, list[float]] = {case.name: [] for case in cases}
    outputs: dict[str, set[str]] = {case.name: set() for case in cases}
    for _ in range(repeats):
        for case in cases:
            elapsed, output = run_once(case.code)
            times[case.name].append(elapsed)
            outputs[case.name].add(output)
    scores = {output for case in cases if "METEOR" in case.name for output in outputs[case.name]}
    if len(scores) != 1:
        raise AssertionError(f"the METEOR commands printed different numbers: {sorted(scores)}")
    results = []
    for case in cases:
        best = min(times[case.name])
        results.append(
            {
                "case": case.name,
                "command": f"python -c {case.code!r}",
                "best_s": best,
                "median_s": statistics.median(times[case.name]),
                "runs": len(times[case.name]),
                "goal_s": case.goal_s,
                "met": None if case.goal_s is None else best < case.goal_s,
                "output": next(iter(outputs[case.name])),
                "note": case.note,
            }
        )
    return results


def print_table(results: list[dict[str, Any]], ratio: float) -> None:
    head = f"{'case':<22} {'best s':>8} {'median s':>9} {'goal':>9}  met  note"
    print(head)
    print("-" * len(head))
    for r in results:
        goal = f"< {r['goal_s']:.2f} s" if r["goal_s"] is not None else ""
        met = "" if r["met"] is None else ("yes" if r["met"] else "NO")
        print(f"{r['case']:<22} {r['best_s']:>8.3f} {r['median_s']:>9.3f} {goal:>9}  {met:<4} {r['note']}")
    print(f"old way / now (best times): {ratio:.2f}x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="fresh interpreters per case (default 7)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)

    run_once(CASES[0].code)  # builds the WordNet copy and synonym index where this machine has none
    load_before = os.getloadavg()
    results = measure(CASES, args.repeats)
    load_after = os.getloadavg()
    best = {r["case"]: r["best_s"] for r in results}
    ratio = best["METEOR cold, old way"] / best["METEOR cold"]
    print_table(results, ratio)
    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        write_json(
            args.json,
            results,
            {
                "repeats": args.repeats,
                "ratio_old_way_over_now": ratio,
                "python": platform.python_version(),
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average_before": load_before,
                "load_average_after": load_after,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
