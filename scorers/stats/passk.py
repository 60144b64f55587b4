"""pass@k: the chance that at least one of k samples of a task passes, from n samples of which c pass.

The estimator is Chen et al. (2021)'s unbiased one, ``1 - C(n - c, k) / C(n, k)``, computed exactly: the two
binomial coefficients as Python integers (:func:`math.comb`) and their ratio as a :class:`~fractions.Fraction`, so
that no cancellation creeps in at any n (the float product form loses digits when the ratio is near 1). The run's
pass@k is the mean over tasks; its interval is a seeded percentile bootstrap over tasks (tasks drawn with
replacement, as :func:`scorers.stats.resample.bootstrap_indices` draws rows).

Rows are grouped by a task field; a row passes when its score is at least ``threshold`` (1.0 by default: a
CodeExecution row passes when every test passed). A task with fewer than k scored samples has no pass@k: it is
left out of the mean and listed as unscored (never counted as 1.0). A row whose score is missing (an error or
null) is not a sample: it is counted, not read as a failure.

>>> pass_at_k(10, 3, 1)
Fraction(3, 10)
>>> summary = summarize([("a", True), ("a", False), ("b", False), ("b", False)], k=1, resamples=200)
>>> summary.value, summary.tasks
(0.25, 2)
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from ..errors import ConfigError, DataError
from .compare import read_results
from .resample import bootstrap_indices, p_value

__all__ = [
    "pass_at_k",
    "PassAtK",
    "PassAtKDifference",
    "summarize",
    "difference",
    "samples_of",
    "read_samples",
    "pass_at_k_files",
    "table",
]


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """``1 - C(n - c, k) / C(n, k)`` exactly: the chance that k of the n samples drawn without replacement hold at
    least one of the c that pass.

    >>> pass_at_k(5, 0, 2), pass_at_k(5, 4, 2), float(pass_at_k(200, 1, 100))
    (Fraction(0, 1), Fraction(1, 1), 0.5)
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ConfigError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@dataclass(frozen=True)
class PassAtK:
    """pass@k over tasks: ``value`` (None when no task has k samples), its interval ``low``..``high`` (None with
    fewer than 2 tasks), ``tasks`` scored, ``per_task`` (task -> (n, c, pass@k)), ``unscored`` (task -> its n,
    below k), ``missing`` (rows without a score) and how the interval was drawn."""

    k: int
    value: float | None
    low: float | None
    high: float | None
    tasks: int
    per_task: dict[str, tuple[int, int, float]]
    unscored: dict[str, int] = field(default_factory=dict)
    missing: int = 0
    bootstrap: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PassAtKDifference:
    """``system`` minus ``baseline`` pass@k over the tasks both score (``tasks``), with its paired percentile
    bootstrap interval and p-value (both runs on the same resampled tasks)."""

    k: int
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None
    tasks: int
    bootstrap: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _groups(samples: Iterable[tuple[Hashable, bool | None]]) -> tuple[dict[str, tuple[int, int]], int]:
    """Per task (as text) its (n, c); and the samples without a verdict (None)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missing = 0
    for task, passed in samples:
        if passed is None:
            missing += 1
            continue
        count = counts[str(task)]
        count[0] += 1
        count[1] += bool(passed)
    return {task: (n, c) for task, (n, c) in counts.items()}, missing


def _check(k: int, resamples: int, confidence: float) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise ConfigError(f"resamples must be an integer at least 0, got {resamples!r}")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _percentiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def summarize(
    samples: Iterable[tuple[Hashable, bool | None]],
    *,
    k: int,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PassAtK:
    """pass@k of ``(task, passed)`` samples (passed None: no verdict), with its bootstrap interval over tasks."""
    _check(k, resamples, confidence)
    counts, missing = _groups(samples)
    per_task = {task: (n, c, float(pass_at_k(n, c, k))) for task, (n, c) in counts.items() if n >= k}
    unscored = {task: n for task, (n, _) in counts.items() if n < k}
    how = {"method": "percentile", "unit": "task", "resamples": resamples, "seed": seed, "confidence": confidence}
    if not per_task:
        return PassAtK(k, None, None, None, 0, {}, unscored, missing, how)
    values = np.array([value for _, _, value in per_task.values()])
    low = high = None
    if len(values) >= 2 and resamples:
        drawn = bootstrap_indices(np.random.default_rng(seed), len(values), resamples)
        low, high = _percentiles(values[drawn].mean(axis=1), confidence)
    exact = sum((pass_at_k(n, c, k) for n, c, _ in per_task.values()), Fraction(0)) / len(per_task)
    return PassAtK(k, float(exact), low, high, len(per_task), per_task, unscored, missing, how)


def difference(
    baseline: PassAtK, system: PassAtK, *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> PassAtKDifference:
    """``system`` minus ``baseline`` over the tasks both score, paired: the same tasks drawn for both.

    >>> a = summarize([("t1", False), ("t2", True), ("t3", False)], k=1)
    >>> b = summarize([("t1", True), ("t2", True), ("t3", False)], k=1)
    >>> round(difference(a, b, resamples=100).difference, 4)
    0.3333
    """
    _check(baseline.k, resamples, confidence)
    if baseline.k != system.k:
        raise ConfigError(f"pass@k differences need the same k, got {baseline.k} and {system.k}")
    shared = sorted(set(baseline.per_task) & set(system.per_task))
    how = {"method": "paired percentile", "unit": "task", "resamples": resamples, "seed": seed}
    how["confidence"] = confidence
    if not shared:
        return PassAtKDifference(baseline.k, None, None, None, None, 0, how)
    gaps = np.array([system.per_task[t][2] - baseline.per_task[t][2] for t in shared])
    observed = float(gaps.mean())
    low = high = p = None
    if len(shared) >= 2 and resamples:
        resampled = gaps[bootstrap_indices(np.random.default_rng(seed), len(shared), resamples)].mean(axis=1)
        low, high = _percentiles(resampled, confidence)
        spread = np.abs(resampled)
        p = p_value(spread - spread.mean(), abs(observed))
    return PassAtKDifference(baseline.k, observed, low, high, p, len(shared), how)


def samples_of(
    records: Sequence[dict[str, Any]], *, scorer: str | None, task_field: str, threshold: float = 1.0
) -> tuple[str, list[tuple[str, bool | None]]]:
    """The ``(task, passed)`` samples of a results file's records and the scorer read (``None``: the only one).

    >>> samples_of([{"task": 1, "scores": {"CodeExecution": 1.0}}], scorer=None, task_field="task")
    ('CodeExecution', [('1', True)])
    """
    names = sorted({name for record in records for name in record.get("scores") or {}})
    if scorer is None:
        if len(names) != 1:
            raise ConfigError(f"the results hold scores of {', '.join(names) or 'no scorer'}: name one (--scorer)")
        scorer = names[0]
    elif scorer not in names:
        raise ConfigError(f"no scores of {scorer!r} in the results (there are: {', '.join(names) or 'none'})")
    samples: list[tuple[str, bool | None]] = []
    for number, record in enumerate(records, 1):
        if task_field not in record:
            raise DataError(f"row {number} has no task field {task_field!r}")
        value = (record.get("scores") or {}).get(scorer)
        passed = None if value is None or scorer in (record.get("errors") or {}) else float(value) >= threshold
        samples.append((str(record[task_field]), passed))
    return scorer, samples


def read_samples(
    path: str, *, scorer: str | None, task_field: str, threshold: float = 1.0
) -> tuple[str, list[tuple[str, bool | None]]]:
    """:func:`samples_of` the records of the results file at ``path``."""
    return samples_of(read_results(path), scorer=scorer, task_field=task_field, threshold=threshold)


def pass_at_k_files(paths: Sequence[str], **options: Any) -> dict[str, Any]:
    """pass@k of each results file (options: :class:`~scorers.options.PassKOptions`), and for each file after the
    first, its paired difference from the first over the tasks both score, per k.

    >>> import json, tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> def write(name, passes):
    ...     path = os.path.join(folder, name)
    ...     with open(path, "w") as file:
    ...         for task, passed in passes:
    ...             file.write(json.dumps({"task": task, "scores": {"CodeExecution": float(passed)}}) + "\\n")
    ...     return path
    >>> a = write("a.jsonl", [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 0)])
    >>> b = write("b.jsonl", [("t1", 1), ("t1", 1), ("t2", 0), ("t2", 1)])
    >>> report = pass_at_k_files([a, b], k=[1, 2], resamples=100)
    >>> [run["pass@k"]["1"]["value"] for run in report["files"]], report["differences"][0]["pass@k"]["1"]["difference"]
    ([0.25, 0.75], 0.5)
    """
    from ..options import PassKOptions

    settings = PassKOptions(**options)
    resamples, seed, confidence = settings.resamples, settings.seed, settings.confidence
    files = []
    for path in paths:
        scorer, samples = read_samples(
            path, scorer=settings.scorer, task_field=settings.task_field, threshold=settings.threshold
        )
        files.append(
            (
                path,
                scorer,
                {k: summarize(samples, k=k, resamples=resamples, seed=seed, confidence=confidence) for k in settings.k},
            )
        )
    return {
        "options": settings.model_dump(mode="json"),
        "files": [
            {"file": path, "scorer": scorer, "pass@k": {str(k): s.to_dict() for k, s in by_k.items()}}
            for path, scorer, by_k in files
        ],
        "differences": [
            {
                "file": path,
                "baseline": files[0][0],
                "pass@k": {
                    str(k): difference(
                        files[0][2][k], s, resamples=resamples, seed=seed, confidence=confidence
                    ).to_dict()
                    for k, s in by_k.items()
                },
            }
            for path, _, by_k in files[1:]
        ],
    }


def table(report: dict[str, Any]) -> str:
    """The report of :func:`pass_at_k_files` as lines of text."""

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    lines = [f"{'file':<40} {'k':>4} {'pass@k':>8} {'interval':>19} {'tasks':>6} {'unscored':>8}"]
    for run in report["files"]:
        for k, s in run["pass@k"].items():
            span = f"[{number(s['low'])}, {number(s['high'])}]"
            lines.append(
                f"{run['file']:<40} {k:>4} {number(s['value']):>8} {span:>19} {s['tasks']:>6} {len(s['unscored']):>8}"
            )
    for gap in report["differences"]:
        for k, d in gap["pass@k"].items():
            span = f"[{number(d['low'])}, {number(d['high'])}]"
            p = "-" if d["p_value"] is None else f"{d['p_value']:.4f}"
            lines.append(
                f"{gap['file']} - {gap['baseline']}: pass@{k} {number(d['difference'])} {span} p {p} over {d['tasks']} tasks"
            )
    return "\n".join(lines)
