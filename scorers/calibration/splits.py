"""Train, development and test splits of labelled rows: seeded, and disjoint by construction and by check.

:func:`split_rows` shuffles the units (each row, or each distinct value of a ``group`` field such as a
document id, so that a group never falls in two splits) with ``numpy.random.default_rng(seed)`` and cuts the
shuffled order by the fractions of rows: a unit goes to the split in which its first row falls when the
rows are laid out in that order. :func:`check_disjoint` raises when two splits share a row or a group;
:func:`split_rows` runs it on what it returns.

The default fractions are :data:`DEFAULT_FRACTIONS`, train 0.5, dev 0.25, test 0.25: the training split
is where candidates come from (few-shot examples, a score map), the development split is where choices are
made, and the test split is only ever measured on.

>>> splits = split_rows([{"doc": d} for d in "aabbccddee"], seed=1, group="doc")
>>> [len(splits.train), len(splits.dev), len(splits.test)]
[6, 2, 2]
>>> sorted({"aabbccddee"[i] for i in splits.dev}) != sorted({"aabbccddee"[i] for i in splits.test})
True
>>> splits.to_dict()["rule"]
'groups'
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .._util import ABSENT, lookup
from ..errors import ConfigError, DataError

__all__ = ["DEFAULT_FRACTIONS", "SPLIT_NAMES", "Splits", "split_rows", "check_disjoint", "parse_fractions"]

#: The splits' names, in the order the fractions are given.
SPLIT_NAMES = ("train", "dev", "test")
#: Train, dev and test shares of the rows when none are given.
DEFAULT_FRACTIONS = (0.5, 0.25, 0.25)


@dataclass(frozen=True)
class Splits:
    """The row indices (0-based, in the labelled file's order) of each split, and the rule that made them."""

    train: tuple[int, ...]
    dev: tuple[int, ...]
    test: tuple[int, ...]
    fractions: tuple[float, float, float]
    seed: int
    #: the field whose values are kept together, or ``None`` when rows are split one by one
    group: str | None = None
    #: each row's group value (``None`` when ``group`` is)
    groups: tuple[Any, ...] | None = None

    def indices(self, name: str) -> tuple[int, ...]:
        """The rows of the split called ``name`` (``train``, ``dev`` or ``test``)."""
        if name not in SPLIT_NAMES:
            raise ValueError(f"no split {name!r}; the splits are {', '.join(SPLIT_NAMES)}")
        return tuple(getattr(self, name))

    def split_of(self) -> dict[int, str]:
        """Each row index and the name of its split."""
        return {index: name for name in SPLIT_NAMES for index in self.indices(name)}

    def to_dict(self) -> dict[str, Any]:
        """The split rule as recorded in provenance: rule, fractions, seed, group field and each split's size."""
        return {
            "rule": "rows" if self.group is None else "groups",
            "fractions": dict(zip(SPLIT_NAMES, self.fractions)),
            "seed": self.seed,
            "group": self.group,
            "shuffle": "numpy.random.default_rng(seed).permutation of the units (rows or groups, in order of first "
            "appearance), cut at the fractions of rows",
            "rows": {name: len(self.indices(name)) for name in SPLIT_NAMES},
            **({"groups": {name: len(self._groups_in(name)) for name in SPLIT_NAMES}} if self.groups else {}),
        }

    def _groups_in(self, name: str) -> set[str]:
        assert self.groups is not None
        return {_group_key(self.groups[i]) for i in self.indices(name)}


def parse_fractions(text: str | Sequence[float]) -> tuple[float, float, float]:
    """``"0.5,0.25,0.25"`` (or three numbers) as train, dev and test fractions, each in [0, 1], summing to 1.

    >>> parse_fractions("0.6,0.2,0.2")
    (0.6, 0.2, 0.2)
    """
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        numbers = tuple(float(p) for p in parts)
    except (TypeError, ValueError):
        raise ConfigError(f"split fractions must be three numbers, train,dev,test (e.g. 0.5,0.25,0.25); got {text!r}")
    if len(numbers) != 3 or not all(math.isfinite(f) and 0 <= f <= 1 for f in numbers):
        raise ConfigError(f"split fractions must be three numbers in [0, 1], train,dev,test; got {text!r}")
    if not math.isclose(sum(numbers), 1.0, abs_tol=1e-6):
        raise ConfigError(f"split fractions must sum to 1 (train,dev,test); {text!r} sums to {sum(numbers):g}")
    return numbers


def split_rows(
    rows: Sequence[Mapping[str, Any]] | int,
    fractions: str | Sequence[float] = DEFAULT_FRACTIONS,
    *,
    seed: int = 0,
    group: str | None = None,
) -> Splits:
    """Split ``rows`` (or ``range(rows)``) into train, dev and test; see the module docstring for the rule.

    A split with a fraction above 0 that gets no row is a :class:`~scorers.errors.DataError` (too few rows or
    groups); so is a row without the ``group`` field.

    >>> split_rows(8, seed=0).test
    (1, 7)
    """
    shares = parse_fractions(fractions)
    count = rows if isinstance(rows, int) else len(rows)
    if group is not None and isinstance(rows, int):
        raise ConfigError("split_rows: a group field needs the rows themselves, not their number")
    values = None
    if group is not None and not isinstance(rows, int):
        values = tuple(_group_value(row, index, group) for index, row in enumerate(rows))
    import numpy as np  # not at import: scorers.options reads this module's defaults

    members = _units(count, values)
    order = np.random.default_rng(seed).permutation(len(members))
    bounds = np.cumsum(shares) * count
    bounds[-1] = count  # 0.6 + 0.2 + 0.2 is not exactly 1 in floats
    chosen: list[list[int]] = [[], [], []]
    start = 0
    for unit in order:
        place = min(int(np.searchsorted(bounds, start, side="right")), 2)
        chosen[place] += members[unit]
        start += len(members[unit])
    for name, share, picked in zip(SPLIT_NAMES, shares, chosen):
        if share > 0 and not picked:
            what = f"{len(members)} groups of field {group!r}" if group else f"{count} rows"
            raise DataError(f"split {name!r} (fraction {share:g}) got no rows: {what} are too few for these fractions")
    train, dev, test = (tuple(sorted(part)) for part in chosen)
    splits = Splits(train, dev, test, fractions=shares, seed=seed, group=group, groups=values)
    check_disjoint(splits)
    return splits


def check_disjoint(splits: Splits) -> None:
    """Raise :class:`~scorers.errors.DataError` when two splits share a row, or (with a group field) a group.

    >>> check_disjoint(Splits((0, 1), (2,), (1,), (0.5, 0.25, 0.25), 0))
    Traceback (most recent call last):
    ...
    scorers.errors.DataError: splits 'train' and 'test' share row(s) 1
    """
    for first, second in ((0, 1), (0, 2), (1, 2)):
        a, b = SPLIT_NAMES[first], SPLIT_NAMES[second]
        shared = sorted(set(splits.indices(a)) & set(splits.indices(b)))
        if shared:
            raise DataError(f"splits {a!r} and {b!r} share row(s) {', '.join(map(str, shared[:10]))}")
        if splits.groups is not None:
            common = sorted(splits._groups_in(a) & splits._groups_in(b))
            if common:
                raise DataError(
                    f"splits {a!r} and {b!r} share group(s) of field {splits.group!r}: {', '.join(common[:10])}"
                )


def _group_value(row: Mapping[str, Any], index: int, group: str) -> Any:
    value = lookup(row, group)
    if value is ABSENT or value is None:
        raise DataError(f"row {index}: no group in field {group!r} (--group); every row needs one")
    return value


def _group_key(value: Any) -> str:
    """A group value as text, equal for equal JSON values (``1`` and ``"1"`` stay apart)."""
    return json.dumps(value, sort_keys=True, default=str)


def _units(count: int, values: tuple[Any, ...] | None) -> list[list[int]]:
    """The units that are shuffled: each row alone, or the rows of each group in order of first appearance."""
    if values is None:
        return [[index] for index in range(count)]
    units: dict[str, list[int]] = {}
    for index, value in enumerate(values):
        units.setdefault(_group_key(value), []).append(index)
    return list(units.values())
