"""The runner's failure policy seen from ``python -m scorers run``: what is written before a run stops."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bounded import run_bounded

pytestmark = pytest.mark.slow  # runs, signals and crashes in subprocesses (15 s of CPU for 11 tests)

REPO = Path(__file__).resolve().parents[1]
#: these runs test the worker processes themselves, on inputs too small for workers to pay: start them anyway
ALWAYS_WORKERS = {**os.environ, "SCORERS_WORKERS": "always"}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scorers", "run", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=ALWAYS_WORKERS,
    )


@pytest.mark.parametrize("valid", [2, 1000])
def test_a_torn_last_line_stops_the_run_after_every_row_before_it_is_written_and_resume_continues(tmp_path, valid):
    rows = [{"id": i, "output": str(i), "expected": str(i % 3)} for i in range(valid)]
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    data = tmp_path / "bad.jsonl"
    data.write_text(lines + '{"id": %d, "output": "x", "expec' % valid)  # a write cut short
    out = tmp_path / "out.jsonl"

    stopped = run(str(data), "-s", "ExactMatch", "-o", str(out))
    assert stopped.returncode == 2, stopped.stderr
    assert f"bad.jsonl:{valid + 1}: invalid JSON" in stopped.stderr and "Traceback" not in stopped.stderr
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [record["id"] for record in written] == list(range(valid))
    assert [record["scores"]["ExactMatch"] for record in written] == [float(str(i) == str(i % 3)) for i in range(valid)]

    data.write_text(lines + json.dumps({"id": valid, "output": "x", "expected": "x"}) + "\n")  # the line fixed
    resumed = run(str(data), "-s", "ExactMatch", "-o", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[:valid] == written and [record["id"] for record in records] == list(range(valid + 1))
    assert records[-1]["scores"] == {"ExactMatch": 1.0}


def test_workers_write_the_file_and_summary_one_process_and_the_python_api_write(tmp_path):
    rows = [
        {"id": i, "output": f"the answer is {i % 7}", "expected": f"the answer is {i % 5}", "scores": i % 2}
        for i in range(3000)
    ]
    rows[10]["expected"] = None  # a row's error
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    names = ["ExactMatch", "Levenshtein", "BLEU"]
    written = {}
    for workers in (1, 2, 3):
        out, summary = tmp_path / f"out{workers}.jsonl", tmp_path / f"summary{workers}.json"
        result = run(
            str(data),
            *[a for n in names for a in ("-s", n)],
            "-o",
            str(out),
            "--workers",
            str(workers),
            "--summary-json",
            str(summary),
            "--metadata",
        )
        assert result.returncode == 0, result.stderr
        assert "holds the input column(s) 'scores' as 'input:scores'" in result.stderr
        figures = json.loads(summary.read_text())
        written[workers] = out.read_bytes(), {k: v for k, v in figures.items() if k != "elapsed_s"}
    assert written[2] == written[1] and written[3] == written[1]
    from scorers import evaluate
    from scorers.io import json_line

    expected = b"".join(json_line(r.to_record(with_metadata=True)) for r in evaluate(rows, names))
    assert written[1][0] == expected
    assert written[1][1]["rows"] == 3000 and written[1][1]["scorers"]["ExactMatch"]["errors"] == 1


# ------------------------------------------------------------------ a scorer that crashes, hangs or exhausts memory
#: A plugin scorer, loaded through its entry point, that misbehaves as SCORERS_TEST_MODE says: in a worker process
#: (with --workers) or anywhere ("anywhere-" in front). In the run's own process every row takes 1 ms, so that the
#: worker processes are up and take the later chunks. A worker process writes its pid to SCORERS_TEST_PIDS as it
#: starts scoring; a scorer that starts hanging writes SCORERS_TEST_MARK first.
PLUGIN = """\
import ctypes, multiprocessing, os, re, time
from scorers import Scorer, text_field

class Misbehaving(Scorer):
    fields = (text_field("output"),)

    def _score(self, *, output):
        mode = os.environ["SCORERS_TEST_MODE"]
        if multiprocessing.parent_process() is not None and not hasattr(self, "noted"):
            self.noted = True
            with open(os.environ["SCORERS_TEST_PIDS"], "a") as pids:
                pids.write(f"{os.getpid()}\\n")
        if multiprocessing.parent_process() is None and not mode.startswith("anywhere-"):
            time.sleep(0.001)
        elif output == "bad":
            mode = mode.removeprefix("anywhere-")
            if mode in ("sleep", "spin"):
                with open(os.environ["SCORERS_TEST_MARK"], "a") as mark:
                    mark.write(f"{os.getpid()}\\n")
            if mode == "exit":
                os._exit(3)
            if mode == "segfault":
                ctypes.string_at(0)
            if mode == "sleep":
                time.sleep(10**6)
            if mode == "spin":  # catastrophic backtracking: in C, holding the interpreter lock, for ages
                re.fullmatch(r"(a+)+$", "a" * 64 + "b")
            if mode == "hog":
                held = []
                while True:
                    held.append(bytearray(2**26))
        return self.make_score(1.0)
"""


def _misbehaving(folder: Path, mode: str, bad_from: int) -> dict[str, str]:
    """The environment of a run of Misbehaving in ``mode`` over ``folder/data.jsonl``, 3,000 rows of 200 bytes
    (``bad`` from row ``bad_from`` on), written here; the plugin is installed in ``folder/site``."""
    site = folder / "site"
    (site / "misbehaving-1.0.dist-info").mkdir(parents=True, exist_ok=True)
    (site / "misbehaving.py").write_text(PLUGIN)
    (site / "misbehaving-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: misbehaving\nVersion: 1.0\n"
    )
    (site / "misbehaving-1.0.dist-info" / "entry_points.txt").write_text(
        "[scorers]\nMisbehaving = misbehaving:Misbehaving\n"
    )
    rows = [{"id": i, "output": "bad" if i >= bad_from else "good", "pad": "." * 160} for i in range(3000)]
    (folder / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return {
        **ALWAYS_WORKERS,
        "PYTHONPATH": str(site),
        "SCORERS_TEST_MODE": mode,
        "SCORERS_TEST_MARK": str(folder / "mark"),
        "SCORERS_TEST_PIDS": str(folder / "pids"),
    }


def _misbehaving_run(tmp: str, mode: str, workers: int, bad_from: int, stop: str | None) -> dict:
    """``python -m scorers run`` of Misbehaving (:func:`_misbehaving`) with ``workers``, and ``stop`` (a signal's
    name) sent once a scorer hangs. What came out, and the worker processes that survived."""
    import signal

    import psutil

    folder = Path(tmp)
    data, out, mark, pids = folder / "data.jsonl", folder / "out.jsonl", folder / "mark", folder / "pids"
    env = _misbehaving(folder, mode, bad_from)
    command = [sys.executable, "-m", "scorers", "run", str(data), "-s", "Misbehaving", "-o", str(out)]
    proc = subprocess.Popen([*command, "--workers", str(workers)], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    children: list[psutil.Process] = []  # the run's worker processes, as seen while it runs
    try:
        while proc.poll() is None and not (stop is not None and mark.exists()):
            with contextlib.suppress(psutil.NoSuchProcess):
                children = psutil.Process(proc.pid).children(recursive=True) or children
            time.sleep(0.05)
        if stop is not None:
            proc.send_signal(getattr(signal, stop))
        _, stderr = proc.communicate(timeout=60)
        seen = {p.pid for p in children} | set(map(int, pids.read_text().split() if pids.exists() else []))
        for pid in seen - {p.pid for p in children}:  # a worker too short-lived for the loop to see
            with contextlib.suppress(psutil.NoSuchProcess):
                children.append(psutil.Process(pid))
        survivors = [p.pid for p in psutil.wait_procs(children, timeout=30)[1]]  # a hang guard: they end at once
    finally:
        for process in [psutil.Process(proc.pid) if proc.poll() is None else None, *children]:
            with contextlib.suppress(psutil.NoSuchProcess, AttributeError):  # nothing of this run is left behind
                process.kill()
    return {
        "code": proc.returncode,
        "stderr": stderr,
        "lines": out.read_text(),
        "workers": len(seen),
        "survivors": survivors,
    }


def _complete(lines: str) -> list[dict]:
    """The records of a results file, each line complete, the ids 0, 1, 2, ... in order."""
    assert lines == "" or lines.endswith("\n")
    records = [json.loads(line) for line in lines.splitlines()]
    assert [record["id"] for record in records] == list(range(len(records)))
    return records


@pytest.mark.parametrize("mode,ended", [("exit", "exit code 3"), ("segfault", "killed by SIGSEGV")])
def test_a_crashed_worker_stops_the_run_with_exit_2_saying_how_it_ended_and_no_process_survives(tmp_path, mode, ended):
    result = run_bounded(_misbehaving_run, str(tmp_path), mode, 2, 0, None, timeout_s=120, memory_mb=1024)
    assert result["code"] == 2, result["stderr"]
    assert f"a worker process ended abruptly ({ended}): a scorer crashed it" in result["stderr"]
    assert "the rows written so far are complete" in result["stderr"] and "Traceback" not in result["stderr"]
    assert all(record["scores"]["Misbehaving"] == 1.0 for record in _complete(result["lines"]))
    assert result["workers"] >= 1 and result["survivors"] == []


@pytest.mark.parametrize(
    "mode,workers", [("anywhere-sleep", 1), ("sleep", 2), ("spin", 2)], ids=["sleeps-in-thread", "sleeps", "spins-in-C"]
)
def test_one_sigterm_stops_a_run_whose_scorer_hangs_with_143_and_its_rows_written(tmp_path, mode, workers):
    result = run_bounded(_misbehaving_run, str(tmp_path), mode, workers, 1000, "SIGTERM", timeout_s=120, memory_mb=1024)
    assert result["code"] == 143, result["stderr"]
    assert "terminated; the rows written so far are complete" in result["stderr"]
    records = _complete(result["lines"])
    assert workers > 1 or len(records) >= 300  # the chunks before the hung row
    assert result["workers"] >= workers - 1 and result["survivors"] == []


def test_the_workers_of_a_killed_run_end_with_it(tmp_path):
    result = run_bounded(_misbehaving_run, str(tmp_path), "spin", 2, 0, "SIGKILL", timeout_s=120, memory_mb=1024)
    assert result["code"] == -9
    _complete(result["lines"])
    assert result["workers"] >= 2 and result["survivors"] == []


def test_a_scorer_that_exhausts_the_memory_cap_fails_its_row_and_the_run_goes_on(tmp_path):
    result = run_bounded(_misbehaving_run, str(tmp_path), "anywhere-hog", 2, 2999, None, timeout_s=120, memory_mb=512)
    assert result["code"] == 3, result["stderr"]
    assert "Misbehaving: 1 row(s) failed with an unexpected error" in result["stderr"]
    records = _complete(result["lines"])
    assert len(records) == 3000 and records[-1]["errors"]["Misbehaving"]["type"] == "MemoryError"
    assert all(record["scores"]["Misbehaving"] == 1.0 for record in records[:-1])


# ------------------------------------------------------------------ one output file, one run at a time
def test_a_second_run_on_an_output_in_use_refuses_at_once_naming_the_process_and_leaves_it_as_it_is(tmp_path):
    env = _misbehaving(tmp_path, "anywhere-sleep", 1000)  # the first run hangs at row 1000, its output open
    data, out, mark = tmp_path / "data.jsonl", tmp_path / "out.jsonl", tmp_path / "mark"
    command = [sys.executable, "-m", "scorers", "run", str(data), "-s", "Misbehaving", "-o", str(out)]
    holder = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120  # a hang guard: it gets there within seconds
        while not mark.exists():
            assert time.monotonic() < deadline and holder.poll() is None
            time.sleep(0.05)
        before = out.read_bytes()
        assert before.count(b"\n") >= 300
        env["SCORERS_TEST_MODE"] = "anywhere-good"
        for args in ([], ["--resume"], ["--workers", "2"]):
            refused = subprocess.run([*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
            assert refused.returncode == 2, refused.stderr
            assert f"error: {out} is being written by another run (process {holder.pid})" in refused.stderr
            assert out.read_bytes() == before  # neither emptied nor appended to
    finally:
        holder.kill()  # SIGKILL: a killed run leaves no stale lock
        holder.wait()
    resumed = subprocess.run([*command, "--resume"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == list(range(3000))
