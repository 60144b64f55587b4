"""Typed options of the statistics entry points, each declared once: :func:`scorers.stats.compare`,
:func:`scorers.stats.meta_evaluate`, :func:`scorers.stats.correlate` and :func:`scorers.stats.rank`.

A model lists an entry point's options: type, default, choices (a ``Literal``), the check of each
value (a :class:`~scorers.errors.ConfigError` that names the option) and a description. The
function takes its options as keyword arguments and its signature is the model's
(:meth:`Options.signature`); the command line adds its options from the same fields
(``scorers.cli._common.add_options``), the description as the help (``%(default)s`` shows the
default), so no default, choice list or option name is written twice. This module imports
neither numpy nor scipy, so building the command line's parser stays light.

>>> CorrelateOptions(human=["rating"], resamples=200).resamples
200
>>> CorrelateOptions(human=["rating"], seed=-1)
Traceback (most recent call last):
...
scorers.errors.ConfigError: seed must be a non-negative integer, got -1
>>> CompareOptions.describe("seed")
"seed of every draw (default: 12345, sacrebleu's)"
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any, Callable, ClassVar, Literal, Mapping, Sequence, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from ._aio import DEFAULT_CONCURRENCY
from ._util import did_you_mean, is_int, is_number
from .calibration.splits import DEFAULT_FRACTIONS, parse_fractions
from .errors import ConfigError

__all__ = [
    "Options",
    "CompareOptions",
    "CorrelateOptions",
    "MetaEvalOptions",
    "RankOptions",
    "COEFFICIENTS",
    "LEVELS",
    "TESTS",
    "COMPARE_RESAMPLES",
    "CalibrateOptions",
    "CALIBRATION_METHODS",
    "THRESHOLD_MEASURES",
    "BIN_STRATEGIES",
    "OtelOptions",
    "PassKOptions",
]


class Options(BaseModel):
    """The options of one entry point (:attr:`entry_point`): unknown ones are a ``TypeError`` as for any
    function, a bad value a :class:`~scorers.errors.ConfigError` naming the option."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    #: The function that takes these options, as messages name it.
    entry_point: ClassVar[str]

    def __init__(self, **options: Any) -> None:
        try:
            super().__init__(**options)
        except ValidationError as exc:
            raise self._refusal(exc) from None

    @classmethod
    def _refusal(cls, exc: ValidationError) -> Exception:
        error = exc.errors()[0]
        option = ".".join(map(str, error["loc"]))
        if error["type"] == "extra_forbidden":
            return TypeError(
                f"{cls.entry_point}() got an unexpected keyword argument {option!r}"
                f"{did_you_mean(option, cls.model_fields)}"
            )
        if error["type"] == "missing":
            return TypeError(f"{cls.entry_point}() missing required keyword argument: {option!r}")
        return ConfigError(f"{option}={error['input']!r}: {error['msg']}")

    @classmethod
    def default(cls, name: str) -> Any:
        """Option ``name``'s default.

        >>> CorrelateOptions.default("resamples")
        1000
        """
        return cls.model_fields[name].get_default(call_default_factory=True)

    @classmethod
    def describe(cls, name: str) -> str:
        """Option ``name``'s description with its default shown (the command line's help)."""
        description = cls.model_fields[name].description or ""
        return description % {"default": cls.default(name)}

    @classmethod
    def signature(
        cls, leading: Sequence[inspect.Parameter] = (), trailing: Sequence[inspect.Parameter] = (), returns: Any = None
    ) -> inspect.Signature:
        """The entry point's signature: ``leading`` parameters, every option as a keyword-only one (with its
        default, and its type), then ``trailing`` keyword-only ones."""
        options = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if field.is_required() else cls.default(name),
                annotation=field.annotation,
            )
            for name, field in cls.model_fields.items()
        ]
        return inspect.Signature([*leading, *options, *trailing], return_annotation=returns)


def _checked(test: Callable[[Any], bool], must: str) -> BeforeValidator:
    """A check of an option's value before its type's: ``{option} must {must}, got {value!r}`` when ``test``
    fails (``None``, an unset optional option, passes)."""

    def check(value: Any, info: ValidationInfo) -> Any:
        if value is not None and not test(value):
            raise ConfigError(f"{info.field_name} {must}, got {value!r}")
        return value

    return BeforeValidator(check)


def _choices(what: str, names: Sequence[str]) -> BeforeValidator:
    """Each name of a repeated option is one of ``names``: ``{what} 'x': choose from ...`` otherwise."""

    def check(values: Any) -> Any:
        for name in values or ():
            if name not in names:
                raise ConfigError(f"{what} {name!r}: choose from {', '.join(names)}")
        return values

    return BeforeValidator(check)


_positive = _checked(lambda v: is_int(v) and v >= 1, "must be a positive integer")
_PositiveInt = Annotated[int, _positive]
_Seed = Annotated[int, _checked(lambda v: is_int(v) and v >= 0, "must be a non-negative integer")]


# ------------------------------------------------------------------ compare
_Test = Literal["bs", "ar"]
#: ``bs``: paired bootstrap; ``ar``: approximate randomisation.
TESTS: tuple[str, ...] = get_args(_Test)
#: sacrebleu's defaults: 1000 bootstrap resamples, 10000 randomisation trials.
COMPARE_RESAMPLES = {"bs": 1000, "ar": 10000}


def _test(value: Any) -> Any:
    if value not in TESTS:
        raise ConfigError(f"test {value!r}: choose bs (paired bootstrap) or ar (approximate randomisation)")
    return value


class CompareOptions(Options):
    """The options of :func:`scorers.stats.compare` (``python -m scorers compare``)."""

    entry_point: ClassVar[str] = "compare"

    key: str | None = Field(None, description="match rows by this field (or dotted path) instead of by position")
    test: Annotated[_Test, BeforeValidator(_test)] = Field(
        "bs", description="paired bootstrap (bs, default) or approximate randomisation (ar)"
    )
    resamples: Annotated[int | None, _positive] = Field(
        None,
        description=f"bootstrap resamples (bs, default {COMPARE_RESAMPLES['bs']}) or randomisation trials (ar, "
        f"default {COMPARE_RESAMPLES['ar']}); intervals take N resamples under bs, {COMPARE_RESAMPLES['bs']} under ar",
    )
    seed: _Seed = Field(12345, description="seed of every draw (default: %(default)s, sacrebleu's)")
    alpha: Annotated[float, _checked(lambda v: 0.0 < v < 1.0, "must lie strictly between 0 and 1")] = Field(
        0.05, description="significance level of better/worse and --fail-if-worse (default: %(default)s)"
    )
    params: Mapping[str, Mapping[str, Any]] | None = Field(
        None,
        description="scorer parameter for the corpus figures, as for run (e.g. -p BLEU.tokenize=intl); "
        "give the settings the run used",
    )

    @property
    def draws(self) -> int:
        """``resamples``, or the test's default (:data:`COMPARE_RESAMPLES`)."""
        return COMPARE_RESAMPLES[self.test] if self.resamples is None else self.resamples


# ------------------------------------------------------------------ rank
_Ties = Literal["davidson", "half"]
_Swap = Literal["tie", "drop", "keep"]
_Style = Literal["length", "headers", "lists", "bold"]
#: How ties enter the Bradley-Terry likelihood: Davidson (1970)'s tie parameter, or half a win each way.
TIE_RULES: tuple[str, ...] = get_args(_Ties)
#: What a verdict whose two orders disagreed counts as: a tie, nothing, or each order a comparison of its own.
SWAP_RULES: tuple[str, ...] = get_args(_Swap)
#: Style covariates: normalised differences (a - b) / (a + b) of the two answers' characters, markdown
#: headers, list items and bold spans.
STYLE_FEATURES: tuple[str, ...] = get_args(_Style)


def _one_of(what: str, names: Sequence[str]) -> BeforeValidator:
    """A single choice among ``names``: ``{what} 'x': choose from ...`` otherwise."""

    def check(value: Any) -> Any:
        if value not in names:
            raise ConfigError(f"{what} {value!r}: choose from {', '.join(names)}")
        return value

    return BeforeValidator(check)


class RankOptions(Options):
    """The options of :func:`scorers.stats.rank` (``python -m scorers rank``)."""

    entry_point: ClassVar[str] = "rank"

    scorer: str | None = Field(
        None, description="the pairwise judge column of the results files (default: the one pairwise judge found)"
    )
    winner: str | None = Field(
        None,
        description="read verdicts from this field instead of a judge: a, b or tie (also model_a, model_b, "
        "tie (bothbad), both_bad)",
    )
    system_a: str = Field("model_a", description="field naming the system of answer A, output (default: %(default)s)")
    system_b: str = Field(
        "model_b", description="field naming the system of answer B, the other one (default: %(default)s)"
    )
    prompt: str | None = Field(
        None,
        description="field naming the prompt, the bootstrap unit (default: the input field's value, else each row)",
    )
    ties: Annotated[_Ties, _one_of("ties", TIE_RULES)] = Field(
        "davidson",
        description="davidson: Davidson (1970)'s tie parameter, fitted jointly; half: a tie is half a win each "
        "way (default: %(default)s)",
    )
    swap: Annotated[_Swap, _one_of("swap", SWAP_RULES)] = Field(
        "tie",
        description="a verdict whose two orders disagreed (swap: true) counts as a tie, is dropped, or keep: "
        "every swapped verdict counts as two comparisons, one per order (default: %(default)s)",
    )
    style: Annotated[tuple[_Style, ...], _choices("style", STYLE_FEATURES)] = Field(
        (), description="style covariate fitted jointly (repeatable): length, headers, lists, bold"
    )
    answer_a: str = Field("output", description="field of answer A's text, for --style (default: %(default)s)")
    answer_b: str = Field("expected", description="field of answer B's text, for --style (default: %(default)s)")
    anchor: str | None = Field(None, description="the system rated --anchor-rating (default: the mean strength)")
    anchor_rating: Annotated[float, _checked(is_number, "must be a number")] = Field(
        1000.0, description="the rating of the anchor (default: %(default)g)"
    )
    prior: Annotated[float, _checked(lambda v: is_number(v) and v >= 0, "must be a number at least 0")] = Field(
        0.0,
        description="opt-in penalty PRIOR * sum(strength^2) (choix's alpha; a Gaussian prior): finite strengths "
        "for a system that won or lost every comparison (default: %(default)g, the plain maximum likelihood)",
    )
    resamples: Annotated[int, _checked(lambda v: is_int(v) and v >= 0, "must be an integer at least 0")] = Field(
        1000, description="bootstrap resamples of the prompts; 0: no intervals (default: %(default)s)"
    )
    seed: _Seed = Field(0, description="bootstrap seed (default: %(default)s)")
    confidence: Annotated[float, _checked(lambda v: 0.0 < v < 1.0, "must lie strictly between 0 and 1")] = Field(
        0.95, description="interval level (default: %(default)s)"
    )

    @model_validator(mode="after")
    def _together(self) -> RankOptions:
        if self.scorer is not None and self.winner is not None:
            raise ConfigError("rank reads verdicts from a judge (scorer) or from a winner field, not both")
        if self.system_a == self.system_b:
            raise ConfigError(f"system_a and system_b name the same field {self.system_a!r}")
        return self


# ------------------------------------------------------------------ meta-eval
def _label_scores(label_scores: Any) -> dict[str, float] | None:
    if label_scores is None:
        return None
    checked = {}
    for name, value in label_scores.items():
        if not is_number(value) or not 0 <= value <= 1:
            raise ConfigError(
                f"label_scores: the score of label {name!r} must be a number in [0, 1] (judge scores "
                f"lie there), got {value!r}"
            )
        checked[str(name)] = float(value)
    if not checked:
        raise ConfigError("label_scores is empty: give at least one label=score")
    return checked


class MetaEvalOptions(Options):
    """The options of :func:`scorers.stats.meta_evaluate` (``python -m scorers meta-eval``)."""

    entry_point: ClassVar[str] = "meta_evaluate"

    label: str = Field(description="field (or dotted path) of the human label")
    label_scores: Annotated[dict[str, float] | None, BeforeValidator(_label_scores)] = Field(
        None, description="label scores in [0, 1]: Y=1,N=0 or JSON (default: the judge's choice_scores or scale)"
    )
    samples: Annotated[int, _checked(lambda v: is_int(v) and v >= 1, "must be an integer of at least 1")] = Field(
        1, description="judge each row K times (needs temperature > 0) and report stability"
    )
    key: str | None = Field(None, description="field naming each row in the report (e.g. id)")
    mapping: Mapping[str, str] | None = Field(None, description="take a judge field from another column or dotted path")
    concurrency: int = Field(DEFAULT_CONCURRENCY, description="in-flight judge calls (default: %(default)s)")
    resamples: Annotated[int, _checked(lambda v: is_int(v) and v >= 100, "must be an integer of at least 100")] = Field(
        2000, description="bootstrap resamples (default: %(default)s)"
    )
    confidence: Annotated[float, _checked(lambda v: 0 < v < 1, "must lie in (0, 1)")] = Field(
        0.95, description="confidence level (default: %(default)s)"
    )
    seed: int = Field(0, description="seed of the bootstrap (default: %(default)s)")


# ------------------------------------------------------------------ correlate
_Coefficient = Literal["pearson", "spearman", "kendall_b", "kendall_c"]
_Level = Literal["summary", "system", "global"]
#: The coefficients, as scipy.stats computes them: pearsonr, spearmanr, kendalltau(variant="b"/"c").
COEFFICIENTS: tuple[_Coefficient, ...] = get_args(_Coefficient)
#: summary: mean over groups of the within-group correlation; system: over per-system means; global: over rows.
LEVELS: tuple[str, ...] = get_args(_Level)
#: What each level needs.
_LEVEL_NEEDS = {"summary": ("group_by", "group_by (--group-by)"), "system": ("system_key", "system_key (--system-key)")}


class CorrelateOptions(Options):
    """The options of :func:`scorers.stats.correlate` (``python -m scorers correlate``)."""

    entry_point: ClassVar[str] = "correlate"

    human: tuple[str, ...] = Field((), description="row field (or dotted path) of a human score; repeatable")
    scorers: tuple[str, ...] | None = Field(
        None, description="a scorer of the results file (repeatable; default: all of them)"
    )
    group_by: str | None = Field(
        None, description="field naming each row's group (document): summary level, bootstrap unit"
    )
    system_key: str | None = Field(None, description="field naming each row's system: system level")
    levels: Annotated[tuple[_Level, ...] | None, _choices("level", LEVELS)] = Field(
        None, description="only this level (repeatable; default: every level the fields allow)"
    )
    coefficients: Annotated[tuple[_Coefficient, ...], _choices("coefficient", COEFFICIENTS)] = Field(
        COEFFICIENTS, description="only this coefficient (repeatable; default: all)"
    )
    pairs: Any = Field(
        None,
        description='preference pairs {"GROUP": g, "better": SYSTEM, "worse": SYSTEM}: WMT\'s Kendall-like tau',
    )
    pairs_from: str | None = Field(
        None,
        description="form preference pairs from a human score: every two rows of a group that differ by more than "
        "--min-difference (WMT's DARR)",
    )
    min_difference: Annotated[float, _checked(lambda v: is_number(v) and v >= 0, "must be a number at least 0")] = (
        Field(
            0.0,
            description="--pairs-from: a pair needs human scores more than D apart (default: %(default)g, any difference)",
        )
    )
    compare: bool = Field(True, description="test every pair of scorers (paired bootstrap; Williams at system level)")
    resamples: _PositiveInt = Field(1000, description="bootstrap resamples (default: %(default)s)")
    seed: _Seed = Field(0, description="bootstrap seed (default: %(default)s)")
    confidence: Annotated[float, _checked(lambda v: 0.0 < v < 1.0, "must lie strictly between 0 and 1")] = Field(
        0.95, description="interval level (default: %(default)s)"
    )

    @model_validator(mode="after")
    def _together(self) -> CorrelateOptions:
        if not self.human and self.pairs is None and self.pairs_from is None:
            raise ConfigError(
                "correlate needs a human score column (--human COLUMN) or preference pairs (--pairs, --pairs-from)"
            )
        for level in self.levels or ():
            if not self._allows(level):
                raise ConfigError(f"level {level!r}: needs {_LEVEL_NEEDS[level][1]}")
        if self.pairs is not None and (self.group_by is None or self.system_key is None):
            raise ConfigError("preference pairs need group_by and system_key (--group-by, --system-key)")
        if self.pairs_from is not None and self.group_by is None:
            raise ConfigError("pairs formed from a human column need group_by (--group-by): pairs are within a group")
        return self

    @property
    def chosen_levels(self) -> tuple[str, ...]:
        """``levels``, or every level the fields allow (summary needs ``group_by``, system ``system_key``)."""
        if self.levels is not None:
            return self.levels
        return tuple(level for level in LEVELS if self._allows(level))

    def _allows(self, level: str) -> bool:
        return level not in _LEVEL_NEEDS or bool(getattr(self, _LEVEL_NEEDS[level][0]))

    @property
    def columns(self) -> tuple[str, ...]:
        """The human columns read: ``human`` and ``pairs_from``."""
        return tuple(dict.fromkeys([*self.human, *([self.pairs_from] if self.pairs_from is not None else [])]))


# ------------------------------------------------------------------ calibrate
_Measure = Literal["auto", "kappa", "spearman"]


_CalibrationMethod = Literal["isotonic", "platt"]
_ThresholdMeasure = Literal["kappa", "accuracy", "f1"]
_BinStrategy = Literal["uniform", "quantile"]
#: Score calibration's maps, the measures a pass/fail threshold can maximise, the reliability diagram's bins.
CALIBRATION_METHODS: tuple[str, ...] = get_args(_CalibrationMethod)
THRESHOLD_MEASURES: tuple[str, ...] = get_args(_ThresholdMeasure)
BIN_STRATEGIES: tuple[str, ...] = get_args(_BinStrategy)


class CalibrateOptions(MetaEvalOptions):
    """The options of ``python -m scorers calibrate`` (:func:`scorers.calibration.select_examples`): the labels
    and bootstrap as for meta-eval, the split rule, and each mode's settings (few-shot: ``examples``)."""

    entry_point: ClassVar[str] = "calibrate"

    group: str | None = Field(
        None, description="field (or dotted path) whose rows stay in one split (e.g. a document id)"
    )
    split: Annotated[tuple[float, float, float], BeforeValidator(parse_fractions)] = Field(
        DEFAULT_FRACTIONS,
        description=f"train,dev,test fractions of the rows (default: {','.join(map(str, DEFAULT_FRACTIONS))})",
    )
    seed: _Seed = Field(0, description="seed of the split, the candidate pool and the bootstrap (default: %(default)s)")
    examples: Annotated[int | None, _positive] = Field(
        None, description="few-shot: choose K labelled examples from the train split"
    )
    pool: _PositiveInt = Field(8, description="few-shot: candidates drawn from the train split (default: %(default)s)")
    measure: _Measure = Field(
        "auto",
        description="few-shot: what the dev split maximises: kappa (choices; quadratic-weighted on an ordinal "
        "scale) or spearman (ratings) (default: auto, by the judge's kind)",
    )
    max_requests: Annotated[int | None, _positive] = Field(
        None, description="refuse to start when the plan needs more judge requests than N (default: no cap)"
    )
    # score calibration and threshold choice (scorers.calibration.scores, .threshold)
    scores: _CalibrationMethod | None = Field(
        None, description="score calibration: fit this map on train, measure ECE and Brier on test, write it to -o"
    )
    threshold: _ThresholdMeasure | None = Field(
        None, description="threshold choice: the pass/fail cut that maximises this measure on dev, measured on test"
    )
    bins: _PositiveInt = Field(10, description="--scores: bins of the reliability diagram (default: %(default)s)")
    bin_strategy: _BinStrategy = Field(
        "uniform", description="--scores: equal-width bins or bins at the scores' quantiles (default: %(default)s)"
    )
    positive: str | None = Field(None, description="--scores/--threshold: the label that is a positive outcome")
    cut: Annotated[float, _checked(lambda v: is_number(v) and 0 <= v <= 1, "must be a number in [0, 1]")] = Field(
        0.5,
        description="--scores/--threshold without --positive: a label score this high is positive (default: %(default)s)",
    )


# ------------------------------------------------------------------ OpenTelemetry (run)
def _otel_rows(value: Any) -> bool:
    return isinstance(value, str) and (value == "trace" or (value.startswith("span:") and len(value) > len("span:")))


class OtelOptions(Options):
    """The OpenTelemetry options of :class:`scorers.Run` (``python -m scorers run``): how an OTLP trace export
    becomes rows, which traces are scored, and where the scores go as ``gen_ai.evaluation.result`` events
    (:mod:`scorers.io.otel`).

    >>> OtelOptions(otel_rows="span:chat", sample=0.1).sample
    0.1
    >>> OtelOptions(sample=0)
    Traceback (most recent call last):
    ...
    scorers.errors.ConfigError: sample must be a fraction in (0, 1], got 0
    """

    entry_point: ClassVar[str] = "Run"

    otel_rows: Annotated[str, _checked(_otel_rows, "must be trace or span:OP (OP a gen_ai.operation.name)")] = Field(
        default="trace",
        description="OTLP trace input: one row per trace, or span:OP, one per span of the gen_ai.operation.name OP "
        "(e.g. span:chat, span:invoke_agent) with the spans under it (default: %(default)s)",
    )
    sample: Annotated[float | None, _checked(lambda v: is_number(v) and 0 < v <= 1, "must be a fraction in (0, 1]")] = (
        Field(
            default=None,
            description="OTLP trace input: score this fraction of the traces, chosen by trace id (the same traces on "
            "every run, in any order; OpenTelemetry's consistent probability sampling rule)",
        )
    )
    otel_out: str | None = Field(
        default=None,
        description="also write each score as an OpenTelemetry gen_ai.evaluation.result event, linked to the "
        "row's trace_id and span_id: OTLP JSON logs, a line per row, as the Collector's otlpjsonfile receiver "
        "reads them",
    )


# ------------------------------------------------------------------ passk
class PassKOptions(Options):
    """The options of :func:`scorers.stats.passk.pass_at_k_files` (``python -m scorers passk``)."""

    entry_point: ClassVar[str] = "passk"

    k: Annotated[tuple[_PositiveInt, ...], _checked(lambda v: len(v) > 0, "must name at least one k")] = Field(
        (1,), description="the k of pass@k (repeatable; default: 1)"
    )
    task_field: str = Field("task", description="the field naming each row's task (default: %(default)s)")
    scorer: str | None = Field(None, description="the scorer whose score says pass (default: the only one)")
    threshold: Annotated[float, _checked(is_number, "must be a number")] = Field(
        1.0, description="a row passes when its score is at least this (default: %(default)s)"
    )
    resamples: Annotated[int, _checked(lambda v: is_int(v) and v >= 0, "must be an integer at least 0")] = Field(
        1000, description="bootstrap resamples of the tasks; 0: no intervals (default: %(default)s)"
    )
    seed: _Seed = Field(0, description="bootstrap seed (default: %(default)s)")
    confidence: Annotated[float, _checked(lambda v: 0.0 < v < 1.0, "must lie strictly between 0 and 1")] = Field(
        0.95, description="interval level (default: %(default)s)"
    )
