"""autoevals' public names and call conventions over ``scorers``: ``from scorers.compat import autoevals``.

Every scorer here is computed by ours of the same name (heuristics, ``EmbeddingSimilarity``
with OpenAI embeddings, the LLM judges and our templates); ``Score`` has autoevals' ``error``,
``as_dict()`` and ``as_json()``; the judges take ``trace=`` for autoevals' thread variables.
Names of features we do not provide (RAGAS, ``Moderation``, LiteLLM clients, ``prepare_openai``) import and raise
:class:`~scorers.compat.autoevals.NotSupportedError` when used. Unknown options and ``None``
values raise instead of being ignored or shown as ``"None"``: see docs/autoevals.md
("Coming from autoevals").

>>> from scorers.compat import autoevals
>>> autoevals.Levenshtein.partial(expected="abcd")()("abc").score
0.75
>>> score = autoevals.NumericDiff()(9, 10)
>>> score.name, score.score, score.error, sorted(score.as_dict())
('NumericDiff', 0.9473684210526316, None, ['metadata', 'name', 'score'])
"""

from __future__ import annotations

from . import llm
from ._adapter import NotSupportedError
from .json import JSONDiff, ValidJSON
from .list import ListContains
from .litellm import AsyncLiteLLMClient, LiteLLMClient
from .llm import *  # noqa: F403  (the LLM judges: those llm.__all__ lists, added to ours below)
from .moderation import Moderation
from .number import NumericDiff
from .oai import get_default_embedding_model, get_default_model, init
from .ragas import (
    AnswerCorrectness,
    AnswerRelevancy,
    AnswerSimilarity,
    ContextEntityRecall,
    ContextPrecision,
    ContextRecall,
    ContextRelevancy,
    Faithfulness,
)
from .score import Score, Scorer
from .serializable_data_class import SerializableDataClass
from .string import EmbeddingSimilarity, Levenshtein, LevenshteinScorer
from .thread_utils import compute_thread_template_vars, template_uses_thread_variables
from .value import ExactMatch

__all__ = [
    "Score",
    "Scorer",
    "SerializableDataClass",
    "NotSupportedError",
    "init",
    "get_default_model",
    "get_default_embedding_model",
    "ExactMatch",
    "Levenshtein",
    "LevenshteinScorer",
    "NumericDiff",
    "JSONDiff",
    "ValidJSON",
    "ListContains",
    "EmbeddingSimilarity",
]
__all__ += llm.__all__
__all__ += [
    "Moderation",
    "ContextEntityRecall",
    "ContextRelevancy",
    "ContextRecall",
    "ContextPrecision",
    "Faithfulness",
    "AnswerRelevancy",
    "AnswerSimilarity",
    "AnswerCorrectness",
    "LiteLLMClient",
    "AsyncLiteLLMClient",
    "compute_thread_template_vars",
    "template_uses_thread_variables",
]
