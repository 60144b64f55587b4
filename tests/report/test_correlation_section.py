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


def _reshaped(data: dict, change: str) -> dict:
    """``data`` of the right format and version, with one inner shape wrong."""
    data = json.loads(json.dumps(data))
    if change == "figures-object":
        data["figures"] = {"a": 1}
    elif change == "figure-value-string":
        data["figures"][3]["value"] = "0.5"
    elif change == "figure-without-level":
        del data["figures"][0]["level"]
    elif change == "human-string":
        data["human"] = 7
    elif change == "williams-list":
        data["williams"] = [[1, 2]]
    elif change == "figure-missing":
        data["figures"] = data["figures"][1:]
    elif change == "bootstrap-null":
        data["bootstrap"] = None
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("figures-object", "figures: Input should be a valid array"),
        ("figure-value-string", "figures.3.value: Input should be a valid number"),
        ("figure-without-level", "figures.0.level: Field required"),
        ("human-string", "human: Input should be a valid array"),
        ("williams-list", "williams.0: Input should be"),
        ("figure-missing", "no figure of scorer '<M&1>' against 'coherence' at level 'summary' for 'pearson'"),
        ("bootstrap-null", "bootstrap: Input should be"),
    ],
)
def test_a_wrongly_shaped_correlation_file_exits_2(
    result: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str, message: str
) -> None:
    """Right format and version but a wrong inner shape: a DataError naming the file and where (it was a
    TypeError or KeyError while the page was built)."""
    from scorers.cli import main

    path = tmp_path / "corr.json"
    path.write_text(json.dumps(_reshaped(result, change)))
    with pytest.raises(DataError, match=re.escape(f"{path}: not a valid correlation file: ")) as raised:
        write_report([], tmp_path / "r.html", correlations=[path])
    assert message in str(raised.value)
    assert main(["report", "--correlation", str(path), "-o", str(tmp_path / "r.html")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("figures", "figures.kappa.ci: Tuple should have at most 2 items"),
        ("judge", "judge: Input should be an object"),
        ("confusion", "confusion.matrix.0: Input should be a valid array"),
        ("failures", "failures.0.errors: Field required"),
    ],
)
def test_a_wrongly_shaped_meta_eval_file_exits_2(
    meta_eval_file: Path, tmp_path: Path, change: str, message: str
) -> None:
    data = json.loads(meta_eval_file.read_text())
    if change == "figures":
        data["figures"]["kappa"]["ci"] = [0.1, 0.2, 0.3]
    elif change == "judge":
        data["judge"] = "Factuality"
    elif change == "confusion":
        data["confusion"]["matrix"] = [1, 2]
    else:
        data["failures"] = [{"index": 3}]
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=re.escape(f"{path}: not a valid meta-eval file: ")) as raised:
        write_report([], tmp_path / "r.html", meta_evals=[path])
    assert message in str(raised.value)
