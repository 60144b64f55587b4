"""Issue 18's speed goals, each measured side by side with its peer by its own benchmark script, in one table.

Runs ``bench_text.py --only levenshtein``, ``bench_run.py``, ``bench_judge.py``, ``bench_cold_start.py``,
``bench_bertscore.py`` and ``bench_engines.py`` (50,000 text rows on Ray and Spark), each with ``--json`` into a folder, then prints one line per goal: what was measured,
the goal, and whether it was met, with the machine and its load average. ``--readme`` rewrites the table in
README.md (between its ``goals`` markers) from those figures; ``--from DIR`` reuses a folder of an earlier run
instead of measuring again.

    python benchmarks/goals.py --out /tmp/goals            # about 15 minutes on an idle 2-core machine
    python benchmarks/goals.py --from /tmp/goals --readme  # the README's table from those figures
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
BEGIN, END = "<!-- goals:begin (python benchmarks/goals.py --readme) -->", "<!-- goals:end -->"

#: Each script with its arguments and the JSON file it writes.
SCRIPTS = {
    "text": ["bench_text.py", "--only", "levenshtein"],
    "run": ["bench_run.py"],
    "judge": ["bench_judge.py"],
    "cold": ["bench_cold_start.py"],
    "bertscore": ["bench_bertscore.py"],
    "engines": [
        "bench_engines.py",
        "--rows",
        "50000",
        "--text-scorers",
        "ROUGE-L,Levenshtein,ExactMatch",
        "--judge-rows",
        "0",
        "--repeat",
        "3",
    ],
}


#: How each comparison is written in the table's target column.
SIGNS = {operator.ge: "≥", operator.gt: ">", operator.le: "≤", operator.lt: "<", operator.eq: "="}


@dataclass
class Goal:
    """One line of the table: a figure read from a script's JSON, and the bound it must meet.

    ``bound`` is (comparison, threshold), written once: the target column is derived from it (the threshold
    shown as the figure is), so the text cannot say one bound while another is checked; None: only stated.
    """

    what: str
    script: str
    read: Callable[[dict[str, Any]], float]
    shown: Callable[[float], str]
    bound: tuple[Callable[[float, float], bool], float] | None
    note: str = ""  # words after the target, e.g. "(within 3×)"

    @property
    def target(self) -> str:
        if self.bound is None:
            return "stated"
        compare, threshold = self.bound
        return f"{SIGNS[compare]} {self.shown(threshold)}" + (f" {self.note}" if self.note else "")

    def met(self, value: float) -> bool | None:
        return None if self.bound is None else bool(self.bound[0](value, self.bound[1]))


def _case(data: dict[str, Any], case: str, reference: str | None = None) -> dict[str, Any]:
    for result in data["results"]:
        if result["case"] == case and (reference is None or result["reference"].startswith(reference)):
            return dict(result)
    raise KeyError(f"no case {case!r} ({reference}) in the figures")


def _run_case(data: dict[str, Any], prefix: str) -> dict[str, Any]:
    return dict(next(r for r in data["results"] if r["case"].startswith(prefix)))


def _engine(data: dict[str, Any], runner: str) -> dict[str, Any]:
    return dict(next(r for r in data["results"] if r["runner"] == runner))


GOALS = [
    Goal(
        "Levenshtein `score_batch` / autoevals' per-call loop, 20,000 unique short pairs",
        "text",
        lambda d: _case(d, "Levenshtein, short", "autoevals")["ratio"],
        lambda x: f"{x:.2f}×",
        (operator.ge, 2),
    ),
    Goal(
        "Levenshtein `score_batch` / rapidfuzz alone (the metric's own cost), same pairs",
        "text",
        lambda d: _case(d, "Levenshtein, short", "rapidfuzz")["ratio"],
        lambda x: f"{x:.3f}×",
        (operator.ge, 1 / 3),
        "(within 3×)",
    ),
    Goal(
        "`run -s ExactMatch -s Levenshtein`, 1,000,000 rows, one process",
        "run",
        lambda d: _run_case(d, "ExactMatch+Levenshtein, 1,000,000")["rows_per_s"],
        lambda x: f"{x:,.0f} rows/s",
        (operator.ge, 100_000),
    ),
    Goal(
        "its peak RSS at 1,000,000 rows / at 100,000 rows",
        "run",
        lambda d: _run_case(d, "ExactMatch+Levenshtein, 1,000,000")["peak_ratio"],
        lambda x: f"{x:.2f}×",
        (operator.le, 1.1),
        "(flat)",
    ),
    Goal(
        "`run -s ROUGE-L --workers 2` / `--workers 1`, 100,000 rows (never slower)",
        "run",
        lambda d: _run_case(d, "ROUGE-L --workers 2")["speedup"],
        lambda x: f"{x:.2f}×",
        (operator.ge, 1),
    ),
    Goal(
        "the same, as a share of the machine's parallel ceiling measured beside it",
        "run",
        lambda d: _run_case(d, "ROUGE-L --workers 2")["share_of_ceiling"],
        lambda x: f"{x:.2f}",
        (operator.ge, 0.85),
    ),
    Goal(
        "`run -s ROUGE-L --workers 2` / `--workers 1`, 500,000 rows: share of the ceiling",
        "run",
        lambda d: _run_case(d, "ROUGE-L, 500,000 rows --workers 2")["share_of_ceiling"],
        lambda x: f"{x:.2f}",
        (operator.ge, 0.85),
    ),
    Goal(
        "`--workers 2` / `--workers 1`, ROUGE-L + METEOR + BLEU",
        "run",
        lambda d: _run_case(d, "ROUGE-L+METEOR+BLEU --workers 2")["speedup"],
        lambda x: f"{x:.2f}×",
        (operator.ge, 1.7),
    ),
    *(
        Goal(
            f"a {label} run of 50,000 text rows / the local run, after start-up (one machine, 2 workers)",
            "engines",
            lambda d, runner=runner: _engine(d, runner)["engine_vs_local"],
            lambda x: f"{x:.2f}×",
            (operator.le, 1.4),
        )
        for runner, label in (("ray", "Ray"), ("spark", "Spark"))
    ),
    *(
        Goal(
            f"{label}'s start-up and first run (its workers import scorers), stated apart",
            "engines",
            lambda d, runner=runner: _engine(d, runner)["startup_s"] + _engine(d, runner)["first_run_s"],
            lambda x: f"{x:.1f} s",
            None,
        )
        for runner, label in (("ray", "Ray"), ("spark", "Spark"))
    ),
    Goal(
        "Factuality judge, 1,000 rows at 32 in flight × 100 ms: ours / the bare openai client",
        "judge",
        lambda d: d["results"][0]["ours_share_of_sdk_ceiling"],
        lambda x: f"{x:.3f}",
        (operator.ge, 0.95),
    ),
    Goal(
        "the same 1,000 rows re-run from the cache: speed-up",
        "judge",
        lambda d: d["results"][0]["cached_speedup"],
        lambda x: f"{x:.0f}×",
        (operator.ge, 100),
    ),
    Goal(
        "requests the cached re-run sends",
        "judge",
        lambda d: d["results"][0]["cached_requests"],
        lambda x: f"{x:.0f}",
        (operator.eq, 0),
    ),
    Goal(
        "cold `python -c \"import scorers; scorers.get('METEOR')(...)\"`, best of 7",
        "cold",
        lambda d: _case(d, "METEOR cold")["best_s"],
        lambda x: f"{x:.2f} s",
        (operator.lt, 1),
    ),
    Goal(
        "BERTScore (MiniLM-L6) pairs/s / bert-score's, 1,000 pairs, numbers equal",
        "bertscore",
        lambda d: d["results"][0]["ratio"],
        lambda x: f"{x:.2f}×",
        (operator.ge, 1.5),
    ),
    Goal(
        "BERTScore's FLOP/s as a share of this CPU's `torch.matmul` fp32 peak",
        "bertscore",
        lambda d: d["ours_share_of_peak"],
        lambda x: f"{x:.0%}",
        (operator.ge, 0.5),
    ),
]


def measure(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, command in SCRIPTS.items():
        print(f"goals: running {' '.join(command)}", flush=True)
        subprocess.run([sys.executable, str(HERE / command[0]), *command[1:], "--json", str(folder / f"{name}.json")])


def machine() -> str:
    model = ""
    if Path("/proc/cpuinfo").exists():
        found = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        model = found.group(1).strip() if found else ""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model or platform.processor() or platform.machine()}, {cpus} CPUs, Python {platform.python_version()}"


def table(folder: Path) -> str:
    figures = {
        name: json.loads((folder / f"{name}.json").read_text())
        for name in SCRIPTS
        if (folder / f"{name}.json").exists()
    }
    lines = ["| goal | measured | target | met |", "| --- | --- | --- | --- |"]
    for goal in GOALS:
        try:
            value = goal.read(figures[goal.script])
        except (KeyError, StopIteration, IndexError):
            lines.append(f"| {goal.what} | not measured (`{SCRIPTS[goal.script][0]}` failed) | {goal.target} | no |")
            continue
        met = {None: "—", True: "yes", False: "**no**"}[goal.met(value)]
        lines.append(f"| {goal.what} | {goal.shown(value)} | {goal.target} | {met} |")
    loads = [f"{name} {load:.1f}" for name, data in figures.items() if (load := _load(data)) is not None]
    note = f"Measured on {machine()}" + (f"; load average after each script: {', '.join(loads)}." if loads else ".")
    return "\n".join([*lines, "", note])


def _load(data: dict[str, Any]) -> float | None:
    """The 1-minute load average a script recorded when it ended, wherever its JSON keeps it."""
    for holder in (data, *data.get("results", [])[:1]):
        for key in ("load_average_after", "load_average", "load"):
            value = holder.get(key)
            if isinstance(value, list) and value:
                return float(value[0])
            if isinstance(value, (int, float)):
                return float(value)
    return None


def write_readme(text: str) -> None:
    readme = README.read_text(encoding="utf-8")
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    README.write_text(readme[:start] + "\n" + text + "\n" + readme[end:], encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("goals-figures"), help="folder for the scripts' JSON")
    parser.add_argument("--from", dest="source", type=Path, help="read the figures of an earlier run from here")
    parser.add_argument("--readme", action="store_true", help="rewrite README.md's table from the figures")
    args = parser.parse_args()
    folder = args.source or args.out
    if args.source is None:
        measure(folder)
    text = table(folder)
    print(text)
    if args.readme:
        write_readme(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
