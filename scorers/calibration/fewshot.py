"""Few-shot selection: choose labelled examples for a judge's prompt on one split, measure them on another.

:func:`select_examples` reads the labels as meta-eval does (:func:`scorers.stats.metaeval.read_labels`), splits
the rows (:func:`scorers.calibration.splits.split_rows`: train, dev and test, disjoint), draws a pool of
``pool`` candidates from the train split with ``numpy.random.default_rng(seed)``, and chooses ``examples``
(K) of them by greedy forward selection: at each step it adds the candidate whose judge (the examples chosen
so far plus that one, :func:`with_examples`) agrees best with the labels of the dev split (ties: the
candidate drawn first). Agreement is the ``measure``: Cohen's kappa for a judge that picks a choice
(quadratic-weighted on an ordinal label scale, as meta-eval weighs it), Spearman's rho for one that rates.

The headline is the test split's: the judge with the chosen examples and the judge without them, each with
its percentile bootstrap interval over the test rows, and their paired difference (the same resampled rows
for both judges). The dev split's figures are reported too, labelled as the split the examples were chosen
on (optimistic by construction); no figure is computed on the train split.

Requests: before any is sent the plan says how many the selection needs,
``requests_per_row x (dev x (1 + pool + (pool - 1) + ... + (pool - K + 1)) + 2 x test)`` (the judge without
examples on dev, every candidate at every step on dev, both judges on test), and ``max_requests`` refuses a
larger plan. Rows are judged through :func:`scorers.evaluate`, so through the engine's cache and concurrency:
a repeated run sends nothing again.

:func:`score_splits` is the step other calibrations build on: it judges every labelled row once and returns,
per split, each row's label score, judge score, categories and metadata (:class:`SplitScores`).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .._util import ABSENT, lookup
from ..base import Scorer
from ..errors import ConfigError, DataError
from ..options import CalibrateOptions
from ..runner import resolve_scorers
from ..stats import agreement
from ..stats.metaeval import (
    Judgments,
    LabelledRows,
    MetaEvaluation,
    agreement_report,
    judge_rows,
    read_labels,
    sample_judges,
)
from .splits import SPLIT_NAMES, Splits, split_rows

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "FewShotSelection",
    "SplitScores",
    "select_examples",
    "score_splits",
    "prepare",
    "with_examples",
    "plan_requests",
    "file_sha256",
]

FORMAT = "scorers-calibrate"
FORMAT_VERSION = 1


# ------------------------------------------------------------------ shared steps
def prepare(rows: Iterable[Mapping[str, Any]], judge: Scorer, options: CalibrateOptions) -> tuple[LabelledRows, Splits]:
    """The labels on the judge's scale (a :class:`~scorers.errors.DataError` for a missing or unusable one) and
    the train/dev/test splits of the rows, before any request."""
    labelled = read_labels(rows, judge, options)
    return labelled, split_rows(labelled.rows, options.split, seed=options.seed, group=options.group)


def _subset(labelled: LabelledRows, indices: Sequence[int]) -> LabelledRows:
    return dataclasses.replace(
        labelled,
        rows=[labelled.rows[i] for i in indices],
        labels=[labelled.labels[i] for i in indices],
        keys=None if labelled.keys is None else [labelled.keys[i] for i in indices],
        scores=[labelled.scores[i] for i in indices],
        categories=[labelled.categories[i] for i in indices],
    )


def judge_split(judge: Scorer, labelled: LabelledRows, indices: Sequence[int], options: CalibrateOptions) -> Judgments:
    """Judge the rows ``indices`` (meta-eval's :func:`~scorers.stats.metaeval.judge_rows`, with ``samples``); each
    verdict's and failure's ``index`` is the row's index in the labelled file."""
    judged = judge_rows(_subset(labelled, indices), sample_judges(judge, options.samples), options)
    for entry in [*judged.verdicts, *judged.failures]:
        entry["index"] = indices[entry["index"]]
    return judged


@dataclass(frozen=True)
class SplitScores:
    """One split's judged rows (failed rows left out, listed in ``failures``), in row order."""

    split: str
    #: each scored row's index in the labelled file
    indices: tuple[int, ...]
    label_scores: np.ndarray
    judge_scores: np.ndarray
    label_categories: np.ndarray
    #: the verdict's category on the label scale, ``None`` where the judge's score is off it
    judge_categories: tuple[int | None, ...]
    #: each scored row's Score metadata (the first sample's when ``samples`` > 1)
    metadata: tuple[Mapping[str, Any], ...]
    failures: tuple[Mapping[str, Any], ...]


def score_splits(
    judge: Scorer, labelled: LabelledRows, splits: Splits, options: CalibrateOptions
) -> dict[str, SplitScores]:
    """Judge every labelled row once (one :func:`scorers.evaluate` run) and return each split's
    :class:`SplitScores` (``train``, ``dev``, ``test``)."""
    judged = judge_split(judge, labelled, range(len(labelled.rows)), options)
    samples = options.samples
    where = splits.split_of()
    out = {}
    for name in SPLIT_NAMES:
        rows = [n for n, v in enumerate(judged.verdicts) if where[v["index"]] == name]
        out[name] = SplitScores(
            split=name,
            indices=tuple(judged.verdicts[n]["index"] for n in rows),
            label_scores=np.array([judged.verdicts[n]["label_score"] for n in rows], float),
            judge_scores=np.array([judged.verdicts[n]["judge_score"] for n in rows], float),
            label_categories=np.array([judged.codes[n][0] for n in rows], int),
            judge_categories=tuple(judged.codes[n][1] for n in rows),
            metadata=tuple(judged.metadata[n * samples] for n in rows),
            failures=tuple(f for f in judged.failures if where[f["index"]] == name),
        )
    return out


def file_sha256(path: str) -> str:
    """The SHA-256 of a file's bytes (the labels file, as provenance records it)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ------------------------------------------------------------------ examples
def with_examples(judge: Any, examples: Sequence[Mapping[str, Any]], name: str | None = None) -> Any:
    """A copy of the template judge ``judge`` built again with ``examples`` (``[]``: none), as its constructor
    validates them (:mod:`scorers.judges.examples`); same engine, settings and template otherwise.

    >>> from scorers.judges import LLMClassifier
    >>> judge = LLMClassifier("Polite", "Is this polite? {{output}}", {"Y": 1, "N": 0})
    >>> shown = with_examples(judge, [{"variables": {"output": "Go away."}, "verdict": "N"}])
    >>> shown.signature()["template"]["hash"] != judge.signature()["template"]["hash"]
    True
    """
    from ..judges import TemplatedJudge

    if not isinstance(judge, TemplatedJudge):
        raise ConfigError(f"{judge.name}: few-shot examples need a template judge (a judge from a template file)")
    return type(judge)(
        name or judge.name,
        template=judge.template,
        examples=list(examples),
        engine=judge._engine,
        client=judge.client,
        max_reasks=judge.max_reasks,
        description=judge.description,
        **judge.spec.settings(),
    )


def _verdict(judge: Any, labelled: LabelledRows, index: int) -> Any:
    """Row ``index``'s label as a verdict of ``judge``'s kind: the choice, or the integer on its scale."""
    score = labelled.scores[index]
    choices = getattr(judge, "choices", None)
    if labelled.scale.type == "choices":
        return str(labelled.labels[index])
    if choices is not None:
        scores = dict(judge.choice_scores) if hasattr(judge, "choice_scores") else {"A": 1.0, "B": 0.0, "tie": 0.5}
        found = [c for c in choices if math.isclose(scores.get(c, -1.0), score, abs_tol=1e-9)]
        if found:
            return found[0]
    elif getattr(judge, "scale", None) is not None and not hasattr(judge, "criteria"):
        point = judge.scale.min + score * (judge.scale.max - judge.scale.min)
        if math.isclose(point, round(point), abs_tol=1e-9):
            return int(round(point))
    elif hasattr(judge, "criteria"):
        raise ConfigError(f"{judge.name}: a rubric example needs a grade per criterion; one label gives none")
    raise DataError(
        f"row {index}: label {labelled.labels[index]!r} (score {score:g}) is no verdict {judge.name} can give "
        "(a choice, or a point of its scale), so it cannot be an example"
    )


def _example(judge: Any, labelled: LabelledRows, index: int, mapping: Mapping[str, str] | None) -> dict[str, Any]:
    row = labelled.rows[index]
    variables = {}
    for name in judge.template.variables:
        value = lookup(row, (mapping or {}).get(name, name))
        if value is ABSENT or value is None:
            raise DataError(f"row {index}: no field {name!r} for the example's template variable")
        variables[name] = value
    return {"variables": variables, "verdict": _verdict(judge, labelled, index)}


# ------------------------------------------------------------------ measures
def _measure_name(judge: Scorer, options: CalibrateOptions) -> str:
    if options.measure != "auto":
        return options.measure
    return "kappa" if getattr(judge, "choices", None) is not None else "spearman"


def _statistic(measure: str, labelled: LabelledRows) -> Any:
    """``f(label values, judge values)`` of the measure: kappa of categories, or Spearman of scores."""
    if measure == "spearman":
        return agreement.spearman
    count, weighted = len(labelled.scale.labels), labelled.scale.weighted

    def kappa(x: np.ndarray, y: np.ndarray) -> float:
        return agreement.cohen_kappa(x, y, categories=count, weighted=weighted)

    return kappa


def _pairs(measure: str, judged: Judgments) -> tuple[np.ndarray, np.ndarray] | None:
    """The (label, judge) values the measure compares, or ``None`` when a verdict is off the label scale."""
    if measure == "spearman":
        return (
            np.array([v["label_score"] for v in judged.verdicts], float),
            np.array([v["judge_score"] for v in judged.verdicts], float),
        )
    if any(c is None for _, c in judged.codes):
        return None
    return np.array([c for c, _ in judged.codes], int), np.array([c for _, c in judged.codes], int)


def _point(measure: str, labelled: LabelledRows, judged: Judgments) -> float | None:
    pairs = _pairs(measure, judged)
    if pairs is None or len(pairs[0]) == 0:
        return None
    value = _statistic(measure, labelled)(*pairs)
    return None if math.isnan(value) else float(value)


def plan_requests(per_row: int, dev: int, test: int, pool: int, k: int) -> int:
    """The judge requests of a selection, cache aside (see the module docstring).

    >>> plan_requests(1, dev=10, test=10, pool=8, k=2)
    180
    """
    return per_row * (dev * (1 + sum(pool - step for step in range(k))) + 2 * test)


def _requests_per_row(judge: Any, samples: int) -> int:
    text = str(getattr(judge, "requests_per_row", 1))
    return int(text.split()[0]) * samples


# ------------------------------------------------------------------ the selection
@dataclass
class FewShotSelection:
    """What :func:`select_examples` found; :meth:`to_dict` is the JSON report, :meth:`template_document` the new
    template file, :meth:`table` the summary on stderr."""

    judge: Any
    selected: Any
    labelled: LabelledRows
    splits: Splits
    options: CalibrateOptions
    measure: str
    pool: list[int]
    chosen: list[int]
    steps: list[dict[str, Any]]
    planned: int
    #: split → "baseline" | "selected" → the meta-eval report of that judge on that split
    reports: dict[str, dict[str, MetaEvaluation]] = field(default_factory=dict)
    difference: agreement.Estimate | None = None

    @property
    def examples(self) -> list[dict[str, Any]]:
        return [dict(e) for e in self.selected.template.examples]

    def headline(self) -> dict[str, Any]:
        """The test split's measure for both judges and their difference: the figure to quote."""
        test = self.reports["test"]
        return {
            "split": "test",
            "measure": self.measure,
            "baseline": self._figure("test", test["baseline"]),
            "selected": self._figure("test", test["selected"]),
            "difference": {"split": "test", **self.difference.to_dict()} if self.difference else None,
        }

    def _figure(self, split: str, report: MetaEvaluation) -> dict[str, Any]:
        return {"split": split, **report.figures[self.measure].to_dict()}

    def _rows(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        keys = self.labelled.keys
        return [{"index": i, **({"key": keys[i]} if keys is not None else {})} for i in indices]

    def to_dict(self) -> dict[str, Any]:
        drawn = {"resamples": self.options.resamples, "confidence": self.options.confidence, "seed": self.options.seed}
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "mode": "examples",
            "judge": {"name": self.judge.name, "signature": self.judge.signature()},
            "selected": {"name": self.selected.name, "signature": self.selected.signature()},
            "label": self.options.label,
            "key": self.options.key,
            "scale": self.labelled.scale.to_dict(),
            "measure": self.measure,
            "splits": {
                **self.splits.to_dict(),
                "indices": {name: list(self.splits.indices(name)) for name in SPLIT_NAMES},
            },
            "pool": self._rows(self.pool),
            "examples": [{**row, "verdict": e["verdict"]} for row, e in zip(self._rows(self.chosen), self.examples)],
            "requests": {"planned": self.planned, "cap": self.options.max_requests},
            "steps": self.steps,
            "headline": self.headline(),
            "figures": {
                split: {
                    judge: {name: {"split": split, **figure.to_dict()} for name, figure in report.figures.items()}
                    for judge, report in reports.items()
                }
                for split, reports in self.reports.items()
            },
            "failures": {
                split: {judge: report.failures for judge, report in reports.items()}
                for split, reports in self.reports.items()
            },
            "bootstrap": {"method": agreement.BOOTSTRAP_METHOD, **drawn, "paired_over": "rows of the split"},
            "note": "examples were chosen on the dev split: its figures are optimistic; the test split's are held out",
        }

    def provenance(self, labels: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """How the examples were made: labels (file, sha256), split rule, pool, chosen rows, figures on dev and
        test with their intervals (what :meth:`template_document` writes under ``provenance:``)."""
        from .._version import __version__

        template = self.judge.signature().get("template") or {}
        return {
            "made_by": f"python -m scorers calibrate --examples {len(self.chosen)} (scorers {__version__})",
            "made_at": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
            "from": {"judge": self.judge.name, "template_hash": template.get("hash"), "file": template.get("file")},
            "labels": {**(labels or {}), "label": self.options.label, "rows": len(self.labelled.rows)},
            "split": self.splits.to_dict(),
            "pool": self._rows(self.pool),
            "examples": self._rows(self.chosen),
            "measure": self.measure,
            "figures": {
                split: {judge: self._figure(split, report) for judge, report in reports.items()}
                for split, reports in self.reports.items()
            },
            "difference": self.headline()["difference"],
            "bootstrap": f"{agreement.BOOTSTRAP_METHOD}, {self.options.resamples} resamples of the split's rows, "
            f"level {self.options.confidence}, seed {self.options.seed}",
        }

    def template_document(self, name: str, labels: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The new template file's mapping: the judge's definition (its file's, else its spec's), named ``name``,
        with its request settings, the ``examples:`` block and ``provenance:``."""
        document = _definition(self.judge)
        document["name"] = name
        document["examples"] = self.examples
        document["provenance"] = self.provenance(labels)
        return document

    def table(self) -> str:
        """The summary the CLI prints on stderr: the plan, each step on dev, then dev and test figures."""
        sizes = self.splits.to_dict()["rows"]
        lines = [
            f"calibrate --examples {len(self.chosen)}: {self.judge.name} vs label {self.options.label!r}; "
            f"splits train {sizes['train']}, dev {sizes['dev']}, test {sizes['test']} rows "
            f"({self.splits.to_dict()['rule']}, seed {self.splits.seed}); pool {len(self.pool)}; "
            f"at most {self.planned} requests",
            "",
            f"greedy selection on dev ({self.measure}):",
        ]
        lines += [
            f"  step {s['step']}: + row {s['added']}  dev {self.measure} {_fmt(s['dev'])} (n {s['n']})"
            for s in self.steps
        ]
        level = int(self.options.confidence * 100)
        lines += ["", f"{'split':<6} {'judge':<10} {self.measure:>8}  {level}% CI{'':<14} {'n':>5}"]
        for split, reports in self.reports.items():
            for judge, report in reports.items():
                figure = report.figures[self.measure]
                lines.append(f"{split:<6} {judge:<10} {_fmt(figure.value):>8}  {_ci(figure):<20} {figure.n:>5}")
        if self.difference is not None:
            d = self.difference
            lines.append(f"{'test':<6} {'difference':<10} {_fmt(d.value):>8}  {_ci(d):<20} {d.n:>5}")
        head = self.headline()
        lines += [
            "",
            f"held out (test): {self.measure} {_fmt(head['selected']['value'])} with the examples, "
            f"{_fmt(head['baseline']['value'])} without; difference {_fmt(self.difference.value if self.difference else None)} "
            f"{_ci(self.difference) if self.difference else ''}".rstrip()
            + (f" ({self.difference.reason})" if self.difference and self.difference.reason else ""),
            "dev figures are where the examples were chosen: optimistic by construction",
        ]
        return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _ci(figure: agreement.Estimate) -> str:
    return "-" if figure.low is None else f"[{_fmt(figure.low)}, {_fmt(figure.high)}]"


def _definition(judge: Any) -> dict[str, Any]:
    """The judge's definition as a template file holds it: its file's mapping (our format) or its spec's fields,
    with the request and kind settings the judge was given, without old ``examples``/``provenance``."""
    import yaml

    document: dict[str, Any] | None = None
    if judge.template.file and judge.template.format == "scorers":
        with open(judge.template.file, encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle)
        document = dict(loaded) if isinstance(loaded, Mapping) else None
    if document is None:
        document = judge.spec.model_dump(mode="json", include={"kind", "description", "prompt", "messages", "fields"})
        document = {k: v for k, v in document.items() if v not in (None, "")}
    given = judge.spec.model_dump(mode="json", include=set(judge.spec.settings()))
    document.update({key: value for key, value in given.items() if value is not None})  # None: the default
    for key in ("examples", "provenance"):
        document.pop(key, None)
    return document


def select_examples(
    rows: Iterable[Mapping[str, Any]],
    judge: Scorer | str,
    *,
    announce: Callable[[str], None] | None = None,
    **options: Any,
) -> FewShotSelection:
    """Choose ``examples`` (K) labelled examples for ``judge`` by greedy forward selection on the dev split and
    report agreement on the held-out test split (see the module docstring). The options are
    :class:`~scorers.options.CalibrateOptions`' (see the signature); ``announce`` is called with the plan (splits,
    pool, requests) before any request is sent (the command line prints it).

    A configuration the plan refuses (no K, K above the pool, more requests than ``max_requests``, a judge that is
    no template judge) is a :class:`~scorers.errors.ConfigError`, and a bad label a
    :class:`~scorers.errors.DataError`, before any request.
    """
    checked = CalibrateOptions(**options)
    (scorer,) = resolve_scorers([judge])
    if checked.examples is None:
        raise ConfigError("calibrate: few-shot selection needs examples=K (--examples K)")
    with_examples(scorer, [])  # a template judge, or a ConfigError now
    labelled, splits = prepare(rows, scorer, checked)
    k, measure = checked.examples, _measure_name(scorer, checked)
    candidates = {i: _example(scorer, labelled, i, checked.mapping) for i in splits.train}
    drawn = np.random.default_rng(checked.seed).permutation(len(splits.train))[: checked.pool]
    pool = [splits.train[i] for i in drawn]
    if k > len(pool):
        raise ConfigError(
            f"calibrate: examples={k} is more than the pool of {len(pool)} train rows (pool={checked.pool})"
        )
    per_row = _requests_per_row(scorer, checked.samples)
    planned = plan_requests(per_row, len(splits.dev), len(splits.test), len(pool), k)
    plan = (
        f"the selection needs up to {planned} judge requests ({per_row} per row x (dev {len(splits.dev)} x "
        f"(1 + {' + '.join(str(len(pool) - s) for s in range(k))}) + 2 x test {len(splits.test)}))"
    )
    if checked.max_requests is not None and planned > checked.max_requests:
        raise ConfigError(
            f"calibrate: {plan}, over max_requests={checked.max_requests}; lower --examples or --pool, or raise "
            "the cap (cached requests are not sent again)"
        )
    if announce is not None:
        announce(
            f"calibrate --examples {k}: splits train {len(splits.train)}, dev {len(splits.dev)}, test "
            f"{len(splits.test)} rows; pool {len(pool)}; {plan}, fewer where cached"
        )
    dev, test = list(splits.dev), list(splits.test)
    baseline = with_examples(scorer, [])
    dev_judged = {"baseline": judge_split(baseline, labelled, dev, checked)}
    chosen: list[int] = []
    steps: list[dict[str, Any]] = []
    for step in range(1, k + 1):
        trials = []
        for index in (i for i in pool if i not in chosen):
            candidate = with_examples(scorer, [candidates[i] for i in [*chosen, index]])
            judged = judge_split(candidate, labelled, dev, checked)
            trials.append((index, _point(measure, labelled, judged), judged))
        best = max(trials, key=lambda trial: -math.inf if trial[1] is None else trial[1])
        chosen.append(best[0])
        dev_judged["selected"] = best[2]
        steps.append(
            {
                "step": step,
                "split": "dev",
                "added": best[0],
                "dev": best[1],
                "n": len(best[2].verdicts),
                "candidates": [{"index": i, "dev": v, "n": len(j.verdicts)} for i, v, j in trials],
            }
        )
    selected = with_examples(scorer, [candidates[i] for i in chosen])
    test_judged = {"baseline": judge_split(baseline, labelled, test, checked)}
    test_judged["selected"] = judge_split(selected, labelled, test, checked)
    result = FewShotSelection(scorer, selected, labelled, splits, checked, measure, pool, chosen, steps, planned)
    for split, judged_by in (("dev", dev_judged), ("test", test_judged)):
        part = _subset(labelled, dev if split == "dev" else test)
        result.reports[split] = {
            name: agreement_report(baseline if name == "baseline" else selected, part, j, checked)
            for name, j in judged_by.items()
        }
    result.difference = _difference(measure, labelled, test_judged["baseline"], test_judged["selected"], checked)
    return result


def _difference(
    measure: str, labelled: LabelledRows, baseline: Judgments, selected: Judgments, options: CalibrateOptions
) -> agreement.Estimate:
    """measure(selected) - measure(baseline) over the rows both judged, with a paired percentile bootstrap
    interval (the same resampled rows for both judges)."""
    both = sorted({v["index"] for v in baseline.verdicts} & {v["index"] for v in selected.verdicts})
    values = []
    for judged in (baseline, selected):
        kept = [n for n, v in enumerate(judged.verdicts) if v["index"] in set(both)]
        pairs = _pairs(
            measure,
            dataclasses.replace(
                judged, verdicts=[judged.verdicts[n] for n in kept], codes=[judged.codes[n] for n in kept]
            ),
        )
        if pairs is None:
            return agreement.Estimate(None, None, None, len(both), "a verdict is off the label scale")
        values.append(pairs)
    statistic = _statistic(measure, labelled)
    (labels, base), (_, chosen) = values

    def gain(drawn: np.ndarray, _: np.ndarray) -> float:
        rows = drawn.astype(int)
        return float(statistic(labels[rows], chosen[rows]) - statistic(labels[rows], base[rows]))

    rows = np.arange(len(both), dtype=float)
    return agreement.with_ci(
        gain,
        rows,
        rows,
        resamples=options.resamples,
        confidence=options.confidence,
        seed=options.seed,
        undefined=f"the {measure} of a judge is undefined on these rows",
    )


select_examples.__signature__ = CalibrateOptions.signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("rows", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("judge", inspect.Parameter.POSITIONAL_OR_KEYWORD),
    ],
    [inspect.Parameter("announce", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="Callable[[str], None]")],
    returns="FewShotSelection",
)
