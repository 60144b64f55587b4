"""scorers: score the outputs of LLM applications.

One registry of scorers sharing one keyword interface,
``scorer(output=..., expected=..., input=..., **vars) -> Score``.

>>> import scorers
>>> scorers.get("ExactMatch")(output="Paris", expected="Paris").score
1.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util import lazy
from ._version import __version__
from .aggregate import Aggregator, MeanAggregator, StatsAggregator
from .attachments import Attachment
from .base import Scorer
from .errors import (
    ConfigError,
    DataError,
    JudgeError,
    JudgeRefused,
    MissingExtraError,
    PositionalArgumentError,
    ScorerError,
    ScorerInputError,
    TemplateError,
    UnknownArgumentError,
    UnknownScorerError,
)
from .fields import Field, references_field, text_field
from .params import param
from .registry import Registry, entries, get, names, register, registry
from .score import Score, ScoreColumn

# Importing the families registers their scorers; heavy libraries load on first use.
from . import agents as _agents  # noqa: E402,F401  # isort: skip
from . import code as _code  # noqa: E402,F401  # isort: skip
from . import embedding as _embedding  # noqa: E402,F401  # isort: skip
from . import heuristic as _heuristic  # noqa: E402,F401  # isort: skip
from . import text as _text  # noqa: E402,F401  # isort: skip
from .heuristic import ExactMatch, JSONDiff, Levenshtein, ListContains, NumericDiff, ValidJSON  # noqa: E402
from .run import Run, RunResult  # noqa: E402
from .runner import Evaluation, RowResult, Summary, aevaluate, evaluate  # noqa: E402

if TYPE_CHECKING:
    from .judges import LLMClassifier
    from .llm import configure


def _load_judges(registry: Registry) -> None:
    """The judges (pydantic, the OpenAI client's settings: most of ``import scorers``) load on the registry's
    first miss or listing, or on ``import scorers.judges``; then the templates/*.yaml register."""
    from .judges import discovery

    discovery.install()


registry.add_loader(_load_judges)

__all__ = [
    "__version__",
    "Score",
    "ScoreColumn",
    "Scorer",
    "Attachment",
    "param",
    "Field",
    "text_field",
    "references_field",
    "Aggregator",
    "MeanAggregator",
    "StatsAggregator",
    "Evaluation",
    "Run",
    "RunResult",
    "lazy",
    "get",
    "names",
    "entries",
    "register",
    "registry",
    "evaluate",
    "configure",
    "LLMClassifier",
    "aevaluate",
    "meta_evaluate",
    "compare",
    "RowResult",
    "Summary",
    "ExactMatch",
    "Levenshtein",
    "NumericDiff",
    "JSONDiff",
    "ValidJSON",
    "ListContains",
    "ScorerError",
    "ScorerInputError",
    "UnknownArgumentError",
    "PositionalArgumentError",
    "ConfigError",
    "MissingExtraError",
    "UnknownScorerError",
    "TemplateError",
    "JudgeError",
    "JudgeRefused",
    "DataError",
]


def __getattr__(name: str) -> object:
    """``compare`` and ``meta_evaluate`` load :mod:`scorers.stats` (numpy, scipy), ``LLMClassifier`` and
    ``configure`` the judges, on first use, not at import."""
    if name in ("compare", "meta_evaluate"):
        from . import stats

        return getattr(stats, name)
    if name == "LLMClassifier":
        from .judges import LLMClassifier

        return LLMClassifier
    if name == "configure":
        from .llm import configure

        return configure
    raise AttributeError(f"module 'scorers' has no attribute {name!r}")
