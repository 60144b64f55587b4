"""The runner's failure policy seen from ``python -m scorers run``: what is written before a run stops."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scorers", "run", *args], capture_output=True, text=True, timeout=300, cwd=REPO
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
