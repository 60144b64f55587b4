"""Pairwise comparisons read for :func:`scorers.stats.rank`: from results files of a pairwise judge, or from any
rows with a winner column (human preference data); with the position swap's disagreements counted as asked, the
prompt of each comparison (the bootstrap unit) and the style covariates of its two answers.

>>> rows = [{"model_a": "x", "model_b": "y", "winner": "model_a"}, {"model_a": "y", "model_b": "x", "winner": "tie"}]
>>> found = read_comparisons(rows, RankOptions(winner="winner"))
>>> found.systems, found.first.tolist(), found.second.tolist(), found.outcome.tolist()
(['x', 'y'], [0, 1], [1, 0], [1.0, 0.5])
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .._util import ABSENT, lookup
from ..errors import ConfigError, DataError
from ..identity import read_identity
from ..io import input_row, read_rows
from ..options import RankOptions

__all__ = ["Comparisons", "read_comparisons", "WINNER_VALUES", "style_counts"]

#: The spellings of a winner column, lower-cased, and what each is worth to answer A.
WINNER_VALUES: dict[str, float] = {
    **dict.fromkeys(("a", "model_a", "first"), 1.0),
    **dict.fromkeys(("b", "model_b", "second"), 0.0),
    **dict.fromkeys(("tie", "tie (bothbad)", "tie_bothbad", "both_bad", "bothbad", "draw"), 0.5),
}
#: What a pairwise judge's pick is worth to ``output`` when it is shown first (A) and when it is shown second.
_FIRST = {"A": 1.0, "B": 0.0, "tie": 0.5}
_SECOND = {"A": 0.0, "B": 1.0, "tie": 0.5}
#: A judge's score from both orders: the mean of the two picks' values.
_SCORES = {0.0, 0.25, 0.5, 0.75, 1.0}
_MARKDOWN = {
    "headers": re.compile(r"^#{1,6}\s", re.M),
    "lists": re.compile(r"^\s*(?:[-*+]|\d+[.)])\s", re.M),
    "bold": re.compile(r"\*\*[^*\n]+?\*\*|__[^_\n]+?__"),
}


@dataclass
class Comparisons:
    """Comparisons ``first`` vs ``second`` (indexes into ``systems``) with ``outcome`` (1: first won, 0: second
    won, 0.5: tie), each one's ``prompt`` (index) and style covariates ``x`` (one column per ``style`` feature:
    ``(a - b) / (a + b)`` of the two answers' counts)."""

    systems: list[str]
    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    prompt: np.ndarray
    prompts: int
    x: np.ndarray
    verdicts: str
    rows: int = 0
    #: rows left out, by reason
    left_out: dict[str, int] = field(default_factory=dict)
    #: verdicts asked in both orders, and those whose orders disagreed
    swapped: int = 0
    disagreed: int = 0
    #: judge verdicts read from their score alone (no metadata): a swapped one's orders cannot be told apart
    without_metadata: int = 0


def style_counts(text: str) -> dict[str, int]:
    """The counts behind the style covariates: characters, markdown headers, list items and bold spans.

    >>> style_counts("# Title\\n- **one**\\n- two")
    {'length': 23, 'headers': 1, 'lists': 2, 'bold': 1}
    """
    return {"length": len(text), **{name: len(pattern.findall(text)) for name, pattern in _MARKDOWN.items()}}


def read_comparisons(data: Any, options: RankOptions) -> Comparisons:
    """The comparisons of ``data``: results files or preference data files (paths), or rows (mappings)."""
    reader = _Reader(options)
    for source, records in _sources(data):
        reader.read(source, records)
    return reader.done()


def _sources(data: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    if isinstance(data, (str, os.PathLike)):
        data = [data]
    items = list(data)
    if items and all(isinstance(item, Mapping) for item in items):
        return [("rows", [dict(item) for item in items])]
    sources = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise ConfigError(f"rank reads files (paths) or rows (mappings), got {type(item).__name__}")
        path = os.fspath(item)
        sources.append((path, list(read_rows(path))))
    if not sources:
        raise ConfigError("rank needs at least one file or row")
    return sources


class _Reader:
    def __init__(self, options: RankOptions) -> None:
        self.options = options
        self.systems: dict[str, int] = {}
        self.prompts: dict[str, int] = {}
        self.columns: dict[str, list[Any]] = {"first": [], "second": [], "outcome": [], "prompt": [], "x": []}
        self.found = Comparisons([], *(np.zeros(0),) * 4, 0, np.zeros((0, 0)), "")
        self.judges: list[str] = []

    def read(self, source: str, records: list[dict[str, Any]]) -> None:
        judge = None if self.options.winner is not None else self._judge(source, records)
        if judge is not None and judge not in self.judges:
            self.judges.append(judge)
        for number, record in enumerate(records, 1):
            self.found.rows += 1
            row = input_row(record) if "scores" in record else record
            where = f"{source}: row {number}"
            names = [self._system(row, name, where) for name in (self.options.system_a, self.options.system_b)]
            first, second = (self.systems.setdefault(name, len(self.systems)) for name in names)
            if names[0] == names[1]:
                self._leave_out("the same system on both sides")
                continue
            values = self._values(record, row, judge, where)
            if values is None:
                continue
            prompt = self._prompt(row, where)
            x = self._style(row, where)
            for value in values:
                for column, item in zip(self.columns.values(), (first, second, value, prompt, x)):
                    column.append(item)

    def _judge(self, source: str, records: list[dict[str, Any]]) -> str:
        """The pairwise judge column: the one named, else the one whose metadata (or the run's identity) shows a
        pairwise judge."""
        names = list(dict.fromkeys(name for record in records for name in record.get("scores") or {}))
        if not names and any("scores" not in record for record in records):
            raise ConfigError(f"{source}: not a results file of `run` (no scores); name the winner field with --winner")
        if self.options.scorer is not None:
            if self.options.scorer not in names:
                raise ConfigError(f"{source}: no scorer {self.options.scorer!r} (scorers: {', '.join(names)})")
            return self.options.scorer
        pairwise = [name for name in names if _is_pairwise(name, records, source)]
        if len(pairwise) != 1:
            found = f"several: {', '.join(pairwise)}" if pairwise else "none"
            raise ConfigError(
                f"{source}: rank reads the verdicts of one pairwise judge and found {found} among "
                f"{', '.join(names)}; name it with --scorer (a file without --metadata and run identity shows no kind)"
            )
        return pairwise[0]

    def _system(self, row: Mapping[str, Any], name: str, where: str) -> str:
        value = lookup(row, name)
        if value is ABSENT or value is None or isinstance(value, (dict, list)):
            option = "--system-a" if name == self.options.system_a else "--system-b"
            raise DataError(f"{where}: no system name in field {name!r} (name the field with {option})")
        return str(value)

    def _values(
        self, record: Mapping[str, Any], row: Mapping[str, Any], judge: str | None, where: str
    ) -> list[float] | None:
        """What the row's verdict counts as: the values to answer A of its comparisons (none when dropped)."""
        if judge is None:
            return [self._winner(row, where)]
        score = (record.get("scores") or {}).get(judge)
        if score is None or judge in (record.get("errors") or {}):
            self._leave_out("the judge failed or gave no score")
            return None
        orders = self._orders(record, judge, float(score), where)
        if len(orders) == 1:
            return orders
        self.found.swapped += 1
        agree = orders[0] == orders[1]
        self.found.disagreed += not agree
        if self.options.swap == "keep":
            return orders
        if agree:
            return orders[:1]
        if self.options.swap == "drop":
            self._leave_out("the two orders disagreed (--swap drop)")
            return None
        return [0.5]

    def _orders(self, record: Mapping[str, Any], judge: str, score: float, where: str) -> list[float]:
        """The value of each order's pick to answer A: from the metadata's choices, else from the score."""
        choices = ((record.get("metadata_scores") or {}).get(judge) or {}).get("choices")
        if isinstance(choices, list) and 1 <= len(choices) <= 2 and all(c in _FIRST for c in choices):
            return [_FIRST[choices[0]], *(_SECOND[c] for c in choices[1:])]
        if score not in _SCORES:
            raise DataError(
                f"{where}: {judge} scored {score!r}; a pairwise judge scores 0, 0.5 or 1 (0.25, 0.75 swapped)"
            )
        self.found.without_metadata += 1
        if score in (0.25, 0.75):  # both orders asked, one a tie
            return [2 * score - 0.5, 0.5]
        return [score]

    def _winner(self, row: Mapping[str, Any], where: str) -> float:
        field_name = self.options.winner
        assert field_name is not None
        value = lookup(row, field_name)
        key = value.strip().lower() if isinstance(value, str) else value
        if key not in WINNER_VALUES:
            raise DataError(
                f"{where}: winner field {field_name!r} is {value!r}; expected a, b or tie "
                f"(or {', '.join(sorted(k for k in WINNER_VALUES if len(k) > 3))})"
            )
        return WINNER_VALUES[key]

    def _prompt(self, row: Mapping[str, Any], where: str) -> int:
        if self.options.prompt is not None:
            value = lookup(row, self.options.prompt)
            if value is ABSENT:
                raise DataError(f"{where}: no prompt field {self.options.prompt!r} (--prompt)")
            key = json.dumps(value, sort_keys=True, default=str)
        elif "input" in row:
            key = json.dumps(row["input"], sort_keys=True, default=str)
        else:
            key = f"{where}"
        return self.prompts.setdefault(key, len(self.prompts))

    def _style(self, row: Mapping[str, Any], where: str) -> list[float]:
        if not self.options.style:
            return []
        answers = ((self.options.answer_a, "--answer-a"), (self.options.answer_b, "--answer-b"))
        counts = [style_counts(_text(row, name, option, where)) for name, option in answers]
        return [_normalised(counts[0][f], counts[1][f]) for f in self.options.style]

    def _leave_out(self, reason: str) -> None:
        self.found.left_out[reason] = self.found.left_out.get(reason, 0) + 1

    def done(self) -> Comparisons:
        found, columns = self.found, self.columns
        found.systems = list(self.systems)
        found.first = np.array(columns["first"], int)
        found.second = np.array(columns["second"], int)
        found.outcome = np.array(columns["outcome"], float)
        found.prompt = np.array(columns["prompt"], int)
        found.prompts = len(self.prompts)
        found.x = np.array(columns["x"], float).reshape(len(found.first), len(self.options.style))
        found.verdicts = (
            f"winner field {self.options.winner!r}" if self.options.winner else "judge " + ", ".join(self.judges)
        )
        if not len(found.first):
            raise DataError(f"no comparisons: {found.rows} rows read, left out: {found.left_out or 'none'}")
        return found


def _is_pairwise(name: str, records: Sequence[Mapping[str, Any]], source: str) -> bool:
    """Whether ``name`` is a pairwise judge: its metadata names a winner, or the run's identity its class."""
    for record in records:
        metadata = (record.get("metadata_scores") or {}).get(name)
        if isinstance(metadata, Mapping):
            return metadata.get("winner") in ("output", "other", "tie") and isinstance(metadata.get("choices"), list)
    identity = read_identity(source) if os.path.exists(source) else None
    signatures = [(configuration.get("scorers") or {}).get(name) or {} for configuration in identity or []]
    return any(str(signature.get("scorer", "")).startswith("PairwiseJudge") for signature in signatures)


def _text(row: Mapping[str, Any], name: str, option: str, where: str) -> str:
    """An answer's text: a string, or the assistant messages of a conversation (a list of role/content)."""
    value = lookup(row, name)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(m, Mapping) for m in value):
        return "\n".join(str(m.get("content", "")) for m in value if m.get("role") == "assistant")
    raise DataError(f"{where}: no answer text in field {name!r} for the style covariates (name it with {option})")


def _normalised(a: float, b: float) -> float:
    return 0.0 if a + b == 0 else (a - b) / (a + b)
