"""The report in a real headless browser (Debian's Chromium, driven by playwright): it renders every chart,
logs no error, requests nothing but its own file, and runs none of the row text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from scorers.cli import main
from scorers.report import write_report

from .conftest import HOSTILE

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.needs_browser

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed: bash scripts/setup.sh (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


def open_report(browser, path: Path, screenshot: Path):
    """Open ``path`` as a file:// URL; returns (page, console messages, page errors, requested URLs)."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    console, errors, requests = [], [], []
    page.on("console", lambda message: console.append((message.type, message.text)))
    page.on("pageerror", lambda error: errors.append(str(error)))
    context.on("request", lambda request: requests.append(request.url))
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.screenshot(path=str(screenshot), full_page=True)
    return page, console, errors, requests


CHART_ELEMENTS = """() => [...document.querySelectorAll('figure.chart')].map(figure => {
    const svg = figure.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    return {chart: figure.dataset.chart, scorer: figure.dataset.scorer, width: box.width, height: box.height,
            paths: svg ? [...svg.querySelectorAll('path')].filter(p => (p.getAttribute('d') || '').length > 8)
                                                           .length : 0,
            texts: svg ? svg.querySelectorAll('text').length : 0};
})"""


def test_the_report_renders_offline_without_errors(browser, case, tmp_path):
    name, paths, meta = case
    report = write_report(paths, tmp_path / "report.html", meta_evals=meta)
    page, console, errors, requests = open_report(browser, report, tmp_path / "report.png")
    assert [m for m in console if m[0] in ("error", "warning")] == [] and errors == []
    assert requests == [report.resolve().as_uri()]  # the file itself, nothing else
    charts = page.evaluate(CHART_ELEMENTS)
    scorers = ["Levenshtein", "BLEU"] + (["Factuality"] if name != "one file" else [])
    assert [c["scorer"] for c in charts if c["chart"] == "histogram"] == scorers
    assert ("choices" in [c["chart"] for c in charts]) == (name != "one file")
    assert [c["scorer"] for c in charts if c["chart"] == "differences"] == (scorers if name == "two files" else [])
    assert [c["chart"] for c in charts].count("confusion") == (name == "meta-eval")
    for chart in charts:  # drawn: laid out with a size, bars/lines as paths, axis labels as text
        assert chart["width"] > 200 and chart["height"] > 100, chart
        assert chart["paths"] >= 5 and chart["texts"] >= 4, chart
    assert page.evaluate("document.querySelectorAll('table.summary tbody tr').length") == len(scorers)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_row_text_is_inert(browser, case, tmp_path):
    name, paths, meta = case
    report = write_report(paths, tmp_path / "report.html", meta_evals=meta)
    page, console, errors, requests = open_report(browser, report, tmp_path / "report.png")
    assert page.evaluate("document.scripts.length") == 0
    assert page.evaluate("window.__pwned === undefined")
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    if name == "judge, hostile text":
        shown = page.inner_text("body")
        assert shown.count("<script>window.__pwned = 1</script>") >= 2  # the output and the rationale, as text
    assert requests == [report.resolve().as_uri()] and errors == []


def test_tool_call_explanations_are_inert(browser: Browser, tmp_path: Path) -> None:
    """A tool named with markup, and such arguments, shown in the lowest rows' explanations as text."""
    data, out = tmp_path / "hostile.jsonl", tmp_path / "out.jsonl"
    row = {"output": [{"name": HOSTILE, "arguments": {HOSTILE: 1}}], "expected": [{"name": "search", "arguments": {}}]}
    data.write_text(json.dumps(row) + "\n")
    scorers = ["-s", "ToolCallMatch", "-s", "ToolCallValid", "-p", "ToolCallValid.tools=[]"]
    assert main(["run", str(data), *scorers, "--metadata", "--no-progress", "-o", str(out)]) == 0
    report = write_report([out], tmp_path / "report.html")
    page, console, errors, requests = open_report(browser, report, tmp_path / "report.png")
    assert page.evaluate("document.scripts.length") == 0 and page.evaluate("window.__pwned === undefined")
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    shown = page.evaluate("[...document.querySelectorAll('div.why')].map(d => d.innerText)")
    assert f"unmatched actual calls\n#0 {HOSTILE} {json.dumps({HOSTILE: 1})}" in shown
    assert any(text.startswith(f"invalid calls\n#0 {HOSTILE} ") for text in shown)
    assert requests == [report.resolve().as_uri()] and errors == []


def test_the_trust_sections_draw_their_charts(browser: Browser, trust_files: dict[str, Path], tmp_path: Path) -> None:
    """A jury's vote shares, a leaderboard and a reliability diagram (issue 27), drawn offline like the rest."""
    report = write_report(
        [trust_files["jury"]],
        tmp_path / "report.html",
        meta_evals=[trust_files["meta"]],
        rankings=[trust_files["ranking"]],
        calibrations=[trust_files["calibration"]],
    )
    page, console, errors, requests = open_report(browser, report, tmp_path / "report.png")
    assert [m for m in console if m[0] in ("error", "warning")] == [] and errors == []
    assert requests == [report.resolve().as_uri()]
    charts = page.evaluate(CHART_ELEMENTS)
    drawn = [c["chart"] for c in charts]
    for kind in ("vote-shares", "leaderboard", "reliability"):
        assert drawn.count(kind) == 1, drawn
    for chart in charts:
        assert chart["width"] > 200 and chart["height"] > 100, chart
        assert chart["paths"] >= 3 and chart["texts"] >= 4, chart
    tables = "document.querySelectorAll('section.jury table.jurors tbody tr').length"
    assert page.evaluate(tables) == 4  # two jurors, in the results file's section and in the meta-eval's
    assert page.evaluate("document.querySelectorAll('table.leaderboard tbody tr').length") == 3
    assert page.evaluate("document.querySelectorAll('table.reliability-bins').length") == 2
