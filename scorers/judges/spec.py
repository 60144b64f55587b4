"""One validated model of a judge's YAML spec (pydantic), for every judge kind.

A template file's mapping, and the keyword arguments of a judge built in code,
are validated by the same models: :func:`validate_spec` returns the model or
every problem, each located by its key. The models export a JSON Schema
(``python -m scorers schema > templates.schema.json``) so that editors validate
``templates/*.yaml`` while they are typed.

>>> spec, problems = validate_spec({"kind": "rating", "prompt": "Rate {{output}}", "scale": {"min": 1, "max": 10}})
>>> spec.kind, spec.scale.max, problems
('rating', 10, [])
>>> _, problems = validate_spec({"prompt": "Is {{output}} polite?", "choice_scores": {"Y": 2}})
>>> problems
[('choice_scores.Y', 'must be a number in [0, 1], got 2')]

The kinds are one registry (:func:`add_kind`, :data:`KIND_CLASSES`): a judge class that names
its spec model (a :class:`TemplateSpec` subclass whose ``kind`` is one literal) is added under
that kind, and :data:`KINDS`, the discriminated union (:data:`JudgeSpec`), the JSON Schema and
the class that builds each kind's judges are all read from it when they are needed (a kind
added later is in them from then on). This module defines the built-in kinds' models and never
imports a judge; the built-in judge classes register themselves when :mod:`scorers.judges` is
imported. Kinds are listed (``KINDS``, the
schema's ``oneOf``) in the order their models were defined, whatever the order of imports.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Mapping, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from .._util import is_number
from ..llm.config import APIS as config_apis
from ..llm.protocol import extra_conflict
from ..plugins import Registry
from .conversation import DEFAULT_MAX_TOKENS
from .examples import Example, verdict_problem

# KINDS and JudgeSpec are computed on first read (module __getattr__), from the kinds registered by then.
__all__ = [
    "RESPONSE_MODES",
    "APIS",
    "KINDS",  # noqa: F822
    "Message",
    "FieldSpec",
    "RequestSettings",
    "TemplateSpec",
    "Scale",
    "Criterion",
    "ClassifierSpec",
    "RubricSpec",
    "RatingSpec",
    "GEvalSpec",
    "PairwiseSpec",
    "JudgeSpec",  # noqa: F822
    "validate_spec",
    "validate_model",
    "json_schema",
    "COMMON_SETTINGS",
    "add_kind",
    "remove_kind",
    "KIND_CLASSES",
    "ENTRY_POINT_GROUP",
    "kind_model",
    "kind_of",
    "kind_fields",
    "expected_value",
    "Argument",
    "JurorSpec",
    "JurySpec",
]

#: How a judge asks for its verdict: a forced tool call, a JSON-schema ``response_format``, a plain
#: ``json_object`` ``response_format`` (the schema in the prompt; for servers without ``json_schema``), or text.
RESPONSE_MODES = ("tools", "json", "json_object", "text")
#: The wire protocols built in, which a judge can call (:mod:`scorers.llm.protocols`; a plugin may add more).
APIS = config_apis
#: Settings every kind takes, passed to the judge's constructor when given.
COMMON_SETTINGS = (
    "use_cot",
    "model",
    "temperature",
    "max_tokens",
    "response_mode",
    "reasoning_effort",
    "api",
    "extra_args",
)

_NAME_PATTERN = r"^[A-Za-z][\w\-.]*$"
_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"

#: What a key must hold, said the same way in every problem about it.
_EXPECTED = {
    "name": "a name (letters, digits, _ - .)",
    "description": "text",
    "use_cot": "true or false",
    "model": "a model name",
    "temperature": "a number in [0, 2] or null",
    "max_tokens": "a positive integer or null",
    "response_mode": " | ".join(RESPONSE_MODES),
    "reasoning_effort": "an effort level such as low, medium or high",
    "api": " | ".join(APIS),
    "extra_args": "a mapping of further request parameters",
    "fields": "a mapping of field name → conversation or attachment (or {type: conversation, max_tokens: N})",
    "prompt": "non-empty text",
    "threshold": "a number on the rubric's scale",
    "score_mode": "logprobs | top_token | sampling",
    "top_logprobs": "an integer in [1, 20]",
    "min_prob": "a probability in (0, 1)",
    "swap": "true or false",
    "allow_tie": "true or false",
    "samples": "an integer >= 1",
    "aggregate": "mean | majority",
    "other": "the name of the field holding the second output",
    "calibration": "the path of a calibration file (from the template's directory) or its content",
}


def expected_value(key: str) -> str | None:
    """What a key must hold, in the words of its problems (``None`` for a key without such words).

    >>> expected_value("temperature")
    'a number in [0, 2] or null'
    """
    return _EXPECTED.get(key)


_PUNCTUATION = str.maketrans("", "", string.punctuation)
_Text = Annotated[str, Field(min_length=1, pattern=r"\S")]


class _ModelDefault:
    def __repr__(self) -> str:
        return "<the model's default>"


@dataclass(frozen=True)
class Argument:
    """How a kind's constructor takes one of its spec model's fields, where that differs from what the model holds:
    put in the field's ``Annotated`` metadata (outermost). ``annotation`` is what its signature shows (a mapping
    where the model holds a model, any sequence where it holds a list); ``default`` the constructor's (``None``
    left ``None`` takes the model's default; unset: the model's own); ``positional``: it may be passed by position,
    after the prompt.

    >>> import inspect
    >>> from scorers.judges import LLMClassifier
    >>> str(inspect.signature(LLMClassifier).parameters["choice_scores"])
    "choice_scores: 'Mapping[str, float] | None' = None"
    """

    annotation: str
    default: Any = _ModelDefault()
    positional: bool = False

    @property
    def takes_model_default(self) -> bool:
        return isinstance(self.default, _ModelDefault)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Message(_Strict):
    """One chat message of a template: ``role`` and ``content`` (mustache/Jinja text)."""

    role: Literal["system", "user", "assistant"]
    content: _Text


def _or_shorthand(schema: dict[str, Any]) -> None:
    """A field declaration's JSON Schema also takes the shorthands ``conversation`` and ``attachment`` (the
    validator of ``TemplateSpec.fields`` expands them, so a parsed spec holds only :class:`FieldSpec` s)."""
    declared = dict(schema)
    schema.clear()
    schema["anyOf"] = [declared, {"enum": ["conversation", "attachment"]}]


class FieldSpec(_Strict):
    """A template field's declared type: ``conversation`` (read as a conversation, shown as a transcript;
    ``scorers.judges.conversation``) with its budget in tokens (counted as UTF-8 bytes), or ``attachment`` (an
    image, audio clip or document, shown as a content part; :mod:`scorers.attachments`).
    ``fields: {name: conversation}`` is short for ``{name: {type: conversation}}``."""

    model_config = ConfigDict(json_schema_extra=_or_shorthand)

    type: Literal["conversation", "attachment"]
    max_tokens: Annotated[int, Field(gt=0)] = DEFAULT_MAX_TOKENS

    @model_validator(mode="after")
    def _budget_of_a_conversation(self) -> "FieldSpec":
        if self.type == "attachment" and "max_tokens" in self.model_fields_set:
            raise ValueError("max_tokens is a conversation's budget; an attachment has none")
        return self


class Scale(_Strict):
    """An integer scale from ``min`` to ``max`` (``min < max``)."""

    min: int = 1
    max: int = 5

    @model_validator(mode="after")
    def _ordered(self) -> "Scale":
        if self.min >= self.max:
            raise ValueError(f"min ({self.min}) must be below max ({self.max})")
        return self

    # shadows pydantic's BaseModel.schema (its deprecated v1 classmethod): a Scale's schema is one value's
    def schema(self, description: str = "") -> dict[str, Any]:  # type: ignore[override]
        """The JSON schema of one value on the scale: an integer ``enum``, which grammar-constrained servers
        (llama.cpp) enforce where they ignore ``minimum``/``maximum``."""
        schema: dict[str, Any] = {"type": "integer", "enum": list(range(self.min, self.max + 1))}
        return {**schema, "description": description} if description else schema

    def normalise(self, value: float) -> float:
        """``(value - min) / (max - min)``: the scale mapped onto [0, 1]."""
        return (value - self.min) / (self.max - self.min)


class Criterion(_Strict):
    """A rubric criterion: a name (a JSON property), what it judges, optional anchors per value, a weight."""

    name: Annotated[str, Field(pattern=_IDENTIFIER)]
    description: _Text
    anchors: dict[int, _Text] | None = None
    weight: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0

    @field_validator("anchors", mode="before")
    @classmethod
    def _anchor_keys(cls, value: Any) -> Any:  # YAML keys 1: "..." arrive as ints; "1" as text is accepted too
        if isinstance(value, Mapping):
            return {
                int(k) if isinstance(k, str) and k.strip().lstrip("-").isdigit() else k: v for k, v in value.items()
            }
        return value


class RequestSettings(_Strict):
    """The settings of a judge's requests, shared by every kind (and by judges whose prompts are files)."""

    use_cot: bool | None = Field(None, description="ask for step-by-step reasoning before the verdict")
    model: _Text | None = Field(None, description="the judge model (None: the engine's)")
    temperature: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)] | None = Field(
        None, description="the sampling temperature (None: the server's default)"
    )
    max_tokens: Annotated[int, Field(gt=0)] | None = Field(
        None, description="each call's output budget (None: the kind's default for its chain-of-thought setting)"
    )
    response_mode: Literal["tools", "json", "json_object", "text"] | None = Field(
        None,
        description="how the verdict is asked for: a forced tool call, a json_schema response format, a "
        "json_object one (the schema in the prompt) or text",
    )
    reasoning_effort: _Text | None = Field(None, description="a reasoning model's effort (None: not sent)")
    api: _Text | None = Field(
        None,
        description="the wire protocol called: chat, responses, anthropic, gemini, bedrock or a plugin's "
        "(None: the engine's)",
        json_schema_extra={"examples": list(config_apis)},
    )
    extra_args: dict[str, Any] | None = Field(None, description="further request parameters, sent as given")
    strip_reasoning: bool | None = Field(
        None,
        description="leave the judged output's reasoning (<think>, <thinking>, <reasoning> blocks) out of what is "
        "judged, {{reasoning}} holding it; a block never closed is an empty answer (None: on)",
    )

    @field_validator("api")
    @classmethod
    def _api_is_a_wire_protocol(cls, value: str | None) -> str | None:
        from ..llm.protocols import PROTOCOLS

        if value is not None and value not in PROTOCOLS:
            raise _KeyError("api", f"unknown wire protocol {value!r}; expected one of {', '.join(PROTOCOLS.names())}")
        return None if value is None else PROTOCOLS.get(value).name

    @field_validator("extra_args")
    @classmethod
    def _extra_args_leave_the_engine_its_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        conflict = extra_conflict(value) if value else None
        if conflict:
            raise _KeyError("extra_args", conflict)
        return value


class JurorSpec(RequestSettings):
    """One juror of a jury built from a judge: request settings that override the judge's, a ``name`` (the label in
    the metadata; default: its model) and the ``base_url`` of its endpoint (default: the judge's)."""

    name: Annotated[str, Field(pattern=_NAME_PATTERN)] | None = None
    base_url: _Text | None = Field(None, description="the juror's endpoint (None: the judge's engine's)")


class JurySpec(_Strict):
    """``jury:`` — the judge asked by several jurors, their verdicts combined by ``aggregate`` (see
    :mod:`scorers.judges.jury`)."""

    jurors: Annotated[list[JurorSpec], Field(min_length=2)] = Field(description="each juror's settings")
    aggregate: Literal["majority", "mean", "median", "weighted"] = Field(description="how verdicts combine")
    tie: Literal["tie", "fail", "abstain"] | None = Field(None, description="a tied vote (majority, weighted choices)")
    weights: list[Annotated[float, Field(gt=0, allow_inf_nan=False)]] | None = Field(None, description="per juror")
    min_jurors: Annotated[int, Field(ge=1)] | None = Field(None, description="jurors that must answer (None: all)")

    @model_validator(mode="after")
    def _consistent(self) -> "JurySpec":
        if (self.aggregate == "majority" and self.tie is None) or (self.aggregate in ("mean", "median") and self.tie):
            raise _KeyError(
                "jury.tie", "give tie (tie | fail | abstain) with majority or a weighted vote, and only then"
            )
        if (self.aggregate == "weighted") != (self.weights is not None):
            raise _KeyError("jury.weights", "give weights with aggregate weighted, and only then")
        if self.weights is not None and len(self.weights) != len(self.jurors):
            raise _KeyError("jury.weights", f"{len(self.weights)} weights for {len(self.jurors)} jurors")
        if self.min_jurors is not None and self.min_jurors > len(self.jurors):
            raise _KeyError("jury.min_jurors", f"{self.min_jurors} is more than the {len(self.jurors)} jurors")
        return self


#: Every TemplateSpec subclass, numbered in the order of definition (the order of the kinds).
_DEFINED: dict[type, int] = {}


class TemplateSpec(RequestSettings):
    """What every template kind's spec holds: name, description, the prompt (or messages) and the request settings.

    A kind's model subclasses it with ``kind: Literal["<kind>"]`` and its own keys; the judge class
    that names it as its ``spec_model`` registers the kind (:func:`add_kind`).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _DEFINED[cls] = len(_DEFINED)  # kinds are listed in the order their models were defined

    # exactly one of prompt and messages, for editors too (the validator below says it in words)
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        json_schema_extra={"oneOf": [{"required": ["prompt"]}, {"required": ["messages"]}]},
    )

    name: Annotated[str, Field(pattern=_NAME_PATTERN)] | None = None
    description: str = ""
    prompt: _Text | None = None
    messages: Annotated[list[Message], Field(min_length=1)] | None = None
    fields: dict[Annotated[str, Field(pattern=_IDENTIFIER)], FieldSpec] | None = None
    jury: JurySpec | None = Field(None, description="ask several jurors and combine their verdicts")
    calibration: _Text | dict[str, Any] | None = Field(
        None,
        description="a calibration file fitted for this judge (python -m scorers calibrate), which maps its scores",
    )
    examples: Annotated[list[Example], Field(min_length=1)] | None = Field(
        None, description="labelled examples shown before the instruction (scorers.judges.examples)"
    )
    provenance: dict[str, Any] | None = Field(
        None, description="how the file was made (python -m scorers calibrate writes it); not the judge's identity"
    )

    @field_validator("fields", mode="before")
    @classmethod
    def _field_shorthand(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {name: {"type": kind} if isinstance(kind, str) else kind for name, kind in value.items()}
        return value

    @model_validator(mode="after")
    def _one_prompt(self) -> "TemplateSpec":
        if (self.prompt is None) == (self.messages is None):
            raise _KeyError("prompt", "give exactly one of prompt or messages")
        if self.messages is not None and self.messages[-1].role != "user":
            raise _KeyError(
                "messages", "the last message must have role user (the judge instruction is appended to it)"
            )
        for index, example in enumerate(self.examples or ()):
            problem = verdict_problem(self, example.verdict)
            if problem:
                raise _KeyError(f"examples[{index}].verdict", problem)
        return self

    def settings(self) -> dict[str, Any]:
        """The judge constructor's keyword arguments this spec sets (beyond the prompt), as given."""
        skip = {"name", "description", "prompt", "messages", "kind", "fields", "examples", "provenance"}
        return {key: getattr(self, key) for key in self.model_fields_set if key not in skip}

    def conversation_fields(self) -> tuple[tuple[str, int], ...]:
        """``(field, max tokens)`` for each field declared a conversation, in the file's order."""
        return tuple(
            (name, spec.max_tokens) for name, spec in (self.fields or {}).items() if spec.type == "conversation"
        )

    def attachment_fields(self) -> tuple[str, ...]:
        """The fields declared an attachment, in the file's order."""
        return tuple(name for name, spec in (self.fields or {}).items() if spec.type == "attachment")

    def message_pairs(self) -> tuple[tuple[str, str], ...]:
        """The prompt as ``(role, content)`` pairs: a plain ``prompt`` is one user message."""
        if self.prompt is not None:
            return (("user", self.prompt.strip()),)
        return tuple((m.role, m.content.strip()) for m in self.messages or ())


def kind_fields(model: type[TemplateSpec]) -> tuple[str, ...]:
    """A kind's own keys: its spec model's fields that :class:`TemplateSpec` does not have (nor ``kind``), in order.

    >>> kind_fields(RubricSpec)
    ('criteria', 'scale', 'threshold')
    """
    return tuple(name for name in model.model_fields if name not in TemplateSpec.model_fields and name != "kind")


class _KeyError(ValueError):
    """A model-level problem that belongs to one key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message


def _choice_key(key: Any) -> str:
    if isinstance(key, bool):
        raise ValueError(
            f"choice key {key!r} is a boolean, not a string: YAML 1.1 reads bare Yes/No/On/Off/"
            f'True/False as booleans. Quote the key, e.g. "Yes": 1'
        )
    if not isinstance(key, str):
        raise ValueError(f'choice key {key!r} is a {type(key).__name__}, not a string; quote it, e.g. "{key}"')
    if not key.strip() or key != key.strip():
        raise ValueError(f"choice key {key!r} must be non-empty without surrounding spaces")
    return key


def _check_sampling(spec: Any, temperature_key: str = "samples") -> None:
    """Independent samples (``spec.samples``) need a temperature above 0 (a problem of ``temperature_key``: at 0
    they are the same judgment repeated) and no seed in ``extra_args`` (each sample is sent its own)."""
    if not spec.temperature:
        raise _KeyError(
            temperature_key,
            f"samples={spec.samples} needs temperature > 0: at temperature 0 the samples are the same judgment repeated",
        )
    if "seed" in (spec.extra_args or {}):
        raise _KeyError(
            "extra_args",
            f"a seed in extra_args would give all {spec.samples} samples the same "
            "seed (each sample is sent its own): leave it out",
        )


class ClassifierSpec(TemplateSpec):
    """``kind: classifier`` — the model picks one of ``choice_scores``; the score is its value."""

    kind: Literal["classifier"] = "classifier"
    # a template that defines them needs none; they may be passed by position
    choice_scores: Annotated[
        dict[str, float], Argument("Mapping[str, float] | None", default=None, positional=True)
    ] = Field(description="each choice's score, in [0, 1]")
    samples: Annotated[int, Field(ge=1)] = Field(1, description="independent judgments per row (needs temperature)")
    aggregate: Annotated[Literal["mean", "majority"], Argument("str")] = Field(
        "mean", description="how samples combine: the mean of their scores, or the majority choice's"
    )

    @model_validator(mode="after")
    def _check(self) -> "ClassifierSpec":
        if self.samples > 1:
            _check_sampling(self, "samples")
        if self.response_mode == "text":
            bad = [c for c in self.choice_scores if c != c.translate(_PUNCTUATION) or c != " ".join(c.split())]
            if bad:
                raise _KeyError(
                    "response_mode", f"response_mode text cannot read choices with punctuation or extra spaces: {bad}"
                )
        return self

    @field_validator("choice_scores", mode="before")
    @classmethod
    def _scores(cls, value: Any) -> Any:
        if not isinstance(value, Mapping) or not value:
            raise _KeyError("choice_scores", "must be a non-empty mapping of choice → score")
        for key, score in value.items():
            _choice_key(key)
            if not is_number(score) or not math.isfinite(score) or not 0 <= score <= 1:
                raise _KeyError(f"choice_scores.{key}", f"must be a number in [0, 1], got {score!r}")
        return {key: float(score) for key, score in value.items()}


class RubricSpec(TemplateSpec):
    """``kind: rubric`` — named criteria on one integer scale, all graded in one call.

    Score: the weighted mean of ``(v - min) / (max - min)``; ``threshold`` (on the scale)
    gives ``passed``: the weighted mean of the raw values is at least the threshold.
    """

    kind: Literal["rubric"]
    criteria: Annotated[
        Annotated[list[Criterion], Field(min_length=1)], Argument("Sequence[Mapping[str, Any] | Criterion]")
    ] = Field(description="the named criteria: each a description, anchors per value (optional) and a weight")
    scale: Annotated[Scale, Argument("Mapping[str, int] | Scale | None", default=None)] = Field(
        Scale(), description="the integer scale every criterion is graded on"
    )
    threshold: Annotated[float, Field(allow_inf_nan=False)] | None = Field(
        None, description="the weighted mean grade (on the scale) that passes (None: no pass/fail)"
    )

    @model_validator(mode="after")
    def _check(self) -> "RubricSpec":
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise _KeyError("criteria", f"criterion names must be distinct, got {names}")
        for index, criterion in enumerate(self.criteria):
            outside = [v for v in criterion.anchors or () if not self.scale.min <= v <= self.scale.max]
            if outside:
                raise _KeyError(
                    f"criteria[{index}].anchors",
                    f"anchors {outside} are outside the scale [{self.scale.min}, {self.scale.max}]",
                )
        if self.threshold is not None and not self.scale.min <= self.threshold <= self.scale.max:
            raise _KeyError(
                "threshold", f"must be on the scale [{self.scale.min}, {self.scale.max}], got {self.threshold!r}"
            )
        if self.response_mode == "text":
            raise _KeyError("response_mode", "a rubric needs a structured reply: tools, json or json_object")
        return self


class RatingSpec(TemplateSpec):
    """``kind: rating`` — one integer from ``scale.min`` to ``scale.max``; score ``(r - min) / (max - min)``."""

    kind: Literal["rating"]
    scale: Annotated[Scale, Argument("Mapping[str, int] | Scale")] = Field(
        description="the integer scale of the rating"
    )


class GEvalSpec(TemplateSpec):
    """``kind: geval`` — criteria, evaluation steps (given or generated once), then a score on a scale.

    ``score_mode: logprobs`` scores ``Σ s·p(s) / Σ p(s)`` over the score token's alternatives that are
    integers on the scale with ``p >= min_prob``; ``top_token`` takes the integer the model wrote; ``sampling``
    the mean of ``samples`` (k >= 2) independent judgments at ``temperature`` > 0 (where there are no logprobs).
    """

    kind: Literal["geval"]
    criteria: _Text = Field(description="what is judged")
    steps: Annotated[Annotated[list[_Text], Field(min_length=1)] | None, Argument("Sequence[str] | None")] = Field(
        None, description="the evaluation steps (None: generated once per template and model)"
    )
    scale: Annotated[Scale, Argument("Mapping[str, int] | Scale | None", default=None)] = Field(
        Scale(), description="the integer scale of the score"
    )
    score_mode: Annotated[Literal["logprobs", "top_token", "sampling"], Argument("str")] = Field(
        "logprobs",
        description="logprobs: the score weighted by its token's probabilities; top_token: as written; sampling: "
        "the mean of `samples` judgments at a temperature above 0",
    )
    top_logprobs: Annotated[int, Field(ge=1, le=20)] = Field(20, description="alternatives read at the score token")
    min_prob: Annotated[float, Field(gt=0, lt=1)] = Field(0.01, description="the least probability that counts")
    samples: Annotated[int, Field(ge=1)] = Field(
        1, description="score_mode sampling's independent judgments per row (at least 2)"
    )
    prompt: _Text | None = None

    @model_validator(mode="after")
    def _check(self) -> "GEvalSpec":
        if self.score_mode == "sampling":
            if self.samples < 2:
                raise _KeyError("samples", f"score_mode sampling needs samples >= 2, got {self.samples}")
            _check_sampling(self, "temperature")
        elif self.samples != 1:
            raise _KeyError("samples", "samples are score_mode sampling's: set score_mode: sampling")
        if self.response_mode == "tools" and self.score_mode == "logprobs":
            raise _KeyError(
                "response_mode",
                "score_mode logprobs reads the score token of the reply's text: use "
                "response_mode text, json or json_object",
            )
        if self.scale.max - self.scale.min > 20 and self.score_mode != "sampling":
            raise _KeyError("scale", "logprobs see at most 20 alternatives: use a scale of at most 21 values")
        return self


class PairwiseSpec(TemplateSpec):
    """``kind: pairwise`` — which of two outputs is better (``output`` vs ``other``, default ``expected``).

    Score: 1 when ``output`` wins, 0 when the other does, 0.5 for a tie; ``swap`` asks in both orders
    and scores the mean.
    """

    kind: Literal["pairwise"]
    other: Annotated[str, Field(pattern=_IDENTIFIER)] = Field(
        "expected", description="the field holding the second output"
    )
    swap: bool = Field(False, description="ask in both orders too and score the mean")
    allow_tie: bool = Field(True, description="let the judge answer tie")


# ---------------------------------------------------------------- the kinds
#: The entry-point group a plugin package declares its judge kinds in (each names its judge class, or the module
#: that defines it: importing it registers the kind).
ENTRY_POINT_GROUP = "scorers.judge_kinds"


def _judge_class(entry_point: Any, loaded: Any) -> type:
    """Reached only when importing what the entry point names registered no kind of its name: an error."""
    raise TypeError(
        f"importing {loaded!r} registered no judge kind {entry_point.name!r}: the entry point's name is the kind "
        "(its spec model's kind: Literal[...]) and it names the TemplatedJudge subclass, or its module"
    )


#: The one registry of judge kinds: kind → judge class (whose ``spec_model`` is the kind's spec model). A kind's
#: validation, JSON Schema and judges all come from its one entry (:func:`add_kind`).
KIND_CLASSES: Registry[type] = Registry("judge kind", group=ENTRY_POINT_GROUP, case_sensitive=True, accept=_judge_class)
#: The discriminated union of the registered kinds, built on first use after a change.
_UNION: list[Any] = []


def kind_of(model: Any) -> str:
    """The kind a spec model declares: the one value of its ``kind: Literal[...]`` field.

    >>> kind_of(RatingSpec)
    'rating'
    """
    field = model.model_fields.get("kind") if isinstance(model, type) and issubclass(model, TemplateSpec) else None
    values = get_args(field.annotation) if field is not None and get_origin(field.annotation) is Literal else ()
    if len(values) != 1 or not isinstance(values[0], str) or not re.fullmatch(_NAME_PATTERN, values[0]):
        raise TypeError(
            f"{getattr(model, '__name__', model)!r} is not a judge kind's spec model: it must subclass "
            "TemplateSpec and declare kind: Literal['<name>'] (one name)"
        )
    return values[0]


def add_kind(judge: type) -> str:
    """Register the judge class ``judge`` under the kind its ``spec_model`` declares (see :func:`kind_of`); returns
    the kind. The kind's spec validation, JSON Schema and judge class all come from this one entry.

    A :class:`~scorers.judges.TemplatedJudge` subclass naming a ``spec_model`` calls it when it is defined. A
    kind is taken once: registering another class under a taken kind is a ``ValueError`` (the same class, or
    one defined again by the same module and name, replaces it).
    """
    kind = kind_of(getattr(judge, "spec_model", None))
    other = KIND_CLASSES.registered(kind)  # (reads no plugin: the built-in kinds register while scorers.judges loads)
    if other is not None and other is not judge and _qualified(other) != _qualified(judge):
        raise ValueError(f"judge kind {kind!r} is already registered, by {_qualified(other)}")
    KIND_CLASSES.register(kind, judge, replace=True)
    _UNION.clear()
    return kind


def remove_kind(kind: str) -> None:
    """Forget a registered kind, its judge class and its spec model (a test's toy kind); unknown kinds are
    ignored."""
    if KIND_CLASSES.registered(kind) is not None:
        KIND_CLASSES.remove(kind)
        _UNION.clear()


def kind_model(kind: str) -> type[TemplateSpec]:
    """The spec model of a registered kind (a ``ConfigError`` naming the kinds otherwise)."""
    return _model(KIND_CLASSES.get(kind))


def _model(judge: type) -> type[TemplateSpec]:
    model: type[TemplateSpec] = getattr(judge, "spec_model")
    return model


def _registered() -> dict[str, type[TemplateSpec]]:
    """Each kind's spec model, in the order the models were defined (whatever the order of imports)."""
    models = {kind: _model(judge) for kind, judge in KIND_CLASSES.items()}
    return dict(sorted(models.items(), key=lambda item: _DEFINED.get(item[1], len(_DEFINED))))


def _qualified(model: type) -> str:
    return f"{model.__module__}.{model.__qualname__}"


def _kinds() -> tuple[str, ...]:
    return tuple(_registered())


def _union() -> tuple[Any, TypeAdapter[Any]]:
    """``(JudgeSpec, its TypeAdapter)`` over the registered kinds, cached until the registry changes."""
    if not _UNION:
        models = tuple(_registered().values())
        if not models:
            raise RuntimeError("no judge kind is registered: import scorers.judges, which registers the built-in kinds")
        # one kind is its model (a discriminator needs a union)
        union: Any = Annotated[Union[models], Field(discriminator="kind")] if len(models) > 1 else models[0]
        _UNION[:] = [union, TypeAdapter(union)]
    return _UNION[0], _UNION[1]


def __getattr__(name: str) -> Any:
    """``KINDS`` (the registered kinds, in order) and ``JudgeSpec`` (their discriminated union), read when asked."""
    if name == "KINDS":
        return _kinds()
    if name == "JudgeSpec":
        return _union()[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def validate_spec(data: Mapping[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    """``(spec, [])`` for a valid mapping, else ``(None, [(key, message), ...])`` naming every problem.

    A mapping without ``kind`` is a classifier (the autoevals format).
    """
    if not isinstance(data, Mapping):
        return None, [("", "a judge spec must be a mapping")]
    data = dict(data)
    kind = data.setdefault("kind", "classifier")
    if not isinstance(kind, str) or kind not in KIND_CLASSES:
        return None, [("kind", f"must be one of {' | '.join(_kinds())}, got {kind!r}")]
    return validate_model(kind_model(kind), data)


def validate_model(model: type[BaseModel], data: Mapping[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    """``(model instance, [])``, or ``(None, problems)`` worded as :func:`validate_spec` words them.

    >>> validate_model(RequestSettings, {"temperature": "hot"})
    (None, [('temperature', "must be a number in [0, 2] or null, got 'hot'")])
    """
    try:
        return model.model_validate(dict(data)), []
    except ValidationError as exc:
        return None, _problems(exc, model)


def _held_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds: itself, or as the items of a list or the values of a dict (``None``: no model)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in reversed(get_args(annotation)):  # dict[K, V]: V; X | None: X; Annotated[X, ...]: X
        held = _held_model(arg)
        if held is not None:
            return held
    return None


def _model_at(model: type[BaseModel], loc: list[str]) -> type[BaseModel]:
    """The model whose key ``loc`` names (``fields.conversation.max_tokens``: FieldSpec's)."""
    for part in loc[:-1]:
        field = model.model_fields.get(part)
        held = None if field is None else _held_model(field.annotation)
        if held is not None:
            model = held  # an index or a dict key in between stays with the items' model
    return model


def _problems(exc: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        key = "".join(
            f"[{part}]" if part.isdigit() and index else f"{'.' if index else ''}{part}"
            for index, part in enumerate(loc)
        )
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, _KeyError):
            out.append((cause.key, cause.message))
        elif error["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(_model_at(model, loc).model_fields))
            out.append((key, f"unknown key (allowed: {allowed})"))
        elif error["type"] == "missing":
            out.append((key, "is required"))
        elif error["type"] == "literal_error":
            out.append((key, f"must be one of {(error.get('ctx') or {}).get('expected')}, got {error['input']!r}"))
        elif isinstance(cause, ValueError):
            out.append((key, str(cause)))
        elif len(loc) == 1 and loc[0] in _EXPECTED:
            out.append((key, f"must be {_EXPECTED[loc[0]]}, got {error['input']!r}"))
        else:
            out.append((key, f"{error['msg'][:1].lower()}{error['msg'][1:]}, got {error['input']!r}"))
    return out


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a judge template file (every kind), for editors and ``python -m scorers schema``."""
    schema = _union()[1].json_schema()
    schema.pop("discriminator", None)  # OpenAPI's keyword; oneOf alone holds (only a classifier may omit kind)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "scorers judge template"
    return schema
