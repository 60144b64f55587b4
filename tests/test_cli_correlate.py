"""``python -m scorers correlate``: a results file of `run` with human columns, figures against scipy, outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import scorers
from scorers.cli import main
from scorers.stats import correlation

REPO = Path(__file__).resolve().parents[1]
WORDS = "the a cat dog sat on mat rug blue red house went to quickly big small".split()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results file as `run` writes it: 9 documents with 3 to 5 systems each, human ratings 1-5 in the rows,
    one row whose Levenshtein errored (its score null) and one row without a rating."""
    rng = np.random.default_rng(3)
    rows = []
    for doc in range(9):
        reference = " ".join(rng.choice(WORDS, 8))
        for system in range(int(rng.integers(3, 6))):
            words = reference.split()
            for _ in range(int(rng.integers(0, 6))):
                words[int(rng.integers(0, len(words)))] = str(rng.choice(WORDS))
            output = " ".join(words)
            rating = int(np.clip(round(5 - 0.6 * sum(a != b for a, b in zip(words, reference.split()))), 1, 5))
            rows.append(
                {"doc_id": f"d{doc}", "system": f"m{system}", "output": output, "expected": reference, "rating": rating}
            )
    rows[4]["rating"] = None
    records = [r.to_record() for r in scorers.evaluate(rows, ["Levenshtein", "ExactMatch", "BLEU"])]
    records[7]["scores"]["Levenshtein"] = None
    records[7]["errors"] = {"Levenshtein": {"type": "ScorerInputError", "message": "an error"}}
    path = tmp_path_factory.mktemp("correlate") / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["correlate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_equals_scipy(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        str(results),
        "--human",
        "rating",
        "--group-by",
        "doc_id",
        "--system-key",
        "system",
        "-s",
        "Levenshtein",
        "-s",
        "BLEU",
        "--resamples",
        "50",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    records = [json.loads(line) for line in results.read_text().splitlines()]
    figures = {(f["scorer"], f["level"], f["coefficient"]): f for f in data["figures"]}
    for name in ("Levenshtein", "BLEU"):
        rows = [r for r in records if r["rating"] is not None and r["scores"][name] is not None]
        values = []
        for doc in dict.fromkeys(r["doc_id"] for r in rows):
            x = [r["scores"][name] for r in rows if r["doc_id"] == doc]
            y = [r["rating"] for r in rows if r["doc_id"] == doc]
            if len(set(x)) > 1 and len(set(y)) > 1:
                values.append(scipy.stats.kendalltau(x, y).statistic)
        assert figures[(name, "summary", "kendall_b")]["value"] == pytest.approx(np.mean(values), abs=1e-12)
        x = [r["scores"][name] for r in rows]
        y = [r["rating"] for r in rows]
        assert figures[(name, "global", "spearman")]["value"] == pytest.approx(
            scipy.stats.spearmanr(x, y).statistic, abs=1e-12
        )
    assert data["left_out"]["Levenshtein|rating"] == {"scorer failed": 1, "human missing": 1}
    assert "human: rating" in err and "Williams" in err


def test_outputs_and_report(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corr, page = tmp_path / "corr.json", tmp_path / "corr.html"
    args = [str(results), "--human", "rating", "--group-by", "doc_id", "--system-key", "system"]
    code, out, err = run(
        capsys, *args, "--resamples", "30", "--coefficient", "spearman", "-o", str(corr), "--html", str(page)
    )
    assert code == 0, err
    assert out == ""  # no --json: only the table, on stderr
    data = json.loads(corr.read_text())
    assert data["format"] == correlation.FORMAT and {f["coefficient"] for f in data["figures"]} == {"spearman"}
    assert (
        data
        == correlation.correlate(
            results, human=["rating"], group_by="doc_id", system_key="system", coefficients=["spearman"], resamples=30
        ).to_dict()
    )
    text = page.read_text()
    assert text.count('data-chart="correlation"') == 1 and "<script" not in text
    assert 'class="williams"' in text
    report = tmp_path / "report.html"
    assert main(["report", str(results), "--correlation", str(corr), "-o", str(report)]) == 0
    text = report.read_text()
    assert text.count('data-chart="correlation"') == 1 and 'class="williams"' in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--human", "rating", "--level", "summary"], "needs group_by (--group-by)"),
        (["--human", "output", "--group-by", "doc_id"], "not a finite number"),
        (["--human", "rating", "-s", "Nope"], "no scores of Nope"),
        (["--human", "ratng"], "--human ratng: no field 'ratng' in any row; did you mean 'rating'?"),
        (
            ["--human", "rating", "--group-by", "doc"],
            "--group-by doc: no field 'doc' in any row; did you mean 'doc_id'?",
        ),
        (["--human", "rating", "--system-key", "sys"], "--system-key sys: no field 'sys' in any row"),
    ],
)
def test_bad_usage_exits_2(results: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, _, err = run(capsys, str(results), *args)
    assert code == 2 and message in err


def test_pairs(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = [json.loads(line) for line in results.read_text().splitlines()]
    pairs = []
    for doc in dict.fromkeys(r["doc_id"] for r in records):
        rated = [r for r in records if r["doc_id"] == doc and r["rating"] is not None]
        pairs += [
            {"doc_id": doc, "better": a["system"], "worse": b["system"]}
            for a in rated
            for b in rated
            if a["rating"] > b["rating"]
        ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    code, out, err = run(
        capsys,
        str(results),
        "--human",
        "rating",
        "--group-by",
        "doc_id",
        "--system-key",
        "system",
        "--pairs",
        str(path),
        "--resamples",
        "20",
        "--no-compare",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["comparisons"] == [] and data["williams"] == []
    score = {(r["doc_id"], r["system"]): r["scores"]["BLEU"] for r in records}
    better = np.array([score[(p["doc_id"], p["better"])] for p in pairs])
    worse = np.array([score[(p["doc_id"], p["worse"])] for p in pairs])
    [found] = [k for k in data["kendall_like"] if k["scorer"] == "BLEU"]
    concordant, discordant = int(np.sum(better > worse)), int(np.sum(better <= worse))
    assert (found["concordant"], found["discordant"]) == (concordant, discordant)
    assert found["value"] == pytest.approx((concordant - discordant) / len(pairs), abs=1e-15)
    assert "Kendall-like" in err
    # the same pairs, formed from the rating by --pairs-from (any difference), give the same counts
    code, out, err = run(
        capsys, str(results), "--group-by", "doc_id", "--pairs-from", "rating", "--resamples", "20", "--json"
    )
    assert code == 0, err
    [formed] = [k for k in json.loads(out)["kendall_like"] if k["scorer"] == "BLEU"]
    assert formed["source"] == "rating, difference > 0"
    assert (formed["concordant"], formed["discordant"], formed["value"]) == (
        found["concordant"],
        found["discordant"],
        found["value"],
    )


def test_help_lists_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scorers", "--help"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0 and "correlate" in done.stdout


def test_a_human_score_beyond_floats_exits_2(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A rating of 10**400 (valid JSON; no float holds it) is exit 2 naming the row and column, not a traceback."""
    lines = results.read_text().splitlines()
    record = json.loads(lines[2])
    record["rating"] = 10**400
    path = tmp_path / "huge.jsonl"
    path.write_text("\n".join([*lines[:2], json.dumps(record), *lines[3:]]) + "\n")
    code, _, err = run(capsys, str(path), "--human", "rating", "--resamples", "5")
    assert code == 2 and "row 3: the human score 'rating' is 1000000" in err and "not a finite number" in err


@pytest.mark.parametrize(("flag", "shown"), [("--progress", True), ("--no-progress", False), (None, False)])
def test_progress_bar(results: Path, capsys: pytest.CaptureFixture[str], flag: str | None, shown: bool) -> None:
    """The bootstrap's resamples as a tqdm bar on stderr: with --progress, or (default) when stderr is a terminal
    (here it is not). Two passes (Levenshtein and BLEU) of 40 resamples."""
    args = [str(results), "--human", "rating", "-s", "Levenshtein", "-s", "BLEU", "--no-compare", "--resamples", "40"]
    code, _, err = run(capsys, *args, *([flag] if flag else []))
    assert code == 0, err
    assert ("bootstrap: 100%" in err and "80/80" in err) is shown
    assert "resample" in err if shown else "bootstrap:" not in err


def test_progress_bar_by_default_on_a_terminal(
    results: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = run(capsys, str(results), "--human", "rating", "-s", "BLEU", "--resamples", "30")
    assert code == 0, err
    assert "bootstrap: 100%" in err and "30/30" in err
