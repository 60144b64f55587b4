"""LLM judges: each kind a scorer whose settings are data (``templates/*.yaml``) or code.

Kinds (the template DSL's ``kind:``): :class:`LLMClassifier` (``classifier``: pick a choice),
:class:`RubricJudge` (``rubric``), :class:`RatingJudge` (``rating``), :class:`GEvalJudge`
(``geval``) and :class:`PairwiseJudge` (``pairwise``). A kind is one module: a spec model and a
:class:`TemplatedJudge` subclass naming it, which registers the kind (see :mod:`.base`); importing
the module is all it takes. The prompt data (:mod:`.template`), the spec model (:mod:`.spec`) and
the file formats (:mod:`.formats`) never import a judge; :mod:`.discovery` builds judges from
files and registers them.
"""

from . import conversational, gptscore, rag, selfcheck  # noqa: E402,F401  (registers their metrics)
from .base import JudgeAggregator, LLMJudge, ReplyFormat, TemplatedJudge
from .classifier import LLMClassifier, Verdict, parse_text_choice, read_reply
from .geval import GEvalJudge
from .pairwise import PairwiseJudge
from .rating import RatingJudge
from .rubric import RubricJudge

__all__ = [
    "LLMJudge",
    "TemplatedJudge",
    "LLMClassifier",
    "RubricJudge",
    "RatingJudge",
    "GEvalJudge",
    "PairwiseJudge",
    "JudgeAggregator",
    "ReplyFormat",
    "Verdict",
    "parse_text_choice",
    "read_reply",
]
