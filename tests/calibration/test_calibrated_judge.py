"""A judge calibrated on labels over real HTTP (the loopback server): fitted on train rows, measured on held-out
rows, applied by the ``calibration`` setting, refused for another judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import scorers
from scorers.calibration.scores import binary_outcomes, calibrate_scores
from scorers.errors import ConfigError
from scorers.judges import RatingJudge
from scorers.judges.discovery import build_judge, parse_template
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, Reply

#: Per rating the judge gives (1..5, scores 0, .25, .5, .75, 1): how many of its 20 rows people call good. The
#: judge is sure where people are not: its 5s are good less than half the time.
GOOD_OF_20 = {1: 1, 2: 2, 3: 4, 4: 6, 5: 9}
PROMPT = "Is this answer good? {{output}}"


def _rows() -> list[dict[str, Any]]:
    return [
        {"output": f"group {rating} item {j}.", "good": "Y" if j < good else "N"}
        for rating, good in GOOD_OF_20.items()
        for j in range(20)
    ]


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM() as server:
        for rating in GOOD_OF_20:
            server.script(
                Reply.tool_call({"reasons": "-", "rating": rating}, name="record_rating"), match=f"group {rating} "
            )
        yield server


def _judge(server: LoopbackLLM, prompt: str = PROMPT, **settings: Any) -> RatingJudge:
    engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
    return RatingJudge("Good", prompt, scale={"min": 1, "max": 5}, engine=engine, **settings)


def _scores(judge: RatingJudge, rows: list[dict[str, Any]]) -> list[scorers.Score]:
    return [result.results["Good"] for result in scorers.evaluate(rows, [judge])]


@pytest.fixture(scope="module")
def fitted(server: LoopbackLLM, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rows = _rows()
    judge = _judge(server)
    raw = np.array([score.score for score in _scores(judge, rows)])
    outcomes, rule = binary_outcomes([r["good"] for r in rows], [0.0] * len(rows), positive="Y")
    order = np.random.default_rng(0).permutation(len(rows))
    train, test = order[:60], order[60:]
    result = calibrate_scores(
        (raw[train], outcomes[train]), (raw[test], outcomes[test]), bins=5, outcome=rule, resamples=300
    )
    saved = result.to_dict(judge={"name": judge.name, "signature": judge.signature()})
    path = tmp_path_factory.mktemp("calibration") / "good.calibration.json"
    path.write_text(json.dumps(saved))
    return {"rows": rows, "raw": raw, "result": result, "path": path, "signature": judge.signature()}


def test_the_held_out_calibration_error_drops_after_the_isotonic_map(fitted: dict[str, Any]) -> None:
    figures = fitted["result"].figures
    before, after = figures["ece_before"], figures["ece_after"]
    assert before.n == after.n == 40
    assert before.value > 0.25 and after.value < 0.15 and after.value < before.low
    assert figures["brier_after"].value < figures["brier_before"].value


def test_a_map_applied_by_the_setting_maps_scores_and_keeps_the_raw_one(
    server: LoopbackLLM, fitted: dict[str, Any]
) -> None:
    judge = _judge(server, calibration=str(fitted["path"]))
    scores = _scores(judge, fitted["rows"])
    mapped = fitted["result"].map.apply(fitted["raw"])
    assert [s.score for s in scores] == pytest.approx(list(mapped), abs=1e-12)
    assert [s.metadata["raw_score"] for s in scores] == list(fitted["raw"])
    calibration = scores[0].metadata["calibration"]
    assert calibration["method"] == "isotonic" and calibration["file"] == "good.calibration.json"
    assert judge.signature()["calibration"] == {k: calibration[k] for k in ("method", "input", "hash")}
    assert {k: v for k, v in judge.signature().items() if k != "calibration"} == fitted["signature"]
    assert scores[0].metadata["signature"] == judge.signature()
    # the requests (and so the cache keys) are the raw judge's: the map applies to the reply's score
    raw = _judge(server)
    assert judge.build_request({"output": "x"}).body("m") == raw.build_request({"output": "x"}).body("m")


def test_a_template_file_names_its_map_from_its_own_directory(server: LoopbackLLM, fitted: dict[str, Any]) -> None:
    template = fitted["path"].parent / "good.yaml"
    data = {"kind": "rating", "name": "Good", "prompt": PROMPT, "scale": {"min": 1, "max": 5}}
    definition = parse_template({**data, "calibration": fitted["path"].name}, file=str(template))
    judge = build_judge(definition, engine=LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False))
    assert judge.calibration is not None and judge.calibration.map == fitted["result"].map
    uncalibrated = build_judge(parse_template(data, file=str(template)))
    assert "calibration" not in uncalibrated.signature() and uncalibrated.calibration is None


def test_a_jury_takes_no_map(server: LoopbackLLM, fitted: dict[str, Any]) -> None:
    """The map was fitted on one judge's scores: a template with both calibration: and jury: stops the run before
    any request, and dropping the jury (``-p NAME.jury=null``) gives the calibrated judge back."""
    data = {"kind": "rating", "name": "Good", "prompt": PROMPT, "scale": {"min": 1, "max": 5}}
    jury = {"jurors": [{"model": "a"}, {"model": "b"}], "aggregate": "mean"}
    definition = parse_template(
        {**data, "calibration": fitted["path"].name, "jury": jury}, file=str(fitted["path"].parent / "good.yaml")
    )
    before = server.request_count
    with pytest.raises(ConfigError, match=r"Good: a jury takes no calibration map") as caught:
        build_judge(definition)
    assert caught.value.scorer == "Good" and server.request_count == before
    assert build_judge(definition, jury=None).calibration is not None


def test_a_map_fitted_for_another_judge_is_refused(server: LoopbackLLM, fitted: dict[str, Any]) -> None:
    with pytest.raises(
        ConfigError, match=r"Good: calibration good.calibration.json was fitted for another judge .*template"
    ):
        _judge(server, prompt="Is this answer helpful? {{output}}", calibration=str(fitted["path"]))
    with pytest.raises(
        ConfigError,
        match=r"calibration map was fitted for another judge \(temperature: fitted for 0.0, this judge 0.5\)",
    ):
        _judge(server, calibration=json.loads(Path(fitted["path"]).read_text()), temperature=0.5)


#: Per row group: how many of a classifier's 4 samples say Y (its choice probability of Y is that over 4), and
#: how many of the group's 10 rows people call good.
SAMPLED = {0: 1, 1: 2, 2: 4, 3: 5, 4: 6}


def test_a_classifier_is_calibrated_on_its_choice_probabilities(tmp_path: Path) -> None:
    from scorers.calibration.scores import predicted_values
    from scorers.judges import LLMClassifier
    from scorers.testing import RecordedRequest

    def reply(request: RecordedRequest) -> Reply:
        says_yes = int(request.last_user_message.split("yes ")[1].split(" ")[0])
        return Reply.choice("Y" if request.body["seed"] < says_yes else "N", reasons="-")

    rows = [
        {"output": f"yes {k} item {j}", "good": "Y" if j < good else "N"}
        for k, good in SAMPLED.items()
        for j in range(10)
    ]
    with LoopbackLLM(default=reply) as server:
        engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
        settings: dict[str, Any] = {"samples": 4, "temperature": 0.7, "engine": engine}
        judge = LLMClassifier("Good", PROMPT, {"Y": 1, "N": 0.5}, **settings)
        judged = [result.results["Good"] for result in scorers.evaluate(rows, [judge])]
        forecasts, read = predicted_values([s.score for s in judged], [s.metadata for s in judged], "Y")
        assert read == "choice_probabilities.Y"
        assert sorted(set(forecasts)) == [0.0, 0.25, 0.5, 0.75, 1.0]
        outcomes, rule = binary_outcomes([r["good"] for r in rows], [0.0] * len(rows), positive="Y")
        fitted = calibrate_scores((forecasts, outcomes), (forecasts, outcomes), bins=5, input=read, resamples=100)
        saved = fitted.to_dict(judge={"name": "Good", "signature": judge.signature()})
        calibrated = LLMClassifier("Good", PROMPT, {"Y": 1, "N": 0.5}, calibration=saved, **settings)
        score = calibrated(output="yes 3 item 0")
    # the map reads the probability of Y (0.75), not the score (0.5 + 0.5 · 0.75)
    assert score.metadata["raw_score"] == 0.875 and score.metadata["choice"] == "Y"
    assert score.score == pytest.approx(float(fitted.map.apply([0.75])[0])) == pytest.approx(0.5)
    assert score.metadata["calibration"]["input"] == "choice_probabilities.Y"


def test_calibrate_judge_leaves_failed_rows_out_and_counts_them(server: LoopbackLLM) -> None:
    from scorers.calibration.fitting import calibrate_judge, threshold_for_judge

    rows = [*_rows(), {"output": "unanswerable", "good": "Y"}]
    server.script(Reply.text("no verdict here"), match="unanswerable")
    engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False, max_reasks=0)
    judge = RatingJudge("Good", PROMPT, scale={"min": 1, "max": 5}, engine=engine)
    options: dict[str, Any] = {"label": "good", "label_scores": {"Y": 1, "N": 0}, "positive": "Y", "resamples": 100}
    result = calibrate_judge(rows, judge, scores="platt", **options)
    data = result.to_dict()
    assert data["failed_rows"] == 1 and data["judge"]["signature"] == judge.signature()
    assert result.train_n + result.figures["ece_before"].n < len(rows) - 1  # the dev rows are in neither
    choice = threshold_for_judge(rows, judge, threshold="kappa", **options)
    assert choice.to_dict()["failed_rows"] == 1 and choice.on_scale is not None
    with pytest.raises(ConfigError, match="choose the map"):
        calibrate_judge(rows, judge, **options)
