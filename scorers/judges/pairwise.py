"""Pairwise judges: which of two outputs is better, ``output`` (shown first, as A) or ``other`` (B).

The template shows both: ``{{output}}`` and the field named by ``other`` (``{{expected}}``
by default). The model picks ``A``, ``B`` or (with ``allow_tie``) ``tie``; the score is
1 when ``output`` wins, 0 when the other does, 0.5 for a tie. With ``swap=True`` the
pair is also asked in the other order (``output`` shown second) and the score is the
mean of both judgments; the metadata then says whether the two agree and, when they
disagree because the same position won twice, the position the judge favoured.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> prompt = "Which answer is better?\\nA: {{output}}\\nB: {{expected}}"
>>> with LoopbackLLM(default=Reply.choice("A", reasons="A is first")) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     judge = PairwiseJudge("Preference", prompt, swap=True, engine=engine)
...     score = judge(output="Paris.", expected="It is Paris, in France.")
>>> score.score, score.metadata["choices"], score.metadata["agreement"], score.metadata["position_bias"]
(0.5, ['A', 'A'], False, 'first')
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError
from ..llm import ChatRequest, ChatResult
from ..score import Score
from .classifier import read_reply, reply_format
from .reply import ReplyFormat
from .spec import PairwiseSpec
from .templated import TemplatedJudge

__all__ = ["PairwiseJudge"]

#: What each pick is worth to ``output`` when it is shown first (A) and when it is shown second.
_FIRST = {"A": 1.0, "B": 0.0, "tie": 0.5}
_SECOND = {"A": 0.0, "B": 1.0, "tie": 0.5}


class PairwiseJudge(TemplatedJudge):
    """Compare ``output`` with the field ``other`` (default ``expected``); 1 = output wins, 0.5 tie, 0 loses."""

    description = "LLM judge: compares two outputs; 1 when output is preferred, 0 when the other is, 0.5 a tie."
    spec_model = PairwiseSpec
    max_tokens_default = (64, 1024)

    def _configure_kind(self, spec: Any) -> None:
        self.other: str = spec.other
        self.reasoning_fields = ("output", self.other)  # both answers are judged without their reasoning
        self.swap: bool = spec.swap
        if self.swap:
            self.requests_per_row = "2 (both orders)"
        self.allow_tie: bool = spec.allow_tie
        missing = [v for v in ("output", self.other) if v not in self.template.variables]
        if missing:
            raise ConfigError(
                f"{self.name}: a pairwise template must show both outputs; {self.template.where()} has no "
                f"{', '.join('{{' + m + '}}' for m in missing)}",
                scorer=self.name,
            )
        self.choices: tuple[str, ...] = ("A", "B", "tie") if self.allow_tie else ("A", "B")

    def _format(self) -> ReplyFormat:
        return reply_format(self.choices, self.use_cot)

    def _instruction(self) -> str:
        tie = " or tie when neither is better" if self.allow_tie else ""
        options = ", ".join(self.choices)
        if self.response_mode == "tools":
            first = "your step-by-step reasoning in `reasons` first, then " if self.use_cot else ""
            return (
                f"Answer by calling the select_choice function with {first}`choice` set to A when the first "
                f"answer is better, B when the second is{tie}."
            )
        if self.response_mode in ("json", "json_object"):
            first = 'the key "reasons" with your step-by-step reasoning first, then ' if self.use_cot else ""
            schema = (
                f" It must match this JSON schema: {self._format().schema_text()}"
                if self.response_mode == "json_object"
                else ""
            )
            return (
                f'Reply with a JSON object only, holding {first}the key "choice": A when the first answer is '
                f"better, B when the second is{tie}.{schema}"
            )
        lead = "Reason step by step first. Then write " if self.use_cot else "Write "
        return f"{lead}exactly one of {options} alone on the last line: A for the first answer, B for the second{tie}."

    def _requests(self, variables: Mapping[str, Any]) -> list[ChatRequest]:
        orders = [dict(variables)]
        if self.swap:
            orders.append({**variables, "output": variables[self.other], self.other: variables["output"]})
        return [self.build_request(order) for order in orders]

    def _validate(self, result: ChatResult) -> Any:
        return read_reply(result, self.response_mode, self.choices)

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        picks = [r.parsed.choice for r in results]
        values = [_FIRST[picks[0]]] + ([_SECOND[picks[1]]] if len(picks) > 1 else [])
        value = sum(values) / len(values)
        winner = "output" if value > 0.5 else "other" if value < 0.5 else "tie"
        metadata: dict[str, Any] = {"winner": winner, "choices": picks}
        if self.swap:
            metadata["agreement"] = values[0] == values[1]
            metadata["position_bias"] = "first" if picks == ["A", "A"] else "second" if picks == ["B", "B"] else None
        if self.use_cot:
            metadata["rationale"] = [r.parsed.rationale for r in results] if self.swap else results[0].parsed.rationale
        return self.make_score(value, **metadata, **self.call_metadata(results, latency))
