"""Few-shot selection over real HTTP against scripted loopback judges: the plan's request count, a selection that
helps on dev and on the held-out test split, one that helps on dev only (the held-out figure says so), disjoint
splits, the cap, and the per-split scores other calibrations build on."""

from __future__ import annotations

from typing import Any

import pytest

from scorers.calibration import check_disjoint, score_splits, select_examples, split_rows, with_examples
from scorers.calibration.fewshot import plan_requests, prepare
from scorers.errors import ConfigError, DataError
from scorers.judges import LLMClassifier, PairwiseJudge, RatingJudge
from scorers.llm import LLMEngine
from scorers.options import CalibrateOptions
from scorers.testing import LoopbackLLM, Reply

from .fewshot_rows import PROMPT, ROWS, case_of, scripted

pytestmark = pytest.mark.slow  # hundreds of loopback requests and bootstraps

OPTIONS: dict[str, Any] = dict(label="polite", key="id", split="0.3,0.35,0.35", examples=1, pool=6, resamples=500)


def judge_at(server: LoopbackLLM, **settings: Any) -> LLMClassifier:
    engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
    return LLMClassifier("Polite", PROMPT, {"Y": 1, "N": 0}, engine=engine, **settings)


def test_a_selection_that_helps_on_dev_and_on_test() -> None:
    with LoopbackLLM(default=scripted(lambda row: True)) as server:
        result = select_examples(ROWS, judge_at(server), **OPTIONS)
        sent = server.request_count
    sizes = {name: len(result.splits.indices(name)) for name in ("train", "dev", "test")}
    assert sizes == {"train": 24, "dev": 28, "test": 28}
    assert sent == result.planned == plan_requests(1, 28, 28, 6, 1) == 28 * 7 + 2 * 28
    (chosen,) = result.chosen
    assert chosen in result.pool and chosen in result.splits.train and "(HINT)" in ROWS[chosen]["output"]
    assert result.examples == [{"variables": {"output": ROWS[chosen]["output"]}, "verdict": ROWS[chosen]["polite"]}]
    report = result.to_dict()
    dev, test, head = report["figures"]["dev"], report["figures"]["test"], report["headline"]
    wrong = sum(i % 4 == 0 for i in result.splits.test)  # the rows the judge without examples gets wrong
    assert test["selected"]["accuracy"]["value"] == 1.0 and test["baseline"]["accuracy"]["value"] == 1 - wrong / 28
    assert dev["selected"]["kappa"]["value"] == 1.0 > dev["baseline"]["kappa"]["value"]
    assert (head["split"], head["measure"]) == ("test", "kappa")
    assert head["selected"]["value"] == 1.0 > head["baseline"]["value"]
    assert head["difference"]["value"] == pytest.approx(head["selected"]["value"] - head["baseline"]["value"])
    assert head["difference"]["ci"][0] > 0  # the held-out gain's interval excludes no gain
    assert all(
        f["split"] == split for split in ("dev", "test") for j in report["figures"][split].values() for f in j.values()
    )
    assert "held out (test): kappa 1.0000 with the examples" in result.table()


def test_a_selection_that_helps_on_dev_only_says_so_on_test() -> None:
    dev_rows = set(split_rows(ROWS, "0.3,0.35,0.35", seed=0).dev)
    with LoopbackLLM(default=scripted(lambda row: row in dev_rows)) as server:  # the example fixes dev rows only
        result = select_examples(ROWS, judge_at(server), **OPTIONS)
    head = result.headline()
    step = result.steps[0]
    assert step["split"] == "dev" and step["dev"] == 1.0
    assert result.reports["dev"]["baseline"].figures["kappa"].value < 1.0
    assert head["selected"]["value"] == head["baseline"]["value"] < 1.0  # held out: no gain
    assert head["difference"]["value"] == 0.0 and head["difference"]["ci"] == [0.0, 0.0]
    assert "difference 0.0000" in result.table()


def test_the_splits_are_disjoint_and_groups_stay_whole() -> None:
    with LoopbackLLM(default=scripted(lambda row: True)) as server:
        result = select_examples(ROWS, judge_at(server), **OPTIONS, group="doc")
    check_disjoint(result.splits)
    docs = [{ROWS[i]["doc"] for i in result.splits.indices(name)} for name in ("train", "dev", "test")]
    assert not (docs[0] & docs[1] or docs[0] & docs[2] or docs[1] & docs[2])
    assert set(result.pool) <= set(result.splits.train)
    assert result.to_dict()["splits"]["group"] == "doc"


def test_the_cap_refuses_the_plan_before_any_request() -> None:
    with LoopbackLLM(default=scripted(lambda row: True)) as server:
        with pytest.raises(ConfigError, match=r"up to 252 judge requests .* over max_requests=251"):
            select_examples(ROWS, judge_at(server), **OPTIONS, max_requests=251)
        assert server.request_count == 0
        with pytest.raises(ConfigError, match="more than the pool of 6"):
            select_examples(ROWS, judge_at(server), **{**OPTIONS, "examples": 7})
        assert server.request_count == 0


def test_a_label_that_is_no_verdict_of_the_judge_stops_before_any_request() -> None:
    rows = [{**row, "polite": "maybe" if n == 3 else row["polite"]} for n, row in enumerate(ROWS)]
    with LoopbackLLM(default=scripted(lambda row: True)) as server:
        with pytest.raises(DataError, match="row 3"):
            select_examples(rows, judge_at(server), **OPTIONS)
        assert server.request_count == 0


def test_a_rating_judge_is_selected_by_spearman_with_integer_verdicts() -> None:
    rows = [{"id": i, "output": f"case {i}: grade {1 + i % 5}", "grade": 1 + i % 5} for i in range(40)]

    def reply(request: Any) -> Reply:
        number, shown = case_of(request)
        right = 1 + number % 5
        return Reply.tool_call({"rating": right if "grade 5" in shown or number % 2 else 3}, name="record_rating")

    with LoopbackLLM(default=reply) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
        judge = RatingJudge("Grade", "Grade this: {{output}}", scale={"min": 1, "max": 5}, engine=engine)
        result = select_examples(rows, judge, label="grade", examples=1, pool=8, resamples=200)
    assert result.measure == "spearman"
    assert all(isinstance(e["verdict"], int) for e in result.examples)
    assert result.headline()["selected"]["value"] == 1.0


def test_score_splits_judges_every_row_once_and_splits_the_scores() -> None:
    with LoopbackLLM(default=scripted(lambda row: True)) as server:
        judge = judge_at(server)
        options = CalibrateOptions(label="polite", split="0.5,0.25,0.25", seed=3)
        labelled, splits = prepare(ROWS, judge, options)
        scores = score_splits(judge, labelled, splits, options)
        assert server.request_count == len(ROWS)
    assert {name: len(s.indices) for name, s in scores.items()} == {"train": 40, "dev": 20, "test": 20}
    for name, part in scores.items():
        assert set(part.indices) == set(splits.indices(name))
        for n, index in enumerate(part.indices):
            truth = ROWS[index]["polite"] == "Y"
            assert part.label_scores[n] == float(truth) and part.label_categories[n] == (0 if truth else 1)
            assert part.metadata[n]["choice"] == ("Y" if part.judge_scores[n] == 1.0 else "N")
            assert part.judge_categories[n] == (0 if part.judge_scores[n] == 1.0 else 1)


def test_with_examples_keeps_the_settings_and_changes_the_identity() -> None:
    with LoopbackLLM(default=Reply.choice("Y")) as server:
        judge = judge_at(server, temperature=0.5)
        shown = with_examples(judge, [{"variables": {"output": "go away"}, "verdict": "N"}])
        assert shown.temperature == 0.5 and shown.engine is judge.engine
        assert shown.signature() != judge.signature()
        assert with_examples(shown, []).signature() == judge.signature()


def test_a_pairwise_judge_asked_in_both_orders_takes_a_and_b_examples() -> None:
    rows = [
        {
            "id": i,
            "output": f"case {i}: answer one" + (" GOOD" if i % 2 else "") + (" (HINT)" if i % 3 else ""),
            "expected": f"case {i}: answer two" + ("" if i % 2 else " GOOD"),
            "better": "A" if i % 2 else "B",
        }
        for i in range(40)
    ]

    def reply(request: Any) -> Reply:
        number, shown = case_of(request)
        first = request.last_user_message.split("First: ", 1)[1].split("\n", 1)[0]
        right = number % 4 != 0 or "(HINT)" in shown
        good_first = "GOOD" in first
        return Reply.choice("A" if good_first == right else "B")

    with LoopbackLLM(default=reply) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
        judge = PairwiseJudge(
            "Better", "Which is better?\nFirst: {{output}}\nSecond: {{expected}}", swap=True, engine=engine
        )
        result = select_examples(rows, judge, label="better", examples=1, pool=5, resamples=200)
        assert server.request_count == result.planned == plan_requests(2, 10, 10, 5, 1)
    (example,) = result.examples
    assert example["verdict"] == result.labelled.labels[result.chosen[0]] and set(example["variables"]) == {
        "output",
        "expected",
    }
    assert result.measure == "kappa" and result.headline()["selected"]["value"] == 1.0
