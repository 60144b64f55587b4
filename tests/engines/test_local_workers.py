"""``--workers``: the rule that keeps a run with workers no slower than one process (injected facts, no timing),
and the results file byte for byte the same whether workers scored it, one process did, or the workers were given
up halfway."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scorers.batch import BatchScorer
from scorers.engines import worker_plan
from scorers.engines.local import score_jsonl
from scorers.engines.worker_plan import WorkersGain, WorkersUsed, plan_workers
from scorers.io import JsonlLines

REPO = Path(__file__).resolve().parents[2]
BIG = 1 << 30


@pytest.mark.parametrize(
    "asked,cores,load,size,used,why",
    [
        (1, 8, 0.0, BIG, 1, ""),
        (2, 2, 0.2, BIG, 2, ""),
        (2, 2, 1.2, BIG, 2, ""),  # the run's own earlier work: one core's worth is not busy
        (2, 1, 0.0, BIG, 1, "one core"),
        (2, 2, 3.0, BIG, 1, "the machine is busy, load 3.0 on 2 cores"),
        (2, 2, 0.0, 1000, 1, "the input is 0.0 MB, under the 4.2 MB that workers need to pay"),
        (2, 2, 0.0, None, 2, ""),  # standard input: its size unknown
        (8, 4, 0.0, BIG, 4, "4 cores"),
    ],
)
def test_the_plan_follows_the_cores_the_load_and_the_input_size(asked, cores, load, size, used, why, monkeypatch):
    monkeypatch.delenv("SCORERS_WORKERS", raising=False)
    assert plan_workers(asked, cores=cores, load=load, input_bytes=size) == WorkersUsed(asked, used, why)


def test_always_starts_every_worker_asked(monkeypatch):
    monkeypatch.setenv("SCORERS_WORKERS", "always")
    assert plan_workers(2, cores=1, load=9.0, input_bytes=10) == WorkersUsed(2, 2)


@pytest.mark.parametrize(
    "cpu_per_window,pays", [((1.0, 0.9), True), ((1.0, 0.5), False), ((0.7,), True), ((0.6,), False)]
)
def test_the_gain_check_gives_up_at_the_first_window_under_the_least_gain(cpu_per_window, pays, monkeypatch):
    monkeypatch.delenv("SCORERS_WORKERS", raising=False)
    gain = WorkersGain(start=0.0, window_s=0.5)
    for window, cpu in enumerate(cpu_per_window, start=1):
        gain.add(cpu_s=cpu, now=0.5 * window)
    assert gain.pays is pays


def _rows(n: int) -> str:
    lines = []
    for i in range(n):
        row: dict = {"id": i, "output": f"the cat sat on mat {i % 13}", "expected": f"the cat sat {i % 7}"}
        if i % 97 == 5:
            row["expected"] = None  # a row's error, recorded on its row
        lines.append(json.dumps(row) + "\n")
    return "".join(lines)


def _score(path: Path, scorers: list[str], workers: int) -> tuple[bytes, list[WorkersUsed]]:
    used: list[WorkersUsed] = []
    out = []
    with JsonlLines(str(path)) as source:
        for scored in score_jsonl(BatchScorer(scorers), source, workers=workers, on_workers=used.append):
            if scored is not None:
                out.append(scored.lines)
    return b"".join(out), used


@pytest.mark.parametrize("rows", [1, 700, pytest.param(5000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("scorers", [["ROUGE-L"], ["ExactMatch", "Levenshtein", "BLEU"]], ids=["rouge", "mix"])
@pytest.mark.parametrize("give_up", [False, True], ids=["workers", "given-up"])
def test_workers_write_the_same_bytes_as_one_process(tmp_path, monkeypatch, rows, scorers, give_up):
    path = tmp_path / "rows.jsonl"
    path.write_text(_rows(rows))
    monkeypatch.delenv("SCORERS_WORKERS", raising=False)
    one, used_one = _score(path, scorers, 1)
    if give_up:  # workers started; the first chunk back closes a window whose gain is under any bound
        monkeypatch.setattr("scorers.engines.local.plan_workers", lambda asked, **facts: WorkersUsed(asked, asked))
        monkeypatch.setattr(worker_plan, "WINDOW_S", 0.0)
        monkeypatch.setattr(worker_plan, "MIN_GAIN", float("inf"))
    else:  # workers started and kept, whatever the load
        monkeypatch.setenv("SCORERS_WORKERS", "always")
    many, used_many = _score(path, scorers, 2)
    assert many == one
    assert [json.loads(line)["id"] for line in one.splitlines()] == list(range(rows))
    assert used_one == [WorkersUsed(1, 1)] and used_many[0] == WorkersUsed(2, 2)
    # given up once the first of the workers' chunks is back (none may be: the first chunks are scored here
    # while the workers start)
    assert [u.used for u in used_many[1:]] == ([1] if give_up and len(used_many) > 1 else [])
    assert all("as fast as one process" in u.why for u in used_many[1:])


@pytest.mark.slow  # a run in a subprocess
def test_a_run_whose_workers_cannot_pay_says_so_and_scores_in_one_process(tmp_path):
    data, out, summary = tmp_path / "rows.jsonl", tmp_path / "out.jsonl", tmp_path / "summary.json"
    data.write_text(_rows(50))
    command = [sys.executable, "-m", "scorers", "run", str(data), "-s", "ROUGE-L", "-o", str(out), "--no-progress"]
    env = {k: v for k, v in __import__("os").environ.items() if k != "SCORERS_WORKERS"}
    result = subprocess.run(
        [*command, "--workers", "2", "--summary-json", str(summary)], capture_output=True, text=True, cwd=REPO, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "note: --workers 2: scoring in one process (the input is 0.0 MB" in result.stderr
    assert json.loads(summary.read_text())["workers"].startswith("1 (asked 2: the input is")
