"""Correlation's rows: a results file (or results records) read into columns of floats, and preference pairs.

:func:`read_scores` is the first step of :func:`scorers.stats.correlate`: one pass over the rows into a
:class:`ScoreTable` (a million rows stay a few arrays, not dicts); :func:`file_pairs` and
:func:`column_pairs` find the rows of each preference pair for WMT's Kendall-like τ.
"""

from __future__ import annotations

import json
import math
import os
from array import array
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .._util import ABSENT, did_you_mean, is_number, lookup
from ..errors import ConfigError, DataError
from ..io import input_row, read_rows
from ..options import CorrelateOptions

__all__ = ["ScoreTable", "read_scores", "file_pairs", "column_pairs"]


def read_scores(data: str | os.PathLike[str] | Iterable[Mapping[str, Any]], options: CorrelateOptions) -> ScoreTable:
    """The rows of a results file (a path) or results records as a :class:`ScoreTable` of ``options``' scorers
    (default: every scorer in the rows) and human columns (``human``, ``pairs_from``); the first step of
    :func:`scorers.stats.correlate`. A :class:`~scorers.errors.DataError` for a row that is not a result or a
    value that is not a finite number; a :class:`~scorers.errors.ConfigError` for a scorer not in the rows.

    >>> rows = [{"doc": 1, "human": 2, "scores": {"M": 0.5}}, {"doc": 1, "human": 3, "scores": {"M": None}}]
    >>> table = read_scores(rows, CorrelateOptions(human=["human"], group_by="doc"))
    >>> table.scorers, table.rows, table.scores["M"].tolist(), table.human["human"].tolist()
    (('M',), 2, [0.5, nan], [2.0, 3.0])
    """
    name = os.fspath(data) if isinstance(data, (str, os.PathLike)) else None
    reader = _Reader(name, options.columns, options.group_by, options.system_key, options.pairs_from)
    for record in read_rows(name, "jsonl") if name is not None else data:  # type: ignore[union-attr]
        reader.add(record)
    found = list(reader.scores)
    scorers = found if options.scorers is None else list(options.scorers)
    missing = [name for name in scorers if name not in found]
    if missing:
        raise ConfigError(
            f"no scores of {', '.join(missing)} in these rows{did_you_mean(missing[0], found)} "
            f"(scorers: {', '.join(found) or 'none'})"
        )
    if not scorers:
        raise DataError("no scorer in these rows")
    return reader.table(scorers)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _number(value: Any) -> float:
    """``value`` as a float; nan for an integer beyond float's range or a non-finite number."""
    try:
        number = float(value)
    except OverflowError:  # an integer such as 10**400
        return math.nan
    return number if math.isfinite(number) else math.nan


@dataclass(frozen=True)
class ScoreTable:
    """The rows as arrays: each row's group and system index (numbered in the order they first appear; without
    ``group_by`` each row is its own group), every scorer's and human column's values (nan where the scorer
    failed or gave no score, or the human score is missing), and the results file read (``source``, if a path)."""

    scorers: tuple[str, ...]
    source: str | None
    group: np.ndarray  # (rows,) int
    system: np.ndarray | None  # (rows,) int
    groups: Sequence[str]
    systems: list[str]
    scores: dict[str, np.ndarray]
    human: dict[str, np.ndarray]

    @property
    def rows(self) -> int:
        return len(self.group)

    def kept(self, scorer: str, column: str) -> np.ndarray:
        """The rows where ``scorer`` has a score and ``column`` a human score."""
        return ~(np.isnan(self.scores[scorer]) | np.isnan(self.human[column]))


class _Reader:
    """Reads results rows in one pass into columns of floats (a million rows stay a few arrays, not dicts)."""

    def __init__(
        self,
        name: str | None,
        human: Sequence[str],
        group_by: str | None,
        system_key: str | None,
        pairs_from: str | None,
    ) -> None:
        self.name, self.human, self.group_by, self.system_key = name, human, group_by, system_key
        self.pairs_from = pairs_from
        self.rows = 0
        self.fields: dict[str, None] = {}  # every row field seen, for the message on a missing one
        self.scores: dict[str, array[float]] = {}
        self.columns: dict[str, array[float]] = {column: array("d") for column in human}
        self.seen: dict[str, bool] = dict.fromkeys(human, False)
        self.groups: dict[str, int] = {}
        self.systems: dict[str, int] = {}
        self.group: array[int] = array("q")
        self.system: array[int] = array("q")
        self.missing: dict[str, int] = {}  # --group-by / --system-key: the first row without the field

    def add(self, record: Any) -> None:
        self.rows += 1
        number = self.rows
        if not isinstance(record, Mapping) or not isinstance(record.get("scores"), Mapping):
            raise DataError(
                f'{self.name or "rows"}: row {number} has no "scores" object; correlate reads the results files of '
                "`scorers run`"
            )
        row = input_row(record)
        self.fields.update(dict.fromkeys(row))
        failed = record.get("errors") or {}
        for name, value in record["scores"].items():
            if name not in self.scores:
                self.scores[name] = array("d", [math.nan]) * (number - 1)
            self.scores[name].append(self._score(value, name in failed, number, name))
        for values in self.scores.values():
            if len(values) < number:
                values.append(math.nan)
        for column in self.human:
            self.columns[column].append(self._human(row, column, number))
        if self.group_by is not None:
            self.group.append(self._index(row, self.group_by, number, self.groups))
        if self.system_key is not None:
            self.system.append(self._index(row, self.system_key, number, self.systems))

    def _score(self, value: Any, failed: bool, number: int, name: str) -> float:
        """A row's score; nan when the scorer failed (an error) or gave none."""
        if value is None or failed or not is_number(value):
            return math.nan
        number_ = _number(value)
        if math.isnan(number_) and not (isinstance(value, float) and math.isnan(value)):
            raise DataError(f"row {number}: the score of {name} is {_short(value)}, not a finite number")
        return number_

    def _human(self, row: Mapping[str, Any], column: str, number: int) -> float:
        """A row's human score; nan when missing (absent or null)."""
        value = lookup(row, column)
        if value is ABSENT:
            return math.nan
        self.seen[column] = True
        if value is None:
            return math.nan
        number_ = _number(value) if is_number(value) else math.nan
        if math.isnan(number_):
            raise DataError(f"row {number}: the human score {column!r} is {_short(value)}, not a finite number")
        return number_

    def _index(self, row: Mapping[str, Any], path: str, number: int, index: dict[str, int]) -> int:
        value = lookup(row, path)
        if value is ABSENT or value is None:
            self.missing.setdefault(path, number)
            return -1
        return index.setdefault(_key(value), len(index))

    def table(self, scorers: Sequence[str]) -> ScoreTable:
        """The columns read, of ``scorers``; a :class:`DataError` when no row has a field the options name."""
        if not self.rows:
            raise DataError(f"{self.name or 'rows'}: no rows")
        self._check_fields()
        return ScoreTable(
            tuple(scorers),
            self.name,
            np.frombuffer(self.group, dtype=np.int64) if self.group_by else np.arange(self.rows, dtype=np.int64),
            None if self.system_key is None else np.frombuffer(self.system, dtype=np.int64),
            list(self.groups) if self.group_by is not None else range(self.rows),  # type: ignore[arg-type]
            list(self.systems),
            {name: np.frombuffer(self.scores[name], dtype=float) for name in scorers},
            {column: np.frombuffer(values, dtype=float) for column, values in self.columns.items()},
        )

    def _check_fields(self) -> None:
        fields = list(self.fields)
        for column in self.human:
            if not self.seen[column]:
                raise _no_field("--pairs-from" if column == self.pairs_from else "--human", column, fields)
        for option, path in (("--group-by", self.group_by), ("--system-key", self.system_key)):
            if path is None or path not in self.missing:
                continue
            index = self.groups if option == "--group-by" else self.systems
            if not index:
                raise _no_field(option, path, fields)
            raise DataError(f"row {self.missing[path]} has no field {path!r} ({option})")


def _field(record: Mapping[str, Any], path: str, number: int, option: str) -> str:
    value = lookup(input_row(record), path)
    if value is ABSENT or value is None:
        raise DataError(f"row {number} has no field {path!r} ({option})")
    return _key(value)


def _no_field(option: str, path: str, fields: list[str]) -> DataError:
    listed = ", ".join(fields[:30]) + (f" and {len(fields) - 30} more" if len(fields) > 30 else "")
    return DataError(
        f"{option} {path}: no field {path!r} in any row{did_you_mean(path, fields)} "
        f"(the rows' fields: {listed or 'none'})"
    )


def _short(value: Any) -> str:
    text = _key(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def file_pairs(
    table: ScoreTable,
    pairs: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    group_by: str,
    system_key: str,
) -> tuple[str, np.ndarray, np.ndarray]:
    """The rows each preference pair names: (where the pairs came from, better rows, worse rows)."""
    name = os.fspath(pairs) if isinstance(pairs, (str, os.PathLike)) else "pairs"
    records = list(read_rows(name, "jsonl")) if isinstance(pairs, (str, os.PathLike)) else list(pairs)
    where = _row_of(table, group_by, system_key)
    group_index = {key: i for i, key in enumerate(table.groups)}
    system_index = {key: i for i, key in enumerate(table.systems)}
    better, worse = [], []
    for number, pair in enumerate(records, 1):
        if not isinstance(pair, Mapping):
            raise DataError(f"{name}: pair {number} is not an object")
        g = group_index.get(_field(pair, group_by, number, f"pair, {group_by}"))
        ends = [system_index.get(_field(pair, side, number, "pair")) for side in ("better", "worse")]
        rows = [None if g is None or s is None else where.get((g, s)) for s in ends]
        if rows[0] is None or rows[1] is None:
            raise DataError(
                f"{name}: pair {number} ({_key(dict(pair))}) names no row of the results "
                f"(rows are found by {group_by} and {system_key})"
            )
        better.append(rows[0])
        worse.append(rows[1])
    return name, np.array(better, dtype=np.int64), np.array(worse, dtype=np.int64)


def _row_of(table: ScoreTable, group_by: str, system_key: str) -> dict[tuple[int, int], int]:
    """The row of each (group, system); a :class:`DataError` when two rows share one."""
    assert table.system is not None
    where: dict[tuple[int, int], int] = {}
    for row, (g, s) in enumerate(zip(table.group.tolist(), table.system.tolist())):
        if (g, s) in where:
            raise DataError(
                f"rows {where[(g, s)] + 1} and {row + 1} have the same {group_by} and {system_key}: "
                "preference pairs need one row per group and system"
            )
        where[(g, s)] = row
    return where


def column_pairs(table: ScoreTable, column: str, min_difference: float) -> tuple[str, np.ndarray, np.ndarray]:
    """Every two rows of a group whose human scores differ by more than ``min_difference`` (WMT's DARR)."""
    values = table.human[column]
    better, worse = [], []
    order = np.argsort(table.group, kind="stable")
    for rows in np.split(order, np.flatnonzero(np.diff(table.group[order])) + 1):
        rated = [int(r) for r in rows if not math.isnan(values[r])]
        for i, a in enumerate(rated):
            for b in rated[i + 1 :]:
                if abs(values[a] - values[b]) > min_difference:
                    better.append(a if values[a] > values[b] else b)
                    worse.append(b if values[a] > values[b] else a)
    source = f"{column}, difference > {min_difference:g}"
    return source, np.array(better, dtype=np.int64), np.array(worse, dtype=np.int64)
