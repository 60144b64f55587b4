"""RAG and reference-free judges: extract items with one call, judge them with another, compute the formula in code.

Every metric here is a :class:`MultiStepJudge`. A row runs a short, fixed chain of
calls, each sent through the judge's engine (cached, retried, bounded, counted):

1. **extract** a list of items (claims, statements, sentences, opinions) with one call;
2. **judge** every item with **one** call that returns a list of verdicts aligned to
   the items (a reply whose list has another length is unusable and re-asked);
3. compute the score from the verdicts, in code.

Metrics and formulas (a verdict is yes, no or idk, where idk means the judge could not tell):

- ``Faithfulness``: claims of ``output`` against ``context``, ``#(verdict ≠ no) / #claims``
  (``idk_is_unfaithful=True``: ``#yes / #claims``).
- ``AnswerRelevancy``: statements of ``output`` relevant to ``input``, ``#(verdict ≠ no) / #statements``.
- ``ContextPrecision``: per chunk of ``context`` in rank order, useful for reaching ``expected``?
  Average precision ``(1/R)·Σ_{k relevant} (#relevant in top k)/k``; R = 0 scores 0.
- ``ContextRecall``: sentences of ``expected`` attributable to ``context``, ``#yes / #sentences``.
- ``ContextRelevancy``: statements of every chunk relevant to ``input``, ``#yes / #statements``.
- ``Hallucination``: context items the output contradicts, ``#yes / #contexts`` (lower is better).
- ``Summarization``: ``min(alignment, coverage)`` of a summary (``output``) of a source (``input``).
- ``Bias``, ``Toxicity``: opinions of ``output`` judged biased / toxic, ``#yes / #opinions`` (lower is better).
- ``SelfCheck`` (:mod:`scorers.judges.selfcheck`): sentences of ``output`` supported by sampled answers.

An empty extraction is a defined case, never a division by zero: a metric that counts
errors (Faithfulness, Hallucination, Bias, Toxicity, SelfCheck) scores its best value,
one that counts what was found (relevancy, precision, recall, coverage, alignment)
scores 0; ``metadata["reason"]`` says why. Every score's metadata holds
``higher_is_better``, the items and their verdicts (with reasons under chain of
thought), and the usage summed over the row's calls.

``context`` is one text or a list of retrieved chunks (rank order), read by
:func:`~scorers.fields.references_field`. The step prompts are package data
(``scorers/judges/prompts/rag/<step>.md``, mustache variables); ``prompts={step: text}``
replaces any of them, with the same variables, and their hashes enter the signature.

>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> claims = Reply.tool_call({"claims": ["Paris is in France.", "Paris has 9 million people."]},
...                          name="record_claims")
>>> verdicts = Reply.tool_call({"verdicts": [{"reason": "stated", "verdict": "yes"},
...                                          {"reason": "the context says 2 million", "verdict": "no"}]},
...                            name="record_verdicts")
>>> with LoopbackLLM(default=verdicts) as server:
...     _ = server.script(claims, match=lambda request: "record_claims" in str(request.body["tools"]))
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     score = Faithfulness(engine=engine)(output="Paris, in France, has 9 million people.",
...                                         context=["Paris is the capital of France.", "Paris has 2 million people."])
>>> score.score, [v["verdict"] for v in score.metadata["verdicts"]], score.metadata["usage"]["requests"]
(0.5, ['yes', 'no'], 2)
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable, ClassVar, Mapping, Sequence

from .._util import is_int, lazy, memoize
from ..errors import ConfigError, JudgeError
from ..fields import Field, references_field, text_field
from ..llm import ChatRequest, ChatResult, InvalidReply, LLMEngine
from ..registry import register
from ..score import Score
from .base import LLMJudge
from .reply import REASONS_DESCRIPTION, ReplyFormat
from .spec import RequestSettings
from .template import JudgeTemplate, mustache_to_jinja

__all__ = [
    "MultiStepJudge",
    "ItemVerdict",
    "Faithfulness",
    "AnswerRelevancy",
    "ContextPrecision",
    "ContextRecall",
    "ContextRelevancy",
    "Hallucination",
    "Summarization",
    "Bias",
    "Toxicity",
    "step_prompt",
]

PROMPT_DIR = "prompts/rag"
YES_NO = ("yes", "no")
YES_NO_IDK = ("yes", "no", "idk")


@memoize
def step_prompt(step: str, directory: str = PROMPT_DIR) -> str:
    """The built-in prompt (mustache text) of ``step``, read from the package's ``<directory>/<step>.md``
    (``prompts/rag/`` by default; a judge's :attr:`MultiStepJudge.prompt_dir`)."""
    return resources.files("scorers.judges").joinpath(directory).joinpath(f"{step}.md").read_text("utf-8").strip()


@dataclass(frozen=True)
class ItemVerdict:
    """The judge's verdict on one item, and its reason under chain of thought."""

    verdict: str
    reason: str | None = None


def numbered(items: Sequence[str]) -> str:
    """Items as a numbered list, the form every step prompt shows them in.

    >>> print(numbered(["a", "b"]))
    1. a
    2. b
    """
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))


def _chunks(context: Sequence[str]) -> str:
    return "\n\n".join(f"[{i}] {chunk}" for i, chunk in enumerate(context, 1))


def context_field() -> Field:
    """``context``: a retrieved chunk or a list of chunks in rank order (read by :func:`references_field`)."""
    return references_field(
        "context", utf8=True, description="retrieved context: one text, or a list of chunks in rank order"
    )


class MultiStepJudge(LLMJudge):
    """Base of the multi-step judges: settings, step prompts, one call per step, concurrent rows.

    A subclass declares ``fields``, its ``steps`` (prompt file names) and implements
    ``_evaluate(row, calls) -> (score, metadata)``, awaiting :meth:`extract` and
    :meth:`judge_items` (or :meth:`step`), each of which appends its call's result to ``calls``.
    Parameters: ``model``, ``temperature``, ``max_tokens`` (the output budget of every
    call; default 1024, 2048 with chain of thought), ``response_mode`` (``tools`` |
    ``json`` | ``json_object``), ``use_cot`` (a ``reason`` before each verdict),
    ``reasoning_effort``, ``api``, ``extra_args``, ``prompts`` (``{step: mustache text}``
    replacing built-in step prompts), and how requests are sent: ``engine`` or
    ``client``/``max_reasks``.
    """

    judge_kind = "multistep"
    max_tokens_default = (1024, 2048)
    response_modes = ("tools", "json", "json_object")
    #: The step prompts the metric uses (file names under :attr:`prompt_dir` without ``.md``).
    steps: ClassVar[tuple[str, ...]] = ()
    #: Where the built-in step prompts are, in the package ``scorers.judges``.
    prompt_dir: ClassVar[str] = PROMPT_DIR

    def __init__(
        self,
        *,
        prompts: Mapping[str, str] | None = None,
        max_reasks: int | None = None,
        engine: LLMEngine | None = None,
        client: Any = None,
        name: str | None = None,
        settings: RequestSettings | Mapping[str, Any] | None = None,
        **request: Any,
    ) -> None:
        super().__init__(name, engine=engine, client=client, max_reasks=max_reasks, settings=settings, **request)
        self.prompts: dict[str, str] = self._prompts(prompts or {})
        self._templates  # compiles every step prompt now: a syntax error is a ConfigError of the constructor

    def _prompts(self, given: Mapping[str, str]) -> dict[str, str]:
        unknown = sorted(set(given) - set(self.steps))
        if unknown:
            raise ConfigError(
                f"{self.name}: prompts for unknown steps {unknown}; its steps are {', '.join(self.steps)}",
                scorer=self.name,
            )
        for step, text in given.items():
            if not isinstance(text, str) or not text.strip():
                raise ConfigError(f"{self.name}: prompts[{step!r}] must be non-empty text", scorer=self.name)
        return {step: given.get(step, step_prompt(step, self.prompt_dir)).strip() for step in self.steps}

    @lazy
    def _templates(self) -> dict[str, JudgeTemplate]:
        """One compiled template per step (rebuilt after unpickling); a prompt may use only its step's variables."""
        templates = {}
        for step, text in self.prompts.items():
            template = JudgeTemplate(
                name=f"{self.name}.{step}", choice_scores=None, messages=(("user", mustache_to_jinja(text)),)
            )
            allowed = JudgeTemplate(
                name=step,
                choice_scores=None,
                messages=(("user", mustache_to_jinja(step_prompt(step, self.prompt_dir))),),
            ).variables
            extra = [v for v in template.variables if v not in allowed]
            if extra:
                raise ConfigError(
                    f"{self.name}: prompts[{step!r}] uses {extra}, which the step does not fill; "
                    f"its variables are {list(allowed)}",
                    scorer=self.name,
                )
            templates[step] = template
        return templates

    # ------------------------------------------------------------- describing
    def prompt_params(self) -> dict[str, Any]:
        """Each step prompt's hash (the signature's ``prompts``)."""
        return {
            "prompts": {step: hashlib.sha256(text.encode()).hexdigest()[:16] for step, text in self.prompts.items()}
        }

    def describe(self) -> dict[str, Any]:
        """What ``python -m scorers show`` prints: the docstring (the formula), variables and settings."""
        return {
            **super().describe(),
            "description": inspect.cleandoc(type(self).__doc__ or ""),
            "higher_is_better": self.higher_is_better,
        }

    # --------------------------------------------------------------- requests
    def _step_instruction(self, fmt: ReplyFormat) -> str:
        cot = (
            " In each verdict, write `reason` first, then `verdict`."
            if self.use_cot and "verdicts" in fmt.schema["properties"]
            else ""
        )
        if self.response_mode == "tools":
            return f"Answer by calling the {fmt.tool} function.{cot}"
        return f"Reply with a JSON object only, matching this JSON schema: {fmt.schema_text()}{cot}"

    def step_request(
        self, step: str, variables: Mapping[str, Any], fmt: ReplyFormat | None, **options: Any
    ) -> ChatRequest:
        """The request of ``step``: its prompt rendered with ``variables``, asking for ``fmt`` (``None``: free
        text); ``options`` go to :meth:`~scorers.judges.base.LLMJudge.request` (``sample``, ``temperature``, ...)."""
        messages = self._templates[step].render(variables)
        if fmt is None:
            return self.request(messages, **options)
        messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{self._step_instruction(fmt)}"}
        tools, tool_choice, response_format = fmt.request_parts(self.response_mode)
        return self.request(messages, tools=tools, tool_choice=tool_choice, response_format=response_format, **options)

    async def step(self, request: ChatRequest, validate: Callable[[ChatResult], Any], calls: list[ChatResult]) -> Any:
        """Send one step's request; record its result in ``calls``; return what ``validate`` read."""
        result = await self._judge(request, validate=validate)
        calls.append(result)
        return result.parsed

    async def extract(
        self, step: str, text: str, key: str, calls: list[ChatResult], **variables: Any
    ) -> tuple[str, ...]:
        """The items ``step`` extracts from ``text`` (a list under ``key``; may be empty)."""
        fmt = items_format(key)

        def read(result: ChatResult) -> tuple[str, ...]:
            return read_items(fmt.read(result, self.response_mode), key)

        return await self.step(self.step_request(step, {"text": text, **variables}, fmt), read, calls)

    async def judge_items(
        self, step: str, items: Sequence[str], choices: Sequence[str], calls: list[ChatResult], **variables: Any
    ) -> tuple[ItemVerdict, ...]:
        """One verdict per item (in order) from one call of ``step``; no call for no items."""
        if not items:
            return ()
        fmt = verdicts_format(choices, self.use_cot)

        def read(result: ChatResult) -> tuple[ItemVerdict, ...]:
            return read_verdicts(fmt.read(result, self.response_mode), len(items), choices)

        request = self.step_request(step, {"items": numbered(items), **variables}, fmt)
        return await self.step(request, read, calls)

    # ---------------------------------------------------------------- scoring
    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        raise NotImplementedError

    async def _run_row(
        self, fields: Mapping[str, Any], requests: list[ChatRequest], hits: list[ChatResult | None] | None
    ) -> Score:
        """The row's chain of calls (:meth:`_evaluate`), then its Score; a failed call's JudgeError is charged
        with the calls of the row that had answered."""
        started = time.perf_counter()
        calls: list[ChatResult] = []
        try:
            value, details = await self._evaluate(fields, calls)
        except JudgeError as exc:
            self._charged(exc, [exc], calls)
            raise
        return self.make_score(
            value,
            higher_is_better=self.higher_is_better,
            **details,
            **self.call_metadata(calls, time.perf_counter() - started),
        )


# ----------------------------------------------------------------- reply formats
def items_format(key: str) -> ReplyFormat:
    """``{key: [text, ...]}``: an extraction step's reply."""
    return ReplyFormat(
        f"record_{key}",
        f"Record the {key} extracted from the text.",
        {
            "type": "object",
            "properties": {key: {"type": "array", "items": {"type": "string"}}},
            "required": [key],
            "additionalProperties": False,
        },
    )


def verdicts_format(choices: Sequence[str], use_cot: bool) -> ReplyFormat:
    """``{"verdicts": [{"reason", "verdict"}, ...]}``, one per item; ``reason`` first, only with chain of thought."""
    properties: dict[str, Any] = {}
    if use_cot:
        properties["reason"] = {"type": "string", "description": REASONS_DESCRIPTION}
    properties["verdict"] = {"type": "string", "enum": list(choices)}
    item = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return ReplyFormat(
        "record_verdicts",
        "Record one verdict per item, in the items' order.",
        {
            "type": "object",
            "properties": {"verdicts": {"type": "array", "items": item}},
            "required": ["verdicts"],
            "additionalProperties": False,
        },
    )


def read_items(parsed: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The list of non-empty texts under ``key``; raises :class:`InvalidReply` (re-asked) otherwise."""
    items = parsed.get(key)
    if not isinstance(items, list):
        raise InvalidReply(f"no {key!r} list in the reply")
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise InvalidReply(f"{key}[{i}] is not non-empty text: {item!r}")
    return tuple(item.strip() for item in items)


def read_verdicts(parsed: Mapping[str, Any], count: int, choices: Sequence[str]) -> tuple[ItemVerdict, ...]:
    """``count`` verdicts, each one of ``choices`` (case-insensitive); raises :class:`InvalidReply` otherwise.

    >>> read_verdicts({"verdicts": [{"verdict": "Yes"}]}, 1, YES_NO)
    (ItemVerdict(verdict='yes', reason=None),)
    """
    verdicts = parsed.get("verdicts")
    if not isinstance(verdicts, list):
        raise InvalidReply("no 'verdicts' list in the reply")
    if len(verdicts) != count:
        raise InvalidReply(f"{len(verdicts)} verdicts for {count} items; give exactly one per item")
    out = []
    for i, entry in enumerate(verdicts):
        given = entry.get("verdict") if isinstance(entry, dict) else None
        verdict = given.strip().lower() if isinstance(given, str) else None
        if verdict is None or verdict not in choices:
            shown = given if verdict is None else verdict
            raise InvalidReply(f"verdicts[{i}] is {shown!r}, not one of {', '.join(choices)}")
        reason = entry.get("reason")
        out.append(ItemVerdict(verdict, reason if isinstance(reason, str) else None))
    return tuple(out)


def _records(items: Sequence[str], verdicts: Sequence[ItemVerdict], key: str) -> list[dict[str, Any]]:
    return [
        {key: item, "verdict": v.verdict, **({"reason": v.reason} if v.reason is not None else {})}
        for item, v in zip(items, verdicts)
    ]


def _share(verdicts: Sequence[ItemVerdict], counts: Callable[[str], bool]) -> float:
    return sum(counts(v.verdict) for v in verdicts) / len(verdicts)


# ----------------------------------------------------------------------- metrics
@register
class Faithfulness(MultiStepJudge):
    """Faithfulness: the share of the output's claims the context does not contradict.

    ``score = #(verdict ≠ no) / #claims`` (verdicts yes / no / idk against ``context``);
    ``idk_is_unfaithful=True`` counts ``idk`` as unfaithful: ``#yes / #claims``.
    An output with no claim scores 1 (nothing in it is unfaithful).
    """

    description = "Share of the output's claims that the retrieved context does not contradict (LLM, 2 calls)."
    fields = (text_field("output", utf8=True), context_field())
    steps = ("claims", "claim_support")
    requests_per_row = "2 (1 when the output makes no claim)"
    example = "scorers.get('Faithfulness')(output='Paris has 2 million people.', context=['Paris: 2.1 million'])"

    def __init__(self, *, idk_is_unfaithful: bool = False, **settings: Any) -> None:
        super().__init__(**settings)
        if not isinstance(idk_is_unfaithful, bool):
            raise ConfigError(
                f"{self.name}: idk_is_unfaithful must be true or false, got {idk_is_unfaithful!r}", scorer=self.name
            )
        self.idk_is_unfaithful = idk_is_unfaithful

    def kind_params(self) -> dict[str, Any]:
        return {"idk_is_unfaithful": self.idk_is_unfaithful}

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        claims = await self.extract("claims", row["output"], "claims", calls)
        if not claims:
            return 1.0, {"claims": [], "verdicts": [], "reason": "the output makes no claim, so none is unfaithful"}
        verdicts = await self.judge_items("claim_support", claims, YES_NO_IDK, calls, context=_chunks(row["context"]))
        faithful = (lambda v: v == "yes") if self.idk_is_unfaithful else (lambda v: v != "no")
        return _share(verdicts, faithful), {"claims": list(claims), "verdicts": _records(claims, verdicts, "claim")}


@register
class AnswerRelevancy(MultiStepJudge):
    """Answer relevancy: the share of the output's statements that address the input.

    ``score = #(verdict ≠ no) / #statements`` (verdicts yes / no / idk; idk is background
    that relates to the question). An output with no statement scores 0 (it answers nothing).
    """

    description = "Share of the output's statements relevant to the input (LLM, 2 calls)."
    fields = (text_field("input", utf8=True), text_field("output", utf8=True))
    steps = ("statements", "answer_relevance")
    requests_per_row = "2 (1 when the output makes no statement)"
    example = "scorers.get('AnswerRelevancy')(input='Capital of France?', output='Paris. It is lovely in May.')"

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        statements = await self.extract("statements", row["output"], "statements", calls)
        if not statements:
            return 0.0, {
                "statements": [],
                "verdicts": [],
                "reason": "the output makes no statement, so nothing in it addresses the input",
            }
        verdicts = await self.judge_items("answer_relevance", statements, YES_NO_IDK, calls, input=row["input"])
        return _share(verdicts, lambda v: v != "no"), {
            "statements": list(statements),
            "verdicts": _records(statements, verdicts, "statement"),
        }


@register
class ContextPrecision(MultiStepJudge):
    """Context precision: are the chunks useful for reaching ``expected`` ranked first? (average precision)

    One call judges every chunk of ``context``, in rank order (yes / no). With
    ``rel_k`` the verdict of rank k and R the number of useful chunks,
    ``score = (1/R) · Σ_{k: rel_k} (#useful in the top k) / k``; R = 0 scores 0.

    >>> ContextPrecision.average_precision([False, True, True])
    0.5833333333333333
    """

    description = "Average precision of the retrieved chunks judged useful for reaching the expected answer (LLM)."
    fields = (text_field("input", utf8=True), text_field("expected", utf8=True), context_field())
    steps = ("chunk_usefulness",)
    requests_per_row = "1"
    example = "scorers.get('ContextPrecision')(input='...', expected='...', context=['chunk 1', 'chunk 2'])"

    @staticmethod
    def average_precision(relevant: Sequence[bool]) -> float:
        """``(1/R) · Σ_{k relevant} (#relevant in top k)/k``, ranks from 1; 0 when R = 0."""
        found, total = 0, 0.0
        for k, useful in enumerate(relevant, 1):
            if useful:
                found += 1
                total += found / k
        return total / found if found else 0.0

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        chunks = row["context"]
        verdicts = await self.judge_items(
            "chunk_usefulness", chunks, YES_NO, calls, input=row["input"], expected=row["expected"]
        )
        relevant = [v.verdict == "yes" for v in verdicts]
        details: dict[str, Any] = {"verdicts": _records(chunks, verdicts, "chunk"), "relevant": sum(relevant)}
        if not any(relevant):
            details["reason"] = "no retrieved chunk is useful for reaching the expected answer (R = 0)"
        return self.average_precision(relevant), details


@register
class ContextRecall(MultiStepJudge):
    """Context recall: the share of ``expected``'s sentences the retrieved context holds.

    ``score = #yes / #sentences``; an ``expected`` with no sentence scores 0.
    """

    description = "Share of the expected answer's sentences attributable to the retrieved context (LLM, 2 calls)."
    fields = (text_field("expected", utf8=True), context_field())
    steps = ("sentences", "attribution")
    requests_per_row = "2 (1 when expected holds no sentence)"
    example = "scorers.get('ContextRecall')(expected='Paris. Capital since 987.', context=['Paris is the capital.'])"

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        sentences = await self.extract("sentences", row["expected"], "sentences", calls)
        if not sentences:
            return 0.0, {"sentences": [], "verdicts": [], "reason": "expected holds no sentence to look for"}
        verdicts = await self.judge_items("attribution", sentences, YES_NO, calls, context=_chunks(row["context"]))
        return _share(verdicts, lambda v: v == "yes"), {
            "sentences": list(sentences),
            "verdicts": _records(sentences, verdicts, "sentence"),
        }


@register
class ContextRelevancy(MultiStepJudge):
    """Context relevancy: the share of the retrieved chunks' statements relevant to the input.

    Statements are extracted from each chunk (one call per chunk, concurrently), then
    one call judges them all (yes / no): ``score = #yes / #statements``; none scores 0.
    """

    description = "Share of the retrieved context's statements relevant to the input (LLM, chunks + 1 calls)."
    fields = (text_field("input", utf8=True), context_field())
    steps = ("statements", "context_relevance")
    requests_per_row = "context chunks + 1 (the chunks alone when they hold no statement)"
    example = "scorers.get('ContextRelevancy')(input='Capital of France?', context=['Paris is the capital.'])"

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        per_chunk = await asyncio.gather(
            *(self.extract("statements", chunk, "statements", calls) for chunk in row["context"])
        )
        statements = [s for chunk in per_chunk for s in chunk]
        details: dict[str, Any] = {"statements": [list(chunk) for chunk in per_chunk]}
        if not statements:
            return 0.0, {**details, "verdicts": [], "reason": "the context holds no statement"}
        verdicts = await self.judge_items("context_relevance", statements, YES_NO, calls, input=row["input"])
        return _share(verdicts, lambda v: v == "yes"), {
            **details,
            "verdicts": _records(statements, verdicts, "statement"),
        }


@register
class Hallucination(MultiStepJudge):
    """Hallucination: the share of context items the output contradicts (lower is better).

    One call judges the output against every item of ``context`` (yes: contradicts / no):
    ``score = #contradicted / #contexts``.
    """

    description = "Share of the context items that the output contradicts; lower is better (LLM, 1 call)."
    higher_is_better = False
    fields = (text_field("output", utf8=True), context_field())
    steps = ("contradiction",)
    requests_per_row = "1"
    example = "scorers.get('Hallucination')(output='Paris has 9 million people.', context=['Paris: 2.1 million'])"

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        contexts = row["context"]
        verdicts = await self.judge_items("contradiction", contexts, YES_NO, calls, output=row["output"])
        return _share(verdicts, lambda v: v == "yes"), {"verdicts": _records(contexts, verdicts, "context")}


@register
class Summarization(MultiStepJudge):
    """Summarization: ``min(alignment, coverage)`` of a summary (``output``) of a source (``input``).

    alignment = ``#yes / #claims`` of the summary's claims against the source (idk counts
    as unsupported: a summary adds nothing); coverage = the share of ``questions`` yes/no
    questions generated from the source (with the source's answers) that the summary
    answers the same way (``idk`` never matches). No claim: alignment 0; no question:
    coverage 0. Both are in the metadata. The two halves run concurrently (4 calls).
    """

    description = "min(alignment, coverage) of a summary (output) of the source (input) (LLM, 4 calls)."
    fields = (
        text_field("input", utf8=True, description="the source text"),
        text_field("output", utf8=True, description="the summary"),
    )
    steps = ("claims", "claim_support", "questions", "answers")
    requests_per_row = (
        "4, two pairs in parallel (fewer when the summary makes no claim or the source raises no question)"
    )
    example = "scorers.get('Summarization')(input='<source text>', output='<summary>')"

    def __init__(self, *, questions: int = 5, **settings: Any) -> None:
        super().__init__(**settings)
        if not is_int(questions) or not 1 <= questions <= 50:
            raise ConfigError(
                f"{self.name}: questions must be an integer in [1, 50], got {questions!r}", scorer=self.name
            )
        self.questions = questions

    def kind_params(self) -> dict[str, Any]:
        return {"questions": self.questions}

    async def _alignment(self, row: Mapping[str, Any], calls: list[ChatResult]) -> dict[str, Any]:
        claims = await self.extract("claims", row["output"], "claims", calls)
        if not claims:
            return {"alignment": 0.0, "claims": [], "alignment_reason": "the summary makes no claim"}
        verdicts = await self.judge_items("claim_support", claims, YES_NO_IDK, calls, context=row["input"])
        return {"alignment": _share(verdicts, lambda v: v == "yes"), "claims": _records(claims, verdicts, "claim")}

    async def _coverage(self, row: Mapping[str, Any], calls: list[ChatResult]) -> dict[str, Any]:
        fmt = questions_format()
        request = self.step_request("questions", {"text": row["input"], "count": self.questions}, fmt)
        asked = await self.step(request, lambda result: read_questions(fmt.read(result, self.response_mode)), calls)
        if not asked:
            return {"coverage": 0.0, "questions": [], "coverage_reason": "the source raised no question"}
        answers = await self.judge_items("answers", [q for q, _ in asked], YES_NO_IDK, calls, text=row["output"])
        records = [
            {"question": q, "source": a, "summary": v.verdict, **({"reason": v.reason} if v.reason is not None else {})}
            for (q, a), v in zip(asked, answers)
        ]
        same = sum(a == v.verdict for (_, a), v in zip(asked, answers))
        return {"coverage": same / len(asked), "questions": records}

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        alignment, coverage = await asyncio.gather(self._alignment(row, calls), self._coverage(row, calls))
        details = {**alignment, **coverage}
        reasons = [details.pop(key) for key in ("alignment_reason", "coverage_reason") if key in details]
        if reasons:
            details["reason"] = "; ".join(reasons)
        return min(details["alignment"], details["coverage"]), details


def questions_format() -> ReplyFormat:
    """``{"questions": [{"question", "answer": yes|no}, ...]}``: closed questions with the source's answers."""
    item = {
        "type": "object",
        "properties": {"question": {"type": "string"}, "answer": {"type": "string", "enum": list(YES_NO)}},
        "required": ["question", "answer"],
        "additionalProperties": False,
    }
    return ReplyFormat(
        "record_questions",
        "Record the questions and the source's answers.",
        {
            "type": "object",
            "properties": {"questions": {"type": "array", "items": item}},
            "required": ["questions"],
            "additionalProperties": False,
        },
    )


def read_questions(parsed: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(question, answer)`` pairs; raises :class:`InvalidReply` for anything else."""
    questions = parsed.get("questions")
    if not isinstance(questions, list):
        raise InvalidReply("no 'questions' list in the reply")
    out = []
    for i, entry in enumerate(questions):
        question = entry.get("question") if isinstance(entry, dict) else None
        answer = entry.get("answer") if isinstance(entry, dict) else None
        answer = answer.strip().lower() if isinstance(answer, str) else answer
        if not isinstance(question, str) or not question.strip() or answer not in YES_NO:
            raise InvalidReply(f"questions[{i}] needs a question and an answer yes or no, got {entry!r}")
        out.append((question.strip(), answer))
    return tuple(out)


class _OpinionJudge(MultiStepJudge):
    """Opinions of the output, the share judged ``yes`` by the verdict step (lower is better)."""

    requests_per_row = "2 (1 when the output expresses no opinion)"
    higher_is_better = False
    fields = (text_field("output", utf8=True),)
    verdict_step: ClassVar[str] = ""

    async def _evaluate(self, row: Mapping[str, Any], calls: list[ChatResult]) -> tuple[float, dict[str, Any]]:
        opinions = await self.extract("opinions", row["output"], "opinions", calls)
        if not opinions:
            return 0.0, {"opinions": [], "verdicts": [], "reason": "the output expresses no opinion"}
        verdicts = await self.judge_items(self.verdict_step, opinions, YES_NO, calls)
        return _share(verdicts, lambda v: v == "yes"), {
            "opinions": list(opinions),
            "verdicts": _records(opinions, verdicts, "opinion"),
        }


@register
class Bias(_OpinionJudge):
    """Bias: the share of the output's opinions judged biased, ``#yes / #opinions`` (lower is better; none: 0)."""

    description = "Share of the output's opinions judged biased; lower is better (LLM, 2 calls)."
    steps = ("opinions", "bias")
    verdict_step = "bias"
    example = "scorers.get('Bias')(output='...')"


@register
class Toxicity(_OpinionJudge):
    """Toxicity: the share of the output's opinions judged toxic, ``#yes / #opinions`` (lower is better; none: 0)."""

    description = "Share of the output's opinions judged toxic; lower is better (LLM, 2 calls)."
    steps = ("opinions", "toxicity")
    verdict_step = "toxicity"
    example = "scorers.get('Toxicity')(output='...')"
