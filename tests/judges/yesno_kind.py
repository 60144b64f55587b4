"""A toy judge kind, ``yesno``, in one module: issue 16's "adding a kind is one new module and nothing else".

A spec model (the YAML keys, validated and in the JSON Schema) and a judge class that names it:
defining the class registers the kind (``kind: yesno`` in templates, ``scorers.judges.spec.KINDS``,
the schema, ``scorers.judges.discovery.build_judge``, ``python -m scorers check``). Nothing else
in the package names it. ``tests/judges/test_kind_module.py`` imports it and forgets it after.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from scorers.judges import REASONS_DESCRIPTION, ReplyFormat, TemplatedJudge, TemplateSpec, reasons_text
from scorers.llm import ChatResult, InvalidReply
from scorers.score import Score

TOOL_NAME = "record_answer"
_Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class YesNoSpec(TemplateSpec):
    """``kind: yesno`` — the model answers yes or no; the score is ``yes_score`` or ``no_score``."""

    kind: Literal["yesno"]
    yes_score: _Share = 1.0
    no_score: _Share = 0.0


class YesNoJudge(TemplatedJudge):
    """Ask a yes/no question; score ``yes_score`` for yes, ``no_score`` for no."""

    description = "Toy LLM judge: the model answers yes or no."
    spec_model = YesNoSpec
    max_tokens_default = (32, 1024)
    response_modes = ("tools", "json", "json_object")

    def _configure_kind(self, spec: Any) -> None:
        self.yes_score: float = spec.yes_score
        self.no_score: float = spec.no_score

    def _format(self) -> ReplyFormat:
        properties: dict[str, Any] = {}
        if self.use_cot:
            properties["reasons"] = {"type": "string", "description": REASONS_DESCRIPTION}
        properties["answer"] = {"type": "string", "enum": ["yes", "no"]}
        return ReplyFormat(
            TOOL_NAME,
            "Record the answer.",
            {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False},
        )

    def _instruction(self) -> str:
        if self.response_mode == "tools":
            return f"Answer by calling the {TOOL_NAME} function with `answer` set to yes or no."
        return f"Reply with a JSON object only, matching this JSON schema: {self._format().schema_text()}"

    def _validate(self, result: ChatResult) -> tuple[str, str | None]:
        parsed = self._format().read(result, self.response_mode)
        answer = parsed.get("answer")
        if answer not in ("yes", "no"):
            raise InvalidReply(f"answer must be yes or no, got {answer!r}")
        return answer, reasons_text(parsed.get("reasons"))

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        answer, rationale = results[0].parsed
        value = self.yes_score if answer == "yes" else self.no_score
        return self.make_score(value, answer=answer, rationale=rationale, **self.call_metadata(results, latency))
