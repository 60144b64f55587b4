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
