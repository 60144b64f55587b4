"""Rubric judges: several named criteria on one integer scale, graded in one structured call.

The reply is one JSON object (a forced ``grade_rubric`` tool call, or a JSON response
format) with one integer per criterion (an ``enum`` of the scale's values in the schema) and,
with chain of thought, a ``reasons`` text before them. The score is the weighted mean
of ``(v - min) / (max - min)``; with ``threshold`` (on the scale) ``passed`` says
whether the weighted mean of the raw values reaches it.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> criteria = [{"name": "concise", "description": "No needless words."},
...             {"name": "accurate", "description": "Agrees with the source.", "weight": 2}]
>>> with LoopbackLLM(default=Reply.tool_call({"reasons": "short, one slip", "concise": 5, "accurate": 4},
...                                          name="grade_rubric")) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     judge = RubricJudge("Summary", "Source: {{input}}\\nSummary: {{output}}", criteria=criteria,
...                         threshold=4.5, engine=engine)
...     score = judge(input="A long text.", output="A text.")
>>> round(score.score, 4), score.metadata["criteria"], score.metadata["passed"]
(0.8333, {'concise': 5, 'accurate': 4}, False)
"""

from __future__ import annotations

from typing import Any

from .._util import is_int
from ..llm import ChatResult, InvalidReply
from ..score import Score
from .reply import REASONS_DESCRIPTION, ReplyFormat, reasons_text
from .spec import Criterion, RubricSpec, Scale
from .template import JudgeTemplate
from .templated import TemplatedJudge

__all__ = ["RubricJudge"]

TOOL_NAME = "grade_rubric"


class RubricJudge(TemplatedJudge):
    """Grade named criteria on an integer scale in one call; score = weighted mean of the normalised values.

    ``criteria`` is a list of ``{"name", "description", "anchors": {value: text}, "weight"}``;
    ``scale`` is ``{"min": 1, "max": 5}`` by default; ``threshold`` (on the scale) adds ``passed``.
    Response modes: ``tools``, ``json``, ``json_object`` (a rubric needs a structured reply).
    """

    description = "LLM judge: grades named criteria on an integer scale; the score is their weighted mean."
    spec_model = RubricSpec
    max_tokens_default = (200, 1200)
    response_modes = ("tools", "json", "json_object")

    def _spec_fields(self, name: str, template: JudgeTemplate | None, fields: dict[str, Any]) -> dict[str, Any]:
        return {**fields, "criteria": list(fields["criteria"])}

    def _configure_kind(self, spec: Any) -> None:
        self.criteria: tuple[Criterion, ...] = tuple(spec.criteria)
        self.scale: Scale = spec.scale
        self.threshold: float | None = spec.threshold

    def _format(self) -> ReplyFormat:
        properties: dict[str, Any] = {}
        if self.use_cot:
            properties["reasons"] = {"type": "string", "description": REASONS_DESCRIPTION}
        for criterion in self.criteria:
            properties[criterion.name] = self.scale.schema(criterion.description)
        return ReplyFormat(
            TOOL_NAME,
            "Record one grade per criterion.",
            {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False},
        )

    def _instruction(self) -> str:
        lines = [
            f"Grade the answer on each criterion below with a whole number from {self.scale.min} "
            f"(worst) to {self.scale.max} (best)."
        ]
        for criterion in self.criteria:
            lines.append(f"- {criterion.name}: {criterion.description}")
            for value, text in sorted((criterion.anchors or {}).items()):
                lines.append(f"    {value}: {text}")
        names = ", ".join(f"`{c.name}`" for c in self.criteria)
        first = "your step-by-step reasoning in `reasons` first, then " if self.use_cot else ""
        if self.response_mode == "tools":
            lines.append(f"Answer by calling the {TOOL_NAME} function with {first}one integer for each of {names}.")
        else:
            lines.append(f"Reply with a JSON object only, holding {first}one integer for each of {names}.")
            if self.response_mode == "json_object":
                lines.append(f"It must match this JSON schema: {self._format().schema_text()}")
        return "\n".join(lines)

    def _validate(self, result: ChatResult) -> tuple[dict[str, int], str | None]:
        parsed = self._format().read(result, self.response_mode)
        grades: dict[str, int] = {}
        for criterion in self.criteria:
            value = parsed.get(criterion.name)
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if not is_int(value):
                raise InvalidReply(f"no integer grade for criterion {criterion.name!r} (got {value!r})")
            if not self.scale.min <= value <= self.scale.max:
                raise InvalidReply(
                    f"grade {value} for {criterion.name!r} is outside the scale [{self.scale.min}, {self.scale.max}]"
                )
            grades[criterion.name] = value
        return grades, reasons_text(parsed.get("reasons"))

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        grades, rationale = results[0].parsed
        total = sum(c.weight for c in self.criteria)
        raw = sum(c.weight * grades[c.name] for c in self.criteria) / total
        value = sum(c.weight * self.scale.normalise(grades[c.name]) for c in self.criteria) / total
        metadata: dict[str, Any] = {"criteria": grades, "mean_grade": raw}
        if self.threshold is not None:
            metadata["passed"] = raw >= self.threshold
        if self.use_cot:
            metadata["rationale"] = rationale
        return self.make_score(min(1.0, max(0.0, value)), **metadata, **self.call_metadata(results, latency))
