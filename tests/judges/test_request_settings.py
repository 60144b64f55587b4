"""The request settings are declared once (:class:`RequestSettings`); every judge's constructor takes them from there."""

from __future__ import annotations

import inspect

import pytest

import scorers
from scorers.errors import ConfigError
from scorers.judges import GEvalJudge, LLMClassifier, LLMJudge, PairwiseJudge, RatingJudge, RubricJudge
from scorers.judges.rag import Faithfulness, MultiStepJudge
from scorers.judges.selfcheck import SelfCheck
from scorers.judges.spec import RequestSettings

CLASSES = [LLMJudge, LLMClassifier, RubricJudge, RatingJudge, GEvalJudge, PairwiseJudge, MultiStepJudge]


def _judges(**settings):
    """One judge of each kind built in code, with ``settings``."""
    return {
        "classifier": LLMClassifier("C", "Is {{output}} ok?", {"Y": 1, "N": 0}, **settings),
        "rubric": RubricJudge("R", "Grade {{output}}", criteria=[{"name": "a", "description": "A."}], **settings),
        "rating": RatingJudge("Ra", "Rate {{output}}", scale={"min": 1, "max": 5}, **settings),
        "pairwise": PairwiseJudge("P", "{{output}} vs {{expected}}", **settings),
        "faithfulness": Faithfulness(**settings),
        "selfcheck": SelfCheck(**settings),
    }


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_request_setting_is_a_keyword_only_parameter(cls):
    parameters = inspect.signature(cls).parameters
    for name in RequestSettings.model_fields:
        if name in cls.fixed_settings:
            assert name not in parameters
            continue
        parameter = parameters[name]
        assert parameter.kind is parameter.KEYWORD_ONLY
        assert parameter.default == cls.request_defaults.get(name)
    assert parameters["settings"].default is None
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def test_the_kinds_defaults_are_the_signatures():
    assert inspect.signature(GEvalJudge).parameters["response_mode"].default == "text"
    assert "use_cot" not in inspect.signature(GEvalJudge).parameters
    assert GEvalJudge("G", "Judge {{output}}", criteria="good").use_cot is False
    assert inspect.signature(LLMClassifier).parameters["temperature"].default == 0


def test_subclasses_passing_settings_on_list_them_through_the_registry():
    assert {"reasoning_effort", "settings", "idk_is_unfaithful"} <= set(Faithfulness.constructor_params())
    with pytest.raises(ConfigError, match=r"unknown parameter 'reasoning_efort'.*reasoning_effort"):
        scorers.get("Faithfulness", reasoning_efort="high")


def test_one_settings_value_is_the_same_as_its_keywords():
    keywords = {
        "model": "m2",
        "temperature": 0.5,
        "max_tokens": 99,
        "response_mode": "json",
        "use_cot": False,
        "reasoning_effort": "high",
        "api": "responses",
        "extra_args": {"top_p": 0.5},
    }
    by_keywords = _judges(**keywords)
    by_value = _judges(settings=RequestSettings(**keywords))
    by_mapping = _judges(settings=keywords)
    for kind, judge in by_keywords.items():
        assert by_value[kind].params() == judge.params() == by_mapping[kind].params(), kind
        assert by_value[kind].signature() == judge.signature(), kind
        assert by_value[kind].spec == judge.spec, kind


def test_unset_fields_of_settings_keep_the_kinds_defaults_and_keywords_win():
    judge = LLMClassifier(
        "C", "Is {{output}} ok?", {"Y": 1, "N": 0}, settings=RequestSettings(model="m2"), model="m3", max_tokens=5
    )
    assert (judge.model, judge.max_tokens, judge.temperature, judge.use_cot, judge.response_mode) == (
        "m3",
        5,
        0,
        True,
        "tools",
    )
    assert (
        judge.params() == LLMClassifier("C", "Is {{output}} ok?", {"Y": 1, "N": 0}, model="m3", max_tokens=5).params()
    )


def test_settings_are_checked_like_keywords():
    with pytest.raises(ConfigError, match=r"C: invalid settings: temperature: must be a number in \[0, 2\]"):
        LLMClassifier("C", "Is {{output}} ok?", {"Y": 1, "N": 0}, settings={"temperature": 3})
    with pytest.raises(ConfigError, match=r"C: invalid settings: samples: unknown key"):
        LLMClassifier("C", "Is {{output}} ok?", {"Y": 1, "N": 0}, settings={"samples": 3})
    with pytest.raises(ConfigError, match=r"C: settings must be a RequestSettings or a mapping, got str"):
        LLMClassifier("C", "Is {{output}} ok?", {"Y": 1, "N": 0}, settings="fast")
    with pytest.raises(ConfigError, match=r"G: a geval judge fixes use_cot=False"):
        GEvalJudge("G", "Judge {{output}}", criteria="good", settings=RequestSettings(use_cot=True))
    with pytest.raises(TypeError, match=r"GEvalJudge.__init__\(\) got an unexpected keyword argument 'use_cot'"):
        GEvalJudge("G", "Judge {{output}}", criteria="good", use_cot=False)
    with pytest.raises(TypeError, match=r"MultiStepJudge.__init__\(\) got an unexpected keyword argument 'bogus'"):
        Faithfulness(bogus=1)


def test_a_constructor_cannot_declare_a_request_setting_twice():
    with pytest.raises(TypeError, match=r"declares \['model'\], which are request settings"):

        class Twice(MultiStepJudge):
            def __init__(self, *, model: str | None = None, **request) -> None:
                super().__init__(model=model, **request)


def test_a_settings_value_wins_over_a_template_files_settings():
    default = scorers.get("Battle")
    judge = scorers.get("Battle", settings=RequestSettings(model="m2", temperature=0.5))
    assert (judge.model, judge.temperature) == ("m2", 0.5)
    assert judge.params() == scorers.get("Battle", model="m2", temperature=0.5).params()
    assert (judge.use_cot, judge.response_mode) == (default.use_cot, default.response_mode)
    assert scorers.get("Battle", settings={"model": "m2"}, model="m3").model == "m3"


def test_options_list_only_the_settings_a_judge_takes() -> None:
    from scorers.judges.gptscore import GPTScore

    assert list(GPTScore.options()) == ["model"]  # GPTScore reads log-probabilities: no other request setting
    assert list(Faithfulness.options()) == list(RequestSettings.model_fields)
    assert SelfCheck.options()["response_mode"].choices == ("tools", "json", "json_object")
    assert "use_cot" not in GEvalJudge.options() and GEvalJudge.options()["response_mode"].default == "text"
