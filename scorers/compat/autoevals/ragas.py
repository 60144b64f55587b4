"""autoevals' RAGAS scorers: not provided; the names stay importable and raise when used.

>>> Faithfulness()(output="a", input="q", context="c")
Traceback (most recent call last):
...
scorers.compat.autoevals._adapter.NotSupportedError: autoevals' Faithfulness is not provided by scorers; use an LLMClassifier template written for the question (see `python -m scorers list --kind llm`)
"""

from __future__ import annotations

from ._adapter import Unsupported
from .llm import OpenAILLMScorer

__all__ = [
    "OpenAILLMScorer",
    "ContextEntityRecall",
    "ContextRelevancy",
    "ContextRecall",
    "ContextPrecision",
    "Faithfulness",
    "AnswerRelevancy",
    "AnswerSimilarity",
    "AnswerCorrectness",
]


class _Ragas(Unsupported):
    instead = "an LLMClassifier template written for the question (see `python -m scorers list --kind llm`)"


class ContextEntityRecall(_Ragas):
    """Not provided."""


class ContextRelevancy(_Ragas):
    """Not provided."""


class ContextRecall(_Ragas):
    """Not provided."""


class ContextPrecision(_Ragas):
    """Not provided."""


class Faithfulness(_Ragas):
    """Not provided."""


class AnswerRelevancy(_Ragas):
    """Not provided."""


class AnswerSimilarity(_Ragas):
    """Not provided: ``EmbeddingSimilarity`` computes the same number (its score is named ``EmbeddingSimilarity``)."""

    instead = "EmbeddingSimilarity"


class AnswerCorrectness(_Ragas):
    """Not provided."""
