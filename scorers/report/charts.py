"""Charts of a report as inline SVG, drawn by matplotlib (imported here, on first use, never by ``import scorers``).

Text is written as SVG ``<text>`` (not glyph outlines), so charts stay small;
labels from the data are never read as math (``$`` is a dollar sign) and are
escaped by matplotlib's SVG writer.

>>> svg = histogram({"run.jsonl": [0.1, 0.5, 0.5, 0.9]}, title="BLEU")
>>> svg.startswith("<svg") and "BLEU" in svg and "<script" not in svg
True
"""

from __future__ import annotations

import io
import re
from typing import Any, Mapping, Sequence

from .._util import optional_import

__all__ = ["histogram", "differences", "choices", "confusion", "correlations"]

#: Distinct colours for up to ten files (matplotlib's tab10), in file order.
_RC = {
    "svg.fonttype": "none",  # text as <text>: a tenth of the size of glyph paths
    "svg.hashsalt": "scorers-report",  # stable ids: the same data gives the same file
    "text.parse_math": False,  # a "$" in a scorer name or choice is text
    "font.size": 9,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
}
_BINS = 20


def _figure(width: float = 5.2, height: float = 2.6) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _svg(figure: Any) -> str:
    """The figure as an ``<svg>`` element to inline (no XML prolog, doctype or metadata block)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)


def _draw(draw: Any, *, width: float = 5.2, height: float = 2.6) -> str:
    matplotlib = optional_import("matplotlib", scorer="scorers report", extra="report")
    with matplotlib.rc_context(_RC):
        figure = _figure(width, height)
        draw(figure)
        return _svg(figure)


def _colour(i: int) -> str:
    return f"C{i % 10}"


def histogram(series: Mapping[str, Sequence[float]], *, title: str) -> str:
    """Score histogram on [0, 1] (20 bins), one outline per file when several are given.

    >>> "<path" in histogram({"a": [0.0, 1.0], "b": [0.5]}, title="x")
    True
    """
    import numpy as np

    bins = np.linspace(0.0, 1.0, _BINS + 1)

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        several = len(series) > 1
        for i, (label, values) in enumerate(series.items()):
            ax.hist(
                values,
                bins=bins,
                histtype="step" if several else "bar",
                linewidth=1.6,
                color=_colour(i),
                label=f"{label} (n={len(values)})",
                alpha=1.0 if several else 0.85,
            )
        ax.set_xlim(0, 1)
        ax.yaxis.get_major_locator().set_params(integer=True)  # counts of rows
        ax.set_xlabel("score")
        ax.set_ylabel("rows")
        ax.set_title(title)
        if several:
            ax.legend(frameon=False, fontsize=8)

    return _draw(draw)


def differences(series: Mapping[str, Sequence[float]], *, title: str) -> str:
    """Histogram of per-row differences (file minus baseline) on [-1, 1], one outline per compared file.

    >>> "<path" in differences({"b - a": [0.0, 0.25, -0.5]}, title="BLEU")
    True
    """
    import numpy as np

    bins = np.linspace(-1.0, 1.0, 2 * _BINS + 1) - 1.0 / (2 * _BINS)  # a bin centred on 0: "no change"
    bins = np.append(bins, 1.0 + 1.0 / (2 * _BINS))

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        for i, (label, values) in enumerate(series.items(), 1):
            ax.hist(
                values,
                bins=bins,
                histtype="step",
                linewidth=1.6,
                color=_colour(i),
                label=f"{label} (n={len(values)} pairs)",
            )
        ax.axvline(0.0, color="0.4", linewidth=0.8, linestyle="--")
        ax.set_xlim(bins[0], bins[-1])
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("per-row difference of scores")
        ax.set_ylabel("rows")
        ax.set_title(title)
        ax.legend(frameon=False, fontsize=8)

    return _draw(draw)


def choices(counts: Mapping[str, Mapping[str, int]], *, title: str) -> str:
    """Grouped horizontal bars: how often the judge chose each choice, per file.

    >>> "<path" in choices({"run.jsonl": {"A": 3, "B": 1}}, title="Factuality")
    True
    """
    import numpy as np

    labels = sorted({choice for per_file in counts.values() for choice in per_file})
    height = max(1.6, 0.9 + 0.28 * len(labels) * max(1, len(counts)))

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        positions = np.arange(len(labels))
        bar = 0.8 / max(1, len(counts))
        for i, (label, per_file) in enumerate(counts.items()):
            ax.barh(
                positions + i * bar, [per_file.get(c, 0) for c in labels], height=bar, color=_colour(i), label=label
            )
        ax.set_yticks(positions + bar * (len(counts) - 1) / 2, labels)
        ax.invert_yaxis()
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("rows")
        ax.set_title(title)
        if len(counts) > 1:
            ax.legend(frameon=False, fontsize=8)

    return _draw(draw, height=height)


def confusion(
    matrix: Sequence[Sequence[int]],
    labels: Sequence[str],
    *,
    title: str,
    rows_label: str = "reference",
    columns_label: str = "judge",
) -> str:
    """Confusion matrix as a heat map (darker: more rows), each cell annotated with its count.

    >>> svg = confusion([[5, 1], [2, 7]], ["N", "Y"], title="agreement")
    >>> svg.count(">7<") + svg.count(">5<") >= 2
    True
    """
    import numpy as np

    data = np.asarray(matrix, dtype=float)
    size = max(2.6, 1.2 + 0.45 * len(labels))

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        ax.pcolormesh(data, cmap="Blues", edgecolors="white", linewidth=1.0, vmin=0)
        peak = data.max() if data.size else 0.0
        for (i, j), value in np.ndenumerate(data):
            ax.text(
                j + 0.5,
                i + 0.5,
                f"{int(value)}",
                ha="center",
                va="center",
                color="white" if peak and value > peak / 2 else "black",
            )
        ticks = np.arange(len(labels)) + 0.5
        ax.set_xticks(ticks, labels, rotation=45 if max(map(len, labels), default=0) > 3 else 0, ha="right")
        ax.set_yticks(ticks, labels)
        ax.invert_yaxis()
        ax.set_xlabel(columns_label)
        ax.set_ylabel(rows_label)
        ax.set_title(title)
        ax.spines[:].set_visible(False)

    return _draw(draw, width=size + 0.4, height=size)


def correlations(
    figures: Mapping[str, Mapping[str, tuple[float | None, float | None, float | None]]],
    *,
    title: str,
    ylabel: str = "correlation",
) -> str:
    """Grouped bars of correlations with their intervals as error bars: one group per scorer, one bar per level.

    ``figures[scorer][level]`` is ``(value, low, high)``; an undefined value draws no bar.

    >>> svg = correlations({"ROUGE-1": {"summary": (0.3, 0.2, 0.4), "system": (0.8, None, None)}}, title="coherence")
    >>> "<path" in svg and "ROUGE-1" in svg
    True
    """
    import numpy as np

    scorers = list(figures)
    levels = list(dict.fromkeys(level for per_scorer in figures.values() for level in per_scorer))
    width = max(3.6, 1.6 + 0.45 * len(scorers) * max(1, len(levels)))

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        positions = np.arange(len(scorers))
        bar = 0.8 / max(1, len(levels))
        for i, level in enumerate(levels):
            cells = [figures[s].get(level, (None, None, None)) for s in scorers]
            values = [np.nan if v is None else v for v, _, _ in cells]
            below = [0.0 if v is None or lo is None else v - lo for v, lo, _ in cells]
            above = [0.0 if v is None or hi is None else hi - v for v, _, hi in cells]
            ax.bar(
                positions + (i - (len(levels) - 1) / 2) * bar,
                values,
                width=bar,
                color=_colour(i),
                label=level,
                yerr=[below, above],
                capsize=2,
                error_kw={"elinewidth": 0.8, "ecolor": "0.25"},
            )
        ax.axhline(0.0, color="0.4", linewidth=0.8)
        ax.set_xticks(
            positions, scorers, rotation=30 if len(scorers) > 4 else 0, ha="right" if len(scorers) > 4 else "center"
        )
        ax.set_ylim(min(-0.1, ax.get_ylim()[0]), 1.05)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(frameon=False, fontsize=8)

    return _draw(draw, width=width)
