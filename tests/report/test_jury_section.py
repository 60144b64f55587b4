"""The report's jury section on its own: a results file's jury rows and a meta-eval's jury, rendered with jinja2."""

from __future__ import annotations

import contextlib
import html
import json
import re
from pathlib import Path

import pytest

import scorers
from scorers.judges import LLMClassifier
from scorers.judges.jury import Jury
from scorers.llm import LLMEngine
from scorers.report.html import _environment
from scorers.report.jury import meta_eval_jury_section, results_jury_sections
from scorers.report.results import ResultsFile
from scorers.testing import LoopbackLLM, Reply

pytest.importorskip("matplotlib", reason="the report extra draws the vote shares")  # (an extra: not a CI skip)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, dict]:
    """A results file of a 3-juror jury over 12 rows (juror 2 disagrees on every third row, juror 3 on every
    fourth and fails on row 5, where the other two tie: a JuryError under tie="fail") and the run's summary."""
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(LoopbackLLM(default=Reply.choice("Yes"))) for _ in range(3)]
        for i in range(12):
            if i % 3 == 0:
                servers[1].script(Reply.choice("No"), match=f"row {i}\n")
            if i % 4 == 0:
                servers[2].script(Reply.choice("No"), match=f"row {i}\n")
        servers[2].script(Reply.error(503), match="row 5\n")
        servers[1].script(Reply.choice("No"), match="row 5\n")
        judges = [
            LLMClassifier(
                "Polite",
                "Is <b>{{output}}</b> polite?",
                {"Yes": 1, "No": 0},
                model=f"m{i}",
                engine=LLMEngine(base_url=s.base_url, api_key="placeholder", cache=False, max_retries=0),
            )
            for i, s in enumerate(servers)
        ]
        jury = Jury("<Polite&Jury>", judges, aggregate="majority", tie="fail", min_jurors=2)
        results = list(scorers.evaluate([{"output": f"row {i}\n"} for i in range(12)], [jury]))
    path = tmp_path_factory.mktemp("jury") / "run.jsonl"
    path.write_text("".join(json.dumps(r.to_record(with_metadata=True)) + "\n" for r in results))
    summary = jury.aggregator()
    for result in results:
        if "<Polite&Jury>" in result.results:
            summary.add(result.results["<Polite&Jury>"])
        else:
            summary.add_error(result.errors["<Polite&Jury>"])
    return path, summary.result()


def render(section: dict) -> str:
    return _environment().get_template("jury.html.j2").render(jury=section)


def test_a_results_files_jury_rows_give_the_runs_agreement(run):
    path, summary = run
    (section,) = results_jury_sections(ResultsFile.read(path))
    agreement = summary["agreement"]
    figures = {f["name"]: f for f in section["figures"]}
    assert figures["Krippendorff's alpha"]["value"] == agreement["alpha"]["value"]
    assert [figures["Fleiss' kappa"][k] for k in ("low", "high")] == agreement["fleiss_kappa"]["ci"]
    assert section["units"] == 12 and section["level"] == "nominal"
    flaky = section["per_juror"][2]
    assert (flaky["label"], flaky["answered"], flaky["failed"], flaky["errors"]) == (
        "Polite@m2",
        11,
        1,
        flaky["errors"],
    )
    assert list(flaky["errors"].values()) == [1]
    votes = section["votes"]
    assert votes["rows"] == 11 and sum(votes["shares"].values()) == 11 and votes["ties"] == 0
    assert summary["n"] == 11  # the tied row is its error
    page = render(section)
    assert page.count('data-chart="vote-shares"') == 1 and page.count("<svg") == 1
    assert "&lt;Polite&amp;Jury&gt;" in page and "<Polite&Jury>" not in page  # names from the data are escaped
    alpha = re.search(r"Krippendorff's alpha</th><td class=\"num\">([^<]*)</td>", html.unescape(page)).group(1)
    assert alpha == f"{agreement['alpha']['value']:.4f}"


def test_a_meta_evals_jury_shows_agreement_with_the_labels():
    per_juror = {
        "a": {
            "answered": 10,
            "with_jury": {"value": 0.8, "ci": [0.5, 1.0], "n": 10},
            "with_labels": {"value": 1.0, "ci": None, "n": 10, "reason": "one value"},
        },
        "b": {
            "answered": 9,
            "with_jury": {"value": None, "ci": None, "n": 0, "reason": "no pairs"},
            "with_labels": None,
        },
    }
    report = {
        "judge": {"name": "Polite"},
        "label": "polite",
        "jury": {
            "level": "nominal",
            "jurors": ["a", "b"],
            "units": 9,
            "alpha": {"value": 0.5, "ci": [0.1, 0.8], "n": 9},
            "fleiss_kappa": {"value": None, "ci": None, "n": 0, "reason": "no unit was rated by every rater"},
            "unanimous": 0.75,
            "per_juror": per_juror,
            "bootstrap": {"method": "percentile", "resamples": 200, "confidence": 0.95, "seed": 0, "over": "rows"},
        },
    }
    section = meta_eval_jury_section(report)
    assert section["votes"] is None and section["per_juror"][0]["with_labels"]["value"] == 1.0
    page = render(section)
    assert "with the labels (alpha)" in page and "no unit was rated by every rater" in page
    assert "[0.1000, 0.8000]" in page and "<svg" not in page and "n 10; one value" in page
