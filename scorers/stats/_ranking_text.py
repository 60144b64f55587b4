"""The plain-text leaderboard of :meth:`scorers.stats.ranking.Ranking.table`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from .ranking import Ranking


def _number(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def _interval(low: float | None, high: float | None, spec: str = ".1f") -> str:
    return "-" if low is None or high is None else f"[{low:{spec}}, {high:{spec}}]"


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def ranking_table(ranking: Ranking) -> str:
    """The leaderboard, the fitted parameters, the win matrix and what was left out."""
    options, counts, boot = ranking.options, ranking.counts, ranking.bootstrap
    where = options["anchor"] or "the mean strength"
    ties = "Davidson's tie parameter" if options["ties"] == "davidson" else "a tie half a win each way"
    lines = [
        f"Bradley-Terry by maximum likelihood over {counts['comparisons']} comparisons of {len(counts['systems'])} "
        f"systems on {counts['prompts']} prompts ({ranking.verdicts}); ties: {ties}"
        + (f"; prior {options['prior']:g}" if options["prior"] else ""),
        f"rating: {options['anchor_rating']:g} at {where}, + 400·log10(odds) against it: a 400-point gap is 10:1 "
        "odds, 200 points about 3.2:1",
    ]
    if boot["resamples"]:
        lines.append(
            f"{boot['confidence'] * 100:g} % intervals: percentile bootstrap over prompts, {boot['used']} of "
            f"{boot['resamples']} resamples (seed {boot['seed']})"
            + (
                f"; {boot['left_out']} left out: a system won or lost all its drawn comparisons, or was not drawn"
                if boot["left_out"]
                else ""
            )
        )
    styled = bool(options["style"])
    header = ["rank", "system", "rating", "interval", *(["no style", "interval"] if styled else [])]
    header += ["comparisons", "W-L-T", "win rate"]
    rows = [header]
    for s in ranking.systems:
        cells = [str(s.rank or "-"), s.system, _number(s.rating), _interval(s.low, s.high)]
        if styled:
            cells += [_number(s.unstyled), _interval(s.unstyled_low, s.unstyled_high)]
        cells += [str(s.comparisons), f"{s.wins}-{s.losses}-{s.ties}", _number(s.win_rate, ".3f")]
        rows.append(cells)
    lines += _columns(rows)
    lines += [f"{s.system}: no rating: {s.reason}" for s in ranking.systems if s.rating is None and s.reason]
    if ranking.tie_parameter is not None:
        nu = ranking.tie_parameter
        lines.append(f"tie parameter nu: {_number(nu.value, '.4f')} {_interval(nu.low, nu.high, '.4f')}")
    for c in ranking.covariates:
        lines.append(
            f"style {c.name}: {_number(c.value, '+.4f')} log-odds per unit of (a - b) / (a + b) "
            f"{_interval(c.low, c.high, '.4f')}, {_number(c.rating_points, '+.1f')} rating points"
        )
    lines += _win_matrix(ranking)
    lines += _notes(ranking)
    return "\n".join(lines)


def _win_matrix(ranking: Ranking) -> list[str]:
    names = list(ranking.counts["systems"])
    rows = [["wins-losses-ties of row vs column", *names]]
    for i, name in enumerate(names):
        cells = [name]
        for j in range(len(names)):
            played = ranking.wins[i][j] + ranking.wins[j][i] + ranking.ties[i][j]
            cells.append(
                "" if i == j else f"{ranking.wins[i][j]}-{ranking.wins[j][i]}-{ranking.ties[i][j]}" if played else "."
            )
        rows.append(cells)
    return _columns(rows)


def _notes(ranking: Ranking) -> list[str]:
    counts = ranking.counts
    swap = counts["swap"]
    lines = []
    if swap["swapped"]:
        lines.append(
            f"position swap: {swap['disagreed']} of {swap['swapped']} swapped verdicts disagreed between the two "
            f"orders, counted as: {swap['counted_as']}"
        )
    if counts["without_metadata"]:
        lines.append(
            f"{counts['without_metadata']} verdicts read from the score alone (a run without --metadata): a 0.5 of "
            "a swapped judge counts as a tie, its two orders cannot be told apart"
        )
    for reason, n in counts["left_out"].items():
        lines.append(f"{n} rows left out: {reason}")
    if len(ranking.components) > 1:
        shown = "; ".join(", ".join(group) for group in ranking.components)
        lines.append(f"the comparison graph has {len(ranking.components)} components: {shown}; the first is ranked")
    return lines
