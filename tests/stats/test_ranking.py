"""Bradley-Terry rankings (scorers.stats.ranking) against references on shared generated datasets: choix's maximum
likelihood (half-win ties as duplicated comparisons, its alpha as our prior), an independent Davidson fit with
scipy.optimize, and statsmodels' binomial GLM for style control; then the bootstrap, undefined strengths, swaps and
winner columns."""

from __future__ import annotations

import json
import math

import choix
import numpy as np
import pytest
from scipy.optimize import minimize

from scorers.errors import ConfigError, DataError
from scorers.stats import rank
from scorers.stats.ranking import SCALE

#: (systems, prompts, comparisons per prompt, share of ties, seed): small to a leaderboard's size
DATASETS = {
    "3x40": (3, 40, 2, 0.0, 1),
    "5x120-ties": (5, 120, 3, 0.15, 2),
    "8x200-ties": (8, 200, 4, 0.3, 3),
    "12x150": (12, 150, 6, 0.1, 4),
}
TOLERANCE = 1e-6


def generate(systems: int, prompts: int, per_prompt: int, tie_share: float, seed: int) -> list[dict]:
    """Rows of preference data with known strengths, answer lengths that sway the verdicts, and ties."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(scale=0.8, size=systems)
    rows = []
    for prompt in range(prompts):
        for _ in range(per_prompt):
            a, b = rng.choice(systems, 2, replace=False)
            length_a, length_b = rng.integers(20, 400, 2)
            d = strength[a] - strength[b] + 0.8 * (length_a - length_b) / (length_a + length_b)
            u = rng.random()
            win = (1 - tie_share) / (1 + math.exp(-d))
            winner = "model_a" if u < win else "tie" if u < win + tie_share else "model_b"
            rows.append(
                {
                    "question_id": f"q{prompt}",
                    "model_a": f"m{a}",
                    "model_b": f"m{b}",
                    "winner": winner,
                    "output": "w " * int(length_a),
                    "expected": "w " * int(length_b),
                }
            )
    return rows


@pytest.fixture(scope="module", params=list(DATASETS))
def dataset(request: pytest.FixtureRequest) -> list[dict]:
    return generate(*DATASETS[request.param])


def ranked(rows: list[dict], **options: object):
    return rank(rows, winner="winner", prompt="question_id", **{"resamples": 0, **options})


def strengths(ranking, systems: list[str]) -> np.ndarray:
    return np.array([ranking.system(name).strength for name in systems])


def indexed(rows: list[dict]) -> tuple[list[str], list[tuple[int, int, float]]]:
    """The systems in order of first appearance and each comparison as (a, b, value to a)."""
    names: dict[str, int] = {}
    out = []
    for row in rows:
        a, b = (names.setdefault(row[k], len(names)) for k in ("model_a", "model_b"))
        out.append((a, b, {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[row["winner"]]))
    return list(names), out


def test_half_ties_equal_choix(dataset: list[dict]) -> None:
    names, comparisons = indexed(dataset)
    doubled = []  # a win twice, a tie once each way: choix's data for half-wins
    for a, b, value in comparisons:
        doubled += [(a, b), (a, b)] if value == 1.0 else [(b, a), (b, a)] if value == 0.0 else [(a, b), (b, a)]
    reference = choix.opt_pairwise(len(names), doubled, alpha=0, tol=1e-12)
    reference -= reference.mean()
    ours = strengths(ranked(dataset, ties="half"), names)
    assert np.max(np.abs(ours - reference)) < TOLERANCE
    also = choix.ilsr_pairwise(len(names), doubled, alpha=0, tol=1e-13, max_iter=100_000)
    assert np.max(np.abs(ours - (also - also.mean()))) < TOLERANCE


@pytest.mark.parametrize("prior", [0.05, 1.0])
def test_prior_equals_choix_alpha(dataset: list[dict], prior: float) -> None:
    names, comparisons = indexed(dataset)
    doubled = []
    for a, b, value in comparisons:
        doubled += [(a, b), (a, b)] if value == 1.0 else [(b, a), (b, a)] if value == 0.0 else [(a, b), (b, a)]
    reference = choix.opt_pairwise(len(names), doubled, alpha=2 * prior, tol=1e-12)  # doubled data: doubled alpha
    assert np.max(np.abs(strengths(ranked(dataset, ties="half", prior=prior), names) - reference)) < TOLERANCE


def davidson_reference(
    systems: int, comparisons: list[tuple[int, int, float]], x: np.ndarray | None = None
) -> tuple[np.ndarray, float, np.ndarray]:
    """Davidson's model by scipy.optimize (BFGS, then Nelder-Mead and BFGS again to polish) on the free strengths
    (the last minus the sum of the others), log nu and the covariates' coefficients."""
    a = np.array([c[0] for c in comparisons])
    b = np.array([c[1] for c in comparisons])
    value = np.array([c[2] for c in comparisons])
    covariates = np.zeros((len(comparisons), 0)) if x is None else x
    free = systems - 1

    def negative_ll(params: np.ndarray) -> float:
        theta = np.append(params[:free], -params[:free].sum())
        eta, beta = params[free], params[free + 1 :]
        half = (theta[a] - theta[b] + covariates @ beta) / 2
        norm = np.logaddexp(np.logaddexp(half, -half), eta)
        ll = np.where(value == 1.0, half, np.where(value == 0.0, -half, eta)) - norm
        return -float(ll.sum())

    start = np.zeros(systems + covariates.shape[1])
    result = minimize(negative_ll, start, method="BFGS", options={"gtol": 1e-10, "xrtol": 1e-14})
    result = minimize(negative_ll, result.x, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-13})
    result = minimize(negative_ll, result.x, method="BFGS", options={"gtol": 1e-11})
    theta = np.append(result.x[:free], -result.x[:free].sum())
    return theta, math.exp(result.x[free]), result.x[free + 1 :]


def test_davidson_equals_scipy_fit(dataset: list[dict]) -> None:
    names, comparisons = indexed(dataset)
    if not any(value == 0.5 for _, _, value in comparisons):
        ranking = ranked(dataset, ties="davidson")  # no tie: nu = 0, plain Bradley-Terry
        assert ranking.tie_parameter.value == 0.0
        assert np.allclose(strengths(ranking, names), strengths(ranked(dataset, ties="half"), names), atol=1e-9)
        return
    theta, nu, _ = davidson_reference(len(names), comparisons)
    ranking = ranked(dataset, ties="davidson")
    assert np.max(np.abs(strengths(ranking, names) - theta)) < TOLERANCE
    assert abs(ranking.tie_parameter.value - nu) < TOLERANCE
    lengths = np.array([[len(r["output"]), len(r["expected"])] for r in dataset], float)
    x = ((lengths[:, 0] - lengths[:, 1]) / lengths.sum(axis=1))[:, None]
    theta, nu, beta = davidson_reference(len(names), comparisons, x)
    styled = ranked(dataset, ties="davidson", style=["length"])
    assert np.max(np.abs(strengths(styled, names) - theta)) < TOLERANCE
    assert abs(styled.tie_parameter.value - nu) < TOLERANCE and abs(styled.covariates[0].value - beta[0]) < TOLERANCE


def test_style_control_equals_statsmodels(dataset: list[dict]) -> None:
    """Half-win ties are a binomial GLM with a proportion outcome: statsmodels fits the same likelihood."""
    sm = pytest.importorskip("statsmodels.api", reason="statsmodels' GLM needs pandas (an optional extra)")
    names, comparisons = indexed(dataset)
    n = len(names)
    design = np.zeros((len(comparisons), n - 1 + 1))
    for row, ((a, b, _), data) in enumerate(zip(comparisons, dataset)):
        for system, sign in ((a, 1.0), (b, -1.0)):
            if system:  # system 0 is the reference (strength 0) of the GLM
                design[row, system - 1] += sign
        la, lb = len(data["output"]), len(data["expected"])
        design[row, -1] = (la - lb) / (la + lb)
    y = np.array([c[2] for c in comparisons])
    result = sm.GLM(y, design, family=sm.families.Binomial()).fit(tol=1e-13)
    theta = np.append(0.0, result.params[:-1])
    ranking = ranked(dataset, ties="half", style=["length"])
    assert np.max(np.abs(strengths(ranking, names) - (theta - theta.mean()))) < TOLERANCE
    assert abs(ranking.covariates[0].value - result.params[-1]) < TOLERANCE
    assert ranking.covariates[0].rating_points == pytest.approx(result.params[-1] * SCALE)
    without = ranked(dataset, ties="half")
    assert [s.unstyled for s in ranking.systems] == [without.system(s.system).rating for s in ranking.systems]


def test_bootstrap_is_reproducible_and_brackets_the_fit() -> None:
    rows = generate(*DATASETS["5x120-ties"])
    first = ranked(rows, resamples=200, seed=7)
    again = ranked(rows, resamples=200, seed=7)
    other = ranked(rows, resamples=200, seed=8)
    assert first.to_dict() == again.to_dict()
    assert [s.low for s in first.systems] != [s.low for s in other.systems]
    for entry in first.systems:
        assert entry.low <= entry.rating <= entry.high
    assert first.bootstrap["used"] + first.bootstrap["left_out"] == 200
    low, high = first.tie_parameter.low, first.tie_parameter.high
    assert low <= first.tie_parameter.value <= high


def test_bootstrap_with_style_brackets_the_coefficient() -> None:
    rows = generate(*DATASETS["5x120-ties"])
    ranking = ranked(rows, resamples=100, style=["length", "bold"], ties="half")
    length, bold = ranking.covariates
    assert length.low < length.value < length.high
    assert bold.value is None and "never differ" in bold.reason  # no bold anywhere: not estimable
    assert all(s.unstyled_low is not None for s in ranking.systems)


def test_anchor_moves_the_scale_only() -> None:
    rows = generate(*DATASETS["5x120-ties"])
    mean = ranked(rows)
    anchored = ranked(rows, anchor="m0", anchor_rating=1500)
    assert anchored.system("m0").rating == pytest.approx(1500)
    gaps = [s.rating - mean.system("m0").rating for s in mean.systems]
    assert [s.rating - 1500 for s in anchored.systems] == pytest.approx(gaps)
    assert sum(s.rating for s in mean.systems) / len(mean.systems) == pytest.approx(1000)
    with pytest.raises(ConfigError, match="'m9' is not a system"):
        ranked(rows, anchor="m9")


def rows_of(*games: tuple[str, str, str]) -> list[dict]:
    return [{"model_a": a, "model_b": b, "winner": w, "question_id": i} for i, (a, b, w) in enumerate(games)]


def test_a_system_that_won_everything_has_no_finite_strength() -> None:
    rows = rows_of(("x", "y", "a"), ("y", "x", "a"), ("x", "z", "b"), ("z", "y", "tie"), ("top", "x", "a"))
    rows += rows_of(("top", "y", "a"), ("z", "top", "b"), ("x", "y", "b"))
    ranking = ranked(rows, resamples=50)
    top = ranking.system("top")
    assert top.rating is None and top.rank is None and "+infinity" in top.reason and top.comparisons == 3
    assert {s.system for s in ranking.systems if s.rating is not None} == {"x", "y", "z"}
    assert ranking.system("top").win_rate == 1.0
    regularised = ranked(rows, prior=0.1)
    assert regularised.systems[0].system == "top" and regularised.systems[0].rating is not None


def test_two_systems_one_of_which_won_everything_rank_nothing() -> None:
    ranking = ranked(rows_of(("x", "y", "a"), ("y", "x", "b")), resamples=20)
    assert ranking.system("x").rating is None and "won all its 2 comparisons" in ranking.system("x").reason
    assert ranking.system("y").rating is None and "lost all its 2 comparisons" in ranking.system("y").reason
    assert "no rating" in ranking.table()


def test_davidson_without_a_finite_maximum_says_so() -> None:
    """Wins and a tie one way only: the half rule's maximum is finite (x has 2.5 of 3), Davidson's is not (the
    tie parameter grows with the gap)."""
    rows = rows_of(("x", "y", "a"), ("y", "x", "b"), ("x", "y", "tie"))
    half = ranked(rows, ties="half")
    assert half.system("x").strength - half.system("y").strength == pytest.approx(math.log(5))
    davidson = ranked(rows, ties="davidson")
    assert davidson.system("x").rating is None and "no finite maximum" in davidson.system("x").reason


def test_a_disconnected_graph_ranks_its_largest_component() -> None:
    rows = rows_of(("x", "y", "a"), ("y", "x", "a"), ("y", "z", "a"), ("z", "y", "a"), ("x", "z", "tie"))
    rows += rows_of(("p", "q", "a"), ("q", "p", "a"))
    ranking = ranked(rows)
    assert ranking.components == [["x", "y", "z"], ["p", "q"]]
    for name in ("p", "q"):
        assert ranking.system(name).rating is None and "p, q" in ranking.system(name).reason
    assert "2 components" in ranking.table()


def test_json_has_no_nan_and_names_its_format() -> None:
    rows = rows_of(("x", "y", "a"), ("y", "x", "tie"), ("x", "y", "b"), ("only", "x", "a"))
    data = ranked(rows, resamples=20).to_dict()
    text = json.dumps(data, allow_nan=False)
    assert data["format"] == "scorers-ranking" and data["format_version"] == 1
    assert json.loads(text)["win_matrix"]["systems"] == ["x", "y", "only"]
    assert data["win_matrix"]["wins"][0][1] == 1 and data["win_matrix"]["ties"][0][1] == 1


@pytest.mark.parametrize(
    ("spelling", "value"), [("A", 1.0), ("model_b", 0.0), ("Tie (bothbad)", 0.5), ("both_bad", 0.5), (" b ", 0.0)]
)
def test_winner_spellings(spelling: str, value: float) -> None:
    ranking = ranked(rows_of(("x", "y", spelling), ("x", "y", "tie")))
    assert ranking.counts["comparisons"] == 2
    wins = ranking.wins[0][1] + ranking.ties[0][1] / 2
    assert wins == value + 0.5


def test_an_unknown_winner_names_row_and_field() -> None:
    with pytest.raises(DataError, match=r"rows: row 2: winner field 'winner' is 'model_c'"):
        ranked(rows_of(("x", "y", "a"), ("x", "y", "model_c")))


def judged(*verdicts: tuple[str, str, list[str] | None, float]) -> list[dict]:
    """Results records of a swapped pairwise judge: (system A, system B, choices of both orders, score)."""
    records = []
    for i, (a, b, choices, score) in enumerate(verdicts):
        record = {"input": f"p{i}", "model_a": a, "model_b": b, "scores": {"Pref": score}}
        if choices is not None:
            record["metadata_scores"] = {"Pref": {"winner": "tie", "choices": choices}}
        records.append(record)
    return records


SWAPPED = judged(
    ("x", "y", ["A", "B"], 1.0),  # A first, then B second: x won both orders
    ("x", "y", ["A", "A"], 0.5),  # the first position won twice: the orders disagree
    ("y", "x", ["B", "A"], 0.0),  # x won both
    ("y", "x", ["tie", "tie"], 0.5),
)


@pytest.mark.parametrize(
    ("swap", "comparisons", "x_wins", "ties"), [("tie", 4, 2, 2), ("drop", 3, 2, 1), ("keep", 8, 5, 2)]
)
def test_swap_disagreements_counted_as_asked(swap: str, comparisons: int, x_wins: int, ties: int) -> None:
    ranking = rank(SWAPPED, swap=swap, resamples=0, ties="half")
    assert ranking.counts["swap"] == {"swapped": 4, "disagreed": 1, "counted_as": swap}
    assert ranking.counts["comparisons"] == comparisons
    assert ranking.wins[0][1] == x_wins and ranking.ties[0][1] == ties
    assert "1 of 4 swapped verdicts disagreed" in ranking.table()


def test_a_system_whose_rows_were_all_left_out_is_listed_without_a_rating() -> None:
    records = SWAPPED + [{"input": "p8", "model_a": "x", "model_b": "new", "scores": {"Pref": None}}]
    entry = rank(records, resamples=0).system("new")
    assert entry.rating is None and entry.comparisons == 0 and entry.reason.startswith("no comparison: every row")


def test_judge_found_by_metadata_and_failed_rows_left_out() -> None:
    records = SWAPPED + [{"input": "p9", "model_a": "x", "model_b": "y", "scores": {"Pref": None}}]
    records = [{**r, "scores": {**r["scores"], "Other": 0.3}} for r in records]
    ranking = rank(records, resamples=0)
    assert ranking.verdicts == "judge Pref"
    assert ranking.counts["left_out"] == {"the judge failed or gave no score": 1}
    with pytest.raises(ConfigError, match="no scorer 'Nope'"):
        rank(records, scorer="Nope")


def test_scores_without_metadata() -> None:
    records = [{k: v for k, v in r.items() if k != "metadata_scores"} for r in SWAPPED]
    records += [{"input": "p7", "model_a": "x", "model_b": "y", "scores": {"Pref": 0.75}}]
    ranking = rank(records, scorer="Pref", resamples=0, ties="half", swap="keep")
    assert ranking.counts["without_metadata"] == 5
    assert ranking.counts["swap"]["swapped"] == 1  # only 0.75 shows both orders: a win and a tie
    with pytest.raises(ConfigError, match="found none"):
        rank(records, resamples=0)


def test_resamples_drawn_in_chunks_equal_one_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large data draws the resamples a chunk at a time: the same draws, so the same intervals."""
    from scorers.stats import ranking as module

    rows = generate(*DATASETS["5x120-ties"])
    whole = ranked(rows, resamples=50, seed=4).to_dict()
    monkeypatch.setattr(module, "_DRAWN_PROMPTS", 7 * 120)  # 7 resamples a chunk
    assert ranked(rows, resamples=50, seed=4).to_dict() == whole
