"""scorers.compat.autoevals: autoevals' call forms, Score, init and options, each computed by our scorer.

LLM judges answer from a LoopbackLLM over real HTTP through the openai client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import openai
import pytest

import scorers
from scorers.compat import autoevals
from scorers.compat.autoevals import NotSupportedError
from scorers.errors import ConfigError, ScorerInputError, UnknownArgumentError
from scorers.judges import LLMClassifier as OurClassifier
from scorers.llm import LLMEngine
from scorers.testing import LoopbackLLM, Reply


@pytest.fixture(autouse=True)
def _reset_init():
    autoevals.init()
    yield
    autoevals.init()


@pytest.fixture
def server():
    with LoopbackLLM(default=Reply.choice("Y", reasons="fine"), api_key="sk-loopback") as running:
        yield running


def loopback_client(server: LoopbackLLM) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-loopback")


# ------------------------------------------------------------------ heuristics: our numbers and autoevals'
HEURISTIC_CASES = [
    (autoevals.Levenshtein, "Levenshtein", {}, ("kitten", "sitting")),
    (autoevals.LevenshteinScorer, "Levenshtein", {}, ("", "")),
    (autoevals.Levenshtein, "Levenshtein", {}, (12, "12.0")),
    (autoevals.ExactMatch, "ExactMatch", {}, ({"a": 1, "b": 2}, '{"a": 1, "b": 2}')),
    (autoevals.ExactMatch, "ExactMatch", {}, (123, "123")),
    (autoevals.NumericDiff, "NumericDiff", {}, (1.0, 2.0)),
    (autoevals.JSONDiff, "JSONDiff", {}, ({"a": 1}, ["a", 1])),
    (autoevals.JSONDiff, "JSONDiff", {}, (["café"], {"a": "café"})),
    (autoevals.JSONDiff, "JSONDiff", {}, (None, None)),
    (autoevals.JSONDiff, "JSONDiff", {"preserve_strings": True}, ('{"a": 1}', '{"a": 2}')),
    (autoevals.ListContains, "ListContains", {}, (["a", "b"], ["a"])),
    (autoevals.ListContains, "ListContains", {"allow_extra_entities": True}, (["a", "b"], ["a"])),
]


@pytest.mark.parametrize("cls,name,options,args", HEURISTIC_CASES)
def test_each_heuristic_equals_our_scorer_and_autoevals(cls, name, options, args):
    real = pytest.importorskip("autoevals")
    ours = scorers.get(name, **options)
    output, expected = args
    got = cls(**options)(output, expected)
    assert isinstance(got, autoevals.Score)
    assert got.name == name
    if output is None:
        assert got.score == ours(output=output, expected=expected).score == 1.0
    else:
        assert got.score == ours(output=output, expected=expected).score
    assert got.score == pytest.approx(getattr(real, cls.__name__)(**options)(output, expected).score, abs=1e-12)


def test_levenshtein_compares_values_that_are_not_text_as_their_str():
    real = pytest.importorskip("autoevals")
    for output, expected in [({"a": "é"}, "{'a': 'é'}"), (["x", 1], "['x', 2]"), (True, "true")]:
        got = autoevals.Levenshtein()(output, expected).score
        assert got == scorers.get("Levenshtein")(output=str(output), expected=expected).score
        assert got == pytest.approx(real.Levenshtein()(output, expected).score, abs=1e-12)
    with pytest.raises(ScorerInputError):
        autoevals.Levenshtein()(None, "None")


def test_list_contains_compares_elements_that_are_not_text_as_their_str():
    real = pytest.importorskip("autoevals")
    output, expected = ["a", {"k": 1}, 2.5, True], [{"k": 1}, "b", "2.5"]
    got = autoevals.ListContains()(output, expected).score
    as_text = {"output": [str(e) for e in output], "expected": [str(e) for e in expected]}
    assert got == scorers.get("ListContains")(**as_text).score
    assert got == pytest.approx(real.ListContains()(output, expected).score, abs=1e-12)


def test_valid_json_takes_the_schema_second_and_honours_the_constructor_schema():
    schema = {"type": "object", "required": ["a"]}
    assert autoevals.ValidJSON()('{"b": 1}', schema).score == 0.0
    assert autoevals.ValidJSON()('{"a": 1}', schema).score == 1.0
    assert autoevals.ValidJSON()("100").score == scorers.get("ValidJSON")(output="100").score == 0.0
    assert autoevals.ValidJSON(schema=schema)('{"b": 1}').score == 0.0  # autoevals ignores it


# ------------------------------------------------------------------ call forms
def test_call_forms_give_one_number():
    lev = autoevals.Levenshtein()
    expected = scorers.get("Levenshtein")(output="abc", expected="abcd").score
    assert lev("abc", "abcd").score == lev.eval("abc", "abcd").score == expected
    assert lev(output="abc", expected="abcd").score == expected
    assert asyncio.run(lev.eval_async("abc", "abcd")).score == expected


def test_class_level_partial_binds_fields_and_keeps_the_name():
    bound = autoevals.Levenshtein.partial(expected="abcd")
    assert bound.__name__ == "Levenshtein" and issubclass(bound, autoevals.Levenshtein)
    assert bound._partial_args() == {"expected": "abcd"}
    assert bound()(output="abc").score == 0.75
    assert bound()("abc", "abc").score == 1.0  # the call's value wins
    assert asyncio.run(bound().eval_async("abc")).score == 0.75


def test_scorer_subclass_written_for_autoevals_works_and_serves_as_an_option():
    class FirstLetter(autoevals.Scorer):
        def _run_eval_sync(self, output, expected=None, **kwargs):
            return autoevals.Score(name=self._name(), score=float(output[:1] == expected[:1]))

    assert FirstLetter()("apple", "avocado").score == 1.0
    assert asyncio.run(FirstLetter().eval_async("apple", "pear")).score == 0.0
    diff = autoevals.JSONDiff(string_scorer=FirstLetter())
    assert diff({"a": "apple", "b": "kiwi"}, {"a": "avocado", "b": "pear"}).score == 0.5


@pytest.mark.parametrize(
    "option", [autoevals.ExactMatch, autoevals.ExactMatch(), "ExactMatch", scorers.get("ExactMatch")]
)
def test_scorer_valued_options_take_autoevals_classes_instances_ours_and_names(option):
    diff = autoevals.JSONDiff(number_scorer=option)
    assert diff({"a": 1, "b": 2}, {"a": 1, "b": 3}).score == 0.5
    assert diff.scorer.number_scorer.name == "ExactMatch"


# ------------------------------------------------------------------ Score
def test_score_error_as_dict_and_as_json():
    score = autoevals.Levenshtein()("abc", "abd")
    assert score.error is None
    assert score.as_dict() == {"name": "Levenshtein", "score": score.score, "metadata": score.metadata}
    assert json.loads(score.as_json()) == score.as_dict()
    assert json.loads(score.as_json(indent=2))["score"] == score.score
    assert score["score"] == score.score
    assert score.metadata["signature"]["scorer"] == "Levenshtein"


def test_score_validates_and_warns_on_error():
    with pytest.raises(ValueError):
        autoevals.Score(name="x", score=1.5)
    with pytest.warns(DeprecationWarning):
        failed = autoevals.Score(name="x", score=None, error=RuntimeError("boom"))
    assert "error" not in failed.as_dict() and isinstance(failed.error, RuntimeError)
    assert autoevals.Score.from_dict({"name": "x", "score": 1}).score == 1.0


@dataclasses.dataclass
class Inner(autoevals.SerializableDataClass):
    value: int


@dataclasses.dataclass
class Outer(autoevals.SerializableDataClass):
    inner: Inner | None
    items: list[Inner]


def test_from_dict_deep_builds_nested_dataclasses():
    built = Outer.from_dict_deep({"inner": {"value": 1}, "items": [{"value": 2}]})
    assert built == Outer(Inner(1), [Inner(2)])
    assert Outer.from_dict_deep({"inner": None, "items": []}).inner is None
    assert json.loads(built.as_json()) == {"inner": {"value": 1}, "items": [{"value": 2}]}
    with pytest.raises(TypeError):
        Inner.from_dict({"value": 1, "other": 2})


# ------------------------------------------------------------------ our stricter choices (README table)
def test_none_is_not_the_string_none():
    with pytest.raises(ScorerInputError) as error:
        autoevals.ExactMatch()(None, "None")
    assert error.value.field == "output"


def test_misnamed_and_call_time_options_are_errors():
    with pytest.raises(TypeError):
        autoevals.ListContains(pairwise_evaluator=autoevals.Levenshtein())
    with pytest.raises(UnknownArgumentError):
        autoevals.JSONDiff()({"a": 1}, {"a": 1}, number_scorer=autoevals.ExactMatch())
    with pytest.raises(ConfigError):
        autoevals.JSONDiff(number_scorer=3)


@pytest.mark.parametrize(
    "use",
    [
        lambda: autoevals.Moderation().eval("hello"),
        lambda: autoevals.Faithfulness()(output="a", input="q", context="c"),
        lambda: autoevals.ContextRelevancy().eval_async("a"),
        lambda: autoevals.LiteLLMClient(api_key="k").chat,
        lambda: __import__("scorers.compat.autoevals.oai", fromlist=["x"]).prepare_openai(),
        lambda: autoevals.LLMClassifier("x", "{{output}}", {"A": 1}, engine="my-deployment"),
        lambda: autoevals.OpenAILLMClassifier(
            "x",
            [{"role": "user", "content": "{{output}}"}],
            None,
            {"A": 1},
            [{"type": "function", "function": {"name": "other"}}],
        ),
    ],
)
def test_features_we_do_not_provide_import_and_raise_when_used(use):
    with pytest.raises(NotSupportedError) as error:
        use()
    assert "not provided" in str(error.value) or "engine=" in str(error.value) or "select_choice" in str(error.value)
    assert isinstance(error.value, ConfigError)


# ------------------------------------------------------------------ init and default models
def test_init_default_models():
    assert autoevals.get_default_model() == "gpt-5-mini"
    assert autoevals.get_default_embedding_model() == "text-embedding-ada-002"
    autoevals.init(default_model={"embedding": "text-embedding-3-small"})
    autoevals.init(default_model={"completion": "gpt-4o"})
    assert (autoevals.get_default_model(), autoevals.get_default_embedding_model()) == (
        "gpt-4o",
        "text-embedding-3-small",
    )
    autoevals.init(default_model="gpt-4o-mini")  # a name resets the embedding model
    assert autoevals.get_default_embedding_model() == "text-embedding-ada-002"
    assert scorers.get("Humor").params()["model"] == "gpt-4o-mini"  # our judges use it too (configure)
    with pytest.raises(ConfigError):
        autoevals.init(default_model={"completions": "x"})


# ------------------------------------------------------------------ LLM judges over HTTP
def test_llm_classifier_equals_our_judge_and_sends_autoevals_request_options(server):
    prompt = "Which title fits {{page}} better? 1: {{output}} 2: {{expected}}"
    choices = {"1": 1, "2": 0}
    server.script(Reply.choice("1", reasons="first"))
    compat = autoevals.LLMClassifier(
        "title", prompt, choices, model="gpt-4o-mini", base_url=server.base_url, api_key="sk-loopback", page={"id": 7}
    )
    got = compat("Short", "Long")
    engine = LLMEngine(base_url=server.base_url, api_key="sk-loopback", cache=False)
    ours = OurClassifier("title", prompt, choices, model="gpt-4o-mini", temperature=None, engine=engine)
    server.script(Reply.choice("1", reasons="first"))
    assert got.score == ours(output="Short", expected="Long", page="{'id': 7}").score == 1.0
    assert got.name == "title" and got.metadata["choice"] == "1" and got.metadata["rationale"] == "first"
    first, second = server.chat_requests
    assert first.messages == second.messages
    assert "{'id': 7}" in first.last_user_message  # non-text values as their str()
    assert "temperature" not in first.body
    assert first.body["tool_choice"]["function"]["name"] == "select_choice"


def test_call_time_template_variables_and_constructor_ones(server):
    judge = autoevals.LLMClassifier(
        "grade",
        "Grade {{output}} for {{audience}} in {{language}}",
        {"Y": 1, "N": 0},
        model="gpt-4o-mini",
        client=loopback_client(server),
        language="French",
    )
    assert judge("Bonjour", audience=["kids", "adults"]).score == 1.0
    text = server.chat_requests[-1].last_user_message
    assert "for ['kids', 'adults'] in French" in text
    judge("Salut", audience="kids", language="German")  # the call's value wins
    assert "in German" in server.chat_requests[-1].last_user_message
    with pytest.raises(UnknownArgumentError):
        judge("Hi", audience="kids", tone="warm")  # not a template variable
    with pytest.raises(ScorerInputError):
        judge("Hi", audience=None)


def test_gpt5_models_and_use_responses_api_go_through_the_responses_api(server):
    client = loopback_client(server)
    autoevals.LLMClassifier("t", "{{output}}?", {"Y": 1, "N": 0}, client=client)("x")  # gpt-5-mini
    autoevals.LLMClassifier(
        "t", "{{output}}?", {"Y": 1, "N": 0}, model="gpt-4o-mini", client=client, use_responses_api=True
    )("x")
    autoevals.LLMClassifier("t", "{{output}}?", {"Y": 1, "N": 0}, model="gpt-4o-mini", client=client)("x")
    assert [r.model for r in server.responses_requests] == ["gpt-5-mini", "gpt-4o-mini"]
    assert [r.model for r in server.chat_requests] == ["gpt-4o-mini"]


def test_reasoning_and_extra_args(server):
    judge = autoevals.LLMClassifier(
        "t",
        "{{output}}?",
        {"Y": 1, "N": 0},
        model="gpt-4o-mini",
        client=loopback_client(server),
        temperature=0.5,
        reasoning_effort="low",
        reasoning_enabled=True,
        reasoning_budget=512,
    )
    assert judge.extra_args == {
        "temperature": 0.5,
        "reasoning_effort": "low",
        "reasoning_enabled": True,
        "reasoning_budget": 512,
    }
    judge("x")
    body = server.chat_requests[-1].body
    assert (body["temperature"], body["reasoning_effort"]) == (0.5, "low")
    assert (body["reasoning_enabled"], body["reasoning_budget"]) == (True, 512)
    assert autoevals.LLMClassifier("t", "{{output}}", {"Y": 1}, model="o3-mini").extra_args == {}
    seeded = autoevals.Humor(model="gpt-4o-mini", client=loopback_client(server), extra_args={"seed": 7})
    assert seeded.extra_args == {"seed": 7}
    server.script(Reply.choice("Yes"))
    seeded("a pun")
    assert server.chat_requests[-1].body["seed"] == 7


@pytest.mark.parametrize(
    "cls",
    [
        autoevals.Battle,
        autoevals.ClosedQA,
        autoevals.Factuality,
        autoevals.Humor,
        autoevals.Possible,
        autoevals.Security,
        autoevals.Sql,
        autoevals.Summary,
        autoevals.Translation,
    ],
)
def test_named_judges_are_our_templates(cls, server):
    judge = cls(model="gpt-4o-mini", client=loopback_client(server), use_cot=False)
    ours = scorers.get(cls.__name__)
    assert judge.scorer.template.name == cls.__name__ and judge.scorer.template == ours.template
    assert judge.scorer.choice_scores == ours.choice_scores and judge.scorer.use_cot is False
    first = next(iter(ours.choice_scores))
    server.script(Reply.choice(first))
    variables = {name: f"<{name}>" for name in ours.template.variables}
    output = variables.pop("output")
    assert judge(output, **variables).score == ours.choice_scores[first]
    assert judge(output, **variables).name == cls.__name__


def test_init_client_and_model_reach_the_named_judges(server):
    autoevals.init(client=loopback_client(server), default_model="gpt-4o-mini")
    server.script(Reply.choice("C", reasons="same"))
    score = autoevals.Factuality()(output="6", expected="6", input="1+2+3?")
    assert score.score == 1.0 and server.chat_requests[-1].model == "gpt-4o-mini"
    assert asyncio.run(autoevals.Factuality().eval_async(output="6", expected="6", input="1+2+3?")).score == 1.0


def test_partial_of_a_named_judge(server, monkeypatch):
    monkeypatch.setenv("SCORERS_CACHE", "off")  # both calls reach the server
    autoevals.init(client=loopback_client(server), default_model="gpt-4o-mini")
    basic = autoevals.ClosedQA()(criteria="Is it correct?", input="1+1?", output="2")
    bound = autoevals.ClosedQA.partial(criteria="Is it correct?")()(input="1+1?", output="2")
    assert bound.score == basic.score == 1.0 and bound.name == basic.name == "ClosedQA"
    assert server.chat_requests[0].messages == server.chat_requests[1].messages


def test_openai_llm_classifier_messages_and_render(server):
    tools = autoevals.build_classification_tools(True, ["Y", "N"])
    judge = autoevals.OpenAILLMClassifier(
        "msgs",
        [
            {"role": "system", "content": "Be strict."},
            {"role": "user", "content": ""},
            {"role": "user", "content": "{{value}} and {{{value}}}: {{output}}"},
        ],
        "gpt-4o-mini",
        {"Y": 1, "N": 0},
        tools,
        client=loopback_client(server),
    )
    assert judge.scorer.use_cot is True
    assert judge._render_messages(value="<b>x</b>", output={"k": 1}) == [
        {"role": "system", "content": "Be strict."},
        {"role": "user", "content": "<b>x</b> and <b>x</b>: {'k': 1}"},
    ]
    assert judge("out", value="v").score == 1.0
    assert [m["role"] for m in server.chat_requests[-1].messages] == ["system", "user"]


# ------------------------------------------------------------------ EmbeddingSimilarity
def test_embedding_similarity_is_ours_and_sends_lists_and_dicts_as_json_text(server):
    autoevals.init(client=loopback_client(server), default_model={"embedding": "text-embedding-3-small"})
    compat = autoevals.EmbeddingSimilarity(prefix="q: ")
    ours = scorers.get(
        "EmbeddingSimilarity",
        provider="openai",
        model="text-embedding-3-small",
        prefix="q: ",
        expected_min=0.7,
        client=loopback_client(server),
    )
    for output, expected in [
        ("water", "wind"),
        (["cold", "water"], ["cold", "wind"]),
        ({"water": "wet"}, {"wind": "dry"}),
        (True, 1.5),
    ]:
        as_text = [json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in (output, expected)]
        assert compat(output, expected).score == ours(output=as_text[0], expected=as_text[1]).score
        assert asyncio.run(compat.eval_async(output, expected)).score == compat(output, expected).score
    sent = [r.body["input"] for r in server.requests if r.path.endswith("/embeddings")]
    assert any('q: {"water": "wet"}' in (text if isinstance(text, list) else [text]) for text in sent)
    assert compat.scorer.params()["model"] == "text-embedding-3-small"
    assert compat.scorer.expected_min == 0.7


def test_from_spec_file_reads_an_autoevals_spec_file(server, tmp_path):
    spec = tmp_path / "tone.yaml"
    spec.write_text(
        'prompt: |-\n  Is this reply kind? {{output}}\nchoice_scores:\n  "Yes": 1\n  "No": 0\n'
        "model: gpt-4o-mini\ntemperature: 0.2\n",
        encoding="utf-8",
    )
    judge = autoevals.LLMClassifier.from_spec_file("Tone", spec, client=loopback_client(server), use_cot=False)
    server.script(Reply.choice("Yes"))
    assert judge("Thanks!").score == 1.0
    request = server.chat_requests[-1]
    assert request.model == "gpt-4o-mini" and request.body["temperature"] == 0.2
    assert "Is this reply kind? Thanks!" in request.last_user_message
    spec.write_text("prompt: x\nchoice_scores: {A: 1}\nkind: other\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        autoevals.LLMClassifier.from_spec_file("Tone", spec)
