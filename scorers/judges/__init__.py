"""LLM judges: each kind a scorer whose settings are data (``templates/*.yaml``) or code.

Kinds (the template DSL's ``kind:``): :class:`LLMClassifier` (``classifier``: pick a choice),
:class:`RubricJudge` (``rubric``), :class:`RatingJudge` (``rating``), :class:`GEvalJudge`
(``geval``) and :class:`PairwiseJudge` (``pairwise``). A kind is one module: a spec model (a
:class:`TemplateSpec` subclass with ``kind: Literal["<kind>"]``) and a :class:`TemplatedJudge`
subclass naming it, which registers the kind in :data:`KIND_CLASSES` (see :mod:`.templated`);
importing the module is all it takes (a plugin package names it in the ``scorers.judge_kinds``
entry-point group). Everything an extension needs is imported from here:

>>> from scorers.judges import KIND_CLASSES, TemplateSpec, TemplatedJudge
>>> KIND_CLASSES.get("rating").spec_model.__name__, issubclass(KIND_CLASSES.get("rating"), TemplatedJudge)
('RatingSpec', True)

The prompt data (:mod:`.template`), the spec models (:mod:`.spec`) and the file formats
(:mod:`.formats`) never import a judge; :mod:`.discovery` builds judges from files and registers
them. :mod:`.base` is what every judge shares (:class:`LLMJudge`), :mod:`.reply` what a judge asks
the model to reply, :mod:`.templated` and :mod:`.parameters` the template kinds' base and
constructors.
"""

from . import conversational, gptscore, rag, selfcheck  # noqa: E402,F401  (registers their metrics)
from .base import JudgeAggregator, LLMJudge, judge_error
from .classifier import LLMClassifier, Verdict, parse_text_choice, read_reply
from .geval import GEvalJudge
from .jury import Jury
from .pairwise import PairwiseJudge
from .rating import RatingJudge
from .reply import REASONS_DESCRIPTION, ReplyFormat, reasons_text
from .rubric import RubricJudge
from .spec import KIND_CLASSES, Criterion, RequestSettings, Scale, TemplateSpec
from .templated import TemplatedJudge

__all__ = [
    "LLMJudge",
    "TemplatedJudge",
    "LLMClassifier",
    "RubricJudge",
    "RatingJudge",
    "GEvalJudge",
    "PairwiseJudge",
    "Jury",
    "JudgeAggregator",
    "ReplyFormat",
    "Verdict",
    "parse_text_choice",
    "read_reply",
    "TemplateSpec",
    "RequestSettings",
    "Scale",
    "Criterion",
    "KIND_CLASSES",
    "REASONS_DESCRIPTION",
    "reasons_text",
    "judge_error",
]
