"""scorers.compare / ``python -m scorers compare``: against scipy, against sacrebleu's PairedTest, by hand."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import scorers
from scorers.errors import ConfigError, DataError
from scorers.stats import compare, resample

REPO = Path(__file__).resolve().parents[2]
WORDS = "the a cat dog sat on mat rug blue red house went to quickly big small".split()
ROWS = 40
TESTS = ["bs", "ar"]
SEED, RESAMPLES = 4321, 400


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scorers", "compare", *args], capture_output=True, text=True, timeout=300, cwd=REPO
    )


def write(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def scored(path: Path, outputs: list[str], references: list[str], names: list[str]) -> str:
    """A results file as `run` writes it: the runner's records of these rows."""
    rows = [
        {"id": f"r{i}", "input": f"q{i}", "output": o, "expected": r}
        for i, (o, r) in enumerate(zip(outputs, references))
    ]
    return write(path, [result.to_record() for result in scorers.evaluate(rows, names)])


def sentences(rng: random.Random) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(ROWS)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A reference set and three systems' results files (BLEU, chrF, TER, Levenshtein)."""
    pytest.importorskip("sacrebleu")
    rng = random.Random(7)
    folder = tmp_path_factory.mktemp("compare")
    references = sentences(rng)
    systems = [sentences(rng) for _ in range(3)]
    paths = [
        scored(folder / f"sys{i}.jsonl", hyps, references, ["BLEU", "chrF", "TER", "Levenshtein"])
        for i, hyps in enumerate(systems)
    ]
    return {"references": references, "systems": systems, "paths": paths}


def by_figure(comparison: scorers.stats.Comparison) -> dict[tuple[str, str], scorers.stats.FigureComparison]:
    return {(f.scorer, f.figure): f for f in comparison.figures}


def levenshtein(path: str) -> np.ndarray:
    return np.array([json.loads(line)["scores"]["Levenshtein"] for line in Path(path).read_text().splitlines()])


# ------------------------------------------------------------------ means: scipy on the same data
@pytest.mark.parametrize("test", TESTS)
def test_means_and_intervals_are_scipys_bootstrap_on_the_same_rows(corpus, test):
    figure = by_figure(compare(corpus["paths"][:2], test=test, resamples=RESAMPLES, seed=SEED))[("Levenshtein", "mean")]
    assert figure.rows == ROWS and figure.excluded == 0
    for path, system in zip(corpus["paths"], figure.systems):
        values = levenshtein(path)
        expected = scipy.stats.bootstrap(
            (values,),
            np.mean,
            n_resamples=RESAMPLES if test == "bs" else 1000,
            confidence_level=0.95,
            method="BCa",
            rng=np.random.default_rng(SEED),
        ).confidence_interval
        assert system.value == float(sum(map(Fraction, values)) / len(values))  # the exact mean, rounded once
        assert (system.low, system.high) == (expected.low, expected.high)
        assert system.resample_mean is None and system.halfwidth is None
    base, other = figure.systems
    assert other.difference == other.value - base.value and 0 < other.p_value <= 1


# ------------------------------------------------------------------ corpus figures: sacrebleu's PairedTest
def sacrebleu_paired(corpus: dict, test: str, metrics: dict) -> dict:
    from sacrebleu.significance import PairedTest

    named = [(f"sys{i}", hyps) for i, hyps in enumerate(corpus["systems"])]
    # under ar, the intervals take sacrebleu's default 1000 resamples (n_ar_confidence=0), as ours do
    _, results = PairedTest(
        named, metrics, [corpus["references"]], test_type=test, n_samples=RESAMPLES, n_ar_confidence=0
    )()
    return results


@pytest.mark.parametrize("test", TESTS)
def test_corpus_figures_intervals_and_p_values_equal_sacrebleus_paired_test(corpus, test, monkeypatch):
    from sacrebleu.metrics import BLEU, CHRF, TER

    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))  # PairedTest reads its seed from there
    theirs = sacrebleu_paired(corpus, test, {"BLEU": BLEU(), "chrF": CHRF(), "TER": TER()})
    ours = by_figure(compare(corpus["paths"], test=test, resamples=RESAMPLES, seed=SEED))
    for key, figure, name in (
        ("BLEU", "corpus_bleu", "BLEU"),
        ("chrF2", "corpus_chrf", "chrF"),
        ("TER", "corpus_ter", "TER"),
    ):
        for system, result in zip(ours[(name, figure)].systems, theirs[key]):
            assert system.value == result.score
            assert system.resample_mean == result.mean and system.halfwidth == result.ci
            assert system.p_value == result.p_value  # every p-value equal


def test_corpus_settings_come_from_params(corpus, monkeypatch):
    from sacrebleu.metrics import BLEU

    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    theirs = sacrebleu_paired(corpus, "bs", {"BLEU": BLEU(smooth_method="floor", smooth_value=0.2)})["BLEU"]
    ours = by_figure(
        compare(
            corpus["paths"],
            resamples=RESAMPLES,
            seed=SEED,
            params={"bleu": {"smooth_method": "floor", "smooth_value": 0.2}},
        )
    )[("BLEU", "corpus_bleu")]
    default = by_figure(compare(corpus["paths"], resamples=RESAMPLES, seed=SEED))[("BLEU", "corpus_bleu")]
    assert [s.value for s in ours.systems] == [r.score for r in theirs]
    assert [s.halfwidth for s in ours.systems] == [r.ci for r in theirs]
    assert [s.value for s in ours.systems] != [s.value for s in default.systems]


def test_identical_systems_have_p_1_where_sacrebleu_reports_its_minimum(corpus, monkeypatch):
    from sacrebleu.metrics import BLEU

    monkeypatch.setenv("SACREBLEU_SEED", str(SEED))
    same = {**corpus, "systems": [corpus["systems"][0]] * 2}
    theirs = sacrebleu_paired(same, "bs", {"BLEU": BLEU()})["BLEU"][1]
    ours = by_figure(compare([corpus["paths"][0]] * 2, resamples=RESAMPLES, seed=SEED))[("BLEU", "corpus_bleu")]
    assert theirs.p_value == 1 / (RESAMPLES + 1)
    assert ours.systems[1].p_value == 1.0 and ours.systems[1].difference == 0.0


# ------------------------------------------------------------------ hand-checkable cases
def exact_match_files(
    tmp_path: Path, first: list[float | None], second: list[float | None], name: str = "ExactMatch"
) -> list[str]:
    return [
        write(
            tmp_path / f"{label}.jsonl",
            [{"id": i, "input": f"q{i}", "scores": {name: value}} for i, value in enumerate(values)],
        )
        for label, values in (("a", first), ("b", second))
    ]


@pytest.mark.parametrize("test", TESTS)
def test_identical_systems_p_1(tmp_path, test):
    values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0]
    system = compare(exact_match_files(tmp_path, values, values), test=test, resamples=300).figures[0].systems[1]
    assert (system.difference, system.p_value, system.worse, system.better) == (0.0, 1.0, False, False)


def test_better_on_every_row_paired_bootstrap(tmp_path):
    """Every resample differs by exactly 1, so the centred statistic is 0 each time, never >= 1: p = 1/(N+1)."""
    figure = compare(exact_match_files(tmp_path, [0.0] * 10, [1.0] * 10), resamples=300, seed=3).figures[0]
    assert figure.systems[1].p_value == 1 / 301
    assert figure.systems[1].better and not figure.systems[1].worse
    assert [(s.low, s.high) for s in figure.systems] == [(0.0, 0.0), (1.0, 1.0)]  # constant rows: [x, x]


def test_better_on_every_row_approximate_randomisation(tmp_path):
    """Only a trial that keeps all 10 rows or swaps all 10 reaches the observed difference, and it only ties
    it: sacrebleu's count (trials strictly above) leaves it out, so p is 1 / (trials + 1)."""
    trials, seed = 3000, 5
    figure = compare(
        exact_match_files(tmp_path, [0.0] * 10, [1.0] * 10), test="ar", resamples=trials, seed=seed
    ).figures[0]
    keep = np.random.default_rng(seed).integers(2, size=(trials, 10), dtype=bool)
    assert int(np.sum(keep.all(axis=1) | (~keep).all(axis=1))) > 0  # ties exist, and are not counted
    assert figure.systems[1].p_value == 1 / (trials + 1)


def test_interval_takes_sacrebleus_order_statistics():
    resampled = np.array([5.0, 1.0, 3.0, 2.0, 4.0] * 16)  # 80 values: cut 2 on each side
    estimate = resample.interval(resampled)
    assert (estimate.resample_mean, estimate.halfwidth, estimate.low, estimate.high) == (3.0, 2.0, 1.0, 5.0)


def test_failed_and_null_rows_are_left_out_of_every_file_and_counted(tmp_path):
    first, second = exact_match_files(tmp_path, [1.0, 0.0, None, 1.0, 0.5], [1.0, 1.0, 1.0, None, 0.5])
    lines = [json.loads(x) for x in Path(first).read_text().splitlines()]
    lines[1]["errors"] = {"ExactMatch": {"type": "ScorerInputError", "message": "bad"}}
    lines[1]["scores"]["ExactMatch"] = None
    write(Path(first), lines)
    figure = compare([first, second], resamples=100).figures[0]
    assert (figure.rows, figure.excluded) == (2, 3)
    assert figure.failed == {first: 2, second: 1}
    assert [s.value for s in figure.systems] == [0.75, 0.75]
    assert "3 left out (failed: a.jsonl 2, b.jsonl 1)" in compare([first, second], resamples=100).table()


# ------------------------------------------------------------------ matching rows
def test_key_matches_rows_in_any_order(corpus, tmp_path):
    lines = Path(corpus["paths"][1]).read_text().splitlines()
    shuffled = write(tmp_path / "shuffled.jsonl", [json.loads(x) for x in reversed(lines)])
    by_key = compare([corpus["paths"][0], shuffled], key="id", resamples=200)
    by_position = compare(corpus["paths"][:2], resamples=200)
    for keyed, positional in zip(by_key.figures, by_position.figures):
        assert [(s.value, s.low, s.high, s.p_value) for s in keyed.systems] == [
            (s.value, s.low, s.high, s.p_value) for s in positional.systems
        ]
    with pytest.raises(DataError, match="different 'input'.*--key FIELD"):
        compare([corpus["paths"][0], shuffled], resamples=200)


@pytest.mark.parametrize(
    "edit, key, message",
    [
        (lambda rows: rows[:-1], None, r"b\.jsonl has 5 rows and .*a\.jsonl has 6"),
        (
            lambda rows: [{**r, "input": "other"} if r["id"] == 2 else r for r in rows],
            None,
            r"a\.jsonl row 3 and .*b\.jsonl row 3 have different 'input'",
        ),
        (
            lambda rows: [{k: v for k, v in r.items() if not (k == "id" and r["id"] == 4)} for r in rows],
            "id",
            r"b\.jsonl: row 5 has no field 'id'",
        ),
        (
            lambda rows: [{**r, "id": 0} if r["id"] == 1 else r for r in rows],
            "id",
            r"b\.jsonl: rows 1 and 2 have the same id 0",
        ),
        (
            lambda rows: [{**r, "id": 9} if r["id"] == 5 else r for r in rows],
            "id",
            r"1 id values of .*a\.jsonl missing from .*b\.jsonl: 5 \(row 6\); 1 id values of .*b\.jsonl not in .*: 9",
        ),
        (lambda rows: [{"id": r["id"]} for r in rows], None, r"b\.jsonl: row 1 has no \"scores\" object"),
    ],
)
def test_rows_that_do_not_match_are_a_data_error_naming_them(tmp_path, edit, key, message):
    first, second = exact_match_files(tmp_path, [1.0] * 6, [0.0] * 6)
    write(Path(second), edit([json.loads(x) for x in Path(second).read_text().splitlines()]))
    with pytest.raises(DataError, match=message):
        compare([first, second], key=key, resamples=50)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"test": "t"}, "choose bs"),
        ({"resamples": 0}, "positive integer"),
        ({"seed": -1}, "non-negative"),
        ({"alpha": 1.5}, "strictly between"),
        ({"params": {"Nope": {"x": 1}}}, "Nope is not a scorer"),
        ({"params": {"ExactMatch": {"ignore_case": True}}}, "no corpus statistics"),
    ],
)
def test_bad_options_are_config_errors(tmp_path, options, message):
    with pytest.raises(ConfigError, match=message):
        compare(exact_match_files(tmp_path, [1.0, 0.0], [0.0, 1.0]), **options)


# ------------------------------------------------------------------ several files
@pytest.mark.parametrize("test", TESTS)
def test_each_file_against_the_baseline_as_if_compared_alone(corpus, test):
    together = compare(corpus["paths"], test=test, resamples=200, seed=SEED)
    for other in (1, 2):
        alone = compare([corpus["paths"][0], corpus["paths"][other]], test=test, resamples=200, seed=SEED)
        for whole, pair in zip(together.figures, alone.figures):
            assert whole.systems[0] == pair.systems[0] and whole.systems[other] == pair.systems[1]


# ------------------------------------------------------------------ CLI: JSON, table, exit codes
@pytest.mark.slow
def test_json_schema_and_table(corpus):
    result = cli(*corpus["paths"], "--json", "--resamples", "200", "--seed", "9")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {
        k: data[k]
        for k in (
            "files",
            "baseline",
            "rows",
            "matched_by",
            "test",
            "resamples",
            "interval_resamples",
            "seed",
            "alpha",
            "not_compared",
        )
    } == {
        "files": corpus["paths"],
        "baseline": corpus["paths"][0],
        "rows": ROWS,
        "matched_by": "position",
        "test": "bs",
        "resamples": 200,
        "interval_resamples": 200,
        "seed": 9,
        "alpha": 0.05,
        "not_compared": {},
    }
    assert [(f["scorer"], f["figure"]) for f in data["figures"]] == [
        ("BLEU", "mean"),
        ("BLEU", "corpus_bleu"),
        ("chrF", "mean"),
        ("chrF", "corpus_chrf"),
        ("TER", "mean"),
        ("TER", "corpus_ter"),
        ("Levenshtein", "mean"),
    ]
    for figure in data["figures"]:
        assert set(figure) == {"scorer", "figure", "higher_is_better", "rows", "failed", "excluded", "systems", "note"}
        assert figure["higher_is_better"] is (figure["figure"] != "corpus_ter")
        for i, system in enumerate(figure["systems"]):
            assert set(system) == {
                "file",
                "value",
                "low",
                "high",
                "resample_mean",
                "halfwidth",
                "difference",
                "p_value",
                "worse",
                "better",
            }
            assert system["low"] <= system["high"]
            assert (system["p_value"] is None) is (i == 0)
            assert (system["halfwidth"] is None) is (figure["figure"] == "mean")
    lines = result.stderr.splitlines()
    assert lines[1].split() == ["scorer", "figure", "system", "value", "95", "%", "interval", "diff", "p"]
    assert lines[2].split()[:3] == ["BLEU", "mean", "sys0.jsonl"]
    assert "TER corpus_ter: 40 rows, 0 left out; lower is better" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "baseline, other, name, code",
    [
        ([1.0] * 8, [0.0] * 8, "ExactMatch", 1),  # higher is better: the other file is worse
        ([0.0] * 8, [1.0] * 8, "ExactMatch", 0),
        ([0.0] * 8, [1.0] * 8, "Hallucination", 1),  # lower is better: a higher score is worse
        ([1.0] * 8, [0.0] * 8, "Hallucination", 0),
        ([1.0, 0.0] * 4, [1.0, 0.0] * 4, "ExactMatch", 0),
        ([None] * 8, [1.0] * 8, "ExactMatch", 1),  # no row to compare: nothing shows it is not worse
    ],
)
def test_fail_if_worse_exit_codes(tmp_path, baseline, other, name, code):
    result = cli(
        *exact_match_files(tmp_path, baseline, other, name), "--fail-if-worse", name.lower(), "--resamples", "200"
    )
    assert result.returncode == code, result.stderr
    assert ("worse than" in result.stderr) is (code == 1)


@pytest.mark.slow
def test_ter_is_worse_when_its_corpus_figure_rises(tmp_path):
    pytest.importorskip("sacrebleu")
    rng = random.Random(3)
    references = sentences(rng)
    paths = [
        scored(tmp_path / "perfect.jsonl", references, references, ["TER"]),
        scored(tmp_path / "random.jsonl", sentences(rng), references, ["TER"]),
    ]
    figures = by_figure(compare(paths, resamples=200))
    corpus_ter = figures[("TER", "corpus_ter")].systems[1]
    assert corpus_ter.difference > 0 and corpus_ter.worse  # TER up: worse
    assert figures[("TER", "mean")].systems[1].worse  # the 0-1 score down: worse
    assert cli(*paths, "--fail-if-worse", "TER", "--resamples", "200").returncode == 1


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--fail-if-worse", "Nope"], ["--resamples", "0"], ["--test", "xx"]])
def test_bad_usage_exits_2(tmp_path, args):
    assert cli(*exact_match_files(tmp_path, [1.0, 0.0], [0.0, 1.0]), *args).returncode == 2


def test_mismatched_files_exit_2(tmp_path):
    first, second = exact_match_files(tmp_path, [1.0, 0.0, 1.0], [0.0, 1.0])
    result = cli(first, second)
    assert result.returncode == 2 and "has 2 rows" in result.stderr


def test_the_table_shows_on_which_side_of_alpha_a_p_value_lies():
    from scorers.stats.compare import Comparison, FigureComparison, SystemFigure

    def system(name: str, p_value: float | None) -> SystemFigure:
        return SystemFigure(
            name,
            0.5,
            low=0.4,
            high=0.6,
            difference=None if p_value is None else 0.1,
            p_value=p_value,
            better=p_value is not None and p_value < 0.05,
        )

    files = ("base.jsonl", "below.jsonl", "above.jsonl", "at.jsonl")
    figure = FigureComparison(
        "Levenshtein",
        "mean",
        True,
        10,
        {},
        0,
        tuple(system(name, p) for name, p in zip(files, (None, 0.04996, 0.05004, 0.05))),
    )
    table = Comparison(files, 10, None, "bs", 1000, 12345, 0.05, (figure,)).table()
    rows = {line.split()[2]: line.split()[-2:] for line in table.splitlines() if line.startswith("Levenshtein  mean")}
    assert rows["below.jsonl"] == ["0.04996", "better"]  # was "0.0500 better" under "significant at p < 0.05"
    assert rows["above.jsonl"][-1] == "0.05004"
    assert rows["at.jsonl"][-1] == "0.0500"  # p = alpha is not below it
