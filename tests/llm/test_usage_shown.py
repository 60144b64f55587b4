"""A run's usage as the CLI's summary and the report show it: every attempt and token, the failed part apart."""

from __future__ import annotations

import io
import json

import pytest

from scorers.cli import _print_summary
from scorers.llm.usage import USAGE_FIELDS
from scorers.report.results import ResultsFile

from .test_usage import PRICES, run_mixed_rows


def test_the_cli_summary_and_the_report_show_the_failed_attempts_apart(fake_api_key, tmp_path):
    evaluation, records, _ = run_mixed_rows(fake_api_key)
    usage = evaluation.summary.scorers["Polite"]["usage"]
    printed = io.StringIO()
    _print_summary(evaluation.summary, printed)
    assert (
        "Polite:\n"
        "  usage: 6 calls answered, 1 failed, 0 cached\n"
        "         13 HTTP attempts\n"
        "         tokens in/out 135/20, of which failed attempts 75/14\n"
        "         no cost estimate (no price for gpt-4o-mini): --price MODEL=IN,OUT\n" in printed.getvalue()
    )
    assert '"requests"' not in printed.getvalue() and "spent:" not in printed.getvalue()  # once, in words

    path = tmp_path / "results.jsonl"  # the report reads the same figures back from the results file
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    reported = ResultsFile.read(path).summary(PRICES)["Polite"]["usage"]
    counts = (*USAGE_FIELDS, "total_tokens", "by_model")
    assert {k: reported[k] for k in counts} == {k: usage[k] for k in counts}
    assert reported["cost_usd"] == pytest.approx((135 * 1.0 + 20 * 10.0) / 1e6)
    assert reported["failed_cost_usd"] == pytest.approx((75 * 1.0 + 14 * 10.0) / 1e6)
