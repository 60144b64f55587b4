"""Tests that call DeepEval's ``assert_test`` with our metrics; tests/adapters/test_deepeval.py copies this file
into a temporary folder and runs it with pytest in DeepEval's venv (it is not part of our own suite)."""
from deepeval import assert_test
from deepeval.test_case import LLMTestCase

from scorers.adapters.deepeval import metric


def test_close_enough():
    assert_test(LLMTestCase(input="Capital of Italy?", actual_output="Roma", expected_output="Rome"),
                [metric("Levenshtein", threshold=0.7)])


def test_too_far():
    assert_test(LLMTestCase(input="Largest planet?", actual_output="Saturn", expected_output="Jupiter"),
                [metric("Levenshtein", threshold=0.7), metric("ExactMatch")])


def test_no_expected_output():
    assert_test(LLMTestCase(input="Capital of Italy?", actual_output="Roma"), [metric("ExactMatch")])
