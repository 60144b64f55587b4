"""What a run would spend, before it sends anything: :func:`plan` (``run --dry-run``, ``Run(dry_run=True)``).

The plan follows each judge's own code over the rows, as a run does, with the engine's cache read as a run reads
it (:meth:`~scorers.llm.LLMEngine.lookup`: a request the cache answers is not counted) and every request that
misses it answered in this process by the loopback server's automatic reply
(:func:`scorers.testing.auto.auto_reply`), never sent. So a judge's requests are counted the way it makes them:
a classifier's samples, G-Eval's evaluation steps (once per judge and model), both orders of a pairwise judge,
each step of a multi-step judge. A multi-step judge's later steps depend on its earlier replies (no claim found:
no verdict step); those are counted as if each extraction found items, the most a row sends, and the plan says
so with the count ``python -m scorers show`` states. Re-asks and retries of unusable replies are not counted.

Prompt tokens are estimated by :data:`~scorers.llm.spend.ESTIMATE_RULE`: no provider's tokenizer is available
offline (tiktoken downloads its encodings, Anthropic counts tokens through an API call, Gemini's local tokenizer
downloads its model), so every count is labelled an estimate. The cost is that of the estimated prompts at the
configured prices, and at most that plus every request's ``max_tokens`` at the output price.

>>> from scorers.judges import LLMClassifier
>>> judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Yes": 1, "No": 0}, model="m", samples=3,
...                       temperature=0.7)
>>> spend = plan([{"output": "Thanks!"}, {"output": "Go away."}], [judge], prices={"m": (1.0, 4.0)}, cache=False)
>>> spend.scorers[0].requests, spend.scorers[0].max_output_tokens
(6, 6144)
>>> print(spend.describe())
dry run: nothing was sent
scorer  model  rows  requests  cached  prompt tokens (est.)  max output tokens  cost USD (prompts, est.)  at most
Polite  m         2         6       0                   924              6,144                    0.0009   0.0255
total                       6       0                   924              6,144                    0.0009   0.0255
prompt tokens are estimates: characters / 4, rounded up, of the messages' text and of the tool and response-format JSON
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ._aio import DEFAULT_CONCURRENCY
from .base import Scorer
from .errors import ConfigError, JudgeError
from .llm.config import configured_prices
from .llm.protocol import ChatRequest, ChatResult, InvalidReply
from .llm.spend import ESTIMATE_RULE, estimate_prompt_tokens
from .llm.usage import Prices

__all__ = ["plan", "SpendPlan", "ScorerPlan"]


@dataclass
class ScorerPlan:
    """What one judge of a run would send.

    - ``requests``: the requests it would send (cache hits subtracted); ``cached``: those the cache answers;
    - ``prompt_tokens``: their prompts' tokens (estimated); ``max_output_tokens``: the sum of their ``max_tokens``;
    - ``stepwise``: of ``requests``, those a multi-step judge makes step by step, each after the replies it needs
      (counted as if each extraction found items; ``per_row`` is ``show``'s count);
    - ``repeats``: of ``requests``, those identical to an earlier one of the run (the cache answers them in the run
      if the first has answered by then);
    - ``not_followed``: rows whose requests the plan could not follow (not in ``requests``), the first reason in
      ``note``;
    - ``cache_note``: why the cache could not be read (every request counted as a miss), e.g. no API key, which
      would stop the run itself.
    """

    scorer: str
    model: str
    rows: int = 0
    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    max_output_tokens: int = 0
    stepwise: int = 0
    per_row: str = ""
    repeats: int = 0
    not_followed: int = 0
    note: str = ""
    cache_note: str = ""

    def costs(self, prices: Prices) -> tuple[float, float] | None:
        """USD of the estimated prompts, and at most with every reply at ``max_tokens`` (``None``: no price)."""
        price = prices.get(self.model)
        if price is None:
            return None
        prompts = self.prompt_tokens * price[0] / 1_000_000
        return prompts, prompts + self.max_output_tokens * price[1] / 1_000_000


@dataclass
class SpendPlan:
    """A run's :class:`ScorerPlan` per judge (scorers that send nothing are left out) and the prices used."""

    scorers: list[ScorerPlan]
    prices: dict[str, tuple[float, ...]] = field(default_factory=dict)
    rule: str = ESTIMATE_RULE

    @property
    def requests(self) -> int:
        return sum(p.requests for p in self.scorers)

    def costs(self) -> tuple[float, float] | None:
        """The whole run's :meth:`ScorerPlan.costs` (``None`` when a judge's model has no price)."""
        each = [p.costs(self.prices) for p in self.scorers]
        if any(c is None for c in each):
            return None
        return sum(c[0] for c in each if c), sum(c[1] for c in each if c)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-able data (``--summary-json`` of a dry run)."""
        costs = self.costs()
        return {
            "dry_run": True,
            "prompt_tokens_estimated_as": self.rule,
            "scorers": [
                {
                    **asdict(p),
                    "cost_usd": None if (c := p.costs(self.prices)) is None else {"prompts": c[0], "at_most": c[1]},
                }
                for p in self.scorers
            ],
            "requests": self.requests,
            "cost_usd": None if costs is None else {"prompts": costs[0], "at_most": costs[1]},
        }

    def describe(self) -> str:
        """The plan for people: a line per judge and the total, then what the counts assume."""
        header: tuple[str, ...] = ("scorer", "model", "rows", "requests", "cached", "prompt tokens (est.)")
        header += ("max output tokens", "cost USD (prompts, est.)", "at most")
        lines: list[tuple[str, ...]] = [header]
        for p in self.scorers:
            lines.append(
                (p.scorer, p.model, f"{p.rows:,}", f"{p.requests:,}", f"{p.cached:,}", f"{p.prompt_tokens:,}")
                + (f"{p.max_output_tokens:,}",)
                + _money(p.costs(self.prices))
            )
        total = self.costs()
        lines.append(
            ("total", "", "", f"{self.requests:,}", f"{sum(p.cached for p in self.scorers):,}")
            + (f"{sum(p.prompt_tokens for p in self.scorers):,}", f"{sum(p.max_output_tokens for p in self.scorers):,}")
            + _money(total)
        )
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        table = [
            "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
            for line in lines
        ]
        notes = [f"prompt tokens are estimates: {self.rule}"]
        for p in self.scorers:
            if p.stepwise:
                notes.append(
                    f"{p.scorer}: {p.stepwise:,} of its requests are made step by step, counted as if each "
                    f"extraction finds items (requests per row: {p.per_row})"
                )
            if p.repeats:
                notes.append(
                    f"{p.scorer}: {p.repeats:,} of its requests repeat an identical earlier one; the run sends those "
                    "only while the first has not answered yet (else the cache answers them)"
                )
            if p.cache_note:
                notes.append(f"{p.scorer}: the cache could not be read, every request is counted: {p.cache_note}")
            if p.not_followed:
                notes.append(f"{p.scorer}: {p.not_followed:,} row(s) not counted: {p.note}")
        if total is None:
            unpriced = sorted({p.model for p in self.scorers if p.costs(self.prices) is None})
            notes.append(f"no cost: no price for {', '.join(unpriced)} (--price MODEL=IN,OUT)")
        return "\n".join(["dry run: nothing was sent", *(line.rstrip() for line in table), *notes])


def _money(costs: tuple[float, float] | None) -> tuple[str, str]:
    return ("-", "-") if costs is None else (f"{costs[0]:.4f}", f"{costs[1]:.4f}")


class _PlanningEngine:
    """Stands in for a judge's engine while a plan follows it: reads the real engine's cache, answers every miss
    with the loopback server's automatic reply (nothing is sent), and counts the misses into ``plan``."""

    def __init__(self, engine: Any, plan: ScorerPlan) -> None:
        self._engine = engine
        self._plan = plan
        self._seen: set[str] = set()

    @property
    def model(self) -> str:
        return str(self._engine.model)

    def settings(self) -> Any:
        return self._engine.settings()

    def __getattr__(self, name: str) -> Any:
        """The real engine's values (``api``, ...), never its methods: a method could send."""
        value = getattr(self._engine, name)
        if callable(value):
            raise AttributeError(f"the dry run's stand-in engine has no method {name!r}: it sends nothing")
        return value

    def _resolved(self, scorer: str | None = None) -> Any:
        raise JudgeError(
            f"{scorer}: this judge sends through a path the dry run does not follow (the completions endpoint); "
            "its requests are not counted",
            scorer=scorer,
        )

    def lookup(self, requests: Sequence[ChatRequest], *, validate: Any = None) -> list[ChatResult | None]:
        """The real cache's hits (all misses when it cannot be read, e.g. without an API key)."""
        try:
            found: list[ChatResult | None] = self._engine.lookup(requests, validate=validate)
        except ConfigError as exc:
            self._plan.cache_note = self._plan.cache_note or str(exc)
            found = [None] * len(requests)
        self._plan.cached += sum(hit is not None for hit in found)
        return found

    async def complete(
        self, request: ChatRequest, *, validate: Any = None, read_cache: bool = True, **call: Any
    ) -> Any:
        """:meth:`LLMEngine.complete <scorers.llm.LLMEngine.complete>`, answered by the stand-in (``call``: its
        ``scorer``)."""
        if read_cache:  # a step of a multi-step judge, or G-Eval's evaluation steps: not in lookup's batch
            hit = self.lookup([request], validate=validate)[0]
            if hit is not None:
                return hit
            self._plan.stepwise += _in_row()
        self._plan.requests += 1
        identity = json.dumps([request.body(request.model or self.model), request.cache_tag], sort_keys=True)
        self._plan.repeats += identity in self._seen
        self._seen.add(identity)
        self._plan.prompt_tokens += estimate_prompt_tokens(request)
        self._plan.max_output_tokens += request.max_tokens or 0
        return _simulated(request, self.model, validate, call.get("scorer"))


def _in_row() -> bool:
    """Whether the judge is judging its rows (not preparing them, as G-Eval writes its evaluation steps)."""
    from .judges.base import _BATCH_SIGNATURE

    return _BATCH_SIGNATURE.get() is not None


def _simulated(
    request: ChatRequest, model: str, validate: Callable[[ChatResult], Any] | None, scorer: str | None
) -> ChatResult:
    """The loopback server's automatic reply to ``request``, read as the engine reads a reply (never sent)."""
    from .llm.protocol import parse_reply
    from .testing.auto import auto_reply
    from .testing.protocols.chat import ChatCompletionsAPI
    from .testing.recorded import RecordedRequest

    body = request.body(request.model or model, api="chat")
    recorded = RecordedRequest("POST", "/v1/chat/completions", {}, body, 0.0)
    data = ChatCompletionsAPI().render(body, auto_reply(recorded), _LOOPBACK_SETTINGS)
    result = parse_reply(data, "chat", model=body["model"])
    if validate is not None:
        try:
            object.__setattr__(result, "parsed", validate(result))
        except InvalidReply as exc:
            raise JudgeError(
                f"{scorer}: the dry run's stand-in reply was unusable: {exc.reason}", scorer=scorer
            ) from None
    return result


class _LoopbackSettings:
    """What the loopback chat protocol reads of its server's settings: logprobs served, as a model would."""

    logprobs, embedding_dim, completions = True, 16, None


_LOOPBACK_SETTINGS: Any = _LoopbackSettings()


def plan(
    rows: Iterable[Mapping[str, Any]],
    scorers: Sequence[Scorer],
    *,
    mapping: Mapping[str, str] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    prices: Prices | None = None,
    cache: bool = True,
) -> SpendPlan:
    """What scoring ``rows`` with ``scorers`` would send, per judge (see the module docstring); nothing is sent.

    ``prices`` default to ``configure(prices=...)``'s; ``cache=False`` counts every request as a miss (as
    ``--no-cache`` runs)."""
    from .judges.base import LLMJudge
    from .judges.jury import Jury
    from .runner import evaluate

    judges = [s for s in scorers if isinstance(s, LLMJudge)]
    plans = [ScorerPlan(j.name, j._model_name(), per_row=j.requests_per_row) for j in judges]
    stand_ins: list[Scorer] = [_stand_in(judge, judge_plan, cache) for judge, judge_plan in zip(judges, plans)]
    for jury in (s for s in scorers if isinstance(s, Jury)):  # a plan per juror, named jury[juror]
        own = [
            ScorerPlan(f"{jury.name}[{label}]", j._model_name(), per_row=j.requests_per_row)
            for label, j in zip(jury.labels, jury.jurors)
        ]
        stand_in = copy.copy(jury)
        stand_in.jurors = tuple(_stand_in(juror, juror_plan, cache) for juror, juror_plan in zip(jury.jurors, own))
        plans += own
        stand_ins.append(stand_in)
    accepted = {name for s in stand_ins for name in s.accepted_fields()}
    if stand_ins:
        wanted = {target: column for target, column in (mapping or {}).items() if target in accepted}
        for result in evaluate(rows, stand_ins, mapping=wanted, concurrency=concurrency):
            for judge_plan in plans:
                judge_plan.rows += 1
                error = result.errors.get(judge_plan.scorer)
                if error is not None and error.get("type") == "JudgeError":
                    judge_plan.not_followed += 1
                    judge_plan.note = judge_plan.note or error.get("message", "")
    return SpendPlan(plans, dict(configured_prices() if prices is None else prices))


def _stand_in(judge: Any, judge_plan: ScorerPlan, cache: bool) -> Any:
    """A copy of ``judge`` whose engine counts its requests into ``judge_plan`` and sends nothing."""
    stand_in = copy.copy(judge)
    stand_in.engine = _PlanningEngine(judge.engine if cache else _NoCache(judge.engine), judge_plan)
    return stand_in


class _NoCache:
    """An engine whose cache misses every request (a plan for a run without the cache)."""

    def __init__(self, engine: Any) -> None:
        self.model = engine.model
        self.api = engine.api
        self.settings = engine.settings

    def lookup(self, requests: Sequence[ChatRequest], *, validate: Any = None) -> list[ChatResult | None]:
        return [None] * len(requests)
