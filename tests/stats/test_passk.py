"""pass@k: exact (math.comb in fractions) for n up to 200, equal to the HumanEval reference to 1e-12, grouped by
task with tasks of fewer than k samples unscored (never 1.0), seeded bootstrap intervals, paired differences."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from scorers.errors import ConfigError, DataError
from scorers.stats.passk import difference, pass_at_k, read_samples, samples_of, summarize


def reference(n: int, c: int, k: int) -> float:
    """The HumanEval paper's numpy form (Chen et al. 2021, Figure 3), written here."""
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def brute_force(n: int, c: int, k: int) -> Fraction:
    """The share of the k-subsets of n samples (c passing) that hold a passing one, counted."""
    from itertools import combinations

    subsets = list(combinations(range(n), k))
    return Fraction(sum(any(i < c for i in subset) for subset in subsets), len(subsets))


CASES = [
    (n, c, k)
    for n in (1, 2, 5, 10, 50, 100, 200)
    for c in sorted({0, 1, n // 3, n // 2, n - 1, n})
    for k in sorted({1, 2, 5, 10, 100, n})
    if k <= n and c >= 0
]


@pytest.mark.parametrize("n,c,k", CASES)
def test_equals_the_closed_form_in_exact_integers(n, c, k):
    assert pass_at_k(n, c, k) == 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize("n,c,k", CASES)
def test_equals_the_humaneval_reference_to_1e_12(n, c, k):
    assert abs(float(pass_at_k(n, c, k)) - reference(n, c, k)) <= 1e-12


@pytest.mark.parametrize("n,c,k", [(n, c, k) for n in range(1, 8) for c in range(n + 1) for k in range(1, n + 1)])
def test_equals_counting_the_subsets(n, c, k):
    assert pass_at_k(n, c, k) == brute_force(n, c, k)


def test_exact_where_the_float_product_loses_digits():
    """Near 1 the product form rounds; the exact value's complement is a ratio of integers, read to the last bit."""
    value = pass_at_k(1000, 500, 400)
    assert 1 - value == Fraction(math.comb(500, 400), math.comb(1000, 400)) and 0 < 1 - value < 1e-100


@pytest.mark.parametrize("n,c,k", [(0, 0, 1), (5, 6, 1), (5, 1, 0), (5, 1, 6), (5, -1, 1)])
def test_impossible_counts_are_refused(n, c, k):
    with pytest.raises(ConfigError, match="pass@k needs"):
        pass_at_k(n, c, k)


def _samples(tasks: dict[str, tuple[int, int]]) -> list[tuple[str, bool]]:
    return [(task, i < c) for task, (n, c) in tasks.items() for i in range(n)]


def test_the_summary_is_the_mean_over_tasks_and_short_tasks_are_unscored():
    samples = _samples({"a": (10, 3), "b": (10, 0), "short": (2, 2)}) + [("a", None)]
    summary = summarize(samples, k=5, resamples=100)
    expected = (pass_at_k(10, 3, 5) + pass_at_k(10, 0, 5)) / 2
    assert summary.value == float(expected) and summary.tasks == 2
    assert summary.unscored == {"short": 2} and summary.missing == 1 and "short" not in summary.per_task


def test_no_task_with_k_samples_is_no_value_not_one():
    summary = summarize(_samples({"a": (2, 2), "b": (3, 3)}), k=5)
    assert (summary.value, summary.low, summary.high, summary.tasks) == (None, None, None, 0)


def test_the_interval_is_seeded_and_holds_the_value():
    rng = random.Random(3)
    tasks = {f"t{i}": (10, rng.randint(0, 10)) for i in range(40)}
    first, again = (summarize(_samples(tasks), k=3, seed=7) for _ in range(2))
    other = summarize(_samples(tasks), k=3, seed=8)
    assert first == again and (first.low, first.high) != (other.low, other.high)
    assert first.low <= first.value <= first.high


def test_the_paired_difference_is_over_shared_tasks():
    base = summarize(_samples({"a": (4, 0), "b": (4, 4), "c": (4, 2), "only": (4, 4)}), k=1)
    system = summarize(_samples({"a": (4, 4), "b": (4, 4), "c": (4, 2)}), k=1)
    result = difference(base, system, resamples=500, seed=1)
    assert result.tasks == 3 and result.difference == pytest.approx(1 / 3)
    assert result.low <= result.difference <= result.high and 0 < result.p_value <= 1
    same = difference(base, base, resamples=100)
    assert (same.difference, same.p_value) == (0.0, 1.0)


def test_samples_from_results_records(tmp_path):
    records = [
        {"task": "a", "scores": {"CodeExecution": 1.0}},
        {"task": "a", "scores": {"CodeExecution": 0.5}},
        {"task": "b", "scores": {"CodeExecution": None}, "errors": {"CodeExecution": "refused"}},
    ]
    assert samples_of(records, scorer=None, task_field="task") == (
        "CodeExecution",
        [("a", True), ("a", False), ("b", None)],
    )
    assert samples_of(records, scorer="CodeExecution", task_field="task", threshold=0.5)[1][1] == ("a", True)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert read_samples(str(path), scorer=None, task_field="task")[1][0] == ("a", True)
    with pytest.raises(DataError, match="no task field 'problem'"):
        samples_of(records, scorer=None, task_field="problem")
    with pytest.raises(ConfigError, match="no scores of 'BLEU'"):
        samples_of(records, scorer="BLEU", task_field="task")


def _results(path, passes):
    path.write_text("".join(json.dumps({"task": t, "scores": {"CodeExecution": float(p)}}) + "\n" for t, p in passes))
    return str(path)


def test_the_command_prints_each_files_pass_at_k_and_the_paired_difference(tmp_path, capsys):
    from scorers.cli import main

    a = _results(tmp_path / "a.jsonl", [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 0), ("t3", 1)])
    b = _results(tmp_path / "b.jsonl", [("t1", 1), ("t1", 1), ("t2", 0), ("t2", 1), ("t3", 1)])
    assert main(["passk", a, b, "-k", "1", "-k", "2", "--resamples", "200", "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    first, second = (run["pass@k"] for run in report["files"])
    assert (first["1"]["value"], second["1"]["value"]) == (0.5, pytest.approx(2.5 / 3))  # t3: 1 sample, k=1
    assert first["2"]["unscored"] == {"t3": 1} and (first["2"]["tasks"], first["2"]["value"]) == (2, 0.5)
    assert report["differences"][0]["pass@k"]["1"]["difference"] == pytest.approx(1 / 3)
    assert report["differences"][0]["pass@k"]["2"]["difference"] == 0.5 and "pass@2 0.5000" in err


@pytest.mark.parametrize(
    "argv,message", [(["-k", "0"], "k must be a positive integer"), (["--task-field", "x"], "no task field")]
)
def test_the_command_refuses_bad_options_and_files_with_exit_2(tmp_path, capsys, argv, message):
    from scorers.cli import main

    path = _results(tmp_path / "a.jsonl", [("t1", 1)])
    assert main(["passk", path, *argv]) == 2
    assert message in capsys.readouterr().err
