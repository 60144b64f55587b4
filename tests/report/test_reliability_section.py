"""The report's reliability section on its own: a calibration file as its template context, the partial rendered."""

from __future__ import annotations

import html
import re

import jinja2
import numpy as np
import pytest

from scorers.calibration.scores import calibrate_scores
from scorers.calibration.threshold import choose_threshold
from scorers.errors import DataError
from scorers.report.reliability import reliability_context


@pytest.fixture(scope="module")
def calibration() -> dict:
    rng = np.random.default_rng(4)
    truth = rng.random(300)
    outcomes = (rng.random(300) < truth).astype(float)
    judge = np.round(np.sqrt(truth) * 4) / 4  # a 5-point judge, too high in the middle
    train, test = (judge[:200], outcomes[:200]), (judge[200:], outcomes[200:])
    fitted = calibrate_scores(train, test, bins=5, outcome="label == 'Y'", resamples=100)
    threshold = choose_threshold(train, test, measure="kappa", scale=(1, 5), resamples=100)
    judge_entry = {"name": "Helpful <&>", "signature": {"scorer": "RatingJudge:Helpful"}}
    labels = {"file": "labels.jsonl", "sha256": "ab" * 32}
    return fitted.to_dict(judge=judge_entry, labels=labels, threshold=threshold.to_dict())


def render(context: dict) -> str:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("scorers.report", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    return environment.get_template("reliability.html.j2").render(reliability=context)


def test_the_section_shows_every_figure_on_the_held_out_split(calibration: dict) -> None:
    context = reliability_context(calibration)
    page = render(context)
    assert "held-out <b>test</b> split only (n=100)" in page
    for name, figure in calibration["figures"].items():
        low, high = figure["ci"]
        assert f'{figure["value"]:.4f} <span class="muted">[{low:.4f}, {high:.4f}]</span>' in page, name
    assert "Helpful &lt;&amp;&gt;" in page and "Helpful <&>" not in page.replace(context["svg"], "")
    assert "labels.jsonl" in page and "abababababababab" in page
    threshold = calibration["threshold"]
    assert f"score ≥ {threshold['threshold']:g} ({threshold['threshold_on_scale']:g} on the judge's scale)" in page


def test_the_bins_and_the_diagram(calibration: dict) -> None:
    page = render(reliability_context(calibration))
    for name in ("before", "after"):
        table = re.search(rf'data-bins="{name}">(.*?)</table>', page, re.S)
        assert table is not None
        counts = [int(c) for c in re.findall(r'<tr><td class="num">(\d+)</td>', table.group(1))]
        assert counts == [b["count"] for b in calibration["bins"][name]["bins"]]
        assert sum(counts) == 100
    svg = re.search(r'data-chart="reliability"[^>]*>(<svg.*?</svg>)', page, re.S)
    assert svg is not None and "<script" not in svg.group(1)
    assert "Reliability, held-out test split (n=100)" in html.unescape(svg.group(1))
    assert "isotonic map (n=100)" in html.unescape(svg.group(1))


def test_another_file_is_refused() -> None:
    with pytest.raises(DataError, match="not a scorers-calibration file"):
        reliability_context({"format": "scorers-meta-eval", "format_version": 1})
