"""Tests that call DeepEval's ``assert_test`` with our metrics; tests/adapters/test_deepeval.py copies this file
into a temporary folder and runs it with pytest in DeepEval's venv (it is not part of our own suite, which collects
it only for doctests, without DeepEval: so DeepEval is imported in ``check``)."""

from typing import Any

from scorers.adapters.deepeval import metric


def check(metrics: list, **case: Any) -> None:
    from deepeval import assert_test
    from deepeval.test_case import LLMTestCase

    assert_test(LLMTestCase(**case), metrics)


def test_close_enough():
    check(
        [metric("Levenshtein", threshold=0.7)], input="Capital of Italy?", actual_output="Roma", expected_output="Rome"
    )


def test_too_far():
    check(
        [metric("Levenshtein", threshold=0.7), metric("ExactMatch")],
        input="Largest planet?",
        actual_output="Saturn",
        expected_output="Jupiter",
    )


def test_no_expected_output():
    check([metric("ExactMatch")], input="Capital of Italy?", actual_output="Roma")
