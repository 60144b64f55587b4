"""The report's reliability section: a calibration file (``python -m scorers calibrate -o``) as a reliability
diagram and its figures, all on the held-out split.

:func:`reliability_context` reads the file's content (:mod:`scorers.calibration.scores`' format) into what
``templates/reliability.html.j2`` shows under the name ``reliability``: the judge, the map, the outcome rule,
the figures (ECE and Brier score before and after the map, with their intervals and n), the bins before and
after, the threshold when the file has one, and the diagram as inline SVG (the diagonal is a calibrated judge;
each bin is a point at its mean prediction and observed rate, its size its rows).

>>> from scorers.calibration.scores import calibrate_scores
>>> fitted = calibrate_scores(([0.9, 0.8, 0.8, 0.2, 0.1], [1, 0, 1, 0, 1]), ([0.9, 0.1, 0.8], [1, 0, 0]), resamples=100)
>>> context = reliability_context(fitted.to_dict(judge={"name": "Polite", "signature": {}}))
>>> context["judge"], context["held_out"], [f["name"] for f in context["figures"]][:2]
('Polite', 'test', ['ece_before', 'ece_after'])
>>> context["svg"].startswith("<svg")
True
"""

from __future__ import annotations

from typing import Any, Mapping

from ..calibration.scores import FORMAT, FORMAT_VERSION
from ..errors import DataError
from .charts import _draw

__all__ = ["reliability_context", "reliability_diagram"]

#: What each figure is, as the section's table says it.
_FIGURES = {
    "ece_before": "expected calibration error, raw scores",
    "ece_after": "expected calibration error, mapped scores",
    "brier_before": "Brier score, raw scores",
    "brier_after": "Brier score, mapped scores",
}


def reliability_diagram(bins: Mapping[str, Mapping[str, Any]], *, title: str) -> str:
    """Observed rate against mean prediction per bin, one series per entry of ``bins`` (``before``, ``after``:
    :meth:`~scorers.calibration.scores.Bins.to_dict`), over the diagonal of a calibrated judge.

    >>> svg = reliability_diagram({"raw": {"bins": [{"count": 3, "mean_predicted": 0.8, "observed": 0.4}]}}, title="t")
    >>> "<path" in svg and "raw" in svg
    True
    """

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        ax.plot([0, 1], [0, 1], color="0.5", linewidth=0.8, linestyle="--", label="calibrated")
        for i, (name, diagram) in enumerate(bins.items()):
            points = diagram["bins"]
            x = [b["mean_predicted"] for b in points]
            y = [b["observed"] for b in points]
            top = max((b["count"] for b in points), default=1)
            ax.plot(x, y, color=f"C{i}", linewidth=1.4, label=f"{name} (n={sum(b['count'] for b in points)})")
            ax.scatter(x, y, s=[12 + 60 * b["count"] / top for b in points], color=f"C{i}", zorder=3)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("mean prediction of the bin")
        ax.set_ylabel("observed rate of positive labels")
        ax.set_title(title)
        ax.legend(frameon=False, fontsize=8, loc="upper left")

    return _draw(draw, width=4.2, height=4.0)


def reliability_context(data: Mapping[str, Any]) -> dict[str, Any]:
    """The template context of one calibration file's content (a :class:`~scorers.errors.DataError` for
    another file)."""
    if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
        raise DataError(
            f"not a {FORMAT} file of version {FORMAT_VERSION} (format {data.get('format')!r}, "
            f"version {data.get('format_version')!r}): write one with python -m scorers calibrate --scores ... -o"
        )
    held_out = data["held_out"]
    bins = data["bins"]
    n = bins["before"]["n"]
    figures = [
        {
            "name": name,
            "what": _FIGURES.get(name, name),
            "value": figure["value"],
            "low": None if figure["ci"] is None else figure["ci"][0],
            "high": None if figure["ci"] is None else figure["ci"][1],
            "n": figure["n"],
            "reason": figure.get("reason"),
        }
        for name, figure in data["figures"].items()
    ]
    judge = data.get("judge") or {}
    labels = data.get("labels") or {}
    return {
        "judge": judge.get("name", "judge"),
        "method": data["method"],
        "input": data.get("input", "score"),
        "outcome": data.get("outcome"),
        "held_out": held_out,
        "train_n": data.get("train_n"),
        "n": n,
        "labels_sha256": labels.get("sha256"),
        "labels_file": labels.get("file"),
        "split": data.get("split"),
        "bootstrap": data["bootstrap"],
        "figures": figures,
        "bins": {name: bins[name] for name in ("before", "after")},
        "threshold": data.get("threshold"),
        "svg": reliability_diagram(
            {"raw scores": bins["before"], f"{data['method']} map": bins["after"]},
            title=f"Reliability, held-out {held_out} split (n={n})",
        ),
    }
