"""G-Eval's ``score_mode: sampling`` (issue 27): the weighted score estimated from k samples at a temperature, over
real HTTP against LoopbackLLM, on chat (a seed per sample in the body) and on Anthropic's Messages API through the
real ``anthropic`` SDK (no seed on the wire, no log-probabilities): the estimate, its interval (checked against
statsmodels' Wilson interval), each sample cached apart, and the settings refused before any request."""

from __future__ import annotations

import math
from typing import Any

import pytest

from scorers.cli.catalog import describe
from scorers.errors import ConfigError, JudgeError
from scorers.judges import GEvalJudge
from scorers.judges.spec import validate_spec
from scorers.llm import LLMEngine
from scorers.llm.cache import cache_key
from scorers.testing import LoopbackLLM, RecordedRequest, Reply, loopback_env

from .conftest import wilson_reference

PROMPT = "Summary: {{output}}"
SETTINGS: dict[str, Any] = {"criteria": "Is the summary coherent?", "steps": ["Read it.", "Rate its order."]}
#: Shared vectors: the scale and the number each sample (seed 0, 1, ...) writes.
VECTORS = [
    ((1, 5), [4, 3, 4, 5, 4]),
    ((1, 5), [2, 2, 2]),
    ((1, 5), [5, 5, 5, 5, 5, 5]),
    ((0, 1), [1, 0, 0, 1, 1, 1, 0]),  # two values: the interval is Wilson's for the share of 1s
    ((1, 10), [1, 10]),
    ((0, 30), [0, 7, 30, 12]),  # a scale of 31 values: no logprobs limit in sampling
]


def point(monkeypatch: pytest.MonkeyPatch, server: LoopbackLLM, api: str = "chat") -> None:
    """The judges' protocol ``api`` pointed at ``server`` (the cache off)."""
    for name, value in loopback_env(server, api).items():
        monkeypatch.setenv(name, value)


def sampling_judge(samples: int, scale: tuple[int, int] = (1, 5), **settings: Any) -> GEvalJudge:
    return GEvalJudge(
        "Coherence",
        PROMPT,
        **SETTINGS,
        scale={"min": scale[0], "max": scale[1]},
        score_mode="sampling",
        samples=samples,
        temperature=settings.pop("temperature", 0.8),
        engine=LLMEngine(max_reasks=0),
        **settings,
    )


def judge_requests(server: LoopbackLLM, api: str) -> list[RecordedRequest]:
    return server.requests_to(api)


@pytest.mark.parametrize("scale, written", VECTORS)
def test_the_score_is_the_mean_of_the_samples_with_its_wilson_interval(
    api_env: str, llm_server: LoopbackLLM, script_samples, scale: tuple[int, int], written: list[int]
) -> None:
    script_samples([Reply.text(str(w)) for w in written])
    k, (low, high) = len(written), scale
    score = sampling_judge(k, scale)(output="First this. Then that.")
    normalised = [(w - low) / (high - low) for w in written]
    mean = sum(normalised) / k
    assert score.score == pytest.approx(mean, abs=1e-12)
    meta = score.metadata
    assert (meta["score_mode"], meta["samples"], meta["temperature"]) == ("sampling", k, 0.8)
    assert meta["expected_score"] == pytest.approx(sum(written) / k)
    # each sample's number, by seed where the wire carries one; in arrival order otherwise
    assert meta["sampled_scores"] == written if api_env == "chat" else sorted(meta["sampled_scores"]) == sorted(written)
    assert meta["probabilities"] == {str(v): pytest.approx(written.count(v) / k) for v in range(low, high + 1)}
    assert math.isclose(math.fsum(meta["probabilities"].values()), 1.0)
    reference = wilson_reference(mean * k, k)
    interval = meta["score_interval"]
    assert (interval["low"], interval["high"]) == pytest.approx(reference, abs=1e-12)
    assert (interval["level"], interval["n"], interval["method"]) == (0.95, k, "wilson_bounded")
    assert interval["low"] <= score.score <= interval["high"]
    sent = judge_requests(llm_server, api_env)
    assert len(sent) == k and llm_server.request_count == k
    temperatures = {r.body["temperature"] for r in sent}
    assert temperatures == {0.8}
    if api_env == "chat":
        assert sorted(r.body["seed"] for r in sent) == list(range(k)) and not any(r.body.get("logprobs") for r in sent)
    else:
        assert not any("seed" in r.body for r in sent)  # the Messages API has none; the cache key carries it


def test_on_a_two_value_scale_the_interval_is_wilsons_for_the_share(llm_server: LoopbackLLM, monkeypatch) -> None:
    """Values 0 and 1: the mean is the share of 1s, and the interval is the binomial Wilson interval of it."""
    point(monkeypatch, llm_server)
    llm_server.default = lambda request: Reply.text(str([1, 1, 0, 1][request.body["seed"]]))
    meta = sampling_judge(4, (0, 1))(output="x").metadata
    assert (meta["score_interval"]["low"], meta["score_interval"]["high"]) == pytest.approx(
        wilson_reference(3, 4), abs=1e-12
    )


def test_each_sample_is_cached_apart(api_env: str, llm_server: LoopbackLLM, script_samples) -> None:
    """A second run sends nothing and reads back each sample's own reply (one key per sample, also where the body
    carries no seed); more samples send only the new ones."""
    written = [2, 5, 3, 4, 1]
    script_samples([Reply.text(str(w)) for w in written])
    first = sampling_judge(3)(output="x")
    assert llm_server.request_count == 3 and first.metadata["cached_samples"] == 0
    again = sampling_judge(3)(output="x")
    assert llm_server.request_count == 3  # nothing sent
    assert again.metadata["cached"] is True and again.metadata["cached_samples"] == 3
    assert again.metadata["sampled_scores"] == first.metadata["sampled_scores"] and again.score == first.score
    assert sorted(first.metadata["sampled_scores"]) == sorted(written[:3])  # three replies, none read twice
    more = sampling_judge(5)(output="x")
    assert llm_server.request_count == 5 and more.metadata["cached_samples"] == 3
    assert more.metadata["sampled_scores"][:3] == first.metadata["sampled_scores"]
    assert sorted(more.metadata["sampled_scores"]) == sorted(written)
    if api_env == "chat":
        assert [r.body["seed"] for r in judge_requests(llm_server, api_env)][3:] in ([3, 4], [4, 3])


def test_the_cache_keys_of_the_samples_differ_where_the_bodies_do_not(llm_server: LoopbackLLM, monkeypatch) -> None:
    point(monkeypatch, llm_server, "anthropic")
    judge = sampling_judge(4)
    requests = judge._row_requests({"output": "x"})
    bodies = [request.body("claude-test", api="anthropic") for request in requests]
    assert all(body == bodies[0] and "seed" not in body for body in bodies)  # Anthropic's body carries no seed
    keys = {cache_key(body, base_url="x", tag=r.key_tag(body)) for r, body in zip(requests, bodies)}
    assert len(keys) == 4


def test_a_batch_scores_each_row_from_its_own_samples(llm_server: LoopbackLLM, monkeypatch) -> None:
    point(monkeypatch, llm_server)
    llm_server.default = lambda r: Reply.text(str(1 + (r.body["seed"] + len(r.last_user_message)) % 5))
    rows = [{"output": "a"}, {"output": "bb"}, {"output": "ccc"}]
    scores = sampling_judge(3).score_batch(rows)
    assert llm_server.request_count == 9
    for row, score in zip(rows, scores):
        assert len(score.metadata["sampled_scores"]) == 3
        assert score.score == pytest.approx(sum((s - 1) / 4 for s in score.metadata["sampled_scores"]) / 3)


@pytest.mark.parametrize("mode", ["tools", "json", "json_object"])
def test_sampling_reads_structured_replies_too(llm_server: LoopbackLLM, monkeypatch, mode: str) -> None:
    point(monkeypatch, llm_server)
    llm_server.default = lambda r: (
        Reply.tool_call({"score": 2 + r.body["seed"]}, name="record_score")
        if mode == "tools"
        else Reply.json({"score": 2 + r.body["seed"]})
    )
    score = sampling_judge(3, response_mode=mode)(output="x")
    assert score.metadata["sampled_scores"] == [2, 3, 4] and score.score == pytest.approx(0.5)


def test_show_states_k_requests_per_row(llm_server: LoopbackLLM, monkeypatch) -> None:
    point(monkeypatch, llm_server)
    judge = sampling_judge(4)
    assert judge.describe()["requests_per_row"] == "4 (independent samples)"
    assert "requests per row: 4 (independent samples)" in describe(judge)
    assert judge.describe()["samples"] == 4 and judge.describe()["temperature"] == 0.8
    generating = GEvalJudge(
        "Coherence", PROMPT, criteria="Coherent?", score_mode="sampling", samples=3, temperature=0.5
    )
    assert generating.requests_per_row == (
        "3 (independent samples), and 1 more once per judge and model to write the evaluation steps"
    )


def test_the_other_modes_signatures_have_no_samples_and_sampling_has_its_k() -> None:
    """A logprobs or top_token judge's signature is as it was before sampling existed; k is in sampling's."""
    for mode in ("logprobs", "top_token"):
        assert "samples" not in GEvalJudge("G", PROMPT, **SETTINGS, score_mode=mode).signature()
    three, five = (
        GEvalJudge("G", PROMPT, **SETTINGS, score_mode="sampling", samples=k, temperature=0.7) for k in (3, 5)
    )
    assert three.signature()["samples"] == 3 and three.signature() != five.signature()


@pytest.mark.parametrize(
    "settings, key, words",
    [
        ({"samples": 3}, "temperature", "needs temperature > 0"),  # G-Eval's default temperature is 0
        ({"samples": 3, "temperature": 0}, "temperature", "needs temperature > 0"),
        ({"samples": 1, "temperature": 0.7}, "samples", "needs samples >= 2"),
        ({"temperature": 0.7}, "samples", "needs samples >= 2"),
        ({"samples": 3, "temperature": 0.7, "extra_args": {"seed": 1}}, "extra_args", "own"),
    ],
)
def test_sampling_settings_are_refused_before_any_request(
    llm_server: LoopbackLLM, settings: dict[str, Any], key: str, words: str
) -> None:
    engine = LLMEngine(base_url=llm_server.base_url, api_key="placeholder", cache=False)
    with pytest.raises(ConfigError, match=rf"{key}: .*{words}"):
        GEvalJudge("Coherence", PROMPT, **SETTINGS, score_mode="sampling", engine=engine, **settings)
    assert llm_server.request_count == 0


@pytest.mark.parametrize("mode", ["logprobs", "top_token"])
def test_samples_belong_to_sampling(mode: str) -> None:
    with pytest.raises(ConfigError, match="samples: samples are score_mode sampling's"):
        GEvalJudge("Coherence", PROMPT, **SETTINGS, score_mode=mode, samples=3, temperature=0.7)


def test_logprobs_without_logprobs_stay_refused_and_name_sampling(llm_server: LoopbackLLM, monkeypatch) -> None:
    """Never a silent fallback: G-Eval's default score_mode on Anthropic is refused when built, naming the remedy."""
    point(monkeypatch, llm_server, "anthropic")
    with pytest.raises(ConfigError) as refused:
        GEvalJudge("Coherence", PROMPT, **SETTINGS)
    message = str(refused.value)
    assert "cannot run on the anthropic protocol" in message and "log-probabilities" in message
    assert "Use score_mode='sampling' (its estimate from samples=k judgments at a temperature > 0)" in message
    assert llm_server.request_count == 0
    assert sampling_judge(3).score_mode == "sampling"  # the remedy is built on the same protocol


def test_a_template_file_turns_sampling_on() -> None:
    spec, problems = validate_spec(
        {
            "kind": "geval",
            "prompt": PROMPT,
            "criteria": "Coherent?",
            "score_mode": "sampling",
            "samples": 5,
            "temperature": 0.7,
        }
    )
    assert problems == [] and (spec.score_mode, spec.samples, spec.temperature) == ("sampling", 5, 0.7)
    _, problems = validate_spec(
        {"kind": "geval", "prompt": PROMPT, "criteria": "Coherent?", "score_mode": "sampling", "samples": 5}
    )
    assert problems == [
        ("temperature", "samples=5 needs temperature > 0: at temperature 0 the samples are the same judgment repeated")
    ]


def test_an_unusable_sample_is_the_rows_error_and_a_rerun_asks_only_it(llm_server: LoopbackLLM, monkeypatch) -> None:
    """Never a mean of fewer samples than asked: the row fails naming the reply; the samples that were usable are
    cached, so the re-run sends the failed sample alone."""
    point(monkeypatch, llm_server)
    monkeypatch.delenv("SCORERS_CACHE")
    llm_server.default = lambda r: Reply.text("unsure" if r.body["seed"] == 1 else str(2 + r.body["seed"]))
    judge = sampling_judge(3)
    (failed,) = judge.score_batch([{"output": "x"}])
    assert isinstance(failed, JudgeError) and "no whole-number score" in str(failed)
    llm_server.default = lambda r: Reply.text(str(2 + r.body["seed"]))
    llm_server.reset()
    (score,) = judge.score_batch([{"output": "x"}])
    assert [r.body["seed"] for r in llm_server.chat_requests] == [1]
    assert score.metadata["sampled_scores"] == [2, 3, 4] and score.metadata["cached_samples"] == 2
