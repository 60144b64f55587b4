"""The Scorer base: keyword interface, validation, partial, sync/async bridges, signature."""

import asyncio

import pytest

import scorers
from scorers import Field, MeanAggregator, Score, Scorer, param, text_field
from scorers.errors import ScorerInputError, UnknownArgumentError
from scorers.fields import references_field


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
        return AsyncEcho()(output="ab", suffix="cd")  # no nest_asyncio, no "loop already running"

    assert asyncio.run(inside()).score == 0.5


def test_unknown_keyword_is_an_error_naming_scorer_and_argument():
    with pytest.raises(UnknownArgumentError) as info:
        Echo()(output="a", sufix="b")
    assert info.value.field == "sufix" and "Echo" in str(info.value) and "suffix" in str(info.value)


def test_standard_fields_are_always_accepted():
    assert Echo()(output="ab", input="q", expected="e", metadata={"k": 1}).score == 1.0


@pytest.mark.parametrize(
    "kwargs,problem",
    [
        ({}, "is required but was missing"),
        ({"output": None}, "is required but was None"),
        ({"output": ["x"]}, "must be str or int or float, got list"),
        ({"output": True}, "expects text, got bool"),
    ],
)
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
    assert score.metadata["signature"] == {
        "scorer": "Echo",
        "scorers_version": scorers.__version__,
        "algorithm": "1",
        "weight": 0.5,
    }
    assert Echo(name="Custom")(output="a").metadata["signature"]["scorer"] == "Echo:Custom"


def test_score_batch_records_bad_rows_and_goes_on():
    results = Echo().score_batch([{"output": "ab"}, {"output": None}, {"output": "abc", "suffix": "d"}])
    assert [type(r).__name__ for r in results] == ["Score", "ScorerInputError", "Score"]
    assert results[2].score == 0.75
    assert results[1].field == "output" and results[1].scorer == "Echo"


@pytest.mark.parametrize("cls", [Echo, AsyncEcho])
def test_ascore_batch_is_the_async_twin(cls):
    results = asyncio.run(cls().ascore_batch([{"output": "ab", "suffix": "cd"}, {"output": None}]))
    assert results[0].score == 0.5 and isinstance(results[1], ScorerInputError)
    assert cls().score_batch([{"output": "ab", "suffix": "cd"}])[0].score == 0.5


def test_a_batch_of_non_mappings_is_a_type_error_naming_the_scorer():
    with pytest.raises(TypeError, match="Echo: a batch is a list of rows"):
        Echo().score_batch(["a", None])


def test_is_async_is_derived_from_the_hooks():
    class OnlyBatch(Scorer):
        fields = (text_field("output"),)

        def _score_batch(self, rows):
            return [self.make_score(float(len(r["output"]) > 1)) for r in rows]

    class OnlyAsyncBatch(Scorer):
        fields = (text_field("output"),)

        async def _ascore_batch(self, rows, limit):
            return [self.make_score(1.0) for _ in rows]

    assert (Echo.is_async, AsyncEcho.is_async, OnlyBatch.is_async, OnlyAsyncBatch.is_async) == (
        False,
        True,
        False,
        True,
    )
    assert OnlyBatch()(output="ab").score == 1.0  # one row is a batch of one
    assert OnlyAsyncBatch()(output="x").score == 1.0
    assert asyncio.run(OnlyAsyncBatch().acall(output="x")).score == 1.0


def test_a_scorer_without_hooks_says_so():
    class Nothing(Scorer):
        fields = (text_field("output"),)

    with pytest.raises(NotImplementedError, match="implements none of"):
        Nothing()(output="a")


def test_hooks_receive_only_declared_fields_and_the_standard_ones_they_name():
    seen = []

    class Strict(Scorer):
        fields = (text_field("output"),)

        def _score(self, *, output):  # no **_: an input column must not break it
            seen.append(output)
            return self.make_score(1.0)

    class AsksForInput(Scorer):
        fields = (text_field("output"),)

        def _score(self, *, output, input=None):
            seen.append(input)
            return self.make_score(1.0)

    assert Strict()(output="a", input="q", expected="e", metadata={}).score == 1.0
    assert Strict().score_batch([{"output": "b", "input": "q"}])[0].score == 1.0
    assert AsksForInput()(output="a", input="the question").score == 1.0
    assert seen == ["a", "b", "the question"]


@pytest.mark.parametrize("form", ["sync", "async"])
def test_bound_arguments_survive_the_positional_form(form):
    lev = scorers.get("Levenshtein").partial(expected="abcd")
    score = lev.eval("abc") if form == "sync" else asyncio.run(lev.eval_async("abc"))
    assert score.score == 0.75  # autoevals gives 0.75 too
    assert lev.eval("abcd", "abcd").score == 1.0  # a positional expected still wins


def test_a_parameter_given_as_a_field_says_where_parameters_go():
    with pytest.raises(
        UnknownArgumentError,
        match=r"'ignore_case' is a parameter of the scorer, not a field.*"
        r"scorers.get\('ExactMatch', ignore_case=...\)",
    ):
        scorers.get("ExactMatch").partial(ignore_case=True)
    with pytest.raises(UnknownArgumentError, match="is a parameter of the scorer"):
        scorers.get("ExactMatch")(output="a", expected="a", ignore_case=True)


@pytest.mark.parametrize(
    "error",
    [
        ScorerInputError("Echo", "output", "is required but was missing"),
        UnknownArgumentError("Echo", "x", ["output"], hint="; a hint"),
        scorers.MissingExtraError("BLEU", "sacrebleu", "text"),
        scorers.JudgeError("gave up", scorer="Factuality", raw={"reply": 1}, attempts=3),
    ],
)
def test_errors_cross_process_boundaries_intact(error):
    import pickle

    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error) and vars(copy) == vars(error)


def test_mean_aggregator_streams_figures():
    agg = MeanAggregator()
    for value in (0.0, 1.0, None, 0.5):
        agg.add(Score("S", value))
    assert agg.result() == {"n": 3, "mean": 0.5, "stdev": 0.5, "min": 0.0, "max": 1.0, "skipped": 1}


def test_a_forked_child_runs_async_scorers_on_its_own_loop():
    import multiprocessing

    AsyncEcho()(output="ab")  # the parent's background loop is running now
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert (
            pool.apply(
                _async_echo_score,
                ("ab",),
            )
            == 1.0
        )


def _async_echo_score(output):
    return AsyncEcho()(output=output).score


# ------------------------------------------------------------------ issue 15: arguments and limits
def test_positional_fields_are_a_typed_error_that_says_how_to_call():
    from scorers.errors import PositionalArgumentError, ScorerError

    lev = scorers.get("Levenshtein")
    with pytest.raises(
        PositionalArgumentError,
        match=r"Levenshtein: fields are passed by keyword, e\.g\. "
        r"scorer\(output=\.\.\., expected=\.\.\.\).*scorer\.eval\(output, "
        r"expected\); got 2 positional arguments",
    ) as caught:
        lev("a", "b")
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ScorerError)
    with pytest.raises(PositionalArgumentError, match="got 1 positional argument$"):
        asyncio.run(lev.acall("a", expected="b"))
    assert lev.eval("a", "b").score == 0.0


def test_a_misspelled_field_suggests_the_closest_ones():
    with pytest.raises(UnknownArgumentError, match=r"field 'outptu' is not an argument .*; did you mean 'output'\?"):
        scorers.get("Levenshtein")(outptu="a", expected="b")
    with pytest.raises(UnknownArgumentError, match=r"'ignore_case' is a parameter of the scorer"):
        scorers.get("ExactMatch")(output="a", expected="b", ignore_case=True)


class Bounded(Scorer):
    """Text and references under a max_chars limit."""

    name = "Bounded"
    fields = (text_field("output"), references_field(), Field("note", (str,), required=False))

    max_chars: int | None = param("longest text", default=5, ge=1)

    def _score(self, *, output, expected, note=None, **_):
        return self.make_score(1.0)


def test_max_chars_bounds_every_text_field_and_each_reference_but_no_other_field():
    bounded = Bounded()
    assert bounded(output="12345", expected=["12345", 12345], note="a note longer than five").score == 1.0
    with pytest.raises(ScorerInputError, match="Bounded: field 'output' has 6 characters, more than max_chars=5"):
        bounded(output="123456", expected="1")
    with pytest.raises(
        ScorerInputError, match=r"field 'expected' has 6 characters \(reference 1\), more than max_chars=5"
    ):
        bounded(output="1", expected=["1", 123456])
    assert Bounded(max_chars=None)(output="123456", expected="123456").score == 1.0


def test_utf8_text_fields_refuse_a_lone_surrogate_naming_the_field():
    class Model(Bounded):
        name = "Model"
        fields = (text_field("output", utf8=True), references_field(utf8=True))

    model = Model(max_chars=None)
    assert model(output="café", expected="naïve").score == 1.0
    with pytest.raises(
        ScorerInputError, match=r"Model: field 'output' holds a lone surrogate \(U\+D800 at character 1\)"
    ):
        model(output="a\ud800", expected="b")
    with pytest.raises(ScorerInputError, match=r"field 'expected' reference 1 holds a lone surrogate \(U\+DFFF"):
        model(output="a", expected=["b", "\udfff"])
    assert Bounded(max_chars=None)(output="a\ud800", expected="b").score == 1.0  # plain text fields take it
