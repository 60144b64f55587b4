"""scorers.stats.reliability: Krippendorff's alpha equal to the ``krippendorff`` package, Fleiss' kappa equal to
statsmodels, on shared generated ratings; properties of alpha; the bootstrap; the jury report; bad input."""

from __future__ import annotations

import json
from typing import Any

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers.errors import ConfigError, DataError
from scorers.stats import reliability
from scorers.stats.agreement import Estimate


def statsmodels_fleiss(ratings: np.ndarray) -> float:
    """statsmodels' Fleiss' kappa of a complete units x raters table: the reference. Imported here: statsmodels'
    package imports pandas, an optional extra, and the fast tier collects without the extras (tests/test_tiers.py)."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    return float(fleiss_kappa(aggregate_raters(ratings)[0]))


NAN = float("nan")


def generated(seed: int, units: int, raters: int, categories: int, missing: float) -> np.ndarray:
    """Ratings from ``default_rng(seed)``: raters mostly agreeing on a unit's category (so alpha is not ~0),
    ``missing`` of the ratings NaN, and the last unit rated once (it has no pair)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, categories, units)
    noise = rng.integers(-1, 2, (units, raters)) * (rng.random((units, raters)) < 0.4)
    ratings = np.clip(truth[:, None] + noise, 0, categories - 1).astype(np.float64)
    ratings[rng.random((units, raters)) < missing] = NAN
    ratings[-1] = NAN
    ratings[-1, rng.integers(raters)] = truth[-1]
    return ratings


#: The generated ratings' shapes, case by case: 2..8 raters, 2..7 categories, complete and sparse.
UNITS = [10, 30, 25, 50, 40, 60, 15, 80, 35, 100, 12, 200]
RATERS = [2, 2, 3, 3, 4, 5, 5, 6, 7, 8, 8, 4]
CATEGORIES = [2, 3, 2, 5, 4, 7, 3, 6, 2, 7, 5, 5]
MISSING = [0.0, 0.2, 0.3, 0.0, 0.25, 0.1, 0.5, 0.3, 0.15, 0.4, 0.0, 0.6]
#: (seed, units, raters, categories, share missing)
SHAPES = list(zip(range(len(UNITS)), UNITS, RATERS, CATEGORIES, MISSING))

#: Interval and ratio values are scores: unequally spaced, so the distance is not the categories' rank.
SCORES = np.array([0.0, 0.5, 2.0, 2.25, 7.0, 9.5, 10.0])


@pytest.mark.parametrize("level", reliability.LEVELS)
@pytest.mark.parametrize("seed, units, raters, categories, missing", SHAPES)
def test_alpha_equals_the_krippendorff_package(
    level: reliability.Level, seed: int, units: int, raters: int, categories: int, missing: float
) -> None:
    codes = generated(seed, units, raters, categories, missing)
    ratings = (
        codes
        if level in ("nominal", "ordinal")
        else np.where(np.isnan(codes), NAN, SCORES[np.nan_to_num(codes).astype(int)])
    )
    expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
    assert reliability.krippendorff_alpha(ratings, level) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
@pytest.mark.parametrize("seed, units, raters, categories, missing", SHAPES[:6])
def test_a_domain_checks_values_and_leaves_alpha_as_the_package_computes_it(
    level: reliability.Level, seed: int, units: int, raters: int, categories: int, missing: float
) -> None:
    ratings = generated(seed, units, raters, categories, missing)
    domain = list(range(categories + 2))  # two values nobody gave
    expected = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level, value_domain=domain)
    assert reliability.krippendorff_alpha(ratings, level, domain=domain) == pytest.approx(expected, abs=1e-12)


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers x 12 units, his published values
PAPER = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T


@pytest.mark.parametrize(
    "level, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_the_worked_example_of_krippendorffs_paper(level: reliability.Level, published: float) -> None:
    alpha = reliability.krippendorff_alpha(PAPER, level)
    assert alpha is not None and round(alpha, 3) == published
    assert alpha == pytest.approx(krippendorff.alpha(reliability_data=PAPER.T, level_of_measurement=level), abs=1e-12)


@pytest.mark.parametrize("seed, units, raters, categories, missing", SHAPES)
def test_fleiss_kappa_equals_statsmodels_on_the_complete_units(
    seed: int, units: int, raters: int, categories: int, missing: float
) -> None:
    ratings = generated(seed, units, raters, categories, missing / 3)
    complete = ratings[~np.isnan(ratings).any(axis=1)].astype(int)
    expected = statsmodels_fleiss(complete)
    assert reliability.fleiss_kappa(ratings) == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------ properties
RATINGS = st.integers(2, 8).flatmap(
    lambda raters: st.lists(
        st.lists(st.one_of(st.integers(0, 4).map(float), st.just(NAN)), min_size=raters, max_size=raters),
        min_size=2,
        max_size=25,
    )
)
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, database=None)


SCORE_RATINGS = st.integers(2, 6).flatmap(
    lambda raters: st.lists(
        st.lists(
            st.one_of(st.floats(0, 100, allow_nan=False).map(lambda v: round(v, 2)), st.just(NAN)),
            min_size=raters,
            max_size=raters,
        ),
        min_size=2,
        max_size=30,
    )
)


@PROPERTY
@given(ratings=SCORE_RATINGS)
def test_alpha_of_any_scores_equals_the_krippendorff_package(ratings: list[list[float]]) -> None:
    """Continuous values too: every level, whatever the number of distinct values; None where the package fails."""
    matrix = np.array(ratings)
    for level in reliability.LEVELS:
        try:
            with np.errstate(invalid="ignore"):  # one value given by several raters: the package divides 0 by 0
                expected = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement=level)
        except ValueError:  # fewer than 2 values in all, or no unit rated twice
            expected = NAN
        alpha = reliability.krippendorff_alpha(matrix, level)
        assert alpha is None if np.isnan(expected) else alpha == pytest.approx(expected, abs=1e-12)


def test_none_is_a_missing_rating_as_nan_is() -> None:
    with_none = [[1, None, 2], [2, 2, 2], [None, 1, 1]]
    with_nan = [[1, NAN, 2], [2, 2, 2], [NAN, 1, 1]]
    assert reliability.krippendorff_alpha(with_none, "interval") == reliability.krippendorff_alpha(with_nan, "interval")


@PROPERTY
@given(ratings=RATINGS, data=st.data())
def test_permuting_units_or_raters_leaves_alpha_and_kappa_unchanged(ratings: list[list[float]], data: Any) -> None:
    matrix = np.array(ratings)
    units = data.draw(st.permutations(range(len(matrix))))
    raters = data.draw(st.permutations(range(matrix.shape[1])))
    shuffled = matrix[units][:, raters]
    for level in reliability.LEVELS:
        before, after = reliability.krippendorff_alpha(matrix, level), reliability.krippendorff_alpha(shuffled, level)
        assert (before is None and after is None) or after == pytest.approx(before, abs=1e-12)
    before, after = reliability.fleiss_kappa(matrix), reliability.fleiss_kappa(shuffled)
    assert (before is None and after is None) or after == pytest.approx(before, abs=1e-12)


@PROPERTY
@given(values=st.lists(st.integers(0, 6), min_size=2, max_size=20, unique=False), raters=st.integers(2, 8))
def test_perfect_agreement_is_1_unless_there_is_a_single_value(values: list[int], raters: int) -> None:
    ratings = np.repeat(np.array(values, dtype=float)[:, None], raters, axis=1)
    for level in reliability.LEVELS:
        alpha = reliability.krippendorff_alpha(ratings, level)
        assert alpha == (1.0 if len(set(values)) > 1 else None)
    assert reliability.fleiss_kappa(ratings) == (1.0 if len(set(values)) > 1 else None)


@pytest.mark.parametrize("level", reliability.LEVELS)
def test_one_value_throughout_is_undefined_with_a_reason(level: reliability.Level) -> None:
    ratings = [[3, 3, NAN], [3, 3, 3], [NAN, 4, NAN]]  # the 4 has no pair: every pairable value is 3
    assert reliability.krippendorff_alpha(ratings, level) is None
    estimate = reliability.alpha_with_ci(ratings, level, resamples=50)
    assert estimate.to_dict() == {"value": None, "ci": None, "n": 2, "reason": reliability.ONE_VALUE}


def test_no_unit_rated_twice_is_undefined_with_a_reason() -> None:
    ratings = [[1, NAN], [NAN, 2]]
    assert reliability.krippendorff_alpha(ratings) is None
    assert reliability.alpha_with_ci(ratings).to_dict() == {
        "value": None,
        "ci": None,
        "n": 0,
        "reason": reliability.NO_PAIRS,
    }
    assert reliability.fleiss_kappa_with_ci(ratings).reason == reliability.NO_COMPLETE_UNITS
    assert reliability.fleiss_kappa_with_ci([[1], [2]]).reason == reliability.FEWER_THAN_TWO_RATERS


# ------------------------------------------------------------------ bootstrap
def test_the_interval_is_the_percentile_of_alpha_on_the_same_drawn_rows() -> None:
    """The weighted resample equals alpha computed (by the package) on the rows drawn, for a few resamples."""
    ratings = generated(7, 40, 4, 5, 0.2)
    pairable = ratings[(~np.isnan(ratings)).sum(axis=1) >= 2]
    estimate = reliability.alpha_with_ci(ratings, "ordinal", resamples=30, seed=3)
    drawn = np.random.default_rng(3).choice(len(pairable), size=(30, len(pairable)), replace=True)
    resampled = [
        krippendorff.alpha(reliability_data=pairable[rows].T, level_of_measurement="ordinal") for rows in drawn
    ]
    assert (estimate.low, estimate.high) == pytest.approx(tuple(np.quantile(resampled, [0.025, 0.975])), abs=1e-12)
    assert estimate.n == len(pairable)


@pytest.mark.parametrize("level", reliability.LEVELS)
def test_the_interval_is_reproducible_with_a_seed_and_holds_the_figure(level: reliability.Level) -> None:
    ratings = generated(11, 300, 5, 5, 0.1)
    first = reliability.alpha_with_ci(ratings, level, resamples=400, seed=5)
    again = reliability.alpha_with_ci(ratings, level, resamples=400, seed=5)
    other = reliability.alpha_with_ci(ratings, level, resamples=400, seed=6)
    assert first == again and first.low != other.low
    assert first.low is not None and first.high is not None and first.low < first.value < first.high  # type: ignore[operator]


@pytest.mark.parametrize("level", reliability.LEVELS)
def test_resampling_in_blocks_draws_the_same_rows(level: reliability.Level, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory is bounded by drawing the resamples (and the ratio distances) a block at a time: the figures stay."""
    ratings = np.round(generated(5, 60, 4, 6, 0.2) * 10 + np.random.default_rng(5).random((60, 4)), 1)  # 63 values
    whole = reliability.alpha_with_ci(ratings, level, resamples=300, seed=2)
    monkeypatch.setattr(reliability, "_BLOCK", 1400)  # 1400 // width resamples a block; ratio: 22 values
    blocks = reliability.alpha_with_ci(ratings, level, resamples=300, seed=2)
    assert (blocks.value, blocks.low, blocks.high) == pytest.approx((whole.value, whole.low, whole.high), abs=1e-12)


def test_fleiss_kappa_interval_resamples_the_complete_units() -> None:
    ratings = generated(2, 30, 3, 3, 0.2)
    complete = ratings[~np.isnan(ratings).any(axis=1)].astype(int)
    estimate = reliability.fleiss_kappa_with_ci(ratings, resamples=25, seed=1)
    drawn = np.random.default_rng(1).choice(len(complete), size=(25, len(complete)), replace=True)
    resampled = [statsmodels_fleiss(complete[rows]) for rows in drawn]
    assert (estimate.low, estimate.high) == pytest.approx(tuple(np.quantile(resampled, [0.025, 0.975])), abs=1e-12)


def test_an_interval_is_left_out_when_some_resample_is_undefined() -> None:
    """The resamples that drew only units rated 1, or only the unit rated 2, have a single value: alpha is undefined."""
    estimate = reliability.alpha_with_ci([[1, 1], [1, 1], [2, 2]], resamples=100, seed=4)
    drawn = np.random.default_rng(4).choice(3, size=(100, 3), replace=True)
    single = int(((drawn != 2).all(axis=1) | (drawn == 2).all(axis=1)).sum())
    assert estimate.value == 1.0 and estimate.low is None and single > 0
    assert (
        estimate.reason
        == f"no confidence interval: {single} of 100 resamples drew a single value (the figure is undefined)"
    )


# ------------------------------------------------------------------ juries
JURY = np.array(
    [
        [1, 1, 1],
        [2, 2, 1],
        [3, 3, 3],
        [1, 2, NAN],
        [NAN, NAN, 2],
        [2, 2, 2],
        [3, 2, 3],
        [1, 1, 2],
    ]
)


def test_jury_agreement_reports_each_figure() -> None:
    verdicts = [1, 2, 3, NAN, NAN, 2, 3, 1]
    labels = [1, 2, 3, 2, 2, NAN, 3, 1]
    report = reliability.jury_agreement(
        JURY, ["a", "b", "c"], level="ordinal", domain=[1, 2, 3], verdicts=verdicts, labels=labels, resamples=200
    )
    assert report.units == 7 and report.alpha.n == 7 and report.fleiss_kappa.n == 6
    assert report.alpha.value == pytest.approx(
        krippendorff.alpha(reliability_data=JURY.T, level_of_measurement="ordinal")
    )
    assert report.unanimous == pytest.approx(3 / 7)
    c = report.per_juror["c"]
    assert c["answered"] == 7
    pair = np.column_stack([JURY[:, 2], verdicts])
    assert c["with_jury"].value == pytest.approx(
        krippendorff.alpha(reliability_data=pair.T, level_of_measurement="ordinal")
    )
    assert c["with_jury"].n == 6 and c["with_labels"].n == 6
    assert report.bootstrap == {"method": "percentile", "resamples": 200, "confidence": 0.95, "seed": 0, "over": "rows"}
    as_json = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert as_json["per_juror"]["a"]["with_labels"]["n"] == 6 and as_json["alpha"]["n"] == 7
    table = report.table()
    assert "Krippendorff's alpha" in table and "c with labels" in table and "200 resamples" in table


def test_without_labels_a_jurors_agreement_with_labels_is_none() -> None:
    report = reliability.jury_agreement(JURY, ["a", "b", "c"], level="nominal", verdicts=JURY[:, 0], resamples=50)
    assert all(figures["with_labels"] is None for figures in report.per_juror.values())
    assert report.to_dict()["per_juror"]["b"]["with_labels"] is None
    assert isinstance(report.per_juror["a"]["with_jury"], Estimate)


def test_a_jury_without_verdicts_has_undefined_juror_figures() -> None:
    report = reliability.jury_agreement(JURY, ["a", "b", "c"], level="interval", resamples=50)
    assert report.per_juror["a"]["with_jury"].to_dict() == {
        "value": None,
        "ci": None,
        "n": 0,
        "reason": reliability.NO_PAIRS,
    }


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: reliability.krippendorff_alpha([[1, 2]], "nominal2"), ConfigError, "level 'nominal2'"),  # type: ignore[arg-type]
        (lambda: reliability.krippendorff_alpha([1, 2, 3]), DataError, "2-D"),
        (lambda: reliability.krippendorff_alpha([["a", "b"]]), DataError, "numbers"),
        (lambda: reliability.krippendorff_alpha([[1, float("inf")]]), DataError, "finite"),
        (lambda: reliability.krippendorff_alpha([[1, 5]], domain=[1, 2, 3]), DataError, "off the domain"),
        (lambda: reliability.krippendorff_alpha([[1, 2]], domain=[1, 1, 2]), ConfigError, "distinct"),
        (lambda: reliability.krippendorff_alpha([[-1, 2]], "ratio"), DataError, "at least 0"),
        (lambda: reliability.fleiss_kappa([[0, 3]], domain=[0, 1]), DataError, "off the domain"),
        (lambda: reliability.alpha_with_ci([[1, 2]], resamples=0), ConfigError, "resamples"),
        (lambda: reliability.alpha_with_ci([[1, 2]], confidence=95), ConfigError, "confidence"),
        (lambda: reliability.jury_agreement([[1, 2]], ["a"], level="nominal"), DataError, "2 columns for 1 jurors"),
        (lambda: reliability.jury_agreement([[1, 2]], ["a", "a"], level="nominal"), ConfigError, "distinct"),
        (
            lambda: reliability.jury_agreement([[1, 2]], ["a", "b"], level="nominal", verdicts=[1, 2]),
            DataError,
            "verdicts",
        ),
        (lambda: reliability.jury_agreement([[1, 2]], ["a", "b"], level="nominal", labels=["x"]), DataError, "labels"),
    ],
)
def test_bad_input_is_a_typed_error_naming_what_is_wrong(call: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        call()
