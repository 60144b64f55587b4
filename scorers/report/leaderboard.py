"""The report's leaderboard section: a ranking (``rank -o``, format ``scorers-ranking``) as a template context for
``templates/leaderboard.html.j2``: the ratings with their intervals as a table and a chart, the tie parameter, the
style coefficients, the win matrix and what was left out.

>>> section = leaderboard_section({"format": "scorers-ranking", "format_version": 2})
Traceback (most recent call last):
...
scorers.errors.DataError: ranking: format_version 2; this scorers reads scorers-ranking version 1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..errors import DataError
from . import charts

__all__ = ["leaderboard_section", "ratings_chart"]


def _read(source: str | Path | Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    from ..stats.ranking import FORMAT, FORMAT_VERSION

    if isinstance(source, Mapping):
        data, where = source, "ranking"
    else:
        where = str(source)
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DataError(f"{where}: no such file") from None
        except ValueError as exc:
            raise DataError(f"{where}: invalid JSON ({exc})") from None
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise DataError(f'{where}: not a ranking (no "format": "{FORMAT}"); write one with python -m scorers rank -o')
    if data.get("format_version") != FORMAT_VERSION:
        raise DataError(
            f"{where}: format_version {data.get('format_version')!r}; this scorers reads {FORMAT} version "
            f"{FORMAT_VERSION}"
        )
    return data, where


def ratings_chart(systems: list[Mapping[str, Any]], *, title: str, unstyled: bool = False) -> str:
    """Horizontal points with interval bars, best at the top; the ratings without style control too, in a second
    colour, when ``unstyled``.

    >>> svg = ratings_chart([{"system": "a", "rating": 1100, "low": 1050, "high": 1150},
    ...                      {"system": "b", "rating": 900, "low": None, "high": None}], title="arena")
    >>> svg.startswith("<svg") and "arena" in svg
    True
    """
    rated = [s for s in systems if s["rating"] is not None]
    height = max(1.6, 0.9 + 0.28 * len(rated))

    def draw(figure: Any) -> None:
        ax = figure.add_subplot()
        positions = list(range(len(rated)))[::-1]
        series = [("rating", "low", "high", "with style control" if unstyled else None, 0.0)]
        if unstyled:
            series.append(("unstyled", "unstyled_low", "unstyled_high", "without", -0.25))
        for i, (value, low, high, label, offset) in enumerate(series):
            values = [s[value] for s in rated]
            below = [0.0 if s[low] is None else s[value] - s[low] for s in rated]
            above = [0.0 if s[high] is None else s[high] - s[value] for s in rated]
            ax.errorbar(
                values,
                [p + offset for p in positions],
                xerr=[below, above],
                fmt="o",
                color=charts._colour(i),
                capsize=2,
                markersize=4,
                elinewidth=1.0,
                label=label,
            )
        ax.set_yticks(positions, [s["system"] for s in rated])
        ax.set_xlabel("rating (400 points = 10:1 odds)")
        ax.set_title(title)
        if unstyled:
            ax.legend(frameon=False, fontsize=8, loc="lower right")  # the best systems sit top right

    return charts._draw(draw, height=height)


def leaderboard_section(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """The context of one ranking file (a path) or its dict (:meth:`scorers.stats.Ranking.to_dict`).

    Keys: ``label`` (the file, or the ranking's sources), the ranking's own keys (``systems``, ``model``,
    ``options``, ``bootstrap``, ``counts``, ``tie_parameter``, ``covariates``, ``components``, ``verdicts``),
    ``styled`` (style covariates were fitted), ``unranked`` (systems without a rating, with the reason),
    ``matrix`` (rows of ``(system, cells)``, a cell ``(wins, losses, ties)`` or None where the two never met or on
    the diagonal) and ``svg`` (the chart of the ratings with their intervals, None when nothing is rated)."""
    data, where = _read(source)
    styled = bool(data["options"].get("style"))
    names = data["win_matrix"]["systems"]
    wins, ties = data["win_matrix"]["wins"], data["win_matrix"]["ties"]
    matrix = []
    for i, name in enumerate(names):
        cells = []
        for j in range(len(names)):
            played = wins[i][j] + wins[j][i] + ties[i][j]
            cells.append((wins[i][j], wins[j][i], ties[i][j]) if i != j and played else None)
        matrix.append((name, cells))
    rated = [s for s in data["systems"] if s["rating"] is not None]
    label = where if where != "ranking" else ", ".join(data.get("sources") or [])
    svg = ratings_chart(data["systems"], title=f"Ratings: {label}", unstyled=styled) if rated else None
    return {
        **data,
        "label": label,
        "styled": styled,
        "unranked": [s for s in data["systems"] if s["rating"] is None],
        "matrix": matrix,
        "svg": svg,
    }
