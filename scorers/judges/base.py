"""What every LLM judge shares: settings validated by the spec model, the engine, batch judging, metadata.

One hierarchy: :class:`LLMJudge` owns the request settings, the engine and the batch
loop; :class:`~scorers.judges.templated.TemplatedJudge` (the template kinds: classifier,
rubric, rating, geval, pairwise, and any kind a module adds) and
:class:`~scorers.judges.rag.MultiStepJudge` (RAG metrics, SelfCheck) sit under it.
Batches read the cache once for every row and send only the misses, concurrently.
What a judge asks the model to reply and how it reads it back is :mod:`scorers.judges.reply`.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import time
import types
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from .._util import annotation_text, is_int, lazy, spell_out_keywords
from ..aggregate import Aggregator, MeanAggregator
from ..base import Scorer
from ..errors import ConfigError, JudgeError, ScorerError
from ..llm import ChatRequest, ChatResult, LLMEngine, RequestRejected
from ..llm.engine import NotPicklable
from ..llm.usage import Usage, as_failed, call_usage, summed_usage
from ..params import Param
from ..score import Score
from .needs import Need, protocol_refusal, response_mode_needs
from .parameters import setting_option
from .reply import judge_reasoning
from .spec import RequestSettings, validate_model

if TYPE_CHECKING:
    from .derived import Derived

__all__ = [
    "LLMJudge",
    "JudgeAggregator",
    "judge_error",
    "sum_usage",
    "takes_request_settings",
]

_UNSET: Any = object()

#: The judge whose batch is being scored and its signature, taken once when the batch starts (``signature()``
#: builds a key from every setting at each call: microseconds a row).
_BATCH_SIGNATURE: contextvars.ContextVar[tuple["LLMJudge", dict[str, Any]] | None] = contextvars.ContextVar(
    "scorers_judge_batch_signature", default=None
)

#: Per response mode: what a server's rejection mentions when it does not support the mode, and what to use.
_MODE_HINTS = {
    "json": (
        "json_schema",
        "response_mode='json' sends a json_schema response format, which this server "
        "rejected: use response_mode='json_object' (or 'tools')",
    ),
    "json_object": (
        "json_object",
        "this server rejected the json_object response format: use response_mode='tools' or 'text'",
    ),
    "tools": ("tool", "this server rejected the forced tool call: use response_mode='json_object' or 'text'"),
}


class LLMJudge(Scorer):
    """Base of every LLM judge: request settings, engine, the cache-aware batch loop, usage and metadata.

    Two families sit under it: :class:`TemplatedJudge` (the template kinds: one prompt, a
    verdict per reply) and :class:`~scorers.judges.rag.MultiStepJudge` (a chain of calls per
    row). A subclass sets ``max_tokens_default`` ``(without CoT, with CoT)``: every call is
    bounded, as a judge that does not stop would otherwise generate to the context limit.

    A row is judged by :meth:`_run_row`; the requests it can name before any reply
    (:meth:`_row_requests`) are looked up in the cache for a whole batch at once, and a
    row answered entirely by the cache is scored without a request (:meth:`_score_from`).
    """

    kind = "llm"
    algorithm_version = "1"
    judge_kind: ClassVar[str] = ""
    max_tokens_default: ClassVar[tuple[int, int]] = (256, 1024)
    #: How many requests a row makes, as a formula of what it holds (``show`` prints it); a kind or a
    #: judge whose count depends on its settings (samples, both orders) sets it when built.
    requests_per_row: str = "1"
    #: The judged output's reasoning is left out while ``strip_reasoning`` is on (a request setting).
    reasoning_fields: tuple[str, ...] = ("output",)
    #: Response modes the kind supports (the spec may narrow them); none for a judge that reads no reply (GPTScore
    #: reads log-probabilities).
    response_modes: ClassVar[tuple[str, ...]] = ("tools", "json", "json_object", "text")

    #: The request settings' defaults for a judge built in code (a setting not named here defaults to ``None``:
    #: the engine's or the server's choice); a kind may change them. The settings themselves are the fields of
    #: :class:`RequestSettings`, declared there only.
    request_defaults: ClassVar[Mapping[str, Any]] = types.MappingProxyType(
        {"use_cot": True, "temperature": 0, "response_mode": "tools"}
    )
    #: Request settings the kind fixes: they are not parameters of its constructor (G-Eval: ``use_cot`` False).
    fixed_settings: ClassVar[Mapping[str, Any]] = types.MappingProxyType({})
    #: The constructor that takes the request settings (``**request``), as a ``TypeError`` names it.
    _settings_owner: ClassVar[str] = "LLMJudge.__init__()"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and takes_request_settings(cls, init):
            cls._settings_owner = f"{cls.__qualname__}.__init__()"

    def __init__(
        self,
        name: str | None = None,
        *,
        engine: LLMEngine | None = None,
        client: Any = None,
        max_reasks: int | None = None,
        settings: RequestSettings | Mapping[str, Any] | None = None,
        **request: Any,
    ) -> None:
        """The request settings are keyword arguments (one per field of :class:`RequestSettings`, listed in the
        signature) or one ``settings`` value (a :class:`RequestSettings` or a mapping); a keyword wins over
        ``settings``, which wins over the kind's :attr:`request_defaults`. Everything is validated at once
        by the judge's spec model (one :class:`ConfigError` listing every problem)."""
        self._init_judge(name, {}, settings, request, engine=engine, client=client, max_reasks=max_reasks)

    def _init_judge(
        self,
        name: str | None,
        kind_data: Mapping[str, Any],
        settings: RequestSettings | Mapping[str, Any] | None,
        request: Mapping[str, Any],
        *,
        engine: LLMEngine | None,
        client: Any,
        max_reasks: int | None,
    ) -> Any:
        """Validate the kind's data and the request settings with :meth:`_spec_model`, build the engine;
        returns the validated spec."""
        Scorer.__init__(self, name=name)
        data = {**kind_data, **self.request_fields(settings, request)}
        spec = _validated(self.name, self._spec_model(), data)
        self._configure(self.name, spec, engine=engine, client=client, max_reasks=max_reasks)
        return spec

    @classmethod
    def _spec_model(cls) -> type[RequestSettings]:
        """The model that validates the judge's settings: :class:`RequestSettings` (a template kind's spec)."""
        return RequestSettings

    @classmethod
    def options(cls) -> dict[str, Param]:
        """The judge's settings by name, as ``show`` lists them: the request settings its constructor takes
        (:class:`RequestSettings`' fields less those the kind fixes), defaulting as the constructor does, each
        with its help and what it must be (``response_mode``: one of the judge's :attr:`response_modes`).

        >>> LLMJudge.options()["temperature"].default, LLMJudge.options()["temperature"].allowed
        (0, 'a number in [0, 2] or null')
        >>> from scorers.judges.rag import Faithfulness
        >>> Faithfulness.options()["response_mode"].allowed
        'tools | json | json_object'
        """
        fields, taken = RequestSettings.model_fields, set(cls.constructor_params())
        options = {
            name: setting_option(
                name, fields[name], cls.request_defaults.get(name), annotation_text(fields[name].annotation)
            )
            for name in cls.request_setting_names()
            if name in taken
        }
        if "response_mode" in options and cls.response_modes:
            modes = cls.response_modes
            options["response_mode"] = replace(options["response_mode"], choices=modes, expected=" | ".join(modes))
        return options

    @classmethod
    def request_setting_names(cls) -> tuple[str, ...]:
        """The request settings the constructor takes: :class:`RequestSettings`' fields, less the fixed ones."""
        return tuple(n for n in RequestSettings.model_fields if n not in cls.fixed_settings)

    def request_fields(
        self, settings: RequestSettings | Mapping[str, Any] | None, request: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Every request setting, as the spec model validates it: the kind's defaults, then ``settings``, then the
        keywords ``request``, then the kind's fixed settings."""
        names = self.request_setting_names()
        unknown = next((key for key in request if key not in names), None)
        if unknown is not None:
            raise TypeError(f"{self._settings_owner} got an unexpected keyword argument {unknown!r}")
        chosen: dict[str, Any] = {}
        if settings is not None:
            if isinstance(settings, RequestSettings):
                given = settings
            else:
                if not isinstance(settings, Mapping):
                    raise ConfigError(
                        f"{self.name}: settings must be a RequestSettings or a mapping, got {type(settings).__name__}",
                        scorer=self.name,
                    )
                given = _validated(self.name, RequestSettings, settings)
            chosen = {key: getattr(given, key) for key in given.model_fields_set if key in RequestSettings.model_fields}
            fixed = {
                key: value
                for key, value in chosen.items()
                if key in self.fixed_settings and value != self.fixed_settings[key]
            }
            if fixed:
                raise ConfigError(
                    f"{self.name}: a {self.judge_kind} judge fixes "
                    + ", ".join(f"{key}={self.fixed_settings[key]!r}" for key in fixed),
                    scorer=self.name,
                )
        fields = {name: self.request_defaults.get(name) for name in RequestSettings.model_fields}
        fields.update(chosen)
        fields.update(request)
        fields.update(self.fixed_settings)
        if isinstance(fields["extra_args"], Mapping):
            fields["extra_args"] = dict(fields["extra_args"])
        return fields

    def _configure(
        self, name: str, spec: Any, *, engine: LLMEngine | None, client: Any, max_reasks: int | None
    ) -> None:
        """Take the validated request settings of ``spec`` and build the engine (``None`` for ``use_cot`` or
        ``response_mode`` is the kind's default)."""
        self.spec = spec
        self.use_cot: bool = self.request_defaults.get("use_cot", True) if spec.use_cot is None else spec.use_cot
        self.model: str | None = spec.model
        self.temperature: float | None = spec.temperature
        self.max_tokens: int | None = spec.max_tokens
        self.response_mode: str = spec.response_mode or self.request_defaults.get("response_mode", "tools")
        self.reasoning_effort: str | None = spec.reasoning_effort
        self.api: str | None = spec.api
        self.extra_args: dict[str, Any] = dict(spec.extra_args or {})
        self.strip_reasoning: bool = spec.strip_reasoning is not False
        if self.response_modes and self.response_mode not in self.response_modes:
            raise ConfigError(
                f"{name}: response_mode {self.response_mode!r} is not available for a "
                f"{self.judge_kind} judge; use one of {', '.join(self.response_modes)}",
                scorer=name,
            )
        if max_reasks is not None and (not is_int(max_reasks) or not 0 <= max_reasks <= 10):
            raise ConfigError(
                f"{name}: max_reasks must be an integer in [0, 10] or None (the engine's setting), got {max_reasks!r}",
                scorer=name,
            )
        if engine is not None and (client is not None or max_reasks is not None):
            raise ConfigError(f"{name}: pass engine= or client=/max_reasks=, not both", scorer=name)
        self.max_reasks = max_reasks
        self.client = client
        self._engine = engine
        self.engine = engine if engine is not None else LLMEngine(client=client, max_reasks=max_reasks)
        refusal = protocol_refusal(self)
        if refusal is not None:
            raise ConfigError(refusal, scorer=name)

    def needs(self, response_mode: str | None = None) -> dict[str, Need]:
        """What the judge needs from its wire protocol, by capability (:mod:`scorers.judges.needs`), with its
        ``response_mode`` (default: its own): a forced tool, a structured output... A kind that needs more (G-Eval's
        log-probabilities) adds it; a judge whose protocol lacks one is refused at construction.

        >>> from scorers.judges import LLMClassifier
        >>> judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Yes": 1, "No": 0}, reasoning_effort="low")
        >>> list(judge.needs()), list(judge.needs("json"))
        (['forced_tool', 'forced_tool_with_thinking'], ['json_schema'])
        """
        mode = self.response_mode if response_mode is None else response_mode
        return response_mode_needs(mode, thinking=self.reasoning_effort is not None)

    def variables(self) -> tuple[str, ...]:
        """The fields of a row this judge reads."""
        return tuple(f.name for f in self.fields)

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
            state["client"] = NotPicklable(
                self.client,
                (
                    f"{self.name}: a judge built with client= cannot be pickled (an openai client holds connections "
                    "and locks); give it engine=LLMEngine(base_url=..., api_key=...), or rely on scorers.configure() "
                    "or OPENAI_API_KEY/OPENAI_BASE_URL in the receiving process"
                ),
            )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(NotPicklable.unwrap_values(state))

    # ------------------------------------------------------------- describing
    def params(self) -> dict[str, Any]:
        """The settings that decide the verdict (the signature): model, prompts, kind settings, request settings."""
        return {"model": self._model_name(), **self.prompt_params(), **self.kind_params(), **self.request_params()}

    def prompt_params(self) -> dict[str, Any]:
        """What identifies the judge's prompts in its signature (a template's hash, step prompts' hashes)."""
        return {}

    def request_params(self) -> dict[str, Any]:
        """The request settings every judge shares, as they enter its signature: each field of
        :class:`RequestSettings` (``model`` leads :meth:`params`), as the judge resolved it (a kind's default for
        ``None``)."""
        params = {name: getattr(self, name) for name in RequestSettings.model_fields if name != "model"}
        if params["api"] is None and self.engine.api != "chat":  # the protocol the engine sends with: verdicts of
            params["api"] = self.engine.api  # two providers never mix in a resumed file (chat: as it always was)
        if params.pop("strip_reasoning"):  # on (the default) leaves the signature as it always was
            return params
        return {**params, "strip_reasoning": False}

    def kind_params(self) -> dict[str, Any]:
        """The judge's own settings as they enter its signature (:meth:`params`, so the cache's and ``--resume``'s
        identity) and ``python -m scorers show``: criteria, scale, choices, ...; none by default. A template
        kind's are its spec model's own fields (:meth:`TemplatedJudge.kind_params
        <scorers.judges.TemplatedJudge.kind_params>`), so a new kind writes none; a multi-step judge returns the
        settings its constructor adds (SelfCheck's ``samples``, ``sample_temperature``).

        >>> from scorers.judges import LLMClassifier
        >>> LLMClassifier("Polite", "Is {{output}} polite?", {"Yes": 1, "No": 0}).kind_params()
        {'choice_scores': {'Yes': 1.0, 'No': 0.0}, 'samples': 1, 'aggregate': 'mean'}
        """
        return {}

    def describe(self) -> dict[str, Any]:
        """What ``python -m scorers show`` prints for a judge: kind, variables and settings."""
        return {
            "name": self.name,
            "kind": self.judge_kind,
            "description": self.description,
            "variables": list(self.variables()),
            "requests_per_row": self.requests_per_row,
            **self.params(),
        }

    def _model_name(self) -> str:
        return self.model if self.model is not None else self.engine.model

    def signature(self) -> dict[str, Any]:
        """As :meth:`Scorer.signature`, computed once per judge (and model): every Score gets a shallow copy.
        During :meth:`_ascore_batch` it is the one taken when the batch started, as its requests were."""
        fixed = _BATCH_SIGNATURE.get()
        if fixed is not None and fixed[0] is self:
            return dict(fixed[1])
        key = (self._model_name(), json.dumps(self.params(), sort_keys=True, default=str))
        memo = self.__dict__.get("_signature_memo")
        if memo is None or memo[0] != key:
            memo = self._signature_memo = (key, super().signature())
        return dict(memo[1])

    # --------------------------------------------------------------- requests
    def output_budget(self) -> int:
        """The ``max_tokens`` sent: the judge's setting, else the kind's default for its CoT setting."""
        return self.max_tokens if self.max_tokens is not None else self.max_tokens_default[self.use_cot]

    def request(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: Any = None,
        tool_choice: Any = None,
        response_format: Any = None,
        sample: int | None = None,
        max_tokens: int | None = None,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        temperature: Any = _UNSET,
        cache_tag: str | None = None,
    ) -> ChatRequest:
        """A request carrying this judge's model and request settings."""
        return ChatRequest(
            messages=messages,
            model=self.model,
            tools=tools,
            tool_choice=tool_choice,
            temperature=self.temperature if temperature is _UNSET else temperature,
            max_tokens=max_tokens or self.output_budget(),
            response_format=response_format,
            seed=sample,
            extra=self.extra_args,
            reasoning_effort=self.reasoning_effort,
            api=self.api,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            cache_tag=cache_tag,
        )

    # ---------------------------------------------------------------- scoring
    async def _prepare(self) -> None:
        """Work done once before the first row (e.g. G-Eval's generated steps); nothing by default."""

    def _row_requests(self, fields: Mapping[str, Any]) -> list[ChatRequest]:
        """The requests of a row known before any reply (a batch reads the cache for all of them at once);
        none by default: the row's calls are made by :meth:`_run_row`. Bad input raises its ScorerError."""
        return []

    async def _run_row(
        self, fields: Mapping[str, Any], requests: list[ChatRequest], hits: list[ChatResult | None] | None
    ) -> Score | ScorerError:
        """Judge one row: its :meth:`_row_requests` and, in a batch, the cache hits already found for them
        (``None``: read the cache for each). Returns the Score or the row's error (or raises it)."""
        raise NotImplementedError

    def _validate(self, result: ChatResult) -> Any:
        """Read a reply to one of :meth:`_row_requests` (raise :class:`InvalidReply` to have it re-asked)."""
        raise NotImplementedError

    def _score_from(self, results: list[ChatResult], latency: float) -> Score:
        """The Score from the validated replies to :meth:`_row_requests` (``result.parsed``)."""
        raise NotImplementedError

    async def _ascore(self, **fields: Any) -> Score:
        await self._prepare()
        outcome = await self._run_row(fields, self._row_requests(fields), None)
        if isinstance(outcome, ScorerError):
            raise outcome
        return outcome

    async def _ascore_batch(self, rows: list[dict[str, Any]], limit: asyncio.Semaphore) -> list[Score | ScorerError]:
        """Judge many rows: one Score or ScorerError per row, in order.

        Every row's :meth:`_row_requests` are named first and the cache is read once for
        the whole batch (:meth:`LLMEngine.lookup`): rows it answers are scored on the
        spot, without a task or a slot of ``limit``. The other rows are judged
        concurrently, each holding a slot of ``limit`` while its calls run. A row's Score
        is the one :meth:`__call__` gives, apart from ``cached``/``latency_s``. Once a row
        meets a :class:`~scorers.errors.ConfigError` (no API key, a key or model the
        endpoint refuses), the rows not yet started get the same error without a request.
        """
        try:
            await self._prepare()
        except ScorerError as exc:
            return [exc] * len(rows)
        token = _BATCH_SIGNATURE.set((self, self.signature()))
        try:
            return await self._judge_rows(rows, limit)
        finally:
            _BATCH_SIGNATURE.reset(token)

    def _derived(self, rows: Sequence[Mapping[str, Any]]) -> Derived | None:
        """The batch's derived cache keys, which find rows' replies without rendering their prompts
        (:mod:`scorers.judges.derived`); ``None`` (the default): every row's prompts are rendered."""
        return None

    async def _judge_rows(self, rows: list[dict[str, Any]], limit: asyncio.Semaphore) -> list[Score | ScorerError]:
        """:meth:`_ascore_batch` once the judge is prepared: the cache read for every row (by derived keys first,
        where the judge has them), then the misses."""
        started = time.perf_counter()
        results: list[Score | ScorerError | None] = [None] * len(rows)
        derived = self._derived(rows)
        answered = derived.answered(self, rows) if derived is not None else {}
        prepared: list[tuple[int, list[ChatRequest]]] = []
        for index, row in enumerate(rows):
            if index in answered:
                continue
            try:
                prepared.append((index, self._row_requests(row)))
            except ScorerError as exc:
                results[index] = exc
        flat = [request for _, requests in prepared for request in requests]
        found: list[ChatResult | None] = []
        keys: list[str] = []
        if flat:
            try:
                found = (
                    self.engine.lookup(flat, validate=self._validate)
                    if derived is None
                    else derived.engine.lookup(flat, validate=self._validate, keys_out=keys)
                )
            except ConfigError:  # e.g. no API key: each row raises it again below, as a per-row call would
                found = [None] * len(flat)
        lookup_latency = time.perf_counter() - started
        for index, replies in answered.items():
            results[index] = self._scored(replies, lookup_latency)
        misses: list[tuple[int, list[ChatRequest], list[ChatResult | None]]] = []
        position = 0
        for index, requests in prepared:
            hits = found[position : position + len(requests)]
            position += len(requests)
            if requests and None not in hits:
                results[index] = self._scored(hits, lookup_latency)  # type: ignore[arg-type]
            else:
                misses.append((index, requests, hits))
        if misses:
            refused: list[ConfigError] = []  # once the endpoint refuses the configuration, the rest are not sent

            async def one(
                index: int, requests: list[ChatRequest], hits: list[ChatResult | None]
            ) -> Score | ScorerError:
                async with limit:
                    if refused:
                        return refused[0]
                    try:
                        return await self._run_row(rows[index], requests, hits)
                    except ConfigError as exc:
                        refused.append(exc)
                        return exc
                    except ScorerError as exc:
                        return exc

            outcomes = await asyncio.gather(*(one(*miss) for miss in misses))
            for (index, _, _), outcome in zip(misses, outcomes):
                results[index] = outcome
        if derived is not None and prepared:
            derived.link(prepared, keys, results)
        return results  # type: ignore[return-value]

    async def _judge_row(
        self, requests: list[ChatRequest], hits: list[ChatResult | None] | None = None
    ) -> list[ChatResult]:
        """The replies of one row's requests, concurrently; ``hits`` are cache hits already found (the others
        are sent without reading the cache). When a call fails, the first error is raised once every call of
        the row has ended, charged with what they all cost (:meth:`_charged`)."""
        if hits is None:
            hits = [None] * len(requests)
            read_cache = True
        else:
            read_cache = False

        async def ask(request: ChatRequest, hit: ChatResult | None) -> ChatResult:
            return hit if hit is not None else await self._judge(request, read_cache=read_cache)

        if len(requests) == 1:
            try:
                return [await ask(requests[0], hits[0])]
            except JudgeError as exc:
                self._charged(exc, [exc], [])
                raise
        outcomes = await asyncio.gather(*map(ask, requests, hits), return_exceptions=True)
        errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if not errors:
            return outcomes  # type: ignore[return-value]
        if isinstance(errors[0], JudgeError):
            self._charged(
                errors[0],
                [e for e in errors if isinstance(e, JudgeError)],
                [o for o in outcomes if isinstance(o, ChatResult)],
            )
        raise errors[0]

    def _charged(self, error: JudgeError, failed: Sequence[JudgeError], answered: Sequence[ChatResult]) -> JudgeError:
        """``error`` (a row's failure) with ``usage``: what the row's calls cost, the ``failed`` ones' attempts and
        tokens and the ``answered`` ones', all counted as failed since the row has no score. It goes into the row's
        error record, so that a run's usage counts every attempt and token."""
        figures = [getattr(e, "usage", None) or {} for e in failed] + [call_usage(r) for r in answered]
        error.usage = {"model": self._model_name(), **as_failed(summed_usage(figures))}
        return error

    async def _judge(self, request: ChatRequest, *, read_cache: bool = True, validate: Any = None) -> ChatResult:
        try:
            return await self.engine.complete(
                request, validate=validate or self._validate, scorer=self.name, read_cache=read_cache
            )
        except RequestRejected as exc:
            hint = _MODE_HINTS.get(self.response_mode)
            if hint is None or hint[0] not in exc.detail:
                raise
            rejected = RequestRejected(
                f"{exc} ({hint[1]})", status=exc.status, detail=exc.detail, scorer=self.name, attempts=exc.attempts
            )
            rejected.usage = getattr(exc, "usage", None)
            raise rejected from exc

    def _scored(self, results: list[ChatResult], latency: float) -> Score | ScorerError:
        """The row's Score, or its error (a :class:`JudgeError` charged with what the row's calls cost)."""
        try:
            return self._score_from(results, latency)
        except JudgeError as exc:
            return self._charged(exc, [], results)
        except ScorerError as exc:
            return exc

    def call_metadata(self, results: Sequence[ChatResult], latency: float) -> dict[str, Any]:
        """What every judge's Score records about its calls: mode, model, what was sent, usage, timing, cache, and
        the judge's own reasoning where its replies hold some (``judge_reasoning``; a list for several calls)."""
        first = results[0]
        one = len(results) == 1  # the usual row: its call's figures as they are
        metadata = {
            "response_mode": self.response_mode,
            "model": first.model,
            "sent": dict(getattr(first, "sent", None) or {}),
            "usage": sum_usage(results),
            "latency_s": latency,
            "attempts": first.attempts if one else sum(r.attempts for r in results),
            "reasks": first.reasks if one else sum(r.reasks for r in results),
            "cached": first.cached if one else all(r.cached for r in results),
        }
        thoughts = [judge_reasoning(result) for result in results]
        if any(thoughts):
            metadata["judge_reasoning"] = thoughts[0] if one else thoughts
        return metadata

    def aggregator(self) -> Aggregator:
        """Run summary: the usual figures plus token usage (and a cost estimate when prices are configured)."""
        return JudgeAggregator()


def takes_request_settings(cls: type[LLMJudge], init: Any) -> bool:
    """Whether ``init`` (the constructor ``cls`` defines) takes the request settings, as ``**request``; if so its
    signature (``inspect.signature``, the registry's parameter hints) lists each of them as a keyword-only
    parameter, derived from :class:`RequestSettings`' fields and ``cls``'s defaults, in place of ``**request``.

    >>> [str(p) for p in inspect.signature(LLMJudge).parameters.values()][4:8]
    ["settings: 'RequestSettings | Mapping[str, Any] | None' = None", "use_cot: 'bool | None' = True", \
"model: 'str | None' = None", "temperature: 'float | None' = 0"]
    """
    if "__signature__" in vars(init):
        return True
    signature = inspect.signature(init)
    parameters = list(signature.parameters.values())
    if not parameters or parameters[-1].kind is not inspect.Parameter.VAR_KEYWORD or parameters[-1].name != "request":
        return False
    names = cls.request_setting_names()
    taken = [p.name for p in parameters if p.name in names]
    if taken:
        raise TypeError(
            f"{cls.__qualname__}.__init__ declares {taken}, which are request settings: **request takes them"
        )
    spell_out_keywords(
        init, {name: RequestSettings.model_fields[name].annotation for name in names}, cls.request_defaults
    )
    return True


takes_request_settings(LLMJudge, LLMJudge.__init__)


def _validated(name: str, model: type[Any], data: Mapping[str, Any]) -> Any:
    """``data`` validated by ``model``; a :class:`ConfigError` of judge ``name`` naming every problem otherwise."""
    spec, problems = validate_model(model, data)
    if problems:
        raise ConfigError(
            f"{name}: invalid settings: " + "; ".join(f"{k or '<spec>'}: {m}" for k, m in problems), scorer=name
        )
    return spec


# -------------------------------------------------------------------- helpers
def judge_error(judge: LLMJudge, message: str, result: ChatResult | None = None) -> JudgeError:
    """A :class:`JudgeError` of ``judge`` carrying the raw reply."""
    return JudgeError(f"{judge.name}: {message}", scorer=judge.name, raw=None if result is None else result.to_dict())


def sum_usage(results: Sequence[ChatResult]) -> dict[str, int]:
    """What a row's calls cost (``Score.metadata["usage"]``; see :mod:`scorers.llm.usage` for each figure)."""
    if len(results) == 1 and results[0].cached:  # a cache hit costs nothing: the same figures every time
        return dict(_ONE_CACHED)
    return summed_usage([call_usage(result) for result in results])


#: :func:`sum_usage` of one cached call.
_ONE_CACHED = summed_usage([{"cached": 1}])


class JudgeAggregator(MeanAggregator):
    """:class:`MeanAggregator` plus ``usage``: calls, attempts and tokens per model (failed rows' included, from
    their errors) and the cost estimate."""

    def __init__(self) -> None:
        super().__init__()
        self.usage = Usage()

    def add(self, score: Score) -> None:
        super().add(score)
        usage, model = score.metadata.get("usage"), score.metadata.get("model")
        if isinstance(usage, Mapping) and isinstance(model, str):
            self.usage.add_figures(model, usage)

    def add_error(self, error: Mapping[str, Any]) -> None:
        """Count what a failed row's calls cost (its error record's ``usage``, with the ``model``)."""
        usage = error.get("usage")
        if isinstance(usage, Mapping) and isinstance(usage.get("model"), str):
            self.usage.add_figures(usage["model"], usage)

    def merge(self, other: Aggregator) -> "JudgeAggregator":
        """Fold in another shard's figures and token usage."""
        super().merge(other)
        assert isinstance(other, JudgeAggregator)
        self.usage.merge(other.usage)
        return self

    def result(self) -> dict[str, Any]:
        return {**super().result(), "usage": self.usage.to_dict()}
