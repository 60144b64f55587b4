"""The report's content: the summary's figures, escaping, judges, errors, size; the CLI command; import cost."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import markupsafe
import numpy as np
import pytest

from scorers.cli import main
from scorers.errors import ConfigError, DataError
from scorers.report import write_report
from scorers.report.results import ResultsFile
from scorers.runner import RowResult
from scorers.stats import compare
from scorers.stats.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, format_p_value, mean_interval

from .conftest import HOSTILE, results_records, write_results


def summary_cells(page: str) -> dict[str, list[str]]:
    """{scorer: [cell texts]} of the summary table."""
    table = re.search(r'<table class="summary">(.*?)</table>', page, flags=re.S).group(1)
    rows = {}
    for row in re.findall(r"<tr><th>(.*?)</th>(.*?)</tr>", table, flags=re.S):
        rows[html.unescape(row[0])] = [
            html.unescape(re.sub(r"<[^>]+>", " ", c)).split()[0] if c.strip() else ""
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row[1], flags=re.S)
        ]
    return rows


def test_the_summary_shows_the_run_summary_figures(case, tmp_path):
    name, paths, meta = case
    page = write_report(paths, tmp_path / "report.html", meta_evals=meta).read_text()
    cells = summary_cells(page)
    for i, path in enumerate(paths):
        records = ResultsFile.read(path).records
        for scorer, figures in ResultsFile.read(path).summary().items():
            n, mean, stdev, skipped, errors = cells[scorer][5 * i : 5 * i + 5]
            assert int(n) == figures["n"] == sum(r["scores"][scorer] is not None for r in records)
            assert mean == f"{figures['mean']:.4f}" and stdev == f"{figures['stdev']:.4f}"
            assert int(skipped) == figures["skipped"] and int(errors) == figures["errors"]
            assert figures["errors"] == sum(scorer in r.get("errors", {}) for r in records)
            assert figures["mean"] == pytest.approx(sum(ResultsFile.read(path).values(scorer)) / figures["n"])


def test_the_summary_ci_contains_the_mean(case, tmp_path):
    _, paths, meta = case
    page = write_report(paths, tmp_path / "report.html", meta_evals=meta).read_text()
    intervals = re.findall(r"(\d\.\d{4}) \[(\d\.\d{4}), (\d\.\d{4})\]", page)
    assert len(intervals) >= 2
    for mean, low, high in intervals:
        assert float(low) < float(mean) < float(high)


def test_row_text_is_escaped(tmp_path):
    path = write_results(tmp_path / "run.jsonl", results_records(30, seed=4, hostile=True))
    page = write_report([path], tmp_path / "report.html").read_text()
    assert "<script" not in page and "<img" not in page
    assert page.count(str(markupsafe.escape(HOSTILE))) >= 2  # the output, and the judge's rationale, as text


def test_judges_show_choices_usage_and_rationale(tmp_path):
    records = results_records(50, seed=5)
    path = write_results(tmp_path / "run.jsonl", records)
    page = write_report([path], tmp_path / "report.html", prices={"gpt-4o-mini": (0.15, 0.60)}).read_text()
    judged = [r for r in records if "Factuality" not in r.get("errors", {})]
    prompt = sum(r["metadata_scores"]["Factuality"]["usage"]["prompt_tokens"] for r in judged)
    completion = 12 * len(judged)
    assert f'<td class="num">{prompt:,}</td>' in page and f'<td class="num">{completion:,}</td>' in page
    assert f"{(prompt * 0.15 + completion * 0.60) / 1e6:.4f}" in page
    assert 'data-chart="choices"' in page
    lowest = min(judged, key=lambda r: (r["scores"]["Factuality"], records.index(r)))
    assert lowest["metadata_scores"]["Factuality"]["rationale"] in page


def test_without_prices_or_metadata_the_page_says_what_to_pass(tmp_path):
    records = results_records(20, seed=6)
    with_metadata = write_results(tmp_path / "a.jsonl", records)
    assert "pass --price MODEL=IN,OUT" in write_report([with_metadata], tmp_path / "a.html").read_text()
    bare = write_results(
        tmp_path / "b.jsonl", [{k: v for k, v in r.items() if k != "metadata_scores"} for r in records]
    )
    page = write_report([bare], tmp_path / "b.html").read_text()
    assert "run with <code>--metadata</code>" in page and 'data-chart="choices"' not in page


def test_rows_with_errors_are_listed_with_their_fields(tmp_path):
    records = results_records(40, seed=8)
    page = write_report([write_results(tmp_path / "run.jsonl", records)], tmp_path / "r.html", max_errors=2).read_text()
    failed = [r for r in records if r.get("errors")]
    assert len(failed) == 3
    assert "The first 2 of 3 rows with errors." in page
    for record in failed[:2]:
        assert record["input"] in page and "no valid choice after 2 re-asks" in page
    assert failed[2]["input"] not in page


def test_the_records_round_trip_through_the_runner_format(tmp_path):
    """The test files are what RowResult.to_record writes: from_record reads them back identically."""
    for record in results_records(30, seed=9):
        assert RowResult.from_record(record).to_record(with_metadata=True) == {
            k: v for k, v in record.items() if k not in ("id", "input", "output", "expected")
        }


@pytest.mark.slow
def test_a_10000_row_report_is_under_1_mb(tmp_path):
    paths = [
        write_results(tmp_path / f"run{i}.jsonl", results_records(10_000, seed=10, shift=0.1 * i)) for i in range(2)
    ]
    size = write_report(paths, tmp_path / "report.html").stat().st_size
    assert size < 1_000_000


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"output": "a"}\n', 'has no "scores" object'),
        ('{"scores": {"BLEU": "high"}}\n', "scores.BLEU is 'high'"),
        ("", "the file is empty"),
    ],
)
def test_a_file_that_is_not_results_is_a_data_error(tmp_path, content, message):
    path = tmp_path / "data.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=re.escape(message)) as info:
        write_report([path], tmp_path / "report.html")
    assert str(path) in str(info.value)


def test_no_files_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="at least one results file or meta-eval file"):
        write_report([], tmp_path / "report.html")


def test_cli_report_of_a_meta_eval(meta_eval_file, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", "--meta-eval", str(meta_eval_file), "-o", str(out)]) == 0
    assert 'data-chart="confusion"' in out.read_text()
    assert main(["report", "-o", str(out)]) == 2


def test_cli_report(tmp_path, capsys):
    paths = [write_results(tmp_path / f"run{i}.jsonl", results_records(30, seed=11)) for i in range(2)]
    out = tmp_path / "report.html"
    assert main(["report", *map(str, paths), "-o", str(out), "--price", "gpt-4o-mini=0.15,0.6"]) == 0
    assert "run0.jsonl" in out.read_text() and str(out) in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(out)]) == 2
    assert "missing.jsonl: no such file" in capsys.readouterr().err


def test_import_scorers_and_list_do_not_import_matplotlib():
    code = (
        "import sys, scorers, scorers.report; from scorers.cli import main; "
        "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()): main(['list'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'playwright')))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def table_numbers(page: str, table: str) -> list[str]:
    body = re.search(rf'<table class="{table}">(.*?)</table>', page, flags=re.S).group(1)
    return re.findall(r"[+-]?\d+\.\d{4,}", html.unescape(body))


def test_the_comparison_table_is_compare_s(tmp_path):
    paths = [write_results(tmp_path / f"run{i}.jsonl", results_records(60, seed=12, shift=0.05 * i)) for i in range(3)]
    page = write_report(paths, tmp_path / "report.html").read_text()
    expected = []
    for figure in compare(paths).figures:
        for system in figure.systems:
            expected += [f"{system.value:.4f}", f"{system.low:.4f}", f"{system.high:.4f}"]
            if system.difference is not None:
                expected += [f"{system.difference:+.4f}", format_p_value(system.p_value, 0.05)]
    assert table_numbers(page, "comparison") == expected
    assert page.count('data-chart="differences"') == 3 and "run2.jsonl − run0.jsonl" in page


def test_the_summary_ci_is_compare_s_interval_of_the_mean(tmp_path):
    records = results_records(50, seed=13)
    page = write_report([write_results(tmp_path / "run.jsonl", records)], tmp_path / "report.html").read_text()
    values = [r["scores"]["Levenshtein"] for r in records]
    low, high = mean_interval(np.asarray(values), DEFAULT_RESAMPLES["bs"], DEFAULT_SEED)
    assert summary_cells(page)["Levenshtein"][1:2] == [f"{sum(values) / len(values):.4f}"]
    assert f"[{low:.4f}, {high:.4f}]" in page


def test_files_of_different_rows_are_not_compared(tmp_path):
    paths = [write_results(tmp_path / f"run{i}.jsonl", results_records(20 + i, seed=14)) for i in range(2)]
    with pytest.raises(DataError, match="not results of the same rows"):
        write_report(paths, tmp_path / "report.html")


def test_meta_eval_figures_and_confusion_matrix(meta_eval_file, tmp_path):
    data = json.loads(meta_eval_file.read_text())
    page = write_report([], tmp_path / "report.html", meta_evals=[meta_eval_file]).read_text()
    expected = []
    for figure in data["figures"].values():
        expected += [] if figure["value"] is None else [f"{figure['value']:.4f}"]
        expected += [f"{x:.4f}" for x in figure["ci"] or []]
    assert table_numbers(page, "agreement") == expected
    heat_map = re.search(r'data-chart="confusion".*?</figure>', page, flags=re.S).group(0)
    cells = [int(t) for t in re.findall(r">(\d+)</text>", heat_map)]
    assert cells == [x for row in data["confusion"]["matrix"] for x in row]  # row by row, every cell annotated
    assert "f05" in page and "&lt;b&gt;no choice&lt;/b&gt;" in page  # the failed row, its reply escaped


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"format": "something-else"}', "not a meta-eval file"),
        ('{"format": "scorers-meta-eval", "format_version": 99}', "format_version 99"),
        ("{", "invalid JSON"),
    ],
)
def test_a_bad_meta_eval_file_is_a_data_error(tmp_path, content, message):
    path = tmp_path / "meta.json"
    path.write_text(content)
    with pytest.raises(DataError, match=re.escape(message)):
        write_report([], tmp_path / "report.html", meta_evals=[path])


def test_the_metadata_note_names_the_judges_that_ran_without_it(tmp_path):
    def bare(records):
        return [{k: v for k, v in r.items() if k != "metadata_scores"} for r in records]

    no_judge = write_results(tmp_path / "heuristics.jsonl", bare(results_records(20, seed=6, judge=False)))
    assert "--metadata" not in write_report([no_judge], tmp_path / "a.html").read_text()  # no judge ran
    judged = write_results(tmp_path / "judged.jsonl", bare(results_records(20, seed=6)))
    page = write_report([judged], tmp_path / "b.html").read_text()
    assert "No score metadata in judged.jsonl, so nothing here on Factuality:" in page


def test_a_meta_eval_heading_names_the_label_field_once(meta_eval_file, tmp_path):
    page = write_report([], tmp_path / "report.html", meta_evals=[meta_eval_file]).read_text()
    assert "the label label" not in page
    assert "Meta-eval: Factuality against human labels (field <code>label</code>)" in page


def test_rows_of_a_run_with_map_show_the_mapped_column(tmp_path):
    records = results_records(20, seed=15)
    for record in records:  # as `run --map output=response --map input=question` writes them
        record["question"], record["response"] = record.pop("input"), record.pop("output") + "(a response)"
        del record["metadata_scores"]
    path = write_results(tmp_path / "mapped.jsonl", records)
    page = write_report([path], tmp_path / "inferred.html").read_text()
    headings = re.findall(r"<th>([^<]*)</th>", page.split('<table class="rows">')[1].split("</thead>")[0])
    assert headings == ["line", "id", "score", "expected", "question", "response", "judge"]
    assert "(a response)" in page and "has no column input or output: its other columns are" in page
    page = write_report([path], tmp_path / "mapped.html", mapping={"output": "response"}).read_text()
    headings = re.findall(r"<th>([^<]*)</th>", page.split('<table class="rows">')[1].split("</thead>")[0])
    assert headings == ["line", "id", "score", "output (response)", "expected", "question", "judge"]


def test_the_comparison_shows_on_which_side_of_alpha_a_p_value_lies(tmp_path, monkeypatch):
    import dataclasses

    from scorers.stats import compare as compare_module  # the function; its module is below

    module = sys.modules["scorers.stats.compare"]

    def near_alpha(*args, **kwargs):
        result = compare_module(*args, **kwargs)
        figures = tuple(
            dataclasses.replace(
                f, systems=(f.systems[0], dataclasses.replace(f.systems[1], p_value=0.04996, better=True, worse=False))
            )
            for f in result.figures
        )
        return dataclasses.replace(result, figures=figures)

    monkeypatch.setattr(module, "compare", near_alpha)
    paths = [write_results(tmp_path / f"run{i}.jsonl", results_records(30, seed=16, shift=0.05 * i)) for i in range(2)]
    page = write_report(paths, tmp_path / "report.html").read_text()
    assert table_numbers(page, "comparison").count("0.04996") == 3 and "0.0500<" not in page
