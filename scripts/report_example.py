"""The report screenshot of docs/compare.md (docs/report.png): examples/qa.jsonl scored by BLEU, ROUGE-L, Levenshtein
and Factuality (replies scripted by a LoopbackLLM, so no endpoint is needed), rendered by Chromium.

Usage: python scripts/report_example.py [OUT_FOLDER]   (default: a temporary folder; writes docs/report.png)
Needs Chromium at /usr/bin/chromium (scripts/setup.sh) and playwright (the dev extra).
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from pathlib import Path

import scorers
from scorers.io import read_rows
from scorers.report import write_report
from scorers.testing import LoopbackLLM, Reply

ROOT = Path(__file__).resolve().parents[1]
REASONS = {
    "A": "The answer is a subset of the expert answer and consistent with it.",
    "B": "The answer is a superset of the expert answer and consistent with it.",
    "C": "The answer has the same details as the expert answer.",
    "D": "The answer disagrees with the expert answer.",
    "E": "The answers differ, but the differences do not matter for factuality.",
}


def results_file(folder: Path) -> Path:
    rows = list(read_rows(str(ROOT / "examples" / "qa.jsonl")))
    verdicts = itertools.cycle("CCDABCECDC")
    out = folder / "qa.results.jsonl"
    with LoopbackLLM(default=lambda request: Reply.choice(choice := next(verdicts), reasons=REASONS[choice])) as server:
        scorers.configure(base_url=server.base_url, api_key="loopback", cache=False, model="gpt-4o-mini")
        run = scorers.evaluate(rows, ["BLEU", "ROUGE-L", "Levenshtein", "Factuality"])
        with out.open("w", encoding="utf-8") as fh:
            for result in run:
                fh.write(json.dumps(result.to_record(with_metadata=True), ensure_ascii=False) + "\n")
    return out


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    report = write_report(
        [results_file(folder)], folder / "report.html", prices={"gpt-4o-mini": (0.15, 0.60)}, lowest=3
    )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page(viewport={"width": 1180, "height": 1300}, device_scale_factor=1)
        page.goto(report.resolve().as_uri())
        page.screenshot(path=str(folder / "report.png"), type="png")
        browser.close()
    from PIL import Image  # (matplotlib's dependency) 64 colours: a third of the size, no visible loss

    Image.open(folder / "report.png").convert("RGB").quantize(colors=64).save(
        ROOT / "docs" / "report.png", optimize=True
    )
    print(f"wrote {report} and {ROOT / 'docs' / 'report.png'}")


if __name__ == "__main__":
    main()
