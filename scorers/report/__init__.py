"""HTML reports of results files: ``python -m scorers report RESULTS.jsonl [B.jsonl ...] -o report.html``.

:func:`write_report` writes one self-contained page (no network, no script):
per scorer n, mean with a 95 % CI, stdev, skipped and errors; a histogram per
scorer; with several files the paired comparison and per-row differences; for
judges the choices, token usage and cost; the lowest-scoring rows and the rows
with errors, with the judge's rationale or why a tool-call scorer gave its score
(calls left unmatched, arguments that disagree, invalid calls). matplotlib draws
the charts and is imported only when a report is written.
"""

from __future__ import annotations

from .html import write_report

__all__ = ["write_report"]
