"""Scorer parameters declared once (scorers.params): the constructors they derive, validation, params(), options().

The pinned signatures are those of every registered scorer class before the parameters were declared once (the
explicit ``__init__`` of each): declaring them must not change what ``inspect.signature`` reports.
"""

from __future__ import annotations

import inspect

import pytest

import scorers
from scorers.registry import entries

#: ``str(inspect.signature(cls))`` of every registered scorer class, as the hand-written constructors gave it.
PINNED = {
    "scorers.agents.tool_calls.ToolCallF1": "(*, multiset: 'bool' = True, name: 'str | None' = None) -> 'None'",
    "scorers.agents.tool_calls.ToolCallMatch": "(*, arguments: 'Any' = 'exact', rules: 'Mapping[str, Any] | None' = None, order: 'str' = 'any', extra_calls: 'str' = 'penalise', max_calls: 'int | None' = 1000, name: 'str | None' = None) -> 'None'",
    "scorers.agents.tool_calls.ToolCallValid": "(*, tools: 'Any' = None, timeout_s: 'float | None' = 1.0, name: 'str | None' = None) -> 'None'",
    "scorers.agents.tool_calls.TrajectoryMatch": "(*, mode: 'str' = 'strict', arguments: 'Any' = 'exact', rules: 'Mapping[str, Any] | None' = None, max_calls: 'int | None' = 1000, name: 'str | None' = None) -> 'None'",
    "scorers.embedding.bertscore.BERTScore": "(*, model_type: 'str | None' = None, num_layers: 'int | None' = None, idf: 'bool' = False, idf_sents: 'Sequence[str] | None' = None, lang: 'str' = 'en', rescale_with_baseline: 'bool' = False, baseline_path: 'str | None' = None, batch_size: 'int' = 64, device: 'str | None' = None, use_fast_tokenizer: 'bool' = False, allow_download: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.embedding.moverscore.MoverScore": "(*, model: 'str | None' = None, num_layers: 'int | None' = None, idf: 'bool' = False, idf_sents: 'Sequence[str] | None' = None, idf_output_sents: 'Sequence[str] | None' = None, stop_words: 'Sequence[str]' = (), score_map: 'str' = 'reciprocal', batch_size: 'int' = 256, device: 'str | None' = None, allow_download: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.embedding.similarity.EmbeddingSimilarity": "(*, provider: 'str' = 'local', model: 'str | None' = None, prefix: 'str' = '', expected_min: 'float' = 0.0, batch_size: 'int' = 64, device: 'str | None' = None, client: 'Any' = None, api_key: 'str | None' = None, base_url: 'str | None' = None, allow_download: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.Contains": "(*, ignore_case: 'bool' = False, mode: 'str' = 'any', name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.ExactMatch": "(*, ignore_case: 'bool' = False, strip: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.JSONDiff": "(*, string_scorer: 'Scorer | str | None' = None, number_scorer: 'Scorer | str | None' = None, preserve_strings: 'bool' = False, max_chars: 'int | None' = 100000, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.Levenshtein": "(*, normalize: 'str | None' = None, max_chars: 'int | None' = 100000, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.ListContains": "(*, pairwise_scorer: 'Scorer | str | type | None' = None, allow_extra_entities: 'bool' = False, max_items: 'int | None' = 1000, max_chars: 'int | None' = 100000, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.NumericDiff": "(*, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.RegexMatch": "(*, pattern: 'str | None' = None, full: 'bool' = False, ignore_case: 'bool' = False, timeout_s: 'float | None' = 1.0, name: 'str | None' = None) -> 'None'",
    "scorers.heuristic.ValidJSON": "(*, schema: 'dict[str, Any] | bool | None' = None, name: 'str | None' = None) -> 'None'",
    "scorers.judges.conversational.ArgumentCorrectness": "(*, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.conversational.ConversationCompleteness": "(*, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.conversational.KnowledgeRetention": "(*, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.conversational.TurnRelevancy": "(*, window: 'int' = 5, max_conversation_tokens: 'int' = 128000, **settings: 'Any') -> 'None'",
    "scorers.judges.gptscore.GPTScore": "(*, aspect: 'str | None' = None, template: 'str' = 'Here is a request and a reply to it that is {aspect}.\\n\\nRequest: {input}\\n\\nReply: {output}', normalization: 'Normalization' = 'geometric_mean', model: 'str | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None) -> 'None'",
    "scorers.judges.rag.AnswerRelevancy": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: \"Literal['chat', 'responses'] | None\" = None, extra_args: 'dict[str, Any] | None' = None) -> 'None'",
    "scorers.judges.rag.Bias": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: \"Literal['chat', 'responses'] | None\" = None, extra_args: 'dict[str, Any] | None' = None) -> 'None'",
    "scorers.judges.rag.ContextPrecision": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: \"Literal['chat', 'responses'] | None\" = None, extra_args: 'dict[str, Any] | None' = None) -> 'None'",
    "scorers.judges.rag.ContextRecall": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: \"Literal['chat', 'responses'] | None\" = None, extra_args: 'dict[str, Any] | None' = None) -> 'None'",
    "scorers.judges.rag.ContextRelevancy": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: \"Literal['chat', 'responses'] | None\" = None, extra_args: 'dict[str, Any] | None' = None) -> 'None'",
    "scorers.judges.rag.Faithfulness": "(*, idk_is_unfaithful: 'bool' = False, **settings: 'Any') -> 'None'",
    "scorers.judges.rag.Hallucination": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: \"Literal['chat', 'responses'] | None\" = None, extra_args: 'dict[str, Any] | None' = None) -> 'None'",
    "scorers.judges.rag.Summarization": "(*, questions: 'int' = 5, **settings: 'Any') -> 'None'",
    "scorers.judges.rag.Toxicity": "(*, prompts: 'Mapping[str, str] | None' = None, max_reasks: 'int | None' = None, engine: 'LLMEngine | None' = None, client: 'Any' = None, name: 'str | None' = None, settings: 'RequestSettings | Mapping[str, Any] | None' = None, use_cot: 'bool | None' = True, model: 'str | None' = None, temperature: 'float | None' = 0, max_tokens: 'int | None' = None, response_mode: \"Literal['tools', 'json', 'json_object', 'text'] | None\" = 'tools', reasoning_effort: 'str | None' = None, api: \"Literal['chat', 'responses'] | None\" = None, extra_args: 'dict[str, Any] | None' = None) -> 'None'",
    "scorers.judges.selfcheck.SelfCheck": "(*, samples: 'int' = 3, sample_temperature: 'float' = 1.0, **settings: 'Any') -> 'None'",
    "scorers.text.bleu.BLEU": "(*, tokenize: 'str' = '13a', smooth_method: 'str' = 'exp', smooth_value: 'float | None' = None, lowercase: 'bool' = False, effective_order: 'bool' = True, max_ngram_order: 'int' = 4, name: 'str | None' = None) -> 'None'",
    "scorers.text.chrf.ChrF": "(*, char_order: 'int' = 6, word_order: 'int' = 0, beta: 'int' = 2, lowercase: 'bool' = False, whitespace: 'bool' = False, eps_smoothing: 'bool' = False, name: 'str | None' = None) -> 'None'",
    "scorers.text.meteor.METEOR": "(*, alpha: 'float' = 0.9, beta: 'float' = 3.0, gamma: 'float' = 0.5, preprocess: 'str' = 'lower', stemmer: 'str' = 'porter', synonyms: 'str' = 'wordnet', tokenizer: 'str' = 'nltk', name: 'str | None' = None) -> 'None'",
    "scorers.text.rouge.ROUGE": "(*, rouge_type: 'str' = 'rougeL', use_stemmer: 'bool' = False, tokenizer: 'str' = 'default', max_chars: \"int | Literal['auto'] | None\" = 'auto', name: 'str | None' = None) -> 'None'",
    "scorers.text.ter.TER": "(*, normalized: 'bool' = False, no_punct: 'bool' = False, asian_support: 'bool' = False, case_sensitive: 'bool' = False, max_chars: 'int | None' = 5000, max_steps: 'int | None' = 10000000, processes: 'int' = 1, name: 'str | None' = None) -> 'None'",
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
