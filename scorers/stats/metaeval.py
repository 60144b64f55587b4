"""Meta-evaluation: does a judge agree with people? Run a judge over rows that carry a human label.

:func:`meta_evaluate` scores the rows with the judge through :func:`scorers.evaluate` and
compares each row's verdict with its label (figures: :mod:`scorers.stats.agreement`).

**Label scale.** When every label is one of the judge's choices (an
:class:`~scorers.judges.LLMClassifier`'s ``choice_scores`` keys; a
:class:`~scorers.judges.PairwiseJudge`'s ``A``, ``B``, ``tie``, where the judge's
verdict is its ``winner``), the scale is ``"choices"``: verdicts are compared as
nominal categories (unweighted kappa) and both sides score through ``label_scores``,
or the judge's ``choice_scores`` (pairwise: A 1, B 0, tie 0.5). Otherwise the scale is
``"scores"``: a label scores through ``label_scores`` (``{"Y": 1, "N": 0}``), else a
number on the judge's ``scale`` (rating, rubric, G-Eval) as ``(v - min) / (max - min)``,
else a number in [0, 1] as itself; the judge's verdict is its score, the categories
are the label scale's distinct scores in ascending order and kappa is
quadratic-weighted by their rank. Categorical figures (accuracy, kappa, confusion,
precision/recall) need the judge's scores on that scale; when they are not, those
figures are ``null`` with a ``reason``.

**Samples.** ``samples=k`` judges each row k times, each time with its own ``seed`` in
the request (so each is cached apart); the judge must not be at temperature 0. A row's
verdict is then its most frequent one (a tie goes to the lowest score) and its score
the mean of the k scores. **Swap.** A pairwise judge with ``swap=True`` asks each pair
in both orders; the report gives how often the verdicts agree and how often the same
position won both times.

**Juries.** A :class:`~scorers.judges.jury.Jury` is judged as one judge (its jurors' choices and scale are the
label scale; a choice jury's row without a choice, from ``mean`` or a tie, is a score off that scale); the report
adds ``jury``: how much the jurors agree with one another, with the jury and with the labels
(:func:`scorers.judges.jury.jury_agreement_of`: between jurors over every row they answered, a row the jury left
unscored included; with the jury over the scored rows; labels coded as the jurors' verdicts).

**Failures.** A row the judge failed on (any sample) is listed with its errors and left
out of the figures; figures say their ``n``.

JSON format (``MetaEvaluation.to_dict()``, ``python -m scorers meta-eval -o meta.json``)::

    {"format": "scorers-meta-eval", "format_version": 1,
     "judge": {"name": str, "signature": {...}},      # Scorer.signature(): model, template name + hash, settings
     "label": str, "key": str | null,                 # the label field; the field naming rows, if given
     "scale": {"type": "choices" | "scores", "labels": [str], "scores": [float],
               "kappa_weights": null | "quadratic"},  # category order of every matrix and list below
     "samples": int, "rows": int, "n": int,           # rows read; rows scored (every sample succeeded)
     "failed": int, "failures": [{"index": int, "key"?: any, "errors": [{"sample": int, "type": str,
                                                      "message": str, "unexpected"?: true}]}],
     "figures": {name: {"value": float | null, "ci": [low, high] | null, "n": int, "reason"?: str}}
         # names: accuracy, mean_abs_diff, kappa, spearman, kendall
     "bootstrap": {"method": "percentile", "resamples": int, "confidence": float, "seed": int,
                   "paired_over": "rows"},
     "confusion": {"labels": [str], "rows": "label", "columns": "judge", "matrix": [[int]]} | null,
     "per_label": [{"label": str, "precision": float | null, "recall": float | null,
                    "support": int, "predicted": int}] | null,
     "stability": {"samples": int, "n": int, "unchanged": float, "pairwise_agreement": float} | null,
     "swap": {"n": int, "consistency": float, "position_bias": float, "first": int, "second": int} | null,
     "verdicts": [{"index": int, "key"?: any, "label": str, "label_score": float,
                   "verdict": str | null, "judge_score": float, "sample_verdicts"?: [str | float]}],
     "jury": null | {"level": str, "jurors": [str], "units": int, "unanimous": float | null,
                     "alpha": figure, "fleiss_kappa": figure,   # figure: as in "figures"; alpha: Krippendorff
                     "per_juror": {juror: {"answered": int, "with_jury": figure, "with_labels": figure | null}},
                     "bootstrap": {...}, "scale": {"type": str, "level": str, ...}}}

>>> from scorers.judges import LLMClassifier
>>> from scorers.llm import LLMEngine
>>> from scorers.testing import LoopbackLLM, Reply
>>> rows = [{"output": "Thanks!", "polite": "Y"}, {"output": "Go away.", "polite": "N"},
...         {"output": "Fine.", "polite": "N"}]
>>> with LoopbackLLM(default=Reply.choice("Y")) as server:
...     rule = server.script(Reply.choice("N"), match="Go away")
...     engine = LLMEngine(base_url=server.base_url, api_key="placeholder", cache=False)
...     judge = LLMClassifier("Polite", "Is this polite?\\n{{output}}", {"Y": 1, "N": 0}, engine=engine)
...     report = meta_evaluate(rows, judge, label="polite", resamples=200)
>>> report.n, report.figures["accuracy"].value, report.confusion.tolist()
(3, 0.6666666666666666, [[1, 0], [1, 1]])
"""

from __future__ import annotations

import collections
import copy
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .._util import ABSENT, lookup
from ..base import Scorer
from ..errors import ConfigError, DataError
from ..options import MetaEvalOptions
from ..runner import evaluate, resolve_scorers
from . import agreement

__all__ = [
    "meta_evaluate",
    "read_labels",
    "sample_judges",
    "judge_rows",
    "agreement_report",
    "MetaEvaluation",
    "MetaEvalOptions",
    "LabelledRows",
    "Judgments",
    "LabelScale",
    "FORMAT",
    "FORMAT_VERSION",
]

FORMAT = "scorers-meta-eval"
FORMAT_VERSION = 1

#: A pairwise judge's winner as a label, and what each is worth to ``output``.
_PAIRWISE_VERDICT = {"output": "A", "other": "B", "tie": "tie"}
_PAIRWISE_SCORES = {"A": 1.0, "B": 0.0, "tie": 0.5}


@dataclass(frozen=True)
class LabelScale:
    """The categories labels and verdicts are compared in: names, normalised scores, kappa weighting."""

    type: str  # "choices" | "scores"
    labels: tuple[str, ...]
    scores: tuple[float, ...]
    weighted: bool

    def category(self, score: float) -> int | None:
        """The category whose score is ``score``, or ``None`` when it is off the scale."""
        for index, value in enumerate(self.scores):
            if math.isclose(value, score, abs_tol=1e-9):
                return index
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "labels": list(self.labels),
            "scores": list(self.scores),
            "kappa_weights": "quadratic" if self.weighted else None,
        }


@dataclass
class MetaEvaluation:
    """The agreement of a judge with human labels; :meth:`to_dict` is the JSON format of the module docstring."""

    judge: str
    signature: dict[str, Any]
    label: str
    key: str | None
    scale: LabelScale
    samples: int
    rows: int
    verdicts: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    figures: dict[str, agreement.Estimate]
    bootstrap: dict[str, Any]
    confusion: np.ndarray | None = None
    per_label: list[dict[str, Any]] | None = None
    stability: dict[str, Any] | None = None
    swap: dict[str, Any] | None = None
    jury: dict[str, Any] | None = None

    @property
    def n(self) -> int:
        """Rows scored (the figures' rows)."""
        return len(self.verdicts)

    @property
    def problems(self) -> list[str]:
        """Why the figures cannot be trusted, as :attr:`scorers.Summary.problems` says for a run: the judge
        failed on every row, or a row failed with an unexpected error (a bug, a broken environment)."""
        found = [f"{self.judge}: failed on every row"] if self.rows and not self.verdicts else []
        unexpected = [f["index"] for f in self.failures if any(e.get("unexpected") for e in f["errors"])]
        if unexpected:
            found.append(
                f"{self.judge}: {len(unexpected)} row(s) failed with an unexpected error (a bug or a "
                f"broken environment, not bad input): rows {', '.join(map(str, unexpected))}"
            )
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "judge": {"name": self.judge, "signature": self.signature},
            "label": self.label,
            "key": self.key,
            "scale": self.scale.to_dict(),
            "samples": self.samples,
            "rows": self.rows,
            "n": self.n,
            "failed": len(self.failures),
            "failures": self.failures,
            "figures": {name: figure.to_dict() for name, figure in self.figures.items()},
            "bootstrap": self.bootstrap,
            "confusion": None
            if self.confusion is None
            else {
                "labels": list(self.scale.labels),
                "rows": "label",
                "columns": "judge",
                "matrix": self.confusion.tolist(),
            },
            "per_label": self.per_label,
            "stability": self.stability,
            "swap": self.swap,
            "verdicts": self.verdicts,
            "jury": self.jury,
        }

    def table(self) -> str:
        """The human-readable summary the CLI prints on stderr."""
        model = self.signature.get("model")
        template = (self.signature.get("template") or {}).get("hash")
        lines = [
            f"meta-eval: {self.judge}"
            + (f" (model {model}, template {template})" if model else "")
            + f" vs label {self.label!r}: {self.rows} rows, {self.n} scored, {len(self.failures)} failed"
            + (f", {self.samples} samples each" if self.samples > 1 else ""),
            "",
            f"{'figure':<14} {'value':>8}  {int(self.bootstrap['confidence'] * 100)}% CI{'':<14} {'n':>5}",
        ]
        for name, figure in self.figures.items():
            ci = "-" if figure.low is None else f"[{_fmt(figure.low)}, {_fmt(figure.high)}]"
            lines.append(
                f"{name:<14} {_fmt(figure.value):>8}  {ci:<20} {figure.n:>5}"
                + (f"  ({figure.reason})" if figure.reason else "")
            )
        if self.confusion is not None and self.per_label is not None:
            lines += self._confusion_table(self.confusion, self.per_label)
        if self.stability is not None:
            lines += [
                "",
                f"stability over {self.stability['samples']} samples ({self.stability['n']} rows): "
                f"unchanged {_fmt(self.stability['unchanged'])}, mean pairwise agreement "
                f"{_fmt(self.stability['pairwise_agreement'])}",
            ]
        if self.swap is not None:
            lines += [
                "",
                f"swap ({self.swap['n']} judgments in both orders): consistency "
                f"{_fmt(self.swap['consistency'])}, position bias {_fmt(self.swap['position_bias'])} "
                f"(first {self.swap['first']}, second {self.swap['second']})",
            ]
        if self.jury is not None:
            from ..judges.jury import describe_agreement

            lines += ["", "jury:", *(f"  {line}" for line in describe_agreement(self.jury).splitlines())]
        if self.failures:
            lines += ["", "failed rows:", *(self._failure_line(failure) for failure in self.failures)]
        return "\n".join(lines)

    def _confusion_table(self, confusion: np.ndarray, per_label: list[dict[str, Any]]) -> list[str]:
        width = max(7, *(len(name) for name in self.scale.labels))
        lines = [
            "",
            "confusion (rows: label, columns: judge)",
            " " * width + "".join(f"{name:>{width}}" for name in self.scale.labels),
        ]
        lines += [
            f"{name:<{width}}" + "".join(f"{count:>{width}}" for count in row)
            for name, row in zip(self.scale.labels, confusion.tolist())
        ]
        lines += ["", f"{'label':<{width}} {'precision':>9} {'recall':>8} {'support':>8} {'judged':>7}"]
        return lines + [
            f"{entry['label']:<{width}} {_fmt(entry['precision']):>9} {_fmt(entry['recall']):>8} "
            f"{entry['support']:>8} {entry['predicted']:>7}"
            for entry in per_label
        ]

    def _failure_line(self, failure: dict[str, Any]) -> str:
        where = f"row {failure['index']}" + (f" ({failure['key']})" if "key" in failure else "")
        return f"  {where}: " + "; ".join(
            (f"sample {e['sample']}: " if self.samples > 1 else "") + f"{e['type']}: {e['message']}"
            for e in failure["errors"]
        )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


# ------------------------------------------------------------------ label scale
def _choices(judge: Scorer) -> tuple[tuple[str, ...], dict[str, float]] | None:
    """The judge's choices and their default scores, for a judge that picks a choice."""
    from ..judges import LLMClassifier, PairwiseJudge

    judge = _judge_of(judge)
    if isinstance(judge, LLMClassifier):
        return judge.choices, dict(judge.choice_scores)
    if isinstance(judge, PairwiseJudge):
        return judge.choices, {c: _PAIRWISE_SCORES[c] for c in judge.choices}
    return None


def _judge_of(judge: Scorer) -> Scorer:
    """The judge whose choices and scale a verdict is on: a jury's first juror (they share them), else itself."""
    from ..judges.jury import Jury

    return judge.jurors[0] if isinstance(judge, Jury) else judge


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _scale(
    judge: Scorer, labels: list[Any], label_scores: dict[str, float] | None, label: str
) -> tuple[LabelScale, list[float], list[int]]:
    """The label scale, each row's label score and each row's category."""
    choices = _choices(judge)
    if choices is not None and all(str(v) in choices[0] for v in labels):
        return _choice_scale(judge, labels, label_scores, *choices)
    if choices is not None and label_scores is None and any(str(v) in choices[0] for v in labels):
        index, value = next((i, v) for i, v in enumerate(labels) if str(v) not in choices[0])
        raise DataError(
            f"row {index}: label {value!r} (field {label!r}) is not one of {judge.name}'s choices "
            f"({', '.join(choices[0])}), as the other labels are; correct it, or give every label a "
            "score with --label-scores (label_scores=)"
        )
    row_scores = [_label_score(judge, choices, label_scores, label, index, value) for index, value in enumerate(labels)]
    scale = _score_scale(getattr(_judge_of(judge), "scale", None), label_scores, row_scores)
    # every row score is on the scale built just above (a label off it was a DataError): its category is an int
    return scale, row_scores, [scale.category(v) for v in row_scores]  # type: ignore[misc]


def _choice_scale(
    judge: Scorer,
    labels: list[Any],
    label_scores: dict[str, float] | None,
    names: tuple[str, ...],
    defaults: dict[str, float],
) -> tuple[LabelScale, list[float], list[int]]:
    """Labels that are the judge's choices: nominal categories, scored by ``label_scores`` or the judge's."""
    scores = label_scores if label_scores is not None else defaults
    missing = [c for c in names if c not in scores]
    if missing:
        raise ConfigError(
            f"label_scores must give a score to every choice of {judge.name} "
            f"({', '.join(names)}); missing: {', '.join(missing)}"
        )
    return (
        LabelScale("choices", tuple(names), tuple(scores[c] for c in names), False),
        [scores[str(v)] for v in labels],
        [names.index(str(v)) for v in labels],
    )


def _label_score(
    judge: Scorer,
    choices: tuple[tuple[str, ...], dict[str, float]] | None,
    label_scores: dict[str, float] | None,
    label: str,
    index: int,
    value: Any,
) -> float:
    """A label's score: from ``label_scores``, else a point of the judge's scale, else a number in [0, 1]."""
    judge_scale = getattr(_judge_of(judge), "scale", None)
    number = _number(value)
    if label_scores is not None:
        if str(value) not in label_scores:
            raise DataError(
                f"row {index}: label {value!r} (field {label!r}) has no score in label_scores "
                f"({', '.join(label_scores)}); add it, e.g. --label-scores {value}=1"
            )
        return label_scores[str(value)]
    if (
        judge_scale is not None
        and number is not None
        and number.is_integer()
        and judge_scale.min <= number <= judge_scale.max
    ):
        return judge_scale.normalise(number)
    if number is not None and 0 <= number <= 1 and judge_scale is None:
        return number
    options = [f"one of {judge.name}'s choices ({', '.join(choices[0])})"] if choices else []
    options.append(
        f"an integer on its scale {judge_scale.min}..{judge_scale.max}"
        if judge_scale is not None
        else "a number in [0, 1]"
    )
    raise DataError(
        f"row {index}: label {value!r} (field {label!r}) is not {' or '.join(options)}; map "
        f"labels to scores with --label-scores (label_scores=), e.g. Y=1,N=0"
    )


def _score_scale(judge_scale: Any, label_scores: dict[str, float] | None, row_scores: list[float]) -> LabelScale:
    """The ordinal scale of scores: ``label_scores``' distinct values, else the judge's scale's points, else the
    labels' distinct scores."""
    if label_scores is not None:
        values = sorted(set(label_scores.values()))
        names = tuple("/".join(k for k, v in label_scores.items() if v == value) for value in values)
    elif judge_scale is not None:
        points = range(judge_scale.min, judge_scale.max + 1)
        values, names = [judge_scale.normalise(p) for p in points], tuple(str(p) for p in points)
    else:
        values = sorted(set(row_scores))
        names = tuple(f"{v:g}" for v in values)
    return LabelScale("scores", names, tuple(values), True)


# ---------------------------------------------------------------------- samples
def sample_judges(judge: Scorer, samples: int) -> list[Scorer]:
    """The judge once, or k copies that differ only in the request's ``seed`` (each cached apart)."""
    if samples == 1:
        return [judge]
    from ..judges.base import LLMJudge

    if hasattr(judge, "jurors"):
        raise ConfigError(f"samples={samples}: {judge.name} is a jury; measure a juror alone, or add jurors instead")
    if not isinstance(judge, LLMJudge):
        raise ConfigError(f"samples={samples}: {judge.name} is not an LLM judge, so repeated runs give the same score")
    if judge.temperature == 0:
        raise ConfigError(
            f"samples={samples}: {samples} samples need temperature > 0, and {judge.name} is at "
            f"temperature 0 (its samples would repeat one answer); set it, e.g. "
            f"-p {judge.name}.temperature=0.7 or temperature=0.7"
        )
    own = getattr(judge, "samples", 1)
    if own > 1:
        raise ConfigError(
            f"samples={samples}: {judge.name} already draws samples={own} per row "
            "(self-consistency); use one or the other"
        )
    copies: list[Scorer] = []
    for index in range(samples):
        sample = copy.copy(judge)
        sample.name = f"{judge.name}#{index + 1}"
        sample.extra_args = {**judge.extra_args, "seed": index}
        copies.append(sample)
    return copies


def _verdict(
    scale: LabelScale, metadata: Mapping[str, Any], value: float, score_of: Mapping[str, float]
) -> tuple[str | float, float, int | None]:
    """One judgment as (verdict shown, normalised score, category)."""
    if scale.type == "choices":
        choice = metadata["choice"] if "choice" in metadata else _PAIRWISE_VERDICT[metadata["winner"]]
        if choice in score_of or "jurors" not in metadata:  # a jury's row may have no choice (mean, a tie)
            return choice, score_of[choice], scale.labels.index(choice)
    category = scale.category(value)
    return (value if category is None else scale.labels[category]), value, category


# ------------------------------------------------------------------ the report
def meta_evaluate(rows: Iterable[Mapping[str, Any]], judge: Scorer | str, **options: Any) -> MetaEvaluation:
    """Judge ``rows`` and measure agreement with each row's human ``label`` (a field or dotted path).

    The options are :class:`~scorers.options.MetaEvalOptions`' (see the signature).
    ``label_scores`` maps labels to scores in [0, 1]; ``samples`` judges each row that many times
    (stability); ``key`` names a field that identifies rows in the report; ``mapping`` and
    ``concurrency`` go to :func:`scorers.evaluate`. Confidence intervals: percentile bootstrap
    (``scipy.stats.bootstrap``) over rows resampled in pairs, ``resamples`` times, at level
    ``confidence``, seeded with ``seed``. A row without a usable label is a
    :class:`~scorers.errors.DataError` before any request. See the module docstring for the report.
    The steps: :func:`read_labels` checks the labels, :func:`judge_rows` judges the rows,
    :func:`agreement_report` computes the figures, :meth:`MetaEvaluation.table` shows them.
    """
    checked = MetaEvalOptions(**options)
    (scorer,) = resolve_scorers([judge])
    judges = sample_judges(scorer, checked.samples)
    labelled = read_labels(rows, scorer, checked)
    return agreement_report(scorer, labelled, judge_rows(labelled, judges, checked), checked)


@dataclass(frozen=True)
class LabelledRows:
    """The rows of a meta-evaluation, each label on the :class:`LabelScale` (the first step, :func:`read_labels`)."""

    rows: list[dict[str, Any]]
    labels: list[Any]
    #: each row's ``key`` field, when the options name one
    keys: list[Any] | None
    scale: LabelScale
    #: each row's label score and category on the scale
    scores: list[float]
    categories: list[int]


def read_labels(rows: Iterable[Mapping[str, Any]], judge: Scorer, options: MetaEvalOptions) -> LabelledRows:
    """Each row's label (``options.label``) on the scale of ``judge``'s verdicts (see the module doc); a
    :class:`~scorers.errors.DataError` naming the row for a missing or unusable label, before any request.

    >>> from scorers import ExactMatch
    >>> labelled = read_labels([{"ok": 1}, {"ok": 0}], ExactMatch(), MetaEvalOptions(label="ok"))
    >>> labelled.scale.labels, labelled.scores, labelled.categories
    (('0', '1'), [1.0, 0.0], [1, 0])
    """
    copied = [dict(row) for row in rows]
    if not copied:
        raise DataError("meta-eval needs at least one labelled row; the data has none")
    labels = [_label(row, index, options.label) for index, row in enumerate(copied)]
    keys = None if options.key is None else [_row_key(row, index, options.key) for index, row in enumerate(copied)]
    scale, scores, categories = _scale(judge, labels, options.label_scores, options.label)
    return LabelledRows(copied, labels, keys, scale, scores, categories)


def _label(row: Mapping[str, Any], index: int, label: str) -> Any:
    value = lookup(row, label)
    if value is ABSENT or value is None or value == "":
        raise DataError(
            f"row {index}: no label in field {label!r} (columns: {', '.join(map(str, row))}); "
            "every row needs one (--label FIELD)"
        )
    return value


def _row_key(row: Mapping[str, Any], index: int, key: str) -> Any:
    found = lookup(row, key)
    if found is ABSENT:
        raise DataError(f"row {index}: no field {key!r} to name the row by (--key)")
    return found


@dataclass
class Judgments:
    """What :func:`judge_rows` found: the scored rows' verdicts and the failed rows, in row order."""

    verdicts: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    #: (label category, verdict category) per scored row
    codes: list[tuple[int, int | None]] = field(default_factory=list)
    #: each scored row's verdict of every sample
    samples: list[list[str | float]] = field(default_factory=list)
    #: every scored judgment's metadata
    metadata: list[Mapping[str, Any]] = field(default_factory=list)
    #: (row index, its jurors' record) of each row a jury did not score (a tie, too few jurors): its jurors still
    #: agree or disagree, so the agreement between them counts it
    unscored_juries: list[tuple[int, Mapping[str, Any]]] = field(default_factory=list)


def judge_rows(labelled: LabelledRows, judges: Sequence[Scorer], options: MetaEvalOptions) -> Judgments:
    """Score the rows with ``judges`` (the judge, or its samples: :func:`sample_judges`) through
    :func:`scorers.evaluate` and read each row's verdict on the label scale; a row any sample failed on is a
    failure with its errors."""
    scale = labelled.scale
    score_of = dict(zip(scale.labels, scale.scores)) if scale.type == "choices" else {}
    judged = Judgments()
    for result in evaluate(labelled.rows, judges, mapping=options.mapping, concurrency=options.concurrency):
        index = result.index
        named = {"index": index, **({"key": labelled.keys[index]} if labelled.keys is not None else {})}
        errors = _errors(result, judges)
        if errors:
            judged.failures.append({**named, "errors": errors})
            judged.unscored_juries += _jurors_records(index, result, judges)
            continue
        scores = [result.results[j.name] for j in judges]
        # a row where a sample's score is None went to failures above
        outcomes = [_verdict(scale, s.metadata, s.score, score_of) for s in scores]  # type: ignore[arg-type]
        category = _most_frequent([c for _, _, c in outcomes], scale)
        entry = {
            **named,
            "label": str(labelled.labels[index]),
            "label_score": labelled.scores[index],
            "verdict": None if category is None else scale.labels[category],
            "judge_score": float(np.mean([s for _, s, _ in outcomes])),
        }
        if len(judges) > 1:
            entry["sample_verdicts"] = [v for v, _, _ in outcomes]
        judged.verdicts.append(entry)
        judged.codes.append((labelled.categories[index], category))
        judged.samples.append([v for v, _, _ in outcomes])
        judged.metadata += [s.metadata for s in scores]
    return judged


def _jurors_records(index: int, result: Any, judges: Sequence[Scorer]) -> list[tuple[int, Mapping[str, Any]]]:
    """The jurors' record of a row a jury did not score: its error record or its scoreless metadata (none for a
    judge of several samples: a jury is measured with one)."""
    if len(judges) != 1:
        return []
    (judge,) = judges
    record = result.errors.get(judge.name) or getattr(result.results.get(judge.name), "metadata", None) or {}
    return [(index, record)] if isinstance(record.get("jurors"), Mapping) else []


def _errors(result: Any, judges: Sequence[Scorer]) -> list[dict[str, Any]]:
    """A row's errors per sample: each judge's error, or its missing score."""
    errors = [
        {"sample": s + 1, **{k: v for k, v in result.errors[j.name].items() if k in ("type", "message", "unexpected")}}
        for s, j in enumerate(judges)
        if j.name in result.errors
    ]
    return errors + [
        {"sample": s + 1, "type": "NoScore", "message": "the judge returned no score for this row"}
        for s, j in enumerate(judges)
        if j.name in result.results and result.results[j.name].score is None
    ]


def _most_frequent(categories: list[int | None], scale: LabelScale) -> int | None:
    """The most frequent verdict; a tie goes to the lowest score; None when a verdict is off the scale."""
    if None in categories:
        return None
    counts = collections.Counter(c for c in categories if c is not None)  # all of them: narrowed to int
    top = max(counts.values())
    return min((c for c in counts if counts[c] == top), key=lambda c: (scale.scores[c], c))


def agreement_report(
    judge: Scorer, labelled: LabelledRows, judged: Judgments, options: MetaEvalOptions
) -> MetaEvaluation:
    """The agreement of ``judge``'s verdicts with the labels: the figures with their bootstrap intervals, and the
    confusion, per-label figures, stability over samples and swap consistency where they apply."""
    scale, verdicts = labelled.scale, judged.verdicts
    drawn: dict[str, Any] = {"resamples": options.resamples, "confidence": options.confidence, "seed": options.seed}
    off = [v["judge_score"] for v in verdicts if v["verdict"] is None]
    label_codes = np.array([c for c, _ in judged.codes], int)
    judge_codes = np.array([c for _, c in judged.codes], int) if not off else None
    report = MetaEvaluation(
        judge=judge.name,
        signature=judge.signature(),
        label=options.label,
        key=options.key,
        scale=scale,
        samples=options.samples,
        rows=len(labelled.rows),
        verdicts=verdicts,
        failures=judged.failures,
        figures=_figures(scale, verdicts, label_codes, judge_codes, off, drawn),
        bootstrap={"method": agreement.BOOTSTRAP_METHOD, **drawn, "paired_over": "rows"},
    )
    if judge_codes is not None and verdicts:
        count = len(scale.labels)
        report.confusion = agreement.confusion(label_codes, judge_codes, categories=count)
        report.per_label = [
            {"label": name, **figures_of}
            for name, figures_of in zip(scale.labels, agreement.per_label(label_codes, judge_codes, categories=count))
        ]
    if options.samples > 1 and verdicts:
        report.stability = {"samples": options.samples, "n": len(verdicts), **agreement.stability(judged.samples)}
    if getattr(judge, "swap", False) and judged.metadata:
        report.swap = _swap(judged.metadata)
    report.jury = _jury(judge, labelled, judged, drawn)
    return report


def _jury(judge: Scorer, labelled: LabelledRows, judged: Judgments, drawn: dict[str, Any]) -> dict[str, Any] | None:
    """A jury's agreement: jurors with one another over every row they answered (a row the jury left unscored, a
    tie say, included: leaving out the rows where jurors split would overstate their agreement), with the jury
    over the scored rows, with the labels (coded as the jurors' verdicts: a choice's position, a rating on its
    scale, a score; none for a choice jury whose labels are scores)."""
    from ..judges.jury import Jury, jury_agreement_of, verdict_row

    if not isinstance(judge, Jury) or not (judged.metadata or judged.unscored_juries):
        return None
    scale = judge.verdict_scale
    rows = [verdict_row(judge.labels, scale, m, v["judge_score"]) for m, v in zip(judged.metadata, judged.verdicts)]
    rows += [verdict_row(judge.labels, scale, {"jurors": m["jurors"]}, None) for _, m in judged.unscored_juries]
    coded = not (scale.type == "choices" and labelled.scale.type != "choices")
    labels = [scale.label_value(v["label_score"], c) for v, (c, _) in zip(judged.verdicts, judged.codes)]
    labels += [scale.label_value(labelled.scores[i], labelled.categories[i]) for i, _ in judged.unscored_juries]
    return jury_agreement_of(judge.labels, scale, rows, labels if coded else None, **drawn)  # type: ignore[arg-type]


def _figures(
    scale: LabelScale,
    verdicts: list[dict[str, Any]],
    label_codes: np.ndarray,
    judge_codes: np.ndarray | None,
    off: list[float],
    drawn: dict[str, Any],
) -> dict[str, agreement.Estimate]:
    """accuracy, mean_abs_diff, kappa, spearman and kendall with their intervals (categorical ones only when
    the judge's scores are on the label scale)."""
    label_scores = np.array([v["label_score"] for v in verdicts], float)
    judge_scores = np.array([v["judge_score"] for v in verdicts], float)
    figures: dict[str, agreement.Estimate] = {}
    if judge_codes is not None:

        def kappa(x: np.ndarray, y: np.ndarray) -> float:
            return agreement.cohen_kappa(x, y, categories=len(scale.labels), weighted=scale.weighted)

        figures["accuracy"] = agreement.with_ci(agreement.accuracy, label_codes, judge_codes, vectorized=True, **drawn)
        figures["kappa"] = agreement.with_ci(
            kappa, label_codes, judge_codes, **drawn, undefined="labels and verdicts all fall in one category"
        )
    else:
        off_scale = (
            f"the judge's scores are not on the label scale ({off[0]:g} in {len(off)} row(s)), so its "
            "verdicts are not categories"
        )
        figures["accuracy"] = figures["kappa"] = agreement.Estimate(None, None, None, len(verdicts), off_scale)
    figures["mean_abs_diff"] = agreement.with_ci(
        agreement.mean_abs_diff, label_scores, judge_scores, vectorized=True, **drawn
    )
    constant = "the labels' or the judge's scores are constant"
    for name, function in (("spearman", agreement.spearman), ("kendall", agreement.kendall)):
        figures[name] = agreement.with_ci(function, label_scores, judge_scores, **drawn, undefined=constant)
    return {name: figures[name] for name in ("accuracy", "mean_abs_diff", "kappa", "spearman", "kendall")}


def _swap(judgments: list[Mapping[str, Any]]) -> dict[str, Any]:
    """A pairwise judge asked in both orders: how often the verdicts agree, how often one position won both."""
    return {
        "n": len(judgments),
        "consistency": float(np.mean([m["agreement"] for m in judgments])),
        "position_bias": float(np.mean([m["position_bias"] is not None for m in judgments])),
        "first": sum(m["position_bias"] == "first" for m in judgments),
        "second": sum(m["position_bias"] == "second" for m in judgments),
    }


# inspect.signature reads __signature__: the options are MetaEvalOptions' fields
meta_evaluate.__signature__ = MetaEvalOptions.signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("rows", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("judge", inspect.Parameter.POSITIONAL_OR_KEYWORD),
    ],
    returns="MetaEvaluation",
)
