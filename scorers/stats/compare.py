"""Compare results files of the same rows: means with confidence intervals, corpus figures, paired tests.

:func:`compare` reads two or more results files of ``scorers run`` (the first is
the baseline), matches their rows by position or by a key field, and for every
scorer present in all of them reports each system's figures and, for every other
system, the difference from the baseline with the p-value of a paired test:

- **mean** of the row scores, with a 95 % interval from ``scipy.stats.bootstrap``
  (BCa, ``numpy.random.default_rng(seed)``);
- for scorers with a corpus figure (BLEU, chrF, TER: the rows' ``"stats"``), the
  **corpus figure**, sacrebleu's bootstrap mean ± half-width and the p-value,
  equal to ``sacrebleu.significance.PairedTest`` with the same seed and number of
  resamples (see :mod:`scorers.stats.resample` for the one difference: ties).

Intervals take ``resamples`` bootstrap resamples under ``"bs"`` and 1000 under
``"ar"`` (sacrebleu's default for the intervals of its ``ar`` test).

Both tests resample the same way for both kinds of figure (:mod:`scorers.stats.resample`):
``"bs"`` paired bootstrap, ``"ar"`` approximate randomisation. A row where a
scorer failed or gave no score in any of the files is left out of that scorer's
figures in all files (so every system is measured on the same rows); the count
is reported per file.

>>> import json, tempfile, os
>>> folder = tempfile.mkdtemp()
>>> for name, scores in (("a", [0.2, 0.4, 0.6, 0.8]), ("b", [0.3, 0.5, 0.7, 0.9])):
...     with open(os.path.join(folder, name + ".jsonl"), "w") as fh:
...         fh.writelines(json.dumps({"input": i, "scores": {"S": s}}) + "\\n" for i, s in enumerate(scores))
>>> result = compare([os.path.join(folder, "a.jsonl"), os.path.join(folder, "b.jsonl")], resamples=200)
>>> figure = result.figures[0]
>>> figure.scorer, figure.figure, round(figure.systems[1].difference, 4), figure.systems[1].p_value
('S', 'mean', 0.1, 0.004975124378109453)
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._util import ABSENT, lookup
from ..aggregate import MeanAggregator, StatsAggregator
from ..errors import ConfigError, DataError, UnknownScorerError
from ..io import input_row, read_rows
from ..options import COMPARE_RESAMPLES, TESTS, CompareOptions
from ..registry import registry
from ..score import Score
from . import resample

__all__ = [
    "compare",
    "Comparison",
    "FigureComparison",
    "SystemFigure",
    "TESTS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "read_results",
    "align_rows",
    "compare_rows",
    "CompareOptions",
    "mean_interval",
]

#: sacrebleu's defaults: 1000 bootstrap resamples, 10000 randomisation trials.
DEFAULT_RESAMPLES = COMPARE_RESAMPLES
#: sacrebleu's default seed (``SACREBLEU_SEED``).
DEFAULT_SEED: int = CompareOptions.default("seed")
CONFIDENCE = 0.95
#: Fields of the task (not of the system's answer) that matched rows must agree on, where both files have them.
CHECKED_FIELDS = ("input", "expected")
#: Bootstrap values scipy holds at once (its ``batch``), to bound memory on large files; numbers do not depend on it.
_BATCH_VALUES = 1 << 22
_TEST_NAMES = {"bs": "paired bootstrap", "ar": "approximate randomisation"}
INTERVALS = {
    "mean": "scipy.stats.bootstrap, BCa, 95 %",
    "corpus": "sacrebleu: resample mean ± half the range between the sorted resamples at n//40 and n-n//40-1",
}


@dataclass(frozen=True)
class SystemFigure:
    """One file's figure: value, 95 % interval and, against the baseline, difference and p-value.

    For corpus figures ``resample_mean`` ± ``halfwidth`` is sacrebleu's bootstrap
    estimate and ``low``/``high`` its ends. ``worse``/``better``: the difference is
    significant (p < alpha) in that direction.
    """

    file: str
    value: float | None
    low: float | None = None
    high: float | None = None
    resample_mean: float | None = None
    halfwidth: float | None = None
    difference: float | None = None
    p_value: float | None = None
    worse: bool = False
    better: bool = False


@dataclass(frozen=True)
class FigureComparison:
    """One figure (``mean``, or a corpus figure such as ``corpus_bleu``) of one scorer across the files."""

    scorer: str
    figure: str
    higher_is_better: bool | None
    rows: int
    #: rows this scorer failed on (an error, or a null score) in each file; they are left out of every file
    failed: dict[str, int]
    excluded: int
    systems: tuple[SystemFigure, ...]
    note: str | None = None


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`; :meth:`to_dict` for JSON, :meth:`table` for people."""

    files: tuple[str, ...]
    rows: int
    key: str | None
    test: str
    resamples: int
    seed: int
    alpha: float
    figures: tuple[FigureComparison, ...]
    #: scorers not in every file, with the files that have them
    not_compared: dict[str, str] = field(default_factory=dict)

    @property
    def interval_resamples(self) -> int:
        """Bootstrap resamples of every interval: ``resamples`` under bs, 1000 under ar."""
        return _interval_resamples(self.test, self.resamples)

    def headline(self, scorer: str) -> FigureComparison:
        """The figure that decides for ``scorer``: its corpus figure if it has one, else its mean."""
        found = [f for f in self.figures if f.scorer.lower() == scorer.lower()]
        if not found:
            raise ConfigError(
                f"{scorer}: not a scorer compared here "
                f"(compared: {', '.join(dict.fromkeys(f.scorer for f in self.figures))})"
            )
        return found[-1]

    def worse(self, scorer: str) -> list[str]:
        """The files significantly worse than the baseline on ``scorer``'s headline figure (at ``alpha``).

        When no row has a score in every file, every other file counts: nothing shows it is not worse.
        """
        figure = self.headline(scorer)
        return [s.file for s in figure.systems[1:] if s.worse or not figure.rows]

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "baseline": self.files[0],
            "rows": self.rows,
            "matched_by": {"key": self.key} if self.key else "position",
            "test": self.test,
            "resamples": self.resamples,
            "interval_resamples": self.interval_resamples,
            "seed": self.seed,
            "alpha": self.alpha,
            "confidence": CONFIDENCE,
            "intervals": INTERVALS,
            "not_compared": self.not_compared,
            "figures": [asdict(f) for f in self.figures],
        }

    def table(self) -> str:
        """A plain-text table: one line per scorer, figure and file."""
        names = [os.path.basename(f) for f in self.files]
        if len(set(names)) < len(names):
            names = list(self.files)
        lines = [
            f"{len(self.files)} files, {self.rows} rows matched by "
            f"{'key ' + self.key if self.key else 'position'}; baseline {names[0]}; "
            f"{_TEST_NAMES[self.test]}, {self.resamples} {'trials' if self.test == 'ar' else 'resamples'}, "
            f"seed {self.seed}; 95 % intervals of {self.interval_resamples} resamples; "
            f"significant at p < {self.alpha}"
        ]
        header = ("scorer", "figure", "system", "value", "95 % interval", "diff", "p", "")
        body = [
            self._cells(figure, name, system) for figure in self.figures for name, system in zip(names, figure.systems)
        ]
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
        for row in [header, *body]:
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        lines += [_figure_line(figure) for figure in self.figures]
        lines += [f"{name}: not compared, only in {where}" for name, where in self.not_compared.items()]
        return "\n".join(lines)

    def _cells(self, figure: FigureComparison, name: str, system: SystemFigure) -> tuple[str, ...]:
        """One line of the table: a file's figure, interval, difference, p-value and verdict."""
        if system.halfwidth is not None:
            interval = f"μ {system.resample_mean:.4f} ± {system.halfwidth:.4f}"
        elif system.low is not None:
            interval = f"[{system.low:.4f}, {system.high:.4f}]"
        else:
            interval = "-"
        verdict = "worse" if system.worse else "better" if system.better else ""
        p_value = "-" if system.p_value is None else format_p_value(system.p_value, self.alpha)
        return (
            figure.scorer,
            figure.figure,
            name,
            _number(system.value),
            interval,
            _number(system.difference, "+.4f"),
            p_value,
            verdict,
        )


def _figure_line(figure: FigureComparison) -> str:
    """A figure's rows, rows left out (failed per file) and direction, under the table."""
    direction = {True: "higher is better", False: "lower is better", None: "direction unknown"}[figure.higher_is_better]
    counts = ", ".join(f"{os.path.basename(f)} {n}" for f, n in figure.failed.items() if n)
    return (
        f"{figure.scorer} {figure.figure}: {figure.rows} rows, {figure.excluded} left out"
        f"{' (failed: ' + counts + ')' if counts else ''}; "
        f"{direction}" + (f"; {figure.note}" if figure.note else "")
    )


def _number(value: float | None, spec: str = ".4f") -> str:
    return "-" if value is None else format(value, spec)


def format_p_value(p_value: float, alpha: float) -> str:
    """``p_value`` with 4 decimals, or with as many more as it takes to show on which side of ``alpha`` it lies.

    >>> format_p_value(0.008, 0.05), format_p_value(0.04996, 0.05), format_p_value(0.05004, 0.05)
    ('0.0080', '0.04996', '0.05004')
    >>> format_p_value(0.05, 0.05)  # not below alpha: not significant
    '0.0500'
    """
    for decimals in range(4, 18):
        shown = f"{p_value:.{decimals}f}"
        if (float(shown) < alpha, float(shown) == alpha) == (p_value < alpha, p_value == alpha):
            return shown
    return repr(p_value)


#: Corpus figures in native units that run against their scorer's 0-1 score (TER: edits per word).
LOWER_IS_BETTER_CORPUS = ("corpus_ter",)


def compare(files: Sequence[str | os.PathLike[str]], **options: Any) -> Comparison:
    """Compare results files of the same rows; the first file is the baseline.

    ``key``: match rows by this field (a dotted path allowed) instead of by
    position. ``test``: ``"bs"`` (paired bootstrap) or ``"ar"`` (approximate
    randomisation); ``resamples``: bootstrap resamples or randomisation trials
    (default 1000 / 10000, as sacrebleu), and the bootstrap resamples of every
    interval under bs (1000 under ar); ``seed`` seeds every draw. ``params``: scorer parameters, as
    ``run -p``, for the corpus figures (e.g. ``{"BLEU": {"smooth_method": "floor"}}``);
    the defaults are the registry's, and the corpus figures are only right when these
    are the settings the run used. Raises :class:`DataError` when the files do not
    hold the same rows, :class:`ConfigError` for bad options.
    The steps: :func:`read_results` reads each file, :func:`align_rows` matches their rows,
    :func:`compare_rows` computes the figures and tests, :meth:`Comparison.table` shows them.
    """
    checked = CompareOptions(**options)
    paths = [os.fspath(f) for f in files]
    if len(paths) < 2:
        raise ConfigError(f"compare needs a baseline and at least one other results file, got {len(paths)} file(s)")
    return compare_rows(paths, align_rows(paths, [read_results(path) for path in paths], checked.key), checked)


# inspect.signature reads __signature__: the options are CompareOptions' fields
compare.__signature__ = CompareOptions.signature(  # type: ignore[attr-defined]
    [inspect.Parameter("files", inspect.Parameter.POSITIONAL_OR_KEYWORD)], returns="Comparison"
)


def compare_rows(paths: list[str], aligned: list[list[dict[str, Any]]], options: CompareOptions) -> Comparison:
    """The figures of :func:`compare` over the aligned rows of the files (:func:`align_rows`): every scorer in
    all of them, each file against the first."""
    names, not_compared = _scorer_names(paths, aligned)
    params = _check_params(options.params or {}, names, aligned)
    figures: list[FigureComparison] = []
    for name in names:
        figures += _compare_scorer(name, paths, aligned, options, params.get(name))
    return Comparison(
        tuple(paths),
        len(aligned[0]),
        options.key,
        options.test,
        options.draws,
        options.seed,
        options.alpha,
        tuple(figures),
        not_compared,
    )


# ------------------------------------------------------------------ reading and matching
def read_results(path: str) -> list[dict[str, Any]]:
    """The records of a results file of ``scorers run`` (a :class:`DataError` for a row without ``scores``)."""
    records = []
    for number, record in enumerate(read_rows(path, "jsonl"), 1):
        if not isinstance(record.get("scores"), dict):
            raise DataError(
                f'{path}: row {number} has no "scores" object; compare reads the results files of `scorers run`'
            )
        records.append(record)
    if not records:
        raise DataError(f"{path}: no rows")
    return records


def align_rows(paths: list[str], tables: list[list[dict[str, Any]]], key: str | None) -> list[list[dict[str, Any]]]:
    """Each file's records in the baseline's row order; checks that matched rows are of the same task."""
    if key is None:
        numbers, aligned = _by_position(paths, tables)
    else:
        numbers, aligned = _by_key(paths, tables, key)
    for path, records, rows in zip(paths[1:], aligned[1:], numbers[1:]):
        for i, (first, other) in enumerate(zip(aligned[0], records)):
            for name in CHECKED_FIELDS:
                if name in first and name in other and first[name] != other[name]:
                    raise DataError(
                        f"{paths[0]} row {numbers[0][i]} and {path} row {rows[i]} have different "
                        f"{name!r} ({_short(first[name])} vs {_short(other[name])}): not the same row"
                        + ("" if key else "; if the files list the rows in another order, use --key FIELD")
                    )
    return aligned


def _by_position(
    paths: list[str], tables: list[list[dict[str, Any]]]
) -> tuple[list[list[int]], list[list[dict[str, Any]]]]:
    """Rows matched by position: each file's row numbers and records."""
    base = tables[0]
    for path, records in zip(paths[1:], tables[1:]):
        if len(records) != len(base):
            raise DataError(
                f"{path} has {len(records)} rows and {paths[0]} has {len(base)}: not results of "
                "the same rows (rows are matched by position; --key FIELD matches them by a field)"
            )
    return [list(range(1, len(base) + 1)) for _ in paths], tables


def _by_key(
    paths: list[str], tables: list[list[dict[str, Any]]], key: str
) -> tuple[list[list[int]], list[list[dict[str, Any]]]]:
    """Rows matched by the ``key`` field: each file's row numbers and records, in the baseline's order."""
    indexes = [_index(path, records, key) for path, records in zip(paths, tables)]
    for path, index in zip(paths[1:], indexes[1:]):
        missing = [k for k in indexes[0] if k not in index]
        extra = [k for k in index if k not in indexes[0]]
        if missing or extra:
            parts = (
                _listed(f"{key} values of {paths[0]} missing from {path}", missing, indexes[0], paths[0]),
                _listed(f"{key} values of {path} not in {paths[0]}", extra, index, path),
            )
            raise DataError("; ".join(part for part in parts if part) + ": the files must hold the same rows")
    numbers = [[index[k] + 1 for k in indexes[0]] for index in indexes]
    return numbers, [[records[index[k]] for k in indexes[0]] for records, index in zip(tables, indexes)]


def _index(path: str, records: list[dict[str, Any]], key: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for position, record in enumerate(records):
        value = lookup(input_row(record), key)
        if value is ABSENT:
            raise DataError(f"{path}: row {position + 1} has no field {key!r} (--key)")
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        if text in index:
            raise DataError(
                f"{path}: rows {index[text] + 1} and {position + 1} have the same {key} {text}; "
                "--key needs a field that is unique per row"
            )
        index[text] = position
    return index


def _listed(what: str, keys: list[str], index: dict[str, int], path: str) -> str:
    if not keys:
        return ""
    shown = ", ".join(f"{k} (row {index[k] + 1})" for k in keys[:5])
    return f"{len(keys)} {what}: {shown}{', ...' if len(keys) > 5 else ''}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _scorer_names(paths: list[str], aligned: list[list[dict[str, Any]]]) -> tuple[list[str], dict[str, str]]:
    """Scorers in every file (in the baseline's order), and the others with the files that have them."""
    per_file = [list(dict.fromkeys(name for record in records for name in record["scores"])) for records in aligned]
    names = [name for name in per_file[0] if all(name in found for found in per_file[1:])]
    others = dict.fromkeys(name for found in per_file for name in found if name not in names)
    return names, {name: ", ".join(p for p, found in zip(paths, per_file) if name in found) for name in others}


def _check_params(
    params: Mapping[str, Mapping[str, Any]], names: list[str], aligned: list[list[dict[str, Any]]]
) -> dict[str, Mapping[str, Any]]:
    known = {name.lower(): name for name in names}
    checked = {}
    for given, values in params.items():
        name = known.get(given.lower())
        if name is None:
            raise ConfigError(f"-p {given}.…: {given} is not a scorer of every file (compared: {', '.join(names)})")
        if not any((record.get("stats") or {}).get(name) is not None for records in aligned for record in records):
            raise ConfigError(
                f"-p {given}.…: {name} has no corpus statistics in these files; parameters only "
                "change corpus figures here"
            )
        checked[name] = values
    return checked


# ------------------------------------------------------------------ figures
def _row_score(record: dict[str, Any], name: str) -> Score | None:
    """The row's score of ``name``, or None when it failed (an error) or gave none."""
    value = record["scores"].get(name)
    if value is None or name in (record.get("errors") or {}):
        return None
    stats = (record.get("stats") or {}).get(name)
    return Score(name, float(value), stats=None if stats is None else tuple(stats))


def _compare_scorer(
    name: str,
    paths: list[str],
    aligned: list[list[dict[str, Any]]],
    options: CompareOptions,
    params: Mapping[str, Any] | None,
) -> list[FigureComparison]:
    """One scorer's figures across the files: its mean, and its corpus figure where it has one."""
    per_file = [[_row_score(record, name) for record in records] for records in aligned]
    failed = {path: sum(s is None for s in scores) for path, scores in zip(paths, per_file)}
    kept = [i for i in range(len(aligned[0])) if all(scores[i] is not None for scores in per_file)]
    # kept rows have a Score in every file (no None)
    scores: list[list[Score]] = [[file_scores[i] for i in kept] for file_scores in per_file]  # type: ignore[misc]
    higher = _higher_is_better(name)

    def figure(
        label: str, direction: bool | None, systems: Sequence[SystemFigure], note: str | None = None
    ) -> FigureComparison:
        return FigureComparison(
            name, label, direction, len(kept), failed, len(aligned[0]) - len(kept), tuple(systems), note
        )

    if not kept:
        nothing = [SystemFigure(p, None) for p in paths]
        return [figure("mean", higher, nothing, "no row has a score of this scorer in every file")]
    mean_systems = _mean_systems(paths, scores, options, higher)
    note, corpus = _corpus_figure(name, paths, scores, options, higher, params)
    if corpus is None:
        return [figure("mean", higher, mean_systems, note)]
    return [figure("mean", higher, mean_systems), figure(*corpus)]


def _higher_is_better(name: str) -> bool | None:
    try:
        return registry.entry(name).higher_is_better
    except UnknownScorerError:
        return None  # not registered in this process: figures and p-values, but no "better"/"worse"


def _mean_systems(
    paths: list[str], scores: list[list[Score]], options: CompareOptions, higher: bool | None
) -> list[SystemFigure]:
    """Every file's mean with scipy's BCa interval, and the paired test against the baseline."""
    means = [_mean(row_scores) for row_scores in scores]
    figures = [resample.Figure.mean(np.array([s.score for s in row_scores])) for row_scores in scores]
    resamples = _interval_resamples(options.test, options.draws)
    return _systems(
        paths, means, figures, options, higher, lambda values: mean_interval(values, resamples, options.seed)
    )


def _corpus_figure(
    name: str,
    paths: list[str],
    scores: list[list[Score]],
    options: CompareOptions,
    higher: bool | None,
    params: Mapping[str, Any] | None,
) -> tuple[str | None, tuple[str, bool, list[SystemFigure]] | None]:
    """The scorer's corpus figure on every file (BLEU's, chrF's, TER's: from the rows' statistics) as
    (figure, direction, systems); else why there is none (a note, or None where none is expected)."""
    rows = len(scores[0])
    with_stats = [sum(s.stats is not None for s in row_scores) for row_scores in scores]
    if min(with_stats) < rows:
        missing = rows - min(with_stats)
        note = (
            f"no corpus figure: {missing} compared rows carry no statistics in some file (results of an older version?)"
        )
        return (note if any(with_stats) else None), None
    if higher is None:
        return "no corpus figure: not a registered scorer here", None
    aggregators = [registry.get(name, **dict(params or {})).aggregator() for _ in paths]
    if not isinstance(aggregators[0], StatsAggregator):
        return None, None
    # The scorer's corpus callback (its StatsAggregator's): figures from column sums; the first key is the figure.
    corpus, key = aggregators[0].corpus, aggregators[0].keys[0]
    observed = []
    for aggregator, row_scores in zip(aggregators, scores):
        for score in row_scores:
            aggregator.add(score)
        observed.append(aggregator.result()[key])
    figures = [
        resample.Figure(
            np.array([s.stats for s in row_scores]), lambda totals: corpus(list(totals), rows)[key], np.float32
        )
        for row_scores in scores
    ]
    direction = higher != (key in LOWER_IS_BETTER_CORPUS)
    return None, (key, direction, _systems(paths, observed, figures, options, direction))


def _interval_resamples(test: str, resamples: int) -> int:
    return resamples if test == "bs" else DEFAULT_RESAMPLES["bs"]


def _mean(scores: list[Score]) -> float:
    aggregator = MeanAggregator()
    for score in scores:
        aggregator.add(score)
    return aggregator.result()["mean"]


def mean_interval(values: np.ndarray, resamples: int, seed: int) -> tuple[float | None, float | None]:
    """scipy's BCa bootstrap interval of the mean; a constant sample's mean has the interval [x, x]."""
    from scipy.stats import bootstrap

    if len(values) < 2:
        return None, None
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    result = bootstrap(
        (values,),
        np.mean,
        n_resamples=resamples,
        confidence_level=CONFIDENCE,
        method="BCa",
        batch=max(1, _BATCH_VALUES // len(values)),
        rng=np.random.default_rng(seed),
    )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        raise DataError(
            f"scipy's BCa interval of a mean of {len(values)} rows is undefined ({low}, {high}); try more --resamples"
        )
    return low, high


def _systems(
    paths: list[str],
    observed: list[float],
    figures: list[resample.Figure],
    options: CompareOptions,
    higher: bool | None,
    mean_interval: Callable[[np.ndarray], tuple[float | None, float | None]] | None = None,
) -> list[SystemFigure]:
    """Every file's figure; each file after the first with the paired test against the first.

    Intervals are sacrebleu's bootstrap estimates, or ``mean_interval`` of the row values when given.
    """
    base, base_figure = observed[0], figures[0]
    out = []
    for i, (path, value, system_figure) in enumerate(zip(paths, observed, figures)):
        extra: dict[str, Any] = {}
        estimate: resample.Interval | None = None
        if i:
            result = _paired_test(base_figure, system_figure, abs(value - base), options, mean_interval is None)
            significant = result.p_value < options.alpha and value != base
            gain = None if higher is None else (value > base) == higher
            extra = {
                "difference": value - base,
                "p_value": result.p_value,
                "worse": significant and gain is False,
                "better": significant and gain is True,
            }
            estimate = result.system
        elif mean_interval is None:
            resamples = _interval_resamples(options.test, options.draws)
            estimate = resample.baseline_interval(base_figure, resamples, options.seed)
        if mean_interval is not None:
            extra["low"], extra["high"] = mean_interval(system_figure.stats[:, 0])
        else:
            assert estimate is not None
            extra |= {
                "low": estimate.low,
                "high": estimate.high,
                "resample_mean": estimate.resample_mean,
                "halfwidth": estimate.halfwidth,
            }
        out.append(SystemFigure(path, value, **extra))
    return out


def _paired_test(
    base: resample.Figure, system: resample.Figure, difference: float, options: CompareOptions, estimate: bool
) -> resample.PairedResult:
    """The paired test of ``options.test`` of a system against the baseline (with the system's bootstrap
    estimate under ar when ``estimate``)."""
    if options.test == "bs":
        return resample.paired_bootstrap(base, system, difference, options.draws, options.seed)
    resamples = DEFAULT_RESAMPLES["bs"] if estimate else 0
    return resample.approximate_randomisation(base, system, difference, options.draws, options.seed, resamples)
