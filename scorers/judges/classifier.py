"""LLM judges: :class:`LLMClassifier` asks a model to pick one of a template's choices.

The prompt is rendered from a template (see :mod:`scorers.templates`) and sent to
an OpenAI-compatible chat-completions endpoint through the shared engine
(:mod:`scorers.llm`: cache, retries, concurrency limit, usage accounting). The
score is ``choice_scores[choice]``; an unusable reply is re-asked a bounded
number of times and then raises :class:`~scorers.errors.JudgeError` carrying the
raw reply — never a ``KeyError``, never a made-up score.

Response modes (``response_mode``), always recorded in the score's metadata:

``tools`` (default)
    one tool, ``select_choice``, forced through ``tool_choice``; its parameters
    are ``reasons`` (with chain of thought, placed first) and ``choice`` (an enum).
``json``
    a JSON-schema ``response_format`` with the same two properties.
``text``
    the choice alone on the reply's last line, read like OpenAI evals'
    model-graded classify (punctuation stripped, lines scanned from the end).

>>> judge = LLMClassifier("Polite", "Is this reply polite?\\n{{output}}", {"Yes": 1, "No": 0})
>>> [f.name for f in judge.fields], judge.choices
(['output'], ('Yes', 'No'))

Against an OpenAI-compatible server (here :class:`~scorers.testing.LoopbackLLM`, which
answers every request with the scripted reply):

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> with LoopbackLLM(default=Reply.choice("Yes", reasons="It thanks the reader.")) as server:
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     polite = LLMClassifier("Polite", "Is this reply polite?\\n{{output}}", {"Yes": 1, "No": 0}, engine=engine)
...     score = polite(output="Thanks a lot!")
...     batch = polite.score_batch([{"output": "Thanks!"}, {"output": "Go away."}])
>>> score.score, score.metadata["choice"], score.metadata["rationale"]
(1.0, 'Yes', 'It thanks the reader.')
>>> [s.score for s in batch], server.chat_requests[0].body["tool_choice"]["function"]["name"]
([1.0, 1.0], 'select_choice')
"""
from __future__ import annotations

import asyncio
import collections
import json
import os
import re
import string
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .._util import lazy
from ..aggregate import Aggregator, MeanAggregator
from ..base import Scorer
from ..fields import Field
from ..errors import ConfigError, ScorerError, ScorerInputError, UnknownArgumentError
from ..llm.engine import ChatRequest, ChatResult, InvalidReply, LLMEngine, NotPicklable
from ..llm.usage import ModelUsage, Usage
from ..score import Score
from .template import (RESPONSE_MODES, JudgeTemplate, Problem, _parse_choice_scores, _Problems, _render_value,
                        mustache_to_jinja)

__all__ = ["LLMClassifier", "JudgeAggregator", "Verdict", "parse_text_choice", "read_reply", "TOOL_NAME",
           "AGGREGATES"]

TOOL_NAME = "select_choice"
AGGREGATES = ("mean", "majority")

_REASONS_DESCRIPTION = ("Your reasoning, step by step, written before you decide: weigh the evidence first "
                        "and only then name the choice.")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


@dataclass(frozen=True)
class Verdict:
    """A usable judge reply: the choice and, with chain of thought, the reasons."""

    choice: str
    rationale: str | None = None


# ------------------------------------------------------------------- parsing
def _word_match(line: str, choice: str) -> bool:
    if line == choice:
        return True
    return bool(re.match(re.escape(choice) + r"(\s|$)", line) or re.search(r"(^|\s)" + re.escape(choice) + "$", line))


def parse_text_choice(text: str, choices: Sequence[str]) -> str | None:
    """The choice a free-text reply ends with, or ``None``.

    Lines are scanned from the end; each is stripped of punctuation and matched
    when it starts or ends with a choice as a whole word (case-sensitive), the
    way OpenAI evals' model-graded classify reads ``cot_classify`` answers.

    >>> parse_text_choice("The facts agree, and more is said.\\n**Answer: B**", "ABCDE")
    'B'
    >>> parse_text_choice("Actually, I am not sure.", "ABCDE") is None
    True
    """
    for line in reversed(text.strip().split("\n")):
        cleaned = " ".join(line.translate(_PUNCTUATION).split())
        if not cleaned:
            continue
        for choice in choices:
            if _word_match(cleaned, choice):
                return choice
    return None


def _strip_code_fence(text: str) -> str:
    match = re.fullmatch(r"\s*```(?:json)?\s*(.*?)\s*```\s*", text, re.S)
    return match.group(1) if match else text


def _verdict_from_arguments(arguments: str) -> tuple[str, Any]:
    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        raise InvalidReply(f"malformed JSON ({exc})") from exc
    if not isinstance(parsed, dict):
        raise InvalidReply("the JSON is not an object")
    choice = parsed.get("choice")
    if not isinstance(choice, str):
        raise InvalidReply("no 'choice' string in the reply")
    reasons = parsed.get("reasons")
    if isinstance(reasons, list):
        reasons = "\n".join(map(str, reasons))
    return choice.strip(), reasons if isinstance(reasons, str) else None


def read_reply(result: ChatResult, mode: str, choices: Sequence[str]) -> Verdict:
    """Read a judge reply in ``mode``; raises :class:`~scorers.llm.engine.InvalidReply` (the engine re-asks)."""
    if mode == "tools":
        if not result.tool_calls:
            raise InvalidReply(f"no tool call in the reply (content: {(result.content or '')[:200]!r})")
        call = result.tool_calls[0]
        if call.name != TOOL_NAME:
            raise InvalidReply(f"called tool {call.name!r} instead of {TOOL_NAME!r}")
        choice, rationale = _verdict_from_arguments(call.arguments)
    elif not result.content or not result.content.strip():
        raise InvalidReply("the reply has no text content")
    elif mode == "json":
        choice, rationale = _verdict_from_arguments(_strip_code_fence(result.content))
    else:
        text = result.content.strip()
        found = parse_text_choice(text, choices)
        if found is None:
            raise InvalidReply(f"no line of the reply starts or ends with one of {', '.join(choices)}")
        choice, rationale = found, (text.rsplit("\n", 1)[0].strip() if "\n" in text else None)
    if choice not in choices:
        raise InvalidReply(f"choice {choice!r} is not one of {', '.join(choices)}")
    return Verdict(choice, rationale)


# ------------------------------------------------------------------- the judge
class LLMClassifier(Scorer):
    """An LLM judge that picks one of ``choice_scores``; the score is the picked choice's value.

    ``prompt_template`` is mustache/Jinja text (``{{output}}``, ``{{expected}}``,
    ``{{input}}`` and any other variable, which becomes a field of the scorer);
    ``messages`` is a list of ``{"role", "content"}`` templates instead.
    ``samples=k`` asks k independent judgments (needs ``temperature > 0``) and
    aggregates them by ``mean`` or ``majority`` (ties go to the lowest score);
    ``agreement`` in the metadata is the share of samples that picked the modal choice.

    >>> judge = LLMClassifier("Grounded", "Is {{output}} supported by {{context}}?", {"Y": 1, "N": 0},
    ...                       use_cot=False, response_mode="json")
    >>> judge.required_fields(), judge.params()["response_mode"]
    (['output', 'context'], 'json')
    """

    kind = "llm"
    description = "LLM judge: the model picks one of the template's choices; the score is that choice's value."
    algorithm_version = "1"

    def __init__(self, name: str, prompt_template: str | None = None, choice_scores: Mapping[str, float] | None = None,
                 *, use_cot: bool = True, model: str | None = None, temperature: float | None = 0,
                 max_tokens: int | None = None, client: Any = None, response_mode: str = "tools", samples: int = 1,
                 aggregate: str = "mean", messages: Sequence[Mapping[str, str]] | None = None,
                 template: JudgeTemplate | None = None, max_reasks: int | None = None,
                 engine: LLMEngine | None = None, description: str | None = None) -> None:
        super().__init__(name=name)
        self.template = self._make_template(name, prompt_template, messages, template, choice_scores, description)
        scores = self.template.choice_scores
        if choice_scores is not None:
            scores = self._check_scores(choice_scores)
            if list(scores) != list(self.template.choices) and template is not None:
                raise ConfigError(f"{name}: choice_scores must cover exactly the template's choices "
                                  f"{list(self.template.choices)}", scorer=name)
        if scores is None:
            raise ConfigError(f"{name}: {self.template.where()} defines no choice_scores; pass "
                              f"choice_scores={{...}} for the choices {list(self.template.choices)}", scorer=name)
        self.choice_scores: dict[str, float] = dict(scores)
        self.choices: tuple[str, ...] = tuple(self.choice_scores)
        self.use_cot = _check(name, "use_cot", use_cot, isinstance(use_cot, bool), "True or False")
        self.model = _check(name, "model", model, model is None or (isinstance(model, str) and bool(model.strip())),
                            "a model name or None (the configured default)")
        self.temperature = _check(name, "temperature", temperature, temperature is None or (
            isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and 0 <= temperature <= 2),
            "a number in [0, 2] or None (not sent)")
        self.max_tokens = _check(name, "max_tokens", max_tokens, max_tokens is None or (
            isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0),
            "a positive integer or None")
        self.response_mode = _check(name, "response_mode", response_mode, response_mode in RESPONSE_MODES,
                                    " | ".join(RESPONSE_MODES))
        self.samples = _check(name, "samples", samples, isinstance(samples, int) and not isinstance(samples, bool)
                              and samples >= 1, "an integer >= 1")
        self.aggregate = _check(name, "aggregate", aggregate, aggregate in AGGREGATES, " | ".join(AGGREGATES))
        self.max_reasks = _check(name, "max_reasks", max_reasks, max_reasks is None or (
            isinstance(max_reasks, int) and not isinstance(max_reasks, bool) and 0 <= max_reasks <= 10),
            "an integer in [0, 10] or None (the engine's setting)")
        if samples > 1 and not temperature:
            raise ConfigError(f"{name}: samples={samples} needs temperature > 0: at temperature 0 the samples "
                              "are the same judgment repeated", scorer=name)
        if response_mode == "text":
            bad = [c for c in self.choices if c != c.translate(_PUNCTUATION) or c != " ".join(c.split())]
            if bad:
                raise ConfigError(f"{name}: response_mode='text' cannot read choices with punctuation or extra "
                                  f"spaces: {bad}", scorer=name)
        if engine is not None and (client is not None or max_reasks is not None):
            raise ConfigError(f"{name}: pass engine= or client=/max_reasks=, not both", scorer=name)
        self.client = client
        self._engine = engine
        self.engine = engine if engine is not None else LLMEngine(client=client, max_reasks=max_reasks)  # checks them
        self.description = " ".join((description or self.template.description or type(self).description).split())
        self.fields = tuple(Field(v, (object,), required=True, description=f"template variable {{{{{v}}}}}",
                                  convert=_text_or_data) for v in self.template.variables)
        self.example = f"scorers.get({name!r})({', '.join(f'{v}=...' for v in self.template.variables)})"

    @lazy
    def engine(self) -> LLMEngine:
        """The engine that sends this judge's requests: the one given, or one built from ``client``/``max_reasks``
        on first use (and again, lazily, in a process that unpickled the judge)."""
        if self._engine is not None:
            return self._engine
        return LLMEngine(client=self.client, max_reasks=self.max_reasks)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        if self.client is not None:  # copy.copy (partial) shares it; pickle raises a TypeError that says why
            state["client"] = NotPicklable(self.client, (
                f"{self.name}: a judge built with client= cannot be pickled (an openai client holds connections "
                "and locks); give it engine=LLMEngine(base_url=..., api_key=...), or rely on scorers.configure() "
                "or OPENAI_API_KEY/OPENAI_BASE_URL in the receiving process"))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(NotPicklable.unwrap_values(state))

    # ---------------------------------------------------------- construction
    @classmethod
    def from_template(cls, template: JudgeTemplate, **overrides: Any) -> "LLMClassifier":
        """Build from a :class:`~scorers.templates.JudgeTemplate`; keyword arguments win over its settings."""
        settings = {key: getattr(template, key) for key in ("use_cot", "model", "temperature", "max_tokens",
                                                            "response_mode") if getattr(template, key) is not None}
        settings.update(overrides)
        return cls(settings.pop("name", template.name), template=template, **settings)

    @staticmethod
    def _make_template(name: str, prompt: str | None, messages: Sequence[Mapping[str, str]] | None,
                       template: JudgeTemplate | None, choice_scores: Mapping[str, float] | None,
                       description: str | None) -> JudgeTemplate:
        given = [x is not None for x in (prompt, messages, template)]
        if sum(given) != 1:
            raise ConfigError(f"{name}: give exactly one of prompt_template, messages or template", scorer=name)
        if template is not None:
            return template
        if prompt is not None:
            if not isinstance(prompt, str) or not prompt.strip():
                raise ConfigError(f"{name}: prompt_template must be non-empty text", scorer=name)
            parts = (("user", mustache_to_jinja(prompt.strip())),)
        else:
            problems = _Problems("<messages>")
            from .template import _parse_messages

            parsed = _parse_messages(list(messages or []), problems)
            if parsed is None:
                raise ConfigError(f"{name}: invalid messages: " + "; ".join(f"{p.key}: {p.message}" for p in problems),
                                  scorer=name)
            parts = parsed
        scores = LLMClassifier._check_scores(choice_scores, name) if choice_scores is not None else None
        if scores is None:
            raise ConfigError(f"{name}: choice_scores is required", scorer=name)
        return JudgeTemplate(name=name, choice_scores=scores, messages=parts, description=description or "")

    @staticmethod
    def _check_scores(choice_scores: Mapping[str, float], name: str = "LLMClassifier") -> dict[str, float]:
        problems = _Problems("<choice_scores>")
        scores = _parse_choice_scores(choice_scores, problems)
        if scores is None:
            raise ConfigError(f"{name}: invalid choice_scores: " + "; ".join(_problem_text(p) for p in problems),
                              scorer=name)
        return scores

    # ------------------------------------------------------------- describing
    def params(self) -> dict[str, Any]:
        return {
            "model": self._model_name(),
            # the file's base name only: an absolute path would make signatures differ between machines
            "template": {"name": self.template.name, "hash": self.template.content_hash(),
                         "file": os.path.basename(self.template.file) if self.template.file else None},
            "choice_scores": self.choice_scores,
            "use_cot": self.use_cot,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_mode": self.response_mode,
            "samples": self.samples,
            "aggregate": self.aggregate,
        }

    def describe(self) -> dict[str, Any]:
        """What ``python -m scorers show`` prints for a judge: variables, choices and settings."""
        return {"name": self.name, "description": self.description, "variables": list(self.template.variables),
                "choice_scores": self.choice_scores, "template_file": self.template.file, **self.params()}

    def _model_name(self) -> str:
        return self.model if self.model is not None else self.engine.model

    def signature(self) -> dict[str, Any]:
        """As :meth:`Scorer.signature`, computed once per judge (and model): every Score gets a shallow copy."""
        key = (self._model_name(), self.name, self.use_cot, self.temperature, self.max_tokens, self.response_mode,
               self.samples, self.aggregate)
        memo = self.__dict__.get("_signature_memo")
        if memo is None or memo[0] != key:
            memo = self._signature_memo = (key, super().signature())
        return dict(memo[1])

    # --------------------------------------------------------------- requests
    def _instruction(self) -> str:
        options = ", ".join(self.choices)
        if self.response_mode == "tools":
            if self.use_cot:
                return (f"Answer by calling the {TOOL_NAME} function. Put your step-by-step reasoning in "
                        f"`reasons` first, then set `choice` to exactly one of: {options}.")
            return f"Answer by calling the {TOOL_NAME} function with `choice` set to exactly one of: {options}."
        if self.response_mode == "json":
            if self.use_cot:
                return ("Reply with a JSON object only. Its key \"reasons\" holds your step-by-step reasoning; "
                        f"its key \"choice\" comes after it and holds exactly one of: {options}.")
            return f"Reply with a JSON object only, with the key \"choice\" holding exactly one of: {options}."
        if self.use_cot:
            return (f"Reason step by step first. Then write your final answer, exactly one of {options}, alone on "
                    "the last line, with nothing else on it.")
        return f"Reply with exactly one of {options} and nothing else."

    def _schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        if self.use_cot:
            properties["reasons"] = {"type": "string", "description": _REASONS_DESCRIPTION}
        properties["choice"] = {"type": "string", "enum": list(self.choices), "description": "The selected choice."}
        return {"type": "object", "properties": properties, "required": list(properties),
                "additionalProperties": False}

    def _request_parts(self) -> tuple[str, Any, Any, Any]:
        """The instruction, tools, tool_choice and response_format: the same for every row, built once."""
        key = (self.response_mode, self.use_cot, self.choices)
        memo = self.__dict__.get("_parts_memo")
        if memo is None or memo[0] != key:
            tools = tool_choice = response_format = None
            if self.response_mode == "tools":
                tools = [{"type": "function", "function": {
                    "name": TOOL_NAME, "description": "Record the selected choice.", "parameters": self._schema()}}]
                tool_choice = {"type": "function", "function": {"name": TOOL_NAME}}
            elif self.response_mode == "json":
                response_format = {"type": "json_schema", "json_schema": {
                    "name": TOOL_NAME, "strict": True, "schema": self._schema()}}
            memo = self._parts_memo = (key, (self._instruction(), tools, tool_choice, response_format))
        return memo[1]

    def build_request(self, variables: Mapping[str, Any], sample: int | None = None) -> ChatRequest:
        """The request for one judgment; ``sample`` (the seed) makes self-consistency samples independent."""
        instruction, tools, tool_choice, response_format = self._request_parts()
        messages = self.template.render(variables)
        messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{instruction}"}
        return ChatRequest(messages=messages, model=self.model, tools=tools, tool_choice=tool_choice,
                           temperature=self.temperature, max_tokens=self.max_tokens,
                           response_format=response_format, seed=sample)

    def _requests(self, fields: Mapping[str, Any]) -> list[ChatRequest]:
        """The requests of one row: one, or one per self-consistency sample."""
        names = self.template.variables
        variables = {k: v for k, v in fields.items() if k in names}
        if self.samples == 1:
            return [self.build_request(variables)]
        return [self.build_request(variables, sample=i) for i in range(self.samples)]

    # ---------------------------------------------------------------- scoring
    def _bind(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """As :meth:`Scorer._bind`; a row without a template variable's value is that row's bad input
        (a :class:`~scorers.errors.ScorerInputError` naming the variable, the template and its file):
        a run goes on with the other rows. (A column no row has is caught by the runner's first-row
        check, a configuration error that stops the run.)"""
        try:
            return super()._bind(kwargs)
        except UnknownArgumentError:
            raise
        except ScorerInputError as exc:
            if exc.field in self.template.variables and exc.problem.startswith("is required"):
                raise ScorerInputError(self.name, exc.field, f"{exc.problem}: it is a template variable of "
                                                             f"{self.template.where()}") from exc
            raise

    async def _ascore(self, **fields: Any) -> Score:
        started = time.perf_counter()
        requests = self._requests(fields)
        if len(requests) == 1:
            judgments = [await self._judge(requests[0])]
        else:
            judgments = list(await asyncio.gather(*(self._judge(request) for request in requests)))
        return self._score_from(judgments, time.perf_counter() - started)

    async def _judge(self, request: ChatRequest, *, read_cache: bool = True) -> ChatResult:
        return await self.engine.complete(request, validate=self._validate, scorer=self.name, read_cache=read_cache)

    async def _ascore_batch(self, rows: list[dict[str, Any]], limit: asyncio.Semaphore) -> list[Score | ScorerError]:
        """Judge many rows: one Score or ScorerError per row, in order.

        Every row is rendered first and the cache is read once for the whole batch
        (:meth:`LLMEngine.lookup`): rows it answers are scored on the spot, without
        a task or a slot of ``limit``. Only the misses are sent, concurrently, each
        holding a slot of ``limit``. A row's Score is the one :meth:`__call__`
        gives, apart from ``cached``/``latency_s``. Once a row meets a
        :class:`~scorers.errors.ConfigError` (no API key, a key or model the
        endpoint refuses), the rows not yet sent get the same error without a request.
        """
        started = time.perf_counter()
        results: list[Score | ScorerError | None] = [None] * len(rows)
        prepared: list[tuple[int, list[ChatRequest]]] = []
        misses: list[tuple[int, list[ChatRequest], list[ChatResult | None]]] = []
        for index, row in enumerate(rows):
            try:
                prepared.append((index, self._requests(row)))
            except ScorerError as exc:
                results[index] = exc
        flat = [request for _, requests in prepared for request in requests]
        try:
            found = self.engine.lookup(flat, validate=self._validate)
        except ConfigError:  # e.g. no API key: each row raises it again below, as a per-row call would
            found = [None] * len(flat)
        lookup_latency = time.perf_counter() - started
        position = 0
        for index, requests in prepared:
            hits = found[position:position + len(requests)]
            position += len(requests)
            if None in hits:
                misses.append((index, requests, hits))
            else:
                results[index] = self._score_from(hits, lookup_latency)  # type: ignore[arg-type]
        if misses:
            refused: list[ConfigError] = []  # once the endpoint refuses the configuration, the rest are not sent

            async def ask(request: ChatRequest, hit: ChatResult | None) -> ChatResult:
                return hit if hit is not None else await self._judge(request, read_cache=False)

            async def one(requests: list[ChatRequest], hits: list[ChatResult | None]) -> Score | ScorerError:
                async with limit:
                    if refused:
                        return refused[0]
                    try:
                        asked = time.perf_counter()
                        if len(requests) == 1:
                            judgments = [await self._judge(requests[0], read_cache=False)]
                        else:
                            judgments = list(await asyncio.gather(*map(ask, requests, hits)))
                        return self._score_from(judgments, time.perf_counter() - asked)
                    except ConfigError as exc:
                        refused.append(exc)
                        return exc
                    except ScorerError as exc:
                        return exc

            outcomes = await asyncio.gather(*(one(requests, hits) for _, requests, hits in misses))
            for (index, _, _), outcome in zip(misses, outcomes):
                results[index] = outcome
        return results  # type: ignore[return-value]

    def _validate(self, result: ChatResult) -> Verdict:
        return read_reply(result, self.response_mode, self.choices)

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        verdicts: list[Verdict] = [r.parsed for r in results]
        if len(verdicts) == 1:  # one judgment: its choice is the mode and the mean
            modal, top = verdicts[0].choice, 1
            value = self.choice_scores[modal]
        else:
            counts = collections.Counter(v.choice for v in verdicts)
            top = max(counts.values())
            modal = min((c for c in counts if counts[c] == top),
                        key=lambda c: (self.choice_scores[c], self.choices.index(c)))
            if self.aggregate == "majority":
                value = self.choice_scores[modal]
            else:
                value = sum(self.choice_scores[v.choice] for v in verdicts) / len(verdicts)
        metadata: dict[str, Any] = {
            "choice": modal,
            "rationale": verdicts[0].rationale if len(verdicts) == 1 else [v.rationale for v in verdicts],
            "response_mode": self.response_mode,
            "model": results[0].model,
            "usage": _sum_usage(results),
            "latency_s": latency,
            "attempts": sum(r.attempts for r in results),
            "reasks": sum(r.reasks for r in results),
            "cached": all(r.cached for r in results),
        }
        if not self.use_cot:
            metadata.pop("rationale")
        if self.samples > 1:
            metadata.update(choices=[v.choice for v in verdicts], agreement=top / len(verdicts),
                            aggregate=self.aggregate, cached_samples=sum(r.cached for r in results))
        return self.make_score(value, **metadata)

    def aggregator(self) -> Aggregator:
        """Run summary: the usual figures plus token usage (and a cost estimate when prices are configured)."""
        return JudgeAggregator()


# -------------------------------------------------------------------- helpers
def _check(name: str, param: str, value: Any, ok: bool, expected: str) -> Any:
    if not ok:
        raise ConfigError(f"{name}: {param} must be {expected}, got {value!r}", scorer=name)
    return value


def _problem_text(problem: Problem) -> str:
    return f"{problem.key}: {problem.message}"


def _text_or_data(value: Any) -> Any:
    """Template variables may be text or JSON-like data (rendered as JSON); floats must be finite.

    A value the prompt cannot show is refused here, as bad input naming its field (a
    :class:`~scorers.errors.ScorerInputError` for its row), not later as a template error.
    """
    if type(value) is str:
        return value
    if isinstance(value, float) and value != value:
        raise ValueError("is NaN")
    try:
        _render_value(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot be shown in a judge prompt: {exc}") from None
    return value


def _sum_usage(results: Sequence[ChatResult]) -> dict[str, int]:
    """Billed tokens (a cached reply costs nothing) and how many calls the endpoint / the cache answered."""
    if len(results) == 1 and results[0].cached:
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0, "cached": 1}
    billed = [r for r in results if not r.cached]
    prompt = sum(r.prompt_tokens for r in billed)
    completion = sum(r.completion_tokens for r in billed)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "requests": len(billed), "cached": len(results) - len(billed)}


class JudgeAggregator(MeanAggregator):
    """:class:`MeanAggregator` plus ``usage``: tokens per model, cached calls and the cost estimate."""

    def __init__(self) -> None:
        super().__init__()
        self.usage = Usage()

    def add(self, score: Score) -> None:
        super().add(score)
        usage, model = score.metadata.get("usage"), score.metadata.get("model")
        if isinstance(usage, Mapping) and isinstance(model, str):
            entry = self.usage.by_model.setdefault(model, ModelUsage())
            entry.requests += int(usage.get("requests", 0))
            entry.cached += int(usage.get("cached", 0))
            entry.prompt_tokens += int(usage.get("prompt_tokens", 0))
            entry.completion_tokens += int(usage.get("completion_tokens", 0))

    def merge(self, other: Aggregator) -> "JudgeAggregator":
        """Fold in another shard's figures and token usage."""
        super().merge(other)
        assert isinstance(other, JudgeAggregator)
        self.usage.merge(other.usage)
        return self

    def result(self) -> dict[str, Any]:
        return {**super().result(), "usage": self.usage.to_dict()}
