"""SelfCheck: reference-free hallucination detection, after SelfCheckGPT's idea.

A model that knows a fact states it the same way when asked again; a made-up
detail drifts between samples. ``SelfCheck`` asks the judge model ``samples``
independent answers to ``input`` at ``sample_temperature`` (each cached on its own:
the request's ``seed`` and ``cache_tag`` differ), splits ``output`` into sentences
(one call), and asks, per sample, which sentences the sample supports (one call
per sample, a verdict per sentence). With ``s_ij`` = 1 when sample j supports
sentence i::

    score = mean over sentences i and samples j of s_ij      (higher is better)

An output with no sentence scores 1 (nothing in it is unsupported) and no sample is
drawn. The metadata holds the sentences, the samples, the per-sentence support
(``sentence_scores``) and the verdicts.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> def reply(request):
...     tools = request.body.get("tools")
...     if tools is None:
...         return Reply.text(f"Sample {request.body['seed']}: Paris is the capital of France.")
...     if tools[0]["function"]["name"] == "record_sentences":
...         return Reply.tool_call({"sentences": ["Paris is the capital.", "It has 90 million people."]},
...                                name="record_sentences")
...     return Reply.tool_call({"verdicts": [{"reason": "same", "verdict": "yes"},
...                                          {"reason": "not said", "verdict": "no"}]}, name="record_verdicts")
>>> with LoopbackLLM(default=reply) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     score = SelfCheck(samples=2, engine=engine)(input="Tell me about Paris.",
...                                                 output="Paris is the capital. It has 90 million people.")
>>> score.score, score.metadata["sentence_scores"], score.metadata["usage"]["requests"]
(0.5, [1.0, 0.0], 5)
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

from .._util import is_int, is_number
from ..errors import ConfigError
from ..fields import text_field
from ..llm import ChatResult, InvalidReply
from ..registry import register
from .rag import YES_NO, MultiStepJudge
from .reply import answer_text

__all__ = ["SelfCheck"]


def read_sample(result: ChatResult) -> str:
    """A sampled answer's text; raises :class:`InvalidReply` (re-asked) when it has none."""
    text = answer_text(result.content).strip()
    if not text:
        raise InvalidReply("the sampled answer has no text content")
    return text


@register
class SelfCheck(MultiStepJudge):
    """SelfCheck: the mean support of the output's sentences by ``samples`` answers sampled from the judge model.

    ``score = Σ_i Σ_j s_ij / (#sentences · samples)``, ``s_ij`` = 1 when sample j supports
    sentence i; no sentence scores 1. ``samples`` (default 3) answers are drawn at
    ``sample_temperature`` (default 1.0, > 0); ``temperature`` is that of the judging calls.
    """

    description = "Reference-free hallucination check: mean support of the output's sentences by sampled answers."
    fields = (text_field("input", utf8=True), text_field("output", utf8=True))
    steps = ("sample", "sentences", "support")
    example = "scorers.get('SelfCheck', samples=3)(input='Who was Ada Lovelace?', output='...')"

    def __init__(self, *, samples: int = 3, sample_temperature: float = 1.0, **settings: Any) -> None:
        super().__init__(**settings)
        if not is_int(samples) or not 1 <= samples <= 20:
            raise ConfigError(f"{self.name}: samples must be an integer in [1, 20], got {samples!r}", scorer=self.name)
        if not is_number(sample_temperature) or not 0 < sample_temperature <= 2:
            raise ConfigError(
                f"{self.name}: sample_temperature must be a number in (0, 2]: at temperature 0 the "
                f"samples repeat one answer, got {sample_temperature!r}",
                scorer=self.name,
            )
        self.samples = samples
        self.sample_temperature = float(sample_temperature)
        self.requests_per_row = (
            f"{1 + 2 * samples} (the sentences, then {samples} samples and a support check of each; "
            "1 when the output has no sentence)"
        )

    def kind_params(self) -> dict[str, Any]:
        return {"samples": self.samples, "sample_temperature": self.sample_temperature}

    async def _sample(self, question: str, index: int, calls: list[ChatResult]) -> str:
        request = self.step_request(
            "sample",
            {"input": question},
            None,
            sample=index,
            temperature=self.sample_temperature,
            cache_tag=f"selfcheck-sample-{index}",
        )
        return await self.step(request, read_sample, calls)

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        sentences = await self.extract("sentences", row["output"], "sentences", calls)
        if not sentences:
            return 1.0, {
                "sentences": [],
                "samples": [],
                "sentence_scores": [],
                "verdicts": [],
                "reason": "the output has no sentence, so none is unsupported",
            }
        drawn = await asyncio.gather(*(self._sample(row["input"], j, calls) for j in range(self.samples)))
        judged = await asyncio.gather(
            *(self.judge_items("support", sentences, YES_NO, calls, sample=sample) for sample in drawn)
        )
        support = [[verdicts[i].verdict == "yes" for verdicts in judged] for i in range(len(sentences))]
        sentence_scores = [sum(row_support) / self.samples for row_support in support]
        verdicts = [
            [{"verdict": v[i].verdict, **({"reason": v[i].reason} if v[i].reason is not None else {})} for v in judged]
            for i in range(len(sentences))
        ]
        return sum(sentence_scores) / len(sentences), {
            "sentences": list(sentences),
            "samples": list(drawn),
            "sentence_scores": sentence_scores,
            "verdicts": verdicts,
        }
