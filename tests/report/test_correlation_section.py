"""The report's correlation section: a correlation file (``correlate -o``) as tables and one chart per human column."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from scorers.errors import ConfigError, DataError
from scorers.report import write_report
from scorers.stats.correlation import correlate


@pytest.fixture(scope="module")
def result() -> dict:
    rng = np.random.default_rng(2)
    rows = []
    for doc in range(8):
        for system in ("x", "y", "z", "w"):
            quality = rng.normal()
            rows.append(
                {
                    "doc": doc,
                    "system": system,
                    "coherence": int(np.clip(round(quality + 3), 1, 5)),
                    "relevance": round(float(quality + rng.normal()), 2),
                    "scores": {"<M&1>": round(float(quality + rng.normal()), 2), "M2": round(float(rng.random()), 2)},
                }
            )
    return correlate(
        rows, human=["coherence", "relevance"], group_by="doc", system_key="system", resamples=40
    ).to_dict()


def cells(page: str, human: str) -> dict[tuple[str, str], list[str]]:
    """{(scorer, level): [the value of each coefficient]} of the table under ``human``'s heading."""
    block = page.split(f"Human score <code>{human}</code>", 1)[1]
    table = re.search(r'<table class="correlation">.*?<tbody>(.*?)</tbody>', block, flags=re.S).group(1)
    out = {}
    for scorer, level, rest in re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td>(.*?)</tr>", table, flags=re.S):
        values = re.findall(r'<td class="num">(.*?)</td>', rest, flags=re.S)[1:]
        out[(html.unescape(scorer), level)] = [re.sub(r"<[^>]+>.*", "", v).strip() for v in values]
    return out


def test_tables_show_every_figure(result: dict, tmp_path: Path) -> None:
    page = write_report([], tmp_path / "c.html", correlations=[result]).read_text()
    for human in ("coherence", "relevance"):
        shown = cells(page, human)
        for f in (f for f in result["figures"] if f["human"] == human):
            index = ["pearson", "spearman", "kendall_b", "kendall_c"].index(f["coefficient"])
            expected = "–" if f["value"] is None else f"{f['value']:.4f}"
            assert shown[(f["scorer"], f["level"])][index] == expected
    assert page.count('data-chart="correlation"') == 2
    assert "&lt;M&amp;1&gt;" in page and "<M&1>" not in page  # names from the data are escaped
    assert 'class="correlation-tests"' in page and 'class="williams"' in page
    assert "· ·" not in page  # no results file before the correlation: one separator


def test_rows_left_out_are_shown(tmp_path: Path) -> None:
    rows = [
        {"doc": d, "system": s, "h": (d + i) % 3, "scores": {"M": None if (d, s) == (0, "x") else float(i * d)}}
        for d in range(4)
        for i, s in enumerate("xyz")
    ]
    rows[5]["h"] = None
    data = correlate(rows, human=["h"], group_by="doc", system_key="system", resamples=20).to_dict()
    page = write_report([], tmp_path / "c.html", correlations=[data]).read_text()
    assert "Rows left out: M against h: 1 scorer failed, 1 human missing." in page


def test_a_correlation_file_beside_results(result: dict, tmp_path: Path) -> None:
    path = tmp_path / "corr.json"
    path.write_text(json.dumps(result))
    results = tmp_path / "run.jsonl"
    results.write_text(json.dumps({"output": "a", "scores": {"Levenshtein": 0.5}}) + "\n")
    page = write_report([results], tmp_path / "r.html", correlations=[path]).read_text()
    assert f"Correlation with human scores: {path}" in page and 'id="summary"' in page


def test_not_a_correlation_file(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "scorers-meta-eval"}))
    with pytest.raises(DataError, match="not a correlation file"):
        write_report([], tmp_path / "r.html", correlations=[path])
    with pytest.raises(ConfigError, match="correlation file"):
        write_report([], tmp_path / "r.html")
