"""The pytest adapter: ``assert_score`` in process, and the ``scorers`` plugin through its real ``pytest11`` entry point.

The plugin tests run ``python -m pytest`` as a subprocess on a temporary test suite, so they exercise the
installed entry point exactly as a user's project would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import scorers
from scorers import Scorer
from scorers.adapters import assert_score, pytest_plugin
from scorers.adapters.pytest_plugin import recording, summarize
from scorers.errors import ConfigError, ScorerInputError, UnknownScorerError
from scorers.testing import LoopbackLLM, Reply

RATIONALE = "The submission names Lyon, which contradicts the expert answer Paris."


class Abstains(Scorer):
    """Skips every example (score None)."""

    def _score(self, *, output: Any, **_: Any) -> scorers.Score:
        return self.make_score(None, reason="not applicable")


# ------------------------------------------------------------------ assert_score in process
def test_passing_call_returns_the_score_and_is_recorded() -> None:
    with recording() as calls:
        score = assert_score("Levenshtein", 0.5, output="kitten", expected="sitting")
        same = assert_score(scorers.get("ExactMatch"), 1.0, output="Paris", expected="Paris")  # an instance
    assert score.name == "Levenshtein" and score.score == pytest.approx(0.5714285714285714)
    assert same.score == 1.0
    assert calls == [
        {"nodeid": calls[0]["nodeid"], "scorer": "Levenshtein", "score": score.score, "threshold": 0.5, "passed": True},
        {"nodeid": calls[0]["nodeid"], "scorer": "ExactMatch", "score": 1.0, "threshold": 1.0, "passed": True},
    ]
    assert calls[0]["nodeid"].endswith("test_pytest_plugin.py::test_passing_call_returns_the_score_and_is_recorded")


def test_a_score_equal_to_the_threshold_passes() -> None:
    with recording():
        assert assert_score("ExactMatch", 0, output="a", expected="b").score == 0.0
        assert assert_score("ExactMatch", 1, output="a", expected="a").score == 1.0


def test_failing_call_message_names_scorer_score_threshold_and_fields() -> None:
    with recording() as calls, pytest.raises(AssertionError) as info:
        assert_score("Levenshtein", 0.9, output="kitten", expected="sitting", input="spell it")
    assert str(info.value).splitlines() == [
        "Levenshtein scored 0.5714285714285714, below the threshold 0.9",
        "  output: 'kitten'",
        "  expected: 'sitting'",
        "  input: 'spell it'",
    ]
    assert calls[0]["passed"] is False and calls[0]["score"] == pytest.approx(0.5714285714285714)


def test_long_fields_are_truncated_in_the_message() -> None:
    long_output = "word " * 500
    with recording(), pytest.raises(AssertionError) as info:
        assert_score("ExactMatch", 1.0, output=long_output, expected="short")
    (output_line,) = [line for line in str(info.value).splitlines() if line.startswith("  output:")]
    assert len(output_line) < 300 and output_line.endswith(f"... ({len(repr(long_output))} characters)")
    assert "  expected: 'short'" in str(info.value)


@pytest.mark.parametrize(
    ("name", "params", "fields", "lines"),
    [
        (
            "ToolCallMatch",
            {},
            {
                "output": [{"name": "search", "arguments": {"q": "Paris", "n": 3}}, {"name": "book"}],
                "expected": [{"name": "search", "arguments": {"q": "paris", "n": 3}}],
            },
            [
                "  argument 'q' of search (expected call 0, actual call 0) disagrees under exact: expected \"paris\", "
                'actual "Paris"',
                "  actual call 1 unmatched: book({})",
            ],
        ),
        (
            "ToolCallMatch",
            {},
            {"output": [{"name": "f", "arguments": {}}], "expected": [{"name": "f", "arguments": {"a": 1}}]},
            ["  argument 'a' of f (expected call 0, actual call 0) disagrees under exact: expected 1, actual: missing"],
        ),
        (
            "TrajectoryMatch",
            {"mode": "unordered"},
            {"output": [{"name": "f", "arguments": {"a": 2}}], "expected": [{"name": "f", "arguments": {"a": 1}}]},
            [
                "  parts at expected_call 0: no actual call matches it",
                '  expected call 0 unmatched: f({"a": 1})',
                '  actual call 0 unmatched: f({"a": 2})',
            ],
        ),
        (
            "ToolCallValid",
            {"tools": [{"name": "f", "parameters": {"required": ["a"]}}]},
            {"output": [{"name": "f", "arguments": {}}]},
            ["  call 0 invalid: f({}): the arguments: 'a' is a required property"],
        ),
        (
            "ToolCallF1",
            {},
            {"output": [{"name": "f"}, {"name": "g"}], "expected": "f, h"},
            ["  missing tool names: h", "  extra tool names: g"],
        ),
    ],
)
def test_a_tool_call_scorers_failure_says_which_argument_or_call_disagreed(
    name: str, params: dict[str, Any], fields: dict[str, Any], lines: list[str]
) -> None:
    with recording(), pytest.raises(AssertionError) as info:
        assert_score(scorers.get(name, **params), 1.0, **fields)
    message = str(info.value).splitlines()
    assert message[0].startswith(f"{name} scored ")
    assert message[1 : 1 + len(lines)] == lines


def test_a_skipped_example_fails() -> None:
    with recording() as calls, pytest.raises(AssertionError) as info:
        assert_score(Abstains(), 0.0, output="x")
    assert str(info.value).startswith(
        "Abstains skipped this example (score None), so it cannot reach the threshold 0.0"
    )
    assert calls == [
        {"nodeid": calls[0]["nodeid"], "scorer": "Abstains", "score": None, "threshold": 0.0, "passed": False}
    ]
    assert summarize(calls)["Abstains"] == {
        "calls": 1,
        "mean": None,
        "min": None,
        "max": None,
        "failures": 1,
        "skipped": 1,
        "errors": 0,
    }


def test_bad_input_propagates_as_the_scorer_error_and_is_recorded() -> None:
    with recording() as calls, pytest.raises(ScorerInputError) as info:
        assert_score("Levenshtein", 0.5, output=None, expected="sitting")
    assert info.value.field == "output" and not isinstance(info.value, AssertionError)
    assert calls[0]["error"] == {
        "type": "ScorerInputError",
        "message": "Levenshtein: field 'output' is required but was None",
    }
    assert calls[0]["passed"] is False and summarize(calls)["Levenshtein"]["errors"] == 1


@pytest.mark.parametrize("threshold", [-0.1, 1.5, float("nan"), float("inf")])
def test_threshold_outside_0_1_is_a_value_error(threshold: float) -> None:
    with recording() as calls, pytest.raises(ValueError, match=r"threshold must be a number in \[0, 1\]"):
        assert_score("ExactMatch", threshold, output="a", expected="a")
    assert calls == []  # nothing was scored


@pytest.mark.parametrize("threshold", ["0.5", None, True])
def test_threshold_that_is_not_a_number_is_a_type_error(threshold: Any) -> None:
    with recording(), pytest.raises(TypeError, match="threshold must be a number"):
        assert_score("ExactMatch", threshold, output="a", expected="a")


def test_scorer_must_be_a_scorer_or_a_registered_name() -> None:
    with recording(), pytest.raises(UnknownScorerError, match="no scorer named 'Levenstein'"):
        assert_score("Levenstein", 0.5, output="a", expected="a")
    with recording(), pytest.raises(ConfigError, match="not a scorer: <built-in function len>"):
        assert_score(len, 0.5, output="a")  # type: ignore[arg-type]


def test_recording_nests_and_restores() -> None:
    with recording() as outer:
        assert_score("ExactMatch", 0.0, output="a", expected="a")
        with recording() as inner:
            assert_score("ExactMatch", 0.0, output="b", expected="b")
        assert_score("ExactMatch", 0.0, output="c", expected="c")
    assert (len(outer), len(inner)) == (2, 1)
    assert pytest_plugin._stack[-1:] != [outer]


def test_judge_failure_shows_choice_and_rationale(llm_env: LoopbackLLM) -> None:
    llm_env.default = Reply.choice("D", reasons=RATIONALE)
    judge = scorers.get("Factuality", model="gpt-4o-mini")
    with recording() as calls, pytest.raises(AssertionError) as info:
        assert_score(judge, 0.5, input="What is the capital of France?", output="Lyon", expected="Paris")
    lines = str(info.value).splitlines()
    assert lines[:3] == ["Factuality scored 0.0, below the threshold 0.5", "  choice: 'D'", f"  rationale: {RATIONALE}"]
    assert "  output: 'Lyon'" in lines
    assert calls[0]["choice"] == "D" and calls[0]["rationale"] == RATIONALE


# ------------------------------------------------------------------ the plugin, through the real entry point
def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    (entry,) = [ep for ep in metadata.entry_points(group="pytest11") if ep.name == "scorers"]
    assert entry.value == "scorers.adapters.pytest_plugin"
    assert entry.load() is pytest_plugin


def test_importing_assert_score_does_not_import_pytest() -> None:
    code = (
        "import sys; from scorers.adapters import assert_score; "
        "assert not {'pytest', '_pytest'} & set(sys.modules), sorted(sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def run_pytest(suite: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m pytest`` on ``suite`` (a folder with its own pytest.ini), with a clean environment."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "OPENAI_", "SCORERS_")) and k != "PYTHONPATH"
    }
    clean["SCORERS_CACHE_DIR"] = str(suite / ".llm-cache")
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        capture_output=True,
        text=True,
        cwd=suite,
        env=clean,
        timeout=300,
    )


def make_suite(tmp_path: Path, source: str) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\n")
    (suite / "test_suite.py").write_text(textwrap.dedent(source))
    return suite


SUITE = """
    from scorers import Scorer
    from scorers.adapters import assert_score


    class Abstains(Scorer):
        def _score(self, *, output, **_):
            return self.make_score(None)


    def test_exact():
        assert_score("ExactMatch", 1.0, output="Paris", expected="Paris")


    def test_close_enough():
        assert_score("Levenshtein", 0.5, output="kitten", expected="sitting")


    def test_too_far():
        assert_score("Levenshtein", 0.9, output="kitten", expected="sitting")


    def test_abstains():
        assert_score(Abstains(), 0.5, output="x")


    def test_bad_input():
        assert_score("Levenshtein", 0.5, output=None, expected="sitting")
"""


@pytest.mark.slow
def test_plugin_summary_table_and_json_report(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, SUITE)
    result = run_pytest(suite, "--scorers-report", "reports/scores.json")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "3 failed, 2 passed" in out
    # the failing assertion's message, shown at the test's own line
    assert "E       AssertionError: Levenshtein scored 0.5714285714285714, below the threshold 0.9" in out
    assert "E         output: 'kitten'" in out and "E         expected: 'sitting'" in out
    assert "E       AssertionError: Abstains skipped this example (score None)" in out
    assert re.search(
        r"\nE +scorers\.errors\.ScorerInputError: Levenshtein: field 'output' is required but was None", out
    )
    assert '>       assert_score("Levenshtein", 0.9, output="kitten", expected="sitting")' in out

    # the terminal summary: one row per scorer, in first-call order
    section = out[out.index("scorers: assert_score") :]
    table = [line.split() for line in section.splitlines()[1:5]]
    assert table == [
        ["scorer", "calls", "mean", "min", "failures", "skipped", "errors"],
        ["ExactMatch", "1", "1.000", "1.000", "0", "0", "0"],
        ["Levenshtein", "3", "0.571", "0.571", "2", "0", "1"],
        ["Abstains", "1", "-", "-", "1", "1", "0"],
    ]
    path = suite / "reports" / "scores.json"
    assert f"scorers report: {path}" in section

    report = json.loads(path.read_text())
    assert report["scorers_version"] == scorers.__version__
    lev = 0.5714285714285714
    assert report["calls"] == [
        {"nodeid": "test_suite.py::test_exact", "scorer": "ExactMatch", "score": 1.0, "threshold": 1.0, "passed": True},
        {
            "nodeid": "test_suite.py::test_close_enough",
            "scorer": "Levenshtein",
            "score": lev,
            "threshold": 0.5,
            "passed": True,
        },
        {
            "nodeid": "test_suite.py::test_too_far",
            "scorer": "Levenshtein",
            "score": lev,
            "threshold": 0.9,
            "passed": False,
        },
        {
            "nodeid": "test_suite.py::test_abstains",
            "scorer": "Abstains",
            "score": None,
            "threshold": 0.5,
            "passed": False,
        },
        {
            "nodeid": "test_suite.py::test_bad_input",
            "scorer": "Levenshtein",
            "score": None,
            "threshold": 0.5,
            "passed": False,
            "error": {"type": "ScorerInputError", "message": "Levenshtein: field 'output' is required but was None"},
        },
    ]
    assert report["summary"] == {
        "ExactMatch": {"calls": 1, "mean": 1.0, "min": 1.0, "max": 1.0, "failures": 0, "skipped": 0, "errors": 0},
        "Levenshtein": {"calls": 3, "mean": lev, "min": lev, "max": lev, "failures": 2, "skipped": 0, "errors": 1},
        "Abstains": {"calls": 1, "mean": None, "min": None, "max": None, "failures": 1, "skipped": 1, "errors": 0},
    }


@pytest.mark.slow
def test_without_the_option_the_table_is_printed_and_no_report_written(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, SUITE)
    result = run_pytest(suite, "-k", "exact or close")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "scorers: assert_score" in result.stdout and "scorers report:" not in result.stdout
    assert not list(suite.rglob("*.json"))


@pytest.mark.slow
def test_plugin_is_inert_when_no_test_calls_assert_score(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        """
        import scorers


        def test_plain():
            assert scorers.get("ExactMatch")(output="a", expected="a").score == 1.0


        def test_fails():
            assert 1 == 2
    """,
    )
    with_plugin = run_pytest(suite, "--scorers-report", "report.json")
    without_plugin = run_pytest(suite, "-p", "no:scorers")
    assert with_plugin.returncode == without_plugin.returncode == 1

    def normalise(text: str) -> str:
        return re.sub(r"in [0-9.]+s", "in Ns", text)

    assert normalise(with_plugin.stdout) == normalise(without_plugin.stdout)
    assert "scorers" not in with_plugin.stdout.replace("import scorers", "").replace("scorers.get", "")
    assert with_plugin.stderr == without_plugin.stderr == ""
    assert not list(suite.rglob("*.json"))  # no report


@pytest.mark.slow
def test_the_option_is_listed_in_help(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, "")
    result = run_pytest(suite, "--help")
    assert result.returncode == 0 and "--scorers-report=PATH" in result.stdout


@pytest.mark.slow
def test_judge_over_http_fails_with_its_rationale(tmp_path: Path, llm_server: LoopbackLLM, fake_api_key: str) -> None:
    llm_server.default = Reply.choice("D", reasons=RATIONALE)
    suite = make_suite(
        tmp_path,
        """
        import scorers
        from scorers.adapters import assert_score

        QUESTION = "What is the capital of France?"


        def test_factuality_by_name():
            assert_score("Factuality", 0.5, input=QUESTION, output="Lyon", expected="Paris")


        def test_classifier_instance():
            judge = scorers.LLMClassifier(
                name="Polite", prompt_template="Is this reply polite? {{output}}",
                choice_scores={"Y": 1.0, "N": 0.0}, model="gpt-4o-mini")
            assert_score(judge, 1.0, output="Go away.")
    """,
    )
    llm_server.script(Reply.choice("N", reasons="The reply is curt."), match="Is this reply polite?")
    result = run_pytest(
        suite,
        "--scorers-report",
        "report.json",
        env={"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": fake_api_key, "SCORERS_MODEL": "gpt-4o-mini"},
    )
    out = result.stdout
    assert result.returncode == 1 and "2 failed" in out, out + result.stderr
    assert "E       AssertionError: Factuality scored 0.0, below the threshold 0.5" in out
    assert "E         choice: 'D'" in out and f"E         rationale: {RATIONALE}" in out
    assert "E         output: 'Lyon'" in out and "E         expected: 'Paris'" in out
    assert "E       AssertionError: Polite scored 0.0, below the threshold 1.0" in out
    assert "E         choice: 'N'" in out and "E         rationale: The reply is curt." in out
    assert len(llm_server.chat_requests) == 2
    report = json.loads((suite / "report.json").read_text())
    assert [(c["scorer"], c["score"], c["choice"], c["rationale"]) for c in report["calls"]] == [
        ("Factuality", 0.0, "D", RATIONALE),
        ("Polite", 0.0, "N", "The reply is curt."),
    ]
    assert fake_api_key not in out and fake_api_key not in (suite / "report.json").read_text()
