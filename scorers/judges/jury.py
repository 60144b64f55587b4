"""Juries: several judges (the jurors) judge each row, and a chosen rule combines their verdicts into one.

Each juror is a full judge with its own settings, engine, cache and usage: the same template on several models
or providers (:meth:`Jury.of` a judge, each juror a set of request settings and, where it is not the judge's, its
endpoint's ``base_url``), or different judges of the same kind (:class:`Jury` of judges or registered names).

**Aggregation** is chosen, never implied (``aggregate``):

``majority``
    choice judges (classifier, pairwise) only: the verdict most jurors gave; its score is that choice's score.
``weighted``
    with one weight per juror: a choice judge's verdict is the one with the most weight behind it; a numeric
    judge's score is the weighted mean of the scores of the jurors that answered, ``sum(w * s) / sum(w)``.
``mean``, ``median``
    of the answered jurors' scores (any kind); a numeric jury has no verdict but its score.

A vote where two or more verdicts share the most votes (or weight) is a **tie**, settled by the rule ``tie``
(required with ``majority`` and ``weighted``, refused otherwise): ``tie`` scores the mean of the tied choices'
scores (pairwise: A against B scores 0.5, the judge's own tie) and records no verdict but ``"tie"``;
``abstain`` scores the row ``None`` (skipped in the summary's mean); ``fail`` makes the row a
:class:`JuryError`. Every row records ``tie`` (a bool) in its metadata.

**Failures.** A juror that fails on a row is recorded in the row's metadata (``jurors[label]["error"]``: its
type and message) and in ``jurors_failed``. The row is scored when at least ``min_jurors`` jurors answered
(default: all of them); otherwise the row is a :class:`JuryError` naming the failed jurors. A failed juror never
changes another juror's weight: a weighted jury that scores without a juror divides by the weights of the jurors
that answered, and ``weights_used`` in the metadata shows them.

**Cost.** A row costs the sum of the jurors' requests (``requests_per_row``, which ``show`` prints). Each juror's
requests are cached under its own settings, so adding a juror to a run that was cached costs only its requests.
All jurors judge a batch concurrently, each with its own batch loop, sharing the run's concurrency limit.

>>> from scorers.judges import LLMClassifier
>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> with LoopbackLLM(default=Reply.choice("Yes")) as yes, LoopbackLLM(default=Reply.choice("No")) as no:
...     judge = LLMClassifier("Polite", "Is {{output}} polite?", {"Yes": 1, "No": 0},
...                           engine=LLMEngine(base_url=yes.base_url, api_key="placeholder", cache=False))
...     jury = Jury.of(judge, [{"model": "a"}, {"model": "b"}, {"model": "c", "base_url": no.base_url}],
...                    aggregate="majority", tie="fail")
...     score = jury(output="Thanks!")
>>> score.score, score.metadata["choice"], round(score.metadata["vote_share"], 3), score.metadata["votes"]
(1.0, 'Yes', 0.667, {'Yes': 2, 'No': 1})
>>> jury.requests_per_row
'3 (a: 1, b: 1, c: 1)'
"""

from __future__ import annotations

import asyncio
import re
import statistics
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..base import Scorer
from ..errors import ConfigError, JudgeError, ScorerError
from ..fields import Field
from ..llm import LLMEngine
from ..llm.usage import summed_usage
from ..score import Score
from .base import JudgeAggregator, LLMJudge, _validated
from .classifier import LLMClassifier
from .pairwise import PairwiseJudge
from .rating import RatingJudge
from .spec import JurorSpec, JurySpec, RequestSettings
from .templated import TemplatedJudge

__all__ = [
    "Jury",
    "JuryError",
    "JuryAggregator",
    "JuryScale",
    "juror_of",
    "jury_of",
    "verdict_row",
    "jury_agreement_of",
    "describe_agreement",
]

#: A pairwise judge's winner as a vote: A (output wins), B (the other), tie.
_PAIRWISE_VOTE = {"output": "A", "other": "B", "tie": "tie"}


class JuryError(JudgeError):
    """A jury's row that has no score: fewer than ``min_jurors`` jurors answered, or a tie under ``tie="fail"``.

    ``jurors``: each juror's entry as the row's metadata would hold it (verdict, score, error, model, usage), so the
    results file keeps what each juror said and cost."""

    def __init__(self, message: str, *, scorer: str, jurors: Mapping[str, Mapping[str, Any]]) -> None:
        super().__init__(message, scorer=scorer)
        self.jurors = {label: dict(entry) for label, entry in jurors.items()}

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "jurors": self.jurors}


@dataclass(frozen=True)
class JuryScale:
    """What the jurors' verdicts are, for votes and agreement: ``type`` ``choices`` (a classifier's, nominal),
    ``pairwise`` (A, B, tie: ordinal by what they give ``output``), ``rating`` (an integer scale: ordinal) or
    ``scores`` (scores in [0, 1]: interval). ``values``: each verdict's number in the agreement statistics."""

    type: str
    choices: tuple[str, ...] = ()
    scores: tuple[float, ...] = ()
    low: int = 0
    high: int = 0

    @property
    def level(self) -> str:
        """Krippendorff's level of measurement that matches the verdicts."""
        return {"choices": "nominal", "pairwise": "ordinal", "rating": "ordinal"}.get(self.type, "interval")

    @property
    def domain(self) -> list[float] | None:
        """Every value a verdict can take (None: any number)."""
        if self.type in ("choices", "pairwise"):
            return [float(v) for v in range(len(self.choices))] if self.type == "choices" else [0.0, 0.5, 1.0]
        return [float(v) for v in range(self.low, self.high + 1)] if self.type == "rating" else None

    @property
    def votes(self) -> bool:
        """Whether the verdicts are choices a jury can vote on."""
        return self.type in ("choices", "pairwise")

    def value(self, verdict: Any, score: float | None) -> float | None:
        """A verdict as the agreement statistics code it."""
        if verdict is None and self.type != "scores":
            return None
        if self.type == "choices":
            return float(self.choices.index(verdict)) if verdict in self.choices else None
        if self.type == "pairwise":
            return {"A": 1.0, "B": 0.0, "tie": 0.5}[verdict]
        return float(verdict) if self.type == "rating" else score

    def jury_value(self, verdict: Any, score: float | None) -> float | None:
        """The jury's own verdict coded as :meth:`value` codes a juror's (a rating jury's mean maps back onto the
        scale; a choice jury without a verdict has none)."""
        if self.type == "rating":
            return None if score is None else self.low + score * (self.high - self.low)
        if self.type == "pairwise":
            return None if verdict is None else self.value(verdict, score)
        return self.value(verdict, score) if verdict is not None or self.type == "scores" else None

    def label_value(self, score: float, category: int | None) -> float:
        """A human label coded as a juror's verdict is: its category among the choices, else its score (a rating's
        back on the scale)."""
        if self.type == "choices" and category is not None:
            return float(category)
        return self.low + score * (self.high - self.low) if self.type == "rating" else score

    def to_dict(self) -> dict[str, Any]:
        """``type``, ``level`` and what the verdicts are: ``choices`` and ``scores``, or a rating's ``min``, ``max``."""
        shown: dict[str, Any] = {"type": self.type, "level": self.level}
        if self.votes:
            shown.update(choices=list(self.choices), scores=list(self.scores))
        elif self.type == "rating":
            shown.update(min=self.low, max=self.high)
        return shown

    @classmethod
    def from_dict(cls, shown: Mapping[str, Any]) -> "JuryScale":
        """The scale :meth:`to_dict` wrote (a results file's row records it, so a report can code its verdicts)."""
        return cls(
            shown["type"],
            tuple(shown.get("choices", ())),
            tuple(shown.get("scores", ())),
            shown.get("min", 0),
            shown.get("max", 0),
        )


def _scale_of(name: str, jurors: Sequence[LLMJudge]) -> JuryScale:
    """The jurors' common scale; jurors of different kinds, choices or scales are a ConfigError."""
    first = jurors[0]
    kinds = {type(juror).__name__ for juror in jurors}
    if len(kinds) > 1:
        raise ConfigError(f"{name}: jurors must be judges of one kind, got {', '.join(sorted(kinds))}", scorer=name)
    if isinstance(first, LLMClassifier):
        scales = {tuple(j.choice_scores.items()) for j in jurors}  # type: ignore[attr-defined]
        if len(scales) > 1:
            raise ConfigError(f"{name}: classifier jurors must have the same choice_scores", scorer=name)
        return JuryScale("choices", first.choices, tuple(first.choice_scores.values()))
    if isinstance(first, PairwiseJudge):
        if len({j.other for j in jurors}) > 1:  # type: ignore[attr-defined]
            raise ConfigError(f"{name}: pairwise jurors must compare output with the same field", scorer=name)
        return JuryScale("pairwise", ("A", "B", "tie"), (1.0, 0.0, 0.5))
    if isinstance(first, RatingJudge):
        bounds = {(j.scale.min, j.scale.max) for j in jurors}  # type: ignore[attr-defined]
        if len(bounds) > 1:
            raise ConfigError(f"{name}: rating jurors must rate on the same scale, got {sorted(bounds)}", scorer=name)
        return JuryScale("rating", low=first.scale.min, high=first.scale.max)
    return JuryScale("scores")


class Jury(Scorer):
    """Several judges of one kind judge each row; ``aggregate`` combines their verdicts (module docstring).

    ``jurors``: judges, or names of registered judges; ``labels``: each juror's name in the metadata (default:
    its judge's name, with its model where two share a name). ``weights``: one per juror, with ``weighted`` only;
    ``tie``: how a tied vote ends, with ``majority`` and ``weighted`` only; ``min_jurors``: how many must answer
    for the row to be scored (default: all). A wrong combination is a :class:`ConfigError` before any request.
    """

    kind = "llm"
    algorithm_version = "1"
    description = "A jury of LLM judges: each row judged by several jurors, their verdicts combined."

    def __init__(
        self,
        name: str,
        jurors: Sequence[LLMJudge | str],
        *,
        aggregate: str,
        tie: str | None = None,
        weights: Sequence[float] | None = None,
        min_jurors: int | None = None,
        labels: Sequence[str] | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__(name=name)
        judges = [_judge(name, juror) for juror in jurors]
        rules = {"aggregate": aggregate, "tie": tie, "weights": None if weights is None else list(weights)}
        spec = _validated(name, JurySpec, {"jurors": [{}] * len(judges), **rules, "min_jurors": min_jurors})
        self.jurors: tuple[LLMJudge, ...] = tuple(judges)
        self.labels: tuple[str, ...] = tuple(labels) if labels is not None else _labels(judges)
        if len(self.labels) != len(judges) or len(set(self.labels)) != len(judges):
            raise ConfigError(f"{name}: labels must name each juror once, got {list(self.labels)}", scorer=name)
        self.aggregate: str = spec.aggregate
        self.tie: str | None = spec.tie
        self.weights: tuple[float, ...] | None = None if spec.weights is None else tuple(spec.weights)
        self.min_jurors: int = len(judges) if spec.min_jurors is None else spec.min_jurors
        self.verdict_scale = _scale_of(name, judges)
        if spec.aggregate == "weighted" and (spec.tie is None) == self.verdict_scale.votes:
            raise ConfigError(
                f"{name}: tie (tie | fail | abstain) goes with a weighted vote of choice jurors, and only there",
                scorer=name,
            )
        if spec.aggregate == "majority" and not self.verdict_scale.votes:
            raise ConfigError(
                f"{name}: aggregate majority needs choice jurors (classifier, pairwise); "
                f"{type(judges[0]).__name__} jurors give scores: use median, mean or weighted",
                scorer=name,
            )
        self.description = description or type(self).description
        self.fields = _union_fields(judges)
        template = getattr(judges[0], "template", None)
        if template is not None and all(getattr(j, "template", None) is template for j in judges):
            self.template = template  # one template asked of every juror: `show` prints it
        counts = [f"{label}: {juror.requests_per_row}" for label, juror in zip(self.labels, judges)]
        total = sum(_requests(juror) for juror in judges)
        self.requests_per_row = f"{total} ({', '.join(counts)})"
        self.example = f"scorers.get({name!r})({', '.join(f'{f.name}=...' for f in self.fields)})"

    @classmethod
    def of(
        cls,
        judge: LLMJudge,
        jurors: Sequence[Mapping[str, Any] | JurorSpec],
        *,
        aggregate: str,
        tie: str | None = None,
        weights: Sequence[float] | None = None,
        min_jurors: int | None = None,
        name: str | None = None,
    ) -> "Jury":
        """A jury of ``judge`` asked with each juror's settings: request settings that override the judge's
        (``model``, ``api``, ``temperature``, ...), ``base_url`` (its endpoint, when not the judge's) and ``name``
        (its label; default: its model)."""
        return jury_of(
            judge,
            {"jurors": list(jurors), "aggregate": aggregate, "tie": tie, "weights": weights, "min_jurors": min_jurors},
            name=name,
        )

    # ------------------------------------------------------------- describing
    def params(self) -> dict[str, Any]:
        """``jury``: the rule, and each juror's signature (its settings, model and prompt) under its label."""
        rule = {
            "aggregate": self.aggregate,
            "tie": self.tie,
            "weights": None if self.weights is None else list(self.weights),
        }
        jurors = {label: _juror_signature(j) for label, j in zip(self.labels, self.jurors)}
        return {"jury": {**rule, "min_jurors": self.min_jurors, "jurors": jurors}}

    def describe(self) -> dict[str, Any]:
        """What ``python -m scorers show`` prints: the jurors' kind, the rule and the requests per row."""
        return {
            "name": self.name,
            "kind": f"jury of {len(self.jurors)} {self.jurors[0].judge_kind or type(self.jurors[0]).__name__} judges",
            "description": self.description,
            "variables": [f.name for f in self.fields],
            "requests_per_row": self.requests_per_row,
            "template_file": getattr(getattr(self, "template", None), "file", None),
            **self.params(),
        }

    def aggregator(self) -> "JuryAggregator":
        """The run's summary: the mean figures, every juror's usage, and the jurors' agreement."""
        return JuryAggregator(self.labels, self.verdict_scale)

    # ---------------------------------------------------------------- scoring
    async def _ascore_batch(self, rows: list[dict[str, Any]], limit: asyncio.Semaphore) -> list[Score | ScorerError]:
        """Every juror judges the whole batch at once (its own batch loop, the run's ``limit`` shared), then each
        row's verdicts are combined."""
        verdicts = await asyncio.gather(
            *(juror.ascore_batch([_fields_of(juror, row) for row in rows], limit=limit) for juror in self.jurors)
        )
        return [self._combined(list(outcomes)) for outcomes in zip(*verdicts)]

    def _combined(self, outcomes: list[Score | ScorerError]) -> Score | ScorerError:
        """One row's jury score from its jurors' outcomes, or its :class:`JuryError` (a juror's ConfigError as it is:
        the run is misconfigured, and stops as it would for that judge alone)."""
        refused = next((outcome for outcome in outcomes if isinstance(outcome, ConfigError)), None)
        if refused is not None:
            return refused
        entries = {label: self._entry(outcome) for label, outcome in zip(self.labels, outcomes)}
        answered = [label for label, outcome in zip(self.labels, outcomes) if isinstance(outcome, Score)]
        failed = [label for label in self.labels if label not in answered]
        if len(answered) < self.min_jurors:
            reasons = "; ".join(f"{label} ({entries[label]['error']['type']})" for label in failed)
            return JuryError(
                f"{self.name}: {len(answered)} of {len(self.labels)} jurors answered, min_jurors is "
                f"{self.min_jurors}; failed: {reasons}",
                scorer=self.name,
                jurors=entries,
            )
        weights = dict(zip(self.labels, self.weights)) if self.weights is not None else None
        value, verdict, tie, votes = self._decide(
            [(label, entries[label]["verdict"], entries[label]["score"]) for label in answered], weights
        )
        if tie and self.tie == "fail":
            return JuryError(
                f"{self.name}: the jurors tied ({', '.join(f'{k} {v:g}' for k, v in votes.items())}) and tie is fail",
                scorer=self.name,
                jurors=entries,
            )
        metadata: dict[str, Any] = {"verdict": verdict}
        if self.verdict_scale.type == "choices":
            metadata["choice"] = verdict if verdict in self.verdict_scale.choices else None
        elif self.verdict_scale.type == "pairwise":
            metadata["winner"] = {"A": "output", "B": "other"}.get(verdict, "tie")
        total = sum(votes.values())
        metadata.update(
            aggregate=self.aggregate,
            tie_rule=self.tie,
            tie=tie,
            votes=votes if self.verdict_scale.votes else None,
            vote_share=max(votes.values()) / total if self.verdict_scale.votes and total else None,
            jurors=entries,
            scale=self.verdict_scale.to_dict(),
            jurors_answered=len(answered),
            jurors_failed=failed,
            usage=summed_usage([e["usage"] for e in entries.values() if e.get("usage")]),
        )
        if weights is not None:
            metadata["weights_used"] = {label: weights[label] for label in answered}
        return self.make_score(value, **metadata)

    def _entry(self, outcome: Score | ScorerError) -> dict[str, Any]:
        """A juror's part of the row's metadata: verdict, score, model and usage, or its error."""
        if isinstance(outcome, ScorerError):
            usage = dict(getattr(outcome, "usage", None) or {})
            entry: dict[str, Any] = {"verdict": None, "score": None}
            entry["error"] = {"type": type(outcome).__name__, "message": str(outcome)}
            if usage:
                entry.update(model=usage.pop("model", None), usage=usage)
            return entry
        metadata = outcome.metadata
        if self.verdict_scale.type == "choices":
            verdict: Any = metadata.get("choice")
        elif self.verdict_scale.type == "pairwise":
            verdict = _PAIRWISE_VOTE[metadata["winner"]]
        elif self.verdict_scale.type == "rating":
            verdict = metadata.get("rating")
        else:
            verdict = outcome.score
        return {
            "verdict": verdict,
            "score": outcome.score,
            "model": metadata.get("model"),
            "usage": metadata.get("usage"),
            "cached": metadata.get("cached"),
        }

    def _decide(
        self, answered: list[tuple[str, Any, float | None]], weights: Mapping[str, float] | None
    ) -> tuple[float | None, Any, bool, dict[str, float]]:
        """``(score, verdict, tie, votes)`` from the answered jurors' ``(label, verdict, score)``."""
        votes: dict[str, float] = {}
        if self.verdict_scale.votes:
            counted: dict[str, float] = {}
            for label, verdict, _ in answered:
                weight = weights[label] if weights is not None and self.aggregate == "weighted" else 1
                counted[verdict] = counted.get(verdict, 0) + weight
            order = self.verdict_scale.choices
            votes = {choice: counted[choice] for choice in order if choice in counted}
        scores = [score for _, _, score in answered if score is not None]
        if self.aggregate in ("mean", "median") or not self.verdict_scale.votes:
            if self.aggregate == "weighted" and weights is not None:
                used = [(weights[label], score) for label, _, score in answered if score is not None]
                value = sum(w * s for w, s in used) / sum(w for w, _ in used) if used else None
            elif scores:
                value = statistics.fmean(scores) if self.aggregate == "mean" else statistics.median(scores)
            else:
                value = None
            return value, None, False, votes
        top = max(votes.values())
        leaders = [choice for choice, count in votes.items() if count == top]
        score_of = dict(zip(self.verdict_scale.choices, self.verdict_scale.scores))
        if len(leaders) == 1:
            return score_of[leaders[0]], leaders[0], False, votes
        if self.tie == "tie":
            return statistics.fmean(score_of[c] for c in leaders), "tie", True, votes
        return None, None, True, votes  # abstain (fail: the caller makes it the row's error)


def _judge(name: str, juror: LLMJudge | str) -> LLMJudge:
    """A juror as a judge: itself, or the registered judge it names."""
    from ..registry import get

    judge = get(juror) if isinstance(juror, str) else juror
    if not isinstance(judge, LLMJudge):
        raise ConfigError(f"{name}: a juror must be an LLM judge or a judge's name, got {juror!r}", scorer=name)
    return judge


def _requests(judge: LLMJudge) -> int:
    """The requests a judge makes on a row: the number its ``requests_per_row`` formula starts with."""
    found = re.match(r"\d+", judge.requests_per_row)
    return int(found.group()) if found else 1


def _labels(judges: Sequence[LLMJudge]) -> tuple[str, ...]:
    """Each juror's label: its name, with its model where names repeat, with its place where both do."""
    names = [j.name for j in judges]
    labels = [n if names.count(n) == 1 else f"{n}@{j._model_name()}" for n, j in zip(names, judges)]
    return tuple(label if labels.count(label) == 1 else f"{label}#{i + 1}" for i, label in enumerate(labels))


def _union_fields(judges: Sequence[LLMJudge]) -> tuple[Field, ...]:
    """The fields any juror reads, each once (the first juror's declaration)."""
    fields: dict[str, Field] = {}
    for judge in judges:
        for field in judge.fields:
            fields.setdefault(field.name, field)
    return tuple(fields.values())


def _fields_of(juror: LLMJudge, row: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a row (as the jury bound it) that ``juror`` reads; it binds it itself (its own reasoning
    setting)."""
    accepted = juror.accepted_fields()
    return {key: value for key, value in row.items() if key in accepted and value is not None}


def _juror_signature(juror: LLMJudge) -> dict[str, Any]:
    signature = juror.signature()
    signature.pop("scorers_version", None)  # the jury's own signature holds it
    return signature


def juror_of(judge: LLMJudge, settings: Mapping[str, Any] | JurorSpec) -> LLMJudge:
    """A juror: ``judge`` (a template judge) asked with ``settings`` (:class:`JurorSpec`: request settings over the
    judge's, ``base_url``, ``name``), built by its kind's constructor with its own engine where ``base_url`` is
    given."""
    if not isinstance(judge, TemplatedJudge):
        raise ConfigError(
            f"{judge.name}: a jury of settings needs a template judge; give the jurors as judges instead",
            scorer=judge.name,
        )
    spec = settings if isinstance(settings, JurorSpec) else _validated(judge.name, JurorSpec, settings)
    given = spec.model_dump(include=spec.model_fields_set - {"name", "base_url"})
    request = {key: getattr(judge.spec, key) for key in RequestSettings.model_fields if key not in judge.fixed_settings}
    engine = judge.engine
    if spec.base_url is not None:
        options = dict(getattr(engine, "_options", {}))
        if "client" in options:
            raise ConfigError(
                f"{judge.name}: a juror's base_url needs a judge built without client=", scorer=judge.name
            )
        engine = LLMEngine(**{**options, "base_url": spec.base_url})
    own = judge.spec.model_dump(include=set(TemplatedJudge.kind_params(judge)))
    return type(judge)(
        judge.name,
        template=judge.template,
        engine=engine,
        description=judge.description,
        settings={**request, **given},
        **own,
    )


def jury_of(judge: LLMJudge, jury: Mapping[str, Any] | JurySpec, *, name: str | None = None) -> Jury:
    """The jury a ``jury:`` mapping (:class:`JurySpec`) describes, of ``judge``; named as the judge by default."""
    spec = jury if isinstance(jury, JurySpec) else _validated(name or judge.name, JurySpec, _without_nones(jury))
    if getattr(judge, "calibration", None) is not None:
        raise ConfigError(
            f"{name or judge.name}: a jury takes no calibration map: the map was fitted on one judge's scores, not on "
            "its jurors' or the jury's; calibrate a judge alone (drop calibration:, or the jury with -p NAME.jury=null)",
            scorer=name or judge.name,
        )
    jurors = [juror_of(judge, juror) for juror in spec.jurors]
    labels = [juror.name or juror.model or f"juror{i + 1}" for i, juror in enumerate(spec.jurors)]
    labels = [label if labels.count(label) == 1 else f"{label}#{i + 1}" for i, label in enumerate(labels)]
    return Jury(
        name or judge.name,
        jurors,
        aggregate=spec.aggregate,
        tie=spec.tie,
        weights=spec.weights,
        min_jurors=spec.min_jurors,
        labels=labels,
        description=getattr(getattr(judge, "template", None), "description", None),
    )


def _without_nones(jury: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(jury, Mapping):
        return {"jurors": jury}  # the model words what is wrong
    return {key: value for key, value in jury.items() if value is not None or key == "jurors"}


def verdict_row(
    jurors: Sequence[str], scale: JuryScale, metadata: Mapping[str, Any], score: float | None
) -> tuple[float, ...] | None:
    """One row's verdicts of the ``jurors`` (labels) as the agreement statistics code them (NaN: none), then the
    jury's own (``metadata``: the row's, or its error record's, which hold ``jurors``); ``None`` for a row without
    them."""
    entries = metadata.get("jurors")
    if not isinstance(entries, Mapping):
        return None  # a row recorded without its metadata
    values = [
        scale.value((entries.get(label) or {}).get("verdict"), (entries.get(label) or {}).get("score"))
        for label in jurors
    ]
    values.append(scale.jury_value(metadata.get("verdict"), score) if "verdict" in metadata else None)
    return tuple(float("nan") if value is None else value for value in values)


def jury_agreement_of(
    jurors: Sequence[str],
    scale: JuryScale,
    rows: Sequence[tuple[float, ...]],
    human: Sequence[float] | None = None,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The jurors' agreement (:func:`scorers.stats.reliability.jury_agreement`, as a dict with the ``scale``) over
    ``rows`` (:func:`verdict_row` s, sorted first: the figures do not depend on the rows' order), with ``human``
    labels coded alike (:meth:`JuryScale.label_value`) if given."""
    import numpy as np

    from ..stats.reliability import jury_agreement

    order = sorted(range(len(rows)), key=lambda i: [(v != v, 0.0 if v != v else v) for v in rows[i]])
    table = np.array([rows[i] for i in order], dtype=np.float64).reshape(len(rows), len(jurors) + 1)
    report = jury_agreement(
        table[:, :-1],
        list(jurors),
        level=scale.level,  # type: ignore[arg-type]
        domain=scale.domain,
        verdicts=table[:, -1],
        labels=None if human is None else [human[i] for i in order],
        resamples=resamples,
        confidence=confidence,
        seed=seed,
    )
    return {**report.to_dict(), "scale": scale.to_dict()}


def describe_agreement(figures: Mapping[str, Any]) -> str:
    """A jury's agreement (:func:`jury_agreement_of`'s dict) in lines: what ``run`` and ``meta-eval`` print."""

    def shown(figure: Mapping[str, Any] | None) -> str:
        if figure is None:
            return "-"
        if figure["value"] is None:
            return f"- ({figure.get('reason')}; n {figure['n']})"
        ci = f" [{figure['ci'][0]:.4f}, {figure['ci'][1]:.4f}]" if figure.get("ci") else ""
        reason = f"; {figure['reason']}" if figure.get("reason") else ""
        return f"{figure['value']:.4f}{ci} (n {figure['n']}{reason})"

    drawn = figures["bootstrap"]
    unanimous = "-" if figures["unanimous"] is None else f"{figures['unanimous']:.4f}"
    lines = [
        f"{len(figures['jurors'])} jurors, {figures['level']}: {figures['units']} rows rated by 2 or more, "
        f"unanimous {unanimous}",
        f"Krippendorff's alpha {shown(figures['alpha'])}",
        f"Fleiss' kappa {shown(figures['fleiss_kappa'])}",
    ]
    for label, own in figures["per_juror"].items():
        labelled = f", with labels {shown(own['with_labels'])}" if own.get("with_labels") else ""
        lines.append(f"{label}: {own['answered']} answered, with the jury {shown(own['with_jury'])}{labelled}")
    lines.append(
        f"intervals: {drawn['method']} bootstrap over rows, {drawn['resamples']} resamples, "
        f"{drawn['confidence']:g} confidence, seed {drawn['seed']}"
    )
    return "\n".join(lines)


class JuryAggregator(JudgeAggregator):
    """A jury's run summary: the mean figures, each juror's usage under its model (failed jurors' included), and
    ``agreement``: how much the jurors agree (:func:`jury_agreement_of`: Krippendorff's alpha at the level of the
    verdicts' scale, Fleiss' kappa, each juror with the jury, bootstrap over rows) over every row whose jurors'
    verdicts it saw, failed rows included. Rows are kept as their verdict vectors and sorted before the
    bootstrap, so shards merge in any order to the same figures."""

    def __init__(self, jurors: Sequence[str], scale: JuryScale) -> None:
        super().__init__()
        self.jurors, self.scale = tuple(jurors), scale
        self._rows: list[tuple[float, ...]] = []
        self._memo: tuple[tuple[Any, ...], dict[str, Any]] | None = None

    def add(self, score: Score) -> None:
        super().add(score)  # (a jury's metadata has no single model: its usage is counted per juror below)
        self._add(score.metadata, score.score)

    def add_error(self, error: Mapping[str, Any]) -> None:
        super().add_error(error)
        self._add(error, None)

    def _add(self, metadata: Mapping[str, Any], score: float | None) -> None:
        row = verdict_row(self.jurors, self.scale, metadata, score)
        if row is None:
            return
        self._rows.append(row)
        for entry in metadata["jurors"].values():
            usage, model = entry.get("usage"), entry.get("model")
            if isinstance(usage, Mapping) and isinstance(model, str):
                self.usage.add_figures(model, usage)

    def merge(self, other: Any) -> "JuryAggregator":
        super().merge(other)
        self._rows += other._rows
        return self

    def agreement(self, *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict[str, Any] | None:
        """The jurors' agreement over the rows seen (``None`` before any row with their verdicts)."""
        if not self._rows:
            return None
        key = (len(self._rows), resamples, confidence, seed)
        if self._memo is None or self._memo[0] != key:
            figures = jury_agreement_of(
                self.jurors, self.scale, self._rows, resamples=resamples, confidence=confidence, seed=seed
            )
            self._memo = (key, figures)
        return self._memo[1]

    def result(self) -> dict[str, Any]:
        return {**super().result(), "agreement": self.agreement()}
