"""meta_evaluate and `python -m scorers meta-eval` against the loopback server, figures checked by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

import scorers
from scorers import Score, Scorer, text_field
from scorers.cli import main
from scorers.errors import ConfigError, DataError
from scorers.judges import LLMClassifier, PairwiseJudge, RatingJudge
from scorers.llm import LLMEngine
from scorers.stats import agreement
from scorers.stats.metaeval import meta_evaluate
from scorers.testing import LoopbackLLM, RecordedRequest, Reply

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "factuality_labels.jsonl"
ROWS = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
FACTUALITY = {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}

#: The scripted judge: it agrees with the label except on these rows (id: its choice); f08's request is rejected.
DISAGREE = {"f03": "C", "f10": "C", "f12": "A", "f17": "B"}
FAILING = "f08"


def scripted_factuality(request: RecordedRequest) -> Reply:
    (row,) = [r for r in ROWS if f"Answer to check:\n{r['output']}\n" in request.last_user_message]
    if row["id"] == FAILING:
        return Reply.error(400, "scripted rejection")
    return Reply.choice(DISAGREE.get(row["id"], row["label"]), reasons="scripted")


# By hand, over the 19 scored rows (f08 failed): 15 agree; labels A B C D E have 2 5 6 4 2 rows.
CONFUSION = [
    [1, 0, 1, 0, 0],  # A: f15 → A, f03 → C
    [1, 4, 0, 0, 0],  # B: f12 → A
    [0, 0, 6, 0, 0],
    [0, 0, 0, 4, 0],
    [0, 1, 1, 0, 0],
]  # E: f17 → B, f10 → C
# po = 15/19; pe = (2·2 + 5·5 + 6·8 + 4·4 + 2·0)/19² = 93/361; κ = (285 - 93)/(361 - 93)
KAPPA = 192 / 268
# |score differences|: f03 |0.4 - 1| + f10 |1 - 1| + f12 |0.6 - 0.4| + f17 |1 - 0.6| = 1.2
MEAN_ABS_DIFF = 1.2 / 19
PER_LABEL = [
    {"label": "A", "precision": 1 / 2, "recall": 1 / 2, "support": 2, "predicted": 2},
    {"label": "B", "precision": 4 / 5, "recall": 4 / 5, "support": 5, "predicted": 5},
    {"label": "C", "precision": 6 / 8, "recall": 1.0, "support": 6, "predicted": 8},
    {"label": "D", "precision": 1.0, "recall": 1.0, "support": 4, "predicted": 4},
    {"label": "E", "precision": None, "recall": 0.0, "support": 2, "predicted": 0},
]
SCORED = [r for r in ROWS if r["id"] != FAILING]
LABEL_SCORES = [FACTUALITY[r["label"]] for r in SCORED]
JUDGE_SCORES = [FACTUALITY[DISAGREE.get(r["id"], r["label"])] for r in SCORED]


def run_cli(*args: str) -> int:
    return main(["meta-eval", *args])


def test_example_file_meta_eval_every_figure(
    llm_env: LoopbackLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_env.default = scripted_factuality
    out = tmp_path / "meta.json"
    assert (
        run_cli(
            str(EXAMPLE), "-s", "Factuality", "--label", "label", "--key", "id", "-o", str(out), "--resamples", "500"
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert (report["format"], report["format_version"], report["rows"], report["n"], report["failed"]) == (
        "scorers-meta-eval",
        1,
        20,
        19,
        1,
    )
    (failure,) = report["failures"]
    assert failure["index"] == 8 and failure["key"] == FAILING
    assert failure["errors"][0]["type"] == "RequestRejected" and "scripted rejection" in failure["errors"][0]["message"]
    assert report["scale"] == {
        "type": "choices",
        "labels": list(FACTUALITY),
        "scores": list(FACTUALITY.values()),
        "kappa_weights": None,
    }
    figures = report["figures"]
    assert figures["accuracy"]["value"] == pytest.approx(15 / 19)
    assert figures["kappa"]["value"] == pytest.approx(KAPPA)
    assert figures["mean_abs_diff"]["value"] == pytest.approx(MEAN_ABS_DIFF)
    assert figures["spearman"]["value"] == pytest.approx(stats.spearmanr(LABEL_SCORES, JUDGE_SCORES).statistic)
    assert figures["kendall"]["value"] == pytest.approx(stats.kendalltau(LABEL_SCORES, JUDGE_SCORES).statistic)
    for name, figure in figures.items():
        assert figure["n"] == 19 and "reason" not in figure, name
        assert figure["ci"][0] <= figure["value"] <= figure["ci"][1], name
    expected_ci = agreement.with_ci(
        agreement.mean_abs_diff, LABEL_SCORES, JUDGE_SCORES, resamples=500, seed=0, vectorized=True
    )
    assert figures["mean_abs_diff"]["ci"] == [expected_ci.low, expected_ci.high]
    assert report["bootstrap"] == {
        "method": "percentile",
        "resamples": 500,
        "confidence": 0.95,
        "seed": 0,
        "paired_over": "rows",
    }
    assert report["confusion"] == {"labels": list(FACTUALITY), "rows": "label", "columns": "judge", "matrix": CONFUSION}
    assert report["per_label"] == [pytest.approx(entry) for entry in PER_LABEL]
    assert report["stability"] is None and report["swap"] is None
    signature = report["judge"]["signature"]
    assert report["judge"]["name"] == "Factuality" and signature["model"] == "gpt-4o-mini"
    assert signature["template"]["name"] == "Factuality" and len(signature["template"]["hash"]) == 16
    assert [v["key"] for v in report["verdicts"]] == [r["id"] for r in SCORED]
    assert [v["verdict"] for v in report["verdicts"]] == [DISAGREE.get(r["id"], r["label"]) for r in SCORED]
    table = capsys.readouterr().err
    assert "19 scored, 1 failed" in table and "row 8 (f08): RequestRejected" in table
    assert re.search(r"^kappa\s+0\.7164\s+\[", table, re.M) and re.search(r"^E\s+0\s+1\s+1\s+0\s+0$", table, re.M)


def test_failing_on_every_row_exits_3(llm_env: LoopbackLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    llm_env.default = Reply.error(400, "no")
    assert run_cli(str(EXAMPLE), "-s", "Factuality", "--label", "label", "-o", str(tmp_path / "m.json")) == 3
    report = json.loads((tmp_path / "m.json").read_text())
    assert (report["n"], report["failed"], report["confusion"]) == (0, 20, None)
    assert all(f["value"] is None and f["reason"] == "no scored rows" for f in report["figures"].values())
    assert "failed on every row" in capsys.readouterr().err


@pytest.mark.parametrize(
    "rows, args, message",
    [
        (
            [
                {"input": "q", "output": "a", "expected": "a", "label": "C"},
                {"input": "q", "output": "b", "expected": "b"},
            ],
            [],
            "row 1: no label in field 'label'",
        ),
        ([{"input": "q", "output": "a", "expected": "a", "label": "Z"}], [], "label_scores"),
        (
            [
                {"input": "q", "output": "a", "expected": "a", "label": "C"},
                {"input": "q", "output": "b", "expected": "b", "label": "c"},
            ],
            [],
            "row 1: label 'c' (field 'label') is not one of Factuality's choices (A, B, C, D, E), as the other",
        ),
        ([{"input": "q", "output": "a", "expected": "a", "label": "Y"}], ["--label-scores", "Y=2"], "in [0, 1]"),
        ([{"input": "q", "output": "a", "expected": "a", "label": "Y"}], ["--label-scores", "[1, 0]"], "an object"),
        ([{"input": "q", "output": "a", "expected": "a", "label": "Y"}], ["--label-scores", "Y=yes"], "not a number"),
        ([{"input": "q", "output": "a", "expected": "a", "label": "C"}], ["--samples", "3"], "need temperature > 0"),
        ([{"input": "q", "output": "a", "expected": "a", "label": "C"}], ["--swap"], "not a pairwise judge"),
    ],
)
def test_bad_data_or_configuration_exits_2_before_any_request(
    llm_env: LoopbackLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rows: list[Any],
    args: list[str],
    message: str,
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run_cli(str(data), "-s", "Factuality", "--label", "label", *args) == 2
    assert message in capsys.readouterr().err and llm_env.request_count == 0


def test_labels_mapped_to_scores_off_the_judges_scale(llm_env: LoopbackLLM) -> None:
    # Y/N people, an A–E judge: scores compare (|0.4 - 1| = 0.6 on the first row), categories do not
    rows = [
        {"input": "q", "expected": "e", "output": o, "label": label}
        for o, label in (("alpha", "Y"), ("bravo", "N"), ("charlie", "Y"))
    ]
    llm_env.script(Reply.choice("A"), match="alpha")
    llm_env.script(Reply.choice("D"), match="bravo")
    llm_env.default = Reply.choice("C")
    report = meta_evaluate(rows, "Factuality", label="label", label_scores={"Y": 1, "N": 0}, resamples=200)
    assert report.scale.to_dict() == {
        "type": "scores",
        "labels": ["N", "Y"],
        "scores": [0.0, 1.0],
        "kappa_weights": "quadratic",
    }
    assert report.figures["mean_abs_diff"].value == pytest.approx(0.6 / 3)
    for name in ("accuracy", "kappa"):
        assert report.figures[name].value is None
        assert report.figures[name].reason.startswith("the judge's scores are not on the label scale (0.4 in 1 row")
    assert report.confusion is None and report.per_label is None
    assert [v["verdict"] for v in report.verdicts] == [None, "N", "Y"]


@pytest.mark.parametrize("label_scores", ["Y=1,N=0", '{"Y": 1, "N": 0}'])
def test_label_scores_as_pairs_or_json(llm_env: LoopbackLLM, tmp_path: Path, label_scores: str) -> None:
    data, out = tmp_path / "rows.jsonl", tmp_path / "meta.json"
    data.write_text(json.dumps({"input": "q", "expected": "e", "output": "o", "label": "Y"}) + "\n")
    llm_env.default = Reply.choice("C")
    assert (
        run_cli(str(data), "-s", "Factuality", "--label", "label", "--label-scores", label_scores, "-o", str(out)) == 0
    )
    report = json.loads(out.read_text())
    assert report["scale"]["labels"] == ["N", "Y"] and report["figures"]["accuracy"]["value"] == 1.0


def rating(request: RecordedRequest) -> Reply:
    grades = {"alpha": 1, "beta": 4, "gamma": 5, "delta": 2}
    (grade,) = [g for word, g in grades.items() if word in request.last_user_message]
    return Reply.tool_call({"reasons": "scripted", "rating": grade}, name="record_rating")


def test_numeric_labels_on_a_rating_scale_quadratic_kappa() -> None:
    rows = [{"output": w, "human": h} for w, h in (("alpha", 1), ("beta", "3"), ("gamma", 5), ("delta", 4))]
    with LoopbackLLM(default=rating) as server:
        judge = RatingJudge(
            "Clarity",
            "How clear?\n{{output}}",
            scale={"min": 1, "max": 5},
            engine=LLMEngine(base_url=server.base_url, api_key="k", cache=False),
        )
        report = meta_evaluate(rows, judge, label="human", resamples=200)
    assert report.scale.labels == ("1", "2", "3", "4", "5") and report.scale.weighted
    figures = {name: figure.value for name, figure in report.figures.items()}
    # codes: labels (0, 2, 4, 3), judge (0, 3, 4, 1); weights (i - j)²/16: observed (1 + 4)/16/4 = 20/256,
    # expected Σ over the marginals (each 1/4) = 76/256; κ = 1 - 20/76
    assert figures["kappa"] == pytest.approx(1 - 20 / 76)
    assert figures["accuracy"] == 0.5
    assert figures["mean_abs_diff"] == pytest.approx((0 + 0.25 + 0 + 0.5) / 4)
    assert figures["spearman"] == pytest.approx(1 - 6 * 2 / (4 * 15))  # rank differences 0, 1, 0, 1
    assert figures["kendall"] == pytest.approx((5 - 1) / 6)  # 5 concordant pairs, 1 discordant


#: Per row and sample seed, the scripted judge's choice.
SAMPLED = {"kiwi": "YYY", "plum": "NYN", "fig": "NNY", "lime": "YYY"}


def test_samples_report_stability_with_distinct_cached_seeds(llm_env: LoopbackLLM) -> None:
    def reply(request: RecordedRequest) -> Reply:
        (word,) = [w for w in SAMPLED if w in request.last_user_message]
        return Reply.choice(SAMPLED[word][request.body["seed"]])

    llm_env.default = reply
    rows = [{"output": w, "label": label} for w, label in zip(SAMPLED, "YNYN")]
    judge = LLMClassifier("Polite", "Is this polite?\n{{output}}", {"Y": 1, "N": 0}, temperature=0.7)
    report = meta_evaluate(rows, judge, label="label", samples=3, resamples=200)
    assert sorted(r.body["seed"] for r in llm_env.chat_requests) == [0] * 4 + [1] * 4 + [2] * 4
    assert {r.body["temperature"] for r in llm_env.chat_requests} == {0.7}
    # modal verdicts Y N N Y against Y N Y N; mean scores 1, 1/3, 1/3, 1
    assert [v["verdict"] for v in report.verdicts] == ["Y", "N", "N", "Y"]
    assert [v["sample_verdicts"] for v in report.verdicts] == [list(s) for s in SAMPLED.values()]
    assert report.figures["accuracy"].value == 0.5
    assert report.figures["kappa"].value == pytest.approx(0.0)  # po = 1/2 = pe
    assert report.figures["mean_abs_diff"].value == pytest.approx((0 + 1 / 3 + 2 / 3 + 1) / 4)
    assert report.stability == pytest.approx(
        {"samples": 3, "n": 4, "unchanged": 0.5, "pairwise_agreement": (1 + 1 / 3 + 1 / 3 + 1) / 4}
    )
    assert report.signature["temperature"] == 0.7 and "seed" not in report.signature["extra_args"]
    sent = llm_env.request_count
    again = meta_evaluate(rows, judge, label="label", samples=3, resamples=200)
    assert llm_env.request_count == sent and again.to_dict() == report.to_dict()  # every sample came from the cache


def test_a_row_that_one_sample_failed_on_is_a_failure_of_that_row(llm_env: LoopbackLLM) -> None:
    """With samples, a row where one sample's request is refused is recorded as that row's failure (the rows a
    jury left unscored are read only for a jury: a judge of several samples is none)."""

    def reply(request: RecordedRequest) -> Reply:
        if "plum" in request.last_user_message and request.body["seed"] == 1:
            return Reply.error(400)
        return Reply.choice("Y")

    llm_env.default = reply
    rows = [{"output": w, "label": "Y"} for w in SAMPLED]
    judge = LLMClassifier("Polite", "Is this polite?\n{{output}}", {"Y": 1, "N": 0}, temperature=0.7)
    report = meta_evaluate(rows, judge, label="label", samples=2, resamples=200)
    assert [f["index"] for f in report.failures] == [1] and [e["sample"] for e in report.failures[0]["errors"]] == [2]
    assert report.n == 3 and report.jury is None


def test_samples_refused_at_temperature_zero() -> None:
    judge = LLMClassifier("Polite", "Is this polite?\n{{output}}", {"Y": 1, "N": 0})
    with pytest.raises(ConfigError, match="3 samples need temperature > 0"):
        meta_evaluate([{"output": "hi", "label": "Y"}], judge, label="label", samples=3)


#: Which answer the scripted pairwise judge prefers, by the answer shown first (A).
PREFERS = {
    "Paris.": "A",
    "Lyon.": "B",
    "Rome.": "A",
    "Berlin.": "A",
    "Oslo.": "B",
    "Bern.": "A",
    "Kyiv.": "B",
    "Riga.": "B",
}


def test_swap_reports_position_bias_and_consistency() -> None:
    def reply(request: RecordedRequest) -> Reply:
        return Reply.choice(PREFERS[re.search(r"A: (\S+)", request.last_user_message).group(1)])

    rows = [
        {"output": o, "expected": e, "better": b}
        for o, e, b in (
            ("Paris.", "Lyon.", "A"),
            ("Rome.", "Berlin.", "B"),
            ("Oslo.", "Bern.", "B"),
            ("Kyiv.", "Riga.", "tie"),
        )
    ]
    with LoopbackLLM(default=reply) as server:
        judge = PairwiseJudge(
            "Preference",
            "Which is better?\nA: {{output}}\nB: {{expected}}",
            swap=True,
            engine=LLMEngine(base_url=server.base_url, api_key="k", cache=False),
        )
        report = meta_evaluate(rows, judge, label="better", resamples=200)
    # picks per row: [A, B] output wins; [A, A] first position twice; [B, A] other wins; [B, B] second twice
    assert [v["verdict"] for v in report.verdicts] == ["A", "tie", "B", "tie"]
    assert report.swap == {"n": 4, "consistency": 0.5, "position_bias": 0.5, "first": 1, "second": 1}
    assert report.figures["accuracy"].value == 0.75
    assert report.figures["mean_abs_diff"].value == pytest.approx(0.5 / 4)


class Fragile(Scorer):
    """1 when output equals expected; a bug on the output "boom"."""

    name = "Fragile"
    fields = (text_field("output"), text_field("expected"))

    def _score(self, *, output: str, expected: str) -> Score:
        if output == "boom":
            raise RuntimeError("a bug")
        return self.make_score(float(output == expected))


def test_an_unexpected_error_is_listed_and_is_a_problem() -> None:
    rows = [
        {"output": "a", "expected": "a", "label": 1},
        {"output": "boom", "expected": "b", "label": 0},
        {"output": "c", "expected": "d", "label": 0.0},
    ]
    report = meta_evaluate(rows, Fragile(), label="label", resamples=100)
    assert report.to_dict()["failures"] == [
        {"index": 1, "errors": [{"sample": 1, "type": "RuntimeError", "message": "a bug", "unexpected": True}]}
    ]
    assert report.n == 2 and report.figures["accuracy"].value == 1.0
    assert report.problems == [
        "Fragile: 1 row(s) failed with an unexpected error (a bug or a broken environment, not bad input): rows 1"
    ]


def test_exported_from_scorers() -> None:
    assert scorers.meta_evaluate is meta_evaluate and "meta_evaluate" in scorers.__all__
    with pytest.raises(DataError, match="at least one labelled row"):
        meta_evaluate([], "Factuality", label="label")
