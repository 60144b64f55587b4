"""G-Eval judges: criteria → evaluation steps → a score on a scale, weighted by the score token's probabilities.

``steps`` are given, or generated once per judge (template and model) by one call
whose reply the cache pins: later runs with the same template and model reuse them,
and every Score carries them in its metadata. Then each row is one form-filling call.

``score_mode`` (explicit; never a silent fallback from one to the other):

``logprobs``
    asks for ``top_logprobs`` alternatives of every token; at the score token (the first
    token that is a whole number on the scale) the score is ``Σ s·p(s) / Σ p(s)`` over the
    alternatives that are whole numbers on the scale with ``p >= min_prob``, then mapped
    onto [0, 1] as ``(s - min) / (max - min)``. An endpoint or model that returns no
    logprobs, or no alternatives with them, is an :class:`~scorers.llm.EndpointConfigError` (the run
    stops); a score token with no alternative on the scale with ``p >= min_prob`` is the row's
    :class:`~scorers.errors.JudgeError`.
``top_token``
    the number the model wrote, mapped onto [0, 1].
``sampling``
    for endpoints without log-probabilities (Anthropic's, Bedrock's, many OpenAI-compatible servers): ``samples``
    (k >= 2) independent judgments per row at ``temperature`` (> 0, required), each its own seed and cache entry;
    the score is the mean of the k written numbers mapped onto [0, 1], the empirical estimate of the weighted
    score. The metadata holds each sample's number, the empirical distribution over the scale and a 95 % Wilson
    interval of the mean (:mod:`scorers.judges.sampled`). k requests per row.

Response modes: ``text`` (the reply is the number) and ``json``/``json_object`` (``{"score": n}``);
``tools`` too with ``top_token``.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> reply = Reply.text("4", top_logprobs=[{"4": -0.2231, "3": -1.6094, "x": -2.0}])  # p(4) = 0.8, p(3) = 0.2
>>> with LoopbackLLM(default=reply) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     judge = GEvalJudge("Coherence", "Summary: {{output}}", criteria="Is the summary well organised?",
...                        steps=["Read the summary.", "Check that each sentence follows from the last."],
...                        scale={"min": 1, "max": 5}, response_mode="text", engine=engine)
...     score = judge(output="First this. Then that.")
>>> round(score.metadata["expected_score"], 3), round(score.score, 3)
(3.8, 0.7)
"""

from __future__ import annotations

import asyncio
import math
import re
import types
import weakref
from typing import Any, Mapping

from .._util import is_int, lazy
from ..llm import ChatRequest, ChatResult, InvalidReply, TokenLogprob
from ..reasoning import reasoning_end
from ..score import Score
from .base import judge_error
from .needs import Need
from .rating import parse_text_rating
from .reply import ReplyFormat, answer_text
from .sampled import interval, shares
from .spec import GEvalSpec, Scale
from .template import JudgeTemplate
from .templated import TemplatedJudge

__all__ = ["GEvalJudge", "STEPS_TOOL"]

TOOL_NAME = "record_score"
STEPS_TOOL = "record_steps"


class GEvalJudge(TemplatedJudge):
    """G-Eval: evaluation steps for ``criteria`` (given or generated once), then a probability-weighted score."""

    description = "LLM judge (G-Eval): evaluation steps, then a score on a scale weighted by its token probabilities."
    spec_model = GEvalSpec
    max_tokens_default = (16, 16)
    response_modes = ("text", "json", "json_object", "tools")
    request_defaults = types.MappingProxyType({"temperature": 0, "response_mode": "text"})
    fixed_settings = types.MappingProxyType({"use_cot": False})  # the steps are the reasoning; the reply is the score

    def _spec_fields(self, name: str, template: JudgeTemplate | None, fields: dict[str, Any]) -> dict[str, Any]:
        steps = fields["steps"]
        return {**fields, "steps": None if steps is None else list(steps)}

    def _configure_kind(self, spec: Any) -> None:
        self.criteria: str = spec.criteria
        self.steps: tuple[str, ...] | None = None if spec.steps is None else tuple(spec.steps)
        if self.steps is None:
            self.requests_per_row = "1, and 1 more once per judge and model to write the evaluation steps"
        self.scale: Scale = spec.scale
        self.score_mode: str = spec.score_mode
        self.top_logprobs: int = spec.top_logprobs
        self.min_prob: float = spec.min_prob
        self.samples: int = spec.samples
        if self.score_mode == "sampling":
            self.requests_per_row = f"{self.samples} (independent samples)" + (
                ", and 1 more once per judge and model to write the evaluation steps" if self.steps is None else ""
            )

    def needs(self, response_mode: str | None = None) -> dict[str, Need]:
        """As every judge's, plus the reply's log-probabilities for ``score_mode='logprobs'``; the steps are
        asked for as a JSON object in ``text`` mode when not given."""
        mode = self.response_mode if response_mode is None else response_mode
        needs = super().needs(mode)
        if mode == "text" and self.spec.steps is None:
            needs["json_object"] = Need("writing the evaluation steps (steps not given)", "steps=[...]")
        if self.spec.score_mode == "logprobs":
            needs["logprobs"] = Need(
                "score_mode='logprobs' (the probability-weighted score)",
                "score_mode='sampling' (its estimate from samples=k judgments at a temperature > 0) or "
                "score_mode='top_token'",
            )
        return needs

    def kind_params(self) -> dict[str, Any]:
        """As every kind's; ``top_logprobs`` and ``min_prob`` are ``None`` unless ``score_mode`` is ``logprobs``,
        ``samples`` is there only with ``sampling`` (the signature of the other modes is as before it existed)."""
        params = super().kind_params()
        if self.score_mode != "logprobs":
            params.update(top_logprobs=None, min_prob=None)
        if self.score_mode != "sampling":
            del params["samples"]
        return params

    # ------------------------------------------------------------------ steps
    def _steps_request(self) -> ChatRequest:
        fmt = ReplyFormat(
            STEPS_TOOL,
            "Record the evaluation steps.",
            {
                "type": "object",
                "properties": {"steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
                "required": ["steps"],
                "additionalProperties": False,
            },
        )
        mode = "json_object" if self.response_mode == "text" else self.response_mode
        tools, tool_choice, response_format = fmt.request_parts(mode)
        ask = (
            f"You will grade texts on this criterion, from {self.scale.min} to {self.scale.max}:\n"
            f"{self.criteria}\n\nWrite the evaluation steps a careful grader follows, as a short list of "
            "imperative sentences."
        )
        ask += (
            f" Answer by calling the {STEPS_TOOL} function."
            if mode == "tools"
            else f" Reply with a JSON object only, matching this JSON schema: {fmt.schema_text()}"
        )
        return self.request(
            [{"role": "user", "content": ask}],
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            max_tokens=600,
            cache_tag="geval-steps",
        )

    def _read_steps(self, result: ChatResult) -> tuple[str, ...]:
        mode = "json_object" if self.response_mode == "text" else self.response_mode
        parsed = ReplyFormat(STEPS_TOOL, "", {}).read(result, mode)
        steps = parsed.get("steps")
        if not isinstance(steps, list) or not steps or not all(isinstance(s, str) and s.strip() for s in steps):
            raise InvalidReply("no non-empty list of step texts under 'steps'")
        return tuple(s.strip() for s in steps)

    async def _prepare(self) -> None:
        """Generate the evaluation steps once (cached per template and model) unless they were given: batches that
        start together share the one request (a failed one is made again by the next batch)."""
        if self.steps is None and "_generated_steps" not in self.__dict__:
            loop = asyncio.get_running_loop()
            call = self._steps_calls.get(loop)
            if call is None:
                call = self._steps_calls[loop] = loop.create_task(
                    self._judge(self._steps_request(), validate=self._read_steps)
                )
                call.add_done_callback(lambda done: self._steps_calls.pop(loop, None))
            result = await asyncio.shield(call)
            self._generated_steps: tuple[str, ...] = result.parsed

    @lazy
    def _steps_calls(self) -> "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[ChatResult]]":
        """The steps request in flight, per event loop (not pickled)."""
        return weakref.WeakKeyDictionary()

    def evaluation_steps(self) -> tuple[str, ...]:
        """The steps in use: given, or generated (after the first row)."""
        return self.steps if self.steps is not None else self.__dict__.get("_generated_steps", ())

    # ------------------------------------------------------------ form-filling
    def _format(self) -> ReplyFormat:
        return ReplyFormat(
            TOOL_NAME,
            "Record the score.",
            {
                "type": "object",
                "properties": {"score": self.scale.schema("The score.")},
                "required": ["score"],
                "additionalProperties": False,
            },
        )

    def _instruction(self) -> str:
        steps = "\n".join(f"{i}. {step}" for i, step in enumerate(self.evaluation_steps(), 1))
        span = f"a whole number from {self.scale.min} to {self.scale.max}"
        head = f"Evaluation criteria:\n{self.criteria}\n\nEvaluation steps:\n{steps}\n\n"
        if self.response_mode == "text":
            return head + f"Reply with the score only: {span}, nothing else."
        if self.response_mode == "tools":
            return head + f"Answer by calling the {TOOL_NAME} function with `score` set to {span}."
        schema = (
            f" It must match this JSON schema: {self._format().schema_text()}"
            if self.response_mode == "json_object"
            else ""
        )
        return head + f'Reply with a JSON object only, holding the key "score" set to {span}.{schema}'

    def _requests(self, variables: Mapping[str, Any]) -> list[ChatRequest]:
        tools, tool_choice, response_format = self._format().request_parts(self.response_mode)
        logprobs = self.score_mode == "logprobs"
        messages = self.render(variables, self._instruction())
        seeds: list[int | None] = list(range(self.samples)) if self.score_mode == "sampling" else [None]
        return [
            self.request(
                messages,
                tools=tools,
                tool_choice=tool_choice,
                response_format=response_format,
                sample=seed,
                logprobs=logprobs,
                top_logprobs=self.top_logprobs if logprobs else None,
            )
            for seed in seeds
        ]

    def _validate(self, result: ChatResult) -> int:
        if self.response_mode == "text":
            written = parse_text_rating(answer_text(result.content))
        else:
            written = self._format().read(result, self.response_mode).get("score")
        if not is_int(written) or not self.scale.min <= written <= self.scale.max:
            raise InvalidReply(
                f"no whole-number score on the scale [{self.scale.min}, {self.scale.max}] in the "
                f"reply (got {written!r})"
            )
        if self.score_mode == "logprobs":
            self._score_token(result)
        return written

    def _score_token(self, result: ChatResult) -> TokenLogprob:
        """The reply's first token that is a whole number on the scale, after its reasoning (a number inside
        ``<think>`` is not the score); :class:`InvalidReply` when none is."""
        skip, at = reasoning_end(result.content or ""), 0
        for token in result.logprobs or ():
            at += len(token.token)
            if at > skip and _on_scale(token.token, self.scale) is not None:
                return token
        raise InvalidReply("no token of the reply is a whole number on the scale, so its logprobs cannot be read")

    def _weighted(self, result: ChatResult) -> tuple[float, dict[str, float]]:
        """The expected score over the score token's alternatives on the scale, and their probabilities; a
        :class:`JudgeError` when no alternative is on the scale with ``p >= min_prob`` (the engine refuses a
        reply whose tokens carry no alternatives, so the written token is never taken as certain)."""
        token = self._score_token(result)
        weights: dict[int, float] = {}
        for alternative, logprob in token.top:
            value = _on_scale(alternative, self.scale)
            p = math.exp(logprob)
            if value is not None and p >= self.min_prob:
                weights[value] = weights.get(value, 0.0) + p
        total = math.fsum(weights.values())
        if not total > 0:
            shown = ", ".join(f"{alternative!r}: {math.exp(logprob):.3g}" for alternative, logprob in token.top)
            raise judge_error(
                self,
                f"no alternative of the score token {token.token!r} is a whole number on the scale "
                f"[{self.scale.min}, {self.scale.max}] with probability >= min_prob {self.min_prob} "
                f"(alternatives: {shown}), so there is no distribution to weigh",
                result,
            )
        expected = math.fsum(value * p for value, p in weights.items()) / total
        return expected, {str(value): p / total for value, p in sorted(weights.items())}

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        if self.score_mode == "sampling":
            return self._sampled_score(results, latency)
        written = results[0].parsed
        distribution = None
        expected = float(written)
        if self.score_mode == "logprobs":
            expected, distribution = self._weighted(results[0])
        metadata: dict[str, Any] = {
            "score_mode": self.score_mode,
            "written_score": written,
            "expected_score": expected,
            "steps": list(self.evaluation_steps()),
            "steps_generated": self.steps is None,
        }
        if distribution is not None:
            metadata["probabilities"] = distribution
        value = min(1.0, max(0.0, self.scale.normalise(expected)))
        return self.make_score(value, **metadata, **self.call_metadata(results, latency))

    def _sampled_score(self, results: list[ChatResult], latency: float) -> Score:
        """The mean of the k sampled numbers, mapped onto [0, 1], with their empirical distribution and the
        Wilson interval of the mean (:mod:`scorers.judges.sampled`)."""
        sampled: list[int] = [result.parsed for result in results]
        k, span = len(sampled), range(self.scale.min, self.scale.max + 1)
        value = math.fsum(self.scale.normalise(s) for s in sampled) / k
        metadata: dict[str, Any] = {
            "score_mode": self.score_mode,
            "samples": k,
            "temperature": self.temperature,
            "sampled_scores": sampled,
            "expected_score": math.fsum(sampled) / k,
            "probabilities": shares(sampled, span),
            "score_interval": interval(value * k, k, method="wilson_bounded"),
            "cached_samples": sum(result.cached for result in results),
            "steps": list(self.evaluation_steps()),
            "steps_generated": self.steps is None,
        }
        return self.make_score(value, **metadata, **self.call_metadata(results, latency))


def _on_scale(token: str, scale: Scale) -> int | None:
    text = token.strip().strip('"')
    if not re.fullmatch(r"-?\d+", text):
        return None
    value = int(text)
    return value if scale.min <= value <= scale.max else None
