"""An engine written with the public API only: a toy that scores the job's chunks one after the other, through
``Job.chunks`` and ``score_chunk``, gives the local engine's results and summary, also under ``Run``."""

from __future__ import annotations

import json
from typing import ClassVar, Generator

from pydantic import Field

import scorers
from scorers.engines import Engine, Job, score_chunk


class OneByOne(Engine):
    """Scores ``size`` rows at a time, in order, in this process."""

    name: ClassVar[str] = "one-by-one"
    keeps_order: ClassVar[bool] = True
    size: int = Field(default=3, description="rows per chunk")

    def score(self, job: Job) -> Generator[list[scorers.RowResult], None, None]:
        for start, rows in job.chunks(self.size):
            yield score_chunk(job.unit, rows, start)


ROWS = [{"id": i, "output": f"answer {i % 3}", "expected": f"answer {i % 2}"} for i in range(10)] + [{"id": 10}]


def test_a_toy_engine_gives_the_local_results_and_summary():
    toy = scorers.evaluate(ROWS, ["ExactMatch", "Levenshtein"], engine=OneByOne(size=4), start=5)
    local = scorers.evaluate(ROWS, ["ExactMatch", "Levenshtein"], start=5)
    assert [r.to_record() for r in toy] == [r.to_record() for r in local]
    assert [r.index for r in scorers.evaluate(ROWS, ["ExactMatch"], engine=OneByOne())] == list(range(11))
    assert toy.summary.to_dict()["scorers"] == local.summary.to_dict()["scorers"]
    assert toy.summary.scorers["ExactMatch"]["errors"] == 1


def test_a_toy_engine_writes_and_resumes_a_run(tmp_path):
    out = tmp_path / "out.jsonl"
    whole = scorers.Run(ROWS, ["ExactMatch"], output=out, engine=OneByOne()).execute()  # a Path, or its str
    assert whole.passed and whole.failed_rows == 1 and whole.exit_code == 0  # a row error is not a failure...
    strict = scorers.Run(ROWS, ["ExactMatch"], output=str(out), engine=OneByOne(), fail_on_error=True).execute()
    assert strict.failures == ["1 row(s) had scorer errors"] and strict.exit_code == 1  # ...unless asked
    written = out.read_bytes()
    out.write_bytes(b"".join(written.splitlines(keepends=True)[:4]))
    resumed = scorers.Run(ROWS, ["ExactMatch"], output=str(out), engine=OneByOne(), resume=True).execute()
    assert out.read_bytes() == written and resumed.summary.rows == 11
    assert [json.loads(line)["id"] for line in written.splitlines()] == list(range(11))
