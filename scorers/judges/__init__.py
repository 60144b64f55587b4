"""LLM judges: each kind a scorer whose settings are data (``templates/*.yaml``) or code.

Kinds: :class:`LLMClassifier` (pick a choice), and the kinds of the template DSL's ``kind:``.
The template (:mod:`.template`: prompt data and rendering), the spec model (:mod:`.spec`) and the
file formats (:mod:`.formats`) never import a judge; :mod:`.discovery` registers template files.
"""
from .base import JudgeAggregator, LLMJudge, ReplyFormat
from .classifier import LLMClassifier, Verdict, parse_text_choice, read_reply

__all__ = ["LLMJudge", "LLMClassifier", "JudgeAggregator", "ReplyFormat", "Verdict", "parse_text_choice",
           "read_reply"]
