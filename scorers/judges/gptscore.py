"""GPTScore: how likely a language model finds the output, given an instruction and the input (Fu et al., 2023).

The prompt is a template holding an instruction that names the wanted quality (``aspect``), the input and
then the output. A completions endpoint returns the log-probability of every prompt token given the tokens
before it (:mod:`scorers.llm.completions`: ``echo`` with ``logprobs``), and the score reads those of the
output's tokens only, ``log p(t_i | prompt before t_i)`` for ``i = 1..n``::

    avg_logprob = (1/n) Σ_i log p(t_i | ...)                    (the paper's GPTScore; in metadata)
    score       = exp(avg_logprob)          normalization="geometric_mean" (default): the geometric mean of
                                            the tokens' probabilities, 1/perplexity of the output
    score       = (1/n) Σ_i p(t_i | ...)    normalization="mean_probability": their arithmetic mean

Both maps are in [0, 1], higher meaning likelier (a value above 1 from a server's rounding is cut to 1). The
first keeps the order of ``avg_logprob`` exactly; the second weighs likely tokens more and may order two
outputs differently. ``metadata`` holds ``avg_logprob``, ``token_count`` (n)
and ``tokens`` (each output token with its log-probability). The output's tokens are those that hold one
of its characters (from the reply's ``text_offset``), so a token that also carries the space before the
output counts. The endpoint must return a prompt's log-probabilities (llama-cpp-python's server does; vLLM
and OpenAI's ``davinci-002`` document it); one that cannot is a :class:`~scorers.errors.ConfigError` saying so, never a
fallback. One request per row; replies are cached as the judges' are.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, TextCompletions
>>> with LoopbackLLM(completions=TextCompletions(logprob=lambda context, token: -0.25)) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     score = GPTScore(engine=engine)(input="What is 2 + 2?", output="It is 4.")
>>> round(score.score, 4), score.metadata["avg_logprob"], score.metadata["token_count"]
(0.7788, -0.25, 4)
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from typing import Any, Literal, Mapping

from ..errors import ConfigError, JudgeError, ScorerError, ScorerInputError
from ..fields import Field, text_field
from ..llm import ChatRequest, ChatResult, LLMEngine
from ..llm.completions import prompt_logprobs
from ..llm.usage import as_failed, call_usage, summed_usage
from ..registry import register
from ..score import Score
from .base import LLMJudge
from .needs import Need

__all__ = ["GPTScore", "DEFAULT_TEMPLATE", "DEFAULT_ASPECT", "NORMALIZATIONS"]

#: The default prompt: an instruction naming the aspect, the input, then the output (which must come last
#: but for trailing text, whose tokens are not scored).
DEFAULT_TEMPLATE = "Here is a request and a reply to it that is {aspect}.\n\nRequest: {input}\n\nReply: {output}"
#: The quality the default instruction asks for.
DEFAULT_ASPECT = "accurate, relevant, fluent and consistent with the request"
#: The maps of the average log-probability onto [0, 1] (see the module docstring).
NORMALIZATIONS = ("geometric_mean", "mean_probability")
Normalization = Literal["geometric_mean", "mean_probability"]

#: The placeholders a template may hold; ``{output}`` exactly once.
_PLACEHOLDER = re.compile(r"\{(input|expected|aspect|output)\}")
#: The fields a template's placeholders read, in the order they are declared.
_FIELD_NAMES = ("input", "expected")


@register
class GPTScore(LLMJudge):
    """GPTScore: the average log-probability of the output's tokens given an instruction and the input.

    ``score = exp(avg_logprob)`` (``normalization="geometric_mean"``) or the mean token probability
    (``"mean_probability"``); ``avg_logprob`` and ``token_count`` are in the metadata. ``template`` holds
    ``{output}`` once, after any of ``{input}``, ``{expected}`` and ``{aspect}`` (each field it names is
    required); ``aspect`` (default :data:`DEFAULT_ASPECT`) fills ``{aspect}``. ``model`` names the model of
    the completions endpoint (default: the engine's); requests go through ``engine`` or ``client``.
    """

    description = "Average log-probability of the output given an instruction and the input (GPTScore), as [0, 1]."
    judge_kind = "gptscore"
    fields: tuple[Field, ...] = (text_field("input", utf8=True), text_field("output", utf8=True))
    example = "scorers.get('GPTScore', model='davinci-002')(input='What is 2 + 2?', output='It is 4.')"
    requests_per_row = "1"
    #: None: GPTScore reads the prompt's log-probabilities, not a reply.
    response_modes = ()

    def __init__(
        self,
        *,
        aspect: str | None = None,
        template: str = DEFAULT_TEMPLATE,
        normalization: Normalization = "geometric_mean",
        model: str | None = None,
        engine: LLMEngine | None = None,
        client: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name, engine=engine, client=client, model=model)
        if not isinstance(template, str) or _PLACEHOLDER.findall(template).count("output") != 1:
            raise ConfigError(f"{self.name}: template must be text holding {{output}} exactly once", scorer=self.name)
        if template.startswith("{output}"):
            raise ConfigError(
                f"{self.name}: template must put an instruction before {{output}}: the text's first token has no "
                "log-probability",
                scorer=self.name,
            )
        named = set(_PLACEHOLDER.findall(template))
        if aspect is not None and (not isinstance(aspect, str) or not aspect.strip()):
            raise ConfigError(f"{self.name}: aspect must be non-empty text or None, got {aspect!r}", scorer=self.name)
        if aspect is not None and "aspect" not in named:
            raise ConfigError(f"{self.name}: aspect is given but the template has no {{aspect}}", scorer=self.name)
        if normalization not in NORMALIZATIONS:
            raise ConfigError(
                f"{self.name}: normalization must be one of {', '.join(NORMALIZATIONS)}, got {normalization!r}",
                scorer=self.name,
            )
        self.prompt_template = template
        self.aspect: str | None = (aspect if aspect is not None else DEFAULT_ASPECT) if "aspect" in named else None
        self.normalization: Normalization = normalization
        self.fields = (
            *(text_field(field, utf8=True) for field in _FIELD_NAMES if field in named),
            text_field("output", utf8=True),
        )

    def needs(self, response_mode: str | None = None) -> dict[str, Need]:
        """The prompt's log-probabilities, read from a completions endpoint, and nothing else."""
        return {"prompt_logprobs": Need("GPTScore (the output tokens' log-probabilities given the prompt)")}

    # ------------------------------------------------------------- describing
    def params(self) -> dict[str, Any]:
        """What decides the number: the model, the template (its hash), the aspect and the normalization."""
        return {
            "model": self._model_name(),
            "template": hashlib.sha256(self.prompt_template.encode()).hexdigest()[:16],
            "aspect": self.aspect,
            "normalization": self.normalization,
        }

    def render(self, fields: Mapping[str, Any]) -> tuple[str, int, int]:
        """The prompt of a row and where its output is in it: ``(prompt, start, end)``."""
        values = {**fields, "aspect": self.aspect}
        parts: list[str] = []
        start = end = 0
        at = 0
        for match in _PLACEHOLDER.finditer(self.prompt_template):
            parts.append(self.prompt_template[at : match.start()])
            if match.group(1) == "output":
                start = sum(map(len, parts))
                end = start + len(fields["output"])
            parts.append(values[match.group(1)])
            at = match.end()
        parts.append(self.prompt_template[at:])
        return "".join(parts), start, end

    # ---------------------------------------------------------------- scoring
    async def _run_row(
        self, fields: Mapping[str, Any], requests: list[ChatRequest], hits: list[ChatResult | None] | None
    ) -> Score | ScorerError:
        """Ask for the prompt's log-probabilities and score the output's tokens."""
        if not fields["output"]:
            raise ScorerInputError(self.name, "output", "is empty: GPTScore needs at least one token to score")
        prompt, start, end = self.render(fields)
        started = time.perf_counter()
        echoed = await prompt_logprobs(self.engine, prompt, model=self.model, scorer=self.name)
        scored = [(echoed.tokens[i], echoed.logprobs[i]) for i in echoed.span(start, end)]
        values = [value for _, value in scored if value is not None]
        if not values:
            error = JudgeError(
                f"{self.name}: no token of the output has a log-probability (tokens: {scored!r})", scorer=self.name
            )
            error.usage = {"model": echoed.model, **as_failed(call_usage(echoed))}
            return error
        average = math.fsum(values) / len(values)
        if self.normalization == "geometric_mean":
            value = math.exp(average)
        else:
            value = math.fsum(map(math.exp, values)) / len(values)
        return self.make_score(
            min(1.0, value),
            avg_logprob=average,
            token_count=len(values),
            tokens=[[token, logprob] for token, logprob in scored if logprob is not None],
            normalization=self.normalization,
            model=echoed.model,
            sent=dict(echoed.sent),
            usage=summed_usage([call_usage(echoed)]),
            latency_s=time.perf_counter() - started,
            attempts=echoed.attempts,
            cached=echoed.cached,
        )
