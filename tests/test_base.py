"""The Scorer base: keyword interface, validation, partial, sync/async bridges, signature."""
import asyncio

import pytest

import scorers
from scorers import Score, Scorer
from scorers.base import Field, MeanAggregator, text_field
from scorers.errors import ScorerInputError, UnknownArgumentError


class Echo(Scorer):
    """Scores len(output) / len(output + suffix); reads an optional template variable."""

    name = "Echo"
    fields = (text_field("output"), Field("suffix", (str,), required=False))

    def __init__(self, *, weight: float = 1.0, name=None):
        super().__init__(name=name)
        self.weight = weight

    def params(self):
        return {"weight": self.weight}

    def _score(self, *, output, suffix=None, **_):
        return self.make_score(self.weight * len(output) / max(1, len(output + (suffix or ""))), suffix=suffix)


class AsyncEcho(Echo):
    name = "AsyncEcho"
    is_async = True

    async def _ascore(self, **fields):
        await asyncio.sleep(0)
        return self._score(**fields)


@pytest.mark.parametrize("cls", [Echo, AsyncEcho])
def test_keyword_call_eval_and_async_forms_agree(cls):
    scorer = cls()
    direct = scorer(output="ab", suffix="cd")
    assert direct.score == 0.5
    assert scorer.eval("ab", suffix="cd").score == 0.5
    assert asyncio.run(scorer.acall(output="ab", suffix="cd")).score == 0.5
    assert asyncio.run(scorer.eval_async("ab", suffix="cd")).score == 0.5


def test_sync_call_of_async_scorer_works_inside_a_running_loop():
    async def inside():
        return AsyncEcho()(output="ab", suffix="cd")   # no nest_asyncio, no "loop already running"

    assert asyncio.run(inside()).score == 0.5


def test_unknown_keyword_is_an_error_naming_scorer_and_argument():
    with pytest.raises(UnknownArgumentError) as info:
        Echo()(output="a", sufix="b")
    assert info.value.field == "sufix" and "Echo" in str(info.value) and "suffix" in str(info.value)


def test_standard_fields_are_always_accepted():
    assert Echo()(output="ab", input="q", expected="e", metadata={"k": 1}).score == 1.0


@pytest.mark.parametrize("kwargs,problem", [
    ({}, "is required but was missing"),
    ({"output": None}, "is required but was None"),
    ({"output": ["x"]}, "must be str or int or float, got list"),
    ({"output": True}, "expects text, got bool"),
])
def test_field_validation(kwargs, problem):
    with pytest.raises(ScorerInputError, match=problem):
        Echo()(**kwargs)


def test_partial_binds_arguments_call_time_wins_and_name_is_stable():
    bound = Echo().partial(suffix="cd")
    assert bound.name == "Echo"
    assert bound(output="ab").score == 0.5
    assert bound(output="ab", suffix="").score == 1.0
    with pytest.raises(UnknownArgumentError):
        Echo().partial(nope=1)


def test_signature_records_parameters_and_version():
    score = Echo(weight=0.5)(output="ab")
    assert score.metadata["signature"] == {"scorer": "Echo", "scorers_version": scorers.__version__,
                                           "algorithm": "1", "weight": 0.5}
    assert Echo(name="Custom")(output="a").metadata["signature"]["scorer"] == "Echo:Custom"


def test_score_rows_records_bad_rows_and_goes_on():
    results = Echo().score_rows([{"output": "ab"}, {"output": None}, {"output": "abc", "suffix": "d"}])
    assert [type(r).__name__ for r in results] == ["Score", "ScorerInputError", "Score"]
    assert results[2].score == 0.75


def test_score_batch_raises_on_bad_row():
    with pytest.raises(ScorerInputError):
        Echo().score_batch(["a", None])
    assert [s.score for s in Echo().score_batch(["ab", "abc"], suffix=["cd", "d"])] == [0.5, 0.75]


def test_mean_aggregator_streams_figures():
    agg = MeanAggregator()
    for value in (0.0, 1.0, None, 0.5):
        agg.add(Score("S", value))
    assert agg.result() == {"n": 3, "mean": 0.5, "stdev": 0.5, "min": 0.0, "max": 1.0, "skipped": 1}
