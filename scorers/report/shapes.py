"""The shapes of the correlation and meta-eval files the report reads, checked before a page is built.

A file of the right ``format`` and ``format_version`` can still hold a list where an object
belongs, a string for a number or a missing key (edited by hand, cut short, written by another
tool): :func:`check` makes that a :class:`~scorers.errors.DataError` naming the file, where and
what, instead of a ``TypeError`` or ``KeyError`` while the page is rendered. The correlation
file's records are :mod:`scorers.stats.correlation`'s own dataclasses; the meta-eval file follows
the format in :mod:`scorers.stats.metaeval`'s docstring. Keys not listed here are allowed.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import DataError
from ..stats.correlation import CorrelationFigure, KendallLike, MetricComparison, WilliamsTest

__all__ = ["check", "CorrelationFile", "MetaEvalFile"]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class _Bootstrap(_Shape):
    method: str
    resamples: int
    seed: int
    confidence: float


class CorrelationFile(_Shape):
    """``correlate -o``: :meth:`scorers.stats.correlation.Correlation.to_dict`."""

    results: Optional[str] = None
    scorers: list[str]
    human: list[str]
    group_by: Optional[str]
    system_key: Optional[str]
    rows: int
    groups: int
    bootstrap: _Bootstrap
    left_out: dict[str, dict[str, int]]
    figures: list[CorrelationFigure]
    comparisons: list[MetricComparison]
    williams: list[WilliamsTest]
    kendall_like: list[KendallLike]


class _Judge(_Shape):
    name: str
    signature: Optional[dict[str, Any]] = None


class _Scale(_Shape):
    type: str
    kappa_weights: Optional[str] = None


class _Estimate(_Shape):
    value: Optional[float]
    ci: Optional[tuple[float, float]]
    n: int
    reason: str = ""


class _Confusion(_Shape):
    labels: list[Any]
    rows: str
    columns: str
    matrix: list[list[float]]


class _PerLabel(_Shape):
    label: Any
    precision: Optional[float]
    recall: Optional[float]
    support: int
    predicted: int


class _Stability(_Shape):
    samples: int
    n: int
    unchanged: float
    pairwise_agreement: float


class _Swap(_Shape):
    n: int
    consistency: float
    position_bias: float
    first: float
    second: float


class _Error(_Shape):
    type: str
    message: str


class _Failure(_Shape):
    index: int
    errors: list[_Error]


class MetaEvalFile(_Shape):
    """``meta-eval -o``: :meth:`scorers.stats.metaeval.MetaEvaluation.to_dict`."""

    judge: _Judge
    label: str
    scale: _Scale
    samples: int
    rows: int
    n: int
    failed: int
    failures: list[_Failure]
    figures: dict[str, _Estimate]
    bootstrap: _Bootstrap
    confusion: Optional[_Confusion] = None
    per_label: Optional[list[_PerLabel]] = None
    stability: Optional[_Stability] = None
    swap: Optional[_Swap] = None


def check(data: Mapping[str, Any], shape: type[BaseModel], where: str, kind: str) -> None:
    """Raise :class:`DataError` naming ``where`` and the first few problems when ``data`` is not of ``shape``."""
    try:  # as JSON: strict types (no "0.5" for a number), and the dataclasses' records as objects
        shape.model_validate_json(json.dumps(data, default=str))
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'the file'}: {e['msg']}" for e in exc.errors()[:3]]
        more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        raise DataError(f"{where}: not a valid {kind} file: {'; '.join(problems)}{more}") from None
    if shape is CorrelationFile:
        found = {(f["scorer"], f["human"], f["level"], f["coefficient"]) for f in data["figures"]}
        levels = dict.fromkeys(f["level"] for f in data["figures"])
        coefficients = dict.fromkeys(f["coefficient"] for f in data["figures"])
        for key in [
            (s, h, lv, c) for h in data["human"] for s in data["scorers"] for lv in levels for c in coefficients
        ]:
            if key not in found:
                raise DataError(
                    f"{where}: not a valid {kind} file: no figure of scorer {key[0]!r} against {key[1]!r} at level "
                    f"{key[2]!r} for {key[3]!r} (every scorer, human column, level and coefficient needs one)"
                )
