"""The template kinds' base: a prompt (or messages) rendered per row, the reply read as the kind's verdict.

A kind is one :class:`TemplatedJudge` subclass naming its spec model (a :class:`~scorers.judges.spec.TemplateSpec`
with ``kind: Literal[...]``): defining it registers the kind (:data:`scorers.judges.spec.KIND_CLASSES`) and gives
it a constructor derived from the model (:mod:`scorers.judges.parameters`).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from ..attachments import Attachment, Placement, attachments_problem, with_text
from ..errors import ConfigError, JudgeError, ScorerError, ScorerInputError, UnknownArgumentError
from ..fields import Field, utf8_encodable
from ..llm import ChatRequest, ChatResult, LLMEngine
from ..llm.protocols import PROTOCOLS, wire
from ..params import Param
from ..score import Score
from .base import LLMJudge
from .conversation import budget_metadata
from .derived import Derived, derivation
from .examples import examples_block, variables_problem
from .parameters import kind_constructor, kind_parameters, setting_option
from .reply import ReplyFormat
from .spec import RequestSettings, TemplateSpec, add_kind, kind_fields, kind_of
from .template import JudgeTemplate, mustache_to_jinja, render_value

if TYPE_CHECKING:
    from ..calibration.scores import SavedCalibration

__all__ = ["TemplatedJudge"]


class TemplatedJudge(LLMJudge):
    """Base of the template kinds: a prompt (or messages) rendered per row, the reply read as the kind's verdict.

    A kind is one subclass that names its spec model, which registers the kind (``kind:`` of the
    template DSL, the spec's validation and JSON Schema, :mod:`scorers.judges.discovery`)::

        class YesNoSpec(TemplateSpec):
            kind: Literal["yesno"]
            yes_score: float = 1.0

        class YesNoJudge(TemplatedJudge):
            spec_model = YesNoSpec
            ...

    Its constructor is declared once, here and in the spec model: the template parameters (``name``,
    ``prompt_template``, ``messages``, ``template``, ``engine``, ``client``, ``max_reasks``, ``description``,
    ``settings``), then the kind's own fields (its spec model's keys that :class:`TemplateSpec` does not have:
    keyword-only, typed and defaulted as the model declares them, or as a field's
    :class:`~scorers.judges.spec.Argument` says where a caller passes something else: a mapping for a model, a
    ``None`` default, a positional field), then the request settings. Each kind's class gets an ``__init__`` of
    that signature when it is defined (:mod:`scorers.judges.parameters`); the spec model validates everything at
    once, and gives :meth:`kind_params` and :meth:`options`. A kind may define:

    ``_spec_fields(name, template, fields) -> dict``
        the fields as the spec model reads them (``fields`` as given; a list for a sequence, a default
        taken from the template); a field whose parameter defaults to ``None`` and is left ``None`` takes the
        model's default;
    ``_configure_kind(spec)``
        the judge's attributes from the validated spec, and its own checks;

    and it defines:

    ``_format() -> ReplyFormat`` and ``_instruction() -> str``
        the JSON object asked for in the structured modes, and the instruction appended to the prompt;
    ``_validate(result)``
        what the reply says (raise :class:`InvalidReply` to have it re-asked);
    ``_score_from(results, latency) -> Score``
        the score from the validated replies (``result.parsed`` holds what ``_validate`` returned);
    ``_requests(variables) -> list[ChatRequest]`` (optional)
        the requests of one row (one by default; several independent ones: samples, both orders).
    """

    #: The kind's spec model (a :class:`~scorers.judges.spec.TemplateSpec` with ``kind: Literal[...]``).
    spec_model: ClassVar[type[TemplateSpec] | None] = None

    #: The kind's own constructor parameters (set for each kind from its spec model's fields).
    _kind_parameters: ClassVar[tuple[inspect.Parameter, ...]] = ()
    #: The kind's fields that, left ``None``, take the spec model's default (their parameter defaults to ``None``).
    _left_to_spec: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        model = cls.__dict__.get("spec_model")
        if model is not None:
            cls._kind_parameters = kind_parameters(model)
            fields = model.model_fields
            cls._left_to_spec = frozenset(
                p.name
                for p in cls._kind_parameters
                if p.default is None
                and not fields[p.name].is_required()
                and fields[p.name].get_default(call_default_factory=True) is not None
            )
            if "__init__" not in cls.__dict__:
                cls.__init__ = kind_constructor(cls, TemplatedJudge.__init__)  # type: ignore[method-assign]
        super().__init_subclass__(**kwargs)
        if model is None:
            return
        kind = kind_of(model)
        declared = cls.__dict__.get("judge_kind")
        if declared not in (None, kind):
            raise TypeError(f"{cls.__qualname__}: judge_kind {declared!r} differs from its spec model's kind {kind!r}")
        cls.judge_kind = add_kind(cls)

    def __init__(
        self,
        name: str,
        prompt_template: str | None = None,
        *fields: Any,
        messages: Sequence[Mapping[str, str]] | None = None,
        template: JudgeTemplate | None = None,
        examples: Sequence[Mapping[str, Any]] | None = None,
        engine: LLMEngine | None = None,
        client: Any = None,
        max_reasks: int | None = None,
        description: str | None = None,
        settings: RequestSettings | Mapping[str, Any] | None = None,
        calibration: Any = None,
        **request: Any,
    ) -> None:
        """``prompt_template`` (mustache/Jinja text), ``messages`` (``{"role", "content"}`` templates) or a
        loaded ``template``: exactly one; ``examples``: labelled examples shown before the instruction (the
        spec's ``examples:`` key, :mod:`scorers.judges.examples`; given, they replace the template's, ``[]``
        none); ``engine``, or ``client``/``max_reasks`` to build one; ``description`` (else the template's); then
        the kind's own fields (``fields``, by position where the kind allows) and the request settings
        (``settings``, ``**request``: see :meth:`LLMJudge.request_fields`); ``calibration``: a calibration file
        fitted for this judge (its path or content: :mod:`scorers.calibration.scores`), which maps every score.

        Each kind's class has its own ``__init__`` of this signature with its fields spelled out; this one
        binds them for a kind that writes its own constructor and calls it."""
        self._spec_model()
        names = {p.name for p in self._kind_parameters}
        bound = inspect.Signature(list(self._kind_parameters)).bind(
            *fields, **{key: request.pop(key) for key in list(request) if key in names}
        )
        bound.apply_defaults()
        arguments: dict[str, Any] = dict(name=name, prompt_template=prompt_template, messages=messages)
        arguments.update(template=template, examples=examples, engine=engine, client=client, max_reasks=max_reasks)
        arguments.update(description=description, settings=settings, calibration=calibration)
        self._construct(arguments, bound.arguments, request)

    def _construct(self, arguments: Mapping[str, Any], fields: Mapping[str, Any], request: Mapping[str, Any]) -> None:
        """Build the judge from the template parameters (``arguments``), the kind's fields and the request
        settings: :meth:`_spec_fields`, :meth:`_setup`, then :meth:`_configure_kind` with the validated spec."""
        data = self._spec_fields(arguments["name"], arguments["template"], dict(fields))
        data = {k: v for k, v in data.items() if not (v is None and k in self._left_to_spec)}
        calibration = arguments.get("calibration")
        setup = {k: v for k, v in arguments.items() if k != "calibration"}
        self._configure_kind(self._setup(**setup, spec_fields=data, request=request))
        if calibration is not None:
            self._calibrate(calibration)

    def _spec_fields(self, name: str, template: JudgeTemplate | None, fields: dict[str, Any]) -> dict[str, Any]:
        """The kind's fields as its spec model reads them (as given, by default)."""
        return fields

    def _configure_kind(self, spec: Any) -> None:
        """Set the judge's attributes from the validated ``spec`` and check what the model alone cannot."""

    @classmethod
    def options(cls) -> dict[str, Param]:
        """The kind's own settings (its spec model's fields, as its constructor takes them), then the request
        settings (:meth:`LLMJudge.options`).

        >>> from scorers.judges import PairwiseJudge
        >>> list(PairwiseJudge.options())[:4], PairwiseJudge.options()["swap"].help
        (['other', 'swap', 'allow_tie', 'use_cot'], 'ask in both orders too and score the mean')
        """
        if cls.spec_model is None:
            return super().options()
        fields = cls.spec_model.model_fields
        own = {p.name: setting_option(p.name, fields[p.name], p.default, p.annotation) for p in cls._kind_parameters}
        return {**own, **super().options()}

    def kind_params(self) -> dict[str, Any]:
        """The kind's own settings as its signature (``params()``, ``show``) records them: the spec model's own
        fields (:func:`~scorers.judges.spec.kind_fields`) as the validated spec holds them, nested models as
        mappings. A kind overrides it only to leave out what does not apply (G-Eval's logprob settings).

        >>> from scorers.judges import RubricJudge
        >>> RubricJudge("Brief", "Rate {{output}}", criteria=[{"name": "brief", "description": "Brief."}]).kind_params()
        {'criteria': [{'name': 'brief', 'description': 'Brief.', 'anchors': None, 'weight': 1.0}], \
'scale': {'min': 1, 'max': 5}, 'threshold': None}
        """
        params: dict[str, Any] = self.spec.model_dump(include=set(kind_fields(type(self.spec))))
        return params

    def _setup(
        self,
        name: str,
        *,
        prompt_template: str | None,
        messages: Sequence[Mapping[str, str]] | None,
        template: JudgeTemplate | None,
        description: str | None,
        engine: LLMEngine | None,
        examples: Sequence[Mapping[str, Any]] | None = None,
        client: Any,
        max_reasks: int | None,
        spec_fields: Mapping[str, Any],
        settings: RequestSettings | Mapping[str, Any] | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> Any:
        """Validate the kind's settings (``spec_fields``) and the
        request settings (``settings``, ``request``: see :meth:`LLMJudge.request_fields`) with the kind's spec
        model (one :class:`ConfigError` listing every problem), build the engine and the template; returns the
        validated spec."""
        given = [x is not None for x in (prompt_template, messages, template)]
        if sum(given) != 1:
            raise ConfigError(f"{name}: give exactly one of prompt_template, messages or template", scorer=name)
        data: dict[str, Any] = {"kind": self.judge_kind, **spec_fields}
        if template is not None:
            data["messages"] = [{"role": role, "content": content} for role, content in template.messages]
        elif prompt_template is not None:
            data["prompt"] = prompt_template
        else:
            data["messages"] = list(messages or [])
        chosen = template.examples if examples is None and template is not None else examples or ()
        if chosen:
            data["examples"] = [dict(example) for example in chosen]
        spec = self._init_judge(
            name, data, settings, request or {}, engine=engine, client=client, max_reasks=max_reasks
        )
        if template is None:
            template = JudgeTemplate(
                name=name,
                messages=tuple((role, mustache_to_jinja(content)) for role, content in spec.message_pairs()),
                choice_scores=getattr(spec, "choice_scores", None),
                description=description or "",
            )
        shown = tuple(example.model_dump(exclude_none=True) for example in spec.examples or ())
        if shown != template.examples:
            template = dataclasses.replace(template, examples=shown)
        problem = variables_problem(shown, template.variables)
        if problem is not None:
            raise ConfigError(f"{name}: {template.where(problem[0])}: {problem[1]}", scorer=name)
        self.template = template
        self.description = " ".join((description or template.description or type(self).description).split())
        attachments = set(template.attachments)
        protocol = wire(self.api or self.engine.api) if attachments else None
        if protocol is not None and not protocol.capabilities.attachments:
            serving = [p for p in PROTOCOLS.names() if PROTOCOLS.get(p).capabilities.attachments]
            raise ConfigError(
                f"{name}: {template.where('fields')} declares attachments ({', '.join(sorted(attachments))}), which "
                f"the {protocol.name} protocol does not send; use an api that does: {', '.join(serving)}",
                scorer=name,
            )
        self.fields = tuple(
            Field(v, (object,), required=True, description=f"attachment {{{{{v}}}}}", convert=_attachment)
            if v in attachments
            else Field(v, (object,), required=True, description=f"template variable {{{{{v}}}}}", convert=_text_or_data)
            for v in self.variables()
        )
        self.example = f"scorers.get({name!r})({', '.join(f'{v}=...' for v in self.variables())})"
        return spec

    @classmethod
    def _spec_model(cls) -> type[TemplateSpec]:
        if cls.spec_model is None:
            raise TypeError(f"{cls.__qualname__} names no spec_model: a template kind declares its spec model")
        return cls.spec_model

    @classmethod
    def from_definition(
        cls, template: JudgeTemplate, settings: Mapping[str, Any], /, **overrides: Any
    ) -> "TemplatedJudge":
        """Build from a template file's definition; keyword arguments win over its settings (and so do the
        fields a ``settings=`` value sets)."""
        value = overrides.get("settings")
        chosen = (
            value.model_fields_set
            if isinstance(value, RequestSettings)
            else set(value)
            if isinstance(value, Mapping)
            else set()
        )
        arguments = {**{k: v for k, v in settings.items() if k not in chosen}, **overrides}
        calibration = arguments.get("calibration")
        if isinstance(calibration, str) and "calibration" not in overrides and template.file:
            # a template file's calibration path is read from the template's directory
            arguments["calibration"] = os.path.join(os.path.dirname(template.file), calibration)
        return cls(arguments.pop("name", template.name), template=template, **arguments)

    # ------------------------------------------------------------ calibration
    #: The calibration map applied to every score (the ``calibration`` setting), or ``None``.
    calibration: SavedCalibration | None = None

    def _calibrate(self, value: Any) -> None:
        """Apply the calibration file ``value`` from now on, once it is checked against this judge's signature (a
        :class:`ConfigError` when it was fitted for another judge)."""
        from ..calibration.scores import load_calibration

        saved = load_calibration(value, self.name)
        saved.check(self.name, self.signature())
        self.calibration = saved

    def params(self) -> dict[str, Any]:
        """As every judge's; with a calibration, what identifies its map (so calibrated and raw scores never mix)."""
        params = super().params()
        if self.calibration is not None:
            params["calibration"] = self.calibration.identity()
        return params

    def _scored(self, results: list[ChatResult], latency: float) -> Score | ScorerError:
        """As every judge's; with a calibration, the score mapped, the metadata keeping the ``raw_score``."""
        outcome = super()._scored(results, latency)
        saved = self.calibration
        if saved is None or not isinstance(outcome, Score) or outcome.score is None:
            return outcome
        raw = saved.value(outcome.score, outcome.metadata)
        if raw is None:
            return JudgeError(
                f"{self.name}: its calibration maps {saved.input}, which this judgment does not report",
                scorer=self.name,
            )
        metadata = {
            **outcome.metadata,
            "raw_score": outcome.score,
            "calibration": {**saved.identity(), "file": saved.file},
        }
        return Score(outcome.name, float(saved.map.apply([raw])[0]), metadata, outcome.stats)

    # ------------------------------------------------------------- describing
    def variables(self) -> tuple[str, ...]:
        """The fields of a row this judge reads: the template's variables."""
        return self.template.variables

    def prompt_params(self) -> dict[str, Any]:
        # the file's base name only: an absolute path would make signatures differ between machines
        return {
            "template": {
                "name": self.template.name,
                "hash": self.template.content_hash(),
                "file": os.path.basename(self.template.file) if self.template.file else None,
            }
        }

    def describe(self) -> dict[str, Any]:
        """What ``python -m scorers show`` prints for a judge: kind, variables, template file and settings."""
        return {**super().describe(), "template_file": self.template.file}

    # --------------------------------------------------------------- requests
    def render(self, variables: Mapping[str, Any], instruction: str) -> list[dict[str, Any]]:
        """The template's messages with ``instruction`` appended to the last (user) message."""
        with Placement() as placement:
            messages = self.template.render(variables)
        if placement.found:
            self._check_attachments(placement.found)
        if self.template.examples:
            instruction = f"{examples_block(self.template.examples, self.template.variables)}\n\n{instruction}"
        messages[-1] = {**messages[-1], "content": with_text(messages[-1]["content"], f"\n\n{instruction}")}
        return messages

    def _format(self) -> ReplyFormat:
        """The JSON object the judge asks for in the structured modes."""
        raise NotImplementedError

    def _instruction(self) -> str:
        """What the last user message ends with: how to answer, in the judge's response mode."""
        raise NotImplementedError

    def _request_parts(self) -> tuple[str, Any, Any, Any]:
        """The instruction, tools, tool_choice and response_format: the same for every row, built once."""
        key = (self.response_mode, self.use_cot)
        memo = self.__dict__.get("_parts_memo")
        if memo is None or memo[0] != key:
            memo = self._parts_memo = (key, (self._instruction(), *self._format().request_parts(self.response_mode)))
        return memo[1]

    def build_request(self, variables: Mapping[str, Any], sample: int | None = None) -> ChatRequest:
        """The request of one judgment; ``sample`` (the seed) makes repeated samples independent."""
        instruction, tools, tool_choice, response_format = self._request_parts()
        return self.request(
            self.render(variables, instruction),
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            sample=sample,
        )

    def _check_attachments(self, found: Sequence[tuple[str, Attachment]]) -> None:
        """Refuse a row whose attachments (``(field, attachment)`` as the prompt shows them) the judge's wire
        protocol cannot send (a media type it does not take, a URL where it takes only data, more bytes than its
        limit), as the row's :class:`~scorers.errors.ScorerInputError` naming the field and the limit, before any
        request."""
        protocol = wire(self.api or self.engine.api)
        problem = attachments_problem(found, protocol.name, protocol.capabilities)
        if problem is not None:
            raise ScorerInputError(self.name, *problem)

    def _requests(self, variables: Mapping[str, Any]) -> list[ChatRequest]:
        """The requests of one row: one judgment by default."""
        return [self.build_request(variables)]

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
                raise ScorerInputError(
                    self.name, exc.field, f"{exc.problem}: it is a template variable of {self.template.where()}"
                ) from exc
            raise

    def _derived(self, rows: Sequence[Mapping[str, Any]]) -> Derived | None:
        """The batch's derived cache keys (:mod:`scorers.judges.derived`): rows answered without rendering."""
        return derivation(self, rows)

    def _row_requests(self, fields: Mapping[str, Any]) -> list[ChatRequest]:
        names = set(self.variables())
        return self._requests({k: v for k, v in fields.items() if k in names})

    def call_metadata(self, results: Sequence[ChatResult], latency: float) -> dict[str, Any]:
        """As every judge's, and for a template that reads conversations, how their tokens are counted."""
        budgets = self.template.budgets()
        return {**super().call_metadata(results, latency), **(budget_metadata(budgets) if budgets else {})}

    async def _run_row(
        self, fields: Mapping[str, Any], requests: list[ChatRequest], hits: list[ChatResult | None] | None
    ) -> Score | ScorerError:
        started = time.perf_counter()
        replies = await self._judge_row(requests, hits)
        return self._scored(replies, time.perf_counter() - started)


def _attachment(value: Any) -> Attachment:
    """A declared attachment field's value read as an :class:`~scorers.attachments.Attachment` (a path is read
    now); what cannot be is the row's bad input."""
    return Attachment.of(value)


def _text_or_data(value: Any) -> Any:
    """Template variables may be text, JSON-like data (rendered as JSON) or an attachment; floats must be finite.

    A value the prompt cannot show is refused here, as bad input naming its field (a
    :class:`~scorers.errors.ScorerInputError` for its row), not later as a template error.
    """
    if type(value) is str:
        return utf8_encodable(value)  # the request body is UTF-8
    if isinstance(value, Attachment):
        return value
    if isinstance(value, float) and value != value:
        raise ValueError("is NaN")
    try:
        shown = render_value(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot be shown in a judge prompt: {exc}") from None
    utf8_encodable(shown)
    return value
