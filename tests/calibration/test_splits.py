"""Train/dev/test splits: seeded, sized by the fractions, and disjoint by rows or groups, by construction and by
:func:`check_disjoint` (which must catch a shared row or group handed to it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers.calibration import DEFAULT_FRACTIONS, Splits, check_disjoint, parse_fractions, split_rows
from scorers.errors import ConfigError, DataError


def test_the_default_fractions_are_half_a_quarter_and_a_quarter() -> None:
    assert DEFAULT_FRACTIONS == (0.5, 0.25, 0.25)
    splits = split_rows(100, seed=3)
    assert (len(splits.train), len(splits.dev), len(splits.test)) == (50, 25, 25)


def test_a_seed_gives_the_same_splits_and_another_seed_others() -> None:
    assert split_rows(40, seed=7) == split_rows(40, seed=7)
    assert split_rows(40, seed=7).test != split_rows(40, seed=8).test


def test_rows_of_a_group_stay_together() -> None:
    rows = [{"doc": {"id": i // 3}} for i in range(30)]
    splits = split_rows(rows, (0.6, 0.2, 0.2), seed=1, group="doc.id")
    seen = [{rows[i]["doc"]["id"] for i in splits.indices(name)} for name in ("train", "dev", "test")]
    assert not (seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2])
    assert splits.to_dict()["groups"] == {"train": 6, "dev": 2, "test": 2}


def test_check_disjoint_finds_a_shared_row() -> None:
    with pytest.raises(DataError, match="'dev' and 'test' share row"):
        check_disjoint(Splits((0,), (1, 2), (2, 3), DEFAULT_FRACTIONS, 0))


def test_check_disjoint_finds_a_shared_group() -> None:
    splits = Splits((0,), (1,), (2,), DEFAULT_FRACTIONS, 0, group="doc", groups=("a", "b", "a"))
    with pytest.raises(DataError, match="'train' and 'test' share group.*doc.*a"):
        check_disjoint(splits)


def test_group_values_of_different_types_are_different_groups() -> None:
    splits = Splits((0,), (1,), (), (0.5, 0.5, 0.0), 0, group="doc", groups=(1, "1"))
    check_disjoint(splits)


@pytest.mark.parametrize(
    ("text", "problem"),
    [("0.5,0.5", "three numbers"), ("0.5,0.3,0.3", "sum to 1"), ("a,b,c", "three numbers"), ("1.5,-0.5,0", "[0, 1]")],
)
def test_bad_fractions_are_a_config_error(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_fractions(text)


def test_too_few_groups_for_the_fractions_is_a_data_error() -> None:
    with pytest.raises(DataError, match="got no rows: 2 groups of field 'doc'"):
        split_rows([{"doc": "a"}, {"doc": "b"}], seed=0, group="doc")


def test_a_row_without_its_group_is_a_data_error() -> None:
    with pytest.raises(DataError, match="row 1: no group in field 'doc'"):
        split_rows([{"doc": "a"}, {}], seed=0, group="doc")


def test_a_zero_fraction_leaves_its_split_empty() -> None:
    splits = split_rows(10, (0.5, 0.0, 0.5), seed=2)
    assert splits.dev == () and len(splits.train) == 5


@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(st.integers(0, 12), min_size=3, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    cut=st.tuples(st.integers(1, 8), st.integers(1, 8), st.integers(1, 8)),
    by_group=st.booleans(),
)
def test_splits_are_disjoint_cover_every_row_and_keep_groups_whole(
    groups: list[int], seed: int, cut: tuple[int, int, int], by_group: bool
) -> None:
    rows = [{"doc": g} for g in groups]
    fractions = tuple(c / sum(cut) for c in cut)
    try:
        splits = split_rows(rows, fractions, seed=seed, group="doc" if by_group else None)
    except DataError as error:  # too few units for three non-empty splits
        assert "got no rows" in str(error)
        return
    parts = [set(splits.indices(name)) for name in ("train", "dev", "test")]
    assert sorted(parts[0] | parts[1] | parts[2]) == list(range(len(rows)))
    assert sum(map(len, parts)) == len(rows)
    if by_group:
        owner = {}
        for number, part in enumerate(parts):
            for index in part:
                assert owner.setdefault(groups[index], number) == number
    else:  # rows one by one: each split's size is its fraction of the rows, give or take one
        for part, share in zip(parts, fractions):
            assert abs(len(part) - share * len(rows)) <= 1
