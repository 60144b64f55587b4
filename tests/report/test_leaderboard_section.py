"""The report's leaderboard section on its own: a ranking (``rank -o``) as a context, rendered with jinja2."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from scorers.errors import DataError
from scorers.report.html import _environment
from scorers.report.leaderboard import leaderboard_section
from scorers.stats import rank

pytest.importorskip("matplotlib", reason="the report extra draws the ratings")  # (an extra: not a CI skip)

GAMES = [  # (A, B, winner, answer A, answer B)
    ("<b>&x</b>", "y", "a", "# long\n" + "w " * 40, "short"),
    ("y", "<b>&x</b>", "b", "short", "w " * 30),
    ("y", "z", "a", "w " * 20, "w"),
    ("z", "y", "tie", "w", "w"),
    ("z", "<b>&x</b>", "a", "w " * 9, "w " * 10),
    ("<b>&x</b>", "z", "b", "w", "w " * 3),
    ("y", "<b>&x</b>", "a", "w", "w " * 12),
    ("top", "y", "a", "w", "w"),
]


def ranking(**options: object) -> dict:
    rows = [
        {"id": i, "model_a": a, "model_b": b, "winner": w, "output": ta, "expected": tb}
        for i, (a, b, w, ta, tb) in enumerate(GAMES)
    ]
    return rank(rows, winner="winner", prompt="id", resamples=60, **options).to_dict()


def render(section: dict) -> str:
    return _environment().get_template("leaderboard.html.j2").render(leaderboard=section)


def test_the_table_shows_every_rating_and_reason() -> None:
    data = ranking()
    page = render(leaderboard_section(data))
    rows = re.findall(r"<tr><td class=\"num\">([^<]*)</td><th>([^<]*)</th>\s*<td class=\"num\">([^<]*)", page)
    shown = {html.unescape(name): (rank_, value.strip()) for rank_, name, value in rows}
    for s in data["systems"]:
        expected = "–" if s["rating"] is None else f"{s['rating']:.1f}"
        assert shown[s["system"]] == (str(s["rank"] or "–"), expected)
    assert "<b>top</b>: no rating: won its only comparison" in page
    assert "&lt;b&gt;&amp;x&lt;/b&gt;" in page and "<b>&x</b>" not in page  # names from the data are escaped
    assert 'data-chart="leaderboard"' in page and "<svg" in page
    assert "tie parameter ν (Davidson)" in page and "a 400-point gap is 10:1 odds" in page
    assert page.count('<td class="num"></td>') >= 4  # the diagonal of the win matrix


def test_style_control_shows_both_columns_and_the_coefficient(tmp_path: Path) -> None:
    path = tmp_path / "rank.json"
    path.write_text(json.dumps(ranking(style=["length", "headers"], ties="half")))
    section = leaderboard_section(path)
    page = render(section)
    assert section["label"] == str(path) and section["styled"]
    assert "without style control [interval]" in page and "style: length" in page
    assert "half a win each way" in page and "tie parameter" not in page
    headers = section["covariates"][1]
    assert headers["value"] is not None or headers["reason"]


def test_a_file_that_is_not_a_ranking_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "scorers-correlation", "format_version": 1}))
    with pytest.raises(DataError, match="not a ranking"):
        leaderboard_section(path)
    with pytest.raises(DataError, match="no such file"):
        leaderboard_section(tmp_path / "missing.json")
