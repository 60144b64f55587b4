"""Juries over real HTTP: one LoopbackLLM server per juror, scripted to disagree, to fail and to tie."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest

import scorers
import scorers.cli
from scorers.cli.catalog import describe
from scorers.errors import ConfigError
from scorers.judges import LLMClassifier, PairwiseJudge, RatingJudge
from scorers.judges.discovery import build_judge, parse_template
from scorers.judges.jury import Jury, JuryError
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, Reply

PROMPT = "Is this reply polite?\n{{output}}"
CHOICES = {"Yes": 1, "No": 0}


@pytest.fixture
def servers():
    """Three servers, one per juror; each says Yes unless a test scripts it."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(LoopbackLLM(default=Reply.choice("Yes"))) for _ in range(3)]


def _engine(server: LoopbackLLM, **options) -> LLMEngine:
    return LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False, **options)


def _classifiers(servers, **options) -> list[LLMClassifier]:
    return [
        LLMClassifier("Polite", PROMPT, CHOICES, model=f"m{i}", engine=_engine(server, **options))
        for i, server in enumerate(servers)
    ]


def _jury(servers, **rules) -> Jury:
    return Jury("PoliteJury", _classifiers(servers, max_reasks=0, max_retries=0), **rules)


def test_majority_over_disagreeing_servers(servers):
    servers[2].script(Reply.choice("No"), match="rude")
    servers[1].script(Reply.choice("No"), match="rude")
    jury = _jury(servers, aggregate="majority", tie="fail")
    polite, rude = jury.score_batch([{"output": "Thanks!"}, {"output": "You are rude."}])
    assert polite.score == 1.0 and polite.metadata["choice"] == "Yes" and polite.metadata["vote_share"] == 1.0
    assert rude.score == 0.0 and rude.metadata["votes"] == {"Yes": 1, "No": 2}
    assert rude.metadata["vote_share"] == pytest.approx(2 / 3) and rude.metadata["tie"] is False
    assert [e["verdict"] for e in rude.metadata["jurors"].values()] == ["Yes", "No", "No"]
    assert [e["model"] for e in rude.metadata["jurors"].values()] == ["m0", "m1", "m2"]
    assert [s.request_count for s in servers] == [2, 2, 2]  # each juror asked on its own server


@pytest.mark.parametrize(
    "tie,expected",
    [("tie", (0.5, "tie", None)), ("abstain", (None, None, None)), ("fail", (None, None, "JuryError"))],
)
def test_each_tie_rule(servers, tie, expected):
    servers[1].script(Reply.choice("No"))
    jury = _jury(servers[:2], aggregate="majority", tie=tie)
    (outcome,) = jury.score_batch([{"output": "Hm."}])
    if isinstance(outcome, scorers.ScorerError):
        assert (None, None, type(outcome).__name__) == expected and "tied" in str(outcome)
        assert outcome.to_dict()["jurors"]["Polite@m1"]["verdict"] == "No"
        return
    assert (outcome.score, outcome.metadata["verdict"], None) == expected
    assert outcome.metadata["tie"] is True and outcome.metadata["tie_rule"] == tie


def test_mean_and_median_and_weighted_combine_scores(servers):
    servers[0].script(Reply.choice("No"))
    mean = _jury(servers, aggregate="mean").score_batch([{"output": "x"}])[0]
    median = _jury(servers, aggregate="median").score_batch([{"output": "x"}])[0]
    weighted = _jury(servers, aggregate="weighted", weights=[4, 1, 1], tie="tie").score_batch([{"output": "x"}])[0]
    assert mean.score == pytest.approx(2 / 3) and median.score == 1.0 and mean.metadata["verdict"] is None
    assert weighted.score == 0.0 and weighted.metadata["votes"] == {"Yes": 2, "No": 4}
    assert weighted.metadata["weights_used"] == {"Polite@m0": 4, "Polite@m1": 1, "Polite@m2": 1}


def test_weighted_tie_is_by_weight(servers):
    servers[0].script(Reply.choice("No"))
    (score,) = _jury(servers, aggregate="weighted", weights=[2, 1, 1], tie="tie").score_batch([{"output": "x"}])
    assert score.metadata["tie"] is True and score.score == 0.5 and score.metadata["vote_share"] == 0.5


def test_a_failed_juror_is_recorded_and_min_jurors_decides(servers):
    servers[2].script(Reply.error(503, "down"))  # every request to the third juror fails
    servers[1].script(Reply.text("no tool call here"), match="garbled")  # unparseable: re-asks exhausted
    strict = _jury(servers, aggregate="majority", tie="tie")
    lenient = _jury(servers, aggregate="majority", tie="tie", min_jurors=2)
    (failed,) = strict.score_batch([{"output": "fine"}])
    assert isinstance(failed, JuryError) and "2 of 3 jurors answered" in str(failed) and "Polite@m2" in str(failed)
    fine, garbled = lenient.score_batch([{"output": "fine"}, {"output": "garbled"}])
    assert fine.score == 1.0 and fine.metadata["jurors_failed"] == ["Polite@m2"]
    error = fine.metadata["jurors"]["Polite@m2"]["error"]
    assert error["type"] == "RequestRejected" or error["type"].endswith("Error"), error
    assert "503" in error["message"] or "down" in error["message"]
    assert isinstance(garbled, JuryError) and "Polite@m1 (JudgeError)" in str(garbled)


def test_a_failed_juror_never_changes_another_jurors_weight(servers):
    servers[0].script(Reply.choice("No"))
    servers[2].script(Reply.error(503))
    weights = [1.0, 3.0, 2.0]
    jury = Jury(
        "Weighted",
        [
            RatingJudge(
                "Clear",
                "Rate {{output}}",
                scale={"min": 1, "max": 5},
                model=f"m{i}",
                engine=_engine(s, max_reasks=0, max_retries=0),
            )
            for i, s in enumerate(servers)
        ],
        aggregate="weighted",
        weights=weights,
        min_jurors=2,
    )
    servers[0].default = Reply.tool_call({"reasons": "r", "rating": 1}, name="record_rating")
    servers[1].default = Reply.tool_call({"reasons": "r", "rating": 5}, name="record_rating")
    servers[0].reset()
    (score,) = jury.score_batch([{"output": "x"}])
    assert score.metadata["weights_used"] == {"Clear@m0": 1.0, "Clear@m1": 3.0}  # as given, not re-spread
    assert score.score == pytest.approx((1.0 * 0.0 + 3.0 * 1.0) / 4.0)
    assert jury.weights == tuple(weights) and score.metadata["jurors_failed"] == ["Clear@m2"]


def test_pairwise_jurors_each_swap(servers):
    for server in servers:
        server.default = Reply.choice("A")  # position bias: A both times, so each juror's swap gives a tie
    servers[0].script(Reply.choice("B"), match="A: second")  # the first juror prefers "first" in both orders
    prompt = "Which is better?\nA: {{output}}\nB: {{expected}}"
    judges = [PairwiseJudge("Pref", prompt, swap=True, model=f"m{i}", engine=_engine(s)) for i, s in enumerate(servers)]
    jury = Jury("PrefJury", judges, aggregate="majority", tie="tie")
    assert jury.requests_per_row.startswith("6 ")
    (score,) = jury.score_batch([{"output": "first", "expected": "second"}])
    assert [s.request_count for s in servers] == [2, 2, 2]
    assert [e["verdict"] for e in score.metadata["jurors"].values()] == ["A", "tie", "tie"]
    assert score.metadata["votes"] == {"A": 1, "tie": 2} and score.metadata["tie"] is False
    assert score.metadata["winner"] == "tie" and score.score == 0.5
    scale = {"type": "pairwise", "level": "ordinal", "choices": ["A", "B", "tie"], "scores": [1.0, 0.0, 0.5]}
    assert score.metadata["scale"] == scale


def test_a_rubric_jury_agrees_at_the_interval_level():
    from scorers.judges import RubricJudge

    criteria = [{"name": "brief", "description": "Brief."}]
    rubric = RubricJudge("Brief", "Rate {{output}}", criteria=criteria, model="m")
    jury = Jury.of(rubric, [{"model": "a"}, {"model": "b"}], aggregate="median")
    assert jury.verdict_scale.level == "interval" and jury.verdict_scale.domain is None


def test_configuration_errors_come_before_any_request(servers):
    judges = _classifiers(servers)
    with pytest.raises(ConfigError, match="tie"):
        Jury("J", judges, aggregate="majority")
    with pytest.raises(ConfigError, match="weights"):
        Jury("J", judges, aggregate="weighted", weights=[1, 2], tie="tie")
    with pytest.raises(ConfigError, match="min_jurors"):
        Jury("J", judges, aggregate="mean", min_jurors=4)
    with pytest.raises(ConfigError, match="aggregate"):
        Jury("J", judges, aggregate="vote")
    rating = RatingJudge("R", "Rate {{output}}", scale={"min": 1, "max": 5})
    with pytest.raises(ConfigError, match="majority needs choice jurors"):
        Jury("J", [rating, rating], aggregate="majority", tie="tie")
    with pytest.raises(ConfigError, match="one kind"):
        Jury("J", [judges[0], rating], aggregate="mean")
    assert sum(s.request_count for s in servers) == 0


def test_batch_is_concurrent_across_jurors(servers):
    for server in servers:
        server.latency = 0.05
    jury = _jury(servers, aggregate="mean")
    rows = [{"output": f"row {i}"} for i in range(6)]
    results = asyncio_run(jury.ascore_batch(rows, concurrency=18))
    assert all(r.score == 1.0 for r in results)
    assert all(s.max_in_flight > 1 for s in servers)  # rows in flight together on each juror's server


def asyncio_run(coro):
    import asyncio

    return asyncio.run(coro)


def test_jury_of_settings_asks_each_endpoint_and_caches_per_juror(servers, tmp_path):
    servers[2].default = Reply.choice("No")
    cache = {"cache": str(tmp_path / "cache.db")}
    engine = LLMEngine(base_url=servers[0].base_url, api_key="placeholder", **cache)
    judge = LLMClassifier("Polite", PROMPT, CHOICES, engine=engine)
    rows = [{"output": f"reply {i}"} for i in range(4)]
    two = Jury.of(judge, [{"model": "a"}, {"model": "b"}], aggregate="mean")
    assert [s.score for s in two.score_batch(rows)] == [1.0] * 4
    assert servers[0].request_count == 8
    three = Jury.of(
        judge,
        [{"model": "a"}, {"model": "b"}, {"model": "c", "base_url": servers[2].base_url}],
        aggregate="majority",
        tie="fail",
    )
    scored = three.score_batch(rows)
    assert servers[0].request_count == 8 and servers[2].request_count == 4  # only the new juror's requests
    assert [s.metadata["votes"] for s in scored] == [{"Yes": 2, "No": 1}] * 4
    assert [e["cached"] for e in scored[0].metadata["jurors"].values()] == [True, True, False]
    assert three.requests_per_row == "3 (a: 1, b: 1, c: 1)"
    assert describe(three).count("requests per row: 3 ") == 1


def test_signature_names_each_juror(servers):
    jury = _jury(servers, aggregate="mean")
    signature = jury.signature()
    jury = signature["jury"]
    assert jury["aggregate"] == "mean" and list(jury["jurors"]) == ["Polite@m0", "Polite@m1", "Polite@m2"]
    assert jury["jurors"]["Polite@m1"]["model"] == "m1" and "scorers_version" not in jury["jurors"]["Polite@m1"]


YAML = """\
name: PoliteJury
prompt: "Is this reply polite?\\n{{output}}"
choice_scores: {"Yes": 1, "No": 0}
jury:
  jurors:
    - {model: a}
    - {model: b, temperature: 0.5}
    - {model: c, base_url: BASE_URL}
  aggregate: majority
  tie: abstain
"""


def test_yaml_jury_and_check(servers, tmp_path):
    servers[2].default = Reply.choice("No")
    path = tmp_path / "polite_jury.yaml"
    path.write_text(YAML.replace("BASE_URL", servers[2].base_url))
    assert scorers.judges.discovery.check_templates([path]) == []
    (definition,) = scorers.judges.discovery.load_template_file(path)
    jury = build_judge(definition, engine=_engine(servers[0]))
    assert isinstance(jury, Jury) and jury.labels == ("a", "b", "c") and jury.tie == "abstain"
    assert jury(output="Thanks").metadata["votes"] == {"Yes": 2, "No": 1}
    assert not isinstance(build_judge(definition, jury=None), Jury)
    bad = tmp_path / "bad.yaml"
    bad.write_text(YAML.replace("  tie: abstain\n", "").replace("BASE_URL", "http://127.0.0.1:9/v1"))
    problems = scorers.judges.discovery.check_templates([bad])
    assert [p.key for p in problems] == ["jury.tie"], problems


def test_json_schema_has_the_jury_key():
    schema = json.dumps(scorers.judges.spec.json_schema())
    assert "JurySpec" in schema and "min_jurors" in schema


def test_parameter_jury_builds_a_jury_of_a_registered_judge():
    definition = parse_template({"prompt": PROMPT, "choice_scores": CHOICES}, name="Polite")
    jury = build_judge(definition, jury={"jurors": [{"model": "a"}, {"model": "b"}], "aggregate": "median"})
    assert isinstance(jury, Jury) and jury.aggregate == "median" and jury.min_jurors == 2


@pytest.mark.slow
def test_run_a_yaml_jury_end_to_end(servers, tmp_path, fake_api_key):
    servers[2].default = Reply.choice("No")
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "polite_jury.yaml").write_text(YAML.replace("BASE_URL", servers[2].base_url))
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"output": f"reply {i}"}) + "\n" for i in range(3)))
    out = tmp_path / "out.jsonl"
    env = {"OPENAI_BASE_URL": servers[0].base_url, "OPENAI_API_KEY": fake_api_key, "SCORERS_CACHE": "off"}
    command = [sys.executable, "-m", "scorers", "run", str(data), "-s", "PoliteJury", "--templates", str(templates)]
    command += [
        "-o",
        str(out),
        "--metadata",
        "-p",
        "PoliteJury.jury={jurors: [{model: x}, {model: y}], aggregate: mean}",
    ]
    done = subprocess.run(command, env={**_env(), **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["scores"]["PoliteJury"] for r in rows] == [1.0] * 3
    assert list(rows[0]["metadata_scores"]["PoliteJury"]["jurors"]) == ["x", "y"]
    assert servers[0].request_count == 6 and servers[2].request_count == 0
    assert "Krippendorff's alpha - (every rating is the same value" in done.stderr, done.stderr


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SCORERS_"))}


def test_the_summary_counts_every_jurors_usage(servers):
    servers[2].script(Reply.error(503))
    run = scorers.evaluate([{"output": "a"}, {"output": "b"}], [_jury(servers, aggregate="mean", min_jurors=2)])
    assert [r.scores["PoliteJury"] for r in run] == [1.0, 1.0]
    by_model = run.summary.scorers["PoliteJury"]["usage"]["by_model"]
    assert [by_model[m]["requests"] for m in ("m0", "m1")] == [2, 2]
    assert by_model["m2"]["failed_calls"] == 2  # the failed juror's attempts are counted too


def _disagreeing_run(servers, rows: int = 12):
    """Three jurors that disagree on a scripted share of the rows: juror 1 on every third row, juror 2 on every
    fourth, juror 3 fails on row 5."""
    for i in range(rows):
        if i % 3 == 0:
            servers[1].script(Reply.choice("No"), match=f"row {i}\n")
        if i % 4 == 0:
            servers[2].script(Reply.choice("No"), match=f"row {i}\n")
    servers[2].script(Reply.error(503), match="row 5\n")
    jury = _jury(servers, aggregate="majority", tie="tie", min_jurors=2)
    return jury, [{"output": f"row {i}\n"} for i in range(rows)]


@pytest.mark.slow
def test_the_summary_gives_the_jurors_agreement_as_the_references_compute_it(servers):
    import krippendorff
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    jury, rows = _disagreeing_run(servers)
    results = list(scorers.evaluate(rows, [jury]))
    agreement = jury.aggregator()
    for result in results:
        agreement.add(result.results["PoliteJury"])
    summary = agreement.result()["agreement"]
    codes = {"Yes": 0.0, "No": 1.0, None: np.nan}
    ratings = np.array(
        [[codes[e["verdict"]] for e in r.results["PoliteJury"].metadata["jurors"].values()] for r in results]
    )
    assert summary["alpha"]["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=ratings.T, level_of_measurement="nominal"), abs=1e-12
    )
    complete = ratings[~np.isnan(ratings).any(axis=1)].astype(int)
    assert summary["fleiss_kappa"]["value"] == pytest.approx(fleiss_kappa(aggregate_raters(complete)[0]), abs=1e-12)
    assert summary["fleiss_kappa"]["n"] == 11 and summary["units"] == 12
    assert summary["scale"] == {"type": "choices", "level": "nominal", "choices": ["Yes", "No"], "scores": [1.0, 0.0]}
    assert set(summary["per_juror"]) == set(jury.labels) and summary["per_juror"]["Polite@m2"]["answered"] == 11
    assert summary["bootstrap"]["resamples"] == 1000 and "ci" in summary["alpha"]


@pytest.mark.slow
def test_the_agreement_merges_shards_in_any_order(servers):
    jury, rows = _disagreeing_run(servers)
    scores = [r.results["PoliteJury"] for r in scorers.evaluate(rows, [jury])]
    whole = jury.aggregator()
    for score in scores:
        whole.add(score)
    left, right = jury.aggregator(), jury.aggregator()
    for i, score in enumerate(reversed(scores)):
        (left if i % 2 else right).add(score)
    merged = right.merge(left).result()
    assert merged == whole.result() and merged["agreement"]["alpha"]["value"] is not None


def test_a_rating_jury_agrees_at_the_ordinal_level(servers):
    import krippendorff
    import numpy as np

    ratings = [[1, 2, 2], [3, 3, 4], [5, 5, 5], [2, 1, 1], [4, 4, 3], [3, 2, 3]]
    for juror, server in enumerate(servers):
        for row, values in enumerate(ratings):
            reply = Reply.tool_call({"reasons": "r", "rating": values[juror]}, name="record_rating")
            server.script(reply, match=f"row {row}\n")
    jurors = [
        RatingJudge("Clear", "Rate {{output}}", scale={"min": 1, "max": 5}, model=f"m{i}", engine=_engine(s))
        for i, s in enumerate(servers)
    ]
    jury = Jury("ClearJury", jurors, aggregate="median")
    summary = jury.aggregator()
    for score in jury.score_batch([{"output": f"row {i}\n"} for i in range(len(ratings))]):
        summary.add(score)
    figures = summary.result()["agreement"]
    assert figures["scale"] == {"type": "rating", "level": "ordinal", "min": 1, "max": 5}
    expected = krippendorff.alpha(reliability_data=np.array(ratings, float).T, level_of_measurement="ordinal")
    assert figures["alpha"]["value"] == pytest.approx(expected, abs=1e-12)


#: Labelled rows: the first juror agrees with every label, the second says Yes throughout, the third fails on one row.
LABELLED = [{"output": f"reply {i}\n", "polite": "Yes" if i % 3 else "No"} for i in range(12)]


def _labelled_servers(servers) -> None:
    for row in LABELLED:
        servers[0].script(Reply.choice(row["polite"]), match=row["output"])
    servers[2].script(Reply.choice("No"), match="reply 0\n")
    servers[2].script(Reply.error(400, "scripted rejection"), match="reply 7\n")


@pytest.mark.slow
def test_meta_eval_of_a_jury_reports_its_agreement(servers, tmp_path, capsys, monkeypatch, fake_api_key):
    import krippendorff
    import numpy as np

    _labelled_servers(servers)
    data = tmp_path / "labels.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in LABELLED))
    template = tmp_path / "t"
    template.mkdir()
    (template / "polite.yaml").write_text(
        f'name: Polite\nprompt: {json.dumps(PROMPT)}\nchoice_scores: {{"Yes": 1, "No": 0}}\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY", fake_api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", servers[0].base_url)
    monkeypatch.setenv("SCORERS_CACHE", "off")
    jury = {
        "jurors": [{"name": "agrees"}, {"name": "yes", "base_url": servers[1].base_url}]
        + [{"name": "flaky", "base_url": servers[2].base_url}],
        "aggregate": "majority",
        "tie": "tie",
        "min_jurors": 2,
    }
    out = tmp_path / "meta.json"
    args = ["meta-eval", str(data), "-s", "Polite", "--templates", str(template), "--label", "polite"]
    args += ["-p", f"Polite.jury={json.dumps(jury)}", "-o", str(out), "--resamples", "200"]
    assert scorers.cli.main(args) == 0
    report = json.loads(out.read_text())
    section = report["jury"]
    assert report["n"] == 12 and section["jurors"] == ["agrees", "yes", "flaky"] and section["level"] == "nominal"
    labels = np.array([0.0 if r["polite"] == "Yes" else 1.0 for r in LABELLED])
    agrees = section["per_juror"]["agrees"]
    assert agrees["with_labels"]["value"] == 1.0 and agrees["answered"] == 12
    assert section["per_juror"]["flaky"]["answered"] == 11
    yes = np.zeros(12)
    expected = krippendorff.alpha(reliability_data=np.vstack([yes, labels]), level_of_measurement="nominal")
    assert section["per_juror"]["yes"]["with_labels"]["value"] == pytest.approx(expected, abs=1e-12)
    assert "jury:" in capsys.readouterr().err


def test_a_dry_run_plans_each_jurors_requests_and_batch_runs_check_each_juror():
    from scorers.llm.batch.run import check_batchable
    from scorers.spend import plan

    judge = LLMClassifier("Polite", PROMPT, CHOICES, model="m")
    jury = Jury.of(judge, [{"model": "a"}, {"model": "b", "api": "bedrock"}], aggregate="mean")
    spent = plan([{"output": "x"}, {"output": "y"}], [jury], prices={"a": (1.0, 1.0), "b": (1.0, 1.0)}, cache=False)
    assert [(p.scorer, p.model, p.requests) for p in spent.scorers] == [("Polite[a]", "a", 2), ("Polite[b]", "b", 2)]
    with pytest.raises(ConfigError, match="bedrock"):
        check_batchable([jury])


def test_a_jurors_configuration_error_stops_the_run_as_its_judge_would():
    with LoopbackLLM(default=Reply.choice("Yes")) as open_server, LoopbackLLM(api_key="the-right-key") as locked:
        jurors = [
            LLMClassifier("Polite", PROMPT, CHOICES, model=f"m{i}", engine=_engine(server))
            for i, server in enumerate((open_server, locked))
        ]
        with pytest.raises(ConfigError):
            list(scorers.evaluate([{"output": "x"}], [Jury("J", jurors, aggregate="mean")]))


def test_meta_eval_samples_of_a_jury_are_refused(servers):
    from scorers.stats.metaeval import meta_evaluate

    with pytest.raises(ConfigError, match="is a jury"):
        meta_evaluate(LABELLED, _jury(servers, aggregate="mean"), label="polite", samples=2)
    assert sum(s.request_count for s in servers) == 0
