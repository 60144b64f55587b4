"""Rating judges: "rate from min to max"; the score is ``(r - min) / (max - min)``.

In ``tools``/``json``/``json_object`` modes the reply is a ``rating`` integer (with
chain of thought, ``reasons`` first); in ``text`` mode the rating is the last whole
number of the reply's last non-empty line.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> with LoopbackLLM(default=Reply.tool_call({"reasons": "clear but long", "rating": 7}, name="record_rating")) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     judge = RatingJudge("Clarity", "How clear is this answer?\\n{{output}}", scale={"min": 1, "max": 10},
...                         engine=engine)
...     score = judge(output="It is what it is.")
>>> round(score.score, 4), score.metadata["rating"]
(0.6667, 7)
"""

from __future__ import annotations

import re
from typing import Any

from .._util import is_int
from ..llm import ChatResult, InvalidReply
from ..score import Score
from .reply import REASONS_DESCRIPTION, ReplyFormat, answer_text, reasons_text
from .spec import RatingSpec, Scale
from .templated import TemplatedJudge

__all__ = ["RatingJudge", "parse_text_rating"]

TOOL_NAME = "record_rating"


def parse_text_rating(text: str) -> int | None:
    """The last whole number on the last non-empty line of ``text`` (``"Rating: 7/10"`` reads 7), or ``None``.

    >>> parse_text_rating("Mostly right.\\n**Rating: 8**"), parse_text_rating("Rating: 7/10"), parse_text_rating("n/a")
    (8, 7, None)
    """
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    line = re.sub(r"/\s*\d+\s*\W*$", "", lines[-1])  # "7/10" → "7"
    numbers = re.findall(r"(?<![\d.])-?\d+(?![\d.])", line)
    return int(numbers[-1]) if numbers else None


class RatingJudge(TemplatedJudge):
    """Rate on an integer ``scale`` (``{"min": lo, "max": hi}``); score ``(r - lo) / (hi - lo)``."""

    description = "LLM judge: rates on an integer scale; the score is the rating mapped onto [0, 1]."
    spec_model = RatingSpec
    max_tokens_default = (32, 1024)

    def _configure_kind(self, spec: Any) -> None:
        self.scale: Scale = spec.scale

    def _format(self) -> ReplyFormat:
        properties: dict[str, Any] = {}
        if self.use_cot:
            properties["reasons"] = {"type": "string", "description": REASONS_DESCRIPTION}
        properties["rating"] = self.scale.schema("The rating.")
        return ReplyFormat(
            TOOL_NAME,
            "Record the rating.",
            {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False},
        )

    def _instruction(self) -> str:
        span = f"a whole number from {self.scale.min} (worst) to {self.scale.max} (best)"
        if self.response_mode == "tools":
            first = "your step-by-step reasoning in `reasons` first, then " if self.use_cot else ""
            return f"Answer by calling the {TOOL_NAME} function with {first}`rating` set to {span}."
        if self.response_mode in ("json", "json_object"):
            first = 'the key "reasons" with your step-by-step reasoning first, then ' if self.use_cot else ""
            schema = (
                f" It must match this JSON schema: {self._format().schema_text()}"
                if self.response_mode == "json_object"
                else ""
            )
            return f'Reply with a JSON object only, holding {first}the key "rating" set to {span}.{schema}'
        if self.use_cot:
            return f"Reason step by step first. Then write your rating, {span}, alone on the last line."
        return f"Reply with your rating only: {span}."

    def _validate(self, result: ChatResult) -> tuple[int, str | None]:
        if self.response_mode == "text":
            text = answer_text(result.content).strip()
            rating = parse_text_rating(text)
            rationale = text.rsplit("\n", 1)[0].strip() if "\n" in text else None
        else:
            parsed = self._format().read(result, self.response_mode)
            rating, rationale = parsed.get("rating"), reasons_text(parsed.get("reasons"))
            if isinstance(rating, float) and rating.is_integer():
                rating = int(rating)
        if not is_int(rating):
            raise InvalidReply(f"no integer rating in the reply (got {rating!r})")
        if not self.scale.min <= rating <= self.scale.max:
            raise InvalidReply(f"rating {rating} is outside the scale [{self.scale.min}, {self.scale.max}]")
        return rating, rationale

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        rating, rationale = results[0].parsed
        metadata: dict[str, Any] = {"rating": rating}
        if self.use_cot:
            metadata["rationale"] = rationale
        return self.make_score(self.scale.normalise(rating), **metadata, **self.call_metadata(results, latency))
