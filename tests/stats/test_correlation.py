"""scorers.stats.correlation: every figure recomputed here with scipy on generated data.

The data have groups of unequal size, ties (integer human scores, metric scores rounded to
multiples of 1/4 or 1/8),
groups constant on one side, rows whose scorer errored (score null) and rows without a
human score. The reference computations below follow the definitions in the module's
docstring directly (rows listed per group, per system, ...), not its array code.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pytest
import scipy.stats
from bounded import run_bounded

from scorers.errors import ConfigError, DataError
from scorers.stats import _correlation_figures, correlate
from scorers.stats.correlation import COEFFICIENTS, coefficient, kendall_like, williams_test

SEED, RESAMPLES = 11, 60
SYSTEMS = ["s0", "s1", "s2", "s3", "s4", "s5"]
SCIPY: dict[str, Callable[[list[float], list[float]], float]] = {
    "pearson": lambda x, y: scipy.stats.pearsonr(x, y).statistic,
    "spearman": lambda x, y: scipy.stats.spearmanr(x, y).statistic,
    "kendall_b": lambda x, y: scipy.stats.kendalltau(x, y, variant="b").statistic,
    "kendall_c": lambda x, y: scipy.stats.kendalltau(x, y, variant="c").statistic,
}


def dyadic(value: float, steps: int) -> float:
    """``value`` rounded to a multiple of 1/steps: ties, and sums and means that are exact in binary.

    Means of systems that tie in exact arithmetic then tie in any summation order, so the
    ranks of system means do not depend on how the sums are taken (with decimals such as
    0.07 they can differ in the last bit, and a tie becomes an order).
    """
    return round(float(value) * steps) / steps


def make_rows(seed: int) -> list[dict[str, Any]]:
    """Results rows of 12 documents, 2 to 6 systems each, two metrics and two human columns."""
    rng = np.random.default_rng(seed)
    rows = []
    for doc in range(12):
        size = int(rng.integers(2, 7))
        for system in rng.choice(SYSTEMS, size, replace=False):
            quality = rng.normal()
            human = {"overall": int(np.clip(round(quality + 3), 1, 5)), "panel": {"fluency": dyadic(quality, 4)}}
            scores = {"A": dyadic(quality + rng.normal(), 8), "B": dyadic(rng.random(), 4)}
            rows.append({"doc": f"d{doc}", "system": str(system), **human, "scores": scores})
    rows[0]["overall"] = None  # a missing human score
    del rows[5]["panel"]  # an absent one (dotted path)
    rows[3]["scores"]["A"] = None  # an errored row, as `run` writes it
    rows[3]["errors"] = {"A": {"type": "ScorerInputError", "message": "bad"}}
    rows[8]["scores"]["B"] = None
    for row in rows:  # one document constant in the human score, one constant in A
        if row["doc"] == "d4":
            row["overall"] = 3
        if row["doc"] == "d7":
            row["scores"]["A"] = 0.5
    return rows


def human_of(row: dict[str, Any], column: str) -> float | None:
    value: Any = row
    for part in column.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return None if value is None else float(value)


def kept(rows: list[dict[str, Any]], scorers: list[str], column: str) -> list[dict[str, Any]]:
    return [r for r in rows if human_of(r, column) is not None and all(r["scores"][s] is not None for s in scorers)]


def summary(rows: list[dict[str, Any]], scorer: str, column: str, coef: str) -> tuple[float, int, int]:
    """Mean over documents (in order of first appearance) of scipy's coefficient; skipped documents counted."""
    values, skipped = [], 0
    for doc in dict.fromkeys(r["doc"] for r in rows):
        x = [r["scores"][scorer] for r in rows if r["doc"] == doc]
        y = [human_of(r, column) for r in rows if r["doc"] == doc]
        if len(x) < 2 or len(set(x)) == 1 or len(set(y)) == 1:
            skipped += 1
            continue
        values.append(SCIPY[coef](x, y))
    return (float(np.mean(values)) if values else math.nan), len(values), skipped


def system(rows: list[dict[str, Any]], scorer: str, column: str, coef: str) -> float:
    names = list(dict.fromkeys(r["system"] for r in rows))
    x = [np.mean([r["scores"][scorer] for r in rows if r["system"] == s]) for s in names]
    y = [np.mean([human_of(r, column) for r in rows if r["system"] == s]) for s in names]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    return float(SCIPY[coef](x, y))


def global_(rows: list[dict[str, Any]], scorer: str, column: str, coef: str) -> float:
    return float(SCIPY[coef]([r["scores"][scorer] for r in rows], [human_of(r, column) for r in rows]))


def level_value(level: str, rows: list[dict[str, Any]], scorer: str, column: str, coef: str) -> float:
    if level == "summary":
        return summary(rows, scorer, column, coef)[0]
    return (system if level == "system" else global_)(rows, scorer, column, coef)


def resamples(rows: list[dict[str, Any]], seed: int, count: int) -> list[list[dict[str, Any]]]:
    """The bootstrap resamples: documents drawn with replacement by default_rng(seed).choice; rows of each draw."""
    docs = list(dict.fromkeys(r["doc"] for r in rows))
    drawn = np.random.default_rng(seed).choice(len(docs), size=(count, len(docs)), replace=True)
    out = []
    for draw in drawn:
        sample = []
        for k, index in enumerate(draw):  # a document drawn twice is two documents
            sample += [{**r, "doc": f"{r['doc']}#{k}"} for r in rows if r["doc"] == docs[index]]
        out.append(sample)
    return out


def percentile(values: list[float]) -> tuple[float, float]:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))


@pytest.fixture(scope="module", params=[1, 2, 3])
def data(request: pytest.FixtureRequest) -> tuple[list[dict[str, Any]], Any]:
    rows = make_rows(request.param)
    result = correlate(
        rows,
        human=["overall", "panel.fluency"],
        group_by="doc",
        system_key="system",
        resamples=RESAMPLES,
        seed=SEED,
    )
    return rows, result


@pytest.mark.parametrize("coef", COEFFICIENTS)
@pytest.mark.parametrize("column", ["overall", "panel.fluency"])
@pytest.mark.parametrize("scorer", ["A", "B"])
def test_figures_equal_scipy(data: Any, scorer: str, column: str, coef: str) -> None:
    all_rows, result = data
    rows = kept(all_rows, [scorer], column)
    value, used, skipped = summary(rows, scorer, column, coef)
    figure = result.figure(scorer, column, "summary", coef)
    assert (figure.value, figure.n, figure.skipped) == (pytest.approx(value, abs=1e-12), used, skipped)
    documents = len(dict.fromkeys(r["doc"] for r in rows))
    assert used + skipped == documents
    figure = result.figure(scorer, column, "system", coef)
    assert figure.value == pytest.approx(system(rows, scorer, column, coef), abs=1e-12)
    assert figure.n == len(dict.fromkeys(r["system"] for r in rows))
    figure = result.figure(scorer, column, "global", coef)
    assert (figure.value, figure.n) == (pytest.approx(global_(rows, scorer, column, coef), abs=1e-12), len(rows))


def test_some_documents_are_skipped(data: Any) -> None:
    """The data exercise the skip rule: d4 is constant in the human score, d7 in A."""
    _, result = data
    assert result.figure("A", "overall", "summary", "pearson").skipped >= 2
    assert result.figure("B", "overall", "summary", "pearson").skipped >= 1


def test_left_out_rows_are_counted(data: Any) -> None:
    rows, result = data
    assert result.left_out["A|overall"] == {"scorer failed": 1, "human missing": 1}
    assert result.left_out["B|panel.fluency"] == {"scorer failed": 1, "human missing": 1}
    assert result.rows == len(rows)


@pytest.mark.parametrize("level", ["summary", "system", "global"])
@pytest.mark.parametrize("coef", ["pearson", "kendall_c"])
def test_intervals_resample_documents(data: Any, level: str, coef: str) -> None:
    all_rows, result = data
    rows = kept(all_rows, ["B"], "overall")
    # draws are over every document of the file, then the kept rows of each drawn document
    draws = resamples(all_rows, SEED, RESAMPLES)
    keep = {id(r) for r in rows}
    ids = {(r["doc"], r["system"]): r for r in all_rows}
    values = []
    for sample in draws:
        sample_rows = [r for r in sample if id(ids[(r["doc"].split("#")[0], r["system"])]) in keep]
        values.append(level_value(level, sample_rows, "B", "overall", coef))
    low, high = percentile(values)
    figure = result.figure("B", "overall", level, coef)
    assert (figure.low, figure.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))


@pytest.mark.parametrize("level", ["summary", "system", "global"])
def test_paired_comparison(data: Any, level: str) -> None:
    """A - B on the rows both scored; percentile interval and centred two-sided p over the same draws."""
    all_rows, result = data
    rows = kept(all_rows, ["A", "B"], "overall")
    keep = {id(r) for r in rows}
    ids = {(r["doc"], r["system"]): r for r in all_rows}
    observed = level_value(level, rows, "A", "overall", "spearman") - level_value(
        level, rows, "B", "overall", "spearman"
    )
    differences = []
    for sample in resamples(all_rows, SEED, RESAMPLES):
        sample_rows = [r for r in sample if id(ids[(r["doc"].split("#")[0], r["system"])]) in keep]
        differences.append(
            level_value(level, sample_rows, "A", "overall", "spearman")
            - level_value(level, sample_rows, "B", "overall", "spearman")
        )
    finite = np.array([d for d in differences if not math.isnan(d)])
    p_value = (np.sum(np.abs(finite - finite.mean()) >= abs(observed)) + 1) / (len(finite) + 1)
    [found] = [
        c
        for c in result.comparisons
        if (c.human, c.level, c.coefficient, c.a, c.b) == ("overall", level, "spearman", "A", "B")
    ]
    assert found.difference == pytest.approx(observed, abs=1e-12)
    assert (found.low, found.high) == tuple(pytest.approx(v, abs=1e-12) for v in percentile(list(finite)))
    assert found.p_value == pytest.approx(p_value, abs=1e-12)


def test_williams_at_system_level(data: Any) -> None:
    all_rows, result = data
    rows = kept(all_rows, ["A", "B"], "overall")
    names = list(dict.fromkeys(r["system"] for r in rows))
    means = {
        key: [np.mean([value(r) for r in rows if r["system"] == s]) for s in names]
        for key, value in {
            "h": lambda r: human_of(r, "overall"),
            "A": lambda r: r["scores"]["A"],
            "B": lambda r: r["scores"]["B"],
        }.items()
    }
    r_a = scipy.stats.pearsonr(means["h"], means["A"]).statistic
    r_b = scipy.stats.pearsonr(means["h"], means["B"]).statistic
    r_ab = scipy.stats.pearsonr(means["A"], means["B"]).statistic
    [found] = [w for w in result.williams if w.human == "overall"]
    assert (found.a, found.b, found.n) == ("A", "B", len(names))
    assert (found.r_a, found.r_b, found.r_ab) == tuple(pytest.approx(v, abs=1e-12) for v in (r_a, r_b, r_ab))
    t, p = williams_test(r_a, r_b, r_ab, len(names))
    assert (found.t, found.p_value) == (pytest.approx(t, abs=1e-12), pytest.approx(p, abs=1e-12))


def test_williams_by_hand() -> None:
    """Steiger (1980), case A: n = 103, r12 = .4, r13 = .5, r23 = .1; psych's r.test prints t = -0.89.

    By hand: K = 1 - .16 - .25 - .01 + 2(.4)(.5)(.1) = .62; the denominator is
    2(.62)(102/100) + (.45)^2 (.9)^3 = 1.2648 + 0.1476225 = 1.4124225; t = -.1 sqrt(102 * 1.1 / 1.4124225).
    """
    k = 1 - Fraction(4, 10) ** 2 - Fraction(5, 10) ** 2 - Fraction(1, 10) ** 2 + 2 * Fraction(2, 100)
    assert k == Fraction(62, 100)
    denominator = 2 * k * Fraction(102, 100) + Fraction(45, 100) ** 2 * Fraction(9, 10) ** 3
    assert denominator == Fraction(14124225, 10**7)
    expected = -0.1 * math.sqrt(float(Fraction(1122, 10) / denominator))
    t, p = williams_test(0.4, 0.5, 0.1, 103)
    assert t == pytest.approx(expected, rel=1e-12)
    assert round(t, 2) == -0.89
    assert p == pytest.approx(scipy.stats.t.sf(expected, 100), rel=1e-12)
    assert 2 * min(p, 1 - p) == pytest.approx(0.3749, abs=1e-4)  # two-sided, as r.test's "probability < 0.37"
    swapped, q = williams_test(0.5, 0.4, 0.1, 103)
    assert (swapped, q) == (pytest.approx(-t, rel=1e-12), pytest.approx(1 - p, rel=1e-12))
    with pytest.raises(ConfigError, match="more than 3"):
        williams_test(0.4, 0.5, 0.1, 3)


def pair_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One row per document and system, and preference pairs derived from a hidden quality (some reversed)."""
    rng = np.random.default_rng(5)
    rows, pairs = [], []
    for doc in range(15):
        quality = {s: rng.normal() for s in SYSTEMS[: int(rng.integers(2, 6))]}
        for s, q in quality.items():
            rows.append({"doc": doc, "system": s, "scores": {"A": dyadic(q + rng.normal(), 8), "B": round(q, 0)}})
        for i, a in enumerate(quality):
            for b in list(quality)[i + 1 :]:
                better, worse = (a, b) if quality[a] > quality[b] else (b, a)
                pairs.append({"doc": doc, "better": better, "worse": worse})
    rows[2]["scores"]["A"] = None
    return rows, pairs


def test_kendall_like() -> None:
    rows, pairs = pair_rows()
    rows = [{**r, "h": 1.0} for r in rows]  # a human column is required; the pairs are the judgments here
    result = correlate(
        rows, human=["h"], group_by="doc", system_key="system", pairs=pairs, resamples=RESAMPLES, seed=SEED
    )
    score = {(r["doc"], r["system"]): r["scores"] for r in rows}
    docs = list(dict.fromkeys(r["doc"] for r in rows))
    drawn = np.random.default_rng(SEED).choice(len(docs), size=(RESAMPLES, len(docs)), replace=True)
    for name in ("A", "B"):
        usable = [
            (score[(p["doc"], p["better"])][name], score[(p["doc"], p["worse"])][name], p["doc"])
            for p in pairs
            if score[(p["doc"], p["better"])][name] is not None and score[(p["doc"], p["worse"])][name] is not None
        ]
        concordant = sum(b > w for b, w, _ in usable)
        discordant = sum(b <= w for b, w, _ in usable)
        [found] = [k for k in result.kendall_like if k.scorer == name]
        assert (found.concordant, found.discordant) == (concordant, discordant)
        assert found.ties == sum(b == w for b, w, _ in usable)
        assert found.skipped == len(pairs) - len(usable)
        assert found.value == pytest.approx((concordant - discordant) / (concordant + discordant), abs=1e-15)
        taus = []
        for draw in drawn:
            c = sum(sum(b > w for b, w, d in usable if d == docs[i]) for i in draw)
            d_ = sum(sum(b <= w for b, w, d in usable if d == docs[i]) for i in draw)
            taus.append((c - d_) / (c + d_))
        low, high = percentile(taus)
        assert (found.low, found.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert result.kendall_like[1].ties > 0  # B's rounded scores tie


@pytest.mark.parametrize("min_difference", [0.0, 1.0])
def test_kendall_like_from_a_human_column(min_difference: float) -> None:
    """Pairs formed from a rating: every two rated rows of a document whose ratings differ by more than D."""
    rows = make_rows(2)
    result = correlate(
        rows,
        human=[],
        group_by="doc",
        pairs_from="overall",
        min_difference=min_difference,
        resamples=RESAMPLES,
        seed=SEED,
    )
    assert result.figures == () and result.comparisons == ()
    for name in ("A", "B"):
        usable = []
        for doc in dict.fromkeys(r["doc"] for r in rows):
            rated = [r for r in rows if r["doc"] == doc and r["overall"] is not None]
            for i, a in enumerate(rated):
                for b in rated[i + 1 :]:
                    if abs(a["overall"] - b["overall"]) > min_difference:
                        better, worse = (a, b) if a["overall"] > b["overall"] else (b, a)
                        usable.append((better["scores"][name], worse["scores"][name]))
        skipped = sum(b is None or w is None for b, w in usable)
        usable = [(b, w) for b, w in usable if b is not None and w is not None]
        [found] = [k for k in result.kendall_like if k.scorer == name]
        assert found.source == f"overall, difference > {min_difference:g}"
        assert (found.concordant, found.discordant, found.skipped) == (
            sum(b > w for b, w in usable),
            sum(b <= w for b, w in usable),
            skipped,
        )
        assert found.value == pytest.approx(kendall_like([b for b, _ in usable], [w for _, w in usable]), abs=1e-15)


def test_kendall_like_by_hand() -> None:
    assert kendall_like([3, 2, 1, 5], [1, 1, 1, 5]) == 0.0  # C 2, D 2 (the tie counts against)
    assert kendall_like([3, 2, 1], [1, 1, 0]) == 1.0
    assert math.isnan(kendall_like([], []))


def test_coefficient_undefined() -> None:
    for name in COEFFICIENTS:
        assert math.isnan(coefficient(name, [1.0], [2.0]))
        assert math.isnan(coefficient(name, [1.0, 2.0], [3.0, 3.0]))
    with pytest.raises(ConfigError, match="coefficient 'cosine'"):
        coefficient("cosine", [1, 2], [1, 2])


def test_without_groups_resamples_rows() -> None:
    rows = make_rows(4)
    result = correlate(rows, human=["overall"], scorers=["B"], resamples=RESAMPLES, seed=SEED, compare=False)
    assert result.levels == ("global",)
    usable = kept(rows, ["B"], "overall")
    drawn = np.random.default_rng(SEED).choice(len(rows), size=(RESAMPLES, len(rows)), replace=True)
    keep = {id(r) for r in usable}
    values = []
    for draw in drawn:
        sample = [rows[i] for i in draw if id(rows[i]) in keep]
        values.append(global_(sample, "B", "overall", "spearman"))
    figure = result.figure("B", "overall", "global", "spearman")
    assert (figure.low, figure.high) == tuple(pytest.approx(v, abs=1e-12) for v in percentile(values))


def test_json_and_table(data: Any) -> None:
    _, result = data
    out = result.to_dict()
    assert out["format"] == "scorers-correlation" and out["bootstrap"]["resampled"] == "groups"
    assert len(out["figures"]) == 2 * 2 * 3 * 4
    table = result.table()
    assert "human: overall" in table and "Williams" in table and "kendall_c" in table


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"human": []}, ConfigError, "needs a human score column"),
        ({"human": [], "pairs_from": "overall"}, ConfigError, "need group_by"),
        ({"human": [], "pairs_from": "overall", "group_by": "doc", "min_difference": -1}, ConfigError, "at least 0"),
        ({"human": ["overall"], "levels": ["summary"]}, ConfigError, "needs group_by"),
        ({"human": ["overall"], "scorers": ["Nope"]}, ConfigError, "no scores of Nope"),
        ({"human": ["overall"], "coefficients": ["r2"]}, ConfigError, "coefficient 'r2'"),
        ({"human": ["overall"], "resamples": 0}, ConfigError, "resamples"),
        ({"human": ["doc"]}, DataError, "not a finite number"),
        ({"human": ["overall"], "group_by": "nope"}, DataError, "no field 'nope'"),
        ({"human": ["overall"], "pairs": []}, ConfigError, "need group_by and system_key"),
    ],
)
def test_bad_input(options: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        correlate(make_rows(1), **options)


def test_pairs_must_name_rows() -> None:
    rows = [{**r, "h": 1.0} for r in pair_rows()[0]]
    with pytest.raises(DataError, match="names no row"):
        correlate(
            rows, human=["h"], group_by="doc", system_key="system", pairs=[{"doc": 0, "better": "x", "worse": "s0"}]
        )


@pytest.mark.parametrize(
    ("where", "message"),
    [("human", "row 2: the human score 'overall' is 1000000000000000"), ("score", "row 2: the score of A is 1000")],
)
def test_a_number_beyond_floats_is_a_data_error(where: str, message: str) -> None:
    """An integer such as 10**400 (valid JSON) does not fit a float: the row's DataError, not OverflowError."""
    rows = make_rows(1)
    if where == "human":
        rows[1]["overall"] = 10**400
    else:
        rows[1]["scores"]["A"] = 10**400
    with pytest.raises(DataError, match=message):
        correlate(rows, human=["overall"], group_by="doc", resamples=5)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"human": ["overal"]}, "--human overal: no field 'overal' in any row; did you mean 'overall'?"),
        ({"human": ["panel.fluensy"]}, "--human panel.fluensy: no field 'panel.fluensy' in any row"),
        ({"human": ["overall"], "group_by": "docs"}, "--group-by docs: no field 'docs' in any row; did you mean 'doc'"),
        ({"human": ["overall"], "system_key": "sys"}, "--system-key sys: no field 'sys' in any row"),
        ({"human": [], "group_by": "doc", "pairs_from": "overal"}, "--pairs-from overal: no field 'overal' in any"),
        ({"human": ["overall"], "scorers": ["AA"]}, "no scores of AA in these rows; did you mean 'A'"),
    ],
)
def test_a_field_no_row_has_is_an_error_naming_the_fields(options: dict[str, Any], message: str) -> None:
    """A human column, group or system field absent from every row names the rows' fields (it gave all '-')."""
    with pytest.raises((DataError, ConfigError), match=re.escape(message)) as raised:
        correlate(make_rows(1), resamples=5, **options)
    if "scorers" not in options:
        assert "the rows' fields: doc, system, overall, panel" in str(raised.value)


def test_a_field_some_rows_lack_names_the_first() -> None:
    rows = make_rows(1)
    del rows[4]["doc"]
    with pytest.raises(DataError, match="row 5 has no field 'doc' \\(--group-by\\)"):
        correlate(rows, human=["overall"], group_by="doc", resamples=5)


@pytest.mark.parametrize(("groups", "resamples", "step"), [(7, 13, 3), (12, 60, 7), (1001, 57, 5), (3, 5, 1)])
def test_draws_in_chunks_are_one_call_of_choice(groups: int, resamples: int, step: int) -> None:
    """The bootstrap draws a few resamples at a time, and they are the documented single call's rows."""
    draws = _correlation_figures._Draws(groups, groups, resamples, SEED, None)
    draws.step = step
    chunks = list(draws.chunks())
    drawn = np.concatenate([d for d, _ in chunks])
    assert np.array_equal(drawn, np.random.default_rng(SEED).choice(groups, size=(resamples, groups), replace=True))
    for d, weights in chunks:
        assert np.array_equal(weights, [np.bincount(row, minlength=groups) for row in d])


def many_rows_figure(count: int) -> tuple[float, float | None]:
    """correlate over ``count`` rows without groups, 1,000 resamples of the rows (run in a bounded child)."""
    rng = np.random.default_rng(0)
    quality = rng.normal(size=count)
    human = np.round(quality * 10).tolist()
    scores = np.round(quality + rng.normal(size=count), 3).tolist()
    rows = [{"h": h, "scores": {"M": m}} for h, m in zip(human, scores)]
    del quality, human, scores
    result = correlate(rows, human=["h"], coefficients=["pearson"], resamples=1000)
    figure = result.figure("M", "h", "global", "pearson")
    assert figure.value is not None
    return figure.value, figure.low


@pytest.mark.slow
def test_many_rows_in_bounded_memory() -> None:
    """30,000 rows x 1,000 resamples: the old code held 1,000 x 30,000 arrays (690 MB at its peak), this one
    works through the resamples a few at a time (160 MB)."""
    value, low = run_bounded(many_rows_figure, 30_000, timeout_s=300, memory_mb=350)
    assert low is not None and 0.6 < low < value < 0.8
