"""Scorer parameters declared once (scorers.params): the constructors they derive, validation, params(), options().

The pinned signatures are those of every registered scorer class before the parameters were declared once (the
explicit ``__init__`` of each): declaring them must not change what ``inspect.signature`` reports.
"""

from __future__ import annotations

import inspect
import re

import pytest

import scorers
from scorers import ConfigError, Scorer, param, text_field
from scorers.cli.catalog import describe
from scorers.registry import entries

#: ``str(inspect.signature(cls))`` of every registered scorer class, as the hand-written constructors gave it.
PINNED = {
    "scorers.agents.loops.ToolLoop": "(*, max_repeats: 'int' = 2, max_cycles: 'int' = 2, max_period: 'int' = 10, similarity: 'float' = 0.9, max_turn_repeats: 'int' = 1, ngram: 'int' = 1, tokens: 'str' = 'words', min_tokens: 'int' = 5, arguments: 'Any' = 'exact', rules: 'Mapping[str, Any] | None' = None, name: 'str | None' = None) -> 'None'",
    "scorers.agents.permissions.ToolPermission": "(*, allow: 'Any' = None, deny: 'Any' = None, constraints: 'Any' = None, name: 'str | None' = None) -> 'None'",
    "scorers.agents.budgets.StepBudget": "(*, max_steps: 'int | None' = None, max_tool_calls: 'int | None' = None, hard_limits: 'Mapping[str, float] | None' = None, name: 'str | None' = None) -> 'None'",
    "scorers.agents.budgets.TokenBudget": "(*, max_input_tokens: 'int | None' = None, max_output_tokens: 'int | None' = None, max_total_tokens: 'int | None' = None, max_cost: 'float | None' = None, prices: 'Mapping[str, float] | None' = None, hard_limits: 'Mapping[str, float] | None' = None, name: 'str | None' = None) -> 'None'",
    "scorers.agents.tool_calls.ToolCallF1": "(*, multiset: 'bool' = True, name: 'str | None' = None) -> 'None'",
    "scorers.agents.tool_calls.ToolCallMatch": "(*, arguments: 'Any' = 'exact', rules: 'Mapping[str, Any] | None' = None, order: 'str' = 'any', extra_calls: 'str' = 'penalise', max_calls: 'int | None' = 1000, tool_kinds: 'str' = 'distinct', name: 'str | None' = None) -> 'None'",
    "scorers.agents.tool_calls.ToolCallValid": "(*, tools: 'Any' = None, timeout_s: 'float | None' = 1.0, name: 'str | None' = None) -> 'None'",
    "scorers.agents.tool_calls.TrajectoryMatch": "(*, mode: 'str' = 'strict', arguments: 'Any' = 'exact', rules: 'Mapping[str, Any] | None' = None, max_calls: 'int | None' = 1000, tool_kinds: 'str' = 'distinct', name: 'str | None' = None) -> 'None'",
    "scorers.code.scorer.CodeExecution": "(*, tests: 'Any' = None, language: 'str' = 'python', interpreter: 'str | None' = None, match: 'str' = 'rstrip', timeout_s: 'float | None' = 10.0, cpu_s: 'float | None' = 5.0, memory_mb: 'int' = 1024, file_mb: 'int' = 16, processes: 'int' = 32, output_kb: 'int' = 32, network: 'str' = 'deny', name: 'str | None' = None) -> 'None'",
    "scorers.embedding.bertscore.BERTScore": "(*, model_type: 'str | None' = None, num_layers: 'int | None' = None, idf: 'bool' = False, idf_sents: 'Sequence[str] | None' = None, lang: 'str' = 'en', rescale_with_baseline: 'bool' = False, baseline_path: 'str | None' = None, batch_size: 'int' = 64, device: 'str | None' = None, use_fast_tokenizer: 'bool' = False, allow_download: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.embedding.moverscore.MoverScore": "(*, model: 'str | None' = None, num_layers: 'int | None' = None, idf: 'bool' = False, idf_sents: 'Sequence[str] | None' = None, idf_output_sents: 'Sequence[str] | None' = None, stop_words: 'Sequence[str]' = (), score_map: 'str' = 'reciprocal', batch_size: 'int' = 256, device: 'str | None' = None, allow_download: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.embedding.similarity.EmbeddingSimilarity": "(*, provider: 'str' = 'local', model: 'str | None' = None, prefix: 'str' = '', expected_min: 'float' = 0.0, batch_size: 'int' = 64, device: 'str | None' = None, client: 'Any' = None, api_key: 'str | None' = None, base_url: 'str | None' = None, allow_download: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.text.Contains": "(*, ignore_case: 'bool' = False, mode: 'str' = 'any', name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.text.ExactMatch": "(*, ignore_case: 'bool' = False, strip: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.structured.JSONDiff": "(*, string_scorer: 'Scorer | str | None' = None, number_scorer: 'Scorer | str | None' = None, preserve_strings: 'bool' = False, max_chars: 'int | None' = 100000, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.text.Levenshtein": "(*, normalize: 'str | None' = None, max_chars: 'int | None' = 100000, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.structured.ListContains": "(*, pairwise_scorer: 'Scorer | str | type | None' = None, allow_extra_entities: 'bool' = False, max_items: 'int | None' = 1000, max_chars: 'int | None' = 100000, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.text.NumericDiff": "(*, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.regex.RegexMatch": "(*, pattern: 'str | None' = None, full: 'bool' = False, ignore_case: 'bool' = False, timeout_s: 'float | None' = 1.0, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.structured.ValidJSON": "(*, schema: 'dict[str, Any] | bool | None' = None, name: 'str | None' = None) -> 'None'",
    "scorers.judges.conversational.ArgumentCorrectness": "(*, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.conversational.ConversationCompleteness": "(*, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.conversational.KnowledgeRetention": "(*, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.conversational.TurnRelevancy": "(*, window: 'int' = 5, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.gptscore.GPTScore": "(*, aspect: 'str | None' = None, template: 'str' = 'Here is a request and a reply to it that is {aspect}.\\n\\nRequest: {input}\\n\\nReply: {output}', normalization: 'Normalization' = 'geometric_mean', model: 'str | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None) -> 'None'",
    "scorers.judges.rag.AnswerRelevancy": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: 'str | None' = None, extra_args: 'dict[str, Any] | None' = None, strip_reasoning: 'bool | None' = None) -> 'None'",
    "scorers.judges.rag.Bias": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: 'str | None' = None, extra_args: 'dict[str, Any] | None' = None, strip_reasoning: 'bool | None' = None) -> 'None'",
    "scorers.judges.rag.ContextPrecision": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: 'str | None' = None, extra_args: 'dict[str, Any] | None' = None, strip_reasoning: 'bool | None' = None) -> 'None'",
    "scorers.judges.rag.ContextRecall": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: 'str | None' = None, extra_args: 'dict[str, Any] | None' = None, strip_reasoning: 'bool | None' = None) -> 'None'",
    "scorers.judges.rag.ContextRelevancy": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: 'str | None' = None, extra_args: 'dict[str, Any] | None' = None, strip_reasoning: 'bool | None' = None) -> 'None'",
    "scorers.judges.rag.Faithfulness": "(*, idk_is_unfaithful: 'bool' = False, **settings: 'Any') -> 'None'",
    "scorers.judges.rag.Hallucination": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: 'str | None' = None, extra_args: 'dict[str, Any] | None' = None, strip_reasoning: 'bool | None' = None) -> 'None'",
    "scorers.judges.rag.Summarization": "(*, questions: 'int' = 5, **settings: 'Any') -> 'None'",
    "scorers.judges.rag.Toxicity": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: 'str | None' = None, extra_args: 'dict[str, Any] | None' = None, strip_reasoning: 'bool | None' = None) -> 'None'",
    "scorers.judges.selfcheck.SelfCheck": "(*, samples: 'int' = 3, sample_temperature: 'float' = 1.0, **settings: 'Any') -> 'None'",
    "scorers.text.bleu.BLEU": "(*, tokenize: 'str' = '13a', smooth_method: 'str' = 'exp', smooth_value: 'float | None' = None, lowercase: 'bool' = False, effective_order: 'bool' = True, max_ngram_order: 'int' = 4, strip_reasoning: 'bool' = True, name: 'str | None' = None) -> 'None'",
    "scorers.text.chrf.ChrF": "(*, char_order: 'int' = 6, word_order: 'int' = 0, beta: 'int' = 2, lowercase: 'bool' = False, whitespace: 'bool' = False, eps_smoothing: 'bool' = False, strip_reasoning: 'bool' = True, name: 'str | None' = None) -> 'None'",
    "scorers.text.meteor.METEOR": "(*, alpha: 'float' = 0.9, beta: 'float' = 3.0, gamma: 'float' = 0.5, preprocess: 'str' = 'lower', stemmer: 'str' = 'porter', synonyms: 'str' = 'wordnet', tokenizer: 'str' = 'nltk', strip_reasoning: 'bool' = True, name: 'str | None' = None) -> 'None'",
    "scorers.text.rouge.ROUGE": "(*, rouge_type: 'str' = 'rougeL', use_stemmer: 'bool' = False, tokenizer: 'str' = 'default', strip_reasoning: 'bool' = True, max_chars: \"int | Literal['auto'] | None\" = 'auto', name: 'str | None' = None) -> 'None'",
    "scorers.text.ter.TER": "(*, normalized: 'bool' = False, no_punct: 'bool' = False, asian_support: 'bool' = False, case_sensitive: 'bool' = False, strip_reasoning: 'bool' = True, max_chars: 'int | None' = 5000, max_steps: 'int | None' = 10000000, processes: 'int' = 1, name: 'str | None' = None) -> 'None'",
}


def _classes() -> dict[str, type]:
    scorers.names()  # plugins and templates loaded
    return {
        f"{e.scorer_class.__module__}.{e.scorer_class.__qualname__}": e.scorer_class
        for e in entries()
        if e.scorer_class
    }


@pytest.mark.parametrize("qualname", sorted(PINNED))
def test_every_registered_scorer_keeps_its_constructor_signature(qualname):
    assert str(inspect.signature(_classes()[qualname])) == PINNED[qualname]


def test_every_registered_scorer_class_is_pinned():
    assert sorted(_classes()) == sorted(PINNED)


class Toy(Scorer):
    """A scorer declaring one parameter of each kind the mechanism handles."""

    fields = (text_field("output"),)
    threshold: float = param("share that counts", default=0.5, ge=0, le=1)
    mode: str = param("how to count", default="any", choices=("any", "all"))
    limit: int | None = param("a bound that never changes a number", default=10, ge=1, signed=False)
    model: str = param("a required one")

    def __post_init__(self) -> None:
        if self.mode == "all" and self.limit is None:
            raise ConfigError(f"{self.name}: mode='all' needs a limit", scorer=self.name)
        self.derived = f"{self.model}/{self.mode}"

    def _score(self, *, output):
        return self.make_score(1.0)


def test_the_declarations_give_the_constructor_signature_params_and_options():
    assert str(inspect.signature(Toy)) == (
        "(*, threshold: 'float' = 0.5, mode: 'str' = 'any', limit: 'int | None' = 10, model: 'str', "
        "name: 'str | None' = None) -> 'None'"
    )
    toy = Toy(model="m", threshold=1)
    assert (toy.threshold, toy.mode, toy.limit, toy.derived) == (1, "any", 10, "m/any")  # checked, not converted
    assert toy.params() == {"threshold": 1, "mode": "any", "model": "m"}  # signed ones, in order
    assert toy.signature()["threshold"] == 1
    options = Toy.options()
    assert list(options) == ["threshold", "mode", "limit", "model"]
    assert (options["mode"].default, options["mode"].choices, options["mode"].help) == (
        "any",
        ("any", "all"),
        "how to count",
    )
    assert options["model"].required and not options["limit"].signed
    assert [o.allowed for o in options.values()] == [
        "a number in [0, 1]",
        "one of any, all",
        "a positive integer or None",
        "a string",
    ]
    assert Toy.threshold == 0.5 and not hasattr(Toy, "model")  # the defaults are the class attributes


@pytest.mark.parametrize(
    "params, message",
    [
        ({"threshold": 1.5}, "Toy: threshold must be a number in [0, 1], got 1.5"),
        ({"threshold": "high"}, "Toy: threshold must be a number in [0, 1], got 'high'"),
        ({"threshold": float("nan")}, "Toy: threshold must be a number in [0, 1], got nan"),
        ({"threshold": True}, "Toy: threshold must be a number in [0, 1], got True"),
        ({"mode": "some"}, "Toy: mode must be one of any, all, got 'some'"),
        ({"limit": 0}, "Toy: limit must be a positive integer or None, got 0"),
        ({"limit": 2.0}, "Toy: limit must be a positive integer or None, got 2.0"),
        ({"model": 3}, "Toy: model must be a string, got 3"),
        ({"mode": "all", "limit": None}, "Toy: mode='all' needs a limit"),
    ],
)
def test_a_wrong_value_is_a_config_error_naming_the_scorer_the_parameter_and_what_was_wrong(params, message):
    with pytest.raises(ConfigError, match="^" + re.escape(message) + "$") as info:
        Toy(**{"model": "m", **params})
    assert info.value.scorer == "Toy"


def test_unknown_and_missing_parameters_are_type_errors_that_the_registry_words():
    with pytest.raises(TypeError, match="unexpected keyword argument 'treshold'"):
        Toy(model="m", treshold=1)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'model'"):
        Toy()
    with pytest.raises(ConfigError, match=r"unknown parameter 'strp'; did you mean 'strip'\? \(parameters: "):
        scorers.get("ExactMatch", strp=True)


def test_a_subclass_inherits_the_declarations_and_one_with_its_own_constructor_keeps_its_signature():
    class Stricter(Toy):
        strict: bool = param("be strict", default=False)

    class Handwritten(Toy):
        def __init__(self, *, level: int = 1, name: str | None = None) -> None:
            super().__init__(model="fixed", name=name)
            self.level = level

    assert list(inspect.signature(Stricter).parameters) == ["threshold", "mode", "limit", "model", "strict", "name"]
    assert Stricter(model="m", strict=True).params() == {"threshold": 0.5, "mode": "any", "model": "m", "strict": True}
    assert str(inspect.signature(Handwritten)) == "(*, level: 'int' = 1, name: 'str | None' = None) -> 'None'"
    assert Handwritten(level=2).derived == "fixed/any"
    assert Handwritten.constructor_params() == ["level", "name"]


def test_show_lists_each_parameter_with_what_it_may_be_and_its_help():
    shown = describe(scorers.get("TER"))
    assert "  max_steps = 10000000  (a positive integer or None; not in the signature)\n" in shown
    assert "      most steps the edit search may take on a row; None: no limit\n" in shown
    assert '  sacrebleu_version = "' in shown  # what else enters the signature, after the declared ones
    assert "  word_order = 2  (a non-negative integer)" in describe(scorers.get("chrF++"))  # as registered
