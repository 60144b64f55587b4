"""The trust sections in the whole report (issue 27): a jury found in a results file and in a meta-eval, a
leaderboard (``report --ranking``) and a reliability diagram (``report --calibration``), with the figures of
their files; a file of another kind is refused naming it."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from scorers.cli import main
from scorers.report.jury import results_jury_sections
from scorers.report.results import ResultsFile

pytest.importorskip("matplotlib", reason="the report extra draws the charts")  # (an extra: not a CI skip)


def _report(tmp_path: Path, *arguments: str | Path) -> str:
    out = tmp_path / "report.html"
    assert main(["report", *map(str, arguments), "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_every_trust_section_is_shown_with_its_files_figures(trust_files: dict[str, Path], tmp_path: Path) -> None:
    page = _report(
        tmp_path,
        trust_files["jury"],
        "--meta-eval",
        trust_files["meta"],
        "--ranking",
        trust_files["ranking"],
        "--calibration",
        trust_files["calibration"],
    )
    text = html.unescape(page)
    # the jury of the results file, and the same jury in its meta-eval, which adds each juror's agreement with labels
    assert page.count('<section class="jury" data-jury="Factuality">') == 2 and '<h2 id="juries">Juries</h2>' in page
    (section,) = results_jury_sections(ResultsFile.read(trust_files["jury"]))
    alpha = next(f for f in section["figures"] if f["name"] == "Krippendorff's alpha")
    shown = re.findall(r"Krippendorff's alpha</th><td class=\"num\">([^<]*)</td>", text)
    assert shown[0] == f"{alpha['value']:.4f}" and 0 < alpha["value"] < 1
    meta = json.loads(trust_files["meta"].read_text())["jury"]
    assert shown[1] == f"{meta['alpha']['value']:.4f}"
    # the meta-eval counts the rows its jury left unscored (the two 1-1 ties) as the run does: same units, same alpha
    assert meta["units"] == section["units"] == 19 and meta["unanimous"] == pytest.approx(17 / 19)
    assert meta["alpha"]["value"] == pytest.approx(alpha["value"], abs=1e-12)  # (the intervals: 200 vs 1,000 draws)
    assert "with the labels (alpha)" in page and page.count('data-chart="vote-shares"') == 1
    # juror b failed on one row: the results file's section counts it
    assert [(j["label"], j["answered"], j["failed"]) for j in section["per_juror"]] == [("a", 20, 0), ("b", 19, 1)]
    # the leaderboard, with the ranking's ratings
    ranking = json.loads(trust_files["ranking"].read_text())
    assert '<h2 id="leaderboards">Leaderboards</h2>' in page and page.count('data-chart="leaderboard"') == 1
    for system in ranking["systems"]:
        assert f'<th>{system["system"]}</th>\n<td class="num">{system["rating"]:.1f}' in page
    # the reliability diagram, every figure on the held-out split
    calibration = json.loads(trust_files["calibration"].read_text())
    assert page.count('data-chart="reliability"') == 1 and "Calibration of Helpful" in page
    assert f"{calibration['figures']['ece_before']['value']:.4f}" in page
    assert "scorers report: jury.jsonl" in text and "rank.json" in text.split("</title>")[0]


def test_the_trust_files_alone_make_a_report(trust_files: dict[str, Path], tmp_path: Path) -> None:
    page = _report(tmp_path, "--ranking", trust_files["ranking"], "--calibration", trust_files["calibration"])
    assert 'id="summary"' not in page and 'data-chart="leaderboard"' in page and 'data-chart="reliability"' in page


@pytest.mark.parametrize(
    ("flag", "other", "message"),
    [
        ("--ranking", "calibration", r"not a ranking"),
        ("--calibration", "ranking", r"not a calibration file .*calibrate"),
        ("--calibration", "meta", r"not a calibration file"),
    ],
)
def test_a_file_of_another_kind_is_refused_naming_it(
    trust_files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    other: str,
    message: str,
) -> None:
    assert main(["report", flag, str(trust_files[other]), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert str(trust_files[other]) in err and re.search(message, err), err
    assert not (tmp_path / "r.html").exists()
